package sweep

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/internal/memo"
	"github.com/trnsim/trnsim/report"
	"github.com/trnsim/trnsim/runner"
)

// Resolved is a point whose config loads, lowers and fits: its id is the
// hash of its resolved config and of the build.
type Resolved struct {
	Point
	ID string
}

// Resolve loads, lowers and checks every point before anything runs, as
// `trnsim check` does, so that a bad value anywhere fails at once with the
// point's values and the field (the first bad point's, by index). rev
// names the build (part of each id); jobs points are checked at once.
func (s *Spec) Resolve(rev string, jobs int) ([]Resolved, error) {
	pts := s.Points()
	out := make([]Resolved, len(pts))
	errs := make([]error, len(pts))
	next := make(chan int)
	// (The points' lowerings share what they repeat: the GEMM plan
	// search's estimates across SBUF sizes, for one.)
	shared := memo.New()
	// (And their configs are the base's text, parsed once.)
	base := s.parseBase()
	// (And the ids the encodings of the cost tables they share.)
	var hasher report.ConfigHasher
	var wg sync.WaitGroup
	for w := 0; w < max(jobs, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				p := pts[i]
				cfg, err := s.loadPoint(base, p)
				if err == nil {
					cfg.Memo = shared
					err = check(cfg)
				}
				if err != nil {
					errs[i] = s.pointError(p, err)
					continue
				}
				h, err := pointHash(cfg, &hasher)
				if err != nil {
					errs[i] = fmt.Errorf("%s: point %d (%s): %w", s.File, p.Index, s.Label(p), err)
					continue
				}
				sum := sha256.Sum256([]byte(h + "\x00" + rev))
				out[i] = Resolved{Point: p, ID: hex.EncodeToString(sum[:8])}
			}
		}()
	}
	for i := range pts {
		next <- i
	}
	close(next)
	wg.Wait()
	ids := map[string]int{}
	for i, err := range errs {
		if err != nil {
			return nil, err
		}
		if j, ok := ids[out[i].ID]; ok {
			return nil, fmt.Errorf("%s: points %d and %d resolve to the same config (%s)", s.File, j, i, s.Label(pts[i]))
		}
		ids[out[i].ID] = i
	}
	return out, nil
}

// pointHash is the hash of a point's resolved config with the files it
// reads (a tile kernel, an assembly program, a model's config.json) replaced by the hash of their
// contents, so that shards run from different folders agree: the
// ConfigHash of that config, by hasher.
func pointHash(cfg *configs.RunConfig, hasher *report.ConfigHasher) (string, error) {
	c := *cfg
	w := c.Workload
	content := func(path string) (string, error) {
		data, err := os.ReadFile(c.ResolvePath(path))
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(data)
		return "sha256:" + hex.EncodeToString(sum[:]), nil
	}
	if t := w.Tile; t != nil && t.File != "" {
		tc := *t
		h, err := content(t.File)
		if err != nil {
			return "", err
		}
		tc.File, w.Tile = h, &tc
	}
	if a := w.Assembly; a != nil && a.File != "" {
		ac := *a
		h, err := content(a.File)
		if err != nil {
			return "", err
		}
		ac.File, w.Assembly = h, &ac
	}
	if m := w.Model; m != nil && m.HFConfig != "" {
		mc := *m
		h, err := content(m.HFConfig)
		if err != nil {
			return "", err
		}
		mc.HFConfig, w.Model = h, &mc
	}
	c.Workload = w
	return hasher.Hash(&c), nil
}

// check lowers cfg's workload and fits it, as `trnsim check` does.
func check(cfg *configs.RunConfig) error {
	switch cfg.Workload.Kind {
	case "assembly":
		_, err := runner.CheckAssembly(cfg)
		return err
	case "tile":
		_, err := runner.CheckTile(cfg)
		return err
	}
	_, _, err := runner.CheckLowering(cfg)
	return err
}

// Options tune a sweep's run.
type Options struct {
	// Exe is the trnsim binary each point runs in (its own process: the
	// simulation engine keeps process-wide state).
	Exe    string
	OutDir string
	// Jobs is how many points run at once (0: one).
	Jobs int
	// Shard and Shards select the points whose index is Shard modulo
	// Shards (Shards 0: every point).
	Shard, Shards int
	// Progress, if set, gets a line as points finish.
	Progress io.Writer
}

// Summary is what a sweep run did.
type Summary struct {
	Points, Skipped, Ran, Failed int
}

// Row is one line of results.jsonl.
type Row struct {
	ID     string            `json:"id"`
	Index  int               `json:"index"`
	Axes   map[string]string `json:"axes"`
	Status string            `json:"status"` // ok or failed
	Error  string            `json:"error,omitempty"`
	// Metrics are the run's totals (results.json's top level, less its
	// tables).
	Metrics map[string]any `json:"metrics,omitempty"`
}

// Run runs the points of this shard that results.jsonl in OutDir does not
// have yet, appending each result to results.csv and results.jsonl as it
// finishes (a torn last line, from a kill mid-write, is repaired first).
func (s *Spec) Run(ctx context.Context, pts []Resolved, o Options) (Summary, error) {
	var sum Summary
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return sum, err
	}
	header := report.CSVHeader()
	for _, a := range s.Axes {
		header += "," + a.Path
	}
	header += ",point_id"
	jsonlPath, csvPath := filepath.Join(o.OutDir, "results.jsonl"), filepath.Join(o.OutDir, "results.csv")
	if err := writeManifest(filepath.Join(o.OutDir, ManifestName), s, pts, o); err != nil {
		return sum, err
	}
	done, err := repairJSONL(jsonlPath)
	if err != nil {
		return sum, err
	}
	if err := repairCSV(csvPath, header, done); err != nil {
		return sum, err
	}
	var todo []Resolved
	for _, p := range pts {
		if o.Shards > 0 && p.Index%o.Shards != o.Shard {
			continue
		}
		sum.Points++
		if done[p.ID] {
			sum.Skipped++
			continue
		}
		todo = append(todo, p)
	}
	jf, err := os.OpenFile(jsonlPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return sum, err
	}
	defer jf.Close()
	cf, err := os.OpenFile(csvPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return sum, err
	}
	defer cf.Close()
	var mu sync.Mutex
	var werr error
	start := time.Now()
	record := func(p Resolved, csvRow string, row Row) {
		mu.Lock()
		defer mu.Unlock()
		// The CSV row first, the JSON line last: a point is finished once
		// its JSON line is whole (a CSV row without one is dropped on
		// resume).
		if csvRow != "" {
			if _, err := fmt.Fprintf(cf, "%s,%s,%s\n", csvRow, strings.Join(csvQuote(p.Values), ","), p.ID); err != nil && werr == nil {
				werr = err
			}
		}
		b, _ := json.Marshal(row)
		if _, err := jf.Write(append(b, '\n')); err != nil && werr == nil {
			werr = err
		}
		sum.Ran++
		if row.Status != "ok" {
			sum.Failed++
		}
		if o.Progress != nil {
			el := time.Since(start).Seconds()
			rate := float64(sum.Ran) / el
			eta := ""
			if rate > 0 {
				eta = fmt.Sprintf(", %s left", (time.Duration(float64(len(todo)-sum.Ran)/rate) * time.Second).Round(time.Second))
			}
			fmt.Fprintf(o.Progress, "sweep: %d of %d run, %d failed, %.2f points/s%s\n", sum.Ran, len(todo), sum.Failed, rate, eta)
		}
	}
	jobs := make(chan Resolved)
	var wg sync.WaitGroup
	for w := 0; w < max(o.Jobs, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each worker starts its next point's process while the last
			// one runs: the process starts up and lowers its workload, then
			// waits at its gate (--start-on-stdin), which the worker opens
			// as soon as the last one's process exits; and it reads and
			// records the last one's results while the next runs. Its core
			// waits neither for a process's start-up nor for the sweep's
			// bookkeeping (making the next point's scratch files, reading
			// the last one's results) between points.
			// A point the sweep's cancellation stopped (killed, or never
			// started) is not recorded: it did not finish, and a rerun
			// runs it.
			done := func(r *pointRun) {
				csvRow, row := r.finish()
				if !r.stopped(ctx) {
					record(r.p, csvRow, row)
				}
			}
			var running *pointRun
			for p := range jobs {
				next := s.preparePoint(ctx, p, o.Exe)
				next.start()
				if running != nil {
					running.wait()
				}
				next.release()
				if running != nil {
					done(running)
				}
				running = next
			}
			if running != nil {
				running.wait()
				done(running)
			}
		}()
	}
	for _, p := range todo {
		if ctx.Err() != nil {
			break
		}
		jobs <- p
	}
	close(jobs)
	wg.Wait()
	if werr != nil {
		return sum, werr
	}
	return sum, ctx.Err()
}

// pointRun is one point's run in its own process: prepared (its scratch
// folder, its arguments), started, waited for, and finished (its results
// read, its folder removed).
type pointRun struct {
	p      Resolved
	row    Row
	dir    string
	js, cs string
	cmd    *exec.Cmd
	stderr *os.File
	// gate is the process's standard input: a byte on it starts the
	// simulation (release).
	gate io.WriteCloser
	// err is the first failure: preparing, starting or running the point.
	err error
}

// preparePoint makes point p's scratch folder and command, not started
// (killed if ctx is cancelled once it is).
func (s *Spec) preparePoint(ctx context.Context, p Resolved, exe string) *pointRun {
	r := &pointRun{p: p, row: Row{ID: p.ID, Index: p.Index, Axes: map[string]string{}, Status: "failed"}}
	for i, a := range s.Axes {
		r.row.Axes[a.Path] = p.Values[i]
	}
	if r.dir, r.err = os.MkdirTemp("", "trnsim-sweep-"); r.err != nil {
		return r
	}
	r.js, r.cs = filepath.Join(r.dir, "r.json"), filepath.Join(r.dir, "r.csv")
	// The base config's own outputs would be written by every point to
	// the same paths: the sweep keeps only its results.
	// Its results are scratch files read at once: no sync to disk
	// (--no-sync), which would leave the cores idle for the disk.
	args := []string{"run", "-q", "--no-sync", "--start-on-stdin", s.Base, "--set", "outputs.trace=", "--set", "outputs.asm=",
		"--set", "outputs.json=", "--set", "outputs.csv=", "--json", r.js, "--csv", r.cs}
	if s.BaseInline != nil {
		args = append(args, "--sweep-base")
	}
	for _, set := range s.Sets(p.Point) {
		args = append(args, "--set", set)
	}
	// The child's stderr goes to a file and its stdout nowhere: no pipes
	// for this process to copy from while the point runs.
	if r.stderr, r.err = os.Create(filepath.Join(r.dir, "stderr")); r.err != nil {
		return r
	}
	r.cmd = exec.CommandContext(ctx, exe, args...)
	r.cmd.Stderr = r.stderr
	r.gate, r.err = r.cmd.StdinPipe()
	return r
}

// release opens the started process's gate: it simulates once it has
// lowered its workload. (A process that has already failed has closed
// its end; its exit status says why.)
func (r *pointRun) release() {
	if r.gate != nil {
		_, _ = r.gate.Write([]byte{1})
		_ = r.gate.Close()
		r.gate = nil
	}
}

// start starts the point's process.
func (r *pointRun) start() {
	if r.err == nil {
		r.err = r.cmd.Start()
	}
}

// stopped reports whether the point failed because ctx was cancelled
// (before it started, or killed while it ran).
func (r *pointRun) stopped(ctx context.Context) bool {
	return r.err != nil && ctx.Err() != nil
}

// wait waits for the point's process to exit.
func (r *pointRun) wait() {
	if r.err == nil {
		r.err = r.cmd.Wait()
	}
}

// finish reads the point's results and removes its scratch folder: its
// CSV row and its JSON line.
func (r *pointRun) finish() (string, Row) {
	row := r.row
	if r.stderr != nil {
		defer r.stderr.Close()
	}
	if r.dir != "" {
		defer os.RemoveAll(r.dir)
	}
	if r.err != nil {
		msg := r.err.Error()
		if r.stderr != nil {
			text, _ := os.ReadFile(r.stderr.Name())
			if m := strings.TrimSpace(string(text)); m != "" {
				msg = m
			}
		}
		row.Error = msg
		return "", row
	}
	data, err := os.ReadFile(r.js)
	if err == nil {
		row.Metrics, err = metricsOf(data)
	}
	csvData, cerr := os.ReadFile(r.cs)
	lines := strings.Split(strings.TrimSpace(string(csvData)), "\n")
	if err != nil || cerr != nil || len(lines) != 2 {
		row.Error = fmt.Sprintf("the run's results could not be read (%v %v)", err, cerr)
		return "", row
	}
	row.Status = "ok"
	return lines[1], row
}

// metricsOf returns a run's metrics from its results.json: the top
// level's values but its tables (which stay in the run's own file), and a
// model run's own figures (for every layer and copy), its model section's
// numbers, as model_<name>. The tables are not decoded.
func metricsOf(data []byte) (map[string]any, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	out := map[string]any{}
	if err := scalars(m, "", false, out); err != nil {
		return nil, err
	}
	if raw, ok := m["model"]; ok && isObject(raw) {
		var mm map[string]json.RawMessage
		if err := json.Unmarshal(raw, &mm); err != nil {
			return nil, err
		}
		if err := scalars(mm, "model_", true, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// scalars decodes into out, under prefix, the values of m that are not
// objects or arrays (nor strings, with noStrings).
func scalars(m map[string]json.RawMessage, prefix string, noStrings bool, out map[string]any) error {
	for k, raw := range m {
		raw = bytes.TrimLeft(raw, " \t\r\n")
		if len(raw) == 0 || raw[0] == '{' || raw[0] == '[' || (noStrings && raw[0] == '"') {
			continue
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		out[prefix+k] = v
	}
	return nil
}

// isObject reports whether a JSON value is an object.
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}

// repairJSONL drops a torn last line and returns the ids of the finished
// points.
func repairJSONL(path string) (map[string]bool, error) {
	done := map[string]bool{}
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return done, nil
	}
	if err != nil {
		return nil, err
	}
	whole := len(data)
	if i := bytes.LastIndexByte(data, '\n'); i+1 != len(data) {
		whole = i + 1 // a line without its newline was cut by a kill
	}
	var kept []byte
	sc := bufio.NewScanner(bytes.NewReader(data[:whole]))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var r Row
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.ID == "" || done[r.ID] {
			continue
		}
		done[r.ID] = true
		kept = append(append(kept, sc.Bytes()...), '\n')
	}
	if len(kept) != len(data) {
		if err := writeAtomic(path, kept); err != nil {
			return nil, err
		}
	}
	return done, nil
}

// repairCSV keeps the header and one row per finished point, dropping a
// torn line and rows whose point has no JSON line.
func repairCSV(path, header string, done map[string]bool) error {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return writeAtomic(path, []byte(header+"\n"))
	}
	if err != nil {
		return err
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) > 0 && lines[0] != header {
		return fmt.Errorf("%s: its columns are not this sweep's (another sweep's output?)", path)
	}
	out := []string{header}
	seen := map[string]bool{}
	for _, l := range lines[1 : len(lines)-1] { // the last piece is torn or empty
		id := l[strings.LastIndexByte(l, ',')+1:]
		if done[id] && !seen[id] {
			seen[id] = true
			out = append(out, l)
		}
	}
	text := strings.Join(out, "\n") + "\n"
	if text != string(data) {
		return writeAtomic(path, []byte(text))
	}
	return nil
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func csvQuote(vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		if strings.ContainsAny(v, ",\"\n") {
			v = `"` + strings.ReplaceAll(v, `"`, `""`) + `"`
		}
		out[i] = v
	}
	return out
}

// ShardFromEnv returns the shard the batch system gave this task: a Slurm
// array task (SLURM_ARRAY_TASK_ID relative to SLURM_ARRAY_TASK_MIN and
// SLURM_ARRAY_TASK_STEP, of SLURM_ARRAY_TASK_COUNT) or a Kubernetes
// Indexed Job (JOB_COMPLETION_INDEX, of count, which the job's --shard N
// gives). ok is false when neither is set.
func ShardFromEnv(getenv func(string) string, count int) (shard, shards int, ok bool, err error) {
	num := func(name string) (int, error) {
		var v int
		if _, err := fmt.Sscan(getenv(name), &v); err != nil {
			return 0, fmt.Errorf("%s=%q is not a number", name, getenv(name))
		}
		return v, nil
	}
	if getenv("SLURM_ARRAY_TASK_ID") != "" {
		id, err := num("SLURM_ARRAY_TASK_ID")
		if err != nil {
			return 0, 0, false, err
		}
		lo, step, n := 0, 1, 0
		if getenv("SLURM_ARRAY_TASK_MIN") != "" {
			if lo, err = num("SLURM_ARRAY_TASK_MIN"); err != nil {
				return 0, 0, false, err
			}
		}
		if getenv("SLURM_ARRAY_TASK_STEP") != "" {
			if step, err = num("SLURM_ARRAY_TASK_STEP"); err != nil {
				return 0, 0, false, err
			}
		}
		if n, err = num("SLURM_ARRAY_TASK_COUNT"); err != nil {
			return 0, 0, false, err
		}
		i := (id - lo) / max(step, 1)
		if i < 0 || i >= n || (id-lo)%max(step, 1) != 0 {
			return 0, 0, false, fmt.Errorf("SLURM_ARRAY_TASK_ID=%d is not a task of the array (min %d, step %d, count %d)", id, lo, step, n)
		}
		return i, n, true, nil
	}
	if getenv("JOB_COMPLETION_INDEX") != "" {
		i, err := num("JOB_COMPLETION_INDEX")
		if err != nil {
			return 0, 0, false, err
		}
		if count <= 0 {
			return 0, 0, false, fmt.Errorf("JOB_COMPLETION_INDEX is set: give the job's completions as --shard N")
		}
		if i < 0 || i >= count {
			return 0, 0, false, fmt.Errorf("JOB_COMPLETION_INDEX=%d is not below --shard %d", i, count)
		}
		return i, count, true, nil
	}
	return 0, 0, false, nil
}

// ManifestName is the file in a sweep's output folder that lists every
// point of the whole sweep (all shards), so that merge can tell what is
// missing.
const ManifestName = "sweep.json"

// Manifest is the content of sweep.json.
type Manifest struct {
	Sweep  string   `json:"sweep"`
	Axes   []string `json:"axes"`
	Shard  int      `json:"shard"`
	Shards int      `json:"shards"`
	// Points are every point's id, in index order.
	Points []string `json:"points"`
}

func writeManifest(path string, s *Spec, pts []Resolved, o Options) error {
	m := Manifest{Sweep: s.File, Shard: o.Shard, Shards: max(o.Shards, 1)}
	for _, a := range s.Axes {
		m.Axes = append(m.Axes, a.Path)
	}
	for _, p := range pts {
		m.Points = append(m.Points, p.ID)
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(path); err == nil {
		var prev Manifest
		if json.Unmarshal(old, &prev) == nil && strings.Join(prev.Points, ",") != strings.Join(m.Points, ",") {
			return fmt.Errorf("%s: this folder holds another sweep's results (its points differ); give another --out", filepath.Dir(path))
		}
	}
	return writeAtomic(path, append(b, '\n'))
}

// MergeResult is what Merge found.
type MergeResult struct {
	Points, Rows int
	Missing      []string // point ids no shard has
	Duplicated   []string // point ids two shards have (kept once)
}

// Merge joins the shard folders into out: one CSV header, every point's
// row once, in point order. It reports the points no shard has (an error
// for the caller) and those two shards have.
func Merge(dirs []string, out string) (MergeResult, error) {
	var res MergeResult
	var man *Manifest
	csvRows := map[string]string{}
	jsonRows := map[string]string{}
	header := ""
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ManifestName))
		if err != nil {
			return res, fmt.Errorf("%s: not a sweep's output (no %s)", d, ManifestName)
		}
		var m Manifest
		if err := json.Unmarshal(b, &m); err != nil {
			return res, fmt.Errorf("%s: %v", filepath.Join(d, ManifestName), err)
		}
		if man == nil {
			man = &m
		} else if strings.Join(man.Points, ",") != strings.Join(m.Points, ",") {
			return res, fmt.Errorf("%s: a shard of another sweep (its points differ from %s's)", d, dirs[0])
		}
		done, err := repairJSONL(filepath.Join(d, "results.jsonl"))
		if err != nil {
			return res, err
		}
		data, _ := os.ReadFile(filepath.Join(d, "results.jsonl"))
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var r Row
			if l == "" || json.Unmarshal([]byte(l), &r) != nil {
				continue
			}
			if _, dup := jsonRows[r.ID]; dup {
				res.Duplicated = append(res.Duplicated, r.ID)
				continue
			}
			jsonRows[r.ID] = l
		}
		cd, err := os.ReadFile(filepath.Join(d, "results.csv"))
		if err != nil {
			return res, err
		}
		lines := strings.Split(strings.TrimRight(string(cd), "\n"), "\n")
		if header == "" {
			header = lines[0]
		} else if lines[0] != header {
			return res, fmt.Errorf("%s: its CSV columns differ from %s's", d, dirs[0])
		}
		for _, l := range lines[1:] {
			id := l[strings.LastIndexByte(l, ',')+1:]
			if done[id] {
				if _, ok := csvRows[id]; !ok {
					csvRows[id] = l
				}
			}
		}
	}
	if man == nil {
		return res, fmt.Errorf("merge: no shard folders given")
	}
	res.Points = len(man.Points)
	var csvOut, jsonOut strings.Builder
	csvOut.WriteString(header + "\n")
	for _, id := range man.Points {
		j, ok := jsonRows[id]
		if !ok {
			res.Missing = append(res.Missing, id)
			continue
		}
		res.Rows++
		jsonOut.WriteString(j + "\n")
		if c, ok := csvRows[id]; ok {
			csvOut.WriteString(c + "\n")
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return res, err
	}
	m := *man
	m.Shard, m.Shards = 0, 1
	b, _ := json.MarshalIndent(m, "", " ")
	for name, data := range map[string][]byte{"results.csv": []byte(csvOut.String()), "results.jsonl": []byte(jsonOut.String()), ManifestName: append(b, '\n')} {
		if err := writeAtomic(filepath.Join(out, name), data); err != nil {
			return res, err
		}
	}
	return res, nil
}

// ReadRows returns a sweep output folder's finished points, in index order.
func ReadRows(dir string) ([]Row, error) {
	data, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("%s: not a sweep's output (%v)", dir, err)
	}
	var rows []Row
	for _, l := range strings.Split(string(data), "\n") {
		var r Row
		if l == "" || json.Unmarshal([]byte(l), &r) != nil {
			continue
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Index < rows[j].Index })
	return rows, nil
}

package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"base: a.yaml\naxes:\n  workload.gemm.m: [1, 2]\ncolour: red\n", "s.yaml:4: colour: unknown field"},
		{"base: a.yaml\naxes:\n  workload.gemm.m: []\n", "s.yaml:3: axis workload.gemm.m: must be a non-empty list of values"},
		{"base: a.yaml\nmode: zip\naxes:\n  workload.gemm.m: [1, 2]\n  workload.gemm.n: [1]\n", "s.yaml:5: axis workload.gemm.n: 1 values; mode zip needs as many as workload.gemm.m has (2)"},
		{"base: a.yaml\nmode: random\nsamples: 5\naxes:\n  workload.gemm.m: [1, 2]\n", "samples: 5 is more than the 2 points of the grid"},
		{"axes:\n  workload.gemm.m: [1]\n", "s.yaml:1: base: required"},
		{"base: a.yaml\nmode: spiral\naxes:\n  workload.gemm.m: [1]\n", "s.yaml:2: mode: must be grid, zip or random"},
		{"base: [a.yaml]\naxes:\n  workload.gemm.m: [1]\n", "s.yaml:1: base: the path of a run config"},
	} {
		_, err := Parse([]byte(tc.text), "s.yaml")
		require.Error(t, err, tc.text)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestPoints(t *testing.T) {
	s, err := Parse([]byte("base: a.yaml\naxes:\n  a: [1, 2]\n  b: [x, y, z]\n"), "s.yaml")
	require.NoError(t, err)
	var got []string
	for _, p := range s.Points() {
		got = append(got, strings.Join(p.Values, ""))
	}
	assert.Equal(t, []string{"1x", "1y", "1z", "2x", "2y", "2z"}, got, "grid: the last axis fastest")

	z, err := Parse([]byte("base: a.yaml\nmode: zip\naxes:\n  a: [1, 2]\n  b: [x, y]\n"), "s.yaml")
	require.NoError(t, err)
	assert.Len(t, z.Points(), 2)
	assert.Equal(t, []string{"2", "y"}, z.Points()[1].Values)

	r, err := Parse([]byte("base: a.yaml\nmode: random\nsamples: 4\nseed: 7\naxes:\n  a: [1, 2, 3]\n  b: [x, y, z]\n"), "s.yaml")
	require.NoError(t, err)
	p1, p2 := r.Points(), r.Points()
	assert.Len(t, p1, 4)
	assert.Equal(t, p1, p2, "the seed fixes the sample")
	seen := map[string]bool{}
	for _, p := range p1 {
		seen[strings.Join(p.Values, "")] = true
	}
	assert.Len(t, seen, 4, "no point twice")
}

// trnsimBinary builds the CLI once for the tests that run points.
func trnsimBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "trnsim")
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/trnsim")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return bin
}

// smallSweep writes a sweep of eight small GEMMs.
func smallSweep(t *testing.T) *Spec {
	t.Helper()
	dir := t.TempDir()
	base := "hardware: {preset: trn2}\nworkload:\n  kind: gemm\n  gemm: {m: 256, k: 256, n: 512}\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "base.yaml"), []byte(base), 0o644))
	text := "base: base.yaml\naxes:\n  workload.gemm.m: [128, 256]\n  workload.gemm.k: [128, 384]\n  workload.lowering.buffers: [2, 3]\n"
	path := filepath.Join(dir, "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	s, err := Load(path)
	require.NoError(t, err)
	return s
}

// readRows returns results.jsonl's rows by id, and the CSV rows by id
// with the host-time column left out.
func readRows(t *testing.T, dir string) (map[string]Row, map[string]string) {
	t.Helper()
	rows := map[string]Row{}
	data, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	require.NoError(t, err)
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r Row
		require.NoError(t, json.Unmarshal([]byte(l), &r))
		_, dup := rows[r.ID]
		require.False(t, dup, "point %s twice", r.ID)
		rows[r.ID] = r
	}
	csvRows := map[string]string{}
	data, err = os.ReadFile(filepath.Join(dir, "results.csv"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	hostCol := -1
	for i, h := range strings.Split(lines[0], ",") {
		if h == "host_time_s" {
			hostCol = i
		}
	}
	nHeader := len(strings.Split(lines[0], ","))
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		require.Len(t, f, nHeader, "a row's fields line up with the header's: %s", l)
		id := f[len(f)-1]
		f[hostCol] = ""
		_, dup := csvRows[id]
		require.False(t, dup, "CSV row %s twice", id)
		csvRows[id] = strings.Join(f, ",")
	}
	return rows, csvRows
}

// Shards merged give exactly the unsharded rows, whatever -j; a sweep cut
// mid-write resumes with every point exactly once.
func TestRunShardsResumeAndJobs(t *testing.T) {
	bin := trnsimBinary(t)
	s := smallSweep(t)
	pts, err := s.Resolve("test", 2)
	require.NoError(t, err)
	require.Len(t, pts, 8)
	ctx := context.Background()

	one := t.TempDir()
	sum, err := s.Run(ctx, pts, Options{Exe: bin, OutDir: one, Jobs: 1})
	require.NoError(t, err)
	assert.Equal(t, Summary{Points: 8, Ran: 8}, sum)
	rowsOne, csvOne := readRows(t, one)
	require.Len(t, rowsOne, 8)
	for _, r := range rowsOne {
		assert.Equal(t, "ok", r.Status, r.Error)
		assert.Positive(t, r.Metrics["simulated_time_s"])
	}

	two := t.TempDir()
	_, err = s.Run(ctx, pts, Options{Exe: bin, OutDir: two, Jobs: 3})
	require.NoError(t, err)
	rowsTwo, csvTwo := readRows(t, two)
	assert.Equal(t, csvOne, csvTwo, "results do not depend on -j")
	assert.Equal(t, len(rowsOne), len(rowsTwo))

	// Three shards into one folder each, merged by id.
	merged := map[string]string{}
	var shardDirs []string
	for i := 0; i < 3; i++ {
		dir := t.TempDir()
		shardDirs = append(shardDirs, dir)
		sum, err := s.Run(ctx, pts, Options{Exe: bin, OutDir: dir, Jobs: 2, Shard: i, Shards: 3})
		require.NoError(t, err)
		assert.Equal(t, sum.Points, sum.Ran)
		_, c := readRows(t, dir)
		for id, r := range c {
			_, dup := merged[id]
			require.False(t, dup, "a point in two shards")
			merged[id] = r
		}
	}
	assert.Equal(t, csvOne, merged, "the shards together are the sweep")

	// merge: the three shards give the unsharded rows; two miss a third.
	out := t.TempDir()
	mr, err := Merge(shardDirs, out)
	require.NoError(t, err)
	assert.Equal(t, MergeResult{Points: 8, Rows: 8}, mr)
	rowsMerged, csvMerged := readRows(t, out)
	assert.Equal(t, csvOne, csvMerged)
	assert.Len(t, rowsMerged, 8)
	mr, err = Merge(shardDirs[:2], t.TempDir())
	require.NoError(t, err)
	assert.Len(t, mr.Missing, 8-mr.Rows)
	assert.NotEmpty(t, mr.Missing)
	mr, err = Merge(append(shardDirs, shardDirs[0]), t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, 8, mr.Rows)
	assert.NotEmpty(t, mr.Duplicated, "a shard given twice")

	// The shards as the batch systems number them: a Slurm array
	// --array=1-7:2 (task ids 1, 3, 5, 7) and a 4-completion Indexed Job.
	for _, sys := range []struct {
		name string
		env  func(task int) map[string]string
	}{
		{"slurm", func(task int) map[string]string {
			return map[string]string{"SLURM_ARRAY_TASK_ID": fmt.Sprint(1 + 2*task), "SLURM_ARRAY_TASK_MIN": "1",
				"SLURM_ARRAY_TASK_MAX": "7", "SLURM_ARRAY_TASK_STEP": "2", "SLURM_ARRAY_TASK_COUNT": "4"}
		}},
		{"kubernetes", func(task int) map[string]string { return map[string]string{"JOB_COMPLETION_INDEX": fmt.Sprint(task)} }},
	} {
		var dirs []string
		for task := 0; task < 4; task++ {
			env := sys.env(task)
			shard, shards, ok, err := ShardFromEnv(func(k string) string { return env[k] }, 4)
			require.NoError(t, err)
			require.True(t, ok)
			dir := t.TempDir()
			dirs = append(dirs, dir)
			_, err = s.Run(ctx, pts, Options{Exe: bin, OutDir: dir, Jobs: 2, Shard: shard, Shards: shards})
			require.NoError(t, err)
		}
		out := t.TempDir()
		mr, err := Merge(dirs, out)
		require.NoError(t, err)
		assert.Equal(t, MergeResult{Points: 8, Rows: 8}, mr, sys.name)
		_, c := readRows(t, out)
		assert.Equal(t, csvOne, c, "%s: the array's shards are the sweep", sys.name)
	}

	// Cut the outputs as a kill mid-write would: the last JSON line torn,
	// the CSV with a row whose JSON line is gone and a torn one.
	jl, err := os.ReadFile(filepath.Join(one, "results.jsonl"))
	require.NoError(t, err)
	lines := strings.SplitAfter(string(jl), "\n")
	cut := strings.Join(lines[:5], "") + lines[5][:len(lines[5])/2]
	require.NoError(t, os.WriteFile(filepath.Join(one, "results.jsonl"), []byte(cut), 0o644))
	cv, err := os.ReadFile(filepath.Join(one, "results.csv"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(one, "results.csv"), append(cv, []byte("torn,row")...), 0o644))
	sum, err = s.Run(ctx, pts, Options{Exe: bin, OutDir: one, Jobs: 2})
	require.NoError(t, err)
	assert.Equal(t, Summary{Points: 8, Skipped: 5, Ran: 3}, sum)
	rowsAgain, csvAgain := readRows(t, one)
	assert.Len(t, rowsAgain, 8)
	assert.Equal(t, csvOne, csvAgain, "every point exactly once after the resume")
}

// A value that breaks a point fails the whole sweep before anything runs,
// naming the point and the field.
func TestResolveNamesThePoint(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "base.yaml"), []byte("hardware: {preset: trn2}\nworkload: {kind: gemm, gemm: {m: 256, k: 256, n: 512}}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "s.yaml"), []byte("base: base.yaml\naxes:\n  workload.gemm.m: [128, -4]\n"), 0o644))
	s, err := Load(filepath.Join(dir, "s.yaml"))
	require.NoError(t, err)
	_, err = s.Resolve("test", 2)
	require.Error(t, err)
	assert.Equal(t, filepath.Join(dir, "s.yaml")+":3: axis workload.gemm.m, value -4 (point 1: workload.gemm.m=-4): must be greater than 0, got -4", err.Error())

	// A base that is not there is an error at base:.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "s2.yaml"), []byte("axes:\n  workload.gemm.m: [128]\nbase: nothere.yaml\n"), 0o644))
	s, err = Load(filepath.Join(dir, "s2.yaml"))
	require.NoError(t, err)
	_, err = s.Resolve("test", 2)
	require.Error(t, err)
	assert.Regexp(t, `s2\.yaml:3: base: .*nothere\.yaml: no such file$`, err.Error())
}

func TestShardFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, tc := range []struct {
		name         string
		getenv       func(string) string
		count        int
		shard, total int
		ok           bool
		err          string
	}{
		{"none", env(), 0, 0, 0, false, ""},
		{"slurm --array=0-3", env("SLURM_ARRAY_TASK_ID", "2", "SLURM_ARRAY_TASK_MIN", "0", "SLURM_ARRAY_TASK_COUNT", "4"), 0, 2, 4, true, ""},
		{"slurm --array=1-9:2", env("SLURM_ARRAY_TASK_ID", "7", "SLURM_ARRAY_TASK_MIN", "1", "SLURM_ARRAY_TASK_STEP", "2", "SLURM_ARRAY_TASK_COUNT", "5"), 0, 3, 5, true, ""},
		{"slurm off the array", env("SLURM_ARRAY_TASK_ID", "4", "SLURM_ARRAY_TASK_MIN", "1", "SLURM_ARRAY_TASK_STEP", "2", "SLURM_ARRAY_TASK_COUNT", "5"), 0, 0, 0, false, "not a task of the array"},
		{"indexed job", env("JOB_COMPLETION_INDEX", "3"), 8, 3, 8, true, ""},
		{"indexed job without a count", env("JOB_COMPLETION_INDEX", "3"), 0, 0, 0, false, "give the job's completions as --shard N"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i, n, ok, err := ShardFromEnv(tc.getenv, tc.count)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []any{tc.shard, tc.total, tc.ok}, []any{i, n, ok})
		})
	}
}

// A sweep killed with SIGKILL mid-way and run again has every point
// exactly once.
func TestSweepSurvivesSIGKILL(t *testing.T) {
	bin := trnsimBinary(t)
	dir := t.TempDir()
	base := "hardware: {preset: trn2}\nworkload:\n  kind: gemm\n  gemm: {m: 1024, k: 2048, n: 2048}\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "base.yaml"), []byte(base), 0o644))
	sweepFile := filepath.Join(dir, "s.yaml")
	require.NoError(t, os.WriteFile(sweepFile, []byte("base: base.yaml\naxes:\n  workload.gemm.m: [512, 768, 1024, 1280]\n  workload.lowering.buffers: [2, 3]\n"), 0o644))
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bin, "sweep", sweepFile, "--out", out, "-j", "1")
	require.NoError(t, cmd.Start())
	killed := false
	for i := 0; i < 2000; i++ {
		data, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
		if strings.Count(string(data), "\n") >= 2 {
			require.NoError(t, cmd.Process.Kill())
			killed = true
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	_ = cmd.Wait()
	if !killed {
		t.Log("the sweep finished before it could be killed")
	}
	again := exec.Command(bin, "sweep", sweepFile, "--out", out, "-j", "2")
	msg, err := again.CombinedOutput()
	require.NoError(t, err, string(msg))
	rows, csvRows := readRows(t, out)
	assert.Len(t, rows, 8)
	assert.Len(t, csvRows, 8)
}

func TestWhere(t *testing.T) {
	s, err := Parse([]byte("base: a.yaml\nwhere: parallel.tp * parallel.replicas <= 3\naxes:\n  parallel.tp: [1, 2, 3]\n  parallel.replicas: [1, 2, 3]\n"), "s.yaml")
	require.NoError(t, err)
	var got []string
	for i, p := range s.Points() {
		assert.Equal(t, i, p.Index, "kept points are numbered in order")
		got = append(got, strings.Join(p.Values, ""))
	}
	assert.Equal(t, []string{"11", "12", "13", "21", "31"}, got)
	assert.Equal(t, 4, s.Dropped)

	_, err = Parse([]byte("base: a.yaml\nwhere: parallel.pp <= 3\naxes:\n  parallel.tp: [1, 2]\n"), "s.yaml")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "s.yaml:2: where: ")
	assert.Contains(t, err.Error(), "parallel.pp")
	_, err = Parse([]byte("base: a.yaml\nwhere: workload.lowering.loop_order == 1\naxes:\n  workload.lowering.loop_order: [nkm, nmk]\n"), "s.yaml")
	require.Error(t, err, "an axis of words is not a number")
}

// A point's id follows the contents of the files it reads, not their
// paths: the same kernel in two folders gives the same id.
func TestPointIDFollowsFileContents(t *testing.T) {
	kernel, err := os.ReadFile("../examples/matmul.tile")
	require.NoError(t, err)
	var ids []string
	for _, name := range []string{"a", "b"} {
		dir := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "k.tile"), kernel, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "base.yaml"), []byte("hardware: {preset: trn2}\nworkload:\n  kind: tile\n  tile: {file: k.tile}\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "s.yaml"), []byte("base: base.yaml\naxes:\n  workload.lowering.dma_queues: [2]\n"), 0o644))
		s, err := Load(filepath.Join(dir, "s.yaml"))
		require.NoError(t, err)
		pts, err := s.Resolve("test", 1)
		require.NoError(t, err)
		ids = append(ids, pts[0].ID)
	}
	assert.Equal(t, ids[0], ids[1])
}

// The shipped example sweep files load, and every point of them validates.
func TestExampleSweepsValidate(t *testing.T) {
	files, err := filepath.Glob("../examples/sweep-*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := Load(f)
			require.NoError(t, err)
			pts, err := s.Resolve("test", 2)
			require.NoError(t, err)
			assert.NotEmpty(t, pts)
		})
	}
}

// An inline base: runs as a file base would, and its errors name the sweep
// file's own lines and columns, in block and in flow style.
func TestInlineBase(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	inline := write("inline.yaml", "# a comment\nbase:\n  hardware:\n    preset: trn2\n  workload:\n    kind: gemm\n    gemm: {m: 256, k: 256, n: 512}\naxes:\n  workload.gemm.m: [128, 256]\n")
	write("base.yaml", "hardware:\n  preset: trn2\nworkload:\n  kind: gemm\n  gemm: {m: 256, k: 256, n: 512}\n")
	file := write("file.yaml", "base: base.yaml\naxes:\n  workload.gemm.m: [128, 256]\n")
	bin := trnsimBinary(t)
	var metrics [2][]any
	for i, path := range []string{inline, file} {
		s, err := Load(path)
		require.NoError(t, err)
		pts, err := s.Resolve("test", 2)
		require.NoError(t, err)
		out := t.TempDir()
		sum, err := s.Run(context.Background(), pts, Options{Exe: bin, OutDir: out, Jobs: 2})
		require.NoError(t, err)
		require.Equal(t, 2, sum.Ran)
		rows, _ := readRows(t, out)
		for _, r := range rows {
			require.Equal(t, "ok", r.Status, r.Error)
			metrics[i] = append(metrics[i], r.Metrics["simulated_time_s"])
		}
	}
	assert.ElementsMatch(t, metrics[1], metrics[0], "an inline base simulates what the same file base does")

	for _, tc := range []struct{ name, text, want string }{
		{"block", "base:\n  hardware:\n    preset: trn2\n  workload:\n    kind: gemm\n    gemm: {m: 512, k: 512, n: 512, q: 3}\naxes:\n  workload.gemm.m: [256]\n", "bad.yaml:6:"},
		{"flow", "axes: {workload.gemm.m: [256]}\nbase: {workload: {kind: gemm, gemm: {m: 512, k: 512, n: 512}}}\n", "bad.yaml:2:7: hardware.preset: required"},
		{"keys outside it are not read", "base:\n  workload: {kind: gemm, gemm: {m: 512, k: 512, n: 512}}\naxes:\n  hardware.preset: [trn2]\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Load(write("bad.yaml", tc.text))
			require.NoError(t, err)
			_, err = s.Resolve("test", 2)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// cancelAfter cancels its context at the first progress line: a sweep
// stopped by its caller with points running and prepared.
type cancelAfter struct{ cancel context.CancelFunc }

func (c cancelAfter) Write(p []byte) (int, error) { c.cancel(); return len(p), nil }

// A cancelled sweep records only the points that finished (none as
// failed for being stopped), and a rerun runs the rest: every point
// exactly once, the rows of an uncancelled sweep.
func TestCancelledSweepRecordsOnlyFinishedPoints(t *testing.T) {
	bin := trnsimBinary(t)
	s := smallSweep(t)
	pts, err := s.Resolve("test", 2)
	require.NoError(t, err)
	full := t.TempDir()
	_, err = s.Run(context.Background(), pts, Options{Exe: bin, OutDir: full, Jobs: 2})
	require.NoError(t, err)
	_, want := readRows(t, full)

	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sum, err := s.Run(ctx, pts, Options{Exe: bin, OutDir: dir, Jobs: 2, Progress: cancelAfter{cancel}})
	require.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, sum.Failed)
	assert.Less(t, sum.Ran, len(pts), "cancelled before the end")
	rows, _ := readRows(t, dir)
	for _, r := range rows {
		assert.Equal(t, "ok", r.Status, r.Error)
	}
	sum, err = s.Run(context.Background(), pts, Options{Exe: bin, OutDir: dir, Jobs: 2})
	require.NoError(t, err)
	assert.Equal(t, len(pts), sum.Skipped+sum.Ran)
	_, got := readRows(t, dir)
	assert.Equal(t, want, got)
}

// A sweep over a model records the model's own figures (for every layer,
// where the simulated time is the simulated layers'): in results.jsonl as
// model_<name>, and in results.csv's model columns; a decode has a time
// per output token and no time to first token.
func TestModelSweepRecordsTheModelsFigures(t *testing.T) {
	dir := t.TempDir()
	base := "hardware: {preset: trn2}\nworkload:\n  kind: model\n  model: {name: llama-3.2-1b, mode: decode, context: 64, tokens: 1, layers: 1}\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "base.yaml"), []byte(base), 0o644))
	path := filepath.Join(dir, "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte("base: base.yaml\naxes:\n  workload.model.context: [64, 300]\n"), 0o644))
	s, err := Load(path)
	require.NoError(t, err)
	pts, err := s.Resolve("test", 2)
	require.NoError(t, err)
	out := t.TempDir()
	sum, err := s.Run(context.Background(), pts, Options{Exe: trnsimBinary(t), OutDir: out, Jobs: 2})
	require.NoError(t, err)
	require.Equal(t, 2, sum.Ran)
	rows, csvRows := readRows(t, out)
	data, err := os.ReadFile(filepath.Join(out, "results.csv"))
	require.NoError(t, err)
	header := strings.Split(strings.SplitN(string(data), "\n", 2)[0], ",")
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for id, r := range rows {
		require.Equal(t, "ok", r.Status, r.Error)
		tpot, ok := r.Metrics["model_tpot_s"].(float64)
		require.True(t, ok, "model_tpot_s in %v", r.Metrics)
		assert.Greater(t, tpot, 0.0)
		assert.Equal(t, tpot, r.Metrics["model_time_s"])
		assert.NotContains(t, r.Metrics, "model_ttft_s")
		for _, k := range []string{"model_mfu_pct", "model_mbu_pct", "model_tokens_per_s"} {
			v, ok := r.Metrics[k].(float64)
			assert.True(t, ok && v > 0 && v <= 100 || k == "model_tokens_per_s" && v > 0, "%s: %v", k, r.Metrics[k])
		}
		f := strings.Split(csvRows[id], ",")
		assert.Equal(t, "", f[col["ttft_s"]])
		got, err := strconv.ParseFloat(f[col["tpot_s"]], 64)
		require.NoError(t, err)
		assert.InEpsilon(t, tpot, got, 1e-6)
	}
}

// A point started with --start-on-stdin lowers its workload and waits
// for a byte before it simulates; if its standard input closes first (the
// sweep stopped), it ends with an error and writes no results.
func TestPointWaitsAtItsGate(t *testing.T) {
	bin := trnsimBinary(t)
	dir := t.TempDir()
	js := filepath.Join(dir, "r.json")
	args := []string{"run", "-q", "--no-sync", "--start-on-stdin", "--json", js, "--set", "workload.gemm.m=128", "--set", "workload.gemm.k=128", "--set", "workload.gemm.n=128"}

	closed := exec.Command(bin, args...)
	closed.Stdin = strings.NewReader("")
	out, err := closed.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "standard input closed before the start")
	assert.NoFileExists(t, js)

	gated := exec.Command(bin, args...)
	gate, err := gated.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, gated.Start())
	time.Sleep(200 * time.Millisecond)
	assert.NoFileExists(t, js, "simulated before its gate opened")
	_, err = gate.Write([]byte{1})
	require.NoError(t, err)
	require.NoError(t, gate.Close())
	require.NoError(t, gated.Wait())
	assert.FileExists(t, js)
}

// A point whose process fails, before its gate or while it simulates, is
// recorded with its own error and the sweep goes on; the summary counts
// the failures, and a rerun skips them with the rest (a failure is the
// point's result).
func TestFailingPointsAreRecordedAndTheSweepGoesOn(t *testing.T) {
	bin := trnsimBinary(t)
	dir := t.TempDir()
	// A trnsim that fails its m=128 points at once, and its k=384 points
	// after the gate, as a simulation that fails would.
	fake := filepath.Join(dir, "trnsim")
	script := "#!/bin/sh\ncase \"$*\" in\n*workload.gemm.m=128*) echo 'boom before the gate' >&2; exit 1;;\n" +
		"*workload.gemm.k=384*) head -c 1 > /dev/null; echo 'boom after the gate' >&2; exit 1;;\nesac\nexec " + bin + " \"$@\"\n"
	require.NoError(t, os.WriteFile(fake, []byte(script), 0o755))
	s := smallSweep(t)
	pts, err := s.Resolve("test", 2)
	require.NoError(t, err)
	out := t.TempDir()
	sum, err := s.Run(context.Background(), pts, Options{Exe: fake, OutDir: out, Jobs: 2})
	require.NoError(t, err)
	assert.Equal(t, Summary{Points: 8, Ran: 8, Failed: 6}, sum)
	rows, _ := readRows(t, out)
	require.Len(t, rows, 8)
	for _, r := range rows {
		switch {
		case r.Axes["workload.gemm.m"] == "128":
			assert.Equal(t, Row{ID: r.ID, Index: r.Index, Axes: r.Axes, Status: "failed", Error: "boom before the gate"}, r)
		case r.Axes["workload.gemm.k"] == "384":
			assert.Equal(t, Row{ID: r.ID, Index: r.Index, Axes: r.Axes, Status: "failed", Error: "boom after the gate"}, r)
		default:
			assert.Equal(t, "ok", r.Status, r.Error)
		}
	}
	sum, err = s.Run(context.Background(), pts, Options{Exe: bin, OutDir: out, Jobs: 2})
	require.NoError(t, err)
	assert.Equal(t, Summary{Points: 8, Skipped: 8}, sum)
	again, _ := readRows(t, out)
	assert.Equal(t, rows, again)
}

// A run's metrics, read without decoding its tables, are what decoding
// the whole of its results.json and leaving the tables out gives: on a
// GEMM's and a model's results.
func TestMetricsOfMatchesAFullDecode(t *testing.T) {
	bin := trnsimBinary(t)
	dir := t.TempDir()
	reference := func(data []byte) map[string]any {
		var m map[string]any
		require.NoError(t, json.Unmarshal(data, &m))
		out := map[string]any{}
		for k, v := range m {
			switch v.(type) {
			case map[string]any, []any:
				continue
			}
			out[k] = v
		}
		if mm, ok := m["model"].(map[string]any); ok {
			for k, v := range mm {
				switch v.(type) {
				case map[string]any, []any, string:
					continue
				}
				out["model_"+k] = v
			}
		}
		return out
	}
	model := filepath.Join(dir, "model.yaml")
	require.NoError(t, os.WriteFile(model, []byte("hardware: {preset: trn2}\nworkload:\n  kind: model\n  model: {name: llama-3.2-1b, mode: decode, context: 64, tokens: 1, layers: 1}\n"), 0o644))
	for i, sets := range [][]string{{"--set", "workload.gemm.m=256"}, {model}} {
		js := filepath.Join(dir, fmt.Sprintf("r%d.json", i))
		out, err := exec.Command(bin, append([]string{"run", "-q", "--json", js}, sets...)...).CombinedOutput()
		require.NoError(t, err, string(out))
		data, err := os.ReadFile(js)
		require.NoError(t, err)
		got, err := metricsOf(data)
		require.NoError(t, err)
		want := reference(data)
		assert.Equal(t, want, got)
		assert.Contains(t, got, "simulated_time_s")
		if i == 1 {
			assert.Contains(t, got, "model_tpot_s")
		}
	}
}

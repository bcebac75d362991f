package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/report"
)

// small is a GEMM that simulates in a few milliseconds.
var small = []string{"workload.gemm.m=256", "workload.gemm.k=512", "workload.gemm.n=512"}

func smallConfig(t *testing.T, sets ...string) *configs.RunConfig {
	t.Helper()
	cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: append(append([]string{}, small...), sets...)})
	require.NoError(t, err)
	return cfg
}

// watchLowering records whether a run got as far as lowering its workload.
func watchLowering(t *testing.T) *bool {
	t.Helper()
	lowered := new(bool)
	beforeLower = func() { *lowered = true }
	t.Cleanup(func() { beforeLower = nil })
	return lowered
}

// tree lists every file and folder under dir (hidden ones too), relative
// to dir, sorted, with the content of small regular files.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		entry := rel + " " + fi.Mode().String()
		if fi.Mode().IsRegular() && fi.Size() < 256 {
			data, _ := os.ReadFile(p)
			entry += " " + strconv.Quote(string(data))
		}
		out = append(out, entry)
		return nil
	})
	require.NoError(t, err)
	sort.Strings(out)
	return out
}

// noLeftovers asserts that no temporary or moved-aside file is in dir.
func noLeftovers(t *testing.T, dir string) {
	t.Helper()
	for _, e := range tree(t, dir) {
		assert.NotContains(t, e, tempMarker, "a temporary file is left")
		assert.NotContains(t, e, backupMarker, "a moved-aside file is left")
	}
}

func writeFile(t *testing.T, path, text string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// Without the sync to disk (a sweep's scratch outputs) the outputs are
// the same files, renamed into place whole, nothing left beside them.
func TestNoSyncWritesTheSameOutputs(t *testing.T) {
	dir := t.TempDir()
	p := func(sub, n string) string { return filepath.Join(dir, sub, n) }
	for _, sub := range []string{"sync", "nosync"} {
		_, err := Run(smallConfig(t), Options{JSON: p(sub, "r.json"), CSV: p(sub, "r.csv"), NoSync: sub == "nosync"})
		require.NoError(t, err)
	}
	for _, name := range []string{"r.json", "r.csv"} {
		a, err := os.ReadFile(p("sync", name))
		require.NoError(t, err)
		b, err := os.ReadFile(p("nosync", name))
		require.NoError(t, err)
		assert.Positive(t, len(b))
		if name == "r.csv" {
			assert.Equal(t, strings.Count(string(a), "\n"), strings.Count(string(b), "\n"), name)
		} else {
			assert.Equal(t, len(a) > 0, json.Valid(b), name)
		}
	}
	noLeftovers(t, dir)
}

func TestRunWritesEveryOutput(t *testing.T) {
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, "out", n) }
	out, err := Run(smallConfig(t), Options{JSON: p("r.json"), CSV: p("r.csv"), Trace: p("t.json"), DumpAsm: p("p.asm")})
	require.NoError(t, err)
	require.Len(t, out.Files, 4)
	// Results are ordinary files: made as any program makes them (0666 less
	// the umask), not private like a temporary file.
	plain, err := os.OpenFile(filepath.Join(dir, "plain"), os.O_CREATE|os.O_WRONLY, 0o666)
	require.NoError(t, err)
	plainInfo, err := plain.Stat()
	require.NoError(t, err)
	plain.Close()
	for i, name := range []string{"p.asm", "t.json", "r.json", "r.csv"} {
		fi, err := os.Stat(p(name))
		require.NoError(t, err)
		assert.Equal(t, p(name), out.Files[i].Path)
		assert.Equal(t, fi.Size(), out.Files[i].Bytes, "the size reported is the file's")
		assert.Positive(t, fi.Size())
		assert.Equal(t, plainInfo.Mode().Perm(), fi.Mode().Perm())
	}
	assert.False(t, out.UsedStdout)
	noLeftovers(t, dir)
}

func TestRefusedBeforeAnythingRuns(t *testing.T) {
	root := os.Geteuid() == 0
	type setup struct {
		dir  string
		cfg  *configs.RunConfig
		opts Options
	}
	cases := []struct {
		name string
		// prepare makes the files and returns the run's config and options.
		prepare func(t *testing.T, s *setup)
		want    string
	}{
		{"output is the run's config file", func(t *testing.T, s *setup) {
			path := writeFile(t, filepath.Join(s.dir, "run.yaml"), "hardware: {preset: trn2}\nworkload: {kind: gemm, gemm: {m: 256, k: 512, n: 512}}\n")
			cfg, err := configs.Load(path, configs.LoadOptions{})
			require.NoError(t, err)
			s.cfg, s.opts.JSON = cfg, filepath.Join(s.dir, ".", "sub", "..", "run.yaml")
		}, "it is the run's config file"},
		{"output is a hard link to the run's config file", func(t *testing.T, s *setup) {
			path := writeFile(t, filepath.Join(s.dir, "run.yaml"), "hardware: {preset: trn2}\nworkload: {kind: gemm, gemm: {m: 256, k: 512, n: 512}}\n")
			require.NoError(t, os.Link(path, filepath.Join(s.dir, "alias.yaml")))
			cfg, err := configs.Load(path, configs.LoadOptions{})
			require.NoError(t, err)
			s.cfg, s.opts.CSV = cfg, filepath.Join(s.dir, "alias.yaml")
		}, "it is the run's config file"},
		{"config output is the config file", func(t *testing.T, s *setup) {
			path := writeFile(t, filepath.Join(s.dir, "run.yaml"), "hardware: {preset: trn2}\nworkload: {kind: gemm, gemm: {m: 256, k: 512, n: 512}}\noutputs: {trace: run.yaml}\n")
			cfg, err := configs.Load(path, configs.LoadOptions{})
			require.NoError(t, err)
			s.cfg = cfg
		}, "run.yaml:3:18: outputs.trace: cannot write " + "%DIR%/run.yaml: it is the run's config file"},
		{"output is the assembly file", func(t *testing.T, s *setup) {
			src, err := os.ReadFile("../examples/kernel-matmul.asm")
			require.NoError(t, err)
			path := writeFile(t, filepath.Join(s.dir, "k.asm"), string(src))
			cfg, err := ConfigForAssembly(path, "", nil)
			require.NoError(t, err)
			s.cfg, s.opts.DumpAsm = cfg, path
		}, "--dump-asm: cannot write %DIR%/k.asm: it is the assembly file the run reads"},
		{"the same path twice", func(t *testing.T, s *setup) {
			s.opts.JSON, s.opts.Trace = filepath.Join(s.dir, "x.json"), filepath.Join(s.dir, "x.json")
		}, "--json: cannot write %DIR%/x.json: it is also the --trace output"},
		{"the same path, spelt differently", func(t *testing.T, s *setup) {
			s.opts.JSON, s.opts.CSV = filepath.Join(s.dir, "x"), filepath.Join(s.dir, "new", "..", "x")
		}, "it is also the --json output"},
		{"the same path through a linked folder", func(t *testing.T, s *setup) {
			require.NoError(t, os.Mkdir(filepath.Join(s.dir, "real"), 0o755))
			require.NoError(t, os.Symlink("real", filepath.Join(s.dir, "link")))
			s.opts.JSON, s.opts.CSV = filepath.Join(s.dir, "real", "x"), filepath.Join(s.dir, "link", "x")
		}, "it is also the --json output"},
		{"the same new path through a linked folder", func(t *testing.T, s *setup) {
			require.NoError(t, os.Mkdir(filepath.Join(s.dir, "real"), 0o755))
			require.NoError(t, os.Symlink("real", filepath.Join(s.dir, "link")))
			s.opts.Trace, s.opts.DumpAsm = filepath.Join(s.dir, "real", "new", "x"), filepath.Join(s.dir, "link", "new", "x")
		}, "--trace: cannot write %DIR%/real/new/x: it is also the --dump-asm output"},
		{"two hard links of one file", func(t *testing.T, s *setup) {
			a := writeFile(t, filepath.Join(s.dir, "a.json"), "old")
			require.NoError(t, os.Link(a, filepath.Join(s.dir, "b.json")))
			s.opts.JSON, s.opts.CSV = a, filepath.Join(s.dir, "b.json")
		}, "--csv: cannot write %DIR%/b.json: it is also the --json output"},
		{"both on standard output", func(t *testing.T, s *setup) {
			s.opts.JSON, s.opts.CSV = "-", "-"
		}, "--json and --csv cannot both be - (standard output)"},
		{"a trace on standard output", func(t *testing.T, s *setup) {
			s.opts.Trace = "-"
		}, "--trace: cannot write -: - (standard output) is only for --json and --csv"},
		{"a read-only target", func(t *testing.T, s *setup) {
			// Root could write it, but the rule is the mode's owner write
			// bit, for everyone.
			s.opts.JSON = writeFile(t, filepath.Join(s.dir, "r.json"), "old")
			require.NoError(t, os.Chmod(s.opts.JSON, 0o444))
		}, "--json: cannot write %DIR%/r.json: it exists and is read-only (mode -r--r--r--)"},
		{"a read-only target with group write", func(t *testing.T, s *setup) {
			s.opts.CSV = writeFile(t, filepath.Join(s.dir, "r.csv"), "old")
			require.NoError(t, os.Chmod(s.opts.CSV, 0o464))
		}, "it exists and is read-only"},
		{"the folder is a regular file (json)", func(t *testing.T, s *setup) {
			writeFile(t, filepath.Join(s.dir, "f"), "a file")
			s.opts.JSON = filepath.Join(s.dir, "f", "r.json")
		}, "--json: cannot write %DIR%/f/r.json: %DIR%/f is a file, not a folder"},
		{"a folder above is a regular file (csv)", func(t *testing.T, s *setup) {
			writeFile(t, filepath.Join(s.dir, "f"), "a file")
			s.opts.CSV = filepath.Join(s.dir, "f", "sub", "deeper", "r.csv")
		}, "--csv: cannot write %DIR%/f/sub/deeper/r.csv: %DIR%/f is a file, not a folder"},
		{"the target is a folder", func(t *testing.T, s *setup) {
			require.NoError(t, os.Mkdir(filepath.Join(s.dir, "d"), 0o755))
			s.opts.Trace = filepath.Join(s.dir, "d")
		}, "--trace: cannot write %DIR%/d: it is a folder"},
		{"a link to nowhere", func(t *testing.T, s *setup) {
			require.NoError(t, os.Symlink("missing/r.json", filepath.Join(s.dir, "r.json")))
			s.opts.JSON = filepath.Join(s.dir, "r.json")
		}, "it is a symbolic link to missing/r.json, which cannot be reached"},
		{"a folder that cannot be written", func(t *testing.T, s *setup) {
			if root {
				// Root may write any folder; nobody can make files here.
				if _, err := os.Stat("/proc/self"); err != nil {
					t.Skip("no /proc/self to stand for an unwritable folder")
				}
				s.opts.JSON = "/proc/self/trnsim-results.json"
				return
			}
			d := filepath.Join(s.dir, "locked")
			require.NoError(t, os.Mkdir(d, 0o555))
			t.Cleanup(func() { os.Chmod(d, 0o755) })
			s.opts.JSON = filepath.Join(d, "r.json")
		}, "cannot write"},
		{"a window without a trace", func(t *testing.T, s *setup) {
			s.opts.TraceWindow = &report.TraceWindow{From: 0, To: clock.Microsecond}
		}, "--trace-window and --trace-limit need a trace"},
		{"a negative trace limit", func(t *testing.T, s *setup) {
			s.opts.Trace, s.opts.TraceLimit = filepath.Join(s.dir, "t.json"), -1
		}, "--trace-limit: must be 0 (no limit) or more, got -1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &setup{dir: t.TempDir()}
			tc.prepare(t, s)
			if s.cfg == nil {
				s.cfg = smallConfig(t)
			}
			before := tree(t, s.dir)
			lowered := watchLowering(t)
			out, err := Run(s.cfg, s.opts)
			require.Error(t, err)
			assert.Nil(t, out)
			assert.Contains(t, err.Error(), strings.ReplaceAll(tc.want, "%DIR%", s.dir))
			assert.NotContains(t, err.Error(), "\n", "one line")
			assert.False(t, *lowered, "refused before the workload was lowered or simulated")
			assert.Equal(t, before, tree(t, s.dir), "nothing was written, made or removed")
		})
	}
}

func TestEveryOutputIsCheckedBeforeTheSimulation(t *testing.T) {
	// Before: --trace failed at once but --json and --csv only after the
	// whole simulation. Now any output that cannot be written fails before
	// the workload is even lowered, and the others are not left behind.
	for _, flag := range []string{"json", "csv", "trace", "dump-asm"} {
		t.Run(flag, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "file"), "x")
			bad := filepath.Join(dir, "file", "out")
			good := func(n string) string { return filepath.Join(dir, "new", n) }
			opts := Options{JSON: good("r.json"), CSV: good("r.csv"), Trace: good("t.json"), DumpAsm: good("p.asm")}
			switch flag {
			case "json":
				opts.JSON = bad
			case "csv":
				opts.CSV = bad
			case "trace":
				opts.Trace = bad
			case "dump-asm":
				opts.DumpAsm = bad
			}
			before := tree(t, dir)
			lowered := watchLowering(t)
			_, err := Run(smallConfig(t), opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "--"+flag+": cannot write "+bad)
			assert.False(t, *lowered)
			assert.Equal(t, before, tree(t, dir), "the folder made for the other outputs is gone")
		})
	}
}

func TestFailedRunLeavesOldOutputs(t *testing.T) {
	// A run that fails in the simulation leaves the old outputs and no
	// temporary file or folder.
	dir := t.TempDir()
	old := writeFile(t, filepath.Join(dir, "r.json"), "old")
	before := tree(t, dir)
	cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: []string{"workload.gemm.m=10000000", "workload.gemm.k=10000000"}})
	require.NoError(t, err)
	_, err = Run(cfg, Options{JSON: old, Trace: filepath.Join(dir, "new", "t.json")})
	require.Error(t, err)
	assert.Equal(t, before, tree(t, dir))
}

// failingRename fails the nth rename of a temporary file into place (from
// 1), or the nth move of an old file aside when aside is set.
func failingRename(t *testing.T, n int, aside bool) {
	t.Helper()
	count := 0
	rename = func(from, to string) error {
		if strings.Contains(from, tempMarker) != aside && !strings.Contains(from, backupMarker) {
			count++
			if count == n {
				return &os.LinkError{Op: "rename", Old: from, New: to, Err: errors.New("injected failure")}
			}
		}
		return os.Rename(from, to)
	}
	t.Cleanup(func() { rename = os.Rename })
}

func TestCommitIsAllOrNothing(t *testing.T) {
	cases := []struct {
		name  string
		n     int
		aside bool
	}{
		{"first rename into place fails", 1, false},
		{"second rename into place fails", 2, false},
		{"last rename into place fails", 4, false},
		{"first move aside fails", 1, true},
		{"third move aside fails", 3, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := func(n string) string { return filepath.Join(dir, n) }
			// Three outputs exist; the trace is new.
			writeFile(t, p("p.asm"), "old asm")
			writeFile(t, p("r.json"), "old json")
			writeFile(t, p("r.csv"), "old csv")
			before := tree(t, dir)
			failingRename(t, tc.n, tc.aside)
			_, err := Run(smallConfig(t), Options{DumpAsm: p("p.asm"), Trace: p("t.json"), JSON: p("r.json"), CSV: p("r.csv")})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "injected failure")
			assert.Equal(t, before, tree(t, dir), "every old file is back, no new one stays")
		})
	}
}

func TestCommitReplacesEveryOldOutput(t *testing.T) {
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	writeFile(t, p("r.json"), "old json")
	writeFile(t, p("r.csv"), "old csv")
	require.NoError(t, os.Chmod(p("r.csv"), 0o600))
	_, err := Run(smallConfig(t), Options{JSON: p("r.json"), CSV: p("r.csv")})
	require.NoError(t, err)
	data, err := os.ReadFile(p("r.json"))
	require.NoError(t, err)
	assert.True(t, json.Valid(data))
	fi, err := os.Stat(p("r.csv"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "a replaced file keeps its permissions")
	noLeftovers(t, dir)
}

func TestALinkedTargetStaysALink(t *testing.T) {
	dir := t.TempDir()
	real := writeFile(t, filepath.Join(dir, "data", "r.json"), "old")
	link := filepath.Join(dir, "r.json")
	require.NoError(t, os.Symlink(filepath.Join("data", "r.json"), link))
	_, err := Run(smallConfig(t), Options{JSON: link})
	require.NoError(t, err)
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, fi.Mode().Type(), "the link is not replaced")
	data, err := os.ReadFile(real)
	require.NoError(t, err)
	assert.True(t, json.Valid(data), "the file it points to has the results")
	noLeftovers(t, dir)
}

func TestStandardOutput(t *testing.T) {
	var stdout bytes.Buffer
	out, err := Run(smallConfig(t), Options{CSV: "-", Stdout: &stdout})
	require.NoError(t, err)
	assert.True(t, out.UsedStdout)
	assert.Empty(t, out.Files)
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Len(t, lines, 2)
	assert.Equal(t, report.CSVHeader(), lines[0])
	// A run of no model has the model columns, empty: as many fields as
	// the header (the config names no comma).
	assert.Equal(t, strings.Count(lines[0], ","), strings.Count(lines[1], ","), "fields: %s", lines[1])
	assert.True(t, strings.HasSuffix(lines[1], ",,,,,,,"), lines[1])

	_, err = Run(smallConfig(t), Options{JSON: "-", Stdout: failingWriter{}})
	require.Error(t, err)
	assert.Equal(t, "--json: writing standard output: no space left", err.Error())

	// /dev/stdout is -, so the summary moves out of the way.
	stdout.Reset()
	out, err = Run(smallConfig(t), Options{JSON: "/dev/stdout", Stdout: &stdout})
	require.NoError(t, err)
	assert.True(t, out.UsedStdout)
	assert.True(t, json.Valid(stdout.Bytes()))

	// A config's outputs field may be - too (not a file named - beside the
	// config).
	dir := t.TempDir()
	cfgPath := writeFile(t, filepath.Join(dir, "run.yaml"), "hardware: {preset: trn2}\nworkload: {kind: gemm, gemm: {m: 256, k: 512, n: 512}}\noutputs: {json: \"-\", csv: \"-\"}\n")
	cfg, err := configs.Load(cfgPath, configs.LoadOptions{})
	require.NoError(t, err)
	_, err = Run(cfg, Options{Stdout: &stdout})
	require.Error(t, err)
	assert.Equal(t, cfgPath+":3:17: outputs.json and "+cfgPath+":3:27: outputs.csv cannot both be - (standard output)", err.Error())
	stdout.Reset()
	out, err = Run(cfg, Options{CSV: filepath.Join(dir, "r.csv"), Stdout: &stdout})
	require.NoError(t, err)
	assert.True(t, out.UsedStdout)
	assert.True(t, json.Valid(stdout.Bytes()))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2, "no file named - beside the config")
	assert.Equal(t, "r.csv", entries[0].Name())
	assert.Equal(t, "run.yaml", entries[1].Name())
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left") }

// deadPID returns the PID of a process that has ended.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

func TestStaleTemporaryFilesAreSwept(t *testing.T) {
	dir := t.TempDir()
	dead, live := deadPID(t), os.Getppid()
	name := func(f string, args ...any) string { return filepath.Join(dir, fmt.Sprintf(f, args...)) }
	// Left by a dead run: removed.
	writeFile(t, name(".r.json%s%d-abc", tempMarker, dead), "stale")
	writeFile(t, name(".r.json%s%d-xyz", tempMarker, os.Getpid()), "stale, from an earlier process with this PID")
	// A live run's, another target's, and files that only look alike: kept.
	kept := []string{
		name(".r.json%s%d-abc", tempMarker, live),
		name(".other.json%s%d-abc", tempMarker, dead),
		name(".r.json.partial-123"),
		name(".r.json%snot-a-pid", tempMarker),
		name("r.json%s%d-abc", tempMarker, dead),
	}
	for _, k := range kept {
		writeFile(t, k, "keep")
	}
	// A moved-aside copy of the target left by a killed commit: kept, and
	// reported.
	backup := name(".r.json%s%d-q", backupMarker, dead)
	writeFile(t, backup, "the only copy of the old results")
	var warnings bytes.Buffer
	_, err := Run(smallConfig(t), Options{JSON: name("r.json"), Warnings: &warnings})
	require.NoError(t, err)
	var got []string
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		got = append(got, filepath.Join(dir, e.Name()))
	}
	assert.ElementsMatch(t, append(kept, backup, name("r.json")), got)
	assert.Contains(t, warnings.String(), "trnsim: note: "+backup+" is a copy of "+name("r.json"))
}

func TestGuardStopDiscardsTheOutputs(t *testing.T) {
	dir := t.TempDir()
	old := writeFile(t, filepath.Join(dir, "r.json"), "old")
	before := tree(t, dir)
	g := &Guard{}
	var discarded bool
	beforeSimulate = func() error {
		// As a signal handler would, in the middle of the run: the
		// temporary files are there, then gone.
		assert.NotEqual(t, before, tree(t, dir))
		discarded = g.Stop()
		assert.Equal(t, before, tree(t, dir))
		return nil
	}
	t.Cleanup(func() { beforeSimulate = nil })
	_, err := Run(smallConfig(t), Options{JSON: old, Trace: filepath.Join(dir, "new", "t.json"), Guard: g})
	assert.ErrorIs(t, err, ErrStopped)
	assert.True(t, discarded)
	assert.Equal(t, before, tree(t, dir))
	_, err = Run(smallConfig(t), Options{JSON: old, Guard: g})
	assert.ErrorIs(t, err, ErrStopped, "a stopped guard refuses later runs")
}

func TestGuardStopWaitsForTheCommit(t *testing.T) {
	// The commit holds the guard's lock from the first rename to the last,
	// so a Stop (a signal) cannot land between two renames.
	dir := t.TempDir()
	g := &Guard{}
	var lockedDuringRenames []bool
	rename = func(from, to string) error {
		locked := !g.mu.TryLock()
		if !locked {
			g.mu.Unlock()
		}
		lockedDuringRenames = append(lockedDuringRenames, locked)
		return os.Rename(from, to)
	}
	t.Cleanup(func() { rename = os.Rename })
	writeFile(t, filepath.Join(dir, "r.json"), "old")
	_, err := Run(smallConfig(t), Options{JSON: filepath.Join(dir, "r.json"), CSV: filepath.Join(dir, "r.csv"), Guard: g})
	require.NoError(t, err)
	assert.Equal(t, []bool{true, true, true}, lockedDuringRenames, "one move aside, two renames, all under the lock")
	assert.False(t, g.Stop(), "nothing left to discard after the commit")
	data, err := os.ReadFile(filepath.Join(dir, "r.json"))
	require.NoError(t, err)
	assert.True(t, json.Valid(data), "a Stop after the commit leaves the new files")
}

// traceEvent is a complete event of a trace file.
type traceEvent struct {
	Ph  string  `json:"ph"`
	Ts  float64 `json:"ts"`
	Dur float64 `json:"dur"`
}

// traceEvents decodes a trace file's complete events and its otherData.
func traceEvents(t *testing.T, path string) ([]traceEvent, map[string]any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc struct {
		TraceEvents []traceEvent   `json:"traceEvents"`
		OtherData   map[string]any `json:"otherData"`
	}
	require.NoError(t, json.Unmarshal(data, &doc), "the trace is valid JSON")
	var events []traceEvent
	for _, e := range doc.TraceEvents {
		if e.Ph == "X" {
			events = append(events, e)
		}
	}
	return events, doc.OtherData
}

func TestTraceWindowAndLimit(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full.json")
	_, err := Run(smallConfig(t), Options{Trace: full})
	require.NoError(t, err)
	all, _ := traceEvents(t, full)

	from, to := 2*clock.Microsecond, 5*clock.Microsecond
	cases := []struct {
		name   string
		window *report.TraceWindow
		limit  int64
	}{
		{"window", &report.TraceWindow{From: from, To: to}, 0},
		{"limit", nil, 50},
		{"window and limit", &report.TraceWindow{From: from, To: to}, 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json")
			out, err := Run(smallConfig(t), Options{Trace: path, TraceWindow: tc.window, TraceLimit: tc.limit})
			require.NoError(t, err)
			events, other := traceEvents(t, path)
			require.NotEmpty(t, events)
			assert.Less(t, len(events), len(all))
			assert.Equal(t, int64(len(events)), out.TraceKept)
			assert.Equal(t, int64(len(all)-len(events)), out.TraceDropped)
			assert.Equal(t, strconv.FormatInt(out.TraceDropped, 10), other["events_left_out"])
			if tc.limit > 0 {
				assert.Len(t, events, int(tc.limit))
			}
			if tc.window != nil {
				assert.Equal(t, tc.window.String(), other["window"])
				us := float64(clock.Microsecond)
				for _, e := range events {
					assert.Less(t, e.Ts, float64(to)/us, "starts before the window ends")
					assert.GreaterOrEqual(t, e.Ts+e.Dur, float64(from)/us, "ends after the window starts")
				}
			}
		})
	}
}

func TestLargeTraceWarnsBeforeTheSimulation(t *testing.T) {
	cfg := smallConfig(t)
	dir := t.TempDir()
	// The estimate is the program's instruction count.
	_, err := Run(cfg, Options{Trace: filepath.Join(dir, "t.json")})
	require.NoError(t, err)
	out, err := Run(cfg, Options{})
	require.NoError(t, err)
	n := out.Result.Instructions
	require.Positive(t, n)

	saved := traceWarnBytes
	t.Cleanup(func() { traceWarnBytes = saved; beforeSimulate = nil })
	traceWarnBytes = n * traceBytesPerInstruction
	var warnings bytes.Buffer
	var atStart string
	beforeSimulate = func() error { atStart = warnings.String(); return nil }
	_, err = Run(cfg, Options{Trace: filepath.Join(dir, "t.json"), Warnings: &warnings})
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("trnsim: warning: --trace: the trace will be about %s (%d instructions, about %d bytes each) and tracing slows the run several times; --trace-window START:END (such as 0:50us) or --trace-limit N keeps it small\n",
		report.HumanBytes(n*traceBytesPerInstruction), n, traceBytesPerInstruction), atStart, "warned before the simulation")

	// One instruction fewer than the threshold, or a window: no warning.
	traceWarnBytes = (n + 1) * traceBytesPerInstruction
	warnings.Reset()
	_, err = Run(cfg, Options{Trace: filepath.Join(dir, "t.json"), Warnings: &warnings})
	require.NoError(t, err)
	assert.Empty(t, warnings.String())
	traceWarnBytes = 1
	_, err = Run(cfg, Options{Trace: filepath.Join(dir, "t.json"), TraceLimit: 10, Warnings: &warnings})
	require.NoError(t, err)
	assert.Empty(t, warnings.String())
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 812: "812 B", 8000: "7.8 KiB", 16 << 20: "16.0 MiB", 2588 << 20: "2.53 GiB"} {
		assert.Equal(t, want, report.HumanBytes(n))
	}
}

// An exact decode runs every step, one launch each: its trace runs on
// from step to step to the whole simulated time, and --dump-asm, one
// program to a file, is refused with nothing written.
func TestDecodeStepsTraceAndRefuseOneAsm(t *testing.T) {
	model := func(t *testing.T) *configs.RunConfig {
		cfg, err := configs.LoadBytes([]byte("hardware: {preset: trn2}\nworkload:\n  kind: model\n  model: {name: llama-3.2-1b, mode: decode, context: 256, tokens: 3, layers: 1, exact: true, gpus: []}\n"), "m.yaml", configs.LoadOptions{})
		require.NoError(t, err)
		return cfg
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.json")
	out, err := Run(model(t), Options{Trace: path})
	require.NoError(t, err)
	require.Len(t, out.Result.LaunchTimes, 3)
	events, _ := traceEvents(t, path)
	first, last := out.Result.LaunchTimes[0].Seconds()*1e6, 0.0
	var inLast int
	for _, e := range events {
		last = max(last, e.Ts+e.Dur)
		if e.Ts >= (out.Result.LaunchTimes[0]+out.Result.LaunchTimes[1]).Seconds()*1e6 {
			inLast++
		}
	}
	assert.Greater(t, inLast, 0, "the last step is traced after the two before")
	assert.Greater(t, last, 2*first)
	assert.InDelta(t, out.Report.SimulatedTimeS*1e6, last, 1e-3*last, "the trace ends with the run")

	asmPath := filepath.Join(dir, "steps.asm")
	_, err = Run(model(t), Options{DumpAsm: asmPath})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--dump-asm: the run is 3 programs, one per decode step")
	assert.NoFileExists(t, asmPath)
	noLeftovers(t, dir)
}

package main

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/report"
)

var smallSets = []string{"--set", "workload.gemm.m=256", "--set", "workload.gemm.k=512", "--set", "workload.gemm.n=512"}

func TestStandardOutputDash(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		check func(t *testing.T, stdout string)
	}{
		{"--json -", []string{"--json", "-"}, func(t *testing.T, stdout string) {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(stdout), &m), "standard output is the JSON and nothing else")
			assert.Contains(t, m, "simulated_time_s")
		}},
		{"--csv -", []string{"--csv", "-"}, func(t *testing.T, stdout string) {
			lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
			require.Len(t, lines, 2, "standard output is the CSV and nothing else")
			assert.True(t, strings.HasPrefix(lines[0], "config,hardware,workload,"))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := trnsim(t, append(append([]string{"run", "-q"}, smallSets...), tc.args...)...)
			require.Equal(t, 0, code, stderr)
			tc.check(t, stdout)
			assert.Contains(t, stderr, "simulated time", "the summary goes to standard error")
		})
	}
}

func TestFullStandardOutputFails(t *testing.T) {
	var stdout io.Writer = failing{}
	if f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0); err == nil {
		defer f.Close()
		stdout = f
	}
	for _, args := range [][]string{
		append([]string{"run", "-q"}, smallSets...),
		append([]string{"run", "-q", "--json", "-"}, smallSets...),
		{"presets"},
		{"--help"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stderr strings.Builder
			code := run(args, stdout, &stderr)
			assert.Equal(t, 1, code)
			assert.Contains(t, stderr.String(), "writing standard output: ")
			assert.Contains(t, stderr.String(), "no space left on device")
			assert.Equal(t, 1, strings.Count(stderr.String(), "trnsim: "), "one error line:\n%s", stderr.String())
		})
	}
}

// failing stands for /dev/full where there is none.
type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

func TestConfigOutputsAreListedWithTheirSizes(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "run.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`hardware: {preset: trn2}
workload: {kind: gemm, gemm: {m: 256, k: 512, n: 512}}
outputs:
  json: out/results.json
  csv: out/results.csv
  trace: out/trace.json
  asm: out/program.asm
`), 0o644))
	code, _, stderr := trnsim(t, "run", cfg)
	require.Equal(t, 0, code, stderr)
	var want []string
	for _, name := range []string{"program.asm", "trace.json", "results.json", "results.csv"} {
		p := filepath.Join(dir, "out", name)
		fi, err := os.Stat(p)
		require.NoError(t, err)
		want = append(want, "trnsim: wrote "+p+" ("+report.HumanBytes(fi.Size())+")")
	}
	var got []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "trnsim: wrote ") {
			got = append(got, l)
		}
	}
	assert.Equal(t, want, got)

	code, _, stderr = trnsim(t, "run", "-q", cfg)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stderr, "-q: no list")
}

func TestTraceWindowFlags(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "t.json")
	code, _, stderr := trnsim(t, append([]string{"run", "--trace", p, "--trace-window", "0:20us", "--trace-limit", "40"}, smallSets...)...)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `trnsim: wrote .*t\.json \([0-9.]+ KiB; 40 events kept, [0-9]+ left out by --trace-window/--trace-limit\)`, stderr)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.True(t, json.Valid(data))

	code, stdout, stderr := trnsim(t, "run", "--trace", p, "--trace-window", "2us")
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "trnsim: --trace-window: \"2us\" is not a window: write START:END, such as 0:50us or 1ms:2ms\n", stderr)

	code, out, _ := trnsim(t, "run", "--help")
	require.Equal(t, 0, code)
	for _, s := range []string{"--trace-window START:END", "--trace-limit N", "(- for standard output)", "130 or 143"} {
		assert.Contains(t, out, s)
	}
}

// `trnsim run --json out.json > out.json`: the shell made the target the
// command's standard output too, so the summary and the output would
// corrupt each other. It is refused before anything runs, and the file is
// left as the shell left it. A device (/dev/null) takes both.
func TestOutputThatIsStandardOutputIsRefused(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "run.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("hardware: {preset: trn2}\nworkload: {kind: gemm, gemm: {m: 256, k: 512, n: 512}}\noutputs:\n  json: cfg-out.json\n"), 0o644))
	jsonHint := "give another file, or --json - to write it to standard output (the summary then goes to standard error)"
	cases := []struct {
		name string
		args func(target string) []string
		file string // the target, in dir
		want string // after "trnsim: "; "" for success
	}{
		{"--json", func(p string) []string { return append([]string{"run", "--json", p}, smallSets...) }, "out.json", "--json: cannot write %s: it is also the run's standard output (redirected there), where the summary goes, so one would corrupt the other; " + jsonHint},
		{"--csv", func(p string) []string { return append([]string{"run", "--csv", p}, smallSets...) }, "out.csv", "--csv: cannot write %s: it is also the run's standard output (redirected there), where the summary goes, so one would corrupt the other; give another file, or --csv - to write it to standard output (the summary then goes to standard error)"},
		{"--trace", func(p string) []string { return append([]string{"run", "--trace", p}, smallSets...) }, "t.json", "--trace: cannot write %s: it is also the run's standard output (redirected there), where the summary goes, so one would corrupt the other; give another file"},
		{"--dump-asm", func(p string) []string { return append([]string{"run", "--dump-asm", p}, smallSets...) }, "p.asm", "--dump-asm: cannot write %s: it is also the run's standard output (redirected there), where the summary goes, so one would corrupt the other; give another file"},
		{"--json with --json - elsewhere", func(p string) []string {
			return append([]string{"run", "--csv", "-", "--json", p}, smallSets...)
		}, "both.json", "--json: cannot write %s: it is also the run's standard output (redirected there), where the summary goes, so one would corrupt the other; " + jsonHint},
		{"outputs.json of the config", func(string) []string { return []string{"run", cfg} }, "cfg-out.json", cfg + ":4:9: outputs.json: cannot write %s: it is also the run's standard output (redirected there), where the summary goes, so one would corrupt the other; " + jsonHint},
		{"through a symbolic link", func(p string) []string {
			link := filepath.Join(dir, "link.json")
			require.NoError(t, os.Symlink(p, link))
			return append([]string{"run", "--json", link}, smallSets...)
		}, "linked.json", "--json: cannot write " + filepath.Join(dir, "link.json") + ": it is also the run's standard output (redirected there), where the summary goes, so one would corrupt the other; " + jsonHint},
		{"/dev/null", func(string) []string { return append([]string{"run", "-q", "--json", "/dev/null"}, smallSets...) }, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := "/dev/null"
			if tc.file != "" {
				target = filepath.Join(dir, tc.file)
			}
			stdout, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			require.NoError(t, err)
			defer stdout.Close()
			var stderr strings.Builder
			code := run(tc.args(target), stdout, &stderr)
			if tc.want == "" {
				assert.Equal(t, 0, code, stderr.String())
				return
			}
			assert.Equal(t, 1, code)
			want := tc.want
			if strings.Contains(want, "%s") {
				want = strings.Replace(want, "%s", target, 1)
			}
			assert.Equal(t, "trnsim: "+want+"\n", stderr.String())
			data, err := os.ReadFile(target)
			require.NoError(t, err)
			assert.Empty(t, data, "nothing written: the run was refused before it started")
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				assert.NotContains(t, e.Name(), "partial")
			}
		})
	}
}

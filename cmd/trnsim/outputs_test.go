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

	"github.com/trnsim/trnsim/runner"
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
		want = append(want, "trnsim: wrote "+p+" ("+runner.HumanBytes(fi.Size())+")")
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

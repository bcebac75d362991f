package main

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runFigures runs the embedded default GEMM with --plots and --json.
func runFigures(t *testing.T, extra ...string) (dir, results string) {
	t.Helper()
	tmp := t.TempDir()
	dir, results = filepath.Join(tmp, "figs"), filepath.Join(tmp, "results.json")
	args := append([]string{"run", "-q", "--set", "workload.gemm.m=512", "--set", "workload.gemm.k=1024", "--set", "workload.gemm.n=1024", "--plots", dir, "--json", results}, extra...)
	code, _, stderr := trnsim(t, args...)
	require.Equal(t, 0, code, stderr)
	return dir, results
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// run --plots writes a GEMM's roofline, stalls and timeline as PNG and
// SVG, and plot RESULTS.json redraws the same files from results.json.
func TestPlotResultsRoundTrip(t *testing.T) {
	dir, results := runFigures(t)
	want := []string{"roofline-trainium.png", "roofline-trainium.svg", "stalls.png", "stalls.svg", "timeline.png", "timeline.svg"}
	assert.Equal(t, want, listDir(t, dir))
	data, err := os.ReadFile(filepath.Join(dir, "timeline.png"))
	require.NoError(t, err)
	_, err = png.Decode(bytes.NewReader(data))
	require.NoError(t, err)

	again := filepath.Join(t.TempDir(), "again")
	code, stdout, stderr := trnsim(t, "plot", results, "--out", again)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "wrote "+filepath.Join(again, "timeline.svg"))
	assert.Equal(t, want, listDir(t, again))
	for _, f := range want {
		a, _ := os.ReadFile(filepath.Join(dir, f))
		b, _ := os.ReadFile(filepath.Join(again, f))
		assert.True(t, bytes.Equal(a, b), "%s redrawn the same", f)
	}
	// --plot-format svg, and the default folder: the results file's.
	code, _, stderr = trnsim(t, "plot", results, "--plot-format", "svg")
	require.Equal(t, 0, code, stderr)
	assert.FileExists(t, filepath.Join(filepath.Dir(results), "stalls.svg"))
	assert.NoFileExists(t, filepath.Join(filepath.Dir(results), "stalls.png"))
}

func TestRunPlotFormat(t *testing.T) {
	dir, _ := runFigures(t, "--plot-format", "png", "--plot-window", "0:20us")
	assert.Equal(t, []string{"roofline-trainium.png", "stalls.png", "timeline.png"}, listDir(t, dir))
}

// Bad figure requests are one clear error naming the file or flag, with a
// non-zero exit and no panic.
func TestPlotResultsErrors(t *testing.T) {
	_, results := runFigures(t)
	tmp := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(tmp, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	var full map[string]any
	data, err := os.ReadFile(results)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &full))
	delete(full, "roofline")
	old, _ := json.Marshal(full)
	noRoofline := write("old.json", string(old))
	notResults := write("other.json", `{"hello": 1}`)
	broken := write("broken.json", `{"schema_version": 1,`)
	text := write("notes.txt", "hello")
	jsonl := write("results.jsonl", "{}\n")
	missing := filepath.Join(tmp, "missing.json")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing file", []string{"plot", missing}, missing + ": no such file"},
		{"not a results file", []string{"plot", notResults}, notResults + ": not a trnsim results file"},
		{"broken JSON", []string{"plot", broken}, broken + ": not a trnsim results file"},
		{"no roofline section", []string{"plot", noRoofline}, noRoofline + ": has no roofline section"},
		{"unknown extension", []string{"plot", text}, text + ": is a .txt file; give a run's results .json"},
		{"sweep flags", []string{"plot", results, "--x", "m"}, "--x: draws a sweep"},
		{"a sweep's results.jsonl", []string{"plot", jsonl}, "give the sweep's folder (" + tmp + "), not its results.jsonl"},
		{"bad plot format", []string{"plot", results, "--plot-format", "jpg"}, `--plot-format: "jpg" is not a figure format`},
		{"out is a file", []string{"plot", results, "--out", text}, "is a file, not a folder"},
		{"run: bad plot format", []string{"run", "--plots", tmp, "--plot-format", "gif"}, `--plot-format: "gif" is not a figure format`},
		{"run: window without plots", []string{"run", "--plot-window", "0:1us"}, "--plot-window: needs --plots DIR"},
		{"run: bad window", []string{"run", "--plots", tmp, "--plot-window", "5us:1us"}, "--plot-window:"},
		{"run: plots into a file", []string{"run", "--plots", text}, "--plots " + text + ": is a file"},
		{"validate: bad plot format", []string{"validate", "--plots", tmp, "--plot-format", "bmp"}, `--plot-format: "bmp"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := trnsim(t, tc.args...)
			assert.Equal(t, 1, code, stderr)
			assert.Contains(t, stderr, tc.want)
			assert.NotContains(t, stderr, "internal error")
		})
	}
}

func TestValidatePlots(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "v")
	code, _, stderr := trnsim(t, "validate", "--only", "K6,S4-CHAIN", "--plots", dir, "--plot-format", "png")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, []string{"validation-time.png"}, listDir(t, dir))
	assert.Contains(t, stderr, "wrote "+filepath.Join(dir, "validation-time.png"))
}

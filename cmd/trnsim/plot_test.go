package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/sweep"
)

// writeSweep writes a sweep output folder with a point for every m and
// buffers, and one failed point that the figures leave out.
func writeSweep(t *testing.T) string {
	dir := t.TempDir()
	var buf bytes.Buffer
	i := 0
	for _, m := range []string{"1024", "2048", "4096"} {
		for _, b := range []string{"2", "3"} {
			r := sweep.Row{ID: "p", Index: i, Status: "ok",
				Axes:    map[string]string{"workload.gemm.m": m, "workload.lowering.buffers": b, "hardware.preset": "trn2"},
				Metrics: map[string]any{"simulated_time_s": 1e-4 * float64(i+1), "tflops": 50.0 + float64(i), "hardware": "trn2"}}
			line, err := json.Marshal(r)
			require.NoError(t, err)
			buf.Write(append(line, '\n'))
			i++
		}
	}
	failed, _ := json.Marshal(sweep.Row{Index: i, Status: "failed", Error: "boom", Axes: map[string]string{"workload.gemm.m": "8192", "workload.lowering.buffers": "2", "hardware.preset": "trn2"}})
	buf.Write(append(failed, '\n'))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "results.jsonl"), buf.Bytes(), 0o644))
	return dir
}

func TestPlotDrawsASweep(t *testing.T) {
	dir := writeSweep(t)
	for _, tc := range []struct {
		name string
		args []string
		want string // prefix of the file
	}{
		{"line png", []string{"--x", "workload.gemm.m", "--y", "simulated_time_s", "--out", "l.png"}, "\x89PNG"},
		{"line svg, fixed", []string{"--x", "workload.gemm.m", "--y", "tflops", "--fix", "workload.lowering.buffers=3", "--out", "l.svg"}, "<?xml"},
		{"heat", []string{"--x", "workload.gemm.m", "--heat", "workload.lowering.buffers", "--y", "tflops", "--out", "h.png"}, "\x89PNG"},
		{"log axes", []string{"--x", "workload.gemm.m", "--y", "simulated_time_s", "--log-x", "--log-y", "--out", "l.png"}, "\x89PNG"},
		{"pareto over an axis", []string{"--x", "workload.gemm.m", "--y", "tflops", "--pareto", "--out", "p.svg"}, "<?xml"},
		{"pareto over two metrics", []string{"--x", "simulated_time_s", "--y", "tflops", "--pareto", "--better-x", "lower", "--out", "p.png"}, "\x89PNG"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), tc.args[len(tc.args)-1])
			args := append([]string{"plot", dir}, tc.args[:len(tc.args)-1]...)
			code, stdout, stderr := trnsim(t, append(args, out)...)
			require.Equal(t, 0, code, stderr)
			assert.Contains(t, stdout, "wrote "+out)
			data, err := os.ReadFile(out)
			require.NoError(t, err)
			assert.True(t, bytes.HasPrefix(data, []byte(tc.want)), "%q", data[:min(len(data), 16)])
		})
	}
}

// Bad plot requests are one clear error, and an old figure is left alone.
func TestPlotErrors(t *testing.T) {
	dir := writeSweep(t)
	for _, tc := range []struct {
		name string
		args []string
		err  string
	}{
		{"missing flags", []string{"--x", "workload.gemm.m"}, "--x, --y and --out are required"},
		{"not a sweep", []string{"--x", "a", "--y", "b", "--out", "OUT.png", "--", "/nonexistent"}, "not a sweep's output"},
		{"unknown axis", []string{"--x", "workload.gemm.n", "--y", "tflops", "--out", "OUT.png"}, "--x workload.gemm.n: not an axis of the sweep"},
		{"unknown metric", []string{"--x", "workload.gemm.m", "--y", "speed", "--out", "OUT.png"}, "--y speed: not a metric"},
		{"text metric", []string{"--x", "workload.gemm.m", "--y", "hardware", "--out", "OUT.png"}, "not a numeric metric"},
		{"text axis", []string{"--x", "hardware.preset", "--y", "tflops", "--out", "OUT.png"}, `value "trn2" is not a number`},
		{"unknown fix", []string{"--x", "workload.gemm.m", "--y", "tflops", "--fix", "workload.gemm.k=1", "--out", "OUT.png"}, "--fix workload.gemm.k: not an axis"},
		{"fix matches nothing", []string{"--x", "workload.gemm.m", "--y", "tflops", "--fix", "workload.lowering.buffers=9", "--out", "OUT.png"}, "no finished point matches"},
		{"text heat axis", []string{"--x", "workload.gemm.m", "--heat", "hardware.preset", "--y", "tflops", "--out", "OUT.png"}, "is not a number"},
		{"metric on x without --pareto", []string{"--x", "simulated_time_s", "--y", "tflops", "--out", "OUT.png"}, "--x simulated_time_s: not an axis"},
		{"pareto unknown x", []string{"--x", "speed", "--y", "tflops", "--pareto", "--out", "OUT.png"}, "neither an axis of the sweep"},
		{"pareto and heat", []string{"--x", "workload.gemm.m", "--heat", "workload.lowering.buffers", "--y", "tflops", "--pareto", "--out", "OUT.png"}, "give one"},
		{"bad better", []string{"--x", "workload.gemm.m", "--y", "tflops", "--pareto", "--better-y", "more", "--out", "OUT.png"}, "--better-y more: give lower or higher"},
		{"bad extension", []string{"--x", "workload.gemm.m", "--y", "tflops", "--out", "OUT.jpg"}, "plots are written as .png or .svg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			old := filepath.Join(tmp, "OUT.png")
			require.NoError(t, os.WriteFile(old, []byte("old"), 0o644))
			args := []string{"plot"}
			target := dir
			for i, a := range tc.args {
				switch {
				case a == "--":
					target = tc.args[i+1]
				case i > 0 && tc.args[i-1] == "--":
				case a == "OUT.png" || a == "OUT.jpg":
					args = append(args, filepath.Join(tmp, a))
				default:
					args = append(args, a)
				}
			}
			code, _, stderr := trnsim(t, append(args, target)...)
			assert.NotEqual(t, 0, code)
			assert.Contains(t, stderr, tc.err)
			data, err := os.ReadFile(old)
			require.NoError(t, err)
			assert.Equal(t, "old", string(data))
			entries, _ := os.ReadDir(tmp)
			assert.Len(t, entries, 1, "no partial figure left behind")
		})
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func trnsim(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestVersion(t *testing.T) {
	code, out, _ := trnsim(t, "--version")
	assert.Equal(t, 0, code)
	assert.Equal(t, "trnsim version 0.1.0\n", out)
}

func TestRunDefaultWritesJSONWithStableKeys(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "results.json")
	code, out, errOut := trnsim(t, "run", "-q", "--json", jsonPath, "--set", "workload.gemm.m=256", "--set", "workload.gemm.k=512", "--set", "workload.gemm.n=512")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "simulated time")
	assert.Contains(t, out, "of peak (HFU)")
	data, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	for _, k := range []string{"schema_version", "trnsim_version", "config_hash", "simulated_time_s", "host_time_s", "instructions",
		"tflops", "peak_pct", "engines", "dma", "hbm", "chips", "stalls"} {
		assert.Contains(t, m, k)
	}
	assert.Equal(t, float64(1), m["schema_version"])
	eng := m["engines"].(map[string]any)
	assert.Contains(t, eng["tensor"].(map[string]any), "busy_pct")
	assert.Contains(t, m["dma"].(map[string]any), "bytes")
	assert.Contains(t, m["dma"].(map[string]any), "bandwidth_gbps")
	assert.Contains(t, m["hbm"].(map[string]any), "read_bytes")
	assert.Contains(t, m["hbm"].(map[string]any), "write_bytes")
	core := m["chips"].([]any)[0].(map[string]any)["cores"].([]any)[0].(map[string]any)
	assert.Contains(t, core["engines"].(map[string]any)["tensor"].(map[string]any), "busy_pct")
}

func TestRunIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	var docs []map[string]any
	for i := 0; i < 2; i++ {
		p := filepath.Join(dir, "r.json")
		code, _, errOut := trnsim(t, "run", "-q", "--json", p, "--set", "workload.gemm.m=256", "--set", "workload.gemm.k=1024", "--set", "workload.gemm.n=1024")
		require.Equal(t, 0, code, errOut)
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(data, &m))
		for _, k := range []string{"host_time_s", "instructions_per_host_s", "events_per_host_s"} {
			delete(m, k)
		}
		docs = append(docs, m)
	}
	assert.Equal(t, docs[0], docs[1])
}

func TestRunAssemblyAndTrace(t *testing.T) {
	dir := t.TempDir()
	tracePath := filepath.Join(dir, "t.json")
	code, out, errOut := trnsim(t, "run", "-q", "../../examples/kernel-matmul.asm", "--trace", tracePath)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "simulated time")
	data, err := os.ReadFile(tracePath)
	require.NoError(t, err)
	var tr map[string]any
	require.NoError(t, json.Unmarshal(data, &tr))
	assert.NotEmpty(t, tr["traceEvents"])
}

func TestBadInputGivesOneClearErrorAndNoOutput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	badField := write("bad.yaml", "hardware:\n  preset: trn2\n  sbuf_kib: 3\nworkload: {kind: gemm, gemm: {m: 1, k: 1, n: 1}}\n")
	negative := write("neg.yaml", "hardware: {preset: trn2}\nworkload: {kind: gemm, gemm: {m: -4, k: 1, n: 1}}\n")
	unsupported := write("unsup.yaml", "hardware: {preset: trn2}\nworkload: {kind: llama}\n")
	deadlock := write("dead.asm", ".version 1\n.target trn2\n.buffer a sbuf fp32 [128, 64]\nvector memset a wait=s1>=1\n")
	tooBig := write("big.yaml", "hardware: {preset: trn2}\nworkload: {kind: gemm, gemm: {m: 512, k: 512, n: 512}, lowering: {block_m: 4096, block_n: 2048, block_k: 2048}}\n")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown field", []string{"run", badField}, badField + ":3:3: hardware.sbuf_kib: unknown field"},
		{"negative size", []string{"run", negative}, negative + ":2:34: workload.gemm.m: must be greater than 0, got -4"},
		{"unsupported workload", []string{"run", unsupported}, "workload.kind: unsupported workload kind \"llama\""},
		{"missing file", []string{"run", filepath.Join(dir, "nope.yaml")}, "nope.yaml: no such file"},
		{"deadlock", []string{"run", deadlock}, "deadlock: 1 engine(s) can never continue"},
		{"working set", []string{"run", tooBig}, "more than SBUF's 224.0 KiB"},
		{"unknown command", []string{"fly"}, "unknown command \"fly\""},
		{"two configs", []string{"run", badField, negative}, "run: accepts at most 1 arg(s), received 2 (usage: trnsim run [config.yaml | kernel.tile | kernel.asm] [flags]; see trnsim run --help)"},
		{"bad --set", []string{"run", "--set", "hardware.core.sbuf.partition_kib=big"}, "--set hardware.core.sbuf.partition_kib=big: expected an integer"},
		{"too big for HBM", []string{"run", "--set", "workload.gemm.m=10000000", "--set", "workload.gemm.k=10000000"}, "the gemm kernel's tensors do not fit one chip's HBM: they need"},
		{"unknown --preset", []string{"run", "--preset", "trn9"}, `--preset trn9: unknown preset "trn9" (presets: inf2, trn1, trn2, trn3)`},
		// A utilisation above 100% is never clamped: the run fails.
		{"faster than the peak", []string{"run", "--set", "hardware.costs.tensor.multiply_moving.default.interval=N/4", "--set", "workload.gemm.m=256", "--set", "workload.gemm.k=512", "--set", "workload.gemm.n=512"},
			"internal error: chip 0 core 0 TensorE did 1.342e+08 FLOPs of bf16 at x1 in "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name+".json")
			code, stdout, stderr := trnsim(t, append(tc.args, "-q", "--json", out)...)
			assert.NotEqual(t, 0, code)
			assert.Empty(t, stdout)
			assert.True(t, strings.HasPrefix(stderr, "trnsim: "), stderr)
			assert.Contains(t, stderr, tc.want)
			assert.NotContains(t, stderr, "goroutine", "no stack trace")
			_, err := os.Stat(out)
			assert.True(t, os.IsNotExist(err), "no partial output")
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				assert.NotContains(t, e.Name(), ".partial-")
			}
		})
	}
}

func TestCheck(t *testing.T) {
	code, out, errOut := trnsim(t, "check", "../../examples/gemm-trn2.yaml")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "hardware.core.tensor.clock_ghz")
	assert.Contains(t, out, "preset trn2")
	code, out, errOut = trnsim(t, "check", "../../examples/kernel-matmul.asm")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, ".version 1")
	assert.Contains(t, out, "multiply_moving")
}

func TestPresets(t *testing.T) {
	code, out, _ := trnsim(t, "presets")
	require.Equal(t, 0, code)
	for _, p := range []string{"trn1", "inf2", "trn2", "trn3"} {
		assert.Contains(t, out, p)
	}
	assert.Contains(t, out, "91.8 TFLOPS") // trn1: 128 x 128 x 2 x 2.8 GHz
	assert.Contains(t, out, "78.6 TFLOPS") // trn2, trn3: 2.4 GHz
}

func TestValidateFastJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the fast validation cases")
	}
	code, out, errOut := trnsim(t, "validate", "--fast", "--json")
	require.Equal(t, 0, code, errOut)
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &rows))
	require.NotEmpty(t, rows)
	for _, r := range rows {
		for _, k := range []string{"id", "predicted", "measured", "unit", "error_pct"} {
			assert.Contains(t, r, k)
		}
	}
}

func TestTraceSlicesNestOnEngineTracks(t *testing.T) {
	// Slices on one engine's track may nest (a background LoadStationary
	// inside a multiply) but never partly overlap, or Perfetto draws them
	// wrongly.
	dir := t.TempDir()
	p := filepath.Join(dir, "t.json")
	code, _, errOut := trnsim(t, "run", "-q", "--trace", p, "--set", "workload.gemm.m=512", "--set", "workload.gemm.k=1024", "--set", "workload.gemm.n=1024")
	require.Equal(t, 0, code, errOut)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	var tr struct {
		TraceEvents []struct {
			Ph  string  `json:"ph"`
			Pid int     `json:"pid"`
			Tid int     `json:"tid"`
			Ts  float64 `json:"ts"`
			Dur float64 `json:"dur"`
		} `json:"traceEvents"`
	}
	require.NoError(t, json.Unmarshal(data, &tr))
	type span struct{ s, e float64 }
	tracks := map[[2]int][]span{}
	for _, e := range tr.TraceEvents {
		if e.Ph == "X" && e.Tid < 100 {
			k := [2]int{e.Pid, e.Tid}
			tracks[k] = append(tracks[k], span{e.Ts, e.Ts + e.Dur})
		}
	}
	require.NotEmpty(t, tracks)
	for k, spans := range tracks {
		sort.Slice(spans, func(i, j int) bool { return spans[i].s < spans[j].s })
		for i := 1; i < len(spans); i++ {
			a, b := spans[i-1], spans[i]
			if b.s < a.e-1e-6 {
				assert.LessOrEqual(t, b.e, a.e+1e-6, "track %v: [%g, %g) partly overlaps [%g, %g)", k, b.s, b.e, a.s, a.e)
			}
		}
	}
}

package gpu

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/graph"
)

const examplePath = "../examples/gpu-calibration-h100.json"

// The committed example loads, says it is an example, and its constants
// are the defaults: its timings are the published rows Fit uses, and
// fitting them in Go gives what the script's fit wrote.
func TestCalibrationExample(t *testing.T) {
	f, err := LoadCalibration(examplePath)
	require.NoError(t, err)
	assert.Equal(t, CalibrationFormat, f.Format)
	assert.Contains(t, f.Example, "not a measurement")
	assert.Equal(t, "h100", f.Device.Name)
	want := Default.Constants()
	got := f.Constants
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"matmul_eff", got.MatmulEff, want.MatmulEff}, {"stream_eff", got.StreamEff, want.StreamEff}, {"gemv_eff", got.GEMVEff, want.GEMVEff},
		{"attn_eff", got.AttnEff, want.AttnEff}, {"launch_us", got.LaunchUs, want.LaunchUs}} {
		assert.InEpsilon(t, c.want, c.got, 1e-5, c.name)
	}
	require.NotEmpty(t, f.Timings)
	refit, notes, err := FitTimings(devices["h100"], f.Timings, Default)
	require.NoError(t, err)
	assert.InEpsilon(t, f.Constants.MatmulEff, refit.MatmulEff, 1e-5)
	assert.InEpsilon(t, f.Constants.StreamEff, refit.StreamEff, 1e-5)
	assert.InEpsilon(t, f.Constants.GEMVEff, refit.GEMVEff, 1e-5)
	assert.InEpsilon(t, f.Constants.AttnEff, refit.AttnEff, 1e-5)
	assert.InEpsilon(t, f.Constants.LaunchUs, refit.LaunchUs, 1e-5)
	for _, k := range []string{"matmul_eff", "stream_eff", "gemv_eff", "attn_eff"} {
		assert.Contains(t, notes[k], "fitted on 1 shapes", k)
	}
	// Applied to its device only.
	assert.Equal(t, f.Constants.MatmulEff, f.For("h100", Calibration{}).MatmulEff)
	assert.Equal(t, Default, f.For("b200", Default))
	var none *CalibrationFile
	assert.Equal(t, Default, none.For("h100", Default))
}

// Timings the model itself predicts with known constants give those
// constants back, whatever the start.
func TestFitTimingsRecovers(t *testing.T) {
	truth := Calibration{MatmulEff: 0.7, StreamEff: 0.8, GEMVEff: 0.6, AttnEff: 0.65, LaunchUs: 3}
	d := devices["b200"]
	shapes := append(ReferenceShapes(),
		OpShape{Op: "decode_proj", Count: 32, Kind: "matmul", M: 1, K: 4096, N: 14336, Batch: 1, DType: "bf16"},
		OpShape{Op: "prefill_proj", Count: 4, Kind: "matmul", M: 4096, K: 4096, N: 4096, Batch: 1, DType: "bf16"},
		OpShape{Op: "norm", Count: 64, Kind: "stream", Bytes: 8 << 20},
		OpShape{Op: "tiny", Count: 64, Kind: "stream", Bytes: 4096}, // launch-bound: left out of the fit
		OpShape{Op: "decode_attn", Count: 32, Kind: "attention", DType: "bf16", FLOPs: 1e8, Bytes: 64 << 20})
	var rows []Timing
	for _, s := range shapes {
		var ts float64
		switch s.Kind {
		case "launch":
			ts = truth.LaunchUs * 1e-6
		case "matmul":
			dt, out, err := rowDTypes(s)
			require.NoError(t, err)
			ts, _ = truth.MatmulTime(d, s.M, s.K, s.N, s.Batch, dt, out)
		case "attention":
			ts, _ = truth.AttentionTime(d, s.FLOPs, s.Bytes, isa.BF16)
		case "stream":
			ts, _ = truth.StreamTime(d, s.Bytes)
		}
		s.TimeS = ts
		rows = append(rows, s)
	}
	for _, start := range []Calibration{Default, {MatmulEff: 0.1, StreamEff: 2, GEMVEff: 0.05, AttnEff: 3, LaunchUs: 1}} {
		got, notes, err := FitTimings(d, rows, start)
		require.NoError(t, err)
		assert.InEpsilon(t, truth.MatmulEff, got.MatmulEff, 1e-9)
		assert.InEpsilon(t, truth.StreamEff, got.StreamEff, 1e-9)
		assert.InEpsilon(t, truth.GEMVEff, got.GEMVEff, 1e-9)
		assert.InEpsilon(t, truth.AttnEff, got.AttnEff, 1e-9)
		assert.InEpsilon(t, truth.LaunchUs, got.LaunchUs, 1e-9)
		assert.Contains(t, notes["gemv_eff"], "fitted on 2 shapes", "the decode and skinny GEMMs")
	}
	// No usable row of a class: its constant keeps the start's.
	got, notes, err := FitTimings(d, rows[:1], Default)
	require.NoError(t, err)
	assert.Equal(t, Default.MatmulEff, got.MatmulEff)
	assert.Contains(t, notes["matmul_eff"], "kept")
	_, _, err = FitTimings(d, []Timing{{Op: "x", Kind: "conv", TimeS: 1}}, Default)
	assert.ErrorContains(t, err, `x: unknown kind "conv"`)
}

// Each malformed file is one error naming the file and the field.
func TestCalibrationErrors(t *testing.T) {
	good, err := os.ReadFile(examplePath)
	require.NoError(t, err)
	edit := func(fn func(m map[string]any)) string {
		var m map[string]any
		require.NoError(t, json.Unmarshal(good, &m))
		fn(m)
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return string(b)
	}
	constant := func(k string, v any) string {
		return edit(func(m map[string]any) { m["constants"].(map[string]any)[k] = v })
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name, text, want string
	}{
		{"bad JSON", `{"format": `, "invalid JSON"},
		{"not an object", `[1, 2]`, "the file: expected a JSON object"},
		{"no format", edit(func(m map[string]any) { delete(m, "format") }), `format: missing (want "trnsim-gpu-calibration/1")`},
		{"another format", edit(func(m map[string]any) { m["format"] = "trnsim-gpu-calibration/9" }), `format: want "trnsim-gpu-calibration/1", got "trnsim-gpu-calibration/9"`},
		{"unknown device", edit(func(m map[string]any) { m["device"].(map[string]any)["name"] = "v100" }), `device.name: unknown GPU "v100" (GPUs: a100-40gb, `},
		{"no device name", edit(func(m map[string]any) { m["device"] = map[string]any{"gpu": "x"} }), "device.name: missing"},
		{"zero constant", constant("matmul_eff", 0), "constants.matmul_eff: must be greater than 0, got 0"},
		{"negative constant", constant("launch_us", -2), "constants.launch_us: must be greater than 0, got -2"},
		{"constant not a number", constant("gemv_eff", "high"), `constants.gemv_eff: expected a number, got "high"`},
		{"missing constant", edit(func(m map[string]any) { delete(m["constants"].(map[string]any), "attn_eff") }), "constants.attn_eff: missing"},
		{"unknown field", edit(func(m map[string]any) { m["gpu"] = "h100" }), "gpu: unknown field (known fields: constants, device, "},
		{"unknown constant", constant("nvlink_eff", 0.8), "constants.nvlink_eff: unknown field"},
		{"unknown device field", edit(func(m map[string]any) { m["device"].(map[string]any)["clock"] = 1 }), "device.clock: unknown field"},
		{"unknown timing field", edit(func(m map[string]any) { m["timings"].([]any)[1].(map[string]any)["ms"] = 1 }), "timings[1].ms: unknown field"},
		{"timing without time", edit(func(m map[string]any) { delete(m["timings"].([]any)[0].(map[string]any), "time_s") }), "timings[0].time_s: must be greater than 0, got 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
			require.NoError(t, os.WriteFile(path, []byte(c.text), 0o644))
			_, err := LoadCalibration(path)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), path+": "), err.Error())
			assert.Contains(t, err.Error(), c.want)
		})
	}
	_, err = LoadCalibration(filepath.Join(dir, "none.json"))
	assert.EqualError(t, err, filepath.Join(dir, "none.json")+": no such file")
}

// Shapes deduplicates the graph's kernels, counts them and skips views.
func TestShapes(t *testing.T) {
	b := graph.NewBuilder()
	x := b.Input("x", []int64{1, 16, 512}, isa.BF16)
	w1 := b.Param("w1", []int64{512, 512}, isa.BF16)
	w2 := b.Param("w2", []int64{512, 512}, isa.BF16)
	y := b.Add(graph.Linear, "a", graph.Attrs{}, x, w1, nil)
	y = b.Add(graph.Linear, "b", graph.Attrs{}, y, w2, nil)
	y = b.Add(graph.Reshape, "view", graph.Attrs{Shape: []int64{16, 512}}, y)
	b.Output(b.Add(graph.SiLU, "act", graph.Attrs{}, y))
	g, err := b.Graph()
	require.NoError(t, err)
	shapes, skipped := Shapes(g)
	require.Len(t, shapes, 2)
	assert.Equal(t, 1, skipped)
	assert.Equal(t, OpShape{Op: "a", Count: 2, Kind: "matmul", GraphKind: "linear", M: 16, K: 512, N: 512, Batch: 1, DType: "bf16", OutDType: "bf16",
		FLOPs: 2 * 16 * 512 * 512, Bytes: shapes[0].Bytes}, shapes[0])
	assert.Equal(t, "stream", shapes[1].Kind)
	assert.Equal(t, [][]int64{{16, 512}}, shapes[1].Inputs)
	specs := Specs()
	assert.Equal(t, 132, specs["h100"].SMs)
	assert.Equal(t, 989.0, specs["h100"].PeakTFLOPS["bf16"])
}

// The script's model and Go's agree: timings the script computed with
// known constants (gpu/testdata, written by its model functions) fit back
// to those constants in Go.
func TestFitTimingsScriptTable(t *testing.T) {
	data, err := os.ReadFile("testdata/script-synthetic-timings.json")
	require.NoError(t, err)
	var table struct {
		Timings []Timing `json:"timings"`
	}
	require.NoError(t, json.Unmarshal(data, &table))
	require.Greater(t, len(table.Timings), 10)
	got, _, err := FitTimings(devices["h100"], table.Timings, Default)
	require.NoError(t, err)
	assert.InEpsilon(t, 0.7, got.MatmulEff, 1e-9)
	assert.InEpsilon(t, 0.8, got.StreamEff, 1e-9)
	assert.InEpsilon(t, 0.6, got.GEMVEff, 1e-9)
	assert.InEpsilon(t, 0.65, got.AttnEff, 1e-9)
	assert.InEpsilon(t, 3.0, got.LaunchUs, 1e-9)
}

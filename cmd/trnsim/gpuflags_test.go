package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/gpu"
)

// A small model run: two layers of Llama-3.2-1B decoding on one core.
const gpuFlagConfig = `hardware: {preset: trn2}
workload:
  kind: model
  model:
    name: llama-3.2-1b
    mode: decode
    context: 64
    layers: 2
`

func TestGPUFlag(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "run.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(gpuFlagConfig), 0o644))
	for _, c := range []struct {
		name, flag string
		want       []string // the baselines in results.json
		err        string
	}{
		{"the default", "", []string{"h100", "b200"}, ""},
		{"one", "h200", []string{"h200"}, ""},
		{"two", "a100-80gb,h100", []string{"a100-80gb", "h100"}, ""},
		{"none", "none", nil, ""},
		{"unknown", "h100,v100", nil, `--gpu h100,v100: unknown GPU "v100" (GPUs: a100-40gb, a100-80gb, a800-pcie, b200, h100, h200) (or none)`},
		{"none with others", "none,h100", nil, "--gpu none,h100: none stands alone (it turns the comparison off)"},
		{"empty", ",", nil, "--gpu: give GPU presets, comma-separated (GPUs: a100-40gb, a100-80gb, a800-pcie, b200, h100, h200), or none"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, c.name+".json")
			args := []string{"run", cfg, "-q", "--json", out}
			if c.flag != "" {
				args = append(args, "--gpu", c.flag)
			}
			code, _, stderr := trnsim(t, args...)
			if c.err != "" {
				assert.Equal(t, 1, code)
				assert.Equal(t, "trnsim: "+c.err+"\n", stderr)
				return
			}
			require.Equal(t, 0, code, stderr)
			var res struct {
				GPU []struct {
					GPU string `json:"gpu"`
				} `json:"gpu"`
				Cost *struct {
					Options []struct {
						Accelerator string `json:"accelerator"`
					} `json:"options"`
				} `json:"cost"`
			}
			data, err := os.ReadFile(out)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(data, &res))
			var got []string
			for _, g := range res.GPU {
				got = append(got, g.GPU)
			}
			assert.Equal(t, c.want, got)
			require.NotNil(t, res.Cost)
			assert.Len(t, res.Cost.Options, 1+len(c.want), "Trainium and each GPU")
		})
	}
	code, _, stderr := trnsim(t, "run", "-q", "--gpu", "h100")
	assert.Equal(t, 1, code)
	assert.Equal(t, "trnsim: --gpu: for model workloads (this one is gemm)\n", stderr)
}

func TestGPUOpsAndCalibration(t *testing.T) {
	dir := t.TempDir()
	ex, err := filepath.Abs("../../examples/gpu-calibration-h100.json")
	require.NoError(t, err)
	cfg := filepath.Join(dir, "run.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(gpuFlagConfig+"    gpu_calibration: "+ex+"\n"), 0o644))
	ops := filepath.Join(dir, "ops.json")
	code, stdout, stderr := trnsim(t, "run", cfg, "--gpu-ops", ops)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout, "nothing is simulated")
	var f gpu.OpsFile
	data, err := os.ReadFile(ops)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &f))
	assert.Equal(t, gpu.OpsFormat, f.Format)
	assert.NotEmpty(t, f.Ops)
	assert.Len(t, f.Reference, len(gpu.ReferenceShapes()))
	assert.Contains(t, f.Devices, "h100")
	// The calibration is reported and used for its device.
	code, stdout, stderr = trnsim(t, "run", cfg, "-q", "--gpu", "h100")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "GPU calibration")
	assert.Contains(t, stdout, "an example, not a measurement; used for h100")
	// A bad file fails before the simulation, naming the config field and the file's.
	bad := filepath.Join(dir, "bad.json")
	text, err := os.ReadFile(ex)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(text, &m))
	m["constants"].(map[string]any)["stream_eff"] = -1.0
	text, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bad, text, 0o644))
	require.NoError(t, os.WriteFile(cfg, []byte(gpuFlagConfig+"    gpu_calibration: bad.json\n"), 0o644))
	assertOneError(t, dir, []string{"run", cfg}, cfg+":9:22: workload.model.gpu_calibration: "+bad+": constants.stream_eff: must be greater than 0, got -1")
	assertOneError(t, dir, []string{"check", cfg}, cfg+":9:22: workload.model.gpu_calibration: "+bad+": constants.stream_eff: must be greater than 0, got -1")
}

package configs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const pricingBase = `hardware: {preset: trn2}
workload:
  kind: model
  model: {name: llama-3.2-1b, mode: decode, context: 128}
`

func TestPrices(t *testing.T) {
	cfg, err := LoadBytes([]byte(pricingBase+"cost:\n  prices: {p5.48xlarge: 40.0, trn2.48xlarge: 25}\n"), "run.yaml",
		LoadOptions{Sets: []string{"cost.prices.p6-b200.48xlarge=90"}})
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"p5.48xlarge": 40, "trn2.48xlarge": 25, "p6-b200.48xlarge": 90}, cfg.Pricing.Prices.Values)
	assert.Equal(t, []string{"p5.48xlarge", "trn2.48xlarge", "p6-b200.48xlarge"}, cfg.Pricing.Prices.Order)
	v, ok := cfg.Value("cost.prices.p5.48xlarge")
	assert.True(t, ok)
	assert.Equal(t, "40", v)
	// The names are report.CheckRun's to check (configs imports only isa).
	cfg, err = LoadBytes([]byte(pricingBase+"cost:\n  prices: {p9.huge: 1}\n"), "run.yaml", LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, 6, cfg.Sources["cost.prices.p9.huge"].Line, "the source for the error")
	// No section: the table.
	cfg, err = LoadBytes([]byte(pricingBase), "run.yaml", LoadOptions{})
	require.NoError(t, err)
	assert.Empty(t, cfg.Pricing.Prices.Values)
}

func TestPriceErrors(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		sets       []string
		want       string
	}{
		{"negative", "cost:\n  prices: {p5.48xlarge: -3}\n", nil, "run.yaml:6:25: cost.prices.p5.48xlarge: must be a positive price in USD per instance-hour, got -3"},
		{"zero", "cost:\n  prices:\n    trn2.48xlarge: 0\n", nil, "cost.prices.trn2.48xlarge: must be a positive price"},
		{"not a number", "cost:\n  prices: {p5.48xlarge: cheap}\n", nil, `cost.prices.p5.48xlarge: expected a number, got "cheap"`},
		{"unknown field", "cost:\n  discount: 0.1\n", nil, "cost.discount: unknown field (known fields of cost: prices)"},
		{"negative by --set", "", []string{"cost.prices.p5.48xlarge=-1"}, "--set cost.prices.p5.48xlarge=-1: must be a positive price"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadBytes([]byte(pricingBase+c.yaml), "run.yaml", LoadOptions{Sets: c.sets})
			assert.ErrorContains(t, err, c.want)
		})
	}
}

func TestGPUCalibrationPath(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cal.json"), []byte("{}"), 0o644))
	run := filepath.Join(dir, "run.yaml")
	yaml := "hardware: {preset: trn2}\nworkload:\n  kind: model\n  model:\n    name: llama-3.2-1b\n    mode: decode\n    context: 128\n    gpu_calibration: "
	cfg, err := LoadBytes([]byte(yaml+"cal.json\n"), run, LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "cal.json"), cfg.Workload.Model.GPUCalibration, "relative to the config file")
	_, err = LoadBytes([]byte(yaml+"missing.json\n"), run, LoadOptions{})
	assert.ErrorContains(t, err, "run.yaml:8:22: workload.model.gpu_calibration: "+filepath.Join(dir, "missing.json")+": no such file")
}

package configs_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/configs"
)

// FuzzLoadBytes feeds arbitrary text to the loader: it must never panic, and
// it must return either an error (a *configs.Error) or a fully resolved,
// valid config, the same way every time.
func FuzzLoadBytes(f *testing.F) {
	f.Add(configs.DefaultConfigYAML())
	examples, _ := filepath.Glob("../examples/*.yaml")
	for _, e := range examples {
		if data, err := os.ReadFile(e); err == nil {
			f.Add(string(data))
		}
	}
	for _, s := range []string{
		"",
		"hardware: {preset: trn1}\nworkload: {kind: elementwise, elementwise: {op: add, rows: 128, cols: 4096}}\n",
		"hardware:\n  preset: trn3\n  core:\n    sbuf: {partition_kib: 384}\n    dma: {engines: 32, arbitration: qos}\nworkload:\n  kind: gemm\n  gemm: {m: 4096, k: 4096, n: 4096, dtype: fp8e4, out_dtype: bf16, a_layout: mk}\n  lowering: {tile_n: 512, buffers: 2, dge: hw, evacuate: alternate}\noutputs: {json: r.json, trace: t.json}\nparallel: {}\n",
		"hardware:\n  preset: inf2\n  costs:\n    constants:\n      MIN_II: {value: 32, tag: F, source: fit}\n    vector:\n      tensor_copy:\n        turbo: {when: [half, '!psum_in'], interval: \"max(MIN_II, N/8)\", latency: \"I + 10\"}\nworkload: {kind: gemm, gemm: {m: 1, k: 1, n: 1}}\n",
		"hardware: {preset: trn2, chips: 0}\n",
		"hardware: {preset: trn2\n",
		"hardware: &a {preset: trn2}\nworkload: *a\n",
		"hardware:\n  <<: {preset: trn2}\n",
		"- 1\n- 2\n",
		"hardware: {preset: trn2}\nworkload: {kind: assembly, assembly: {file: fuzz_test.go}}\n",
		"hardware: {preset: trn2, costs: {vector: {tensor_copy: {default: {interval: \"N/(P-P)\"}}}}}\nworkload: {kind: gemm, gemm: {m: 1, k: 1, n: 1}}\n",
		"hardware: {preset: trn2, core: {semaphores: 99999999999999999999}}\n",
		"hardware: {preset: trn2, core: {tensor: {clock_ghz: .nan}}}\n",
		"parallel: {data: 2}\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		cfg, err := configs.LoadBytes([]byte(data), "fuzz.yaml", configs.LoadOptions{})
		cfg2, err2 := configs.LoadBytes([]byte(data), "fuzz.yaml", configs.LoadOptions{})
		if err != nil {
			require.Nil(t, cfg)
			require.NotEmpty(t, err.Error())
			var ce *configs.Error
			require.True(t, errors.As(err, &ce), "error %T: %v", err, err)
			// LoadBytes turns a panic into "cannot parse: ..."; none may
			// happen.
			require.NotContains(t, err.Error(), "cannot parse: ", "a panic was recovered")
			require.Error(t, err2)
			require.Equal(t, err.Error(), err2.Error(), "loading is deterministic")
			return
		}
		require.NoError(t, err2)
		require.NotNil(t, cfg)
		require.NotNil(t, cfg.Cost)
		require.NotNil(t, cfg.Costs)
		require.NotEmpty(t, cfg.Hardware.Name)
		require.Contains(t, configs.PresetNames(), cfg.Hardware.Preset)
		require.Contains(t, configs.WorkloadKinds, cfg.Workload.Kind)
		switch cfg.Workload.Kind {
		case "gemm":
			g := cfg.Workload.GEMM
			require.NotNil(t, g)
			require.True(t, g.M > 0 && g.K > 0 && g.N > 0)
			require.NotEmpty(t, g.DType)
		case "elementwise":
			require.NotNil(t, cfg.Workload.Elementwise)
			require.NotEmpty(t, cfg.Workload.Elementwise.Engine)
		case "assembly":
			require.NotNil(t, cfg.Workload.Assembly)
		}
		hw := &cfg.Hardware
		require.True(t, hw.Chips > 0 && hw.Chip.Cores > 0 && hw.Chips*hw.Chip.Cores <= 1<<16, "%d chips x %d cores", hw.Chips, hw.Chip.Cores)
		lim := cfg.Hardware.Limits()
		require.Positive(t, lim.PSUMBankBytes())
		require.Zero(t, lim.Partitions%cfg.Hardware.Core.DMA.Engines)
		h1, h2 := cfg.Hardware, cfg2.Hardware
		h1.Costs, h2.Costs = configs.CostOverrides{}, configs.CostOverrides{} // YAML nodes
		require.Equal(t, h1, h2)
		require.Equal(t, cfg.Workload, cfg2.Workload)
		require.Equal(t, cfg.Sources, cfg2.Sources)
		require.Equal(t, cfg.Costs, cfg2.Costs)
	})
}

package report_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/report"
	"github.com/trnsim/trnsim/workloads"
)

// Model figures hold together: MFU, MBU and HFU are percentages no more
// than 100, MFU is about HFU when the matmuls dominate, decode reports a
// time per token and prefill a time to first token, and the summary
// prints them.
func TestModelFigures(t *testing.T) {
	for _, tc := range []struct{ model, pass string }{
		{"llama-3.2-1b", "mode: prefill, seq: 512"},
		{"llama-3.2-1b", "mode: decode, context: 1024, batch: 4"},
		{"mixtral-8x7b", "mode: decode, context: 256"},
		{"bert-base", "mode: prefill, seq: 128, batch: 2"},
	} {
		t.Run(tc.model+"/"+tc.pass, func(t *testing.T) {
			text := fmt.Sprintf("hardware: {preset: trn2}\nworkload:\n  kind: model\n  model: {name: %s, %s, layers: 1}\n", tc.model, tc.pass)
			cfg, err := configs.LoadBytes([]byte(text), "m.yaml", configs.LoadOptions{})
			require.NoError(t, err)
			prog, info, err := workloads.Lower(cfg)
			require.NoError(t, err)
			res, err := chip.Run(cfg, prog, chip.Options{})
			require.NoError(t, err)
			r, err := report.Build(cfg, info, res, "test")
			require.NoError(t, err)
			m := r.Model
			require.NotNil(t, m)
			for name, v := range map[string]float64{"mfu": m.MFUPct, "mbu": m.MBUPct, "hfu": r.PeakPct} {
				assert.Greater(t, v, 0.0, name)
				assert.LessOrEqual(t, v, 100.0, name)
			}
			assert.GreaterOrEqual(t, m.HBMOverMin, 0.99, "no less traffic than the graph's least")
			if cfg.Workload.Model.Mode == "decode" {
				assert.Equal(t, r.SimulatedTimeS, m.TPOTS)
				assert.InDelta(t, float64(m.Batch)/m.TPOTS, m.TokensPerS, 1e-6*m.TokensPerS)
			} else {
				assert.Equal(t, r.SimulatedTimeS, m.TTFTS)
			}
			var out bytes.Buffer
			r.WriteSummary(&out)
			assert.Contains(t, out.String(), "MFU / MBU")
		})
	}
}

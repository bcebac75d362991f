package report

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/configs"
)

func costConfig(t *testing.T, extra string) *configs.RunConfig {
	t.Helper()
	return costConfigOn(t, "trn2", extra)
}

func costConfigOn(t *testing.T, preset, extra string) *configs.RunConfig {
	t.Helper()
	cfg, err := configs.LoadBytes([]byte("hardware: {preset: "+preset+"}\nworkload:\n  kind: model\n  model: {name: llama-3.2-1b, mode: decode, context: 64}\n"+extra), "run.yaml", configs.LoadOptions{})
	require.NoError(t, err)
	return cfg
}

// One trn2 chip (8 cores) at 800 tokens/s against one H100 at 500 and
// two B200s at 1,500: every figure from the prices, the powers and the
// throughputs.
func TestBuildCost(t *testing.T) {
	for _, c := range []struct {
		name        string
		extra       string
		trnHour, p5 float64 // the instances' prices
		trnOrigin   string
		p5Origin    string
	}{
		{"the table", "", 35.76, 55.04, "table", "table"},
		{"the user's prices", "cost:\n  prices: {p5.48xlarge: 40, trn2.48xlarge: 25}\n", 25, 40, "user", "user"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := costConfig(t, c.extra)
			r := &Report{CoresUsed: 8, Model: &ModelReport{TokensPerS: 800},
				GPU: []GPUReport{{GPU: "h100", Title: "H100 SXM", GPUs: 1, TokensPerS: 500}, {GPU: "b200", Title: "B200 SXM", GPUs: 2, TokensPerS: 1500}}}
			// The per-accelerator prices buildGPU sets.
			r.GPU[0].USDPerHour = c.p5 / 8
			r.GPU[1].USDPerHour = 113.9328 / 8 * 2
			r.Model.USDPerHour = c.trnHour / 16
			require.NoError(t, buildCost(cfg, r))
			cr := r.Cost
			require.NotNil(t, cr)
			require.Len(t, cr.Options, 3)
			trn, h100, b200 := cr.Options[0], cr.Options[1], cr.Options[2]
			// Prices and their origin.
			assert.Equal(t, "trn2.48xlarge", trn.Instance)
			assert.Equal(t, c.trnOrigin, trn.PriceOrigin)
			assert.Equal(t, c.p5Origin, h100.PriceOrigin)
			assert.Equal(t, "table", b200.PriceOrigin)
			assert.InDelta(t, c.trnHour/16, trn.USDPerHour, 1e-12, "8 of a chip's 8 cores: one chip's share")
			assert.InDelta(t, c.trnHour/16/3600/800*1e6, trn.USDPerMillionTokens, 1e-9)
			assert.InDelta(t, c.p5/8, h100.USDPerHour, 1e-12)
			assert.InDelta(t, 113.9328/4, b200.USDPerHour, 1e-9, "two B200s")
			// Energy: a trn2 chip's ~500 W [3P]; an H100's 700 W; two B200s' 2,000 W.
			assert.Equal(t, 500.0, trn.PowerW)
			assert.Equal(t, "3P", trn.PowerTag)
			assert.InDelta(t, 500.0/800, trn.JoulesPerToken, 1e-12)
			assert.InDelta(t, 500.0/800*1e6/3600, trn.WhPerMillionTokens, 1e-9)
			assert.InDelta(t, 700.0/500, h100.JoulesPerToken, 1e-12)
			assert.InDelta(t, 2000.0/1500, b200.JoulesPerToken, 1e-12)
			// Instances: 16 copies of the chip; 8 H100 copies; 4 copies of the B200 pair.
			require.NotNil(t, trn.PerInstance)
			assert.Equal(t, 16, trn.PerInstance.Replicas)
			assert.InDelta(t, 12800, trn.PerInstance.TokensPerS, 1e-9)
			assert.InDelta(t, c.trnHour/3600/12800*1e6, trn.PerInstance.USDPerMillionTokens, 1e-9)
			assert.Equal(t, 8, h100.PerInstance.Replicas)
			assert.InDelta(t, 4000, h100.PerInstance.TokensPerS, 1e-9)
			assert.Equal(t, 4, b200.PerInstance.Replicas)
			assert.InDelta(t, 6000, b200.PerInstance.TokensPerS, 1e-9)
			// Equal spend: one H100-hour buys (p5/8)/(trn/16) trn2 chips.
			require.Len(t, cr.EqualSpend, 2)
			e := cr.EqualSpend[0]
			assert.InDelta(t, c.p5/8, e.USDPerHour, 1e-12)
			assert.InDelta(t, (c.p5/8)/(c.trnHour/16), e.TrainiumChips, 1e-9)
			assert.InDelta(t, 8*e.TrainiumChips, e.TrainiumCores, 1e-9)
			assert.InDelta(t, 500, e.GPUTokensPerS, 1e-9, "one H100's")
			assert.InDelta(t, 800*e.TrainiumChips, e.TrainiumTokensPerS, 1e-9, "a chip's 800 tokens/s per chip bought")
			assert.InDelta(t, e.TrainiumTokensPerS/500, e.Ratio, 1e-12)
			assert.InDelta(t, 750, cr.EqualSpend[1].GPUTokensPerS, 1e-9, "one B200-hour: half the pair's")
			// The summary lines.
			var buf bytes.Buffer
			r.writeCost(func(k, format string, args ...any) {
				buf.WriteString(k + ": ")
				fmt.Fprintf(&buf, format, args...)
				buf.WriteString("\n")
			})
			out := buf.String()
			assert.Contains(t, out, "energy: trn2, 8 NeuronCores: 0.625 J/token")
			assert.Contains(t, out, "16 replicas of the 8 NeuronCores simulated")
			assert.Contains(t, out, "equal spend: ")
			if c.trnOrigin == "user" {
				assert.Contains(t, out, "trn2.48xlarge $25.00/h, yours (cost.prices); the table's is $35.76/h")
			}
		})
	}
}

// A chip without a sourced power has no energy figure, and says why.
func TestCostUnknownPower(t *testing.T) {
	cfg := costConfigOn(t, "trn1", "")
	r := &Report{CoresUsed: 1, Model: &ModelReport{TokensPerS: 100}}
	require.NoError(t, buildCost(cfg, r))
	trn := r.Cost.Options[0]
	assert.Zero(t, trn.JoulesPerToken)
	assert.Contains(t, trn.PowerSource, "no reference gives trn1's chip power")
	assert.Equal(t, "trn1.32xlarge", trn.Instance)
}

// CheckRun names the field of an instance the table does not have, with
// its line, before anything runs.
func TestCheckRunPrices(t *testing.T) {
	for _, c := range []struct {
		name, extra string
		sets        []string
		want        string
	}{
		{"known", "cost:\n  prices: {p5.48xlarge: 40}\n", nil, ""},
		{"unknown", "cost:\n  prices: {p9.huge: 1}\n", nil, `run.yaml:6:21: cost.prices.p9.huge: unknown instance "p9.huge" (instances: inf2.48xlarge, `},
		{"unknown by --set", "", []string{"cost.prices.p5.4xlarge=3"}, `--set cost.prices.p5.4xlarge=3: unknown instance "p5.4xlarge"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := configs.LoadBytes([]byte("hardware: {preset: trn2}\nworkload:\n  kind: model\n  model: {name: llama-3.2-1b, mode: decode, context: 64}\n"+c.extra),
				"run.yaml", configs.LoadOptions{Sets: c.sets})
			require.NoError(t, err)
			err = CheckRun(cfg)
			if c.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, c.want)
		})
	}
}

func TestMoneyAndEnergyFormats(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{7560.4, "7560"}, {0.000602, "0.000602"}, {0.00649, "0.00649"}, {1.8, "1.80"}, {999.6, "1000"}, {12.345, "12.3"}} {
		assert.Equal(t, tc.want, sig3(tc.v), "%g", tc.v)
	}
	assert.Equal(t, "$17.88/h", usdPerHour(17.88))
	assert.Equal(t, "$0.6719/h", usdPerHour(0.67188))
	assert.Equal(t, "$1.00/h", usdPerHour(0.99996))
	assert.Equal(t, "1.23e+25", sig3(1.23e25))
}

package report_test

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/report"
	"github.com/trnsim/trnsim/runner"
	"github.com/trnsim/trnsim/workloads"
)

// simulateModel loads a run config's text, lowers, simulates and reports
// it.
func simulateModel(t *testing.T, text string) (*configs.RunConfig, *report.Report, *chip.Result) {
	t.Helper()
	cfg, info, res := runModel(t, text)
	r, err := report.Build(cfg, info, res, "test")
	require.NoError(t, err)
	return cfg, r, res
}

// runModel loads a run config's text, lowers and simulates it: what a
// report is built from.
func runModel(t *testing.T, text string) (*configs.RunConfig, *workloads.Info, *chip.Result) {
	t.Helper()
	cfg, err := configs.LoadBytes([]byte(text), "m.yaml", configs.LoadOptions{})
	require.NoError(t, err)
	prog, info, err := workloads.Lower(cfg)
	require.NoError(t, err)
	res, err := chip.RunLaunches(cfg, chip.Launches{N: max(info.Launches, 1), First: prog, Next: info.Launch}, chip.Options{})
	require.NoError(t, err)
	return cfg, info, res
}

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
			cfg, r, _ := simulateModel(t, fmt.Sprintf("hardware: {preset: trn2}\nworkload:\n  kind: model\n  model: {name: %s, %s, layers: 1}\n", tc.model, tc.pass))
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

// Layer reuse gives what simulating every layer gives, within 0.3%, on
// models whose layers warm up (GPT-2), run short before the head (a
// decode), or take turns in time (Llama-3.2-1B's prefill), while
// simulating fewer instructions: Llama-3-8B's real layer at 2,048 tokens
// (8 layers, the weights prefetched across layer boundaries), Llama-3.2-1B
// decode and prefill, GPT-2 decode and BERT.
func TestLayerReuseMatchesExact(t *testing.T) {
	for _, tc := range []struct{ name, hw, model string }{
		{"llama-3-8b prefill 2048, 8 layers", "{preset: trn2}", "name: llama-3-8b, mode: prefill, seq: 2048, layers: 8"},
		{"llama-3.2-1b decode 2048", "{preset: trn2}", "name: llama-3.2-1b, mode: decode, context: 2048"},
		{"llama-3.2-1b prefill 512", "{preset: trn2}", "name: llama-3.2-1b, mode: prefill, seq: 512"},
		{"gpt2 decode, batch 2, 300", "{preset: trn1}", "name: gpt2, mode: decode, batch: 2, context: 300"},
		{"bert-base, batch 2", "{preset: trn1}", "name: bert-base, mode: prefill, batch: 2, seq: 128"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(exact bool) (*report.Report, int64) {
				_, r, res := simulateModel(t, fmt.Sprintf("hardware: %s\nworkload:\n  kind: model\n  model: {%s, exact: %v}\n", tc.hw, tc.model, exact))
				return r, res.Instructions
			}
			reuse, ri := run(false)
			exact, ei := run(true)
			require.Less(t, reuse.Model.SimulatedLayers, exact.Model.SimulatedLayers)
			require.Equal(t, exact.Model.Layers, exact.Model.SimulatedLayers)
			assert.InEpsilon(t, exact.Model.TimeS, reuse.Model.TimeS, 0.003, "reuse %.6g s, exact %.6g s", reuse.Model.TimeS, exact.Model.TimeS)
			assert.Less(t, ri, ei, "reuse simulates fewer instructions")
			assert.InEpsilon(t, exact.Model.MFUPct, reuse.Model.MFUPct, 0.003)
			t.Logf("reuse %.4f ms (%d layers, %d instructions), exact %.4f ms (%d): %+.3f%%", reuse.Model.TimeS*1e3, reuse.Model.SimulatedLayers, ri,
				exact.Model.TimeS*1e3, ei, 100*(reuse.Model.TimeS/exact.Model.TimeS-1))
		})
	}
}

// An exact decode simulates every step, each a launch at its cache
// length, and its mean step agrees with the step at the mean cache length
// that the default simulates (within 0.3%): the figures per token, the op
// comparison with the GPUs (per step on both sides), while the work and
// the traffic are all the steps' and the last step is no faster than the
// first (its cache is longer).
func TestDecodeStepsMatchMeanStep(t *testing.T) {
	const steps = 6
	text := func(exact bool) string {
		return fmt.Sprintf("hardware: {preset: trn2}\nworkload:\n  kind: model\n  model: {name: llama-3.2-1b, mode: decode, context: 1000, tokens: %d, layers: 2, exact: %v, gpus: [h100]}\n", steps, exact)
	}
	_, mean, meanRes := simulateModel(t, text(false))
	_, all, allRes := simulateModel(t, text(true))
	require.Zero(t, mean.Model.Steps)
	require.EqualValues(t, steps, all.Model.Steps)
	assert.Equal(t, mean.Model.Past, all.Model.Past, "the same mean cache length")
	assert.InEpsilon(t, mean.Model.TPOTS, all.Model.TPOTS, 0.003)
	assert.InEpsilon(t, mean.Model.TokensPerS, all.Model.TokensPerS, 0.003)
	assert.InEpsilon(t, mean.Model.MFUPct, all.Model.MFUPct, 0.003)
	assert.InEpsilon(t, mean.Model.MBUPct, all.Model.MBUPct, 0.003)
	assert.InEpsilon(t, mean.Model.HBMOverMin, all.Model.HBMOverMin, 0.003)
	assert.InEpsilon(t, steps*mean.SimulatedTimeS, all.SimulatedTimeS, 0.003, "the steps back to back")
	assert.InEpsilon(t, float64(steps*meanRes.Instructions), float64(allRes.Instructions), 0.01)
	assert.InEpsilon(t, steps*mean.FLOPs, all.FLOPs, 0.003)
	require.Len(t, allRes.LaunchTimes, steps)
	lo, hi := slices.Min(allRes.LaunchTimes), slices.Max(allRes.LaunchTimes)
	assert.Less(t, lo, hi, "the steps differ")
	step := all.Model.TPOTS - all.Model.RuntimeOverheadS
	assert.True(t, lo.Seconds() <= step && step <= hi.Seconds(), "the mean %g s within the steps' %s to %s", step, lo, hi)
	assert.InDelta(t, allRes.LaunchTimes[0].Seconds()+all.Model.RuntimeOverheadS, all.Model.StepFirstS, 1e-12)
	assert.InDelta(t, allRes.LaunchTimes[steps-1].Seconds()+all.Model.RuntimeOverheadS, all.Model.StepLastS, 1e-12)
	assert.LessOrEqual(t, all.PeakPct, 100.0)
	require.Len(t, all.GPU, 1)
	require.NotEmpty(t, all.GPU[0].TrainiumLoses)
	m, a := mean.GPU[0].TrainiumLoses[0], all.GPU[0].TrainiumLoses[0]
	assert.Equal(t, m.Name, a.Name)
	assert.InEpsilon(t, m.TrainiumS, a.TrainiumS, 0.01, "one step's time on both sides")
	// The engines' shares of the run (idle after each step's last
	// instruction too) and the roofline's points (one pass's FLOPs in one
	// step's time) are the mean step's.
	ms, as := mean.Shares(), all.Shares()
	require.Len(t, as, len(ms))
	for i := range ms {
		assert.InDelta(t, ms[i].IdlePct, as[i].IdlePct, 2, ms[i].Engine)
		assert.InDelta(t, ms[i].UnaccountedPct, as[i].UnaccountedPct, 2, ms[i].Engine)
		assert.InDelta(t, ms[i].BusyPct, as[i].BusyPct, 2, ms[i].Engine)
	}
	require.NotEmpty(t, mean.Roofline)
	require.Equal(t, len(mean.Roofline[0].Points), len(all.Roofline[0].Points))
	for i, p := range mean.Roofline[0].Points {
		q := all.Roofline[0].Points[i]
		assert.Equal(t, p.Name, q.Name)
		assert.InEpsilon(t, p.FLOPS, q.FLOPS, 0.02, p.Name)
	}
	var out bytes.Buffer
	all.WriteSummary(&out)
	assert.Contains(t, out.String(), fmt.Sprintf("%d tokens, every step simulated (cache lengths 1000 to %d)", steps, 1000+steps-1))
	assert.Contains(t, out.String(), "all 6 decode steps")
	assert.Regexp(t, fmt.Sprintf(`\nworkload +model batch=\d+ seq=1 past=1000\.\.%d `, 1000+steps-1), out.String(), "the workload line gives every step's cache length")
}

// Every decode step simulated holds together across the families and
// presets: GPT-2's learned positions on trn1, Mistral's sliding window
// crossed by the steps (the cache read stops growing), Mixtral's experts
// on trn3 and Qwen2 on inf2. The mean step is within the steps' range and
// within 1% of the step at the mean cache length, the steps take at least
// their least HBM bytes at an HBM stack's bandwidth, and no figure passes
// 100%.
func TestDecodeStepsAcrossTheMatrix(t *testing.T) {
	for _, tc := range []struct{ name, hw, model string }{
		{"gpt2 trn1", "{preset: trn1}", "name: gpt2, context: 300, tokens: 3"},
		{"mistral-7b window crossed", "{preset: trn2}", "name: mistral-7b, context: 4094, tokens: 4"},
		{"mixtral-8x7b trn3", "{preset: trn3}", "name: mixtral-8x7b, context: 200, tokens: 3"},
		{"qwen2-7b inf2, batch 2", "{preset: inf2}", "name: qwen2-7b, context: 129, tokens: 3, batch: 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := func(exact bool) string {
				return fmt.Sprintf("hardware: %s\nworkload:\n  kind: model\n  model: {%s, mode: decode, layers: 1, exact: %v, gpus: []}\n", tc.hw, tc.model, exact)
			}
			cfg, all, res := simulateModel(t, text(true))
			_, mean, _ := simulateModel(t, text(false))
			m := all.Model
			require.EqualValues(t, cfg.Workload.Model.Tokens, m.Steps)
			require.Len(t, res.LaunchTimes, int(m.Steps))
			lo, hi := slices.Min(res.LaunchTimes).Seconds(), slices.Max(res.LaunchTimes).Seconds()
			step := m.TPOTS - m.RuntimeOverheadS
			assert.True(t, lo <= step*(1+1e-12) && step <= hi*(1+1e-12), "the mean %g s within %g to %g", step, lo, hi)
			assert.InEpsilon(t, mean.Model.TPOTS, m.TPOTS, 0.01)
			// (A core reaches at most its HBM stack's bandwidth.)
			bw := cfg.Hardware.Chip.HBM.BandwidthGBps * 1e9 / float64(max(cfg.Hardware.Chip.HBM.Stacks, 1))
			assert.GreaterOrEqual(t, all.SimulatedTimeS, float64(all.Model.MinHBMBytes)/bw, "at least the least bytes at a stack's bandwidth")
			for name, v := range map[string]float64{"mfu": m.MFUPct, "mbu": m.MBUPct, "hfu": all.PeakPct} {
				assert.Greater(t, v, 0.0, name)
				assert.LessOrEqual(t, v, 100.0, name)
			}
			assert.GreaterOrEqual(t, m.HBMOverMin, 0.99)
		})
	}
}

// Replica reuse simulates one copy of a plan whose copies share no
// hardware, and gives every model figure of the exact run (all copies
// simulated) within 1%, with fewer instructions: copies of TP2 on their
// own HBM stacks of one trn2 chip, and of TP8 on chips of their own of a
// trn2.48xlarge. Copies that span chips (their collectives cross links
// another copy's may use) and copies that share an HBM stack (one core
// each on trn2, whose stacks serve two cores) are always simulated
// together.
func TestReplicaReuseMatchesExact(t *testing.T) {
	for _, tc := range []struct {
		name, hw, par, model string
		reused               bool
	}{
		{"llama-3.2-1b decode, tp 2 x 4 copies, one trn2 chip", "{preset: trn2, chip: {lnc: 1}}", "{tp: 2, replicas: 4}",
			"name: llama-3.2-1b, mode: decode, batch: 4, context: 2048, layers: 2", true},
		{"llama-3-8b decode, tp 8 x 2 copies, trn2.48xlarge", "{instance: trn2.48xlarge, chip: {lnc: 1}}", "{tp: 8, replicas: 2}",
			"name: llama-3-8b, mode: decode, batch: 4, context: 1024, layers: 1", true},
		{"llama-3.2-1b prefill, tp 1 x 2 copies, trn2", "{preset: trn2, chip: {lnc: 1}}", "{replicas: 2}",
			"name: llama-3.2-1b, mode: prefill, seq: 256, layers: 1", false},
		{"llama-3.2-1b decode, tp 16 x 2 copies over chips", "{instance: trn2.48xlarge, chip: {lnc: 1}}", "{tp: 16, replicas: 2}",
			"name: llama-3.2-1b, mode: decode, batch: 2, context: 256, layers: 1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reuse, ri, exact, ei := reusedAndExact(t, tc.hw, tc.par, tc.model)
			require.Equal(t, exact.Model.Replicas, exact.Model.SimulatedReplicas)
			if !tc.reused {
				assert.Equal(t, reuse.Model.Replicas, reuse.Model.SimulatedReplicas, "every copy simulated")
				assert.Equal(t, ei, ri)
				return
			}
			require.Equal(t, 1, reuse.Model.SimulatedReplicas)
			assert.Less(t, ri, ei, "reuse simulates fewer instructions")
			assertModelFiguresWithin(t, reuse, exact, 0.01)
			t.Logf("reuse %.4f ms (%d instructions), exact %.4f ms (%d): %+.3f%%", reuse.Model.TimeS*1e3, ri, exact.Model.TimeS*1e3, ei,
				100*(reuse.Model.TimeS/exact.Model.TimeS-1))
		})
	}
}

// Symmetric-core reuse simulates a unit of a copy's ranks (an HBM stack's
// cores on one chip, one chip across chips) and gives the figures of
// simulating every rank within 1%: on a chip, over the links between two
// chips that every rank of a chip shares, and over four chips of a torus
// whose routes pass through other chips; and not at all where the ranks
// differ (a prompt whose rows do not divide over the ranks: their
// collectives' pieces differ) or the links may (a custom topology).
func TestSymmetricReuseMatchesExact(t *testing.T) {
	for _, tc := range []struct {
		name, hw, par, model string
		unit                 int
	}{
		{"llama-3-8b prefill, tp 8, one trn2 chip", "{preset: trn2, chip: {lnc: 1}}", "{tp: 8}",
			"name: llama-3-8b, mode: prefill, seq: 512, layers: 1", 2},
		{"llama-3.2-1b decode, tp 16 over two trn2.48xlarge chips", "{instance: trn2.48xlarge, chip: {lnc: 1}}", "{tp: 16}",
			"name: llama-3.2-1b, mode: decode, batch: 4, context: 512, layers: 1", 2},
		{"llama-3-8b decode, tp 32 over four chips of a 4x4 torus", "{instance: trn2.48xlarge, chip: {lnc: 1}}", "{tp: 32}",
			"name: llama-3-8b, mode: decode, batch: 8, context: 1024, layers: 1", 2},
		{"llama-3.2-1b prefill of 130 tokens, tp 8 (unequal pieces)", "{preset: trn2, chip: {lnc: 1}}", "{tp: 8}",
			"name: llama-3.2-1b, mode: prefill, seq: 130, layers: 1", 0},
		// A custom ring whose links differ: the routes' hops and latency
		// alike, their bandwidths not.
		{"llama-3.2-1b decode, tp 32 over a custom ring with a slow link", "{preset: trn2, chips: 4, chip: {lnc: 1}, topology: {kind: custom, links: [{a: 0, b: 1, bandwidth_gbps: 100}, {a: 1, b: 2, bandwidth_gbps: 100}, {a: 2, b: 3, bandwidth_gbps: 5}, {a: 3, b: 0, bandwidth_gbps: 100}]}}", "{tp: 32}",
			"name: llama-3.2-1b, mode: decode, batch: 4, context: 512, layers: 1", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reuse, ri, exact, ei := reusedAndExact(t, tc.hw, tc.par, tc.model)
			require.Zero(t, exact.Model.SimulatedRanks, "--exact simulates every rank")
			assert.Equal(t, tc.unit, reuse.Model.SimulatedRanks)
			if tc.unit == 0 {
				assert.Equal(t, ei, ri)
				assert.Equal(t, exact.Model.TimeS, reuse.Model.TimeS)
				return
			}
			assert.Equal(t, tc.unit, reuse.CoresUsed)
			assert.Equal(t, exact.CoresUsed, reuse.ModelCores(), "the plan's cores")
			assert.Less(t, ri, ei, "reuse simulates fewer instructions")
			assertModelFiguresWithin(t, reuse, exact, 0.01)
			t.Logf("reuse %.4f ms (%d of %d cores, %d instructions), exact %.4f ms (%d): %+.3f%%", reuse.Model.TimeS*1e3, reuse.CoresUsed, exact.CoresUsed, ri,
				exact.Model.TimeS*1e3, ei, 100*(reuse.Model.TimeS/exact.Model.TimeS-1))
		})
	}
}

// reusedAndExact simulates a model plan by default and with exact (every
// layer, copy and rank): the reports and instruction counts.
func reusedAndExact(t *testing.T, hw, par, model string) (reuse *report.Report, ri int64, exact *report.Report, ei int64) {
	t.Helper()
	run := func(x bool) (*report.Report, int64) {
		_, r, res := simulateModel(t, fmt.Sprintf("hardware: %s\nparallel: %s\nworkload:\n  kind: model\n  model: {%s, exact: %v}\n", hw, par, model, x))
		return r, res.Instructions
	}
	reuse, ri = run(false)
	exact, ei = run(true)
	return reuse, ri, exact, ei
}

// assertModelFiguresWithin checks a reused run's model figures (time,
// tokens/s, MFU, MBU, $/h) against the exact run's, within eps.
func assertModelFiguresWithin(t *testing.T, reuse, exact *report.Report, eps float64) {
	t.Helper()
	for _, f := range []struct {
		name         string
		reuse, exact float64
	}{
		{"time", reuse.Model.TimeS, exact.Model.TimeS}, {"tokens/s", reuse.Model.TokensPerS, exact.Model.TokensPerS},
		{"MFU", reuse.Model.MFUPct, exact.Model.MFUPct}, {"MBU", reuse.Model.MBUPct, exact.Model.MBUPct},
		{"$/h", reuse.Model.USDPerHour, exact.Model.USDPerHour},
	} {
		assert.InEpsilon(t, f.exact, f.reuse, eps, "%s: reuse %.6g, exact %.6g", f.name, f.reuse, f.exact)
	}
}

// The GPU baselines time the same graph: positive times, tokens/s from
// them, percentages within 100, and the speed ratio as defined.
func TestGPUComparison(t *testing.T) {
	cfg, r, _ := simulateModel(t, "hardware: {preset: trn2}\nworkload:\n  kind: model\n  model: {name: llama-3.2-1b, mode: decode, context: 512, layers: 2, gpus: [h100, a100-80gb]}\n")
	require.Len(t, r.GPU, 2)
	for _, g := range r.GPU {
		assert.Greater(t, g.TimeS, 0.0)
		assert.InDelta(t, 1/g.TimeS, g.TokensPerS, 1e-6*g.TokensPerS)
		assert.InDelta(t, g.TimeS/r.Model.TimeS, g.Speedup, 1e-9*g.Speedup)
		for _, v := range []float64{g.MFUPct, g.MBUPct, g.LaunchPct} {
			assert.Greater(t, v, 0.0)
			assert.LessOrEqual(t, v, 100.0)
		}
		require.NotEmpty(t, g.TopOps)
	}
	assert.Less(t, r.GPU[0].TimeS, r.GPU[1].TimeS, "H100 streams the weights faster than A100")
	// Cost: one trn2 core is 1/128 of trn2.48xlarge's $35.76/h; an H100
	// 1/8 of p5.48xlarge's $55.04/h; a million tokens at the run's rate.
	m := r.Model
	assert.InDelta(t, 35.76/16/8, m.USDPerHour, 1e-9)
	assert.InDelta(t, m.USDPerHour/3600/m.TokensPerS*1e6, m.USDPerMillionTokens, 1e-9)
	assert.InDelta(t, 55.04/8, r.GPU[0].USDPerHour, 1e-9)
	assert.InDelta(t, r.GPU[0].USDPerMillionTokens/m.USDPerMillionTokens, r.GPU[0].CostRatio, 1e-9)
	assert.Equal(t, "p4de.24xlarge", r.GPU[1].Instance)
	var out bytes.Buffer
	r.WriteSummary(&out)
	assert.Contains(t, out.String(), "vs GPU             H100 SXM (tp 1, the smallest that fits): time per token")

	// Op by op: every op's bound is named, each GPU estimate beside an op
	// gives the ratio of the two times, and the ops where Trainium loses
	// and gains most are in order of the time it loses.
	bounds := map[string]bool{"TensorE": true, "VectorE": true, "ScalarE": true, "GpSimd": true, "Sync": true, "DMA": true, "HBM": true, "link": true, "fused": true, "none": true}
	matched := 0
	for _, o := range r.Ops {
		assert.True(t, bounds[o.Bound], "%s: bound %q", o.Name, o.Bound)
		for _, e := range o.GPU {
			matched++
			if e.TimeS > 0 {
				assert.InDelta(t, o.TimeS/e.TimeS, e.TrainiumOverGPU, 1e-9*e.TrainiumOverGPU, o.Name)
			}
		}
	}
	assert.Greater(t, matched, 10, "ops with a GPU estimate")
	for _, g := range r.GPU {
		require.NotEmpty(t, g.TrainiumLoses)
		for i, d := range g.TrainiumLoses {
			assert.Greater(t, d.TrainiumS-d.GPUS, 0.0, d.Name)
			if i > 0 {
				p := g.TrainiumLoses[i-1]
				assert.GreaterOrEqual(t, p.TrainiumS-p.GPUS, d.TrainiumS-d.GPUS)
			}
		}
		for i, d := range g.TrainiumGains {
			assert.Less(t, d.TrainiumS-d.GPUS, 0.0, d.Name)
			if i > 0 {
				p := g.TrainiumGains[i-1]
				assert.LessOrEqual(t, p.TrainiumS-p.GPUS, d.TrainiumS-d.GPUS)
			}
		}
	}
	assert.Contains(t, out.String(), "why, by op         against H100 SXM: Trainium loses most on ")

	cfg.Workload.Model.GPUs = []string{"v100"}
	_, err := runner.Run(cfg, runner.Options{})
	assert.ErrorContains(t, err, `workload.model.gpus: unknown GPU "v100"`)
}

// The comparison figures are written as PNG images, and a run without GPU
// baselines writes none of them (its rooflines and stalls still).
func TestWriteFigures(t *testing.T) {
	_, r, _ := simulateModel(t, "hardware: {preset: trn2}\nworkload:\n  kind: model\n  model: {name: llama-3.2-1b, mode: decode, context: 256, layers: 2}\n")
	dir := t.TempDir()
	files, err := r.WriteFigures(dir, "png")
	require.NoError(t, err)
	bars := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		img, err := png.Decode(bytes.NewReader(data))
		require.NoError(t, err, f)
		switch filepath.Base(f) {
		case "throughput.png", "cost.png", "ops.png":
			bars++
			assert.Equal(t, 605, img.Bounds().Dx(), "16 cm at the default resolution")
		}
	}
	assert.Equal(t, 3, bars, "%v", files)
	r.GPU = nil
	files, err = r.WriteFigures(t.TempDir(), "png")
	require.NoError(t, err)
	for _, f := range files {
		assert.NotContains(t, []string{"throughput.png", "cost.png", "ops.png"}, filepath.Base(f))
	}
}

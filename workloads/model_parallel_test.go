package workloads

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
)

func parallelConfig(t *testing.T, hw, model, pass, par string, layers int, sets ...string) *configs.RunConfig {
	t.Helper()
	text := fmt.Sprintf("hardware: %s\nworkload:\n  kind: model\n  model: {name: %s, %s, layers: %d}\nparallel: %s\n", hw, model, pass, layers, par)
	cfg, err := configs.LoadBytes([]byte(text), "model.yaml", configs.LoadOptions{Sets: sets})
	require.NoError(t, err)
	return cfg
}

// simTime runs cfg (gemm_test.go's simulate): the simulated seconds and
// the cores used.
func simTime(t *testing.T, cfg *configs.RunConfig) (float64, int) {
	res, info := simulate(t, cfg)
	return res.SimTime.Seconds(), info.CoresUsed
}

// Tensor-parallel plans on one chip and across chips, with the race check
// on: the program runs on every rank (exact: symmetric-core reuse off),
// each rank's matmuls do its share of the Linear FLOPs, every collective
// of the rank graph takes time, and the run is at least its bounds (the
// matmuls at the cores' peak, the ranks' least HBM bytes at one core's DMA
// bandwidth). Where symmetric-core reuse applies, the default run
// simulates fewer cores and takes the exact run's time within 1%.
func TestTensorParallelModelsRun(t *testing.T) {
	for _, c := range []struct {
		name, hw, model, pass, par string
		cores                      int
		chips                      int
	}{
		{"trn2 tp2 decode", "{preset: trn2, chip: {lnc: 1}}", "llama-3.2-1b", "mode: decode, context: 257, batch: 2", "{tp: 2}", 2, 1},
		{"trn2 tp8 prefill", "{preset: trn2, chip: {lnc: 1}}", "llama-3.2-1b", "mode: prefill, seq: 130", "{tp: 8}", 8, 1},
		{"trn2 lnc2 tp2", "{preset: trn2}", "llama-3.2-1b", "mode: decode, context: 128", "{tp: 2}", 4, 1},
		{"trn1 two chips tp4", "{preset: trn1, chips: 2}", "llama-3.2-1b", "mode: decode, context: 64", "{tp: 4}", 4, 2},
		{"trn1.32xlarge gpt2 tp4", "{instance: trn1.32xlarge}", "gpt2", "mode: prefill, seq: 64", "{tp: 4}", 4, 2},
		{"trn2 bert tp4", "{preset: trn2, chip: {lnc: 1}}", "bert-base", "mode: prefill, seq: 128", "{tp: 4}", 4, 1},
		{"trn2 mixtral tp2", "{preset: trn2, chip: {lnc: 1}}", "mixtral-8x7b", "mode: decode, context: 64", "{tp: 2}", 2, 1},
		{"inf2.24xlarge ring tp4 ragged prefill", "{instance: inf2.24xlarge}", "qwen2-7b", "mode: prefill, seq: 130", "{tp: 4}", 4, 2},
		{"trn3 switched tp16 int8", "{preset: trn3, chips: 2, chip: {lnc: 1}}", "llama-3-8b", "mode: decode, context: 100, batch: 3, weights_dtype: int8", "{tp: 16}", 16, 2},
		{"trn1 tp2 fp8 dequantised", "{preset: trn1}", "llama-3.2-1b", "mode: decode, context: 100, weights_dtype: fp8e4", "{tp: 2}", 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := parallelConfig(t, c.hw, c.model, c.pass+", exact: true", c.par, 1)
			prog, info, err := Lower(cfg)
			require.NoError(t, err)
			assert.Equal(t, c.cores, info.CoresUsed)
			collOps := map[int32]bool{}
			for _, o := range info.Ops {
				if o.Kind == "all_reduce" || o.Kind == "all_gather" {
					collOps[o.ID] = true
				}
			}
			res, err := chip.Run(cfg, prog, chip.Options{CollectiveOps: collOps})
			require.NoError(t, err)
			require.Len(t, res.Chips, c.chips)
			mi := info.Model
			require.NotNil(t, mi)
			var tensorFLOPs float64
			cores := 0
			for _, ch := range res.Chips {
				for _, co := range ch.Cores {
					tensorFLOPs += co.Engines[isa.EngineTensor].FLOPs
					cores++
				}
			}
			assert.Equal(t, c.cores, cores)
			assert.GreaterOrEqual(t, tensorFLOPs, float64(mi.MatmulFLOPs)*(1-1e-9), "the ranks' matmuls cover every Linear")
			colls := 0
			for _, o := range res.Ops {
				for _, io := range info.Ops {
					if io.ID == o.ID && (io.Kind == "all_reduce" || io.Kind == "all_gather") {
						colls++
						assert.Greater(t, o.End, o.Start, "%s takes time", io.Name)
					}
				}
			}
			assert.Greater(t, colls, 0)
			h := &cfg.Hardware
			computeBound := float64(mi.MatmulFLOPs) / (h.PeakBaseFLOPSPerCore() * float64(c.cores))
			dmaBound := float64(info.MinHBMBytes) / float64(c.cores) / (float64(h.Core.DMA.Engines) * h.Core.DMA.EngineBandwidthGBps * 1e9)
			sim := res.SimTime.Seconds()
			assert.GreaterOrEqual(t, sim, computeBound)
			assert.GreaterOrEqual(t, sim, dmaBound)
			if c.chips > 1 {
				assert.NotEmpty(t, res.Links, "the collectives cross the links")
			}
			assert.Greater(t, res.CommTime, clock.Time(0))
			assert.LessOrEqual(t, res.ExposedCommTime, res.CommTime)
			t.Logf("%s: %.1f us on %d cores, %.2fx the compute bound, %.2fx the DMA bound, comm %v (%v exposed)", info.Name, sim*1e6, cores, sim/computeBound, sim/dmaBound, res.CommTime, res.ExposedCommTime)

			// The default run: symmetric-core reuse where the hardware is
			// symmetric.
			rcfg := parallelConfig(t, c.hw, c.model, c.pass, c.par, 1)
			rprog, rinfo, err := Lower(rcfg)
			require.NoError(t, err)
			rres, err := chip.Run(rcfg, rprog, chip.Options{CollectiveOps: collOps})
			require.NoError(t, err)
			if u := rinfo.Model.SimRanks; u > 0 {
				assert.Less(t, rinfo.CoresUsed, c.cores)
				assert.Equal(t, u, rinfo.CoresUsed)
				assert.Zero(t, c.cores%u, "the unit divides the ranks")
				assert.InEpsilon(t, sim, rres.SimTime.Seconds(), 0.01, "reuse within 1%% of every rank simulated")
				t.Logf("  reuse: %d of %d cores simulated, %.1f us (%+.3f%%)", u, c.cores, rres.SimTime.Seconds()*1e6, 100*(rres.SimTime.Seconds()/sim-1))
			} else {
				assert.Equal(t, sim, rres.SimTime.Seconds(), "no reuse: the same run")
				t.Logf("  no reuse")
			}
		})
	}
}

// Splitting a weight-bound decode step over more ranks makes it faster.
func TestTensorParallelSpeedsUpDecode(t *testing.T) {
	var prev float64
	for _, tp := range []int{1, 2, 4} {
		cfg := parallelConfig(t, "{preset: trn2, chip: {lnc: 1}}", "llama-3.2-1b", "mode: decode, context: 128, batch: 1", fmt.Sprintf("{tp: %d}", tp), 2)
		prog, _, err := Lower(cfg)
		require.NoError(t, err)
		res, err := chip.Run(cfg, prog, chip.Options{})
		require.NoError(t, err)
		sim := res.SimTime.Seconds()
		if prev > 0 {
			assert.Less(t, sim, prev, "tp %d", tp)
		}
		prev = sim
	}
}

// Replicas of a one-core copy run side by side: twice the tokens in about
// the time of one.
func TestReplicasRunSideBySide(t *testing.T) {
	run := func(par string) (float64, int) {
		// (exact: every copy simulated, where replica reuse would simulate one)
		return simTime(t, parallelConfig(t, "{instance: trn1.2xlarge}", "bert-base", "mode: prefill, seq: 128, exact: true", par, 2))
	}
	one, c1 := run("{}")
	two, c2 := run("{replicas: 2}")
	assert.Equal(t, 1, c1)
	assert.Equal(t, 2, c2)
	assert.InEpsilon(t, one, two, 0.1, "each replica has its own core and HBM stack")
}

// Replicas of a tensor-parallel plan: each copy's collectives run over its
// own ranks, and the copies run side by side.
func TestReplicasOfTensorParallelism(t *testing.T) {
	run := func(par string) (float64, int) {
		return simTime(t, parallelConfig(t, "{preset: trn2, chip: {lnc: 1}}", "llama-3.2-1b", "mode: decode, context: 128, exact: true", par, 1))
	}
	one, c1 := run("{tp: 2}")
	two, c2 := run("{tp: 2, replicas: 2}")
	assert.Equal(t, 2, c1)
	assert.Equal(t, 4, c2)
	assert.InEpsilon(t, one, two, 0.1, "two copies of a two-rank plan on four cores take about one's time")
}

// A plan that does not divide the model, or a model that does not fit
// its ranks, is an error naming the field and saying what.
func TestParallelPlanErrors(t *testing.T) {
	for _, c := range []struct{ hw, model, par, want string }{
		{"{preset: trn2, chip: {lnc: 1}}", "llama-3-8b", "{tp: 3}", "parallel.tp: llama-3-8b: num_attention_heads 32 does not divide by tp 3 (attention heads are split across the ranks; the nearest that divide it: 2 and 4) (tp values that divide it on this hardware's 8 logical cores: 1, 2, 4, 8)"},
		{"{instance: trn2.48xlarge}", "llama-3-8b", "{tp: 32}", "at hardware.chip.lnc 2 each of the 32 ranks is 2 physical cores"},
		{"{preset: trn2}", "llama-3-8b", "{tp: 3}", "(tp values that divide it on this hardware's 4 logical cores: 1, 2, 4; or set hardware.chip.lnc: 1)"},
		{"{instance: trn2.48xlarge}", "llama-3-70b", "{tp: 64}", "parallel.tp: at hardware.chip.lnc 2 each of the 64 ranks is 2 physical cores, which split its work as tensor parallelism too, so the model must divide by tp 64 x lnc 2 = 128: llama-3-70b: num_attention_heads 64 is fewer than tp 128"},
		{"{preset: trn2, chip: {lnc: 1}}", "llama-3-70b", "{tp: 8}", "the model does not fit one rank's HBM"},
		{"{preset: trn2, chip: {lnc: 1}}", "llama-3-8b", "{}", "parallel.tp splits it over more cores"},
	} {
		cfg := parallelConfig(t, c.hw, c.model, "mode: decode, context: 128", c.par, 0)
		_, _, err := Lower(cfg)
		require.Error(t, err, c.par)
		assert.Contains(t, err.Error(), c.want)
	}
}

// A multi-chip run gives identical results whatever GOMAXPROCS.
func TestParallelRunsAreDeterministic(t *testing.T) {
	cfg := parallelConfig(t, "{preset: trn1, chips: 2}", "llama-3.2-1b", "mode: decode, context: 64", "{tp: 4}", 1)
	var times []int64
	for _, procs := range []int{1, 4} {
		old := runtime.GOMAXPROCS(procs)
		prog, _, err := Lower(cfg)
		require.NoError(t, err)
		res, err := chip.Run(cfg, prog, chip.Options{})
		runtime.GOMAXPROCS(old)
		require.NoError(t, err)
		times = append(times, int64(res.SimTime))
	}
	assert.Equal(t, times[0], times[1])
}

package workloads

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/dma"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/kernels"
	"github.com/trnsim/trnsim/workloads/sched"
)

// attnRun is one simulated attention kernel and the figures the tests
// compare.
type attnRun struct {
	plan *kernels.AttentionPlan
	res  *chip.Result
	// simNs is the simulated time; flopNs the non-masked matmul FLOPs at
	// TensorE's peak for the dtype; dmaNs the bytes of Q, K, V (the keys
	// some query sees) and O at the core's DMA bandwidth.
	simNs, flopNs, dmaNs float64
	// busyNs is each engine's busy time.
	busyNs [isa.NumEngines]float64
}

// tensorPeakFLOPs is one core's TensorE peak for a dtype: a 128x128 array
// of multiply-accumulates per cycle, FP32 at the preset's rate.
func tensorPeakFLOPs(cfg *configs.RunConfig, dt isa.DType) float64 {
	t := &cfg.Hardware.Core.Tensor
	peak := 2 * float64(t.ArrayRows*t.ArrayCols) * t.ClockGHz * 1e9
	if dt == isa.FP32 {
		peak *= t.FP32Rate
	}
	return peak
}

func runAttention(t *testing.T, preset string, a kernels.Attention) *attnRun {
	t.Helper()
	return runAttentionWith(t, preset, a, kernels.AttentionOptions{OpID: 1})
}

// runAttentionWith is runAttention with the given options.
func runAttentionWith(t *testing.T, preset string, a kernels.Attention, o kernels.AttentionOptions) *attnRun {
	t.Helper()
	cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: []string{"hardware.preset=" + preset}})
	require.NoError(t, err)
	tg := Target(cfg)
	plan, err := kernels.PlanAttention(a, o, tg)
	require.NoError(t, err)
	k, err := plan.Kernel()
	require.NoError(t, err)
	p, err := sched.Compile(k, tg, sched.Options{DGEAuto: true})
	require.NoError(t, err)
	res, err := chip.Run(cfg, p.Program, chip.Options{}) // race check on
	require.NoError(t, err, "the kernel runs without a data race")
	r := &attnRun{plan: plan, res: res, simNs: res.SimTime.Nanoseconds()}
	core := &res.Chips[0].Cores[0]
	for e := range core.Engines {
		r.busyNs[e] = core.Engines[e].Busy.Nanoseconds()
	}
	r.flopNs = a.FLOPs() / tensorPeakFLOPs(cfg, a.DType) * 1e9
	eb := float64(a.DType.Bytes())
	tk := a.Past + a.Seq
	if a.Window > 0 {
		// The keys some query's window holds.
		tk -= max(0, a.Past-a.Window+1)
	}
	bytes := eb * float64(a.HeadDim) * float64(a.Batch) * (2*float64(a.Seq*a.QHeads) + 2*float64(tk*a.KVHeads))
	dmaGBps := float64(cfg.Hardware.Core.DMA.Engines) * cfg.Hardware.Core.DMA.EngineBandwidthGBps
	r.dmaNs = bytes / dmaGBps
	return r
}

// bound returns the engine with the most busy time.
func (r *attnRun) bound() (isa.Engine, float64) {
	best := isa.EngineTensor
	for e := range r.busyNs {
		if r.busyNs[e] > r.busyNs[best] {
			best = isa.Engine(e)
		}
	}
	return best, r.busyNs[best]
}

func (r *attnRun) String() string {
	e, _ := r.bound()
	return fmt.Sprintf("sim %.1f us, FLOP bound %.1f us (x%.2f), DMA bound %.1f us; busy tensor %.1f vector %.1f scalar %.1f gpsimd %.1f us (most: %s); plan %v",
		r.simNs/1e3, r.flopNs/1e3, r.simNs/r.flopNs, r.dmaNs/1e3, r.busyNs[isa.EngineTensor]/1e3, r.busyNs[isa.EngineVector]/1e3,
		r.busyNs[isa.EngineScalar]/1e3, r.busyNs[isa.EngineGpSimd]/1e3, e, r.plan.Choices())
}

// attnCached reads a's K and V from a cache stored head by head.
func attnCached(a kernels.Attention) kernels.Attention {
	a.KVHeadMajor = true
	return a
}

func attnPrefill(seq, qh, kvh, d int64) kernels.Attention {
	return kernels.Attention{Batch: 1, QHeads: qh, KVHeads: kvh, HeadDim: d, Seq: seq, Causal: true, DType: isa.BF16}
}

// attnDecode reads K and V from a cache stored head by head, as the
// models' caches are.
func attnDecode(batch, seq, past, qh, kvh, d int64) kernels.Attention {
	return kernels.Attention{Batch: batch, QHeads: qh, KVHeads: kvh, HeadDim: d, Seq: seq, Past: past, Causal: true, DType: isa.BF16, KVHeadMajor: true}
}

// A cache stored head by head gives decode's K loads one run per head
// instead of a head_dim-long piece per key: fewer DMA descriptors, less
// time (on every preset), the same work otherwise.
func TestAttentionReadsAHeadMajorCacheFaster(t *testing.T) {
	for _, tc := range []struct {
		preset string
		a      kernels.Attention
	}{
		{"trn2", attnDecode(1, 1, 2047, 32, 8, 64)},
		{"trn2", attnDecode(4, 1, 2047, 32, 8, 128)},
		{"trn1", attnDecode(1, 1, 1000, 12, 12, 64)},
		{"trn3", attnDecode(2, 4, 700, 32, 8, 128)},
	} {
		t.Run(fmt.Sprintf("%s %+v", tc.preset, tc.a), func(t *testing.T) {
			tokenMajor := tc.a
			tokenMajor.KVHeadMajor = false
			hm, tm := runAttention(t, tc.preset, tc.a), runAttention(t, tc.preset, tokenMajor)
			t.Logf("head-major %s; token-major %s", hm, tm)
			hmCore, tmCore := &hm.res.Chips[0].Cores[0], &tm.res.Chips[0].Cores[0]
			active := func(st *dma.Stats) (sum clock.Time) {
				for _, e := range st.Engines {
					sum += e.Active
				}
				return sum
			}
			assert.Less(t, active(&hmCore.DMA), active(&tmCore.DMA), "fewer descriptors: less DMA engine time")
			assert.Equal(t, tmCore.DMA.Bytes, hmCore.DMA.Bytes)
			assert.Less(t, hm.simNs, tm.simNs)
		})
	}
}

func TestAttentionRunsWithinPhysicalBounds(t *testing.T) {
	fp32 := attnPrefill(128, 32, 8, 64)
	fp32.DType = isa.FP32
	window := attnPrefill(300, 32, 8, 128)
	window.Window = 128
	windowDecode := attnDecode(2, 1, 1000, 32, 8, 64)
	windowDecode.Window = 256
	fp32Decode := attnDecode(2, 1, 300, 32, 8, 64)
	fp32Decode.DType = isa.FP32
	longWindow := attnDecode(1, 1, 20000, 32, 8, 128)
	longWindow.Window = 4096
	longFP32 := attnDecode(1, 1, 12000, 32, 8, 64)
	longFP32.DType = isa.FP32
	longPrefill := attnDecode(1, 300, 60000, 4, 1, 128)
	cases := []struct {
		name   string
		preset string
		a      kernels.Attention
	}{
		{"prefill 128 gqa d128", "trn2", attnPrefill(128, 32, 8, 128)},
		{"prefill 300 gqa d128", "trn2", attnPrefill(300, 32, 8, 128)},
		{"prefill 2048 gqa d128", "trn2", attnPrefill(2048, 32, 8, 128)},
		{"prefill 300 mha d64", "trn1", attnPrefill(300, 12, 12, 64)},
		{"prefill 128 gqa d64 fp32", "inf2", fp32},
		// Short prompts over many heads of 64 (BERT, GPT-2): Q, K and V
		// load as whole token rows.
		{"prefill 128 batch 8 mha d64 (token rows)", "trn2", bertAttn(8, 128)},
		{"prefill 100 mha d64 causal (token rows)", "trn1", attnPrefill(100, 12, 12, 64)},
		{"prefill 77 batch 3 mha d64 (token rows)", "inf2", bertAttn(3, 77)},
		{"prefill 300 gqa d128 window 128", "trn3", window},
		{"prefill 300 gqa d128 from a head-major cache", "trn2", attnCached(attnPrefill(300, 32, 8, 128))},
		{"prefill 2048 gqa d128 from a head-major cache", "trn2", attnCached(attnPrefill(2048, 32, 8, 128))},
		{"decode past 255 gqa d128", "trn2", attnDecode(1, 1, 255, 32, 8, 128)},
		{"decode past 2047 batch 4 gqa d128", "trn2", attnDecode(4, 1, 2047, 32, 8, 128)},
		{"decode seq 4 past 255 gqa d128", "trn2", attnDecode(1, 4, 255, 32, 8, 128)},
		{"decode past 255 mha d64", "trn1", attnDecode(1, 1, 255, 12, 12, 64)},
		{"decode past 2047 batch 4 mha d64", "inf2", attnDecode(4, 1, 2047, 12, 12, 64)},
		{"decode past 2047 batch 4 gqa d128", "trn3", attnDecode(4, 1, 2047, 32, 8, 128)},
		{"decode past 1000 batch 2 window 256 d64", "trn3", windowDecode},
		// Long contexts whose last key block is ragged (the interleaved V's
		// two block shapes share their SBUF).
		{"decode past 6999 gqa d64", "trn2", attnDecode(1, 1, 6999, 32, 8, 64)},
		{"decode past 5999 batch 2 gqa d128", "trn3", attnDecode(2, 1, 5999, 32, 8, 128)},
		{"decode past 5999 gqa d64", "trn1", attnDecode(1, 1, 5999, 32, 8, 64)},
		// Caches too long for a head group's K and V to stay in SBUF: a
		// ring of key blocks streamed through the key loop (interleaved V,
		// plain V with a window, a ragged last block, an FP32 cache), and
		// at 8,191 keys whose whole K and V fit only without the
		// P^T tiles of a second rotation.
		{"decode past 8191 gqa d64", "trn2", attnDecode(1, 1, 8191, 32, 8, 64)},
		{"decode past 8191 batch 2 gqa d128", "trn2", attnDecode(2, 1, 8191, 32, 8, 128)},
		{"decode past 32767 gqa d64", "trn2", attnDecode(1, 1, 32767, 32, 8, 64)},
		{"decode past 20000 gqa d128", "trn1", attnDecode(1, 1, 20000, 32, 8, 128)},
		{"decode past 20000 window 4096 d128", "trn3", longWindow},
		{"decode past 12000 gqa d64 fp32", "inf2", longFP32},
		// Chunked prefill after a long cache: several query blocks over
		// streamed K and V, each finished in its own iteration.
		{"prefill 300 after 60000 gqa d128", "trn2", longPrefill},
		{"prefill 200 after 50000 mha d64", "trn1", attnDecode(1, 200, 50000, 2, 2, 64)},
		// Awkward cache lengths: one key, a block of two ragged tiles, an
		// FP32 cache.
		{"decode past 0 gqa d128", "trn2", attnDecode(1, 1, 0, 32, 8, 128)},
		{"decode past 129 mha d64", "trn3", attnDecode(3, 1, 129, 12, 12, 64)},
		{"decode past 300 batch 2 gqa d64 fp32", "inf2", fp32Decode},
	}
	for _, tc := range cases {
		t.Run(tc.preset+" "+tc.name, func(t *testing.T) {
			r := runAttention(t, tc.preset, tc.a)
			t.Logf("%s %s: %s", tc.preset, tc.name, r)
			assert.GreaterOrEqual(t, r.simNs, r.flopNs, "no faster than TensorE's peak on the non-masked FLOPs")
			assert.GreaterOrEqual(t, r.simNs, r.dmaNs, "no faster than Q, K, V and O at the DMA bandwidth")
			assert.GreaterOrEqual(t, r.res.Chips[0].Cores[0].Engines[isa.EngineTensor].FLOPs, tc.a.FLOPs(), "the matmuls cover every non-masked score")
		})
	}
}

// bertAttn is BERT-base's attention: 12 heads of 64, not causal.
func bertAttn(batch, seq int64) kernels.Attention {
	a := attnPrefill(seq, 12, 12, 64)
	a.Batch, a.Causal = batch, false
	return a
}

// Short prompts over heads of 64 load Q, K and V as whole token rows
// (a head's own rows, 128 bytes, are descriptor-bound): the same
// matmuls, fewer transfers, less time than each head's rows loaded by
// itself.
func TestAttentionLoadsTokenRows(t *testing.T) {
	for _, tc := range []struct {
		preset string
		a      kernels.Attention
	}{
		{"trn2", bertAttn(8, 128)},
		{"trn2", bertAttn(8, 100)},
		{"trn2", bertAttn(16, 64)},
		{"trn1", bertAttn(1, 128)},
		{"trn3", attnPrefill(64, 12, 12, 64)},
	} {
		rows := runAttention(t, tc.preset, tc.a)
		perHead := runAttentionWith(t, tc.preset, tc.a, kernels.AttentionOptions{OpID: 1, PerHeadRows: true})
		t.Logf("%s seq %d batch %d: token rows %.1f us, per head %.1f us", tc.preset, tc.a.Seq, tc.a.Batch, float64(rows.simNs)/1e3, float64(perHead.simNs)/1e3)
		core, phCore := &rows.res.Chips[0].Cores[0], &perHead.res.Chips[0].Cores[0]
		assert.Equal(t, phCore.Engines[isa.EngineTensor].FLOPs-core.Engines[isa.EngineTensor].FLOPs, 0.0, "the same matmuls (transposes carry no FLOPs)")
		assert.Less(t, core.DMA.Transfers, phCore.DMA.Transfers, "fewer transfers")
		assert.Less(t, rows.simNs, perHead.simNs, "less time")
	}
}

func TestAttentionSkipsMaskedBlocks(t *testing.T) {
	causal := attnPrefill(2048, 32, 8, 128)
	full := causal
	full.Causal = false
	rc := runAttention(t, "trn2", causal)
	rf := runAttention(t, "trn2", full)
	ratio := rc.busyNs[isa.EngineTensor] / rf.busyNs[isa.EngineTensor]
	e, _ := rc.bound()
	t.Logf("trn2 BF16 attention, 32/8 heads, head dim 128, seq 2048: causal %s", rc)
	t.Logf("non-causal %s", rf)
	t.Logf("causal: simulated time / (non-masked FLOPs at TensorE's BF16 peak) = %.2f (target <= 2), busiest engine %s; TensorE busy causal/non-causal %.2f",
		rc.simNs/rc.flopNs, e, ratio)
	assert.Less(t, ratio, 0.65, "a causal prefill computes only the blocks the mask keeps")
	fc := rc.res.Chips[0].Cores[0].Engines[isa.EngineTensor].FLOPs
	ff := rf.res.Chips[0].Cores[0].Engines[isa.EngineTensor].FLOPs
	assert.Less(t, fc, 0.6*ff)
}

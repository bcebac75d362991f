package workloads

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/engines"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/kernels"
	"github.com/trnsim/trnsim/workloads/lowergraph"
)

// runGEMM plans, schedules and simulates one GEMM on a preset, race check
// on (chip.Run's default).
func runGEMM(t *testing.T, preset string, g kernels.GEMM, o kernels.GEMMOptions) (*chip.Result, *kernels.GEMMPlan) {
	t.Helper()
	cfg := gemmConfig(t, "hardware.preset="+preset)
	o.OpID = 1
	plan, err := kernels.PlanGEMM(g, o, Target(cfg))
	require.NoError(t, err)
	k, err := plan.Kernel()
	require.NoError(t, err)
	p, err := compile(cfg, k, gemmFit)
	require.NoError(t, err)
	res, err := chip.Run(cfg, p.Program, chip.Options{})
	require.NoError(t, err)
	return res, plan
}

// int8 weights on every preset, at sizes no tile divides, in both of A's
// layouts: the GEMM runs to completion with the race check on, its
// matmuls cover C once in BF16, it writes C once, and with the same
// blocks it reads half of BF16's bytes for the weights.
func TestQuantisedGEMM(t *testing.T) {
	shapes := [][3]int64{{1, 300, 700}, {3, 1000, 1100}, {130, 520, 1000}, {257, 1100, 650}}
	for _, preset := range []string{"trn1", "inf2", "trn2", "trn3"} {
		for _, s := range shapes {
			for _, amk := range []bool{true, false} {
				m, k, n := s[0], s[1], s[2]
				t.Run(fmt.Sprintf("%s/%dx%dx%d/mk=%v", preset, m, k, n, amk), func(t *testing.T) {
					bf := kernels.GEMM{M: m, K: k, N: n, In: isa.BF16, Out: isa.BF16, AMK: amk}
					q := bf
					q.Dequant, q.WeightDType = true, isa.INT8
					// The automatic plan.
					res, plan := runGEMM(t, preset, q, kernels.GEMMOptions{})
					core := res.Chips[0].Cores[0]
					tensor := core.Engines[isa.EngineTensor]
					assert.InDelta(t, float64(2*m*n*k), tensor.FLOPs, 1, "the matmuls cover C once")
					assert.InDelta(t, tensor.FLOPs, tensor.MatmulFLOPs[engines.ClassOf(isa.BF16, 0)], 1, "in BF16")
					assert.Equal(t, m*n*2, res.Chips[0].HBMWriteBytes, "C written once")
					assert.Positive(t, core.Engines[isa.EngineScalar].OpCounts[isa.OpActivation]+core.Engines[isa.EngineGpSimd].OpCounts[isa.OpTensorCopy]+
						core.Engines[isa.EngineVector].OpCounts[isa.OpTensorCopy], "conversions")
					t.Logf("auto plan %v %v: %v", plan.Choices(), plan.Notes(), res.SimTime)
					// The same blocks for BF16 and int8 weights (loop order nkm:
					// B read once, A once per N block, or once when resident):
					// the weights' bytes are what each reads beyond A and the
					// scales.
					o := kernels.GEMMOptions{Order: kernels.OrderNKM, BlockM: 128, BlockN: 512, BlockK: 256}
					r16, p16 := runGEMM(t, preset, bf, o)
					r8, p8 := runGEMM(t, preset, q, o)
					require.Equal(t, p16.AReads(), p8.AReads())
					aBytes := m * k * 2 * p16.AReads() // per N block, or once when A is resident
					scales := min(m, 128) * n * 2
					w16 := r16.Chips[0].HBMReadBytes - aBytes
					w8 := r8.Chips[0].HBMReadBytes - aBytes - scales
					assert.Equal(t, k*n*2, w16, "BF16 weights read once")
					assert.Equal(t, k*n, w8, "int8 weights read once, a byte each")
					assert.Equal(t, w16, 2*w8, "half of BF16's bytes")
				})
			}
		}
	}
}

// Every dequantisation engine schedules and runs race-free, in a GEMM whose
// K spans several blocks (the scales applied with the last block's adds)
// and in one whose K is one block (the scales applied by the evacuation's
// multiply), and with each evacuation choice.
func TestDequantEngines(t *testing.T) {
	engs := []kernels.DequantEngine{kernels.DequantAuto, kernels.DequantVector, kernels.DequantScalar, kernels.DequantGpSimd,
		kernels.DequantAlternate, kernels.DequantAlternateScalar}
	for _, preset := range []string{"trn1", "trn2"} {
		for _, e := range engs {
			for _, blockK := range []int64{256, 1024} {
				for _, ev := range []kernels.Evacuation{kernels.EvacVector, kernels.EvacAuto} {
					t.Run(fmt.Sprintf("%s/%s/bk=%d/evac=%d", preset, e, blockK, ev), func(t *testing.T) {
						g := kernels.GEMM{M: 200, K: 1000, N: 1100, In: isa.BF16, Out: isa.BF16, AMK: true, Dequant: true, WeightDType: isa.INT8}
						res, plan := runGEMM(t, preset, g, kernels.GEMMOptions{Dequantize: e, DequantizeSet: true, BlockK: blockK, Evacuate: ev, EvacuateSet: true})
						assert.Equal(t, e, plan.Dequantize)
						assert.InDelta(t, float64(2*g.M*g.N*g.K), res.Chips[0].Cores[0].Engines[isa.EngineTensor].FLOPs, 1)
						assert.Equal(t, g.M*g.N*2, res.Chips[0].HBMWriteBytes)
					})
				}
			}
		}
	}
	// The plan's other shapes: A through TensorE transposes, loop order nmk,
	// one result buffer (no deferred stores), single-buffered inputs.
	for _, preset := range []string{"trn1", "trn2"} {
		for name, o := range map[string]kernels.GEMMOptions{"tensor transposes": {Transpose: kernels.TransposeTensor}, "nmk": {Order: kernels.OrderNMK},
			"one result buffer": {Order: kernels.OrderNKM, ResultBuffers: 1}, "single buffers": {Buffers: 1}} {
			t.Run(preset+"/"+name, func(t *testing.T) {
				g := kernels.GEMM{M: 300, K: 1000, N: 1100, In: isa.BF16, Out: isa.BF16, AMK: true, Dequant: true, WeightDType: isa.INT8}
				res, _ := runGEMM(t, preset, g, o)
				assert.InDelta(t, float64(2*g.M*g.N*g.K), res.Chips[0].Cores[0].Engines[isa.EngineTensor].FLOPs, 1)
				assert.Equal(t, g.M*g.N*2, res.Chips[0].HBMWriteBytes)
			})
		}
	}
	for _, s := range []string{"auto", "vector", "scalar", "gpsimd", "alternate", "alternate_scalar"} {
		e, ok := kernels.ParseDequantEngine(s)
		assert.True(t, ok, s)
		assert.Equal(t, s, e.String())
	}
}

// The plan search fits what the scheduler places for quantised weights at
// model sizes (a vocabulary-wide head, a wide MLP at a long prompt) on
// every preset.
func TestQuantisedGEMMPlansLower(t *testing.T) {
	for _, preset := range configs.PresetNames() {
		for _, s := range [][3]int64{{1, 2048, 128256}, {4096, 4096, 14336}, {2, 14336, 4096}, {1000, 8192, 1024}} {
			for _, wdt := range []isa.DType{isa.INT8, isa.FP8E4} {
				cfg := gemmConfig(t, "hardware.preset="+preset)
				g := kernels.GEMM{M: s[0], K: s[1], N: s[2], In: isa.BF16, Out: isa.BF16, AMK: true, Dequant: true, WeightDType: wdt}
				plan, err := kernels.PlanGEMM(g, kernels.GEMMOptions{OpID: 1}, Target(cfg))
				require.NoError(t, err, "%s %v", preset, s)
				k, err := plan.Kernel()
				require.NoError(t, err)
				_, err = compile(cfg, k, gemmFit)
				assert.NoError(t, err, "%s %v %s %v", preset, s, wdt, plan.Choices())
			}
		}
	}
	// What the GEMM does not take.
	tg := Target(gemmConfig(t))
	for _, g := range []kernels.GEMM{
		{M: 8, K: 256, N: 256, In: isa.BF16, Out: isa.BF16, Dequant: true, WeightDType: isa.INT16},
		{M: 8, K: 256, N: 256, In: isa.FP8E4, Out: isa.BF16, Dequant: true, WeightDType: isa.INT8},
		{M: 8, K: 256, N: 256, Batch: 2, In: isa.BF16, Out: isa.BF16, Dequant: true, WeightDType: isa.INT8},
	} {
		_, err := kernels.PlanGEMM(g, kernels.GEMMOptions{}, tg)
		assert.ErrorContains(t, err, "gemm: quantised weights")
	}
}

// A decode step of Llama-3.2-1B (two layers and the head) with int8
// weights: on trn1 and trn2, where decode is weight-bound, it is faster
// than with BF16 weights, and never faster than its least HBM bytes at
// the chip's HBM bandwidth or at the core's DMA bandwidth. The weights'
// bytes halve but for the scales, which count as parameters.
func TestQuantisedDecode(t *testing.T) {
	for _, preset := range []string{"trn1", "trn2"} {
		t.Run(preset, func(t *testing.T) {
			run := func(dt string) (float64, *Info, *configs.RunConfig) {
				cfg := modelConfig(t, preset, "llama-3.2-1b", "mode: decode, context: 300, weights_dtype: "+dt, 2)
				prog, info, err := Lower(cfg)
				require.NoError(t, err)
				res, err := chip.Run(cfg, prog, chip.Options{})
				require.NoError(t, err)
				linear := 0.0
				kinds := map[int32]Op{}
				for _, o := range info.Ops {
					kinds[o.ID] = o
				}
				for _, o := range res.Ops {
					if op := kinds[o.ID]; op.Kind == "linear" && op.Name != "lm_head" {
						linear += o.Time.Seconds()
					}
				}
				t.Logf("%s %s: %.1f us (the layers' Linears %.1f us), weights %d bytes, HBM read %d bytes",
					preset, dt, res.SimTime.Seconds()*1e6, linear*1e6, info.Model.WeightBytes, res.Chips[0].HBMReadBytes)
				return res.SimTime.Seconds(), info, cfg
			}
			tb, bf, _ := run("bf16")
			tq, q, cfg := run("int8")
			assert.Less(t, tq, tb, "int8 weights are faster")
			h := &cfg.Hardware
			hbm := float64(q.MinHBMBytes) / (h.Chip.HBM.BandwidthGBps * 1e9)
			dma := float64(q.MinHBMBytes) / (float64(h.Core.DMA.Engines) * h.Core.DMA.EngineBandwidthGBps * 1e9)
			assert.GreaterOrEqual(t, tq, hbm, "the least bytes at the chip's HBM bandwidth")
			assert.GreaterOrEqual(t, tq, dma, "the least bytes at the core's DMA bandwidth")
			// The layers' matmul weights at a byte each (the tied head stays
			// BF16), plus one [out] BF16 scale vector per Linear.
			var layerW, scales, n int64
			for _, s := range lowergraph.Scales(q.Model.Graph, h.Core.Tensor.FP8DoubleRow) {
				layerW += s.Weight.Elements()
				scales += s.Bytes()
				n += s.Elements
				assert.True(t, strings.HasSuffix(s.Name, "_proj.scale"), s.Name)
			}
			assert.Equal(t, int64(14), int64(len(lowergraph.Scales(q.Model.Graph, false))), "7 Linears a layer")
			assert.Equal(t, bf.Model.WeightBytes-layerW+scales, q.Model.WeightBytes)
			assert.Equal(t, bf.Model.Params+n/2*16, q.Model.Params, "the whole model's scales are parameters")
			assert.Less(t, q.Model.FullWeightBytes, bf.Model.FullWeightBytes)
			assert.Contains(t, strings.Join(q.Notes, "\n"), "14 matmuls' int8 weights (Linears', experts') streamed at 1 byte per element and dequantised to bf16")
		})
	}
}

// A mixture of experts' int8 expert weights stream at a byte per element
// and are dequantised on chip as a Linear's are: the experts reached read
// half the bytes of BF16's, race-free, and every expert's output channels
// have their scales (parameters and weight bytes).
func TestQuantisedExperts(t *testing.T) {
	for _, preset := range []string{"trn1", "trn2"} {
		t.Run(preset, func(t *testing.T) {
			run := func(dt string) (*chip.Result, *Info) {
				cfg := modelConfig(t, preset, "mixtral-8x7b", "mode: decode, context: 64, weights_dtype: "+dt, 1)
				prog, info, err := Lower(cfg)
				require.NoError(t, err)
				res, err := chip.Run(cfg, prog, chip.Options{})
				require.NoError(t, err)
				return res, info
			}
			rb, bf := run("bf16")
			rq, q := run("int8")
			eb, eq := expertReadBytes(rb, bf), expertReadBytes(rq, q)
			t.Logf("%s: experts read %d bytes in bf16, %d in int8; %.1f against %.1f us", preset, eb, eq, rb.SimTime.Seconds()*1e6, rq.SimTime.Seconds()*1e6)
			assert.InDelta(t, 0.5, float64(eq)/float64(eb), 0.02, "int8 experts read half BF16's bytes")
			var experts int64
			for _, s := range lowergraph.Scales(q.Model.Graph, false) {
				if strings.Contains(s.Name, "experts") {
					experts += s.Elements
				}
			}
			// 8 experts: gate and up 14336 channels each, down 4096.
			assert.Equal(t, int64(8*(14336+14336+4096)), experts, "every expert's output channels")
			assert.Contains(t, strings.Join(q.Notes, "\n"), "int8 weights (Linears', experts') streamed")
		})
	}
}

// fp8e4 weights: where TensorE has no FP8 double-row mode (trn1, inf2,
// trn3) they are dequantised and multiplied in BF16; on trn2 they still
// run as FP8 double-row matmuls.
func TestFP8WeightsDequantised(t *testing.T) {
	for _, preset := range []string{"trn1", "inf2", "trn2", "trn3"} {
		t.Run(preset, func(t *testing.T) {
			cfg := modelConfig(t, preset, "llama-3.2-1b", "mode: decode, context: 300, weights_dtype: fp8e4", 1)
			prog, info, err := Lower(cfg)
			require.NoError(t, err)
			res, err := chip.Run(cfg, prog, chip.Options{})
			require.NoError(t, err)
			tensor := res.Chips[0].Cores[0].Engines[isa.EngineTensor]
			var doubleRow float64
			for cl, f := range tensor.MatmulFLOPs {
				if engines.MatmulClass(cl).PerfMode() == 2 {
					doubleRow += f
				}
			}
			assert.GreaterOrEqual(t, tensor.FLOPs, float64(info.Model.MatmulFLOPs)*(1-1e-9))
			dequantised := strings.Contains(strings.Join(info.Notes, "\n"), "fp8e4 weights (Linears', experts') streamed at 1 byte per element and dequantised to bf16")
			if cfg.Hardware.Core.Tensor.FP8DoubleRow {
				assert.Positive(t, doubleRow, "FP8 double-row matmuls")
				assert.False(t, dequantised)
			} else {
				assert.Zero(t, doubleRow)
				assert.True(t, dequantised, "%q", info.Notes)
			}
		})
	}
}

// The GEMM workload takes quantised weights (workload.gemm.weights_dtype)
// and the dequantisation engine (workload.lowering.dequantize), which the
// plan search chooses when it is not given.
func TestQuantisedGEMMWorkload(t *testing.T) {
	for _, preset := range []string{"trn1", "trn2"} {
		for _, e := range append([]string{""}, configs.DequantizeEngines...) {
			t.Run(preset+"/"+e, func(t *testing.T) {
				sets := []string{"hardware.preset=" + preset, "workload.gemm.m=64", "workload.gemm.k=1000", "workload.gemm.n=2100", "workload.gemm.a_layout=mk",
					"workload.gemm.weights_dtype=int8"}
				if e != "" {
					sets = append(sets, "workload.lowering.dequantize="+e)
				}
				cfg := gemmConfig(t, sets...)
				res, info := simulate(t, cfg)
				assert.Equal(t, "gemm 64x1000x2100 bf16 (int8 weights)", info.Name)
				note := strings.Join(info.Notes, "\n")
				assert.Contains(t, note, "weights int8, dequantised to bf16 on ")
				if e != "" {
					assert.Contains(t, note, "dequantised to bf16 on "+e+";")
				}
				assert.InDelta(t, info.FLOPs, res.Chips[0].Cores[0].Engines[isa.EngineTensor].FLOPs, 1)
				assert.Equal(t, int64(64*1000*2+1000*2100+2100*2+64*2100*2), info.MinHBMBytes, "A, B at a byte, the scales, C")
				assert.GreaterOrEqual(t, res.Chips[0].HBMReadBytes+res.Chips[0].HBMWriteBytes, info.MinHBMBytes)
			})
		}
	}
}

// Skewed routing: with hot experts a decode step at batch 4 reaches fewer
// experts than balanced routing's eight and streams fewer of their weights,
// prefill at 128 tokens spreads the same picks unevenly over all eight;
// both run race-free and the notes say what was assumed.
func TestSkewedRouting(t *testing.T) {
	run := func(pass string) (*chip.Result, *Info) {
		cfg := modelConfig(t, "trn2", "mixtral-8x7b", pass, 1)
		prog, info, err := Lower(cfg)
		require.NoError(t, err)
		res, err := chip.Run(cfg, prog, chip.Options{})
		require.NoError(t, err)
		return res, info
	}
	rb, bal := run("mode: decode, batch: 4, context: 64")
	rs, skew := run("mode: decode, batch: 4, context: 64, routing_skew: 2")
	t.Logf("decode: experts read %d bytes balanced, %d skewed; %.1f against %.1f us", expertReadBytes(rb, bal), expertReadBytes(rs, skew), rb.SimTime.Seconds()*1e6, rs.SimTime.Seconds()*1e6)
	// Four of the eight experts (shares 4, 2, 1, 1): half the weights.
	assert.InDelta(t, 0.5, float64(expertReadBytes(rs, skew))/float64(expertReadBytes(rb, bal)), 0.02)
	assert.Less(t, skew.MinHBMBytes, bal.MinHBMBytes, "the least bytes count the experts reached")
	assert.Contains(t, strings.Join(skew.Notes, "\n"), "skewed routing assumed (expert i's share of the picks in proportion to (i+1)^-2): 4 of 8 experts reached, [4 2 1 1] token picks")
	_, pre := run("mode: prefill, seq: 128, routing_skew: 1")
	assert.Contains(t, strings.Join(pre.Notes, "\n"), "8 of 8 experts reached, [94 47 31 24 19 16 13 12] token picks")
}

// expertReadBytes is the HBM bytes a run's mixture-of-experts ops read.
func expertReadBytes(res *chip.Result, info *Info) int64 {
	kinds := map[int32]Op{}
	for _, o := range info.Ops {
		kinds[o.ID] = o
	}
	var b int64
	for _, o := range res.Ops {
		if kinds[o.ID].Kind == "moe_experts" {
			b += o.HBMReadBytes
		}
	}
	return b
}

// Quantised and skewed experts on every preset (int8; FP8, dequantised
// where TensorE has no double-row mode), at awkward sizes (three decode
// streams, a 37-token prompt): the program runs race-free, the experts
// read their weights, and the run is no faster than the least bytes at the
// core's DMA bandwidth.
func TestExpertsMatrix(t *testing.T) {
	for _, preset := range configs.PresetNames() {
		for _, pass := range []string{"mode: decode, batch: 3, context: 40, weights_dtype: int8, routing_skew: 1.5",
			"mode: decode, batch: 2, context: 33, weights_dtype: fp8e4", "mode: prefill, seq: 37, routing_skew: 1.5"} {
			t.Run(preset+"/"+pass, func(t *testing.T) {
				cfg := modelConfig(t, preset, "mixtral-8x7b", pass, 1)
				prog, info, err := Lower(cfg)
				require.NoError(t, err)
				res, err := chip.Run(cfg, prog, chip.Options{})
				require.NoError(t, err)
				h := &cfg.Hardware
				dma := float64(info.MinHBMBytes) / (float64(h.Core.DMA.Engines) * h.Core.DMA.EngineBandwidthGBps * 1e9)
				assert.GreaterOrEqual(t, res.SimTime.Seconds(), dma, "the least bytes at the core's DMA bandwidth")
				assert.Positive(t, expertReadBytes(res, info))
			})
		}
	}
}

package workloads

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/kernels"
	"github.com/trnsim/trnsim/workloads/sched"
	"github.com/trnsim/trnsim/workloads/tile"
)

// rowKernelRun is one simulated row kernel (a norm or a softmax).
type rowKernelRun struct {
	res *chip.Result
	tg  *sched.Target
	// minBytes are the bytes the kernel must move through the core's DMA:
	// its inputs read once and its output written once.
	minBytes int64
	// boundNs is minBytes at the core's DMA bandwidth.
	boundNs float64
}

// dmaFraction is the achieved fraction of the core's DMA bandwidth.
func (r *rowKernelRun) dmaFraction() float64 { return r.boundNs / r.res.SimTime.Nanoseconds() }

func runRowKernel(t *testing.T, preset string, build func(tg *sched.Target) (*tile.Kernel, error), minBytes int64) *rowKernelRun {
	t.Helper()
	cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: []string{"hardware.preset=" + preset}})
	require.NoError(t, err)
	tg := Target(cfg)
	k, err := build(tg)
	require.NoError(t, err)
	p, err := sched.Compile(k, tg, sched.Options{DGEAuto: true})
	require.NoError(t, err)
	res, err := chip.Run(cfg, p.Program, chip.Options{})
	require.NoError(t, err, "the program simulates without error or race")
	bw := float64(tg.Limits.DMAEngines) * tg.DMAEngineGBps // bytes per ns
	return &rowKernelRun{res: res, tg: tg, minBytes: minBytes, boundNs: float64(minBytes) / bw}
}

func normBytes(n kernels.Norm) int64 {
	eb := int64(n.DType.Bytes())
	b := 2*n.Rows*n.Cols*eb + n.Cols*eb
	if n.Bias {
		b += n.Cols * eb
	}
	return b
}

func runNorm(t *testing.T, preset string, n kernels.Norm, o kernels.NormOptions) (*rowKernelRun, *kernels.NormPlan) {
	t.Helper()
	var plan *kernels.NormPlan
	r := runRowKernel(t, preset, func(tg *sched.Target) (*tile.Kernel, error) {
		var err error
		if plan, err = kernels.PlanNorm(n, o, tg); err != nil {
			return nil, err
		}
		return plan.Kernel()
	}, normBytes(n))
	return r, plan
}

func runSoftmax(t *testing.T, preset string, s kernels.Softmax, o kernels.SoftmaxOptions) (*rowKernelRun, *kernels.SoftmaxPlan) {
	t.Helper()
	var plan *kernels.SoftmaxPlan
	r := runRowKernel(t, preset, func(tg *sched.Target) (*tile.Kernel, error) {
		var err error
		if plan, err = kernels.PlanSoftmax(s, o, tg); err != nil {
			return nil, err
		}
		return plan.Kernel()
	}, 2*s.Rows*s.Cols*int64(s.DType.Bytes()))
	return r, plan
}

var rowKernelPresets = []string{"trn1", "inf2", "trn2", "trn3"}

// rowKernelShapes are awkward sizes: one row, one element, rows that are
// not a multiple of 128, columns that are not a multiple of bn_stats'
// chunk.
var rowKernelShapes = [][2]int64{{1, 64}, {1, 1}, {300, 4096}, {128, 5000}, {257, 1000}}

// checkRowKernel asserts what every run of a row kernel must show: its
// bytes moved (inputs read at least once, the output written exactly
// once) and a time no shorter than those bytes at the core's DMA
// bandwidth.
func checkRowKernel(t *testing.T, r *rowKernelRun, inBytes, outBytes int64) {
	t.Helper()
	ch := r.res.Chips[0]
	assert.GreaterOrEqual(t, ch.HBMReadBytes, inBytes, "every input is read")
	assert.Equal(t, outBytes, ch.HBMWriteBytes, "OUT is written once")
	assert.GreaterOrEqual(t, r.res.SimTime.Nanoseconds(), r.boundNs, "no faster than the core's DMA bandwidth allows")
	assert.LessOrEqual(t, r.dmaFraction(), 1.0)
}

func TestNormKernelsRunOnEveryPreset(t *testing.T) {
	for _, preset := range rowKernelPresets {
		for _, dt := range []isa.DType{isa.BF16, isa.FP32} {
			for _, sh := range rowKernelShapes {
				for _, kind := range []struct {
					name      string
					rms, bias bool
				}{{"rmsnorm", true, false}, {"layernorm", false, false}, {"layernorm+bias", false, true}} {
					for _, stats := range []kernels.NormStats{kernels.NormStatsAuto, kernels.NormStatsBN, kernels.NormStatsAccumulate} {
						n := kernels.Norm{Rows: sh[0], Cols: sh[1], DType: dt, RMS: kind.rms, Bias: kind.bias, Eps: 1e-5}
						t.Run(fmt.Sprintf("%s/%s/%dx%d/%s/%s", preset, dt, sh[0], sh[1], kind.name, stats), func(t *testing.T) {
							r, _ := runNorm(t, preset, n, kernels.NormOptions{Stats: stats, OpID: 3})
							eb := int64(dt.Bytes())
							checkRowKernel(t, r, normBytes(n)-n.Rows*n.Cols*eb, n.Rows*n.Cols*eb)
						})
					}
				}
			}
		}
	}
}

func TestSoftmaxRunsOnEveryPreset(t *testing.T) {
	for _, preset := range rowKernelPresets {
		for _, dt := range []isa.DType{isa.BF16, isa.FP32} {
			for _, sh := range rowKernelShapes {
				for _, free := range []int64{0, 1024} {
					s := kernels.Softmax{Rows: sh[0], Cols: sh[1], DType: dt}
					t.Run(fmt.Sprintf("%s/%s/%dx%d/free=%d", preset, dt, sh[0], sh[1], free), func(t *testing.T) {
						r, p := runSoftmax(t, preset, s, kernels.SoftmaxOptions{Free: free, OpID: 4})
						b := s.Rows * s.Cols * int64(dt.Bytes())
						in := b
						if p.TwoPass {
							in = 2 * b // X is read once per pass
						}
						assert.Equal(t, free > 0 && free < s.Cols, p.TwoPass)
						checkRowKernel(t, r, in, b)
					})
				}
			}
		}
	}
}

func TestRowKernelsReachTheDMABandwidth(t *testing.T) {
	// The project's target: norms of >= 4 MiB run at >= 80% of the core's
	// DMA bandwidth (inputs read once, output written once).
	cases := []struct {
		name string
		run  func(t *testing.T) (*rowKernelRun, string)
		min  float64
	}{
		{"rmsnorm 4096x4096 bf16", func(t *testing.T) (*rowKernelRun, string) {
			r, p := runNorm(t, "trn2", kernels.Norm{Rows: 4096, Cols: 4096, DType: isa.BF16, RMS: true, Eps: 1e-6}, kernels.NormOptions{})
			return r, fmt.Sprintf("stats %s, %d buffers", p.Stats, p.NBuf)
		}, 0.8},
		{"layernorm 4096x4096 bf16", func(t *testing.T) (*rowKernelRun, string) {
			r, p := runNorm(t, "trn2", kernels.Norm{Rows: 4096, Cols: 4096, DType: isa.BF16, Eps: 1e-5}, kernels.NormOptions{})
			return r, fmt.Sprintf("stats %s, %d buffers", p.Stats, p.NBuf)
		}, 0.8},
		{"layernorm+bias 4096x4096 bf16", func(t *testing.T) (*rowKernelRun, string) {
			r, p := runNorm(t, "trn2", kernels.Norm{Rows: 4096, Cols: 4096, DType: isa.BF16, Bias: true, Eps: 1e-5}, kernels.NormOptions{})
			return r, fmt.Sprintf("stats %s, %d buffers", p.Stats, p.NBuf)
		}, 0.8},
		{"rmsnorm 4096x4096 fp32", func(t *testing.T) (*rowKernelRun, string) {
			r, p := runNorm(t, "trn2", kernels.Norm{Rows: 4096, Cols: 4096, DType: isa.FP32, RMS: true, Eps: 1e-6}, kernels.NormOptions{})
			return r, fmt.Sprintf("stats %s, %d buffers", p.Stats, p.NBuf)
		}, 0.8},
		{"softmax 4096x4096 bf16", func(t *testing.T) (*rowKernelRun, string) {
			r, p := runSoftmax(t, "trn2", kernels.Softmax{Rows: 4096, Cols: 4096, DType: isa.BF16}, kernels.SoftmaxOptions{})
			return r, fmt.Sprintf("%d buffers", p.NBuf)
		}, 0.8},
		{"softmax 1024x32768 bf16, two passes", func(t *testing.T) (*rowKernelRun, string) {
			r, p := runSoftmax(t, "trn2", kernels.Softmax{Rows: 1024, Cols: 32768, DType: isa.BF16}, kernels.SoftmaxOptions{Free: 4096})
			return r, fmt.Sprintf("%d buffers, chunks of %d (X is read twice: at most 2/3 of the one-pass bound)", p.NBuf, p.Free)
		}, 0.5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, how := tc.run(t)
			core := r.res.Chips[0].Cores[0]
			t.Logf("trn2 %s (%s): %s for %d bytes; %.1f%% of the core's DMA bandwidth (%.0f GB/s); busy VectorE %s ScalarE %s GpSimd %s",
				tc.name, how, r.res.SimTime, r.minBytes, 100*r.dmaFraction(), float64(r.tg.Limits.DMAEngines)*r.tg.DMAEngineGBps,
				core.Engines[isa.EngineVector].Busy, core.Engines[isa.EngineScalar].Busy, core.Engines[isa.EngineGpSimd].Busy)
			assert.GreaterOrEqual(t, r.dmaFraction(), tc.min)
		})
	}
}

func TestRowKernelPlanErrors(t *testing.T) {
	cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: []string{"hardware.preset=trn2"}})
	require.NoError(t, err)
	tg := Target(cfg)
	// Whole fp32 rows of 40000 columns: W and the junk tile alone take
	// 312 KiB of a 224 KiB partition.
	_, err = kernels.PlanNorm(kernels.Norm{Rows: 256, Cols: 40000, DType: isa.FP32, RMS: true}, kernels.NormOptions{}, tg)
	var fit *sched.FitError
	require.True(t, errors.As(err, &fit), "%v", err)
	assert.Equal(t, isa.MemSBUF, fit.Mem)
	_, err = kernels.PlanNorm(kernels.Norm{Rows: 256, Cols: 1024, DType: isa.BF16, RMS: true, Bias: true}, kernels.NormOptions{}, tg)
	assert.ErrorContains(t, err, "bias")
	_, err = kernels.PlanSoftmax(kernels.Softmax{Rows: 0, Cols: 1024, DType: isa.BF16}, kernels.SoftmaxOptions{}, tg)
	assert.Error(t, err)
	// Rows too long for SBUF go to two passes rather than failing.
	p, err := kernels.PlanSoftmax(kernels.Softmax{Rows: 256, Cols: 200000, DType: isa.FP32}, kernels.SoftmaxOptions{}, tg)
	require.NoError(t, err)
	assert.True(t, p.TwoPass)
}

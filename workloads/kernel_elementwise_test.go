package workloads

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/kernels"
	"github.com/trnsim/trnsim/workloads/sched"
)

// elementwiseOp is one op of the elementwise kernel on one engine.
type elementwiseOp struct {
	name string
	e    kernels.Elementwise
}

// elementwiseOps are the ops the elementwise kernel runs, on each engine
// it allows: activations on ScalarE, binary ops and copies on VectorE and
// GpSimd (and the copy as ScalarE's copy activation).
var elementwiseOps = []elementwiseOp{
	{"silu/scalar", kernels.Elementwise{Unary: true, Func: isa.ActSilu, Engine: isa.EngineScalar}},
	{"gelu/scalar", kernels.Elementwise{Unary: true, Func: isa.ActGelu, Engine: isa.EngineScalar}},
	{"exp/scalar", kernels.Elementwise{Unary: true, Func: isa.ActExp, Engine: isa.EngineScalar}},
	{"copy/scalar", kernels.Elementwise{Unary: true, Func: isa.ActCopy, Engine: isa.EngineScalar}},
	{"copy/vector", kernels.Elementwise{Unary: true, Engine: isa.EngineVector}},
	{"copy/gpsimd", kernels.Elementwise{Unary: true, Engine: isa.EngineGpSimd}},
	{"add/vector", kernels.Elementwise{ALU: isa.ALUAdd, Engine: isa.EngineVector}},
	{"add/gpsimd", kernels.Elementwise{ALU: isa.ALUAdd, Engine: isa.EngineGpSimd}},
	{"multiply/vector", kernels.Elementwise{ALU: isa.ALUMultiply, Engine: isa.EngineVector}},
	{"multiply/gpsimd", kernels.Elementwise{ALU: isa.ALUMultiply, Engine: isa.EngineGpSimd}},
}

// elementwiseShapes: one element, one row, ragged rows, ragged columns,
// and two large tensors (32 MiB and 128 MiB in BF16).
var elementwiseShapes = [][2]int64{{1, 1}, {1, 64}, {300, 4096}, {128, 5000}, {4096, 4096}, {8192, 8192}}

// elementwiseRun is one simulated elementwise kernel.
type elementwiseRun struct {
	res  *chip.Result
	plan *kernels.ElementwisePlan
	// bytes are X (and Y) read once and OUT written once; boundNs is
	// those bytes at the core's DMA bandwidth.
	bytes   int64
	boundNs float64
	bwGBps  float64
}

func (r *elementwiseRun) fraction() float64 { return r.boundNs / r.res.SimTime.Nanoseconds() }

func runElementwise(t *testing.T, preset string, e kernels.Elementwise) *elementwiseRun {
	t.Helper()
	return runElementwiseWith(t, preset, e, kernels.ElementwiseOptions{OpID: 1})
}

func runElementwiseWith(t *testing.T, preset string, e kernels.Elementwise, o kernels.ElementwiseOptions) *elementwiseRun {
	t.Helper()
	cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: []string{"hardware.preset=" + preset}})
	require.NoError(t, err)
	tg := Target(cfg)
	plan, err := kernels.PlanElementwise(e, o, tg)
	require.NoError(t, err)
	k, err := plan.Kernel()
	require.NoError(t, err)
	p, err := sched.Compile(k, tg, sched.Options{DGEAuto: true})
	require.NoError(t, err)
	res, err := chip.Run(cfg, p.Program, chip.Options{})
	require.NoError(t, err, "the program simulates without error or race")
	n := int64(3)
	if e.Unary {
		n = 2
	}
	bytes := n * e.Rows * e.Cols * int64(e.DType.Bytes())
	bw := float64(tg.Limits.DMAEngines) * tg.DMAEngineGBps
	return &elementwiseRun{res: res, plan: plan, bytes: bytes, boundNs: float64(bytes) / bw, bwGBps: bw}
}

// TestElementwiseKernelMatrix runs every op on every preset, dtype and
// shape: no error or race, the bytes moved once, no faster than the
// core's DMA bandwidth, and, for tensors of at least 4 MiB, at least 80%
// of it (the project's target for standalone elementwise ops).
func TestElementwiseKernelMatrix(t *testing.T) {
	for _, preset := range []string{"trn1", "inf2", "trn2", "trn3"} {
		for _, dt := range []isa.DType{isa.BF16, isa.FP32} {
			for _, sh := range elementwiseShapes {
				for _, op := range elementwiseOps {
					e := op.e
					e.Rows, e.Cols, e.DType = sh[0], sh[1], dt
					big := e.Rows*e.Cols*int64(dt.Bytes()) >= 4<<20
					if testing.Short() && big && !(sh[0] == 4096 && preset == "trn2") {
						continue
					}
					t.Run(fmt.Sprintf("%s/%s/%dx%d/%s", preset, dt, sh[0], sh[1], op.name), func(t *testing.T) {
						t.Parallel()
						r := runElementwise(t, preset, e)
						ch := r.res.Chips[0]
						out := e.Rows * e.Cols * int64(dt.Bytes())
						assert.Equal(t, out, ch.HBMWriteBytes, "OUT is written once")
						assert.Equal(t, r.bytes-out, ch.HBMReadBytes, "every input is read once")
						sim := r.res.SimTime.Nanoseconds()
						assert.GreaterOrEqual(t, sim, r.boundNs, "no faster than the core's DMA bandwidth allows")
						var ch2 []string
						for _, c := range r.plan.Choices() {
							ch2 = append(ch2, fmt.Sprintf("%s=%d", c.Name, c.Value))
						}
						t.Logf("%s %s %dx%d %s (%v): %.2f us for %d bytes: %.1f%% of %.0f GB/s",
							preset, dt, e.Rows, e.Cols, op.name, ch2, sim/1e3, r.bytes, 100*r.fraction(), r.bwGBps)
						if big {
							assert.GreaterOrEqual(t, r.fraction(), 0.8, "at least 80%% of the core's DMA bandwidth")
						}
					})
				}
			}
		}
	}
}

// TestElementwiseKernelTailsAndOptions runs the cuts the matrix does not
// reach: short tails spread over the partitions in column pieces (fewer
// than 128 rows, or a few rows after whole blocks), whole rows packed
// several to a partition, and the options set by hand (one buffer, small
// or row-packing free sizes).
func TestElementwiseKernelTailsAndOptions(t *testing.T) {
	shapes := [][2]int64{{3, 4096}, {44, 8192}, {100, 3000}, {200, 3000}, {1000, 256}, {129, 65536}, {640, 64}}
	opts := []kernels.ElementwiseOptions{{}, {Buffers: 1}, {Buffers: 2}, {Free: 64}, {Free: 1000}, {Free: 4096, Buffers: 3}}
	for _, preset := range []string{"trn1", "trn3"} {
		for _, dt := range []isa.DType{isa.BF16, isa.FP32} {
			for _, sh := range shapes {
				for oi, o := range opts {
					for _, op := range []elementwiseOp{elementwiseOps[0], elementwiseOps[4], elementwiseOps[6]} {
						e := op.e
						e.Rows, e.Cols, e.DType = sh[0], sh[1], dt
						o := o
						o.OpID = 2
						t.Run(fmt.Sprintf("%s/%s/%dx%d/opts%d/%s", preset, dt, sh[0], sh[1], oi, op.name), func(t *testing.T) {
							t.Parallel()
							r := runElementwiseWith(t, preset, e, o)
							ch := r.res.Chips[0]
							out := e.Rows * e.Cols * int64(dt.Bytes())
							assert.Equal(t, out, ch.HBMWriteBytes, "OUT is written once")
							assert.Equal(t, r.bytes-out, ch.HBMReadBytes, "every input is read once")
							assert.GreaterOrEqual(t, r.res.SimTime.Nanoseconds(), r.boundNs)
						})
					}
				}
			}
		}
	}
}

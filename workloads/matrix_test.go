package workloads

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
)

// The supported matrix, race check on: every preset, input dtype and A
// layout, at a shape whose blocks do not divide it and that has several
// blocks in every dimension, in both loop orders. Every run must finish
// with no race, compute every FLOP once and write C exactly once.
func TestGEMMMatrixIsRaceFree(t *testing.T) {
	shape := []string{"workload.gemm.m=320", "workload.gemm.k=448", "workload.gemm.n=1100",
		"workload.lowering.block_m=256", "workload.lowering.block_k=256", "workload.lowering.block_n=512", "workload.lowering.tile_n=256"}
	for _, preset := range configs.PresetNames() {
		for _, dt := range []string{"bf16", "fp16", "fp32", "tf32", "fp8e4"} {
			for _, layout := range []string{"km", "mk"} {
				for _, order := range []string{"nkm", "nmk"} {
					name := fmt.Sprintf("%s/%s/%s/%s", preset, dt, layout, order)
					t.Run(name, func(t *testing.T) {
						sets := append([]string{"hardware.preset=" + preset, "workload.gemm.dtype=" + dt,
							"workload.gemm.a_layout=" + layout, "workload.lowering.loop_order=" + order}, shape...)
						checkGEMM(t, sets)
					})
				}
			}
		}
	}
}

// checkGEMM runs a GEMM config with the race check on and checks its
// arithmetic and output traffic.
func checkGEMM(t *testing.T, sets []string) {
	t.Helper()
	cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: sets})
	require.NoError(t, err)
	prog, info, err := Lower(cfg)
	require.NoError(t, err)
	res, err := chip.Run(cfg, prog, chip.Options{})
	require.NoError(t, err)
	core := res.Chips[0].Cores[0]
	assert.InDelta(t, info.FLOPs, core.Engines[isa.EngineTensor].FLOPs-transposeFLOPs(res), 1, "the matmuls cover C once")
	g := cfg.Workload.GEMM
	out, _ := isa.ParseDType(g.OutDType)
	assert.Equal(t, g.M*g.N*int64(out.Bytes()), res.Chips[0].HBMWriteBytes, "C is written once")
	assert.GreaterOrEqual(t, float64(res.SimTime)*1e-15*tensorPeak(cfg, info), info.FLOPs*0.999, "no faster than the TensorE peak")
	checkOps(t, res)
}

// checkOps checks the per-op figures against the run's: they cover every
// instruction, busy time, stall, HBM byte and FLOP exactly once, and the
// ops' shares of time add up to the simulated time.
func checkOps(t *testing.T, res *chip.Result) {
	t.Helper()
	require.NotEmpty(t, res.Ops)
	var instr int64
	var flops float64
	var read, write int64
	var share clock.Time
	var busy [isa.NumEngines]clock.Time
	var stall clock.Time
	for _, o := range res.Ops {
		instr += o.Instructions
		flops += o.FLOPs
		read += o.HBMReadBytes
		write += o.HBMWriteBytes
		share += o.Time
		assert.LessOrEqual(t, o.DMABusy, res.SimTime, "op %d DMA busy", o.ID)
		assert.LessOrEqual(t, o.End, res.SimTime, "op %d ends in the run", o.ID)
		for e := range busy {
			busy[e] += o.Busy[e]
			for _, st := range o.Stall[e] {
				stall += st
			}
		}
	}
	var runBusy [isa.NumEngines]clock.Time
	var runStall clock.Time
	var runFLOPs float64
	var runRead, runWrite int64
	for _, ch := range res.Chips {
		runRead += ch.HBMReadBytes
		runWrite += ch.HBMWriteBytes
		for _, c := range ch.Cores {
			for e, er := range c.Engines {
				runBusy[e] += er.Busy
				runFLOPs += er.FLOPs
				for _, st := range er.Stall {
					runStall += st
				}
			}
		}
	}
	assert.Equal(t, res.Instructions, instr, "every instruction belongs to one op")
	assert.InDelta(t, runFLOPs, flops, 1, "FLOPs")
	assert.Equal(t, runRead, read, "HBM bytes read")
	assert.Equal(t, runWrite, write, "HBM bytes written")
	assert.Equal(t, res.SimTime, share, "the ops' shares of time")
	assert.Equal(t, runStall, stall, "stall time")
	for e := range busy {
		// One op per engine interval: an engine's busy time is the sum of
		// its ops' (TensorE's paths may overlap across ops, never above).
		if isa.Engine(e) == isa.EngineTensor {
			assert.GreaterOrEqual(t, busy[e], runBusy[e], "%s busy", isa.Engine(e))
		} else {
			assert.Equal(t, runBusy[e], busy[e], "%s busy", isa.Engine(e))
		}
	}
}

// tensorPeak is one core's TensorE peak for the lowered workload's
// matmuls: FP8 double row does twice the FLOPs of the dtype's normal rate.
func tensorPeak(cfg *configs.RunConfig, info *Info) float64 {
	if contains(info.Notes, "matmuls in FP8 double-row mode") {
		rate, _ := cfg.Hardware.MatmulRate(info.DType, 2)
		return cfg.Hardware.PeakBaseFLOPSPerCore() * rate
	}
	return cfg.Hardware.PeakFLOPSPerCore(info.DType)
}

// transposeFLOPs is what TensorE transposes count as FLOPs (none: they are
// not multiply_moving instructions).
func transposeFLOPs(*chip.Result) float64 { return 0 }

// The long matrix (outside CI: TRNSIM_LONG=1): the same 80 configurations
// at 4096^3 and 3000x5000x2500 with the automatic plan; docs/validation.md
// records the result.
func TestGEMMMatrixLong(t *testing.T) {
	if os.Getenv("TRNSIM_LONG") == "" {
		t.Skip("set TRNSIM_LONG=1 to run the 80 configurations at full size")
	}
	shapes := [][]string{{"workload.gemm.m=4096", "workload.gemm.k=4096", "workload.gemm.n=4096"},
		{"workload.gemm.m=3000", "workload.gemm.k=5000", "workload.gemm.n=2500"}}
	for _, shape := range shapes {
		for _, preset := range configs.PresetNames() {
			for _, dt := range []string{"bf16", "fp16", "fp32", "tf32", "fp8e4"} {
				for _, layout := range []string{"km", "mk"} {
					name := fmt.Sprintf("%s/%s/%s/%s", shape[0][len("workload.gemm.m="):]+"x"+shape[1][len("workload.gemm.k="):]+"x"+shape[2][len("workload.gemm.n="):], preset, dt, layout)
					t.Run(name, func(t *testing.T) {
						checkGEMM(t, append([]string{"hardware.preset=" + preset, "workload.gemm.dtype=" + dt, "workload.gemm.a_layout=" + layout}, shape...))
					})
				}
			}
		}
	}
}

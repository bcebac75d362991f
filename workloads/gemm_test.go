package workloads

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/engines"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/kernels"
)

func gemmConfig(t *testing.T, sets ...string) *configs.RunConfig {
	t.Helper()
	cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: sets})
	require.NoError(t, err)
	return cfg
}

func simulate(t *testing.T, cfg *configs.RunConfig) (*chip.Result, *Info) {
	t.Helper()
	prog, info, err := Lower(cfg)
	require.NoError(t, err)
	res, err := chip.Run(cfg, prog, chip.Options{})
	require.NoError(t, err)
	return res, info
}

func TestDoubleBufferingBeatsSingleOnDMAHeavyGEMM(t *testing.T) {
	// M = 128 makes the GEMM DMA-bound: 32 MiB of B for 4.3 GFLOP.
	sets := []string{"workload.gemm.m=128", "workload.gemm.k=4096", "workload.gemm.n=4096", "workload.lowering.block_k=512"}
	single, _ := simulate(t, gemmConfig(t, append(sets, "workload.lowering.buffers=1")...))
	double, _ := simulate(t, gemmConfig(t, append(sets, "workload.lowering.buffers=2")...))
	t.Logf("single %s, double %s", single.SimTime, double.SimTime)
	assert.Less(t, float64(double.SimTime), 0.85*float64(single.SimTime), "double buffering overlaps loads with compute")
}

func TestGEMMComputesEveryFLOPOnce(t *testing.T) {
	cases := []struct {
		name string
		sets []string
	}{
		{"even", []string{"workload.gemm.m=512", "workload.gemm.k=1024", "workload.gemm.n=1024"}},
		{"ragged", []string{"workload.gemm.m=200", "workload.gemm.k=300", "workload.gemm.n=700"}},
		{"mk layout", []string{"workload.gemm.m=256", "workload.gemm.k=384", "workload.gemm.n=512", "workload.gemm.a_layout=mk"}},
		{"fp32 on trn1", []string{"hardware.preset=trn1", "workload.gemm.m=256", "workload.gemm.k=256", "workload.gemm.n=512", "workload.gemm.dtype=fp32"}},
		{"k in one block, scalar evacuation", []string{"workload.gemm.m=256", "workload.gemm.k=256", "workload.gemm.n=1024", "workload.lowering.evacuate=alternate"}},
		{"single PSUM group", []string{"workload.gemm.m=256", "workload.gemm.k=512", "workload.gemm.n=2048", "workload.lowering.psum_banks=4"}},
		{"batched", []string{"workload.gemm.batch=3", "workload.gemm.m=200", "workload.gemm.k=64", "workload.gemm.n=700"}},
		{"batched, mk layout, several K blocks", []string{"workload.gemm.batch=2", "workload.gemm.m=256", "workload.gemm.k=640", "workload.gemm.n=512",
			"workload.gemm.a_layout=mk", "workload.lowering.block_k=256"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, info := simulate(t, gemmConfig(t, tc.sets...))
			core := res.Chips[0].Cores[0]
			assert.InDelta(t, info.FLOPs, core.Engines[isa.EngineTensor].FLOPs, 1, "the matmuls cover C exactly once")
			// A, B read at least once and C written exactly once.
			assert.GreaterOrEqual(t, res.Chips[0].HBMReadBytes, info.MinHBMBytes-int64(core.DMA.Bytes)+core.DMA.Bytes-res.Chips[0].HBMWriteBytes)
			g := gemmConfig(t, tc.sets...).Workload.GEMM
			out, _ := isa.ParseDType(g.OutDType)
			assert.Equal(t, max(g.Batch, 1)*g.M*g.N*int64(out.Bytes()), res.Chips[0].HBMWriteBytes)
		})
	}
}

func TestLoweringErrorsNameTheField(t *testing.T) {
	cases := []struct {
		sets []string
		want string
	}{
		{[]string{"workload.lowering.tile_n=1024"}, "--set workload.lowering.tile_n=1024: 1024 exceeds the moving free size limit of 512"},
		{[]string{"workload.lowering.block_m=100"}, "workload.lowering.block_m"},
		{[]string{"workload.lowering.block_m=4096", "workload.lowering.block_n=2048", "workload.lowering.block_k=2048"}, "more than SBUF's 224.0 KiB"},
		{[]string{"workload.lowering.psum_banks=9"}, "--set workload.lowering.psum_banks=9: 9 exceeds the 8 PSUM banks"},
		{[]string{"workload.lowering.evacuate=scalar", "workload.lowering.block_k=512"}, "--set workload.lowering.evacuate=scalar: scalar evacuation needs K in one block"},
		{[]string{"workload.lowering.matmul_mode=double_row"}, "--set workload.lowering.matmul_mode=double_row: double_row takes fp8e4 or fp8e5 inputs, not bf16"},
		{[]string{"workload.gemm.k=16384", "workload.lowering.evacuate=scalar"}, "--set workload.lowering.evacuate=scalar: scalar evacuation needs K in one block, and no K block of 16384 fits SBUF"},
		{[]string{"workload.gemm.a_layout=mk", "workload.lowering.psum_banks=1", "workload.lowering.transpose=tensor"}, "--set workload.lowering.psum_banks=1: TensorE transposes need a PSUM bank besides the accumulation groups"},
		{[]string{"hardware.preset=trn1", "workload.gemm.dtype=fp8e4", "workload.lowering.matmul_mode=double_row"}, "--set workload.lowering.matmul_mode=double_row: double_row needs FP8 double-row mode, which this hardware does not have"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			_, _, err := Lower(gemmConfig(t, tc.sets...))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestMatmulModeIsChecked(t *testing.T) {
	_, err := configs.LoadDefault(configs.LoadOptions{Sets: []string{"workload.lowering.matmul_mode=fast"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--set workload.lowering.matmul_mode=fast: must be normal, double_row or auto")
}

func TestElementwiseLowering(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
	}{
		{"gelu on scalar", "workload: {kind: elementwise, elementwise: {op: gelu, rows: 1024, cols: 4096, dtype: bf16}}"},
		{"add on vector", "workload: {kind: elementwise, elementwise: {op: add, rows: 300, cols: 1000, dtype: fp32}}"},
		{"copy on gpsimd, trn1", "workload: {kind: elementwise, elementwise: {op: copy, rows: 256, cols: 2048, dtype: bf16, engine: gpsimd}}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			preset := "trn2"
			if tc.name == "copy on gpsimd, trn1" {
				preset = "trn1"
			}
			cfg, err := configs.LoadBytes([]byte("hardware: {preset: "+preset+"}\n"+tc.yaml+"\n"), "t.yaml", configs.LoadOptions{})
			require.NoError(t, err)
			res, info := simulate(t, cfg)
			assert.Greater(t, res.SimTime.Seconds(), 0.0)
			e := cfg.Workload.Elementwise
			dt, _ := isa.ParseDType(e.DType)
			assert.Equal(t, e.Rows*e.Cols*int64(dt.Bytes()), res.Chips[0].HBMWriteBytes)
			assert.Equal(t, info.MinHBMBytes-res.Chips[0].HBMWriteBytes, res.Chips[0].HBMReadBytes)
		})
	}
}

// The matmul mode on every preset and input dtype: double row where the
// hardware has it (trn2) for fp8e4 and fp8e5, normal everywhere else, and
// every double-row matmul contracts two K tiles.
func TestMatmulModeFollowsHardwareAndDType(t *testing.T) {
	for _, preset := range configs.PresetNames() {
		for _, dt := range []string{"bf16", "fp8e4", "fp8e5", "fp8e3"} {
			t.Run(preset+"/"+dt, func(t *testing.T) {
				cfg := gemmConfig(t, "hardware.preset="+preset, "workload.gemm.dtype="+dt,
					"workload.gemm.m=256", "workload.gemm.k=640", "workload.gemm.n=512")
				res, info := simulate(t, cfg)
				want := cfg.Hardware.Core.Tensor.FP8DoubleRow && (dt == "fp8e4" || dt == "fp8e5")
				assert.Equal(t, want, contains(info.Notes, "matmuls in FP8 double-row mode"))
				tensor := res.Chips[0].Cores[0].Engines[isa.EngineTensor]
				var dr float64
				for cl, f := range tensor.MatmulFLOPs {
					if engines.MatmulClass(cl).PerfMode() == 2 {
						dr += f
					}
				}
				assert.InDelta(t, info.FLOPs, tensor.FLOPs, 1, "every FLOP once")
				if want {
					// K = 640 is two pairs of K tiles and one tile alone.
					assert.InDelta(t, info.FLOPs*4/5, dr, 1, "four of five K tiles in double row")
				} else {
					assert.Zero(t, dr)
				}
			})
		}
	}
}

// FP8 on trn2 at 8192^3 with the automatic plan: at least 1.7x the BF16
// throughput (the double-row rate is 2x; simulated time, not host time).
func TestFP8DoubleRowThroughput(t *testing.T) {
	if testing.Short() {
		t.Skip("two 8192^3 GEMMs")
	}
	shape := []string{"workload.gemm.m=8192", "workload.gemm.k=8192", "workload.gemm.n=8192"}
	bf16, _ := simulate(t, gemmConfig(t, append(shape, "workload.gemm.dtype=bf16")...))
	fp8, _ := simulate(t, gemmConfig(t, append(shape, "workload.gemm.dtype=fp8e4")...))
	ratio := float64(bf16.SimTime) / float64(fp8.SimTime)
	t.Logf("fp8e4 %s, bf16 %s: %.2fx", fp8.SimTime, bf16.SimTime, ratio)
	assert.GreaterOrEqual(t, ratio, 1.7)
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// The automatic plan fits what the scheduler places, on every preset,
// dtype and layout, at shapes where a smaller K block needs more SBUF than
// a bigger one (K in several blocks accumulates in the partial-sum dtype).
func TestAutomaticPlanLowers(t *testing.T) {
	shapes := [][]string{
		{"workload.gemm.m=2048", "workload.gemm.k=4096", "workload.gemm.n=4096"},
		{"workload.gemm.m=3000", "workload.gemm.k=5000", "workload.gemm.n=7000"},
		{"workload.gemm.m=1", "workload.gemm.k=8192", "workload.gemm.n=8192"},
		{"workload.gemm.m=8192", "workload.gemm.k=8192", "workload.gemm.n=8192"},
	}
	for _, preset := range configs.PresetNames() {
		for _, dt := range []string{"bf16", "fp16", "fp32", "tf32", "fp8e4"} {
			for _, layout := range []string{"km", "mk"} {
				for _, shape := range shapes {
					sets := append([]string{"hardware.preset=" + preset, "workload.gemm.dtype=" + dt, "workload.gemm.a_layout=" + layout}, shape...)
					_, _, err := Lower(gemmConfig(t, sets...))
					assert.NoError(t, err, "%v", sets)
				}
			}
		}
	}
}

// With one PSUM bank, automatic transposes of A [M, K] are DMA transposes:
// TensorE transposes would need a bank of their own.
func TestAutomaticTransposesKeepTheirBank(t *testing.T) {
	for _, banks := range []string{"1", "2", "8"} {
		cfg := gemmConfig(t, "workload.gemm.a_layout=mk", "workload.gemm.m=128", "workload.gemm.k=1024", "workload.gemm.n=512",
			"workload.lowering.psum_banks="+banks)
		plan, err := GEMMPlan(cfg)
		require.NoError(t, err)
		if plan.Transpose == kernels.TransposeTensor {
			assert.LessOrEqual(t, plan.Groups*plan.GroupBanks, plan.Banks-1, "psum_banks=%s: a bank is left for the transposes", banks)
		}
		if banks == "1" {
			assert.Equal(t, kernels.TransposeDMA, plan.Transpose)
		}
		_, _, err = Lower(cfg)
		require.NoError(t, err)
	}
}

// On trn3 an engine's DMA queues share a QoS class, so equal shares of
// two queues are served side by side and finish together: a DMA engine's
// busy period then counts once (it was counted per share, and this GEMM
// failed with "DMA engine 0 active ... above 100%").
func TestDMAActiveOnceWhenSharesFinishTogether(t *testing.T) {
	l := "workload.lowering."
	cfg := gemmConfig(t, "hardware.preset=trn3", "workload.gemm.m=2048", "workload.gemm.k=2048", "workload.gemm.n=2048",
		l+"loop_order=nmk", l+"accumulate_dtype=fp32", l+"evacuate=vector", l+"buffers=2", l+"block_m=128", l+"block_n=512", l+"block_k=2048")
	res, _ := simulate(t, cfg)
	for i, es := range res.Chips[0].Cores[0].DMA.Engines {
		assert.LessOrEqual(t, es.Active, res.SimTime, "DMA engine %d", i)
	}
}

package report_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/dma"
	"github.com/trnsim/trnsim/engines"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/report"
	"github.com/trnsim/trnsim/runner"
	"github.com/trnsim/trnsim/workloads"
)

const us = clock.Time(1_000_000_000) // 1 µs in femtoseconds

func trn2(t *testing.T, sets ...string) *configs.RunConfig {
	t.Helper()
	cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: sets})
	require.NoError(t, err)
	return cfg
}

// oneCore is a plausible result of one core over 10 µs: TensorE busy 8 µs
// doing BF16 matmuls at 75% of the peak, ScalarE with no instructions.
func oneCore(cfg *configs.RunConfig) *chip.Result {
	base := cfg.Hardware.PeakBaseFLOPSPerCore()
	res := &chip.Result{SimTime: 10 * us}
	c := chip.CoreResult{PeakSBUFBytes: 1024, PeakPSUMBytes: 2048,
		DMA: dma.Stats{Engines: make([]dma.EngineStats, 16)}}
	for e := range c.Engines {
		c.Engines[e].Engine = isa.Engine(e)
		c.Engines[e].Idle = 10 * us // (no instructions: idle all the time)
	}
	tensor := &c.Engines[isa.EngineTensor]
	tensor.Instructions, tensor.Busy, tensor.LastEnd, tensor.Idle = 100, 8*us, 9*us, 1*us
	tensor.Stall[engines.StallSemaphore] = 1 * us
	flops := 0.75 * base * (10 * us).Seconds()
	tensor.FLOPs = flops
	tensor.MatmulFLOPs[engines.ClassOf(isa.BF16, 0)] = flops
	vector := &c.Engines[isa.EngineVector]
	vector.Instructions, vector.Busy, vector.LastEnd, vector.Idle = 10, 2*us, 10*us, 0
	vector.Stall[engines.StallSemaphore] = 7 * us
	for i := range c.DMA.Engines {
		c.DMA.Engines[i].Active = 5 * us
	}
	res.Chips = []chip.ChipResult{{Cores: []chip.CoreResult{c}}}
	return res
}

func info() *workloads.Info {
	return &workloads.Info{Name: "w", Kind: "gemm", DType: isa.BF16, Shape: []workloads.Dim{{Name: "m", Size: 128}, {Name: "k", Size: 256}, {Name: "n", Size: 512}}}
}

func TestBuildIdleIsNotAStall(t *testing.T) {
	cfg := trn2(t)
	r, err := report.Build(cfg, info(), oneCore(cfg), "test")
	require.NoError(t, err)
	e := r.Engines
	assert.InDelta(t, 1e-6, e["tensor"].IdleS, 1e-15, "after its last instruction completed")
	assert.InDelta(t, 10.0, e["tensor"].IdlePct, 1e-9)
	assert.Zero(t, e["vector"].IdleS, "vector works until the end")
	for _, name := range []string{"scalar", "gpsimd", "sync"} {
		assert.InDelta(t, 100.0, e[name].IdlePct, 1e-9, "%s has no instructions: idle all the time", name)
		assert.Empty(t, e[name].StallS, "%s has no instructions: never stalled", name)
	}
	// Only real stalls are ranked: no engine without work appears.
	require.Len(t, r.Stalls, 2)
	assert.Equal(t, "vector", r.Stalls[0].Engine)
	assert.Equal(t, "tensor", r.Stalls[1].Engine)
	assert.InDelta(t, 75.0, r.PeakPct, 1e-9)

	// The summary says what busy means, and shows idle apart.
	var sum bytes.Buffer
	r.WriteSummary(&sum)
	out := sum.String()
	assert.Contains(t, out, "engine busy        tensor 80.0%  vector 20.0%  scalar 0.0%  gpsimd 0.0%  sync 0.0%\n")
	assert.Contains(t, out, "(issuing instructions; semaphore waits are not busy, as in Neuron Explorer's active time)")
	assert.Contains(t, out, "engine idle        tensor 10.0%  vector 0.0%  scalar 100.0%  gpsimd 100.0%  sync 100.0%\n")
	assert.Contains(t, out, "top stalls         vector  semaphore       7.000 us (70.0%)  [busy 20.0%, 10 instructions]\n")
	assert.NotContains(t, out, "scalar  semaphore")
}

// Every utilisation the report prints is at most 100%, or the run fails
// with an internal error naming what exceeded.
func TestBuildRejectsUtilisationAbove100(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(cfg *configs.RunConfig, r *chip.Result)
		want   string
	}{
		{"engine busy", func(_ *configs.RunConfig, r *chip.Result) {
			r.Chips[0].Cores[0].Engines[isa.EngineVector].Busy = 11 * us
		}, "internal error: chip 0 core 0 vector busy 11.000 us is 110.0% of the simulated time 10.000 us, above 100%"},
		{"DMA engine active", func(_ *configs.RunConfig, r *chip.Result) {
			r.Chips[0].Cores[0].DMA.Engines[3].Active = 12 * us
		}, "internal error: chip 0 core 0 DMA engine 3 active 12.000 us is 120.0% of the simulated time 10.000 us, above 100%"},
		{"SBUF peak", func(cfg *configs.RunConfig, r *chip.Result) {
			r.Chips[0].Cores[0].PeakSBUFBytes = cfg.Hardware.SBUFBytesPerPartition() + 1
		}, "internal error: chip 0 core 0 SBUF peak 229377 bytes per partition is 100.0% of its 229376, above 100%"},
		{"PSUM peak", func(cfg *configs.RunConfig, r *chip.Result) {
			r.Chips[0].Cores[0].PeakPSUMBytes = 2 * cfg.Hardware.PSUMBytesPerPartition()
		}, "internal error: chip 0 core 0 PSUM peak 32768 bytes per partition is 200.0% of its 16384, above 100%"},
		{"HFU: matmuls faster than their peak", func(cfg *configs.RunConfig, r *chip.Result) {
			tensor := &r.Chips[0].Cores[0].Engines[isa.EngineTensor]
			f := 1.5 * cfg.Hardware.PeakBaseFLOPSPerCore() * (10 * us).Seconds()
			tensor.FLOPs = f
			tensor.MatmulFLOPs[engines.ClassOf(isa.BF16, 0)] = f
		}, "internal error: chip 0 core 0 TensorE did 1.18e+09 FLOPs of bf16 at x1 in 8.000 us busy, 187.5% of what the peak 128x128 PE x 2 FLOP x 2.4 GHz x 1 (bf16) allows: that mode costs less than its peak rate (a hardware.costs override can do this; otherwise it is a trnsim bug)"},
		{"HFU: a mode the hardware has no peak for", func(_ *configs.RunConfig, r *chip.Result) {
			tensor := &r.Chips[0].Cores[0].Engines[isa.EngineTensor]
			tensor.MatmulFLOPs[engines.ClassOf(isa.FP8E3, 2)] = 1
		}, "internal error: chip 0 core 0 TensorE ran fp8e3 double row (perf=2) matmuls, which have no peak rate on trn2 (the instruction checks should have rejected them)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := trn2(t)
			res := oneCore(cfg)
			_, err := report.Build(cfg, info(), res, "test")
			require.NoError(t, err, "the unbroken result is fine")
			tc.break_(cfg, res)
			_, err = report.Build(cfg, info(), res, "test")
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

// matmulKernel returns an assembly kernel on trn2 that keeps TensorE busy:
// its tiles are loaded once, then reps matmuls of each mode run back to back
// (perf=0 on bf16 tiles, perf=2 on fp8e4 tiles), each into its own PSUM bank.
func matmulKernel(bf16Reps, fp8Reps int) string {
	var b strings.Builder
	b.WriteString(`.version 1
.target trn2
.buffer w16 sbuf bf16 [128, 128]
.buffer x16 sbuf bf16 [128, 512]
.buffer w8 sbuf fp8e4 [128, 256]
.buffer x8 sbuf fp8e4 [128, 1024]
.buffer p16 psum fp32 [128, 512]
.buffer p8 psum fp32 [128, 512] offset=2048
vector memset w16 value=0 signal=s1
vector memset x16 value=0 signal=s1
vector memset w8 value=0 signal=s1
vector memset x8 value=0 signal=s1
`)
	wait := " wait=s1>=4"
	for i := 0; i < bf16Reps; i++ {
		fmt.Fprintf(&b, "tensor matmul p16, w16, x16 start stop%s\n", wait)
		wait = ""
	}
	for i := 0; i < fp8Reps; i++ {
		fmt.Fprintf(&b, "tensor matmul p8, w8, x8 start stop perf=2%s\n", wait)
		wait = ""
	}
	return b.String()
}

func runKernel(t *testing.T, src string) *report.Report {
	t.Helper()
	yaml := "hardware: {preset: trn2}\nworkload:\n  kind: assembly\n  assembly:\n    source: |\n"
	for _, l := range strings.Split(strings.TrimSpace(src), "\n") {
		yaml += "      " + l + "\n"
	}
	cfg, err := configs.LoadBytes([]byte(yaml), "kernel.yaml", configs.LoadOptions{})
	require.NoError(t, err)
	out, err := runner.Run(cfg, runner.Options{})
	require.NoError(t, err)
	return out.Report
}

// A double-row FP8 kernel is measured against the double-row peak (2x
// BF16 on NC-v3), not the BF16 one: its HFU is at most 100% (it was 180%
// when every kernel was measured against BF16), and it is the time its
// FLOPs take at that peak over the simulated time.
func TestHFUFollowsTheMatmulMode(t *testing.T) {
	cfg := trn2(t)
	base := cfg.Hardware.PeakBaseFLOPSPerCore()
	perMM16 := 2.0 * 128 * 128 * 512
	perMM8 := 2 * perMM16 // two K rows per PE row
	cases := []struct {
		name        string
		bf16, fp8   int
		wantPeakTF  float64
		wantFormula string
		wantSeconds func(sim float64) float64 // time at peak
		wantAtLeast float64                   // HFU, % (the fitted fixed cost per multiply caps 512 columns at 512/588 = 87%)
	}{
		{"double-row fp8", 0, 64, 2 * base / 1e12, "128x128 PE x 2 FLOP x 2.4 GHz x 2 (fp8e4 double row (perf=2)) x 1 core(s) = 157.29 TFLOPS",
			func(float64) float64 { return 64 * perMM8 / (2 * base) }, 70},
		{"bf16", 64, 0, base / 1e12, "128x128 PE x 2 FLOP x 2.4 GHz x 1 (bf16) x 1 core(s) = 78.64 TFLOPS",
			func(float64) float64 { return 64 * perMM16 / base }, 70},
		// Equal counts: fp8 does 2/3 of the FLOPs at twice the rate, so the
		// weighted rate is 1 / (1/3 + (2/3)/2) = 1.5.
		{"mixed, FLOPs-weighted", 32, 32, 1.5 * base / 1e12,
			"128x128 PE x 2 FLOP x 2.4 GHz x 1.5 (FLOPs-weighted: 33.3% bf16 at x1, 66.7% fp8e4 double row (perf=2) at x2) x 1 core(s) = 117.96 TFLOPS",
			func(float64) float64 { return 32*perMM16/base + 32*perMM8/(2*base) }, 70},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runKernel(t, matmulKernel(tc.bf16, tc.fp8))
			assert.InDelta(t, tc.wantPeakTF, r.PeakTFLOPS, 1e-9*tc.wantPeakTF)
			assert.Equal(t, tc.wantFormula, r.PeakFormula)
			want := 100 * tc.wantSeconds(r.SimulatedTimeS) / r.SimulatedTimeS
			assert.InDelta(t, want, r.PeakPct, 1e-9)
			assert.LessOrEqual(t, r.PeakPct, 100.0)
			assert.GreaterOrEqual(t, r.PeakPct, tc.wantAtLeast, "TensorE is kept busy")
			assert.InDelta(t, r.PeakPct, 100*r.TFLOPS/r.PeakTFLOPS, 1e-9)
		})
	}
}

// The workload's shape and dtype are in the report, and its name never
// describes a shape that was not run.
func TestBuildWorkloadShapeAndName(t *testing.T) {
	named := "hardware: {preset: trn2}\nworkload: {kind: gemm, name: file-name, gemm: {m: 2048, k: 4096, n: 4096}}\n"
	cases := []struct {
		name      string
		yaml      string
		sets      []string
		wantName  string
		wantShape string
		wantDType string
	}{
		{"default: the name follows the shape", configs.DefaultConfigYAML(), nil, "gemm 2048x4096x4096 bf16", `{"m":2048,"k":4096,"n":4096}`, "bf16"},
		{"--set changes the shape of the default", configs.DefaultConfigYAML(), []string{"workload.gemm.m=256", "workload.gemm.dtype=fp16"}, "gemm 256x4096x4096 fp16", `{"m":256,"k":4096,"n":4096}`, "fp16"},
		{"a name from the file", named, nil, "file-name", `{"m":2048,"k":4096,"n":4096}`, "bf16"},
		{"a name from the file, shape changed by --set", named, []string{"workload.gemm.m=256", "workload.lowering.tile_n=256", "workload.gemm.dtype=fp8e4"}, "file-name with m=256 dtype=fp8e4", `{"m":256,"k":4096,"n":4096}`, "fp8e4"},
		{"a name given by --set is taken as is", named, []string{"workload.name=mine", "workload.gemm.m=256"}, "mine", `{"m":256,"k":4096,"n":4096}`, "bf16"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := configs.LoadBytes([]byte(tc.yaml), "test.yaml", configs.LoadOptions{Sets: tc.sets})
			require.NoError(t, err)
			_, in, err := workloads.Lower(cfg)
			require.NoError(t, err)
			r, err := report.Build(cfg, in, oneCore(cfg), "test")
			require.NoError(t, err)
			assert.Equal(t, tc.wantName, r.Workload)
			var buf bytes.Buffer
			require.NoError(t, r.WriteJSON(&buf))
			var m map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(buf.Bytes(), &m))
			shape := string(m["workload_shape"])
			assert.JSONEq(t, tc.wantShape, shape)
			assert.Less(t, strings.Index(shape, `"m"`), strings.Index(shape, `"k"`), "keys keep the shape's order")
			assert.Less(t, strings.Index(shape, `"k"`), strings.Index(shape, `"n"`), "keys keep the shape's order")
			assert.Equal(t, `"`+tc.wantDType+`"`, string(m["workload_dtype"]))
			var back report.Report
			require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
			assert.Equal(t, r.WorkloadShape, back.WorkloadShape, "the shape reads back")
			var sum bytes.Buffer
			r.WriteSummary(&sum)
			assert.Contains(t, sum.String(), "trnsim test: "+tc.wantName+" on trn2")
			assert.Contains(t, sum.String(), "workload           gemm "+report.Shape(in.Shape).String()+" "+tc.wantDType+"\n")
		})
	}
}

// examples/kernel-matmul-fp8.asm, the hand-written double-row kernel, is
// measured against the double-row peak.
func TestFP8ExampleKernel(t *testing.T) {
	cfg, err := runner.ConfigForAssembly("../examples/kernel-matmul-fp8.asm", "", nil)
	require.NoError(t, err)
	out, err := runner.Run(cfg, runner.Options{})
	require.NoError(t, err)
	r := out.Report
	base := cfg.Hardware.PeakBaseFLOPSPerCore()
	require.Len(t, r.PeakClasses, 1)
	assert.Equal(t, report.PeakClass{DType: "fp8e4", PerfMode: 2, Mode: "double_row", FLOPs: 4 * 2 * 256 * 128 * 512,
		Rate: 2, PeakTFLOPSPerCore: 2 * base / 1e12, TimeAtPeakS: 4 * 2 * 256 * 128 * 512 / (2 * base)}, r.PeakClasses[0])
	assert.InDelta(t, 100*r.FLOPs/(2*base)/r.SimulatedTimeS, r.PeakPct, 1e-9)
	assert.LessOrEqual(t, r.PeakPct, 100.0)
}

// results.json's ops: one per workload op, with the fields the model
// reports and the GPU comparison read, and shares that add up to the run.
func TestOpsInResults(t *testing.T) {
	cfg := trn2(t, "workload.gemm.m=512", "workload.gemm.k=1024", "workload.gemm.n=1024")
	out, err := runner.Run(cfg, runner.Options{})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, out.Report.WriteJSON(&buf))
	var m struct {
		SimulatedTimeS float64                      `json:"simulated_time_s"`
		HBM            map[string]int64             `json:"hbm"`
		Ops            []map[string]json.RawMessage `json:"ops"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &m))
	require.Len(t, m.Ops, 1, "a GEMM is one op")
	op := m.Ops[0]
	for _, k := range []string{"id", "name", "kind", "flops", "hbm_bytes", "start_s", "end_s", "busy_s", "time_s", "top_stall", "stall_s"} {
		assert.Contains(t, op, k)
	}
	var back report.Report
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	assert.Equal(t, out.Report.Ops, back.Ops, "ops read back")
	o := out.Report.Ops[0]
	assert.Equal(t, "matmul", o.Name)
	assert.InDelta(t, m.SimulatedTimeS, o.TimeS, 1e-15)
	assert.Equal(t, m.HBM["read_bytes"]+m.HBM["write_bytes"], o.HBMBytes)
	assert.InDelta(t, 2*512*1024*1024.0, o.FLOPs, 1)
	assert.InDelta(t, out.Report.Engines["tensor"].BusyS, o.BusyS["tensor"], 1e-12, "one op: its TensorE busy is the run's")
	assert.Contains(t, o.BusyS, "dma")
	var sum bytes.Buffer
	out.Report.WriteSummary(&sum)
	assert.Contains(t, sum.String(), "top ops            matmul: ")
}

package zzdocscheck

import (
	"fmt"
	"os"
	"testing"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/isa/asm"
)

func checkAsm(t *testing.T, cfg *configs.RunConfig, file string) {
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := asm.Parse(string(src), file, asm.Options{PSUMBankBytes: cfg.Hardware.Limits().PSUMBankBytes()})
	if err != nil {
		t.Fatal(err)
	}
	lim := cfg.Hardware.Limits()
	for _, b := range prog.Buffers {
		if err := lim.CheckBuffer(b); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, s := range prog.Streams {
		st := s.Open()
		for {
			in, err := st.Next()
			if err != nil {
				t.Fatal(err)
			}
			if in == nil {
				break
			}
			n++
			if err := lim.Check(in); err != nil {
				t.Errorf("line %d: %v", in.Line, err)
			}
			fl := cfg.Cost.Flags(in)
			var env isa.CostEnv
			isa.FillEnv(in, &env)
			c := cfg.Cost.Cost(in, fl, &env)
			t.Logf("line %d %s %s: %+v", in.Line, in.Engine, in.Op, c)
		}
	}
	text, err := asm.String(prog)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d instructions; canonical:\n%s", n, text)
	prog2, err := asm.Parse(text, "canon", asm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	text2, _ := asm.String(prog2)
	if text2 != text {
		t.Errorf("round trip differs:\n%s", text2)
	}
}

func TestExamples(t *testing.T) {
	for _, f := range []string{"../examples/gemm-trn2.yaml", "../examples/assembly-run.yaml"} {
		cfg, err := configs.Load(f, configs.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %+v", f, cfg.Workload)
		for k, v := range cfg.Sources {
			if v.Note == "override" || v.File == f {
				t.Logf("  source %s = %s", k, v)
			}
		}
		for _, r := range cfg.Costs.Rules {
			if r.Engine == "vector" && r.Op == "tensor_copy" {
				t.Logf("  rule %+v", r)
			}
		}
		for _, c := range cfg.Costs.Constants {
			if c.Name == "VECTOR_PIPE_CYCLES" {
				t.Logf("  const %+v", c)
			}
		}
		if cfg.Workload.Kind == "assembly" {
			checkAsm(t, cfg, cfg.Workload.Assembly.File)
		}
	}
}

func TestInfo(t *testing.T) {
	t.Log(isa.FlagNames())
	t.Log(isa.DTypeNames())
	for _, op := range isa.AllOpcodes() {
		i := op.Info()
		t.Logf("%s engines=%v out=%d in=%d..%d dma=%v", i.Name, op.EnginesOf(), i.NumOut, i.MinIn, i.NumIn, i.IsDMA)
	}
	ps, err := configs.Presets()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		h := p.Hardware
		fmt.Printf("%s gen=%d cores=%d tclk=%v sbuf=%d hbm=%v x%v GiB bw=%v dmaeng=%v x%d chipdma=%v peakbf16/core=%.2f TF fp8=%.2f chip=%v ct=%s\n", p.Name, h.Generation, h.Chip.Cores, h.Core.Tensor.ClockGHz, h.Core.SBUF.PartitionKiB,
			h.Chip.HBM.Stacks, h.Chip.HBM.StackGiB, h.Chip.HBM.BandwidthGBps, h.Core.DMA.EngineBandwidthGBps, h.Core.DMA.Engines, h.Chip.DMABandwidthGBps, h.PeakFLOPSPerCore(isa.BF16)/1e12, h.PeakFLOPSPerCore(isa.FP8E4)/1e12, h.Chip.PeakBF16TFLOPS, h.CostTable)
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		yaml string
		sets []string
	}{
		{"hardware:\n  preset: trn2\n  core:\n    sbuf:\n      partition_kib: -3\nworkload:\n  kind: gemm\n  gemm: {m: 1, k: 1, n: 1}\n", nil},
		{"hardware:\n  preset: trn2\n  core:\n    sbuf:\n      partiton_kib: 3\n", nil},
		{"hardware:\n  preset: trn9\n", nil},
		{"hardware:\n  preset: trn2\nworkload:\n  kind: gemm\n  gemm: {m: 1, k: 1, n: 1}\n", []string{"hardware.core.dma.engines=5"}},
		{"hardware:\n  preset: trn2\n  costs:\n    vector:\n      tensor_copy:\n        x: {interval: \"max(Q, N)\"}\nworkload:\n  kind: gemm\n  gemm: {m: 1, k: 1, n: 1}\n", nil},
		{"hardware:\n  preset: trn2\n  costs:\n    constants:\n      MIN_II: {value: 32}\nworkload:\n  kind: gemm\n  gemm: {m: 1, k: 1, n: 1}\n", []string{"hardware.costs.vector.tensor_copy.fast.interval=N"}},
		{"hardware:\n  preset: trn2\nworkload:\n  kind: gemm\n  gemm: {m: 1, k: 1, n: 1}\nparallel:\n  dp: 2\n", nil},
		{"hardware:\n  preset: trn2\nworkload:\n  kind: gemm\n  gemm: {m: 1, k: 1, n: 1}\n", []string{"workload.gemm.m=4096", "hardware.preset=trn3", "hardware.costs.vector.tensor_copy.default.interval=N"}},
	}
	for i, c := range cases {
		cfg, err := configs.LoadBytes([]byte(c.yaml), fmt.Sprintf("case%d.yaml", i), configs.LoadOptions{Sets: c.sets})
		t.Logf("case %d: err=%v", i, err)
		if err == nil {
			t.Logf("  preset=%s m=%d", cfg.Hardware.Name, cfg.Workload.GEMM.M)
			for k, v := range cfg.Sources {
				if v.Note == "override" || v.File == "--set" {
					t.Logf("  source %s = %s", k, v)
				}
			}
			for _, c := range cfg.Costs.Constants {
				if c.Name == "MIN_II" {
					t.Logf("  const %+v", c)
				}
			}
			for _, r := range cfg.Costs.Rules {
				if r.Engine == "vector" && r.Op == "tensor_copy" {
					t.Logf("  rule %+v", r)
				}
			}
		}
	}
}

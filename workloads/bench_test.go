package workloads

import (
	"runtime/debug"
	"testing"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/internal/hostcpu"
)

// BenchmarkLoweredGEMM measures simulator speed, lowering included, on the
// embedded default GEMM and on K1's GEMM (trn1, 4096 x 8192 x 8192 BF16).
func BenchmarkLoweredGEMM(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	k1 := []string{"hardware.preset=trn1", "workload.gemm.m=4096", "workload.gemm.k=8192", "workload.gemm.n=8192",
		"workload.lowering.block_m=2048", "workload.lowering.block_n=1024", "workload.lowering.block_k=1024",
		"workload.lowering.loop_order=nkm", "workload.lowering.accumulate_dtype=bf16"}
	for _, tc := range []struct {
		name   string
		sets   []string
		noRace bool
	}{
		{"default", nil, false},
		{"K1", k1, false},
		{"default/no-race-check", nil, true},
		{"K1/no-race-check", k1, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: tc.sets})
			if err != nil {
				b.Fatal(err)
			}
			m := hostcpu.NewMeter()
			for i := 0; i < b.N; i++ {
				prog, _, err := Lower(cfg)
				if err != nil {
					b.Fatal(err)
				}
				res, err := chip.Run(cfg, prog, chip.Options{NoRaceCheck: tc.noRace})
				if err != nil {
					b.Fatal(err)
				}
				m.Add(res.Instructions, res.Events, res.HostTime)
			}
			m.Report(b)
		})
	}
}

// BenchmarkPlanGEMM is the plan search alone (the analytic estimate of
// every candidate), for the default GEMM with every lowering field
// automatic, K1 with the tutorial's blocks pinned, and 16384^3.
func BenchmarkPlanGEMM(b *testing.B) {
	for _, tc := range []struct {
		name string
		sets []string
	}{
		{"default", nil},
		{"K1", []string{"hardware.preset=trn1", "workload.gemm.m=4096", "workload.gemm.k=8192", "workload.gemm.n=8192",
			"workload.lowering.block_m=2048", "workload.lowering.block_n=1024", "workload.lowering.block_k=1024",
			"workload.lowering.loop_order=nkm", "workload.lowering.accumulate_dtype=bf16"}},
		{"16384", []string{"workload.gemm.m=16384", "workload.gemm.k=16384", "workload.gemm.n=16384"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: tc.sets})
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
				if _, err := GEMMPlan(cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkModel is issue 11's speed targets: one Llama-3-8B decoder
// layer, prefill at 8192 tokens, batch 1, BF16, on one trn2 core, lowered
// and simulated instruction by instruction (target: at most 1 s of host
// CPU); and one decode step of the whole Llama-3.2-1B at context 2048,
// every layer simulated and with layer reuse, and the 128 tokens from there
// with every layer and step simulated (target: at most 5 s).
//
//	go test ./workloads -run '^$' -bench Model -benchtime 1x
func BenchmarkModel(b *testing.B) {
	for _, tc := range []struct{ name, model, hw, par string }{
		{"llama-3-8b-layer-prefill-8192", "name: llama-3-8b, mode: prefill, seq: 8192, layers: 1", "", ""},
		{"llama-3.2-1b-decode-step-2048/exact", "name: llama-3.2-1b, mode: decode, context: 2048, exact: true", "", ""},
		{"llama-3.2-1b-decode-step-2048/reuse", "name: llama-3.2-1b, mode: decode, context: 2048", "", ""},
		// The 128-token target itself: every step simulated, one launch each.
		{"llama-3.2-1b-decode-128-from-2048/exact", "name: llama-3.2-1b, mode: decode, context: 2048, tokens: 128, exact: true", "", ""},
		// Issue 12's targets: one trn2 chip (TP8 at lnc 1) and a trn2.48xlarge.
		{"llama-3-8b-prefill-2048-trn2-tp8", "name: llama-3-8b, mode: prefill, seq: 2048", "{preset: trn2, chip: {lnc: 1}}", "{tp: 8}"},
		{"llama-3-70b-decode-trn2.48xlarge-tp64-lnc1", "name: llama-3-70b, mode: decode, batch: 8, context: 8191, tokens: 1", "{instance: trn2.48xlarge, chip: {lnc: 1}}", "{tp: 64}"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			hw, par := tc.hw, tc.par
			if hw == "" {
				hw = "{preset: trn2}"
			}
			if par == "" {
				par = "{}"
			}
			text := "hardware: " + hw + "\nworkload:\n  kind: model\n  model: {" + tc.model + "}\nparallel: " + par + "\n"
			cfg, err := configs.LoadBytes([]byte(text), "bench.yaml", configs.LoadOptions{})
			if err != nil {
				b.Fatal(err)
			}
			m := hostcpu.NewMeter()
			for i := 0; i < b.N; i++ {
				prog, info, err := Lower(cfg)
				if err != nil {
					b.Fatal(err)
				}
				res, err := chip.RunLaunches(cfg, chip.Launches{N: max(info.Launches, 1), First: prog, Next: info.Launch}, chip.Options{})
				if err != nil {
					b.Fatal(err)
				}
				m.Add(res.Instructions, res.Events, res.HostTime)
			}
			m.Report(b)
		})
	}
}

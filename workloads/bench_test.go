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

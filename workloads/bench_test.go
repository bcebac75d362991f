package workloads

import (
	"runtime/debug"
	"testing"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/configs"
)

// BenchmarkLoweredGEMM measures simulator speed, lowering included, on the
// embedded default GEMM and on K1's GEMM (trn1, 4096 x 8192 x 8192 BF16).
func BenchmarkLoweredGEMM(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	for _, tc := range []struct {
		name string
		sets []string
	}{
		{"default", nil},
		{"K1", []string{"hardware.preset=trn1", "workload.gemm.m=4096", "workload.gemm.k=8192", "workload.gemm.n=8192"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: tc.sets})
			if err != nil {
				b.Fatal(err)
			}
			var instr, events int64
			var host float64
			for i := 0; i < b.N; i++ {
				prog, _, err := Lower(cfg)
				if err != nil {
					b.Fatal(err)
				}
				res, err := chip.Run(cfg, prog, chip.Options{})
				if err != nil {
					b.Fatal(err)
				}
				instr += res.Instructions
				events += res.Events
				host += res.HostTime.Seconds()
			}
			b.ReportMetric(float64(instr)/host, "instr/s")
			b.ReportMetric(float64(events)/host, "events/s")
		})
	}
}

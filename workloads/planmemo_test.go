package workloads

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/internal/memo"
)

// The plan search's memo (kernels/planmemo.go) gives every plan the search
// gives alone: every preset, dtype, layout and awkward shape, at SBUF
// sizes and HBM bandwidths a sweep would try, one memo shared by all of
// them in two orders (SBUF varying fastest, then slowest), quantised
// weights included.
func TestPlanMemoGivesTheSamePlans(t *testing.T) {
	type point struct{ sets []string }
	var pts []point
	for _, preset := range []string{"trn1", "inf2", "trn2", "trn3"} {
		for _, shape := range [][3]int{{4096, 4096, 4096}, {3000, 5000, 2500}, {8, 4096, 14336}, {4096, 64, 4096}, {640, 2048, 4096}} {
			for _, dt := range []string{"bf16", "fp32", "fp8e4"} {
				for _, lay := range []string{"km", "mk"} {
					for _, bw := range []string{"", "1000"} {
						for _, sbuf := range []string{"", "96", "128", "176", "384"} {
							sets := []string{"hardware.preset=" + preset, fmt.Sprintf("workload.gemm.m=%d", shape[0]), fmt.Sprintf("workload.gemm.k=%d", shape[1]),
								fmt.Sprintf("workload.gemm.n=%d", shape[2]), "workload.gemm.dtype=" + dt, "workload.gemm.a_layout=" + lay}
							if sbuf != "" {
								sets = append(sets, "hardware.core.sbuf.partition_kib="+sbuf)
							}
							if bw != "" {
								sets = append(sets, "hardware.chip.hbm.bandwidth_gbps="+bw)
							}
							pts = append(pts, point{sets})
						}
					}
				}
			}
		}
	}
	for _, wdt := range []string{"int8", "fp8e4"} {
		for _, sbuf := range []string{"", "128", "384"} {
			pts = append(pts, point{[]string{"hardware.preset=trn2", "workload.gemm.m=16", "workload.gemm.k=4096", "workload.gemm.n=14336",
				"workload.gemm.weights_dtype=" + wdt, "hardware.core.sbuf.partition_kib=" + map[string]string{"": "192"}[sbuf] + sbuf}})
		}
	}
	if testing.Short() {
		pts = pts[:len(pts)/4]
	}
	plan := func(sets []string, m *memo.Memo) string {
		cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: sets})
		require.NoError(t, err, "%v", sets)
		cfg.Memo = m
		p, err := GEMMPlan(cfg)
		if err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("%+v %v %v", *p, p.Choices(), p.Notes())
	}
	alone := make([]string, len(pts))
	for i, p := range pts {
		alone[i] = plan(p.sets, nil)
	}
	shared := memo.New()
	for i, p := range pts {
		require.Equal(t, alone[i], plan(p.sets, shared), "%v", p.sets)
	}
	shared = memo.New()
	for i := len(pts) - 1; i >= 0; i-- {
		require.Equal(t, alone[i], plan(pts[i].sets, shared), "%v (backwards)", pts[i].sets)
	}
	require.Positive(t, shared.Len())
	// Searches at once, as a sweep's workers run them: neighbours (which
	// share a key) on different goroutines.
	shared = memo.New()
	got := make([]string, len(pts))
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(pts); i += 4 {
				cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: pts[i].sets})
				if err != nil {
					got[i] = err.Error()
					continue
				}
				cfg.Memo = shared
				if p, err := GEMMPlan(cfg); err != nil {
					got[i] = "error: " + err.Error()
				} else {
					got[i] = fmt.Sprintf("%+v %v %v", *p, p.Choices(), p.Notes())
				}
			}
		}()
	}
	wg.Wait()
	require.Equal(t, alone, got, "searches at once")
}

// Check, with the kernel's schedule shared through a memo, reports what
// Lower reports (the plan's choices and notes, the cores, the error and
// the field it names) for every preset and dtype at awkward shapes,
// SBUF sizes too small for any plan, HBM bandwidths and lowering options
// given, bad ones included.
func TestCheckGivesWhatLowerGives(t *testing.T) {
	shared := memo.New()
	n, errs := 0, map[string]int{}
	for _, preset := range []string{"trn1", "inf2", "trn2", "trn3"} {
		for _, shape := range [][3]int{{4096, 4096, 4096}, {3000, 5000, 2500}, {8, 4096, 14336}, {1 << 20, 8192, 8192}} {
			for _, dt := range []string{"bf16", "fp8e4"} {
				for _, extra := range [][]string{nil, {"workload.gemm.a_layout=mk"}, {"workload.lowering.block_m=384", "workload.lowering.buffers=3"},
					{"workload.lowering.block_k=100"}, {"workload.lowering.dma_queues=2"}, {"workload.lowering.dge=hardware"}} {
					for _, sbuf := range []string{"", "8", "96"} {
						for _, bw := range []string{"", "1000", "4000"} {
							sets := append([]string{"hardware.preset=" + preset, fmt.Sprintf("workload.gemm.m=%d", shape[0]), fmt.Sprintf("workload.gemm.k=%d", shape[1]),
								fmt.Sprintf("workload.gemm.n=%d", shape[2]), "workload.gemm.dtype=" + dt}, extra...)
							if sbuf != "" {
								sets = append(sets, "hardware.core.sbuf.partition_kib="+sbuf)
							}
							if bw != "" {
								sets = append(sets, "hardware.chip.hbm.bandwidth_gbps="+bw)
							}
							cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: sets})
							if err != nil {
								continue // (a value the config layer refuses)
							}
							_, want, wantErr := Lower(cfg)
							cfg.Memo = shared
							got, gotErr := Check(cfg)
							if wantErr != nil {
								require.EqualError(t, gotErr, wantErr.Error(), "%v", sets)
								errs[strings.SplitN(wantErr.Error(), ":", 2)[0]]++
								continue
							}
							require.NoError(t, gotErr, "%v", sets)
							require.Equal(t, want, got, "%v", sets)
							n++
						}
					}
				}
			}
		}
	}
	require.Greater(t, n, 100)
	require.Positive(t, shared.Len())
	t.Logf("%d lowered, errors by field %v", n, errs)
	require.Len(t, errs, 3, "too small an SBUF, a bad block_k, huge shapes")
}

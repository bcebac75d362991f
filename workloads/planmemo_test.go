package workloads

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/internal/memo"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/kernels"
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
							sets := gemmSets(preset, shape, "workload.gemm.dtype="+dt, "workload.gemm.a_layout="+lay)
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
	// Batches: searches of one shape at every batch share their
	// candidates' parts (one GEMM's, scaled to the batch).
	for _, preset := range []string{"trn1", "trn2", "trn3"} {
		for _, shape := range [][3]int{{1536, 4096, 5632}, {3000, 5000, 2500}, {128, 2048, 2048}} {
			for _, b := range []string{"1", "2", "5"} {
				for _, sbuf := range []string{"", "128"} {
					sets := gemmSets(preset, shape, "workload.gemm.batch="+b)
					if sbuf != "" {
						sets = append(sets, "hardware.core.sbuf.partition_kib="+sbuf)
					}
					pts = append(pts, point{sets})
				}
			}
		}
	}
	if testing.Short() {
		// Every fourth point: every preset and the quantised weights still.
		var some []point
		for i := 0; i < len(pts); i += 4 {
			some = append(some, pts[i])
		}
		pts = append(some, pts[len(pts)-60:]...)
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
					{"workload.lowering.block_k=100"}, {"workload.lowering.dma_queues=2"}, {"workload.lowering.dge=hw"}} {
					for _, sbuf := range []string{"", "8", "96"} {
						for _, bw := range []string{"", "1000", "4000"} {
							sets := gemmSets(preset, shape, append([]string{"workload.gemm.dtype=" + dt}, extra...)...)
							if sbuf != "" {
								sets = append(sets, "hardware.core.sbuf.partition_kib="+sbuf)
							}
							if bw != "" {
								sets = append(sets, "hardware.chip.hbm.bandwidth_gbps="+bw)
							}
							cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: sets})
							if err != nil {
								// (Hardware DGE where a preset has none.)
								require.Contains(t, err.Error(), "workload.lowering.dge", "%v", sets)
								errs["dge"]++
								continue
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
	require.Len(t, errs, 4, "too small an SBUF, a bad block_k, huge shapes; hardware DGE where there is none")
}

// The memo gives the plans a search gives alone for the GEMMs a model's
// Linears plan too: epilogues, pre-tiled weights, batches, the SBUF share
// and weight slots the graph lowering passes, op ids, through one memo
// (seeded: the same cases every run).
func TestPlanMemoGivesTheSamePlansToModels(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	shared := memo.New()
	n := 300
	if testing.Short() {
		n = 60
	}
	for i := 0; i < n; i++ {
		preset := []string{"trn1", "trn2", "trn3"}[rng.IntN(3)]
		cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: []string{"hardware.preset=" + preset}})
		require.NoError(t, err)
		g := kernels.GEMM{M: []int64{1, 8, 128, 300, 2048}[rng.IntN(5)], K: []int64{768, 2048, 4096}[rng.IntN(3)], N: []int64{512, 3072, 14336}[rng.IntN(3)],
			In: isa.BF16, Out: isa.BF16, AMK: true, BTiled: rng.IntN(2) == 0}
		if rng.IntN(3) == 0 {
			g.Batch = 4
			g.BTiled = false
		}
		g.Epilogue = kernels.Epilogue{Bias: rng.IntN(2) == 0, Apply: rng.IntN(2) == 0, Func: isa.ActSilu}
		if rng.IntN(3) == 0 {
			g.Epilogue.Combine = isa.ALUAdd
		}
		sbuf := cfg.Hardware.Limits().SBUFPartitionBytes
		o := kernels.GEMMOptions{OpID: int32(rng.IntN(50))}
		if rng.IntN(2) == 0 {
			o.SBUFBytes = sbuf - int64(rng.IntN(4))*sbuf/8
			o.WeightSlotBytes = int64(rng.IntN(3)) * sbuf / 8
		}
		key := fmt.Sprintf("%s %+v %+v", preset, g, o)
		want, werr := kernels.PlanGEMM(g, o, Target(cfg))
		cfg.Memo = shared
		got, gerr := kernels.PlanGEMM(g, o, Target(cfg))
		if werr != nil {
			require.EqualError(t, gerr, werr.Error(), key)
			continue
		}
		require.NoError(t, gerr, key)
		require.Equal(t, fmt.Sprintf("%+v", *want), fmt.Sprintf("%+v", *got), key)
	}
	require.Positive(t, shared.Len())
}

package workloads

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/configs"
)

// TestPlanDump writes the automatic plan of every preset, dtype, layout,
// awkward shape, SBUF size and HBM bandwidth of a matrix, and of batches,
// to the file TRNSIM_PLAN_DUMP names (skipped without it). Two builds'
// dumps compared with diff show whether a change to the plan search
// changed any plan:
//
//	TRNSIM_PLAN_DUMP=/tmp/plans-a.txt go test ./workloads -run TestPlanDump
func TestPlanDump(t *testing.T) {
	path := os.Getenv("TRNSIM_PLAN_DUMP")
	if path == "" {
		t.Skip("set TRNSIM_PLAN_DUMP=FILE to write the plans")
	}
	var out strings.Builder
	for _, preset := range []string{"trn1", "inf2", "trn2", "trn3"} {
		for _, shape := range [][3]int{{4096, 4096, 4096}, {3000, 5000, 2500}, {1024, 4096, 5632}, {128, 8192, 8192},
			{8, 4096, 14336}, {4096, 64, 4096}, {2048, 1024, 3072}, {640, 2048, 4096}} {
			for _, dt := range []string{"bf16", "fp32", "fp8e4"} {
				for _, lay := range []string{"km", "mk"} {
					for _, sbuf := range []string{"", "128", "176"} {
						for _, bw := range []string{"", "1000"} {
							sets := gemmSets(preset, shape, "workload.gemm.dtype="+dt, "workload.gemm.a_layout="+lay)
							if sbuf != "" {
								sets = append(sets, "hardware.core.sbuf.partition_kib="+sbuf)
							}
							if bw != "" {
								sets = append(sets, "hardware.chip.hbm.bandwidth_gbps="+bw)
							}
							dumpPlan(t, &out, sets)
						}
					}
				}
			}
		}
	}
	// Batches (their searches share estimates across batch sizes).
	for _, preset := range []string{"trn1", "trn2", "trn3"} {
		for _, shape := range [][3]int{{1024, 1024, 1024}, {3000, 5000, 2500}, {1536, 4096, 5632}, {128, 2048, 2048}, {4096, 64, 4096}, {2048, 1024, 3072}, {640, 2048, 4096}} {
			for _, dt := range []string{"bf16", "fp8e4"} {
				for _, b := range []string{"2", "3", "7", "10"} {
					for _, sbuf := range []string{"", "128"} {
						sets := gemmSets(preset, shape, "workload.gemm.dtype="+dt, "workload.gemm.batch="+b)
						if sbuf != "" {
							sets = append(sets, "hardware.core.sbuf.partition_kib="+sbuf)
						}
						dumpPlan(t, &out, sets)
					}
				}
			}
		}
	}
	require.NoError(t, os.WriteFile(path, []byte(out.String()), 0o644))
}

// dumpPlan writes the plan of a GEMM config (or its error) as one line.
func dumpPlan(t *testing.T, out *strings.Builder, sets []string) {
	cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: sets})
	require.NoError(t, err)
	key := strings.Join(sets, " ")
	p, err := GEMMPlan(cfg)
	if err != nil {
		fmt.Fprintf(out, "%s: error %v\n", key, err)
		return
	}
	fmt.Fprintf(out, "%s: order=%v tn=%d bm=%d bn=%d bk=%d buf=%d res=%d acc=%v evac=%v tr=%v dr=%v psumk=%v ares=%v banks=%d groups=%d\n",
		key, p.Order, p.TN, p.BM, p.BN, p.BK, p.NBuf, p.NRes, p.AccDT, p.Evacuate, p.Transpose, p.DoubleRow, p.PSUMK, p.AResident, p.Banks, p.Groups)
}

// gemmSets is the --set values of a GEMM of shape (m, k, n) on preset, and
// the extra ones.
func gemmSets(preset string, shape [3]int, extra ...string) []string {
	return append([]string{"hardware.preset=" + preset, fmt.Sprintf("workload.gemm.m=%d", shape[0]), fmt.Sprintf("workload.gemm.k=%d", shape[1]),
		fmt.Sprintf("workload.gemm.n=%d", shape[2])}, extra...)
}

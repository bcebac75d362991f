package workloads

import (
	"compress/gzip"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/workloads/kernels"
)

// gridPath is the committed grid of GEMM lowering choices
// (scripts/gemm-grid; docs/validation.md says how it was made).
const gridPath = "../validate/grids/gemm-grid.csv.gz"

// gridRow is one simulated point of the grid.
type gridRow struct {
	key  string // preset m k n dtype
	sets []string
	simS float64
}

func readGrid(t *testing.T) []gridRow {
	t.Helper()
	path := gridPath
	if p := os.Getenv("TRNSIM_GRID"); p != "" {
		path = p
	}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		t.Skip("no grid at", path)
	}
	require.NoError(t, err)
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		require.NoError(t, err)
		r = zr
	}
	recs, err := csv.NewReader(r).ReadAll()
	require.NoError(t, err)
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	var rows []gridRow
	for _, r := range recs[1:] {
		if r[col["status"]] != "ok" {
			continue
		}
		get := func(c string) string { return r[col[c]] }
		l := "workload.lowering."
		sets := []string{"hardware.preset=" + get("preset"), "workload.gemm.m=" + get("m"), "workload.gemm.k=" + get("k"),
			"workload.gemm.n=" + get("n"), "workload.gemm.dtype=" + get("dtype"),
			l + "loop_order=" + get("loop_order"), l + "evacuate=" + get("evacuate"), l + "buffers=" + get("buffers"),
			l + "block_m=" + get("block_m"), l + "block_n=" + get("block_n"), l + "block_k=" + get("block_k"),
			l + "tile_n=" + get("tile_n"), l + "result_buffers=" + get("result_buffers")}
		if p := strings.Split(get("point"), "/"); len(p) == 7 {
			sets = append(sets, l+"accumulate_dtype="+p[1])
		}
		var sim float64
		fmt.Sscan(get("simulated_s"), &sim)
		rows = append(rows, gridRow{key: strings.Join([]string{get("preset"), get("m"), get("k"), get("n"), get("dtype")}, " "), sets: sets, simS: sim})
	}
	return rows
}

// The plan estimate's one fitted constant, the p of the p-norm that
// combines the engines' loads: fitted on the trn2 2048^3 grid (the p in
// 2..8 with the least RMS log error of estimate against simulation), and
// checked on an eighth of every other grid's points, where the error must
// stay below 0.15 (about 15%). docs/validation.md records the table this logs.
func TestPlanEstimateFit(t *testing.T) {
	rows := readGrid(t)
	type parts struct{ pe, v, s, d, steps, extra, sim float64 }
	var fit, check []parts
	for i, r := range rows {
		if r.key != "trn2 2048 2048 2048 bf16" && i%8 != 0 {
			continue // an eighth of the check rows keeps the test short
		}
		cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: r.sets})
		require.NoError(t, err, "%v", r.sets)
		plan, err := GEMMPlan(cfg)
		require.NoError(t, err, "%v", r.sets)
		e := plan.Estimate(Target(cfg))
		p := parts{e.TensorNs, e.VectorNs, e.ScalarNs, e.DMANs, e.StepsNs, e.FillNs + e.DrainNs + e.StallNs, r.simS * 1e9}
		if r.key == "trn2 2048 2048 2048 bf16" {
			fit = append(fit, p)
		} else {
			check = append(check, p)
		}
	}
	require.NotEmpty(t, fit, "the grid has the fit rows")
	rms := func(ps []parts, norm float64) float64 {
		var sum float64
		for _, p := range ps {
			pn := math.Pow(math.Pow(p.pe, norm)+math.Pow(p.v, norm)+math.Pow(p.s, norm)+math.Pow(p.d, norm), 1/norm)
			est := max(p.steps, pn) + p.extra
			sum += math.Pow(math.Log(est/p.sim), 2)
		}
		return math.Sqrt(sum / float64(len(ps)))
	}
	best, bestErr := 0.0, math.Inf(1)
	t.Logf("| p | RMS log error, fit rows (trn2 2048^3, %d points) | RMS log error, check rows (%d points) |", len(fit), len(check))
	for _, norm := range []float64{2, 3, 4, 4.5, 5, 5.5, 6, 8} {
		f, c := rms(fit, norm), rms(check, norm)
		t.Logf("| %g | %.4f | %.4f |", norm, f, c)
		if f < bestErr {
			best, bestErr = norm, f
		}
	}
	assert.Equal(t, kernels.ContentionNorm, best, "the constant is the fit's")
	if len(check) > 0 {
		assert.Less(t, rms(check, kernels.ContentionNorm), 0.15, "the fit holds on the rows it was not fitted on")
	}
}

// Planner quality (outside CI: TRNSIM_LONG=1, it simulates the biggest
// GEMMs): on every grid the automatic plan reaches at least 95% of the
// speed of the grid's best point.
func TestPlanQuality(t *testing.T) {
	if os.Getenv("TRNSIM_LONG") == "" {
		t.Skip("set TRNSIM_LONG=1 to simulate the automatic plan of every grid")
	}
	best := map[string]float64{}
	for _, r := range readGrid(t) {
		if b, ok := best[r.key]; !ok || r.simS < b {
			best[r.key] = r.simS
		}
	}
	keys := make([]string, 0, len(best))
	for k := range best {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f := strings.Fields(k)
		cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: []string{"hardware.preset=" + f[0], "workload.gemm.m=" + f[1],
			"workload.gemm.k=" + f[2], "workload.gemm.n=" + f[3], "workload.gemm.dtype=" + f[4]}})
		require.NoError(t, err)
		prog, _, err := Lower(cfg)
		require.NoError(t, err)
		res, err := chip.Run(cfg, prog, chip.Options{NoRaceCheck: true})
		require.NoError(t, err)
		speed := best[k] / res.SimTime.Seconds()
		t.Logf("%s: auto %.4g s, best %.4g s: %.1f%%", k, res.SimTime.Seconds(), best[k], 100*speed)
		assert.GreaterOrEqual(t, speed, 0.95, k)
	}
}

// The bound the plan search skips candidates by is never above a plan's
// estimate, on every preset, dtype (quantised weights too), layout and
// evacuation, over pinned blocks, ragged and whole (so skipping a
// candidate never changes the plan chosen).
func TestPlanLowerBoundBelowEstimate(t *testing.T) {
	checked := 0
	for _, preset := range []string{"trn1", "inf2", "trn2", "trn3"} {
		for _, shape := range [][3]int{{4096, 4096, 4096}, {3000, 5000, 7000}, {8, 8192, 8192}, {4096, 64, 4096}, {300, 2000, 1000}} {
			for _, dt := range []string{"bf16", "fp32", "fp8e4", "bf16/int8"} {
				for _, lay := range []string{"km", "mk"} {
					for _, blocks := range [][3]int{{128, 512, 128}, {512, 1024, 512}, {2048, 2048, 1024}, {384, 1536, 8192}} {
						for _, evac := range []string{"vector", "auto", "scalar", "alternate"} {
							dtype, weights, _ := strings.Cut(dt, "/")
							sets := gemmSets(preset, shape, "workload.gemm.dtype="+dtype, "workload.gemm.a_layout="+lay,
								fmt.Sprintf("workload.lowering.block_m=%d", blocks[0]), fmt.Sprintf("workload.lowering.block_n=%d", blocks[1]), fmt.Sprintf("workload.lowering.block_k=%d", blocks[2]),
								"workload.lowering.evacuate="+evac)
							if weights != "" {
								sets = append(sets, "workload.gemm.weights_dtype="+weights)
							}
							cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: sets})
							if err != nil {
								continue // a combination the config rejects
							}
							p, err := GEMMPlan(cfg)
							if err != nil {
								continue // pinned blocks that do not fit this preset
							}
							tg := Target(cfg)
							checked++
							assert.LessOrEqual(t, p.LowerBoundNs(tg), p.Estimate(tg).TotalNs, "%v", sets)
						}
					}
				}
			}
		}
	}
	t.Logf("%d plans checked", checked)
	assert.Greater(t, checked, 500, "the plans checked")
}

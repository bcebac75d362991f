package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/workloads/graph"
)

// OpGPU is one GPU baseline's estimate of a workload op, beside the op's
// simulated Trainium figures in results.json's ops[].
type OpGPU struct {
	GPU   string  `json:"gpu"`
	TimeS float64 `json:"time_s"`
	// Bound is what decides the GPU's time: compute, memory, launch or
	// nvlink.
	Bound string `json:"bound"`
	// TrainiumOverGPU is the op's Trainium time over the GPU's (above 1:
	// the GPU is faster on this op), both of one pass (with every decode
	// step simulated, Trainium's mean step).
	TrainiumOverGPU float64 `json:"trainium_over_gpu"`
}

// OpDelta is one op of the comparison "why" lines: where one side wins or
// loses most time.
type OpDelta struct {
	Name string `json:"name"`
	// TrainiumS and GPUS are the op's time on each side in one pass (with
	// every decode step simulated, Trainium's mean step; zero where the op
	// is not in that side's plan, as the GPU's all-reduces with tp 1).
	TrainiumS     float64 `json:"trainium_s"`
	GPUS          float64 `json:"gpu_s"`
	TrainiumBound string  `json:"trainium_bound"`
	GPUBound      string  `json:"gpu_bound"`
}

// collectiveKinds are the graph's communication ops: on Trainium their
// time is the links' (and the runtime's per-collective cost).
var collectiveKinds = map[string]bool{string(graph.AllReduce): true, string(graph.AllGather): true}

// trainiumBound names the resource that decides an op's simulated time:
// link for a collective; fused for an op with no instructions of its own;
// else the engine with the most busy time in the
// op's span (TensorE, VectorE, ScalarE, GpSimd), or for the DMA engines
// HBM where the HBM the cores share is narrower than their DMA engines
// together, DMA where it is not.
func trainiumBound(o *OpReport, hbmNarrower bool) string {
	if collectiveKinds[o.Kind] {
		return "link"
	}
	if o.Instructions == 0 {
		return "fused" // its work is another op's (a GEMM's epilogue), or it is a view
	}
	names := map[string]string{"tensor": "TensorE", "vector": "VectorE", "scalar": "ScalarE", "gpsimd": "GpSimd", "sync": "Sync", "dma": "DMA"}
	best, bestS := "", 0.0
	for _, e := range []string{"tensor", "vector", "scalar", "gpsimd", "sync", "dma"} {
		if s := o.BusyS[e]; s > bestS {
			best, bestS = e, s
		}
	}
	if best == "" {
		return "none"
	}
	if best == "dma" && hbmNarrower {
		return "HBM"
	}
	return names[best]
}

// hbmNarrower reports whether the HBM bandwidth the run's cores share is
// less than their DMA engines can move together.
func hbmNarrower(cfg *configs.RunConfig, cores int) bool {
	h := &cfg.Hardware
	perChip := max(h.Chip.Cores, 1)
	chips := (cores + perChip - 1) / perChip
	hbm := h.Chip.HBM.BandwidthGBps * float64(chips)
	dma := h.Core.DMA.EngineBandwidthGBps * float64(h.Core.DMA.Engines) * float64(cores)
	return hbm > 0 && hbm < dma
}

// layerOf returns the "model.layers.N" prefix of an op's name, or "".
func layerOf(name string) string {
	const p = "model.layers."
	i := strings.Index(name, p)
	if i < 0 {
		return ""
	}
	rest := name[i+len(p):]
	if j := strings.IndexByte(rest, '.'); j >= 0 {
		rest = rest[:j]
	}
	return name[:i+len(p)] + rest
}

// opSteps is the passes the ops' figures are of: a decode's steps when
// every one is simulated (the GPU baselines time one), else 1.
func (r *Report) opSteps() float64 {
	if r.Model != nil && r.Model.Steps > 1 {
		return float64(r.Model.Steps)
	}
	return 1
}

// compareOps sets each Trainium op's bound and its GPU estimates, and each
// GPU's ops where Trainium loses and gains most time. The two sides are
// matched by op name over the ops Trainium simulated (with layer reuse,
// its simulated layers): an op only one side has (the GPU's all-reduces of
// a tp 1 plan are none) counts as taking no time on the other.
func (r *Report) compareOps(cfg *configs.RunConfig) {
	narrow := hbmNarrower(cfg, r.ModelCores()) // (every copy's cores, as the exact run has them)
	per := r.opSteps()
	trn := map[string]*OpReport{}
	layers := map[string]bool{}
	for i := range r.Ops {
		o := &r.Ops[i]
		o.Bound = trainiumBound(o, narrow)
		if _, dup := trn[o.Name]; !dup {
			trn[o.Name] = o
		}
		layers[layerOf(o.Name)] = true
	}
	for gi := range r.GPU {
		g := &r.GPU[gi]
		var deltas []OpDelta
		seen := map[string]bool{}
		for _, op := range g.Ops {
			t, ok := trn[op.Name]
			if !ok {
				if layers[layerOf(op.Name)] {
					// Not among Trainium's ops: fused into another (an
					// activation in a GEMM's epilogue), or a collective of
					// the GPU's plan that Trainium's has not.
					b := "fused"
					if collectiveKinds[op.Kind] {
						b = "none"
					}
					deltas = append(deltas, OpDelta{Name: op.Name, GPUS: op.TimeS, TrainiumBound: b, GPUBound: op.Bound})
				}
				continue
			}
			if seen[op.Name] {
				continue
			}
			seen[op.Name] = true
			ratio := 0.0
			if op.TimeS > 0 {
				ratio = t.TimeS / per / op.TimeS
			}
			t.GPU = append(t.GPU, OpGPU{GPU: g.GPU, TimeS: op.TimeS, Bound: op.Bound, TrainiumOverGPU: ratio})
			deltas = append(deltas, OpDelta{Name: op.Name, TrainiumS: t.TimeS / per, GPUS: op.TimeS, TrainiumBound: t.Bound, GPUBound: op.Bound})
		}
		for name, t := range trn {
			if !seen[name] {
				deltas = append(deltas, OpDelta{Name: name, TrainiumS: t.TimeS / per, TrainiumBound: t.Bound, GPUBound: "none"})
			}
		}
		diff := func(d OpDelta) float64 { return d.TrainiumS - d.GPUS }
		sort.SliceStable(deltas, func(i, j int) bool {
			if diff(deltas[i]) != diff(deltas[j]) {
				return diff(deltas[i]) > diff(deltas[j])
			}
			return deltas[i].Name < deltas[j].Name
		})
		g.TrainiumLoses, g.TrainiumGains = nil, nil
		for _, d := range deltas {
			if diff(d) > 0 && len(g.TrainiumLoses) < 3 {
				g.TrainiumLoses = append(g.TrainiumLoses, d)
			}
		}
		for i := len(deltas) - 1; i >= 0 && len(g.TrainiumGains) < 3; i-- {
			if diff(deltas[i]) < 0 {
				g.TrainiumGains = append(g.TrainiumGains, deltas[i])
			}
		}
	}
}

// writeWhy prints, per GPU, the ops where Trainium loses and gains most
// time against it, with what decides each side.
func (r *Report) writeWhy(line func(k, format string, args ...any)) {
	if r.Model == nil {
		return
	}
	side := func(ds []OpDelta, sign string) string {
		var out []string
		for _, d := range ds {
			out = append(out, fmt.Sprintf("%s %s%s (%s %s, GPU %s)", shortOpName(d.Name), sign, fmtSeconds(abs(d.TrainiumS-d.GPUS)),
				fmtSeconds(d.TrainiumS), d.TrainiumBound, d.GPUBound))
		}
		if len(out) == 0 {
			return "none"
		}
		return strings.Join(out, ", ")
	}
	first := true
	for _, g := range r.GPU {
		if len(g.TrainiumLoses)+len(g.TrainiumGains) == 0 {
			continue
		}
		k := ""
		if first {
			k = "why, by op"
			first = false
		}
		line(k, "against %s: Trainium loses most on %s; gains most on %s", g.Title, side(g.TrainiumLoses, "+"), side(g.TrainiumGains, "-"))
	}
	if !first {
		line("", "(an op's time on each side over the simulated ops, Trainium's bound first: TensorE, VectorE, ScalarE, GpSimd, DMA, HBM, link, or fused into another op; the GPU's: compute, memory, launch or nvlink)")
	}
}

// shortOpName drops the "model." prefix of a module path.
func shortOpName(name string) string { return strings.TrimPrefix(name, "model.") }

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

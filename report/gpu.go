package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/cost"
	"github.com/trnsim/trnsim/gpu"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads"
	"github.com/trnsim/trnsim/workloads/graph"
)

// GPUReport is one GPU baseline's estimate of the same pass (the same
// graph, batch and lengths), beside the Trainium run.
type GPUReport struct {
	GPU   string `json:"gpu"`
	Title string `json:"title"`
	// TimeS is the pass on one GPU; TokensPerS, MFUPct and MBUPct by the
	// model figures' definitions.
	TimeS      float64 `json:"time_s"`
	TokensPerS float64 `json:"tokens_per_s"`
	MFUPct     float64 `json:"mfu_pct"`
	MBUPct     float64 `json:"mbu_pct"`
	// Speedup is Trainium's tokens/s over the GPU's (the GPU's time over
	// Trainium's, with replicas counted; above 1: Trainium is
	// faster), for the cores used against one GPU.
	Speedup float64 `json:"trainium_speedup"`
	// LaunchPct is the share of the GPU's time that is kernel launches.
	LaunchPct float64 `json:"launch_pct"`
	// USDPerHour is one GPU's share of its instance (Instance);
	// USDPerMillionTokens at its tokens/s; CostRatio that over the
	// Trainium run's (above 1: Trainium is cheaper per token).
	USDPerHour          float64 `json:"usd_per_hour,omitempty"`
	USDPerMillionTokens float64 `json:"usd_per_million_tokens,omitempty"`
	CostRatio           float64 `json:"cost_ratio,omitempty"`
	Instance            string  `json:"instance,omitempty"`
	// TopOps are the GPU's longest ops with the bound that decides them;
	// Ops every op's estimate, in graph order.
	TopOps []GPUOp `json:"top_ops"`
	Ops    []GPUOp `json:"ops"`
}

// GPUOp is an op's GPU estimate.
type GPUOp struct {
	Name  string  `json:"name"`
	Kind  string  `json:"kind"`
	TimeS float64 `json:"time_s"`
	Bound string  `json:"bound"`
}

// buildGPU times the model's graph on each baseline GPU.
func buildGPU(cfg *configs.RunConfig, info *workloads.Info, r *Report) error {
	mi, m := info.Model, r.Model
	if mi == nil || mi.Graph == nil || m == nil {
		return nil
	}
	c := gpu.Default
	for _, name := range cfg.Workload.Model.GPUs {
		d, err := gpu.Lookup(name)
		if err != nil {
			return err
		}
		e, err := c.Estimate(mi.Graph, d)
		if err != nil {
			return fmt.Errorf("the %s baseline: %w", name, err)
		}
		g := GPUReport{GPU: d.Name, Title: d.Title, TimeS: e.TimeS, TokensPerS: float64(mi.Batch*mi.Seq) / e.TimeS}
		g.MFUPct = 100 * float64(mi.MatmulFLOPs+mi.AttentionFLOPs) / e.TimeS / d.Peak(matmulDType(mi))
		g.MBUPct = 100 * float64(mi.WeightReadBytes+mi.KVReadBytes) / e.TimeS / (d.HBMGBps * 1e9)
		if m.TimeS > 0 && g.TokensPerS > 0 {
			// Throughput against throughput: replicas count.
			g.Speedup = m.TokensPerS / g.TokensPerS
		}
		var launch float64
		ops := append([]gpu.OpTime(nil), e.Ops...)
		for _, o := range ops {
			if o.Bound != gpu.BoundNone {
				launch += c.LaunchUs * 1e-6
			}
		}
		g.LaunchPct = 100 * launch / e.TimeS
		if in, ok := cost.ForAccelerator(d.Name); ok {
			g.USDPerHour, g.Instance = in.PerAccelerator(), in.Name
			g.USDPerMillionTokens = cost.PerMillionTokens(g.USDPerHour, g.TokensPerS)
			if m.USDPerMillionTokens > 0 {
				g.CostRatio = g.USDPerMillionTokens / m.USDPerMillionTokens
			}
		}
		for _, o := range ops {
			g.Ops = append(g.Ops, GPUOp{Name: o.Name, Kind: o.Kind, TimeS: o.TimeS, Bound: string(o.Bound)})
		}
		sort.SliceStable(ops, func(i, j int) bool { return ops[i].TimeS > ops[j].TimeS })
		for _, o := range ops[:min(5, len(ops))] {
			g.TopOps = append(g.TopOps, GPUOp{Name: o.Name, Kind: o.Kind, TimeS: o.TimeS, Bound: string(o.Bound)})
		}
		r.GPU = append(r.GPU, g)
	}
	return nil
}

// matmulDType is the dtype the model's Linear weights are in (bf16 if
// it has none).
func matmulDType(mi *workloads.ModelInfo) isa.DType {
	for _, o := range mi.Graph.Ops {
		if o.Kind == graph.Linear {
			return o.Inputs[1].DType
		}
	}
	return isa.BF16
}

// writeGPU prints the comparison lines.
func (r *Report) writeGPU(line func(k, format string, args ...any)) {
	if len(r.GPU) == 0 || r.Model == nil {
		return
	}
	unit := "time to 1st token"
	if r.Model.Mode == "decode" {
		unit = "time per token"
	}
	for i, g := range r.GPU {
		k := ""
		if i == 0 {
			k = "vs GPU"
		}
		var tops []string
		for _, o := range g.TopOps[:min(2, len(g.TopOps))] {
			tops = append(tops, fmt.Sprintf("%s %s (%s)", o.Name, fmtSeconds(o.TimeS), o.Bound))
		}
		costs := ""
		if g.USDPerMillionTokens > 0 {
			costs = fmt.Sprintf(", $%.3f per million tokens ($%.3f/h)", g.USDPerMillionTokens, g.USDPerHour)
			if g.CostRatio > 0 {
				costs += fmt.Sprintf(", %.2fx Trainium's cost per token", g.CostRatio)
			}
		}
		line(k, "%s: %s %s, %.0f tokens/s, MFU %.1f%% MBU %.1f%%, launches %.0f%%%s; %s %.2fx its speed; longest: %s",
			g.Title, unit, fmtSeconds(g.TimeS), g.TokensPerS, g.MFUPct, g.MBUPct, g.LaunchPct, costs, r.trainiumSide("is", "are"), g.Speedup, strings.Join(tops, ", "))
	}
	line("", "(%s against one whole GPU on the same graph; cost per token puts them on equal terms; the GPU side is the baseline model of docs/gpu.md, not a simulation)", r.trainiumSide("", ""))
}

// trainiumSide names the Trainium side of a comparison ("this NeuronCore
// is", "these 8 NeuronCores are"), with the verb given (or none).
func (r *Report) trainiumSide(one, many string) string {
	if r.CoresUsed <= 1 {
		if one == "" {
			return "one NeuronCore"
		}
		return "this NeuronCore " + one
	}
	if many == "" {
		return fmt.Sprintf("%d NeuronCores", r.CoresUsed)
	}
	return fmt.Sprintf("these %d NeuronCores %s", r.CoresUsed, many)
}

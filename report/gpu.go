package report

import (
	"fmt"
	"maps"
	"slices"
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
	// The plan: GPUs in all, each copy split TP ways (tensor
	// parallelism over NVLink, one node), Replicas copies; PlanRule says
	// how it was chosen (the default rule or workload.model.gpu_plan);
	// MemoryPerGPUBytes is one GPU's weights and KV cache.
	GPUs              int    `json:"gpus"`
	TP                int    `json:"tp"`
	Replicas          int    `json:"replicas"`
	PlanRule          string `json:"plan_rule"`
	MemoryPerGPUBytes int64  `json:"memory_per_gpu_bytes"`
	// CommS is the pass's collectives (NCCL over NVLink, in the pass:
	// none overlaps), CommPct its share of TimeS, Collectives their
	// count and CollectiveAlgorithm the algorithm and protocol that
	// carry most of their time (ring or tree; LL or Simple), with
	// CollectiveAlgorithms every one used and its time.
	CommS                float64            `json:"comm_s"`
	CommPct              float64            `json:"comm_pct"`
	Collectives          int                `json:"collectives"`
	CollectiveAlgorithm  string             `json:"collective_algorithm,omitempty"`
	CollectiveAlgorithms map[string]float64 `json:"collective_algorithms_s,omitempty"`
	// TimeS is the pass on one copy's GPUs (each rank's graph: its
	// share of every op plus the collectives); TokensPerS, MFUPct and
	// MBUPct by the model figures' definitions, over every GPU of the
	// plan.
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
	// USDPerHour is the plan's GPUs' share of their instance (Instance);
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
	// TrainiumLoses and TrainiumGains are the ops where the Trainium run
	// takes most more, and most less, time than this GPU (compareOps).
	TrainiumLoses []OpDelta `json:"trainium_loses_most,omitempty"`
	TrainiumGains []OpDelta `json:"trainium_gains_most,omitempty"`
}

// GPUOp is an op's GPU estimate.
type GPUOp struct {
	Name  string  `json:"name"`
	Kind  string  `json:"kind"`
	TimeS float64 `json:"time_s"`
	Bound string  `json:"bound"`
	// Algorithm is a collective's (ring or tree, then NCCL's protocol).
	Algorithm string `json:"algorithm,omitempty"`
}

// gpuOp is an op's report entry.
func gpuOp(o gpu.OpTime) GPUOp {
	g := GPUOp{Name: o.Name, Kind: o.Kind, TimeS: o.TimeS, Bound: string(o.Bound)}
	if o.Algorithm != "" {
		g.Algorithm = string(o.Algorithm) + "/" + o.Protocol
	}
	return g
}

// gpuPlan is the plan for d and one rank's graph: the user's
// (workload.model.gpu_plan, checked) or the default rule's
// (gpu.ChoosePlan: the smallest tp whose weights and KV cache fit).
func gpuPlan(cfg *configs.RunConfig, mi *workloads.ModelInfo, d gpu.Device) (gpu.Plan, *graph.Graph, int64, error) {
	build := func(tp int) (*graph.Graph, int64, error) {
		g := mi.Graph // the whole pass: tp 1
		if tp > 1 {
			if mi.GraphTP == nil {
				return nil, 0, fmt.Errorf("the model has no tensor-parallel graph")
			}
			var err error
			if g, err = mi.GraphTP(tp); err != nil {
				return nil, 0, err
			}
		}
		w, kv := gpu.RankMemory(g)
		// Decode's cache grows to context + tokens by the last step, as
		// the Trainium footprint counts it.
		if mi.Mode == "decode" && mi.Past+1 > 0 {
			kv = kv / (mi.Past + 1) * (cfg.Workload.Model.Context + max(mi.Tokens, 1))
		}
		return g, w + kv, nil
	}
	replicas := max(mi.Replicas, 1)
	up := cfg.Workload.Model.GPUPlan
	if up == nil {
		p, g, bytes, err := gpu.ChoosePlan(d, build, replicas)
		if err != nil {
			return p, nil, 0, cfg.FieldError("workload.model.gpus", "%s: %v (workload.model.gpu_plan sets a plan; [none] turns the comparison off)", d.Name, err)
		}
		return p, g, bytes, nil
	}
	p := gpu.Plan{TP: up.TP, Replicas: replicas}
	if up.Replicas > 0 {
		p.Replicas = up.Replicas
	}
	if err := gpu.CheckPlan(d, p, 0); err != nil {
		return p, nil, 0, cfg.FieldError("workload.model.gpu_plan.tp", "%s: %v", d.Name, err)
	}
	g, bytes, err := build(p.TP)
	if err != nil {
		return p, nil, 0, cfg.FieldError("workload.model.gpu_plan.tp", "%s: %v", d.Name, err)
	}
	if err := gpu.CheckPlan(d, p, bytes); err != nil {
		return p, nil, 0, cfg.FieldError("workload.model.gpu_plan.tp", "%s: %v", d.Name, err)
	}
	return p, g, bytes, nil
}

// CheckGPUPlans checks each GPU baseline's plan (gpuPlan: the user's
// workload.model.gpu_plan or the default rule's) once the model is
// lowered, before it simulates, so that a tp the model does not divide by
// or weights that do not fit fail the run at once.
func CheckGPUPlans(cfg *configs.RunConfig, info *workloads.Info) error {
	if info == nil || info.Model == nil || info.Model.Graph == nil || cfg.Workload.Model == nil {
		return nil
	}
	for _, name := range cfg.Workload.Model.GPUs {
		d, err := gpu.Lookup(name)
		if err != nil {
			return cfg.FieldError("workload.model.gpus", "%v", err)
		}
		if _, _, _, err := gpuPlan(cfg, info.Model, d); err != nil {
			return err
		}
	}
	return nil
}

// buildGPU times the model's graph on each baseline GPU.
func buildGPU(cfg *configs.RunConfig, info *workloads.Info, r *Report) error {
	mi, m := info.Model, r.Model
	if mi == nil || mi.Graph == nil || m == nil {
		return nil
	}
	cal, err := gpuCalibration(cfg)
	if err != nil {
		return err
	}
	for _, name := range cfg.Workload.Model.GPUs {
		d, err := gpu.Lookup(name)
		if err != nil {
			return err
		}
		c := cal.For(d.Name, gpu.Default) // the calibration file's constants for its device
		plan, rank, bytes, err := gpuPlan(cfg, mi, d)
		if err != nil {
			return err
		}
		e, err := c.Estimate(rank, d)
		if err != nil {
			return fmt.Errorf("the %s baseline: %w", name, err)
		}
		n := float64(plan.GPUs())
		g := GPUReport{GPU: d.Name, Title: d.Title, GPUs: plan.GPUs(), TP: plan.TP, Replicas: plan.Replicas, MemoryPerGPUBytes: bytes,
			TimeS: e.TimeS, TokensPerS: float64(mi.Batch*mi.Seq) * float64(plan.Replicas) / e.TimeS}
		g.PlanRule = "workload.model.gpu_plan"
		if plan.Derived {
			g.PlanRule = "the smallest tp whose weights and KV cache fit one GPU's HBM"
		}
		// Every copy does the whole pass's work, over all the plan's GPUs.
		g.MFUPct = 100 * float64(mi.MatmulFLOPs+mi.AttentionFLOPs) * float64(plan.Replicas) / e.TimeS / (d.Peak(matmulDType(mi)) * n)
		g.MBUPct = 100 * float64(mi.WeightReadBytes+mi.KVReadBytes) * float64(plan.Replicas) / e.TimeS / (d.HBMGBps * 1e9 * n)
		if m.TimeS > 0 && g.TokensPerS > 0 {
			// Throughput against throughput: replicas count.
			g.Speedup = m.TokensPerS / g.TokensPerS
		}
		g.LaunchPct = 100 * e.LaunchS / e.TimeS
		g.CommS, g.CommPct, g.Collectives = e.CommS, 100*e.CommS/e.TimeS, e.Collectives
		ops := append([]gpu.OpTime(nil), e.Ops...)
		for _, o := range ops {
			if o.Bound == gpu.BoundNVLink {
				if g.CollectiveAlgorithms == nil {
					g.CollectiveAlgorithms = map[string]float64{}
				}
				g.CollectiveAlgorithms[gpuOp(o).Algorithm] += o.TimeS
			}
		}
		best := -1.0
		for _, a := range slices.Sorted(maps.Keys(g.CollectiveAlgorithms)) {
			if t := g.CollectiveAlgorithms[a]; t > best {
				g.CollectiveAlgorithm, best = a, t
			}
		}
		if in, ok := priceBook(cfg).ForAccelerator(d.Name); ok {
			g.USDPerHour, g.Instance = in.PerAccelerator()*n, in.Name
			g.USDPerMillionTokens = cost.PerMillionTokens(g.USDPerHour, g.TokensPerS)
			if m.USDPerMillionTokens > 0 {
				g.CostRatio = g.USDPerMillionTokens / m.USDPerMillionTokens
			}
		}
		for _, o := range ops {
			g.Ops = append(g.Ops, gpuOp(o))
		}
		sort.SliceStable(ops, func(i, j int) bool { return ops[i].TimeS > ops[j].TimeS })
		for _, o := range ops[:min(5, len(ops))] {
			g.TopOps = append(g.TopOps, gpuOp(o))
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
	switch {
	case r.Model.Mode == "decode":
		unit = "time per token"
	case r.Model.Family == "bert":
		unit = "forward pass" // (an encoder: no token to generate, as the Trainium line says)
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
			costs = fmt.Sprintf(", $%.3f per million tokens (%s)", g.USDPerMillionTokens, usdPerHour(g.USDPerHour))
			if g.CostRatio > 0 {
				costs += fmt.Sprintf(", %.2fx Trainium's cost per token", g.CostRatio)
			}
		}
		comm := ""
		if g.Collectives > 0 {
			comm = fmt.Sprintf(", NVLink %.0f%% (%d collectives, mostly %s)", g.CommPct, g.Collectives, g.CollectiveAlgorithm)
		}
		line(k, "%s: %s %s, %.0f tokens/s, MFU %.1f%% MBU %.1f%%, launches %.0f%%%s%s; %s %.2fx its speed; longest: %s",
			gpuPlanLabel(g), unit, fmtSeconds(g.TimeS), g.TokensPerS, g.MFUPct, g.MBUPct, g.LaunchPct, comm, costs, r.trainiumSide("is", "are"), g.Speedup, strings.Join(tops, ", "))
	}
	line("", "(%s against each GPU plan on the same graph, tensor parallelism within one 8-GPU node; cost per token puts them on equal terms; the GPU side is the baseline model of docs/gpu.md, not a simulation)", r.trainiumSide("", ""))
}

// gpuPlanLabel names a GPU baseline with its plan: "2x H100 SXM (tp 2,
// the smallest that fits)", "H100 SXM (tp 1, 2 replicas, gpu_plan)".
func gpuPlanLabel(g GPUReport) string {
	name := g.Title
	if g.GPUs > 1 {
		name = fmt.Sprintf("%dx %s", g.GPUs, g.Title)
	}
	plan := fmt.Sprintf("tp %d", max(g.TP, 1))
	if g.Replicas > 1 {
		plan += fmt.Sprintf(" x %d replicas", g.Replicas)
	}
	rule := "the smallest that fits"
	if g.PlanRule == "workload.model.gpu_plan" {
		rule = "gpu_plan"
	}
	return fmt.Sprintf("%s (%s, %s)", name, plan, rule)
}

// trainiumSide names the Trainium side of a comparison ("this NeuronCore
// is", "these 8 NeuronCores are"), with the verb given (or none).
func (r *Report) trainiumSide(one, many string) string {
	cores := planCores(r.CoresUsed, r.Model)
	if cores <= 1 {
		if one == "" {
			return "one NeuronCore"
		}
		return "this NeuronCore " + one
	}
	if many == "" {
		return fmt.Sprintf("%d NeuronCores", cores)
	}
	return fmt.Sprintf("these %d NeuronCores %s", cores, many)
}

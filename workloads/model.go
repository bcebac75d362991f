package workloads

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/graph"
	"github.com/trnsim/trnsim/workloads/lowergraph"
	"github.com/trnsim/trnsim/workloads/nn"
	"github.com/trnsim/trnsim/workloads/sched"
	"github.com/trnsim/trnsim/workloads/zoo"
)

// ModelInfo is what a model run reports beyond a kernel's: the pass
// simulated and the memory it needs.
type ModelInfo struct {
	// Model names the model; Family its architecture family.
	Model, Family string
	// Mode is prefill or decode; Batch, Seq (new tokens per sequence in the
	// pass simulated), Past (KV positions before it) and Tokens (decode:
	// tokens generated) describe it.
	Mode                     string
	Batch, Seq, Past, Tokens int64
	// Layers the figures are for, of LayersTotal; SimLayers those
	// simulated (fewer when identical layers reuse the timing of the last
	// one simulated: the report adds Layers - SimLayers times its time).
	Layers, LayersTotal, SimLayers int64
	// LayerOf maps a simulated op's id to its layer (absent: the
	// embedding, the head).
	LayerOf map[int32]int64
	// Graph is the whole pass's graph (every layer the figures are for),
	// what the GPU baseline times; GraphTP builds one rank's graph of the
	// same pass split tp ways (zoo's Megatron shards, their all-reduces
	// and all-gathers), for the GPU plans.
	Graph   *graph.Graph
	GraphTP func(tp int) (*graph.Graph, error)
	// Params counts the model's parameters; MatmulParams those that take
	// part in a matmul (the embedding gather excluded, a tied head
	// included): MFU's N.
	Params, MatmulParams int64
	// WeightBytes, KVCacheBytes and ActivationBytes are the footprint of
	// what is simulated; FullWeightBytes and FullKVCacheBytes the whole
	// model's. HBMCapacityBytes is one core's share of the chip's HBM.
	WeightBytes, KVCacheBytes, ActivationBytes int64
	FullWeightBytes, FullKVCacheBytes          int64
	HBMCapacityBytes                           int64
	// MatmulFLOPs are the pass's Linear and expert FLOPs: 2 per parameter
	// per token that passes it (the LM head only for the positions whose
	// logits the pass computes, the last of each sequence); AttentionFLOPs
	// the scores and values of its attention (the pairs a causal mask
	// keeps: half the full square for a prompt, plus the diagonal).
	MatmulFLOPs, AttentionFLOPs int64
	// WeightReadBytes and KVReadBytes are the bytes of weights and cache
	// one pass reads at least (MBU's numerator).
	WeightReadBytes, KVReadBytes int64
	// The parallel plan: TP ranks (logical cores) per copy, Replicas
	// copies, and Ranks the physical cores they run on (a plan of one
	// rank runs on one physical core; otherwise each rank is lnc physical
	// cores, which split its work as tensor parallelism too). Every
	// figure above is the whole pass's (one copy); the memory figures are
	// one physical rank's.
	TP, Replicas, Ranks int
	// SimReplicas is how many of the Replicas copies are simulated: all of
	// them, or one where the copies share nothing (replica reuse: the
	// others run the same program on hardware of their own, and take its
	// time); the simulated program's figures (engines, DMA, HBM, cores
	// used) are those copies'.
	SimReplicas int
	// SimRanks, when not 0, is how many of each simulated copy's physical
	// ranks were simulated: symmetric-core reuse simulated a unit of them
	// (the cores of an HBM stack, or a chip) on hardware symmetric to the
	// others', which take its time; the simulated program's figures are the
	// unit's.
	SimRanks int
	// Steps, when more than one, is the decode steps simulated one after
	// another (--exact: every token's, each a launch at its cache length);
	// the figures above stay the mean step's (Past its cache length), the
	// report's time per token is the steps' mean.
	Steps int64
}

// plan is how a model run spreads over ranks.
type plan struct {
	tp, replicas, lnc int
	// shard is the physical ranks one copy is split over; ranks all of
	// them.
	shard, ranks int
}

func modelPlan(cfg *configs.RunConfig) plan {
	p := plan{tp: max(cfg.Parallel.TP, 1), replicas: max(cfg.Parallel.Replicas, 1), lnc: max(cfg.Hardware.Chip.LNC, 1)}
	// A copy of one rank runs on one physical core (as a model without a
	// plan does); a tensor-parallel copy's ranks are logical cores.
	p.shard = p.tp * p.lnc
	if p.tp == 1 {
		p.shard, p.lnc = 1, 1
	}
	p.ranks = p.shard * p.replicas
	return p
}

// tpChoices says which tp values divide model c at the plan's lnc and
// fit the hardware's logical cores with the plan's replicas.
func tpChoices(cfg *configs.RunConfig, c *zoo.Config, pl plan) string {
	h := &cfg.Hardware
	logical := max(h.Chips, 1) * max(h.Chip.Cores, 1) / pl.lnc
	var ok []string
	for t := 1; t*pl.replicas <= logical; t++ {
		shard := t * pl.lnc
		if t == 1 {
			shard = 1
		}
		if _, err := c.Shard(int64(shard)); err == nil {
			ok = append(ok, strconv.Itoa(t))
		}
	}
	if len(ok) == 0 {
		return "no tp divides it on this hardware"
	}
	return fmt.Sprintf("tp values that divide it on this hardware's %d logical cores: %s", logical, strings.Join(ok, ", "))
}

// copiesShareNothing reports whether copies of shard physical cores each,
// laid out one after another, share no hardware: each within one chip
// (its collectives never reach a link), the chip an exact number of
// copies, and each copy on HBM stacks of its own (stacks not interleaved,
// the copy a whole number of a stack's cores). The on-chip fabric has no
// bandwidth to share (package noc).
func copiesShareNothing(h *configs.Hardware, shard int) bool {
	cores, stacks := h.Chip.Cores, h.Chip.HBM.Stacks
	if shard < 1 || cores < 1 || stacks < 1 || cores%stacks != 0 || h.Chip.HBM.InterleaveBytes != 0 {
		return false
	}
	return shard <= cores && cores%shard == 0 && shard%(cores/stacks) == 0
}

// modelFit blames what does not fit on the model fields.
var modelFit = map[isa.Memory][]string{
	isa.MemSBUF: {"hardware.core.sbuf.partition_kib", "workload.model.batch", "workload.model.seq"},
	isa.MemPSUM: {"hardware.core.psum.partition_kib", "hardware.core.psum.banks"},
	isa.MemHBM:  {"workload.model.layers", "workload.model.batch", "workload.model.context", "workload.model.seq", "hardware.chip.hbm.stack_gib"},
}

// modelOpFit blames an op's kernel whose working set does not fit on
// chip (attention over a long context, before the model kernel is
// placed).
var modelOpFit = map[isa.Memory][]string{
	isa.MemSBUF: {"hardware.core.sbuf.partition_kib", "workload.model.context", "workload.model.seq", "workload.model.batch"},
	isa.MemPSUM: {"hardware.core.psum.partition_kib", "hardware.core.psum.banks"},
}

// ModelConfig resolves the model a config names.
func ModelConfig(cfg *configs.RunConfig) (*zoo.Config, error) {
	m := cfg.Workload.Model
	if m.Name != "" {
		c, err := zoo.Get(m.Name)
		if err != nil {
			return nil, cfg.FieldError("workload.model.name", "%v", err)
		}
		return c, nil
	}
	c, err := zoo.Load(m.HFConfig)
	if err != nil {
		return nil, cfg.FieldError("workload.model.hf_config", "%v", err)
	}
	return c, nil
}

// decodeSteps is how many decode steps a model config simulates one after
// another: every token's with --exact, else one (the mean step, modelPass).
func decodeSteps(m *configs.ModelWorkload) int64 {
	if m.Mode == "decode" && m.Exact && m.Tokens > 1 {
		return m.Tokens
	}
	return 1
}

// addSteps makes info, made from the first decode step's graph first, the
// figures of all steps: the work (FLOPs, least HBM bytes) is the steps'
// graphs' together, each op's FLOPs grown as its graph op's over the steps
// (an op of no graph op's name, or one with none: steps times the first's).
func addSteps(info *Info, first *graph.Graph, steps int64, stepGraph func(i int64) (*graph.Graph, error), ranks int) error {
	firstFLOPs := map[string]int64{}
	for _, o := range first.Ops {
		firstFLOPs[o.Name] = o.FLOPs()
	}
	opFLOPs := map[string]int64{}
	var flops, minBytes int64
	for i := int64(0); i < steps; i++ {
		g := first
		if i > 0 {
			var err error
			if g, err = stepGraph(i); err != nil {
				return err
			}
		}
		flops += g.FLOPs()
		minBytes += g.MinHBMBytes()
		for _, o := range g.Ops {
			opFLOPs[o.Name] += o.FLOPs()
		}
	}
	info.FLOPs = float64(flops) * float64(ranks)
	info.MinHBMBytes = minBytes * int64(ranks)
	for i := range info.Ops {
		o := &info.Ops[i]
		if f := firstFLOPs[o.Name]; f > 0 {
			o.FLOPs *= float64(opFLOPs[o.Name]) / float64(f)
		} else {
			o.FLOPs *= float64(steps)
		}
	}
	info.Launches = int(steps)
	info.Model.Steps = steps
	return nil
}

// modelPass is the pass a model config simulates.
func modelPass(m *configs.ModelWorkload) nn.Pass {
	p := nn.Pass{Batch: m.Batch, Seq: m.Seq, ActDType: isa.BF16, KVCache: true, RoutingSkew: m.RoutingSkew}
	if m.Mode == "decode" {
		// The step at the mean of the generation's cache lengths: a
		// step's work grows linearly with its cache, so that step takes
		// the steps' mean time.
		p.Seq, p.Past = 1, m.Context+(max(m.Tokens, 1)-1)/2
	}
	return p
}

func lowerModel(cfg *configs.RunConfig) (*isa.Program, *Info, error) {
	m := cfg.Workload.Model
	c, err := ModelConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	wdt, ok := isa.ParseDType(m.WeightsDType)
	if !ok || !slices.Contains(weightDTypes, wdt) {
		return nil, nil, cfg.FieldError("workload.model.weights_dtype", "%s weights are not lowered (bf16, int8 and fp8e4 are)", m.WeightsDType)
	}
	if m.Layers > c.Layers {
		return nil, nil, cfg.FieldError("workload.model.layers", "%d is more than the model's %d layers", m.Layers, c.Layers)
	}
	if n := m.Context + max(m.Tokens, 1); m.Mode == "decode" && c.MaxPositions > 0 && n > c.MaxPositions {
		// (The last step's cache holds context + tokens - 1 positions, and
		// it adds one.)
		field := "workload.model.tokens"
		if m.Context >= c.MaxPositions {
			field = "workload.model.context"
		}
		toks := fmt.Sprintf("%d tokens", max(m.Tokens, 1))
		if m.Tokens <= 1 {
			toks = "1 token"
		}
		return nil, nil, cfg.FieldError(field, "context %d + %s = %d positions, more than %s's max_position_embeddings %d",
			m.Context, toks, n, c.Name, c.MaxPositions)
	}
	pass := modelPass(m)
	pl := modelPlan(cfg)
	if _, err := c.Shard(int64(pl.shard)); err != nil {
		fits := tpChoices(cfg, c, pl)
		if pl.lnc > 1 {
			return nil, nil, cfg.FieldError("parallel.tp", "at hardware.chip.lnc %d each of the %d ranks is %d physical cores, which split its work as tensor parallelism too, so the model must divide by tp %d x lnc %d = %d: %v (%s; or set hardware.chip.lnc: 1)", pl.lnc, pl.tp, pl.lnc, pl.tp, pl.lnc, pl.shard, err, fits)
		}
		return nil, nil, cfg.FieldError("parallel.tp", "%v (%s)", err, fits)
	}
	g, err := c.Build(zoo.BuildOptions{Pass: pass, Layers: m.Layers, WeightDType: wdt})
	if err != nil {
		return nil, nil, cfg.FieldError("workload.model", "%v", err)
	}
	mi, err := modelInfo(cfg, c, g, pass)
	if err != nil {
		return nil, nil, err
	}
	mi.TP, mi.Replicas, mi.Ranks = pl.tp, pl.replicas, pl.ranks
	mi.SimReplicas = pl.replicas
	if !m.Exact && pl.replicas > 1 && copiesShareNothing(&cfg.Hardware, pl.shard) {
		mi.SimReplicas = 1
	}
	simRanks := pl.shard * mi.SimReplicas
	build := func(layers int64) (*graph.Graph, error) {
		return c.Build(zoo.BuildOptions{Pass: pass, Layers: layers, WeightDType: wdt, TP: int64(pl.shard)})
	}
	rankGraph := g
	if pl.shard > 1 {
		// One physical rank's part: its memory is what must fit its share.
		if rankGraph, err = build(m.Layers); err != nil {
			return nil, nil, cfg.FieldError("parallel.tp", "%v", err)
		}
		rm, err := modelInfo(cfg, c, rankGraph, pass)
		if err != nil {
			return nil, nil, err
		}
		mi.WeightBytes, mi.KVCacheBytes, mi.ActivationBytes = rm.WeightBytes, rm.KVCacheBytes, rm.ActivationBytes
		mi.FullWeightBytes = (mi.FullWeightBytes + int64(pl.shard) - 1) / int64(pl.shard)
		mi.FullKVCacheBytes = rm.FullKVCacheBytes
	}
	if need := mi.WeightBytes + mi.KVCacheBytes + mi.ActivationBytes; need > mi.HBMCapacityBytes {
		field := "workload.model.layers"
		if m.Layers == 0 {
			field = "workload.model"
		}
		where, hint := "one NeuronCore's HBM", "; parallel.tp splits it over more cores"
		if pl.ranks > 1 {
			where = fmt.Sprintf("one rank's HBM (a physical core's share, of %d ranks)", pl.ranks)
		}
		return nil, nil, cfg.FieldError(field, "the model does not fit %s: %s of weights, KV cache and activations against %s (%s over%s)",
			where, sizeGiB(need), sizeGiB(mi.HBMCapacityBytes), sizeGiB(need-mi.HBMCapacityBytes), hint)
	}
	tg := graphTarget(cfg)
	name := cfg.Workload.Name
	if name == "" {
		name = fmt.Sprintf("%s %s", c.Name, m.Mode)
	}
	// Identical layers: simulate reuseLayers and give the rest the mean
	// time of the inner ones (reuseInner), unless exact.
	sim := rankGraph
	mi.SimLayers = mi.Layers
	if !m.Exact && mi.Layers > reuseLayers && identicalLayers(c) {
		mi.SimLayers = reuseLayers
		if sim, err = build(reuseLayers); err != nil {
			return nil, nil, cfg.FieldError("workload.model", "%v", err)
		}
	}
	// An exact decode simulates every step, each a launch of its own at
	// its cache length; the figures of ModelInfo stay the mean step's.
	steps := decodeSteps(m)
	stepGraph := func(i int64) (*graph.Graph, error) {
		sp := pass
		sp.Past = m.Context + i
		g, err := c.Build(zoo.BuildOptions{Pass: sp, Layers: m.Layers, WeightDType: wdt, TP: int64(pl.shard)})
		if err != nil {
			return nil, cfg.FieldError("workload.model", "%v", err)
		}
		return g, nil
	}
	if steps > 1 {
		if sim, err = stepGraph(0); err != nil {
			return nil, nil, err
		}
	}
	// Symmetric-core reuse: one copy's ranks run one program; the
	// scheduler simulates a unit of them where the hardware is symmetric.
	symmetric := !m.Exact && simRanks == pl.shard && pl.shard > 1
	res, p, err := lowerModelPass(cfg, sim, tg, simRanks, pl.shard, symmetric)
	if err != nil {
		return nil, nil, err
	}
	mi.LayerOf = map[int32]int64{}
	for _, o := range res.Ops {
		if l, ok := zoo.LayerOf(o.Name); ok {
			mi.LayerOf[o.ID] = l
		}
	}
	// The ranks the program simulates: a unit's with symmetric-core reuse.
	progRanks := simRanks
	if p.SimulatedRanks > 0 {
		mi.SimRanks, progRanks = p.SimulatedRanks, p.SimulatedRanks
	}
	// Every simulated rank runs its part of the graph: the work is the
	// simulated ranks' together.
	info := &Info{Name: name, Kind: "model", DType: isa.BF16, CoresUsed: len(p.Cores), FLOPs: float64(sim.FLOPs()) * float64(progRanks), MinHBMBytes: sim.MinHBMBytes() * int64(progRanks),
		Model: mi, Notes: append(res.Notes, p.Notes...), Choices: []Choice{queueChoice(cfg)}}
	mi.Graph = g
	mi.GraphTP = func(tp int) (*graph.Graph, error) {
		return c.Build(zoo.BuildOptions{Pass: pass, Layers: m.Layers, WeightDType: wdt, TP: int64(tp)})
	}
	info.Shape = []Dim{{"batch", pass.Batch}, {"seq", pass.Seq}, {"past", pass.Past}, {"layers", mi.Layers}}
	for _, o := range res.Ops {
		info.Ops = append(info.Ops, Op{ID: o.ID, Name: o.Name, Kind: o.Kind, FLOPs: float64(o.FLOPs)})
	}
	if steps > 1 {
		if err := addSteps(info, sim, steps, stepGraph, simRanks); err != nil {
			return nil, nil, err
		}
		info.Launch = func(i int) (*isa.Program, error) {
			g, err := stepGraph(int64(i))
			if err != nil {
				return nil, err
			}
			r, p, err := lowerModelPass(cfg, g, tg, simRanks, pl.shard, symmetric)
			if err != nil {
				return nil, err
			}
			// The launches' figures add up by op id: every step's ops are
			// the first's.
			if len(r.Ops) != len(res.Ops) {
				return nil, fmt.Errorf("internal error: decode step %d lowers to %d ops, the first to %d", i, len(r.Ops), len(res.Ops))
			}
			for j, o := range r.Ops {
				if f := res.Ops[j]; o.ID != f.ID || o.Name != f.Name {
					return nil, fmt.Errorf("internal error: decode step %d's op %d is %s, the first step's %d %s", i, o.ID, o.Name, f.ID, f.Name)
				}
			}
			return p.Program, nil
		}
		// The longest cache is the last step's: lowered now too, so that
		// what does not fit it is an error before the first step runs.
		if _, err := info.Launch(int(steps - 1)); err != nil {
			return nil, nil, err
		}
	}
	if mi.Layers < mi.LayersTotal {
		info.Notes = append(info.Notes, fmt.Sprintf("%d of the model's %d layers simulated (plus the embedding and the head); every figure is for those", mi.Layers, mi.LayersTotal))
		if full := mi.FullWeightBytes + mi.FullKVCacheBytes; full > mi.HBMCapacityBytes {
			info.Notes = append(info.Notes, fmt.Sprintf("warning: the whole model does not fit one NeuronCore's HBM (%s against %s)", sizeGiB(full), sizeGiB(mi.HBMCapacityBytes)))
		}
	}
	if pl.ranks > 1 {
		desc := fmt.Sprintf("tensor parallelism over %d ranks", pl.tp)
		if pl.replicas > 1 {
			desc = fmt.Sprintf("%d replicas", pl.replicas)
			if pl.tp > 1 {
				desc = fmt.Sprintf("%d replicas of tensor parallelism over %d ranks", pl.replicas, pl.tp)
			}
		}
		if pl.lnc > 1 {
			desc += fmt.Sprintf(" of %d physical cores each (lnc %d; a rank's cores split its work as tensor parallelism too)", pl.lnc, pl.lnc)
		}
		info.Notes = append(info.Notes, fmt.Sprintf("parallel: %s, %d physical cores in all; memory figures are one core's", desc, pl.ranks))
	}
	if mi.SimReplicas < mi.Replicas {
		info.Notes = append(info.Notes, fmt.Sprintf("replica reuse: %d of the %d copies simulated, the others on hardware of their own (%d physical cores each, sharing no HBM stack, chip or link with another copy) take its time (the model figures count every copy; the engine, DMA and HBM figures are the simulated copy's); --exact simulates them all",
			mi.SimReplicas, mi.Replicas, pl.shard))
	}
	if mi.SimRanks > 0 {
		info.Notes = append(info.Notes, fmt.Sprintf("symmetric-core reuse: %d of the copy's %d physical ranks simulated (ranks %d to %d: %s), the others run the same program on hardware symmetric to theirs and take their time (the model figures count every rank; the engine, DMA and HBM figures are the simulated ranks'); --exact simulates them all",
			mi.SimRanks, pl.shard, p.Cores[0], p.Cores[len(p.Cores)-1], unitText(cfg, mi.SimRanks)))
	}
	if mi.SimLayers < mi.Layers {
		info.Notes = append(info.Notes, fmt.Sprintf("layer reuse: %d of the %d layers simulated, the rest at the mean time of the third to the last but one (the model figures; the engine, DMA and HBM figures are the %d layers'); --exact simulates every layer",
			mi.SimLayers, mi.Layers, mi.SimLayers))
	}
	if steps > 1 {
		info.Notes = append(info.Notes, fmt.Sprintf("decode: every one of the %d steps simulated, each a launch of its own at its cache length (%d to %d), back to back; the model figures are the mean step's (the engine, DMA and HBM figures all the steps'); the KV cache's footprint is at the end",
			steps, m.Context, m.Context+steps-1))
	} else if m.Mode == "decode" && m.Tokens > 1 {
		info.Notes = append(info.Notes, fmt.Sprintf("decode: the %d steps' mean is simulated, the step at cache length %d (a step's work grows linearly with its cache, from %d to %d); the KV cache's footprint is at the end",
			m.Tokens, pass.Past, m.Context, m.Context+m.Tokens-1))
	}
	return p.Program, info, nil
}

// unitText says what a unit of ranks of symmetric-core reuse is.
func unitText(cfg *configs.RunConfig, ranks int) string {
	h := &cfg.Hardware
	switch {
	case ranks == h.Chip.Cores:
		return "one chip"
	case ranks > h.Chip.Cores:
		return fmt.Sprintf("%d chips", ranks/max(h.Chip.Cores, 1))
	case h.Chip.HBM.InterleaveBytes == 0 && h.Chip.HBM.Stacks > 0 && ranks == h.Chip.Cores/h.Chip.HBM.Stacks:
		return "the cores of one HBM stack"
	}
	return fmt.Sprintf("%d cores", ranks)
}

// lowerModelPass lowers and schedules one pass's graph over ranks ranks
// (groups of group), a unit of them where symmetric is set and the
// scheduler finds the ranks' hardware symmetric (symmetric-core reuse).
func lowerModelPass(cfg *configs.RunConfig, g *graph.Graph, tg *sched.Target, ranks, group int, symmetric bool) (*lowergraph.Result, *sched.Program, error) {
	res, err := lowergraph.Lower(g, tg, "model", lowergraph.Options{Ranks: ranks, GroupSize: group})
	if err != nil {
		// A kernel's working set that does not fit on chip blames what the
		// user set that sizes it, where there is one.
		var fe *sched.FitError
		if errors.As(err, &fe) && fe.Mem.OnChip() {
			if path, ok := cfg.UserSet(modelOpFit[fe.Mem]...); ok {
				return nil, nil, cfg.FieldError(path, "%v", err)
			}
		}
		return nil, nil, cfg.FieldError("workload.model", "%v", err)
	}
	p, err := compileRanks(cfg, res.Kernel, modelFit, res.Ops, symmetric)
	if err != nil && res.HandOffs > 0 {
		// Activations kept in SBUF for the Linears after their writer
		// (lowergraph's SBUF hand-off) hold SBUF across kernels that were
		// each planned to fit by themselves: where the program does not
		// place (or fails otherwise), the graph lowers again without them,
		// and that program's error, if any, is the one reported.
		kept := res.HandOffs
		if res, err = lowergraph.Lower(g, tg, "model", lowergraph.Options{Ranks: ranks, GroupSize: group, NoSBUFHandOff: true}); err != nil {
			return nil, nil, cfg.FieldError("workload.model", "%v", err)
		}
		res.Notes = append(res.Notes, fmt.Sprintf("no activations kept in SBUF between Linears: the program with the %d kept did not place", kept))
		p, err = compileRanks(cfg, res.Kernel, modelFit, res.Ops, symmetric)
	}
	if err != nil {
		return nil, nil, err
	}
	return res, p, nil
}

// peakActivationBytes is the most activation memory (inputs, outputs and
// intermediate tensors) live at once when the ops run in order: a tensor
// lives from its producer to its last reader (inputs from the start,
// outputs to the end), and views (reshape, permute, split) share their
// input's storage, as the lowering stores them. The scheduler frees a
// tensor's HBM after its last use and reuses it, so this, not the sum of
// every tensor, is what must fit.
func peakActivationBytes(g *graph.Graph) int64 {
	n := len(g.Ops)
	// root maps a view to the tensor whose storage it is.
	root := map[*graph.Tensor]*graph.Tensor{}
	var rootOf func(t *graph.Tensor) *graph.Tensor
	rootOf = func(t *graph.Tensor) *graph.Tensor {
		if r, ok := root[t]; ok {
			return r
		}
		return t
	}
	first, last := map[*graph.Tensor]int{}, map[*graph.Tensor]int{}
	isAct := func(t *graph.Tensor) bool {
		return t != nil && (t.Role == graph.Activation || t.Role == graph.Input || t.Role == graph.Output)
	}
	touch := func(t *graph.Tensor, i int) {
		r := rootOf(t)
		if !isAct(r) {
			return
		}
		if _, ok := first[r]; !ok {
			first[r] = i
		}
		last[r] = max(last[r], i)
	}
	for i, o := range g.Ops {
		view := o.Kind == graph.Reshape || o.Kind == graph.Permute || o.Kind == graph.Split
		for _, t := range o.Inputs {
			if t != nil {
				touch(t, i)
			}
		}
		for _, t := range o.Outputs {
			if view && len(o.Inputs) > 0 && o.Inputs[0] != nil {
				root[t] = rootOf(o.Inputs[0])
				touch(t, i)
				continue
			}
			touch(t, i)
		}
	}
	for _, t := range g.Tensors {
		r := rootOf(t)
		if !isAct(r) {
			continue
		}
		if r.Role == graph.Input || r.Producer == nil {
			first[r] = 0
		}
		if r.Role == graph.Output || t.Role == graph.Output {
			last[r] = n
		}
		if _, ok := last[r]; !ok {
			first[r], last[r] = 0, n
		}
	}
	delta := make([]int64, n+2)
	for r, f := range first {
		delta[f] += r.Bytes()
		delta[last[r]+1] -= r.Bytes()
	}
	var live, peak int64
	for _, d := range delta {
		live += d
		peak = max(peak, live)
	}
	return peak
}

// reuseLayers is how many layers the reuse mode simulates, and
// ReuseInner the ones whose mean time every layer not simulated takes:
// the layers from the third to the last but one. The first layers warm
// up (GPT-2's decode: 132.6, 134.3, then 136.7 µs), the last precedes the
// head, whose weights prefetch during it (Llama-3.2-1B's decode: 456.1
// against 470.9 µs), and some models' layer times repeat every few layers
// (Llama-3.2-1B's prefill at 512 tokens: 1386.3, 1367.3, 1382.4 µs, the
// DMA queues' rotation), which three inner layers average over.
const reuseLayers = 6

// ReuseInner returns the first and one past the last of the inner layers
// whose mean time a model run with simulated layers gives the layers it
// did not simulate.
func ReuseInner(simulated int64) (first, end int64) { return 2, simulated - 1 }

// identicalLayers reports whether every layer has the same shape and work
// (no per-layer sliding windows that differ).
func identicalLayers(c *zoo.Config) bool {
	for _, w := range c.Windows {
		if w != c.Windows[0] {
			return false
		}
	}
	return true
}

// modelInfo counts the model's parameters and footprint.
func modelInfo(cfg *configs.RunConfig, c *zoo.Config, g *graph.Graph, pass nn.Pass) (*ModelInfo, error) {
	m := cfg.Workload.Model
	mi := &ModelInfo{Model: c.Name, Family: c.Family, Mode: m.Mode, Batch: pass.Batch, Seq: pass.Seq, Past: pass.Past, Tokens: m.Tokens,
		Layers: m.Layers, LayersTotal: c.Layers}
	if mi.Layers == 0 {
		mi.Layers = c.Layers
	}
	total, _, err := c.Params()
	if err != nil {
		return nil, cfg.FieldError("workload.model", "%v", err)
	}
	mi.Params = total
	h := &cfg.Hardware
	mi.HBMCapacityBytes = h.HBMBytesPerChip() / int64(max(h.Chip.Cores, 1))
	matmul := map[*graph.Tensor]bool{}
	for _, o := range g.Ops {
		switch o.Kind {
		case graph.Linear, graph.MoEExperts:
			mi.MatmulFLOPs += o.FLOPs()
			for _, t := range o.Inputs {
				if t != nil && t.Role == graph.Parameter {
					matmul[t] = true
				}
			}
		case graph.SDPA:
			q, v := o.Inputs[0], o.Inputs[2]
			mi.AttentionFLOPs += q.Shape[0] * q.Shape[1] * o.Pairs() * 2 * (q.Shape[3] + v.Shape[3])
		}
	}
	for _, t := range g.Tensors {
		switch t.Role {
		case graph.Parameter:
			mi.WeightBytes += t.Bytes()
			if matmul[t] {
				mi.MatmulParams += t.Elements()
			}
		case graph.KVCache:
			if t.Producer != nil { // the cache after the pass's append
				mi.KVCacheBytes += t.Bytes()
			}
		}
	}
	mi.ActivationBytes = peakActivationBytes(g)
	// The weights a pass reads: every matmul weight, of a mixture of
	// experts only the experts the tokens reach.
	partial := map[*graph.Tensor]int64{}
	for _, o := range g.Ops {
		if o.Kind == graph.MoEExperts {
			for _, w := range o.Inputs[3:6] {
				partial[w] += w.Bytes() / o.Attrs.Experts * o.ExpertsTouched()
			}
		}
	}
	for t := range matmul {
		if p, ok := partial[t]; ok {
			mi.WeightReadBytes += min(p, t.Bytes())
			continue
		}
		mi.WeightReadBytes += t.Bytes()
	}
	// The cache a pass reads (behind a sliding window, the window's).
	mi.KVReadBytes = g.KVReadBytes()
	// Decode's cache grows to context + tokens by the last step: the
	// footprint is there (the simulated step's cache is at the mean).
	if m.Mode == "decode" && pass.Past+1 > 0 {
		mi.KVCacheBytes = mi.KVCacheBytes / (pass.Past + 1) * (m.Context + max(m.Tokens, 1))
	}
	// The whole model: its weights, and its cache at the pass's end for
	// every layer.
	perLayerKV := mi.KVCacheBytes
	if mi.Layers > 0 {
		perLayerKV /= mi.Layers
	}
	mi.FullWeightBytes = total * int64(isa.BF16.Bytes())
	mi.FullKVCacheBytes = perLayerKV * c.Layers
	quantFootprint(mi, cfg, c, g)
	return mi, nil
}

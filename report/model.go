package report

import (
	"fmt"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/cost"
	"github.com/trnsim/trnsim/workloads"
)

// ModelReport is what a model run adds to results.json.
type ModelReport struct {
	Model  string `json:"model"`
	Family string `json:"family"`
	Mode   string `json:"mode"`
	Batch  int64  `json:"batch"`
	// Seq is the tokens per sequence of the pass simulated; Past the KV
	// positions before them; Tokens decode's tokens generated.
	Seq    int64 `json:"seq"`
	Past   int64 `json:"past"`
	Tokens int64 `json:"tokens,omitempty"`
	// Steps, when set, is the decode steps simulated one after another
	// (--exact: every token's, each a launch at its cache length): Past is
	// then the mean step's cache length, TimeS and TPOTS the steps' mean,
	// and StepFirstS and StepLastS the first's and the last's time (each
	// with the runtime's overhead).
	Steps      int64   `json:"steps,omitempty"`
	StepFirstS float64 `json:"step_first_s,omitempty"`
	StepLastS  float64 `json:"step_last_s,omitempty"`
	// Layers of LayersTotal: every model figure is for those layers plus
	// the embedding and the head. SimulatedLayers were simulated; the
	// others take LayerTimeS, the mean of the inner simulated ones (TimeS is then the
	// simulated time plus theirs; without reuse it is the simulated
	// time).
	Layers          int64   `json:"layers"`
	LayersTotal     int64   `json:"layers_total"`
	SimulatedLayers int64   `json:"simulated_layers"`
	LayerTimeS      float64 `json:"layer_time_s,omitempty"`
	TimeS           float64 `json:"time_s"`
	// Replicas is the parallel plan's copies, SimulatedReplicas those
	// simulated (fewer with replica reuse: the others take their time;
	// every model figure counts all Replicas, on all their cores).
	Replicas          int `json:"replicas,omitempty"`
	SimulatedReplicas int `json:"simulated_replicas,omitempty"`
	// RanksPerCopy is a copy's physical ranks, SimulatedRanks those of
	// each simulated copy that were simulated (fewer with symmetric-core
	// reuse: the others take their time; every model figure counts all
	// of them).
	RanksPerCopy   int `json:"ranks_per_copy,omitempty"`
	SimulatedRanks int `json:"simulated_ranks,omitempty"`
	// RuntimeOverheadS is hardware.runtime.execution_overhead_us, included
	// in TimeS (a fixed cost per execution the simulation does not model).
	RuntimeOverheadS float64 `json:"runtime_overhead_s,omitempty"`
	Params           int64   `json:"params"`
	// TokensPerS is tokens processed per second (prefill: the prompts'
	// tokens; decode: one per sequence per step); TTFTS the prefill's
	// time (time to first token), TPOTS a decode step's (time per output
	// token).
	TokensPerS float64 `json:"tokens_per_s"`
	TTFTS      float64 `json:"ttft_s,omitempty"`
	TPOTS      float64 `json:"tpot_s,omitempty"`
	// MFUPct and MBUPct are model FLOPs and bandwidth utilisation, by the
	// definitions in MFUDefinition and MBUDefinition.
	MFUPct        float64 `json:"mfu_pct"`
	MFUDefinition string  `json:"mfu_definition"`
	MBUPct        float64 `json:"mbu_pct"`
	MBUDefinition string  `json:"mbu_definition"`
	// MinHBMBytes is the graph's least HBM traffic (every weight, input
	// and cache read once, outputs and cache appends written once,
	// activations kept on chip); HBMOverMin the simulated traffic over it
	// (1 would be perfect fusion).
	// USDPerHour is the cores used's share of their instance's price
	// (Instance, PriceKind, PriceSource); USDPerMillionTokens at the
	// run's tokens/s. Zero when the hardware has no price.
	USDPerHour          float64      `json:"usd_per_hour,omitempty"`
	USDPerMillionTokens float64      `json:"usd_per_million_tokens,omitempty"`
	Instance            string       `json:"instance,omitempty"`
	PriceKind           string       `json:"price_kind,omitempty"`
	PriceSource         string       `json:"price_source,omitempty"`
	MinHBMBytes         int64        `json:"min_hbm_bytes"`
	HBMOverMin          float64      `json:"hbm_over_min"`
	Memory              ModelMemory  `json:"memory"`
	FullModel           *ModelMemory `json:"full_model_memory,omitempty"`
	HBMCapacityBytes    int64        `json:"hbm_capacity_bytes"`
}

// ModelMemory is a model's footprint in HBM.
type ModelMemory struct {
	WeightsBytes     int64 `json:"weights_bytes"`
	ActivationsBytes int64 `json:"activations_bytes,omitempty"`
	KVCacheBytes     int64 `json:"kv_cache_bytes"`
}

const (
	mfuDefinition = "(matmul FLOPs + attention FLOPs) / time / dense peak of the dtypes and modes the matmuls run in (FLOPs-weighted, as HFU's) x cores; matmul FLOPs are 2 x N per token, N the parameters that take part in a matmul (the embedding gather excluded), the LM head counted for the positions whose logits the pass computes (the last of each sequence); attention counts the scores and values the causal mask keeps (half the full square for a prompt)"
	mbuDefinition = "(matmul weights + KV cache read by the pass) / time / (HBM bandwidth x cores used / cores per chip)"
)

// buildModel fills the model figures.
func buildModel(cfg *configs.RunConfig, info *workloads.Info, res *chip.Result, r *Report) error {
	mi := info.Model
	if mi == nil {
		return nil
	}
	h := &cfg.Hardware
	sim := r.SimulatedTimeS
	// Layer reuse: the mean time of the inner simulated layers (a
	// layer's time is its ops' last end after the layer before's) for
	// each layer not simulated.
	var layerTime float64
	if first, end := workloads.ReuseInner(mi.SimLayers); mi.SimLayers < mi.Layers && first >= 1 && end > first {
		ends := map[int64]float64{}
		for _, o := range res.Ops {
			if l, ok := mi.LayerOf[o.ID]; ok && o.End > 0 {
				ends[l] = max(ends[l], o.End.Seconds())
			}
		}
		lo, okLo := ends[first-1]
		hi, okHi := ends[end-1]
		if !okLo || !okHi || hi <= lo {
			return fmt.Errorf("internal error: layer reuse: the simulated layers %d and %d have no ops that ran", first-1, end-1)
		}
		layerTime = (hi - lo) / float64(end-first)
		sim += float64(mi.Layers-mi.SimLayers) * layerTime
	}
	// Every decode step simulated, one launch each: the figures are the
	// mean step's, and each step pays the runtime's overhead.
	steps := max(mi.Steps, 1)
	var stepFirst, stepLast float64
	if steps > 1 {
		if len(res.LaunchTimes) != int(steps) {
			return fmt.Errorf("internal error: %d decode steps, but %d launches ran", steps, len(res.LaunchTimes))
		}
		stepFirst, stepLast = res.LaunchTimes[0].Seconds(), res.LaunchTimes[steps-1].Seconds()
		sim /= float64(steps)
	}
	overhead := h.Runtime.ExecutionOverheadUs * 1e-6
	sim += overhead
	m := &ModelReport{Model: mi.Model, Family: mi.Family, Mode: mi.Mode, Batch: mi.Batch, Seq: mi.Seq, Past: mi.Past, Tokens: mi.Tokens,
		Layers: mi.Layers, LayersTotal: mi.LayersTotal, SimulatedLayers: mi.SimLayers, LayerTimeS: layerTime,
		Replicas: max(mi.Replicas, 1), SimulatedReplicas: simulatedReplicas(mi), RanksPerCopy: mi.Ranks / max(mi.Replicas, 1), SimulatedRanks: mi.SimRanks, TimeS: sim, RuntimeOverheadS: overhead, Params: mi.Params, MFUDefinition: mfuDefinition, MBUDefinition: mbuDefinition,
		Memory:           ModelMemory{WeightsBytes: mi.WeightBytes, ActivationsBytes: mi.ActivationBytes, KVCacheBytes: mi.KVCacheBytes},
		HBMCapacityBytes: mi.HBMCapacityBytes}
	if steps > 1 {
		m.Steps, m.StepFirstS, m.StepLastS = steps, stepFirst+overhead, stepLast+overhead
	}
	m.MinHBMBytes = info.MinHBMBytes
	if info.MinHBMBytes > 0 {
		m.HBMOverMin = float64(r.HBM.ReadBytes+r.HBM.WriteBytes) / float64(info.MinHBMBytes)
	}
	if mi.Layers < mi.LayersTotal {
		m.FullModel = &ModelMemory{WeightsBytes: mi.FullWeightBytes, KVCacheBytes: mi.FullKVCacheBytes}
	}
	tokens := float64(mi.Batch*mi.Seq) * float64(max(mi.Replicas, 1))
	if sim > 0 {
		m.TokensPerS = tokens / sim
		if mi.Mode == "prefill" {
			m.TTFTS = sim
		} else {
			m.TPOTS = sim
		}
		// Every copy's cores (replica reuse simulates one copy of them,
		// symmetric-core reuse a unit of a copy's).
		copies := m.coreScale()
		cores := float64(max(r.CoresUsed, 1)) * copies
		// The peak of the dtypes and modes the matmuls ran in (the
		// report's, FLOPs-weighted), else the activations' dtype.
		peak := r.PeakTFLOPS * 1e12 * copies
		if peak <= 0 {
			rate, _ := h.MatmulRate(info.DType, 0)
			peak = h.PeakBaseFLOPSPerCore() * rate * cores
		}
		flops := float64(mi.MatmulFLOPs+mi.AttentionFLOPs) * float64(max(mi.Replicas, 1))
		m.MFUPct = 100 * flops / sim / peak
		bw := h.Chip.HBM.BandwidthGBps * 1e9 * cores / float64(max(h.Chip.Cores, 1))
		m.MBUPct = 100 * float64(mi.WeightReadBytes+mi.KVReadBytes) * float64(max(mi.Replicas, 1)) / sim / bw
	}
	if in, ok := trainiumPrice(cfg, priceBook(cfg)); ok && m.TokensPerS > 0 {
		cores := float64(planCores(r.CoresUsed, m))
		m.USDPerHour = in.PerAccelerator() / float64(max(h.Chip.Cores, 1)) * cores
		m.USDPerMillionTokens = cost.PerMillionTokens(m.USDPerHour, m.TokensPerS)
		m.Instance, m.PriceKind, m.PriceSource = in.Name, in.Kind, in.Source
		if in.User {
			m.PriceKind, m.PriceSource = "the user's price", in.Origin()
		}
	}
	r.Model = m
	return nil
}

// writeModel prints the model lines of the summary.
func (r *Report) writeModel(line func(k, format string, args ...any)) {
	m := r.Model
	if m == nil {
		return
	}
	layers := fmt.Sprintf("%d layers", m.Layers)
	if m.Layers < m.LayersTotal {
		layers = fmt.Sprintf("%d of %d layers (figures are for those, the embedding and the head)", m.Layers, m.LayersTotal)
	}
	if m.SimulatedLayers < m.Layers {
		layers += fmt.Sprintf("; %d simulated, the rest at the inner ones' mean %s", m.SimulatedLayers, fmtSeconds(m.LayerTimeS))
	}
	switch m.Mode {
	case "prefill":
		line("model", "%s prefill: batch %d x %d tokens, %s", m.Model, m.Batch, m.Seq, layers)
		if m.Family == "bert" {
			line("forward pass", "%s (%.0f tokens/s)", fmtSeconds(m.TTFTS), m.TokensPerS)
		} else {
			line("time to 1st token", "%s (%.0f tokens/s)", fmtSeconds(m.TTFTS), m.TokensPerS)
		}
	default:
		ctx := fmt.Sprintf("context %d", m.Past)
		switch {
		case m.Steps > 1:
			ctx = fmt.Sprintf("%d tokens, every step simulated (cache lengths %d to %d)", m.Tokens, m.Past-(m.Steps-1)/2, m.Past-(m.Steps-1)/2+m.Steps-1)
		case m.Tokens > 1:
			ctx = fmt.Sprintf("%d tokens, the step at cache length %d (the steps' mean)", m.Tokens, m.Past)
		}
		line("model", "%s decode: batch %d, %s, %s", m.Model, m.Batch, ctx, layers)
		line("time per token", "%s (%.0f tokens/s)", fmtSeconds(m.TPOTS), m.TokensPerS)
		if m.Steps > 1 {
			line("", "(the steps' mean: the first %s, the last %s)", fmtSeconds(m.StepFirstS), fmtSeconds(m.StepLastS))
		}
	}
	if m.RuntimeOverheadS > 0 {
		line("", "(with the runtime's %s per execution, hardware.runtime.execution_overhead_us, not simulated)", fmtSeconds(m.RuntimeOverheadS))
	}
	line("MFU / MBU", "%.1f%% / %.1f%% (definitions in results.json)", m.MFUPct, m.MBUPct)
	if m.USDPerHour > 0 {
		line("cost", "$%.3f per million tokens at %s (the cores' share of %s, %s)", m.USDPerMillionTokens, usdPerHour(m.USDPerHour), m.Instance, m.PriceKind)
	}
	line("HBM traffic", "%.2fx the graph's least (%s: weights and inputs read once, activations on chip)", m.HBMOverMin, HumanBytes(m.MinHBMBytes))
	line("memory", "weights %s, KV cache %s, activations %s of %s HBM per core",
		HumanBytes(m.Memory.WeightsBytes), HumanBytes(m.Memory.KVCacheBytes), HumanBytes(m.Memory.ActivationsBytes), HumanBytes(m.HBMCapacityBytes))
	if f := m.FullModel; f != nil {
		line("", "the whole model: weights %s, KV cache %s", HumanBytes(f.WeightsBytes), HumanBytes(f.KVCacheBytes))
	}
}

func fmtSeconds(s float64) string {
	switch {
	case s >= 1:
		return fmt.Sprintf("%.3f s", s)
	case s >= 1e-3:
		return fmt.Sprintf("%.3f ms", s*1e3)
	}
	return fmt.Sprintf("%.1f µs", s*1e6)
}

// simulatedReplicas is how many of a plan's copies were simulated (all of
// them where the lowering did not say).
func simulatedReplicas(mi *workloads.ModelInfo) int {
	if mi.SimReplicas > 0 {
		return mi.SimReplicas
	}
	return max(mi.Replicas, 1)
}

// ModelCores is the cores of every copy of a model run's plan (the
// simulated program's cores where replica reuse did not leave copies out).
func (r *Report) ModelCores() int { return planCores(r.CoresUsed, r.Model) }

// planCores is the cores of every copy of a model run's plan: the
// simulated program's cores, times the copies replica reuse left out.
func planCores(coresUsed int, m *ModelReport) int {
	cores := max(coresUsed, 1)
	if m != nil && m.SimulatedReplicas > 0 && m.Replicas > m.SimulatedReplicas {
		cores = cores * m.Replicas / m.SimulatedReplicas
	}
	if m != nil && m.SimulatedRanks > 0 && m.RanksPerCopy > m.SimulatedRanks {
		cores = cores * m.RanksPerCopy / m.SimulatedRanks
	}
	return cores
}

// coreScale is the plan's cores over the simulated program's: the copies
// replica reuse left out and the ranks symmetric-core reuse did.
func (m *ModelReport) coreScale() float64 {
	f := float64(m.Replicas) / float64(max(m.SimulatedReplicas, 1))
	if m.SimulatedRanks > 0 && m.RanksPerCopy > m.SimulatedRanks {
		f *= float64(m.RanksPerCopy) / float64(m.SimulatedRanks)
	}
	return f
}

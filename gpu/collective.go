package gpu

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/trnsim/trnsim/workloads/graph"
)

// Collectives over NVLink, as NCCL runs them between the GPUs of one
// node, and the plans that spread a model over GPUs.
//
// A collective's time is NCCL's cost model (NVIDIA/nccl
// src/graph/tuning.cc, ncclTopoTuneModel): a base latency, a latency per
// algorithm step, and the bytes each GPU moves at the bus bandwidth —
// for ring all-reduce 2(n-1)/n of the message, for ring all-gather
// (n-1)/n of the gathered result, for tree all-reduce (a reduce up a
// binary tree and a broadcast down it, NCCL's double binary tree) twice
// the message at the bus bandwidth over 2·⌈log2 n⌉ steps. Each algorithm
// runs in one of two protocols: LL (low latency: 8-byte stores with a
// flag, small messages, a quarter of the bandwidth) and Simple (the full
// bandwidth, a longer latency per step). The fastest algorithm and
// protocol for the message is the one NCCL's tuner would pick, and the
// one timed.

// Collective names a collective the tensor-parallel graph calls.
type Collective string

// The collectives: the graph's all_reduce and all_gather.
const (
	AllReduce Collective = Collective(graph.AllReduce)
	AllGather Collective = Collective(graph.AllGather)
)

// Algorithm is how a collective's data moves between the GPUs.
type Algorithm string

// The algorithms.
const (
	Ring Algorithm = "ring"
	Tree Algorithm = "tree"
)

// protocol is one of NCCL's protocols on NVLink, its latencies and the
// share of the bus bandwidth it reaches. The figures are NCCL's own
// tuning constants (tuning.cc: baseLat, hwLat for NVLink, the LL
// bandwidth factors) [I: NCCL's model of its behaviour, not a
// measurement; gpu.md has no NVLink latency]; the bandwidth itself is
// the device's measured (H100) or inferred bus bandwidth (BusBwGBps).
type protocol struct {
	name string
	// baseUs is the call's fixed latency (the kernel's start included),
	// stepUs the latency of each algorithm step (ring, tree).
	baseUs        float64
	stepUs        map[Algorithm]float64
	ringAllReduce float64 // bandwidth share, ring all-reduce
	ringOther     float64 // bandwidth share, ring all-gather
	treeAllReduce float64 // bandwidth share, tree all-reduce
}

// protocols are LL and Simple (NCCL's LL128 is left out: its default
// enablement depends on the architecture and NCCL version [U]). Tree's
// Simple step takes ring's (NCCL's tree/Simple figure is a whole 256 kB
// chunk's time, which the bandwidth term counts here).
func protocols() []protocol {
	return []protocol{
		{name: "LL", baseUs: 6.6, stepUs: map[Algorithm]float64{Ring: 0.47, Tree: 0.52}, ringAllReduce: 1.0 / 4, ringOther: 1.0 / 3, treeAllReduce: 1 / 3.8},
		{name: "Simple", baseUs: 8.4, stepUs: map[Algorithm]float64{Ring: 3.4, Tree: 3.4}, ringAllReduce: 1, ringOther: 1, treeAllReduce: 1},
	}
}

// CollTime is a collective's estimate: its time, the algorithm and
// protocol that gave it (the fastest), and what it moved.
type CollTime struct {
	TimeS     float64
	Algorithm Algorithm
	Protocol  string
	// Bytes is the message (an all-reduce's buffer, an all-gather's
	// gathered result); Ranks the GPUs taking part.
	Bytes float64
	Ranks int
}

// log2Ceil is ⌈log2 n⌉ for n ≥ 1.
func log2Ceil(n int) int { return bits.Len(uint(n - 1)) }

// CollectiveTime is kind over ranks GPUs of d on NVLink for a message
// of bytes, by the fastest of ring and tree (tree for all-reduce only,
// as in NCCL) in the LL or Simple protocol. One rank moves nothing.
func (d Device) CollectiveTime(kind Collective, bytes float64, ranks int) (CollTime, error) {
	ct := CollTime{Bytes: bytes, Ranks: ranks, Algorithm: Ring, Protocol: "none"}
	switch {
	case ranks <= 1:
		return ct, nil
	case ranks > GPUsPerNode:
		return ct, fmt.Errorf("%s over %d GPUs: one NVLink domain holds %d (multi-node GPU plans are not modelled)", kind, ranks, GPUsPerNode)
	case d.BusBwGBps <= 0:
		return ct, fmt.Errorf("%s over %d %s GPUs: the preset has no NVLink (tensor parallelism needs it)", kind, ranks, d.Name)
	case bytes < 0 || math.IsNaN(bytes):
		return ct, fmt.Errorf("%s of %v bytes", kind, bytes)
	}
	n := float64(ranks)
	bw := d.BusBwGBps * 1e9
	ct.TimeS = math.Inf(1)
	for _, p := range protocols() {
		type cand struct {
			a           Algorithm
			steps       int
			moved, frac float64
		}
		var cands []cand
		switch kind {
		case AllReduce:
			cands = []cand{
				{Ring, 2 * (ranks - 1), 2 * (n - 1) / n, p.ringAllReduce},
				{Tree, 2 * log2Ceil(ranks), 2, p.treeAllReduce},
			}
		case AllGather:
			cands = []cand{{Ring, ranks - 1, (n - 1) / n, p.ringOther}}
		default:
			return ct, fmt.Errorf("no NCCL model for the collective %q", kind)
		}
		for _, c := range cands {
			t := (p.baseUs+float64(c.steps)*p.stepUs[c.a])*1e-6 + c.moved*bytes/(bw*c.frac)
			if t < ct.TimeS {
				ct.TimeS, ct.Algorithm, ct.Protocol = t, c.a, p.name
			}
		}
	}
	return ct, nil
}

// LineRateTime is the least time any algorithm needs for kind: the
// bytes each GPU must send, at the NVLink line rate each way (half the
// both-ways figure), with no latency. CollectiveTime is never below it.
func (d Device) LineRateTime(kind Collective, bytes float64, ranks int) float64 {
	if ranks <= 1 || d.NVLinkGBps <= 0 {
		return 0
	}
	n := float64(ranks)
	moved := (n - 1) / n
	if kind == AllReduce {
		moved *= 2
	}
	return moved * bytes / (d.NVLinkGBps / 2 * 1e9)
}

// Plan is how a model is spread over GPUs: each copy split TP ways with
// Megatron's tensor parallelism over the GPUs of one NVLink domain,
// Replicas copies side by side.
type Plan struct {
	TP, Replicas int
	// Derived is true when the default rule chose the plan (ChoosePlan),
	// false when the user gave it.
	Derived bool
}

// GPUs is how many GPUs the plan uses.
func (p Plan) GPUs() int { return max(p.TP, 1) * max(p.Replicas, 1) }

// HBMBytes is the device's memory capacity in bytes (decimal GB, as
// gpu.md §1.1 gives it).
func (d Device) HBMBytes() int64 { return int64(d.HBMGB * 1e9) }

// RankMemory is what one rank's graph holds: its parameters' bytes and
// its KV cache's (the cache after the pass's append).
func RankMemory(g *graph.Graph) (weights, kv int64) {
	for _, t := range g.Tensors {
		switch t.Role {
		case graph.Parameter:
			weights += t.Bytes()
		case graph.KVCache:
			if t.Producer != nil {
				kv += t.Bytes()
			}
		}
	}
	return weights, kv
}

// RankBuilder builds one rank's graph of a copy split tp ways and says
// the bytes that rank must hold in HBM (its weights and KV cache).
type RankBuilder func(tp int) (g *graph.Graph, bytes int64, err error)

// ChoosePlan is the default rule: the smallest tensor parallelism, 1 to
// GPUsPerNode, that the model divides by (heads, KV heads, the MLP) and
// whose rank's weights and KV cache fit d's HBM, with replicas copies.
// It returns the plan and that rank's graph and bytes; a model that
// fits no single node's GPUs is an error that says by how much.
func ChoosePlan(d Device, build RankBuilder, replicas int) (Plan, *graph.Graph, int64, error) {
	var last int64
	for tp := 1; tp <= GPUsPerNode; tp++ {
		if tp > 1 && d.BusBwGBps <= 0 {
			break
		}
		g, bytes, err := build(tp)
		if err != nil {
			continue // the model does not divide by tp
		}
		last = bytes
		if bytes <= d.HBMBytes() {
			return Plan{TP: tp, Replicas: max(replicas, 1), Derived: true}, g, bytes, nil
		}
	}
	if d.BusBwGBps <= 0 {
		return Plan{}, nil, 0, fmt.Errorf("the model does not fit one %s (%.1f GB of weights and KV cache against %.0f GB) and the preset has no NVLink to split it over more",
			d.Name, float64(last)/1e9, d.HBMGB)
	}
	return Plan{}, nil, 0, fmt.Errorf("the model does not fit %d %s GPUs of one node (%.1f GB of weights and KV cache per GPU at the largest split that divides it, against %.0f GB); multi-node GPU plans are not modelled (gpu.md has no inter-node GPU network figures)",
		GPUsPerNode, d.Name, float64(last)/1e9, d.HBMGB)
}

// CheckPlan checks a plan the user gave on d: the tensor parallelism
// within one node, NVLink for more than one GPU, and the rank's bytes
// within HBM. The errors name what is wrong; the caller names the field.
func CheckPlan(d Device, p Plan, bytes int64) error {
	switch {
	case p.TP <= 0:
		return fmt.Errorf("tp must be greater than 0, got %d", p.TP)
	case p.TP > GPUsPerNode:
		return fmt.Errorf("tp %d: tensor parallelism stays within one NVLink domain, %d GPUs (an HGX node); multi-node GPU plans are not modelled (gpu.md has no inter-node GPU network figures)", p.TP, GPUsPerNode)
	case p.TP > 1 && d.BusBwGBps <= 0:
		return fmt.Errorf("tp %d on %s: the preset has no NVLink", p.TP, d.Name)
	case p.Replicas < 0:
		return fmt.Errorf("replicas must not be negative, got %d", p.Replicas)
	case bytes > d.HBMBytes():
		return fmt.Errorf("tp %d does not fit %s: %.1f GB of weights and KV cache per GPU against %.0f GB (a larger tp splits it)", p.TP, d.Name, float64(bytes)/1e9, d.HBMGB)
	}
	return nil
}

package sched

import "github.com/trnsim/trnsim/workloads/tile"

// Collectives along the topology.
//
// Ring and rdh pass data between members at fixed distances in the
// member order: ring from each member to the next, round the ring; rdh
// between members whose indices differ in one bit; a broadcast's chain or
// tree from member 0 down. When the target knows the fabric's routes
// (Target.ChipHops and ChipLatencyNs), the scheduler runs those algorithms
// over the group in an order of its own, one whose partners are near on
// the fabric: a snake through a torus for ring (eight ranks on chips 0-7 of
// a 4x4 torus: 0 1 2 3 7 6 5 4, every step one hop), neighbours along each
// axis for rdh. The order is the group's own unless another is strictly
// cheaper, so ranks of one chip (or a ring already along the links) keep
// it. What a member receives does not depend on the order: an all-reduce's
// pieces are the message's, whichever position adds them up; a
// reduce-scatter's or all-gather's piece is that of the member at the
// position, wherever the order puts it; a broadcast's root stays first.

// orderCost is what a member order costs an algorithm: the sum, over its
// steps, of the farthest pair's distance times the group size, plus every
// pair's distance (so that a step's nearer pairs count too).
type orderCost struct {
	n    int
	dist [][]float64 // between members, by group index
	// cyclic: ring round the group; chain: a broadcast's chain from
	// member 0; pairs: rdh's steps (XOR partners), tree: a broadcast's
	// binomial tree.
	kind int
}

const (
	costRing = iota
	costChain
	costPairs
	costTree
)

func (oc *orderCost) of(p []int) float64 {
	n := oc.n
	d := func(a, b int) float64 { return oc.dist[p[a]][p[b]] }
	var total float64
	switch oc.kind {
	case costRing, costChain:
		last := n
		if oc.kind == costChain {
			last = n - 1
		}
		var far float64
		for i := 0; i < last; i++ {
			x := d(i, (i+1)%n)
			total += x
			far = max(far, x)
		}
		total += far * float64(n)
	case costPairs:
		for s := 1; s < n; s *= 2 {
			var far float64
			for i := 0; i < n; i++ {
				x := d(i, i^s)
				total += x
				far = max(far, x)
			}
			total += far * float64(n)
		}
	case costTree:
		for s := 1; s < n; s *= 2 {
			var far float64
			for i := 0; i < s && i+s < n; i++ {
				x := d(i, i+s)
				total += x
				far = max(far, x)
			}
			total += far * float64(n)
		}
	}
	return total
}

// memberOrder returns the order (position -> group index) in which an
// algorithm runs a group: the identity, unless the target's routes make
// another order strictly cheaper (found by a deterministic local search
// from the identity: segment reversals for a ring or chain; for rdh and a
// binomial tree, swaps and the linear relabelings of positions that turn
// an axis of a torus into its Gray code).
// Member 0 keeps position 0 in a broadcast.
func (e *expander) memberOrder(kind, algo string, group []int) []int {
	n := len(group)
	id := make([]int, n)
	for i := range id {
		id[i] = i
	}
	tg := e.tg
	if n < 3 || tg == nil || tg.ChipHops == nil || algo == tile.AlgoMesh {
		return id
	}
	oc := &orderCost{n: n}
	switch {
	case kind == tile.AllToAll || kind == tile.Send || kind == tile.Recv:
		// Every pair once, whatever the order.
		return id
	case kind == tile.Broadcast && algo == tile.AlgoRing:
		oc.kind = costChain
	case kind == tile.Broadcast:
		oc.kind = costTree
	case algo == tile.AlgoRing:
		oc.kind = costRing
	default:
		oc.kind = costPairs
	}
	key := orderKey{kind: oc.kind, group: groupKey(group)}
	if p, ok := e.orders[key]; ok {
		return p
	}
	per := tg.Limits.CoresPerChip
	oc.dist = make([][]float64, n)
	varies := false
	for i, a := range group {
		oc.dist[i] = make([]float64, n)
		for j, b := range group {
			ca, cb := a/per, b/per
			if ca == cb || ca >= len(tg.ChipHops) || cb >= len(tg.ChipHops) {
				continue
			}
			h, l := tg.ChipHops[ca][cb], tg.ChipLatencyNs[ca][cb]
			if h < 0 {
				// Not linked: never a partner if it can be helped.
				h, l = 1<<20, 1e12
			}
			// The route's latency, and a nanosecond a hop where the
			// latency does not tell hops apart.
			oc.dist[i][j] = l + float64(h)
			varies = true
		}
	}
	p := id
	if varies {
		p = append([]int(nil), id...)
		best := oc.of(p)
		first := 0
		if oc.kind == costChain || oc.kind == costTree {
			first = 1
		}
		swaps := oc.kind == costPairs || oc.kind == costTree
		tmp := make([]int, n)
		for improved := true; improved; {
			improved = false
			if swaps && n&(n-1) == 0 {
				// Relabel positions by q -> q ^ (bit k of q) << j: Gray
				// codes along a torus's axes are made of these; position 0
				// stays.
				for j := 1; j < n; j *= 2 {
					for k := 1; k < n; k *= 2 {
						if j == k {
							continue
						}
						for q := range tmp {
							f := q
							if q&k != 0 {
								f ^= j
							}
							tmp[q] = p[f]
						}
						if c := oc.of(tmp); c < best-1e-9 {
							best, improved = c, true
							copy(p, tmp)
						}
					}
				}
			}
			for a := first; a < n; a++ {
				for b := a + 1; b < n; b++ {
					if swaps {
						p[a], p[b] = p[b], p[a]
					} else {
						reverse(p[a : b+1])
					}
					if c := oc.of(p); c < best-1e-9 {
						best, improved = c, true
						continue
					}
					if swaps {
						p[a], p[b] = p[b], p[a]
					} else {
						reverse(p[a : b+1])
					}
				}
			}
		}
	}
	if e.orders == nil {
		e.orders = map[orderKey][]int{}
	}
	e.orders[key] = p
	return p
}

type orderKey struct {
	kind  int
	group string
}

func groupKey(g []int) string {
	b := make([]byte, 0, 3*len(g))
	for _, r := range g {
		b = append(b, byte(r), byte(r>>8), byte(r>>16))
	}
	return string(b)
}

func reverse(p []int) {
	for i, j := 0, len(p)-1; i < j; i, j = i+1, j-1 {
		p[i], p[j] = p[j], p[i]
	}
}

// CollectiveOrder returns the order in which the scheduler runs a
// collective of kind and algo (the algorithm it runs: see Algorithm) over
// group on tg: the group's ranks by position (ring: each sends to the
// next; rdh: positions differing in one bit are partners).
func CollectiveOrder(tg *Target, kind, algo string, group []int) []int {
	e := &expander{tg: tg}
	p := e.memberOrder(kind, algo, group)
	out := make([]int, len(p))
	for i, m := range p {
		out[i] = group[m]
	}
	return out
}

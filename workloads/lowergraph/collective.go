package lowergraph

import (
	"github.com/trnsim/trnsim/workloads/graph"
	"github.com/trnsim/trnsim/workloads/tile"
)

// Collectives lower to the tile IR's collective statements over the
// ranks of the kernel's cores loop (Options.Ranks); the scheduler expands
// them into DMA traffic between the ranks' HBM tensors.
func init() {
	extraLowerings[graph.AllReduce] = func(l *lowering, o *graph.Op) error { return l.collective(o, tile.AllReduce) }
	extraLowerings[graph.AllGather] = func(l *lowering, o *graph.Op) error { return l.collective(o, tile.AllGather) }
}

func (l *lowering) collective(o *graph.Op, kind string) error {
	if l.ranks <= 1 {
		return l.errf("a collective over %d ranks needs a parallel plan of that many ranks (parallel.tp)", o.Attrs.Ranks)
	}
	group := l.group
	if group <= 0 {
		group = l.ranks
	}
	if o.Attrs.Ranks != int64(group) {
		return l.errf("a collective over %d ranks in groups of %d", o.Attrs.Ranks, group)
	}
	in, out := l.tensor2D(o.Inputs[0]), l.tensor2D(o.Outputs[0])
	c := &tile.Collective{Kind: kind, Outs: []tile.Access{out.All()}, Ins: []tile.Access{in.All()}, OpID: l.id}
	if group < l.ranks {
		// One collective per copy: the loop's ranks in consecutive groups.
		c.GroupSize = group
	}
	l.k.Body = append(l.k.Body, c)
	return nil
}

// wrapRanks puts the whole kernel in a cores loop over n ranks: every
// tile becomes per-rank (an HBM tensor lives in its rank's chip, in its
// core's share of the HBM), and the collectives run over the loop's
// ranks.
func wrapRanks(k *tile.Kernel, n int) *tile.Kernel {
	w := tile.New(k.Name)
	loop := w.Root().For("rank", tile.C(0), tile.C(int64(n)), tile.Cores, nil)
	for _, t := range k.Tiles {
		if t.Scope == nil {
			t.Scope = loop
			loop.Tiles = append(loop.Tiles, t)
		}
		t.ID = len(w.Tiles)
		w.Tiles = append(w.Tiles, t)
	}
	for _, v := range k.Vars {
		v.Index = len(w.Vars)
		w.Vars = append(w.Vars, v)
	}
	loop.Body = append(loop.Body, k.Body...)
	k.Body, k.Tiles, k.Vars = nil, nil, nil
	return w
}

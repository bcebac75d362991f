package sched

import (
	"github.com/trnsim/trnsim/workloads/tile"
)

// Compound nests. A loop nest whose every op is a compute op pinned to an
// engine and lies inside a batched loop (a GEMM's M-tile loop: TensorE's
// K-tile batch, then VectorE's evacuation batch, for every M tile), but
// that spans several engines, is memoised whole: entered again with the
// same signature (see the batch memo), its batches are the same, in the
// same order, so the walk replays them one after another — each finds its
// dependencies and waits as when the nest is walked — without walking the
// nest or computing a signature per batch.

// compEntry is a compound nest's recorded batches.
type compEntry struct {
	key    []int64
	subs   []*memoEntry
	deltas []int64
}

// compRecord is a compound nest being walked for the first time with its
// signature.
type compRecord struct {
	nest  *nestInfo
	key   []int64
	hash  uint64
	depth int // stack depth of the nest's frame
	inst  []int64
	subs  []*memoEntry
}

// compoundable reports whether l is a compound nest: every op of it is a
// compute op pinned to one engine and sits inside a batched loop, with no
// loop over cores, no collective and no ordering edge.
func compoundable(l *tile.Loop) bool {
	if l.Kind == tile.Cores || batchable(l) {
		return false
	}
	var within func(stmts []tile.Stmt) bool
	within = func(stmts []tile.Stmt) bool {
		for _, s := range stmts {
			switch s := s.(type) {
			case *tile.Loop:
				if s.Kind == tile.Cores {
					return false
				}
				if !batchable(s) && !within(s.Body) {
					return false
				}
			case *tile.If:
				if !within(s.Then) || !within(s.Else) {
					return false
				}
			default:
				// An op outside a batched loop, or a collective.
				return false
			}
		}
		return true
	}
	return within(l.Body)
}

// markCompounds marks the outermost compound nests of stmts.
func (c *compiled) markCompounds(stmts []tile.Stmt) {
	for _, s := range stmts {
		switch s := s.(type) {
		case *tile.Loop:
			li := c.loops[s.ID]
			if li.batch {
				continue
			}
			if compoundable(s) {
				li.compound = true
				li.nest = c.newNest(s)
				continue
			}
			c.markCompounds(s.Body)
		case *tile.If:
			c.markCompounds(s.Then)
			c.markCompounds(s.Else)
		}
	}
}

// enterCompound is called when the walk enters compound nest n on core:
// it replays the nest (and reports true) when its signature is memoised,
// else starts recording its batches.
func (w *walk) enterCompound(n *nestInfo, core int) bool {
	key, h, ok := w.memoKey(n, core)
	if !ok {
		return false
	}
	for _, ce := range n.cmemo[h] {
		if equalKey(ce.key, key) {
			n.hits++
			ci := w.c.slotOf(core)
			for _, me := range ce.subs {
				w.replay(me, ci)
			}
			w.advanceTiles(n, ce.deltas)
			return true
		}
	}
	w.comp = &compRecord{nest: n, key: append([]int64(nil), key...), hash: h, depth: len(w.stack),
		inst: w.tileInsts(n, nil)}
	return false
}

// finishCompound stores the compound nest just walked.
func (w *walk) finishCompound() {
	cr := w.comp
	w.comp = nil
	n := cr.nest
	if n.cmemo == nil {
		n.cmemo = map[uint64][]*compEntry{}
	}
	n.cmemo[cr.hash] = append(n.cmemo[cr.hash], &compEntry{key: cr.key, subs: cr.subs, deltas: w.tileDeltas(n, cr.inst)})
}

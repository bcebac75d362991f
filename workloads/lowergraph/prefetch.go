package lowergraph

import (
	"slices"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/graph"
	"github.com/trnsim/trnsim/workloads/kernels"
	"github.com/trnsim/trnsim/workloads/tile"
)

// Weight streaming across ops. A Linear's weights are laid out ahead of
// time for the kernel that reads them (kernels.GEMM.BTiled: each
// partition's rows of a block one contiguous run in HBM), and stream
// through slots of one SBUF tile on a DMA queue of their own
// (GEMMOptions.WeightSlotBytes); the first blocks are loaded by the
// kernel's first statement, which moves before the previous kernel's
// statements (inlineHead): the loads depend on nothing the previous op
// computes, so in the Sync engine's program order they come before that
// op's loads, which wait for the op before it, and they run while it
// does; they move further back past the kernels before it that leave
// their slots' region alone (headOf). Each Linear's working set is
// planned in what is left of SBUF after its own slots' extension and the
// next op's slots (prefetchShare each), and the slots moved only when
// they fit beside the previous kernel's tiles.

// prefetchShare is the share of SBUF per partition a Linear's weight
// slots may take beyond its own plan's B buffers; the plan keeps two
// shares free (its own slots, and the next op's, prefetched while it
// runs).
const prefetchShare = 4 // a quarter

// streamRows is the most rows (tokens) a Linear streams its weights for:
// four M tiles.
const streamRows = 512

// reuseSlack is how much slower (by the plan search's estimate), or how
// many more HBM bytes, a plan in the reduced share may take than one with
// the whole of SBUF.
const reuseSlack = 0.01

// planLinear plans a Linear's GEMM: pre-tiled weights and, for a few
// tokens (streamRows) whose weights are at least as many bytes as the
// activations, streamed through slots sized for what the previous kernel
// leaves of SBUF (quantised weights as stored, converted one block ahead
// of their multiplies as ever, dequant.go). A weight already laid out for another Linear keeps its block
// width.
func (l *lowering) planLinear(g kernels.GEMM, w *graph.Tensor) (*kernels.GEMMPlan, error) {
	auto, err := l.planLinearWith(g, w, kernels.TransposeAuto)
	if g.AMK && !g.Dequant && l.onchipReaders[l.op] && l.onchip[l.op.Inputs[0]] != nil && (err != nil || !auto.CanReadAOnChip()) {
		// A's rows are in SBUF already (handOff): TensorE transposes
		// them where they are, which no DMA transpose can. The plan that
		// does is taken where its estimate, less the load of A's rows it
		// counts and will not make, is no slower.
		if p, terr := l.planLinearWith(g, w, kernels.TransposeTensor); terr == nil && p.CanReadAOnChip() &&
			(err != nil || p.Estimate(l.tg).TotalNs-l.rowsLoadNs(g.M, g.K, g.In) <= auto.Estimate(l.tg).TotalNs) {
			return p, nil
		}
	}
	return auto, err
}

// rowsLoadNs is the estimated time of loading rows x cols of dt into
// SBUF: a transfer's fixed latency and the bytes at the DMA engines' rate.
func (l *lowering) rowsLoadNs(rows, cols int64, dt isa.DType) float64 {
	return kernels.DMALatencyNs(l.tg) + float64(rows*cols*int64(dt.Bytes()))/max(kernels.DMAGBps(l.tg), 1)
}

// planLinearWith is planLinear with A's transposes by tr (auto: chosen).
func (l *lowering) planLinearWith(g kernels.GEMM, w *graph.Tensor, tr kernels.TransposeMode) (*kernels.GEMMPlan, error) {
	sbuf := l.tg.Limits.SBUFPartitionBytes
	share := sbuf / prefetchShare
	o := kernels.GEMMOptions{OpID: l.id, Transpose: tr, KeepResult: l.keepPlan}
	g.BTiled = max(g.Batch, 1) == 1
	if s, ok := l.weights[w]; ok {
		// Laid out already (a weight two Linears read): its blocks' width.
		if len(s.Shape) != 3 {
			g.BTiled = false
		} else {
			o.BlockN = s.Shape[2]
		}
	}
	if g.M <= streamRows && g.N*int64(g.BDType().Bytes()) >= g.M*int64(g.In.Bytes()) {
		// (A few tokens whose weights are most of the op's traffic: an op
		// short enough that the stall at its boundaries matters. Beside
		// many tokens, or activations as big, the weights' stream matters
		// less than the blocks the whole of SBUF allows.)
		o.SBUFBytes = sbuf - 2*share
		o.WeightSlotBytes = max(0, min(share, sbuf-l.lastSBUF))
	}
	plan, err := kernels.PlanGEMM(g, o, l.tg)
	if o.SBUFBytes > 0 {
		// The whole of SBUF, no slots, where the reduced share costs the
		// plan more than reuseSlack by estimate or in HBM bytes (or nothing
		// fits it): a GEMM big enough for that (many tokens, blocks that
		// fill SBUF) gains little from its weights' prefetch.
		full := o
		full.SBUFBytes, full.WeightSlotBytes = 0, 0
		if fp, ferr := kernels.PlanGEMM(g, full, l.tg); ferr == nil &&
			(err != nil || plan.Estimate(l.tg).TotalNs > fp.Estimate(l.tg).TotalNs*(1+reuseSlack) ||
				float64(plan.HBMBytes()) > float64(fp.HBMBytes())*(1+reuseSlack)) {
			plan, err = fp, nil
		}
	}
	if err != nil {
		return nil, err
	}
	if s, ok := l.weights[w]; ok && !slices.Equal(s.Shape, plan.BShape()) {
		// Another Linear's layout that this plan cannot read: plan again
		// on the plain [in, out] layout.
		g.BTiled = false
		return kernels.PlanGEMM(g, kernels.GEMMOptions{OpID: l.id}, l.tg)
	}
	return plan, nil
}

// hoist says which of a Linear's first statements move earlier in the
// body: head statements (its weights' slots' loads) before the kernels
// from body position at on, and then aRes statements (a resident A's
// loads) before the last kernel; region is the slot region the head's
// slots are pinned in (-1: none).
type hoist struct {
	head, at, aRes, region int
}

// headOf returns which head statements of a Linear's kernel k move
// earlier: its weight slots' loads, when the slots fit in the SBUF region
// of their turn, above everything the previous kernel's tiles can take;
// and then a resident A's loads, when nothing from the previous kernel on
// writes A (a of them, the activations' tensor) and A's tiles fit beside
// the previous kernel's below the regions: Linears that read one input
// (queries, keys and values) load it while the one before runs. The
// slots are pinned there: two regions at the top of SBUF, a
// prefetchShare each, taken in turn by the Linears whose weights are
// prefetched, so a Linear's slots never reuse the memory of the work they
// are loaded beside (whose reads their loads would wait for) and never
// meet the next one's.
//
// The weights' loads move back past every kernel whose tiles stay below
// the region, up to the one that used the region last (the Linear two
// prefetches back) or one whose tiles reach it (prefetchAt): they depend
// on nothing those kernels compute, only on the region's last reads, so
// the weight stream keeps the DMA engines busy across the ops between,
// such as an attention or a norm, which stream little of their own.
func (l *lowering) headOf(p *kernels.GEMMPlan, k *tile.Kernel, a *tile.Tile) hoist {
	sbuf := l.tg.Limits.SBUFPartitionBytes
	share := sbuf / prefetchShare
	start := sbuf - share*int64(1+l.slotTurn)
	h := hoist{at: l.lastStart, region: -1}
	if p.HeadStmts() > 0 {
		at := l.prefetchAt(l.slotTurn, start)
		if p.SlotSBUFBytes() > share || at >= len(l.k.Body) || sbufFootprint(k)-slotFootprint(k) > start {
			// (Slots too big for a region, or no kernel to move before, or
			// a plan whose other tiles need SBUF above the region's start:
			// one planned with the whole of SBUF, a resident A of many K
			// tiles, which pinned slots would leave no room for.)
			return hoist{region: -1}
		}
		for _, t := range k.Tiles {
			if t.Name == kernels.SlotTileName {
				t.Offset = start
			}
		}
		h.head, h.at, h.region = p.HeadStmts(), at, l.slotTurn
		l.slotTurn ^= 1
	}
	if p.AResidentStmts() > 0 && l.lastSBUF+p.AResidentSBUFBytes() <= sbuf-2*share && !l.writtenSince(a) {
		h.aRes = p.AResidentStmts()
	}
	return h
}

// slotFootprint is the SBUF per partition of a GEMM kernel's unpinned
// weight slots (kernels.SlotTileName), as sbufFootprint counts them.
func slotFootprint(k *tile.Kernel) int64 {
	var n int64
	for _, t := range k.Tiles {
		if t.Name == kernels.SlotTileName && t.Mem == isa.MemSBUF && t.Offset < 0 {
			n += (t.Bytes() + 63) / 64 * 64 * int64(max(t.Bufs, 1))
		}
	}
	return n
}

// prefetchAt returns the body position a head whose slots take region
// (from byte start per partition up) moves to: before the last kernel
// and each kernel before it whose tiles stay below start, back to the
// kernel after the one whose slots took the region last or whose tiles
// reach it; the body's end where the last kernel is such a one.
func (l *lowering) prefetchAt(region int, start int64) int {
	at := len(l.k.Body)
	for i := len(l.kernels) - 1; i >= 0; i-- {
		kn := l.kernels[i]
		if kn.region == region || kn.sbuf > start {
			break
		}
		at = kn.start
	}
	return at
}

// writtenSince reports whether a statement from the last kernel inlined
// on writes t.
func (l *lowering) writtenSince(t *tile.Tile) bool {
	var walk func(stmts []tile.Stmt) bool
	writes := func(as []tile.Access) bool {
		for _, x := range as {
			if x.Tile == t {
				return true
			}
		}
		return false
	}
	walk = func(stmts []tile.Stmt) bool {
		for _, s := range stmts {
			switch s := s.(type) {
			case *tile.Op:
				if writes(s.Outs) {
					return true
				}
			case *tile.Collective:
				if writes(s.Outs) {
					return true
				}
			case *tile.Loop:
				if walk(s.Body) {
					return true
				}
			case *tile.If:
				if walk(s.Then) || walk(s.Else) {
					return true
				}
			}
		}
		return false
	}
	return walk(l.k.Body[l.lastStart:])
}

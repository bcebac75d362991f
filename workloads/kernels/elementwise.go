package kernels

import (
	"fmt"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/sched"
	. "github.com/trnsim/trnsim/workloads/tile"
)

// Elementwise is out = op(x[, y]) over [Rows, Cols] tensors: an
// activation on ScalarE (Func), or a binary ALU op (ALU) on VectorE or
// GpSimd, or a copy.
type Elementwise struct {
	Rows, Cols int64
	DType      isa.DType
	// Binary ops set ALU; unary ones Func (ScalarE) or neither (a copy).
	ALU    isa.ALUOp
	Func   isa.ActFunc
	Unary  bool
	Engine isa.Engine
}

// ElementwiseOptions are the elementwise kernel's choices (0: chosen).
type ElementwiseOptions struct {
	// Free is the free size of each instruction: the elements of a tile
	// per partition. Below Cols a tile is a block of 128 rows and Free
	// columns; at Cols or above it holds whole rows, Free / Cols of them
	// per partition.
	Free    int64
	Buffers int64
	OpID    int32
}

// ElementwisePlan is a resolved elementwise lowering.
type ElementwisePlan struct {
	E Elementwise
	// Free is the free size of a full tile (its elements per partition);
	// NBuf the tile slots the loads, the compute and the stores rotate
	// over.
	Free, NBuf int64
	// RowsPer is the rows of X a partition holds in a tile of whole rows
	// (0: tiles are blocks of 128 rows and Free columns).
	RowsPer int64
	// The last Rows % 128 rows (the tail) are cut into column chunks of
	// TailWidth columns, TailPieces of them side by side in a tile's
	// partitions, so that a short block of rows still spreads over the
	// DMA engines (each serves a fixed block of partitions).
	TailPieces, TailWidth int64
	// StoreEngine triggers the stores (the loads are Sync's); LoadQueue
	// and StoreQueue are the DMA queues they use (-1: the scheduler's).
	StoreEngine           isa.Engine
	LoadQueue, StoreQueue int
	auto                  map[string]bool
	opID                  int32
}

// Automatic tile sizes: a power of two of bytes per partition, near a
// third of the tensor's bytes per partition (a small tensor is then 3
// tiles, whose pipeline still overlaps), at least ewMinTileBytes, at most
// ewTileBytes (a descriptor per partition row of that size keeps the DMA
// engines' fixed cost per descriptor small, while the pipeline's fill and
// drain, one load and one store alone, stay short), and at most
// ewHeavyTileBytes where the compute takes most of the DMA time of a tile
// (then the fill and drain, which hold one tile's compute, matter more
// than the descriptors). Up to ewMaxBuffers slots.
const (
	ewTileBytes      = 16384
	ewHeavyTileBytes = 4096
	ewMinTileBytes   = 2048
	ewMinTiles       = 3
	ewMaxBuffers     = 8
	// ewHeavy is the compute time per tile, relative to its DMA time at
	// the core's bandwidth, from which the compute is heavy.
	ewHeavy = 0.75
)

// autoFree is the automatic free size (see ewTileBytes).
func (p *ElementwisePlan) autoFree(tg *sched.Target, nIn int64) int64 {
	e, lim := p.E, tg.Limits
	eb := int64(e.DType.Bytes())
	per := mul(ceilDiv(e.Rows, 128), e.Cols, eb) / ewMinTiles
	b := int64(ewMinTileBytes)
	for b < ewTileBytes && b*3 < per*2 { // the first power of two of at least 2/3 of per
		b *= 2
	}
	if b > ewHeavyTileBytes && p.heavy(tg, nIn, b/eb) {
		b = ewHeavyTileBytes
	}
	free := max(b/eb, 1)
	if lim.VectorFreeMaxSBUF > 0 {
		free = min(free, lim.VectorFreeMaxSBUF)
	}
	return free
}

// heavy reports whether the compute of a full tile of free elements per
// partition takes ewHeavy of the tile's transfers' time or more.
func (p *ElementwisePlan) heavy(tg *sched.Target, nIn, free int64) bool {
	e := p.E
	if tg.Cost == nil || tg.DMAEngineGBps <= 0 || tg.Limits.DMAEngines <= 0 {
		return false
	}
	buf := isa.Buffer{Mem: isa.MemSBUF, DType: e.DType, Shape: []int64{128, free}}
	v, err := buf.View(0)
	if err != nil {
		return false
	}
	body := &isa.Body{Engine: e.Engine, Outs: []isa.Operand{v}, Ins: []isa.Operand{v}}
	switch {
	case !e.Unary:
		body.Op, body.Attrs.ALU0 = isa.OpTensorTensor, e.ALU
		body.Ins = append(body.Ins, v)
	case e.Engine == isa.EngineScalar:
		body.Op, body.Attrs.Func, body.Attrs.Scale = isa.OpActivation, e.Func, 1
	default:
		body.Op = isa.OpTensorCopy
	}
	if !body.Op.RunsOn(e.Engine) {
		return false
	}
	var env isa.CostEnv
	cost := tg.Cost.CostOf(&isa.Instruction{Body: body}, 0, &env)
	ghz := tg.ClockGHz[e.Engine]
	if ghz <= 0 {
		ghz = 1
	}
	computeNs := float64(cost.IntervalCycles) / ghz
	dmaNs := float64((nIn+1)*128*free*int64(e.DType.Bytes())) / (tg.DMAEngineGBps * float64(tg.Limits.DMAEngines))
	return computeNs >= ewHeavy*dmaNs
}

// PlanElementwise resolves the options.
func PlanElementwise(e Elementwise, o ElementwiseOptions, tg *sched.Target) (*ElementwisePlan, error) {
	lim := tg.Limits
	if e.Rows <= 0 || e.Cols <= 0 {
		return nil, &ShapeError{Dim: "rows", Msg: fmt.Sprintf("elementwise over [%d, %d]: sizes must be positive", e.Rows, e.Cols)}
	}
	if o.Free < 0 {
		return nil, optErr("elementwise_free", "%d: the free size must be positive", o.Free)
	}
	if o.Buffers < 0 {
		return nil, optErr("buffers", "%d: buffers must be positive", o.Buffers)
	}
	p := &ElementwisePlan{E: e, Free: o.Free, NBuf: o.Buffers, auto: map[string]bool{}, opID: o.OpID}
	eb := int64(e.DType.Bytes())
	nIn := int64(1)
	if !e.Unary {
		nIn = 2
	}
	ts := []hbmTensor{{"X", e.DType, []int64{e.Rows, e.Cols}}}
	if !e.Unary {
		ts = append(ts, hbmTensor{"Y", e.DType, []int64{e.Rows, e.Cols}})
	}
	if err := checkHBM("elementwise", tg, append(ts, hbmTensor{"OUT", e.DType, []int64{e.Rows, e.Cols}})...); err != nil {
		return nil, err
	}
	if p.Free == 0 {
		p.auto["elementwise_free"] = true
		p.Free = p.autoFree(tg, nIn)
	}
	if p.Free > lim.VectorFreeMaxSBUF {
		return nil, optErr("elementwise_free", "%d exceeds the engines' free size limit of %d", p.Free, lim.VectorFreeMaxSBUF)
	}
	if p.Free >= e.Cols {
		// Whole rows: as many per partition as the free size holds, but
		// no more than leave ewMinTiles tiles (when chosen) or fill 128
		// partitions.
		most := e.Rows / 128
		if p.auto["elementwise_free"] {
			most /= ewMinTiles
		}
		p.RowsPer = max(min(p.Free/e.Cols, most), 1)
		p.Free = p.RowsPer * e.Cols
	}
	p.planTail(tg)
	slot := roundUp(mul(p.Free, eb), 64)
	if p.NBuf == 0 {
		p.auto["buffers"] = true
		p.NBuf = min(int64(ewMaxBuffers), p.tiles()+2)
		for p.NBuf > 2 && mul(p.NBuf, nIn, slot) > lim.SBUFPartitionBytes {
			p.NBuf--
		}
	}
	// The result overwrites the tile of X it is computed from.
	if need := mul(p.NBuf, nIn, slot); need > lim.SBUFPartitionBytes {
		return nil, &sched.FitError{Kernel: "elementwise", Tile: "the input and output tiles", Mem: isa.MemSBUF, Needed: need, Available: lim.SBUFPartitionBytes}
	}
	// A compute engine that can trigger the store does so right after its
	// instruction; VectorE and GpSimd leave it to Sync, behind the loads.
	p.StoreEngine = isa.EngineSync
	if e.Engine == isa.EngineScalar {
		p.StoreEngine = isa.EngineScalar
	}
	var syncQ, scalarQ int
	p.LoadQueue, syncQ, scalarQ = p.queues(tg)
	p.StoreQueue = syncQ
	if p.StoreEngine == isa.EngineScalar {
		p.StoreQueue = scalarQ
	}
	return p, nil
}

// Choices lists the resolved options.
func (p *ElementwisePlan) Choices() []Choice {
	return []Choice{{Name: "elementwise_free", Value: p.Free, Auto: p.auto["elementwise_free"]},
		{Name: "buffers", Value: p.NBuf, Auto: p.auto["buffers"]}}
}

// ewDMAOverheadNs is the estimated cost of one more transfer: its share
// of a hardware DGE block's time (two blocks, ~600 ns an instruction).
const ewDMAOverheadNs = 300

// planTail chooses how the tail rows are spread: the number of column
// pieces side by side that minimises the estimated time of the busiest DMA
// engine plus the cost of the extra transfers.
func (p *ElementwisePlan) planTail(tg *sched.Target) {
	e := p.E
	rt := e.Rows % 128
	p.TailPieces, p.TailWidth = 1, min(p.Free, e.Cols)
	if rt == 0 {
		return
	}
	engines := int64(max(tg.Limits.DMAEngines, 1))
	perEngine := max(128/engines, 1) // partitions an engine serves
	bw := max(tg.DMAEngineGBps, 1)
	eb := int64(e.DType.Bytes())
	best := 0.0
	for k := int64(1); k*rt <= 128 && k <= e.Cols; k++ {
		w := min(p.Free, ceilDiv(e.Cols, k))
		chunks := ceilDiv(e.Cols, w)
		tiles := ceilDiv(chunks, k)
		// The busiest engine moves up to perEngine rows of each of its
		// pieces' columns.
		rows := min(perEngine, rt)
		ns := float64(tiles*rows*w*eb)/bw + float64(chunks)*ewDMAOverheadNs
		if k == 1 || ns < best {
			best, p.TailPieces, p.TailWidth = ns, k, w
		}
	}
}

// ewSeg is a run of count tiles cut the same way; tile(i) gives tile i
// of the run (i an expression from 0).
type ewSeg struct {
	count int64
	tile  func(i Expr) ewTile
}

// ewTile is a tile's transfers, each a slice of the HBM tensors (hbm) and
// the matching part of the tile's slot (sb), and the parts of the slot
// the compute covers (comp: the pieces, or a union of them that the
// engines' partition start rules allow).
type ewTile struct {
	hbm  []func(t *Tile) Access
	sb   []func(t *Tile, slot Expr) Access
	comp []func(t *Tile, slot Expr) Access
}

func ewSlot(p0, np Expr, cols Expr) func(t *Tile, s Expr) Access {
	return func(t *Tile, s Expr) Access { return t.At(RS(p0, np), I(s), R(C(0), cols)) }
}

// segments cuts the tensor into tiles: the blocks of 128 rows (whole rows,
// RowsPer to a partition, or Free columns at a time), then the tail.
func (p *ElementwisePlan) segments() []ewSeg {
	e := p.E
	var segs []ewSeg
	nblk := e.Rows / 128
	if nblk > 0 && p.RowsPer == 0 {
		nc := ceilDiv(e.Cols, p.Free)
		segs = append(segs, ewSeg{count: nblk * nc, tile: func(j Expr) ewTile {
			rb, cb := j.Div(C(nc)), j.Mod(C(nc))
			cols := Min(C(p.Free), C(e.Cols).Sub(cb.MulC(p.Free)))
			sb := ewSlot(C(0), C(128), cols)
			return ewTile{
				hbm: []func(t *Tile) Access{func(t *Tile) Access { return t.At(RS(rb.MulC(128), C(128)), RS(cb.MulC(p.Free), cols)) }},
				sb:  []func(t *Tile, s Expr) Access{sb}, comp: []func(t *Tile, s Expr) Access{sb},
			}
		}})
	}
	if nblk > 0 && p.RowsPer > 0 {
		rows := func(base, t int64) func(j Expr) ewTile {
			return func(j Expr) ewTile {
				// Partition p holds rows p*t ... p*t + t - 1 of the
				// tile's 128*t: contiguous in HBM and in the slot.
				re := &Rearrange{In: [][]string{{"p", "t"}, {"c"}}, Out: []string{"p", "t", "c"}, Sizes: map[string]int64{"p": 128}}
				r0 := j.MulC(128 * t).AddC(base)
				sb := ewSlot(C(0), C(128), C(t*e.Cols))
				return ewTile{
					hbm: []func(h *Tile) Access{func(h *Tile) Access { return h.At(RS(r0, C(128*t))).Rearranged(re) }},
					sb:  []func(t *Tile, s Expr) Access{sb}, comp: []func(t *Tile, s Expr) Access{sb},
				}
			}
		}
		t := p.RowsPer
		if n := nblk / t; n > 0 {
			segs = append(segs, ewSeg{count: n, tile: rows(0, t)})
		}
		if t2 := nblk % t; t2 > 0 {
			segs = append(segs, ewSeg{count: 1, tile: rows(nblk/t*t*128, t2)})
		}
	}
	rt := e.Rows % 128
	if rt == 0 {
		return segs
	}
	// The tail: chunks of w columns of its rt rows, k side by side in the
	// partitions (chunk c of a tile in partitions c*rt ... c*rt + rt - 1).
	k, w := p.TailPieces, p.TailWidth
	r0 := nblk * 128
	chunks := ceilDiv(e.Cols, w)
	tiles := ceilDiv(chunks, k)
	add := func(t *ewTile, c Expr, i int64, cols Expr) {
		t.hbm = append(t.hbm, func(h *Tile) Access { return h.At(RS(C(r0), C(rt)), RS(c.MulC(w), cols)) })
		t.sb = append(t.sb, ewSlot(C(i*rt), C(rt), cols))
	}
	if tiles > 1 {
		// Every tail tile but the last has k chunks of w columns.
		segs = append(segs, ewSeg{count: tiles - 1, tile: func(j Expr) ewTile {
			var t ewTile
			for i := int64(0); i < k; i++ {
				add(&t, j.MulC(k).AddC(i), i, C(w))
			}
			t.comp = append(t.comp, ewSlot(C(0), C(k*rt), C(w)))
			return t
		}})
	}
	segs = append(segs, ewSeg{count: 1, tile: func(Expr) ewTile {
		var t ewTile
		first := (tiles - 1) * k
		nf := int64(0) // chunks of the full width
		for c := first; c < chunks; c++ {
			cw := min(w, e.Cols-c*w)
			add(&t, C(c), c-first, C(cw))
			if cw == w {
				nf++
			}
		}
		if nf > 0 {
			t.comp = append(t.comp, ewSlot(C(0), C(nf*rt), C(w)))
		}
		if first+nf < chunks {
			cw := e.Cols - (chunks-1)*w
			for _, pr := range ewPartRanges(nf*rt, rt) {
				t.comp = append(t.comp, ewSlot(C(pr[0]), C(pr[1]), C(cw)))
			}
		}
		return t
	}})
	return segs
}

// ewPartRanges splits partitions [a, a+n) into ranges that an engine
// access may use: more than 64 partitions from 0, more than 32 from 0 or
// 64, else within one quadrant of 32.
func ewPartRanges(a, n int64) [][2]int64 {
	var out [][2]int64
	for n > 0 {
		m := min(n, 32-a%32)
		switch {
		case a == 0:
			m = n
		case a%64 == 0:
			m = min(n, 64)
		}
		out = append(out, [2]int64{a, m})
		a, n = a+m, n-m
	}
	return out
}

// tiles is the number of tiles.
func (p *ElementwisePlan) tiles() int64 {
	var n int64
	for _, s := range p.segments() {
		n += s.count
	}
	return n
}

// forTile calls fn with tile j's cut: j is an expression over all the
// segments' tiles in order, so the cut is chosen by conditionals on it.
func (p *ElementwisePlan) forTile(b *Block, segs []ewSeg, j Expr, fn func(b *Block, t ewTile)) {
	var rec func(b *Block, i int, base int64)
	rec = func(b *Block, i int, base int64) {
		sg := segs[i]
		local := j.Sub(C(base))
		if i == len(segs)-1 {
			fn(b, sg.tile(local))
			return
		}
		b.If(j.Lt(C(base+sg.count)), func(b *Block) { fn(b, sg.tile(local)) },
			func(b *Block) { rec(b, i+1, base+sg.count) })
	}
	rec(b, 0, 0)
}

// Kernel writes the plan: the tensor is cut into tiles, each loaded into
// one of NBuf slots, computed in place and stored. The loads are issued by
// Sync and run ahead of the compute over the slots (software pipelined:
// iteration r loads tile r, computes tile r - lead and, when Sync stores,
// stores tile r - lead - 1), so that no engine waits in program order for
// a transfer that a later tile does not need.
func (p *ElementwisePlan) Kernel() (*Kernel, error) {
	e := p.E
	k := New("elementwise")
	x := k.Tensor("X", e.DType, Input, e.Rows, e.Cols)
	var y *Tile
	if !e.Unary {
		y = k.Tensor("Y", e.DType, Input, e.Rows, e.Cols)
	}
	out := k.Tensor("OUT", e.DType, Output, e.Rows, e.Cols)
	root := k.Root()
	nb := p.NBuf
	// The slots span 128 partitions, or those of the tail's pieces.
	parts := int64(128)
	if e.Rows < 128 {
		parts = p.TailPieces * e.Rows
	}
	xs := root.Tile("xin", isa.MemSBUF, e.DType, []int64{parts, nb, p.Free}, 1)
	var ys *Tile
	if !e.Unary {
		ys = root.Tile("yin", isa.MemSBUF, e.DType, []int64{parts, nb, p.Free}, 1)
	}
	segs := p.segments()
	nt := p.tiles()
	id := p.opID
	dma := func(b *Block, eng isa.Engine, dst, src Access, q int) {
		b.Add(pinQueue(&Op{Opcode: isa.OpDMACopy, Engine: eng, Outs: []Access{dst}, Ins: []Access{src}, OpID: id}, q))
	}
	load := func(b *Block, j Expr) {
		s := j.Mod(C(nb))
		p.forTile(b, segs, j, func(b *Block, t ewTile) {
			for i := range t.hbm {
				dma(b, isa.EngineSync, t.sb[i](xs, s), t.hbm[i](x), p.LoadQueue)
				if !e.Unary {
					dma(b, isa.EngineSync, t.sb[i](ys, s), t.hbm[i](y), p.LoadQueue)
				}
			}
		})
	}
	store := func(b *Block, t ewTile, s Expr) {
		for i := range t.hbm {
			dma(b, p.StoreEngine, t.hbm[i](out), t.sb[i](xs, s), p.StoreQueue)
		}
	}
	// Sync's stores run a stage after the compute, behind the loads of
	// the next iteration, which then must not reuse the slot (NBuf >= 2).
	syncStage := p.StoreEngine == isa.EngineSync && nb >= 2
	compute := func(b *Block, j Expr) {
		s := j.Mod(C(nb))
		p.forTile(b, segs, j, func(b *Block, t ewTile) {
			for _, c := range t.comp {
				ins := []Access{c(xs, s)}
				if !e.Unary {
					ins = append(ins, c(ys, s))
				}
				op := &Op{Engine: e.Engine, Outs: []Access{c(xs, s)}, Ins: ins, OpID: id}
				switch {
				case !e.Unary:
					op.Opcode, op.Attrs.ALU0 = isa.OpTensorTensor, e.ALU
				case e.Engine == isa.EngineScalar:
					op.Opcode, op.Attrs.Func, op.Attrs.Scale = isa.OpActivation, e.Func, 1
				default:
					op.Opcode = isa.OpTensorCopy
				}
				b.Add(op)
			}
			if !syncStage {
				store(b, t, s)
			}
		})
	}
	stages := []func(b *Block, j Expr){compute}
	if syncStage {
		stages = append(stages, func(b *Block, j Expr) {
			p.forTile(b, segs, j, func(b *Block, t ewTile) { store(b, t, j.Mod(C(nb))) })
		})
	}
	lead := max(nb-1-int64(len(stages)), 0)
	ewPipeline(root, "r", nt, lead, load, stages...)
	if err := k.Finish(); err != nil {
		return nil, fmt.Errorf("internal error: the elementwise kernel: %w", err)
	}
	return k, nil
}

// ewPipeline builds the loop over nt tiles: iteration r loads tile r and
// runs stage k of tile r - lead - k.
func ewPipeline(b *Block, name string, nt, lead int64, load func(b *Block, j Expr), stages ...func(b *Block, j Expr)) {
	last := lead + int64(len(stages)) - 1
	b.For(name, C(0), C(nt+last), Sequential, func(b *Block, r Expr) {
		b.When(r.Lt(C(nt)), func(b *Block) { load(b, r) })
		for k, st := range stages {
			d := lead + int64(k)
			cond := r.Ge(C(d)).And(r.Lt(C(nt + d)))
			if d == 0 {
				cond = r.Lt(C(nt))
			}
			b.When(cond, func(b *Block) { st(b, r.Sub(C(d))) })
		}
	})
}

// queues returns the DMA queues the kernel pins (-1: the scheduler's
// choice): the loads, the stores Sync triggers and those ScalarE does.
// Every load goes to one queue, so that the DMA engines serve the loads
// in the order the compute needs them (queues are served side by side:
// with the loads spread over several, a load needed now shares the
// engines with the prefetches behind it). The stores take queues of their
// own. The queues are the last the scheduler hands out to the transfers a
// kernel leaves open (every triggering engine takes 3 by default, of the
// hardware's 16), so that the kernel inlined next to others keeps clear of
// theirs.
func (p *ElementwisePlan) queues(tg *sched.Target) (load, syncStore, scalarStore int) {
	n := tg.Limits.DMAQueues
	if n < 3 {
		return -1, -1, -1
	}
	classes := max(tg.DMAQoSClasses, 1)
	var order []int
	for cl := 0; cl < classes; cl++ {
		for q := cl; q < n; q += classes {
			order = append(order, q)
		}
	}
	return order[n-1], order[n-2], order[n-3]
}

func pinQueue(o *Op, q int) *Op {
	if q >= 0 {
		o.Attrs.Queue, o.QueuePinned = int16(q), true
	}
	return o
}

package kernels

import (
	"fmt"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/sched"
	. "github.com/trnsim/trnsim/workloads/tile"
)

// Softmax is OUT = softmax(X) along the last dimension of X [Rows, Cols]:
// exp(x - max(x)) / sum(exp(x - max(x))) per row, in DType.
type Softmax struct {
	Rows, Cols int64
	DType      isa.DType
}

// SoftmaxOptions are the softmax kernel's choices (0: chosen).
type SoftmaxOptions struct {
	Buffers int64
	OpID    int32
	// Free is the columns per chunk: a whole row when it is at least Cols
	// (one pass over X), else rows are processed in chunks of Free columns
	// in two passes (0: whole rows when they fit SBUF).
	Free int64
}

// SoftmaxPlan is a resolved softmax lowering.
//
// One pass (whole rows in SBUF): per tile of 128 rows, the row max
// (tensor_reduce), exp(x - max) on ScalarE with the row sum accumulated,
// and the division by the sum (tensor_scalar), in place.
//
// Two passes (rows longer than a chunk): the first pass keeps a running
// max M and a running sum s over the chunks (online softmax: s = s *
// exp(M_old - M_new) + sum(exp(x - M_new))); the second reloads each chunk
// and writes exp(x - M - ln s) with one activation.
type SoftmaxPlan struct {
	S          Softmax
	NBuf, Free int64
	TwoPass    bool
	// Engines of the row max, of the division (one pass), and of the small
	// per-row ops.
	MaxEngine, ScaleEngine, Small isa.Engine
	// ScalarDType is the dtype of the per-row max and sum that the
	// per-element ops read: the data dtype when it is BF16/FP16 (VectorE's
	// fast modes), else FP32.
	ScalarDType isa.DType
	// BusyNs is the estimated busy time of each engine per full tile (one
	// pass) or per full chunk (both passes of it).
	BusyNs [isa.NumEngines]float64
	auto   map[string]bool
	opID   int32
}

// softmaxChunk is the default chunk of the two-pass softmax: 4096 columns
// (8 KiB per partition in BF16) make transfers that saturate the DMA.
const softmaxChunk = 4096

// PlanSoftmax resolves the options.
func PlanSoftmax(s Softmax, o SoftmaxOptions, tg *sched.Target) (*SoftmaxPlan, error) {
	lim := tg.Limits
	if s.Rows <= 0 || s.Cols <= 0 {
		return nil, &ShapeError{Dim: "rows", Msg: fmt.Sprintf("softmax of [%d, %d]: sizes must be positive", s.Rows, s.Cols)}
	}
	if o.Buffers < 0 || o.Free < 0 {
		return nil, optErr("buffers", "options must not be negative")
	}
	if err := checkHBM("softmax", tg, hbmTensor{"X", s.DType, []int64{s.Rows, s.Cols}}, hbmTensor{"OUT", s.DType, []int64{s.Rows, s.Cols}}); err != nil {
		return nil, err
	}
	p := &SoftmaxPlan{S: s, NBuf: o.Buffers, Free: o.Free, auto: map[string]bool{}, opID: o.OpID, ScalarDType: isa.FP32}
	if s.DType.IsHalf() {
		p.ScalarDType = s.DType
	}
	eb := int64(s.DType.Bytes())
	fixed := int64(16 * 64) // the per-row tiles
	tiles := ceilDiv(s.Rows, 128)
	row := roundUp(mul(s.Cols, eb), 64)
	if p.Free == 0 {
		p.auto["softmax_free"] = true
		p.Free = s.Cols
		if s.Cols > lim.VectorFreeMaxSBUF || add(fixed, mul(2, row)) > lim.SBUFPartitionBytes {
			p.Free = min(s.Cols, softmaxChunk)
		}
	}
	p.Free = min(p.Free, s.Cols)
	if p.Free > lim.VectorFreeMaxSBUF {
		return nil, optErr("softmax_free", "%d exceeds the engines' free size limit of %d", p.Free, lim.VectorFreeMaxSBUF)
	}
	p.TwoPass = p.Free < s.Cols
	slot := roundUp(mul(p.Free, eb), 64)
	slots := int64(1) // slot tiles per buffer: the second pass has its own
	if p.TwoPass {
		slots = 2
		tiles = ceilDiv(s.Cols, p.Free)
	}
	if p.NBuf == 0 {
		p.auto["buffers"] = true
		p.NBuf = autoRowBuffers(fixed, mul(slots, slot), tiles, lim.SBUFPartitionBytes)
	}
	if need := add(fixed, mul(p.NBuf, slots, slot)); need > lim.SBUFPartitionBytes {
		return nil, &sched.FitError{Kernel: "softmax", Tile: "the row tiles", Mem: isa.MemSBUF, Needed: need, Available: lim.SBUFPartitionBytes}
	}
	p.assign(tg)
	return p, nil
}

// Choices lists the resolved options.
func (p *SoftmaxPlan) Choices() []Choice {
	return []Choice{{Name: "softmax_free", Value: p.Free, Auto: p.auto["softmax_free"]},
		{Name: "buffers", Value: p.NBuf, Auto: p.auto["buffers"]}}
}

// assign chooses the engines by estimated busy time per tile (or chunk).
func (p *SoftmaxPlan) assign(tg *sched.Target) {
	c := rowCost{tg}
	dt, sdt := p.S.DType, p.ScalarDType
	x, xf, sc := c.view(dt, p.Free), c.view(isa.FP32, 1), c.view(sdt, 1)
	var base [isa.NumEngines]float64
	base[isa.EngineScalar] = c.ns(isa.OpActivation, isa.EngineScalar, isa.Attrs{Func: isa.ActExp, Scale: 1, Accumulate: isa.ALUAdd}, x, x, xf) +
		c.ns(isa.OpActReadAccumulator, isa.EngineScalar, isa.Attrs{}, xf)
	if p.TwoPass {
		base[isa.EngineScalar] += c.ns(isa.OpActivation, isa.EngineScalar, isa.Attrs{Func: isa.ActExp, Scale: 1}, x, x, xf)
	}
	var mx, scale rowStep
	for _, e := range []isa.Engine{isa.EngineVector, isa.EngineGpSimd} {
		mx[e] = c.ns(isa.OpTensorReduce, e, isa.Attrs{ALU0: isa.ALUMax, Axis: 1}, sc, x)
	}
	steps := []rowStep{mx}
	if !p.TwoPass {
		for _, e := range []isa.Engine{isa.EngineVector, isa.EngineScalar, isa.EngineGpSimd} {
			scale[e] = c.ns(isa.OpTensorScalar, e, isa.Attrs{ALU0: isa.ALUDivide}, x, x, sc)
		}
		steps = append(steps, scale)
	}
	engs, load := assignRows(base, steps)
	p.BusyNs = load
	p.MaxEngine = engs[0]
	if !p.TwoPass {
		p.ScaleEngine = engs[1]
	}
	p.Small = isa.EngineVector
	if load[isa.EngineGpSimd] < load[isa.EngineVector] {
		p.Small = isa.EngineGpSimd
	}
}

// Kernel writes the plan.
func (p *SoftmaxPlan) Kernel() (*Kernel, error) {
	s := p.S
	k := New("softmax")
	x := k.Tensor("X", s.DType, Input, s.Rows, s.Cols)
	out := k.Tensor("OUT", s.DType, Output, s.Rows, s.Cols)
	if p.TwoPass {
		p.twoPass(k, x, out)
	} else {
		p.onePass(k, x, out)
	}
	if err := k.Finish(); err != nil {
		return nil, fmt.Errorf("internal error: the softmax kernel: %w", err)
	}
	return k, nil
}

// onePass holds whole rows: tile j is loaded into slot j % NBuf, and its
// max, exponentials (in place, summed by ScalarE's accumulator) and
// division run NBuf - 3 tiles behind the loads.
func (p *SoftmaxPlan) onePass(k *Kernel, x, out *Tile) {
	s, sdt, id := p.S, p.ScalarDType, p.opID
	parts := min(s.Rows, 128)
	nb := p.NBuf
	nbuf := int(nb)
	root := k.Root()
	xs := root.Tile("x", isa.MemSBUF, s.DType, []int64{parts, nb, s.Cols}, 1)
	rowsOf := func(j Expr) Expr { return Min(C(128), C(s.Rows).Sub(j.MulC(128))) }
	slot := func(j Expr) Access { return xs.At(R(C(0), rowsOf(j)), I(j.Mod(C(nb)))) }
	load := func(b *Block, j Expr) {
		b.Add(&Op{Opcode: isa.OpDMACopy, Engine: isa.EngineSync, Outs: []Access{slot(j)}, Ins: []Access{x.At(RS(j.MulC(128), rowsOf(j)))}, OpID: id})
	}
	// The row sum passes from the exponential stage to the division
	// stage, one tile later: slot j % NBuf of a tile declared once.
	sums := root.Tile("sum", isa.MemSBUF, sdt, []int64{parts, nb, 1}, 1)
	exps := func(b *Block, j Expr) {
		rows := rowsOf(j)
		t := slot(j)
		rs := func(t *Tile) Access { return t.At(R(C(0), rows)) }
		op := func(o *Op) { o.OpID = id; b.Add(o) }
		mx := b.Tile("mx", isa.MemSBUF, sdt, []int64{parts, 1}, nbuf)
		nmx := b.Tile("nmx", isa.MemSBUF, isa.FP32, []int64{parts, 1}, nbuf)
		op(&Op{Opcode: isa.OpTensorReduce, Engine: p.MaxEngine, Outs: []Access{rs(mx)}, Ins: []Access{t}, Attrs: isa.Attrs{ALU0: isa.ALUMax, Axis: 1}})
		op(&Op{Opcode: isa.OpTensorScalar, Engine: p.Small, Outs: []Access{rs(nmx)}, Ins: []Access{rs(mx)}, Attrs: isa.Attrs{ALU0: isa.ALUMultiply, Imm0: -1}})
		// exp(x*1 + (-max)), the bias operand -max; the accumulator sums it.
		op(&Op{Opcode: isa.OpActivation, Engine: isa.EngineScalar, Outs: []Access{t}, Ins: []Access{t, rs(nmx)},
			Attrs: isa.Attrs{Func: isa.ActExp, Scale: 1, Accumulate: isa.ALUAdd}})
		op(&Op{Opcode: isa.OpActReadAccumulator, Engine: isa.EngineScalar, Outs: []Access{sums.At(R(C(0), rows), I(j.Mod(C(nb))))}})
	}
	divide := func(b *Block, j Expr) {
		rows := rowsOf(j)
		t := slot(j)
		op := func(o *Op) { o.OpID = id; b.Add(o) }
		// The per-partition operand stands for the immediate: e / sum.
		op(&Op{Opcode: isa.OpTensorScalar, Engine: p.ScaleEngine, Outs: []Access{t}, Ins: []Access{t, sums.At(R(C(0), rows), I(j.Mod(C(nb))))},
			Attrs: isa.Attrs{ALU0: isa.ALUDivide}})
		op(&Op{Opcode: isa.OpDMACopy, Engine: isa.EngineSync, Outs: []Access{out.At(RS(j.MulC(128), rows))}, Ins: []Access{t}})
	}
	rowPipeline(root, "r", ceilDiv(s.Rows, 128), rowLead(nb, 2), load, exps, divide)
}

// softmaxBig is the running max's start (-M starts at +big): larger than
// any finite BF16 or FP32 input's magnitude needs.
const softmaxBig = 3.0e38

// twoPass processes rows in chunks of Free columns, tile of 128 rows by
// tile: the first pass keeps -M (nm) and s per row, the second writes
// exp(x + (-M - ln s)) chunk by chunk, its loads NBuf - 2 chunks ahead of
// its exponentials and stores.
func (p *SoftmaxPlan) twoPass(k *Kernel, x, out *Tile) {
	s, sdt, id := p.S, p.ScalarDType, p.opID
	parts := min(s.Rows, 128)
	nb, f := p.NBuf, p.Free
	nbuf := int(nb)
	nch := ceilDiv(s.Cols, f)
	root := k.Root()
	ys := root.Tile("y", isa.MemSBUF, s.DType, []int64{parts, nb, f}, 1)
	root.For("r", C(0), C(ceilDiv(s.Rows, 128)), Sequential, func(b *Block, r Expr) {
		rows := Min(C(128), C(s.Rows).Sub(r.MulC(128)))
		rs := func(t *Tile) Access { return t.At(R(C(0), rows)) }
		op := func(b *Block, o *Op) { o.OpID = id; b.Add(o) }
		nm := b.Tile("nm", isa.MemSBUF, isa.FP32, []int64{parts, 1}, 2)
		sum := b.Tile("sum", isa.MemSBUF, isa.FP32, []int64{parts, 1}, 2)
		op(b, &Op{Opcode: isa.OpMemset, Engine: p.Small, Outs: []Access{rs(nm)}, Attrs: isa.Attrs{Value: softmaxBig}})
		op(b, &Op{Opcode: isa.OpMemset, Engine: p.Small, Outs: []Access{rs(sum)}})
		colsOf := func(c Expr) Expr { return Min(C(f), C(s.Cols).Sub(c.MulC(f))) }
		hbm := func(c Expr) Access { return x.At(RS(r.MulC(128), rows), RS(c.MulC(f), colsOf(c))) }
		b.For("c", C(0), C(nch), Sequential, func(b *Block, c Expr) {
			xc := b.Tile("xc", isa.MemSBUF, s.DType, []int64{parts, f}, nbuf)
			t := xc.At(R(C(0), rows), R(C(0), colsOf(c)))
			op(b, &Op{Opcode: isa.OpDMACopy, Engine: isa.EngineSync, Outs: []Access{t}, Ins: []Access{hbm(c)}})
			mc := b.Tile("mc", isa.MemSBUF, sdt, []int64{parts, 1}, nbuf)
			nmn := b.Tile("nmn", isa.MemSBUF, isa.FP32, []int64{parts, 1}, nbuf)
			sc := b.Tile("sc", isa.MemSBUF, isa.FP32, []int64{parts, 1}, nbuf)
			corr := b.Tile("corr", isa.MemSBUF, isa.FP32, []int64{parts, 1}, nbuf)
			op(b, &Op{Opcode: isa.OpTensorReduce, Engine: p.MaxEngine, Outs: []Access{rs(mc)}, Ins: []Access{t}, Attrs: isa.Attrs{ALU0: isa.ALUMax, Axis: 1}})
			// -M_new = min(-mc, -M).
			op(b, &Op{Opcode: isa.OpScalarTensorTensor, Engine: p.Small, Outs: []Access{rs(nmn)}, Ins: []Access{rs(mc), rs(nm)},
				Attrs: isa.Attrs{ALU0: isa.ALUMultiply, Imm0: -1, ALU1: isa.ALUMin}})
			// The chunk's sum of exp(x - M_new), into the accumulator (the
			// exponentials themselves are not kept).
			op(b, &Op{Opcode: isa.OpActivation, Engine: isa.EngineScalar, Outs: []Access{t}, Ins: []Access{t, rs(nmn)},
				Attrs: isa.Attrs{Func: isa.ActExp, Scale: 1, Accumulate: isa.ALUAdd}})
			op(b, &Op{Opcode: isa.OpActReadAccumulator, Engine: isa.EngineScalar, Outs: []Access{rs(sc)}})
			// corr = exp(M_old - M_new) = exp(-1 * (-M_old) + (-M_new)).
			op(b, &Op{Opcode: isa.OpActivation, Engine: isa.EngineScalar, Outs: []Access{rs(corr)}, Ins: []Access{rs(nm), rs(nmn)},
				Attrs: isa.Attrs{Func: isa.ActExp, Scale: -1}})
			// s = s * corr + sc (corr the per-partition operand), -M = -M_new.
			op(b, &Op{Opcode: isa.OpScalarTensorTensor, Engine: p.Small, Outs: []Access{rs(sum)}, Ins: []Access{rs(sum), rs(sc), rs(corr)},
				Attrs: isa.Attrs{ALU0: isa.ALUMultiply, ALU1: isa.ALUAdd}})
			op(b, &Op{Opcode: isa.OpTensorCopy, Engine: p.Small, Outs: []Access{rs(nm)}, Ins: []Access{rs(nmn)}})
		})
		// bias = -M - ln s.
		ls := b.Tile("ls", isa.MemSBUF, isa.FP32, []int64{parts, 1}, 2)
		bias := b.Tile("bias", isa.MemSBUF, isa.FP32, []int64{parts, 1}, 2)
		op(b, &Op{Opcode: isa.OpActivation, Engine: isa.EngineScalar, Outs: []Access{rs(ls)}, Ins: []Access{rs(sum)}, Attrs: isa.Attrs{Func: isa.ActLog, Scale: 1}})
		op(b, &Op{Opcode: isa.OpTensorTensor, Engine: p.Small, Outs: []Access{rs(bias)}, Ins: []Access{rs(nm), rs(ls)}, Attrs: isa.Attrs{ALU0: isa.ALUSubtract}})
		slot := func(c Expr) Access { return ys.At(R(C(0), rows), I(c.Mod(C(nb))), R(C(0), colsOf(c))) }
		load := func(b *Block, c Expr) {
			op(b, &Op{Opcode: isa.OpDMACopy, Engine: isa.EngineSync, Outs: []Access{slot(c)}, Ins: []Access{hbm(c)}})
		}
		compute := func(b *Block, c Expr) {
			t := slot(c)
			op(b, &Op{Opcode: isa.OpActivation, Engine: isa.EngineScalar, Outs: []Access{t}, Ins: []Access{t, rs(bias)}, Attrs: isa.Attrs{Func: isa.ActExp, Scale: 1}})
			op(b, &Op{Opcode: isa.OpDMACopy, Engine: isa.EngineSync, Outs: []Access{out.At(RS(r.MulC(128), rows), RS(c.MulC(f), colsOf(c)))}, Ins: []Access{t}})
		}
		rowPipeline(b, "c2", nch, rowLead(nb, 1), load, compute)
	})
}

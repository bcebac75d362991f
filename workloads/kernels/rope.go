package kernels

import (
	"fmt"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/sched"
	. "github.com/trnsim/trnsim/workloads/tile"
)

// RoPE is the rotary position embedding, HF style: for each of Heads
// heads of HeadDim columns d,
//
//	OUT = X*COS + rotate_half(X)*SIN, rotate_half(x) = concat(-x[d/2:], x[:d/2]).
//
// X and OUT are [Rows, Heads*HeadDim], token-major (row r is token r; head
// h is columns [h*HeadDim, (h+1)*HeadDim)); COS and SIN are [Rows,
// HeadDim], each row the table of that token's position (the d/2
// frequencies twice). All four are of DType. HeadDim is even.
type RoPE struct {
	Rows, Heads, HeadDim int64
	DType                isa.DType
}

// RoPEOptions are the RoPE kernel's choices (0: chosen).
type RoPEOptions struct {
	// Buffers is how many row tiles (and head groups) are in flight
	// (0: 3, so that the tables of the next row tiles are ready before
	// VectorE reaches them).
	Buffers int64
	OpID    int32
}

// RoPEPlan is a resolved RoPE lowering.
type RoPEPlan struct {
	R RoPE
	// Group is the heads one transfer of X (and of OUT) moves and one
	// instruction computes; NBuf the tiles in flight.
	Group, NBuf int64
	// Rep is the heads one arithmetic instruction covers: COS and SIN are
	// replicated Rep times in SBUF, enough for every instruction to be
	// longer than the engines' minimum issue interval.
	Rep  int64
	auto map[string]bool
	opID int32
}

// ropeGroupBytes is the bytes per partition of X one transfer aims for:
// 8 KiB keeps the DMA engines streaming (reference §4) with a few tiles
// in flight.
const ropeGroupBytes = 8 << 10

// ropeRepElems is the elements per partition one arithmetic instruction
// aims for: 512 is well above the engines' minimum issue interval (64
// cycles) on every preset, BF16 fast modes included.
const ropeRepElems = 512

// PlanRoPE resolves the options.
func PlanRoPE(r RoPE, o RoPEOptions, tg *sched.Target) (*RoPEPlan, error) {
	lim := tg.Limits
	switch {
	case r.Rows <= 0:
		return nil, &ShapeError{Dim: "rows", Msg: fmt.Sprintf("%d is not positive", r.Rows)}
	case r.Heads <= 0:
		return nil, &ShapeError{Dim: "heads", Msg: fmt.Sprintf("%d is not positive", r.Heads)}
	case r.HeadDim <= 0 || r.HeadDim%2 != 0:
		return nil, &ShapeError{Dim: "head_dim", Msg: fmt.Sprintf("%d is not a positive even number", r.HeadDim)}
	}
	p := &RoPEPlan{R: r, NBuf: o.Buffers, auto: map[string]bool{}, opID: o.OpID}
	if p.NBuf == 0 {
		p.NBuf = 3
		p.auto["buffers"] = true
	}
	if p.NBuf < 0 {
		return nil, optErr("buffers", "%d is negative", p.NBuf)
	}
	if r.HeadDim > lim.VectorFreeMaxSBUF {
		return nil, &ShapeError{Dim: "head_dim", Msg: fmt.Sprintf("%d exceeds the engines' free size limit of %d", r.HeadDim, lim.VectorFreeMaxSBUF)}
	}
	width := mul(r.Heads, r.HeadDim)
	if err := checkHBM("rope", tg,
		hbmTensor{"X", r.DType, []int64{r.Rows, width}},
		hbmTensor{"COS", r.DType, []int64{r.Rows, r.HeadDim}},
		hbmTensor{"SIN", r.DType, []int64{r.Rows, r.HeadDim}},
		hbmTensor{"OUT", r.DType, []int64{r.Rows, width}}); err != nil {
		return nil, err
	}
	eb := int64(r.DType.Bytes())
	rep := min(r.Heads, max(ceilDiv(ropeRepElems, r.HeadDim), 1), max(lim.VectorFreeMaxSBUF/r.HeadDim, 1))
	// need: per buffer, cos and sin (replicated rep times) and a group of
	// heads of X; one rotated group.
	need := func(g, rep int64) int64 {
		tab, grp := roundUp(mul(rep, r.HeadDim, eb), 64), roundUp(mul(g, r.HeadDim, eb), 64)
		return add(mul(p.NBuf, add(mul(2, tab), grp)), grp)
	}
	g := max(rep, min(r.Heads, max(ropeGroupBytes/mul(r.HeadDim, eb), 1)))
	for g > 1 && need(g, min(rep, g)) > lim.SBUFPartitionBytes {
		g--
	}
	rep = min(rep, g)
	if n := need(g, rep); n > lim.SBUFPartitionBytes {
		return nil, &sched.FitError{Kernel: "rope", Tile: "the cos, sin and head tiles", Mem: isa.MemSBUF, Needed: n, Available: lim.SBUFPartitionBytes}
	}
	// Even groups: as many transfers, as wide as each other.
	p.Group = ceilDiv(r.Heads, ceilDiv(r.Heads, g))
	p.Rep = min(rep, p.Group)
	p.auto["rope_group"] = true
	return p, nil
}

// Choices lists the resolved options.
func (p *RoPEPlan) Choices() []Choice {
	return []Choice{{Name: "rope_group", Value: p.Group, Auto: p.auto["rope_group"]},
		{Name: "rope_rep", Value: p.Rep, Auto: true},
		{Name: "buffers", Value: p.NBuf, Auto: p.auto["buffers"]}}
}

// Kernel writes the plan. For each tile of 128 rows, COS and SIN are
// loaded once, the first half of SIN is negated (folding rotate_half's
// minus into the table), and both are replicated Rep times in SBUF by
// doubling copies, on GpSimd (which is otherwise idle), so that VectorE
// does only the rotation. Then for each group of Group heads, X is loaded as
// [128, heads, d] and, on VectorE, Rep heads per instruction,
//
//	t[:, :, :d/2] = x[:, :, d/2:] * -sin[:, :, :d/2]
//	t[:, :, d/2:] = x[:, :, :d/2] * sin[:, :, d/2:]
//	x = x * cos
//
// then x = x + t over the whole group, which is stored to OUT.
func (p *RoPEPlan) Kernel() (*Kernel, error) {
	r := p.R
	k := New("rope")
	width := r.Heads * r.HeadDim
	d, hf := r.HeadDim, r.HeadDim/2
	x := k.Tensor("X", r.DType, Input, r.Rows, width)
	cosT := k.Tensor("COS", r.DType, Input, r.Rows, d)
	sinT := k.Tensor("SIN", r.DType, Input, r.Rows, d)
	out := k.Tensor("OUT", r.DType, Output, r.Rows, width)
	g, rep := p.Group, p.Rep
	nr, ng := ceilDiv(r.Rows, 128), ceilDiv(r.Heads, g)
	nbuf := int(p.NBuf)
	op := func(b *Block, opc isa.Opcode, alu isa.ALUOp, outs Access, ins ...Access) *Op {
		o := &Op{Opcode: opc, Engine: isa.EngineVector, Outs: []Access{outs}, Ins: ins, OpID: p.opID}
		o.Attrs.ALU0 = alu
		return b.Add(o)
	}
	k.Root().For("r", C(0), C(nr), Parallel, func(b *Block, ri Expr) {
		rows := Min(C(128), C(r.Rows).Sub(ri.MulC(128)))
		part := R(C(0), rows)
		cs := b.Tile("cos", isa.MemSBUF, r.DType, []int64{128, rep, d}, nbuf)
		sn := b.Tile("sin", isa.MemSBUF, r.DType, []int64{128, rep, d}, nbuf)
		for _, t := range [][2]*Tile{{cs, cosT}, {sn, sinT}} {
			b.Add(&Op{Opcode: isa.OpDMACopy, Any: true, Outs: []Access{t[0].At(part, I(C(0)))}, Ins: []Access{t[1].At(RS(ri.MulC(128), rows))}, OpID: p.opID})
			if t[0] == sn {
				lo := sn.At(part, I(C(0)), R(C(0), C(hf)))
				neg := op(b, isa.OpTensorScalar, isa.ALUMultiply, lo, lo)
				neg.Engine, neg.Attrs.Imm0 = isa.EngineGpSimd, -1
			}
			// Heads [0, n) hold the table; copy them to [n, n+m).
			for n := int64(1); n < rep; n *= 2 {
				m := min(n, rep-n)
				cp := op(b, isa.OpTensorCopy, isa.ALUNone, t[0].At(part, R(C(n), C(n+m))), t[0].At(part, R(C(0), C(m))))
				cp.Engine = isa.EngineGpSimd
			}
		}
		b.For("g", C(0), C(ng), Parallel, func(b *Block, gi Expr) {
			heads := Min(C(g), C(r.Heads).Sub(gi.MulC(g)))
			xt := b.Tile("x", isa.MemSBUF, r.DType, []int64{128, g, d}, nbuf)
			xs := xt.At(part, R(C(0), heads))
			hbm := func(t *Tile) Access { return t.At(RS(ri.MulC(128), rows), RS(gi.MulC(g*d), heads.MulC(d))) }
			b.Add(&Op{Opcode: isa.OpDMACopy, Any: true, Outs: []Access{xs}, Ins: []Access{hbm(x)}, OpID: p.opID})
			// The multiplies, Rep heads at a time, then one add over the
			// group: no add waits on the multiply just before it.
			rot := b.Tile("rot", isa.MemSBUF, r.DType, []int64{128, g, d}, 1)
			b.For("j", C(0), heads.CDiv(C(rep)), Parallel, func(b *Block, j Expr) {
				n := Min(C(rep), heads.Sub(j.MulC(rep)))
				hs, ts := RS(j.MulC(rep), n), R(C(0), n)
				lo, hi := R(C(0), C(hf)), R(C(hf), C(d))
				blk := xt.At(part, hs)
				op(b, isa.OpTensorTensor, isa.ALUMultiply, rot.At(part, hs, lo), xt.At(part, hs, hi), sn.At(part, ts, lo))
				op(b, isa.OpTensorTensor, isa.ALUMultiply, rot.At(part, hs, hi), xt.At(part, hs, lo), sn.At(part, ts, hi))
				op(b, isa.OpTensorTensor, isa.ALUMultiply, blk, blk, cs.At(part, ts))
			})
			op(b, isa.OpTensorTensor, isa.ALUAdd, xs, xs, rot.At(part, R(C(0), heads)))
			b.Add(&Op{Opcode: isa.OpDMACopy, Any: true, Outs: []Access{hbm(out)}, Ins: []Access{xs}, OpID: p.opID})
		})
	})
	if err := k.Finish(); err != nil {
		return nil, fmt.Errorf("internal error: the rope kernel: %w", err)
	}
	return k, nil
}

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
	Free    int64 // columns per instruction
	Buffers int64
	OpID    int32
}

// ElementwisePlan is a resolved elementwise lowering.
type ElementwisePlan struct {
	E          Elementwise
	Free, NBuf int64
	auto       map[string]bool
	opID       int32
}

// PlanElementwise resolves the options.
func PlanElementwise(e Elementwise, o ElementwiseOptions, tg *sched.Target) (*ElementwisePlan, error) {
	lim := tg.Limits
	p := &ElementwisePlan{E: e, Free: o.Free, NBuf: o.Buffers, auto: map[string]bool{}, opID: o.OpID}
	eb := int64(e.DType.Bytes())
	if p.Free == 0 {
		// 4 KiB per partition saturates the DMA engines (reference §4).
		p.Free = min(e.Cols, max(4096/eb, 64))
		p.auto["elementwise_free"] = true
	}
	if p.NBuf == 0 {
		p.NBuf = 2
		p.auto["buffers"] = true
	}
	if p.Free > lim.VectorFreeMaxSBUF {
		return nil, optErr("elementwise_free", "%d exceeds the engines' free size limit of %d", p.Free, lim.VectorFreeMaxSBUF)
	}
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
	need := mul(p.NBuf, nIn+1, roundUp(mul(min(p.Free, e.Cols), eb), 64))
	if need > lim.SBUFPartitionBytes {
		return nil, &sched.FitError{Kernel: "elementwise", Tile: "the input and output tiles", Mem: isa.MemSBUF, Needed: need, Available: lim.SBUFPartitionBytes}
	}
	return p, nil
}

// Choices lists the resolved options.
func (p *ElementwisePlan) Choices() []Choice {
	return []Choice{{Name: "elementwise_free", Value: p.Free, Auto: p.auto["elementwise_free"]},
		{Name: "buffers", Value: p.NBuf, Auto: p.auto["buffers"]}}
}

// Kernel writes the plan: tiles of 128 rows and Free columns are loaded,
// computed and stored, NBuf deep.
func (p *ElementwisePlan) Kernel() (*Kernel, error) {
	e := p.E
	k := New("elementwise")
	x := k.Tensor("X", e.DType, Input, e.Rows, e.Cols)
	var y *Tile
	if !e.Unary {
		y = k.Tensor("Y", e.DType, Input, e.Rows, e.Cols)
	}
	out := k.Tensor("OUT", e.DType, Output, e.Rows, e.Cols)
	free := min(p.Free, e.Cols)
	nr, nc := ceilDiv(e.Rows, 128), ceilDiv(e.Cols, free)
	nbuf := int(p.NBuf)
	k.Root().For("r", C(0), C(nr), Parallel, func(b *Block, r Expr) {
		rows := Min(C(128), C(e.Rows).Sub(r.MulC(128)))
		b.For("c", C(0), C(nc), Parallel, func(b *Block, c Expr) {
			cols := Min(C(free), C(e.Cols).Sub(c.MulC(free)))
			tin := b.Tile("xin", isa.MemSBUF, e.DType, []int64{128, free}, nbuf)
			tout := b.Tile("res", isa.MemSBUF, e.DType, []int64{128, free}, nbuf)
			at := func(t *Tile) Access { return t.At(R(C(0), rows), R(C(0), cols)) }
			hbm := func(t *Tile) Access { return t.At(RS(r.MulC(128), rows), RS(c.MulC(free), cols)) }
			b.Add(&Op{Opcode: isa.OpDMACopy, Any: true, Outs: []Access{at(tin)}, Ins: []Access{hbm(x)}, OpID: p.opID})
			ins := []Access{at(tin)}
			if !e.Unary {
				tin2 := b.Tile("yin", isa.MemSBUF, e.DType, []int64{128, free}, nbuf)
				b.Add(&Op{Opcode: isa.OpDMACopy, Any: true, Outs: []Access{at(tin2)}, Ins: []Access{hbm(y)}, OpID: p.opID})
				ins = append(ins, at(tin2))
			}
			op := &Op{Engine: e.Engine, Outs: []Access{at(tout)}, Ins: ins, OpID: p.opID}
			switch {
			case !e.Unary:
				op.Opcode, op.Attrs.ALU0 = isa.OpTensorTensor, e.ALU
			case e.Engine == isa.EngineScalar:
				op.Opcode, op.Attrs.Func, op.Attrs.Scale = isa.OpActivation, e.Func, 1
			default:
				op.Opcode = isa.OpTensorCopy
			}
			b.Add(op)
			b.Add(&Op{Opcode: isa.OpDMACopy, Any: true, Outs: []Access{hbm(out)}, Ins: []Access{at(tout)}, OpID: p.opID})
		})
	})
	if err := k.Finish(); err != nil {
		return nil, fmt.Errorf("internal error: the elementwise kernel: %w", err)
	}
	return k, nil
}

package lowergraph

import (
	"fmt"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/graph"
	"github.com/trnsim/trnsim/workloads/kernels"
	"github.com/trnsim/trnsim/workloads/tile"
)

func init() {
	extraLowerings[graph.TopK] = (*lowering).topk
	extraLowerings[graph.MoEExperts] = (*lowering).moe
}

// topkKernel picks the K largest of each row of X [rows, cols] on
// VectorE: per pick a row max (the value), the columns equal to it, their
// index (the max of an iota over them), and the picked column pushed
// down for the next pick. VALUES [rows, k] in X's dtype, INDICES [rows, k]
// int32.
func topkKernel(dt isa.DType, rows, cols, k int64, opID int32) *tile.Kernel {
	kn := tile.New("topk")
	x := kn.Tensor("X", dt, tile.Input, rows, cols)
	vals := kn.Tensor("VALUES", dt, tile.Output, rows, k)
	idxs := kn.Tensor("INDICES", isa.INT32, tile.Output, rows, k)
	root := kn.Root()
	iota := root.Tile("iota", isa.MemSBUF, isa.FP32, []int64{128, cols}, 1)
	root.Add(&tile.Op{Opcode: isa.OpIota, Engine: isa.EngineGpSimd, Outs: []tile.Access{iota.All()}, Attrs: isa.Attrs{Value: 0, Step: 1}, OpID: opID})
	vec := func(b *tile.Block, code isa.Opcode, out tile.Access, alu isa.ALUOp, ins ...tile.Access) {
		b.Add(&tile.Op{Opcode: code, Engine: isa.EngineVector, Outs: []tile.Access{out}, Ins: ins, Attrs: isa.Attrs{ALU0: alu, Axis: 1}, OpID: opID})
	}
	root.For("r", tile.C(0), tile.C(ceilDiv(rows, 128)), tile.Parallel, func(b *tile.Block, r tile.Expr) {
		n := tile.Min(tile.C(128), tile.C(rows).Sub(r.MulC(128)))
		xt := b.Tile("x", isa.MemSBUF, isa.FP32, []int64{128, cols}, 2)
		eq := b.Tile("eq", isa.MemSBUF, isa.FP32, []int64{128, cols}, 1)
		vt := b.Tile("v", isa.MemSBUF, dt, []int64{128, k}, 2)
		it := b.Tile("i", isa.MemSBUF, isa.FP32, []int64{128, k}, 2)
		ii := b.Tile("ii", isa.MemSBUF, isa.INT32, []int64{128, k}, 2)
		all := func(t *tile.Tile, c int64) tile.Access {
			return t.At(tile.R(tile.C(0), n), tile.R(tile.C(0), tile.C(c)))
		}
		col := func(t *tile.Tile, j int64) tile.Access {
			return t.At(tile.R(tile.C(0), n), tile.RS(tile.C(j), tile.C(1)))
		}
		b.Add(&tile.Op{Opcode: isa.OpDMACopy, Any: true, Outs: []tile.Access{all(xt, cols)}, Ins: []tile.Access{x.At(tile.RS(r.MulC(128), n), tile.R(tile.C(0), tile.C(cols)))}, OpID: opID})
		for j := int64(0); j < k; j++ {
			vec(b, isa.OpTensorReduce, col(vt, j), isa.ALUMax, all(xt, cols))
			vec(b, isa.OpTensorScalar, all(eq, cols), isa.ALUIsEqual, all(xt, cols), col(vt, j))
			vec(b, isa.OpTensorTensor, all(eq, cols), isa.ALUMultiply, all(eq, cols), all(iota, cols))
			vec(b, isa.OpTensorReduce, col(it, j), isa.ALUMax, all(eq, cols))
			if j+1 < k {
				// The pick drops below every other value.
				vec(b, isa.OpTensorScalar, all(xt, cols), isa.ALUSubtract, all(xt, cols), col(vt, j))
			}
		}
		vec(b, isa.OpTensorCopy, all(ii, k), isa.ALUNone, all(it, k))
		b.Add(&tile.Op{Opcode: isa.OpDMACopy, Any: true, Outs: []tile.Access{vals.At(tile.RS(r.MulC(128), n), tile.R(tile.C(0), tile.C(k)))}, Ins: []tile.Access{all(vt, k)}, OpID: opID})
		b.Add(&tile.Op{Opcode: isa.OpDMACopy, Any: true, Outs: []tile.Access{idxs.At(tile.RS(r.MulC(128), n), tile.R(tile.C(0), tile.C(k)))}, Ins: []tile.Access{all(ii, k)}, OpID: opID})
	})
	return kn
}

func (l *lowering) topk(o *graph.Op) error {
	x := o.Inputs[0]
	rows, cols := rowsCols(x)
	if cols > 16384 {
		return l.errf("top-k over %d columns is not lowered yet (a router's experts: at most 16384)", cols)
	}
	return l.inline(topkKernel(x.DType, rows, cols, o.Attrs.TopK, l.id),
		map[string]*tile.Tile{"X": l.tensor2D(x), "VALUES": l.tensor2D(o.Outputs[0]), "INDICES": l.tensor2D(o.Outputs[1])})
}

// combineKernel adds Y [n, cols], scaled by each row's routing weight
// (column pick of WEIGHTS [rows, k]), into rows row0.. of OUT [rows, cols];
// first writes instead of adding.
func combineKernel(dt isa.DType, rows, cols, n, row0, k, pick int64, first bool, opID int32) *tile.Kernel {
	kn := tile.New("combine")
	y := kn.Tensor("Y", dt, tile.Input, n, cols)
	w := kn.Tensor("WEIGHTS", dt, tile.Input, rows, k)
	out := kn.Tensor("OUT", dt, tile.Output, rows, cols)
	free := chunkCols(dt, cols)
	kn.Root().For("r", tile.C(0), tile.C(ceilDiv(n, 128)), tile.Parallel, func(b *tile.Block, r tile.Expr) {
		m := tile.Min(tile.C(128), tile.C(n).Sub(r.MulC(128)))
		wt := b.Tile("w", isa.MemSBUF, dt, []int64{128, 1}, 2)
		b.Add(&tile.Op{Opcode: isa.OpDMACopy, Any: true, Outs: []tile.Access{wt.At(tile.R(tile.C(0), m))},
			Ins: []tile.Access{w.At(tile.RS(r.MulC(128).Add(tile.C(row0)), m), tile.RS(tile.C(pick), tile.C(1)))}, OpID: opID})
		b.For("c", tile.C(0), tile.C(ceilDiv(cols, free)), tile.Parallel, func(b *tile.Block, c tile.Expr) {
			nc := tile.Min(tile.C(free), tile.C(cols).Sub(c.MulC(free)))
			yt := b.Tile("y", isa.MemSBUF, dt, []int64{128, free}, 3)
			at := func(t *tile.Tile) tile.Access { return t.At(tile.R(tile.C(0), m), tile.R(tile.C(0), nc)) }
			rowsOut := out.At(tile.RS(r.MulC(128).Add(tile.C(row0)), m), tile.RS(c.MulC(free), nc))
			b.Add(&tile.Op{Opcode: isa.OpDMACopy, Any: true, Outs: []tile.Access{at(yt)}, Ins: []tile.Access{y.At(tile.RS(r.MulC(128), m), tile.RS(c.MulC(free), nc))}, OpID: opID})
			b.Add(&tile.Op{Opcode: isa.OpTensorScalar, Engine: isa.EngineVector, Outs: []tile.Access{at(yt)}, Ins: []tile.Access{at(yt), wt.At(tile.R(tile.C(0), m))},
				Attrs: isa.Attrs{ALU0: isa.ALUMultiply}, OpID: opID})
			if !first {
				ot := b.Tile("o", isa.MemSBUF, dt, []int64{128, free}, 3)
				b.Add(&tile.Op{Opcode: isa.OpDMACopy, Any: true, Outs: []tile.Access{at(ot)}, Ins: []tile.Access{rowsOut}, OpID: opID})
				b.Add(&tile.Op{Opcode: isa.OpTensorTensor, Engine: isa.EngineVector, Outs: []tile.Access{at(yt)}, Ins: []tile.Access{at(yt), at(ot)},
					Attrs: isa.Attrs{ALU0: isa.ALUAdd}, OpID: opID})
			}
			b.Add(&tile.Op{Opcode: isa.OpDMACopy, Any: true, Outs: []tile.Access{rowsOut}, Ins: []tile.Access{at(yt)}, OpID: opID})
		})
	})
	return kn
}

// moe lowers the experts under balanced routing: the tokens' top-k picks
// spread evenly over the experts (at most all of them), so each expert
// reached runs its gated MLP on an equal share of the picks. Each share is
// copied out of the tokens (standing for the indirect gather of its rows),
// multiplied by the expert's weights through the GEMM plan search (for
// FP8 weights, its inputs cast to FP8 on the way), and
// added, scaled by its routing weights, into the output rows it came
// from. Which tokens pick which expert is data; the balanced split is the
// lowering's assumption (a note says so).
func (l *lowering) moe(o *graph.Op) error {
	x, weights, out := o.Inputs[0], o.Inputs[1], o.Outputs[0]
	t, h := x.Shape[0], x.Shape[1]
	e, k := o.Attrs.Experts, o.Attrs.TopK
	f := o.Inputs[3].Shape[1]
	dt, wdt := x.DType, o.Inputs[3].DType
	// Quantised expert weights (int8; FP8 without double-row matmuls) are
	// dequantised on chip as a Linear's are (quant.go): the activations
	// stay in their dtype, each expert's weights carry their scales.
	deq := l.dequantised(wdt, dt)
	if wdt != dt && !deq && (!wdt.IsFP8() || !l.tg.Limits.FP8DoubleRow) {
		return l.errf("expert weights in %s with activations in %s are not lowered yet (int8 and FP8 weights are)", wdt, dt)
	}
	// aDT is the matmuls' activation dtype: the weights' for FP8
	// double-row matmuls (both operands FP8), else the activations'.
	aDT := wdt
	if deq {
		aDT = dt
	}
	// toW casts a [rows, cols] activation to aDT.
	toW := func(src *tile.Tile, rows, cols int64, name string) (*tile.Tile, error) {
		if aDT == dt {
			return src, nil
		}
		c := l.k.Tensor(l.unique(name), aDT, tile.Temp, rows, cols)
		return c, l.inline(castKernel(dt, aDT, rows, cols, cols, copyWindow{rows: rows, rowStep: 1}, l.id), map[string]*tile.Tile{"SRC": src, "DST": c})
	}
	shares := o.ExpertShares() // picks per expert reached
	touched := int64(len(shares))
	if touched == 0 {
		return l.errf("no token reaches an expert (%d tokens, top-%d)", t, k)
	}
	if o.Attrs.RoutingSkew > 0 {
		l.res.Notes = append(l.res.Notes, fmt.Sprintf("%s: skewed routing assumed (expert i's share of the picks in proportion to (i+1)^-%g): %d of %d experts reached, %v token picks", o.Name, o.Attrs.RoutingSkew, touched, e, shares))
	} else {
		l.res.Notes = append(l.res.Notes, fmt.Sprintf("%s: balanced routing assumed: %d of %d experts reached, %d token picks each", o.Name, touched, e, shares[0]))
	}
	xT, wT, outT := l.tensor2D(x), l.tensor2D(weights), l.tensor2D(out)
	// gemm multiplies a [m, kd] by expert ex's weight w (b, [kd, n]) into c;
	// a dequantised weight's scales are an HBM input [1, n] of the expert.
	gemm := func(m, kd, n int64, a, b, c *tile.Tile, w *graph.Tensor, ex int64) error {
		g := kernels.GEMM{M: m, K: kd, N: n, In: wdt, Out: dt, AMK: true}
		if deq {
			g.In, g.Dequant, g.WeightDType = dt, true, wdt
		}
		plan, err := kernels.PlanGEMM(g, kernels.GEMMOptions{OpID: l.id}, l.tg)
		if err != nil {
			return l.wrapErr(err)
		}
		kn, err := plan.Kernel()
		if err != nil {
			return err
		}
		bind := map[string]*tile.Tile{"A": a, "B": b, "C": c}
		if deq {
			bind["SCALE"] = l.k.Tensor(l.unique(fmt.Sprintf("%s_%d", ScaleName(w), ex)), dt, tile.Input, 1, n)
			l.noteDequant(plan)
		}
		return l.inline(kn, bind)
	}
	var picked int64 // the picks of the experts before
	for ex := int64(0); ex < touched; ex++ {
		share := shares[ex]
		name := fmt.Sprintf("%s_%d", o.Name, ex)
		row0 := picked % max(t-share+1, 1)
		picked += share
		xe := l.k.Tensor(l.unique(name+"_x"), aDT, tile.Temp, share, h)
		if err := l.inline(castKernel(dt, aDT, t, h, h, copyWindow{rows: share, row0: row0, rowStep: 1}, l.id), map[string]*tile.Tile{"SRC": xT, "DST": xe}); err != nil {
			return err
		}
		w1 := l.k.Tensor(l.unique(name+"_w1"), wdt, tile.Input, h, f)
		w3 := l.k.Tensor(l.unique(name+"_w3"), wdt, tile.Input, h, f)
		w2 := l.k.Tensor(l.unique(name+"_w2"), wdt, tile.Input, f, h)
		g := l.k.Tensor(l.unique(name+"_gate"), dt, tile.Temp, share, f)
		u := l.k.Tensor(l.unique(name+"_up"), dt, tile.Temp, share, f)
		s := l.k.Tensor(l.unique(name+"_silu"), dt, tile.Temp, share, f)
		hh := l.k.Tensor(l.unique(name+"_h"), dt, tile.Temp, share, f)
		y := l.k.Tensor(l.unique(name+"_y"), dt, tile.Temp, share, h)
		if err := gemm(share, h, f, xe, w1, g, o.Inputs[3], ex); err != nil {
			return err
		}
		if err := gemm(share, h, f, xe, w3, u, o.Inputs[4], ex); err != nil {
			return err
		}
		if err := l.elementwise(kernels.Elementwise{Rows: share, Cols: f, DType: dt, Unary: true, Func: isa.ActSilu, Engine: isa.EngineScalar},
			map[string]*tile.Tile{"X": g, "OUT": s}); err != nil {
			return err
		}
		if err := l.elementwise(kernels.Elementwise{Rows: share, Cols: f, DType: dt, ALU: isa.ALUMultiply, Engine: isa.EngineVector},
			map[string]*tile.Tile{"X": s, "Y": u, "OUT": hh}); err != nil {
			return err
		}
		hw, err := toW(hh, share, f, name+"_h_"+aDT.String())
		if err != nil {
			return err
		}
		if err := gemm(share, f, h, hw, w2, y, o.Inputs[5], ex); err != nil {
			return err
		}
		if err := l.inline(combineKernel(dt, t, h, share, row0, k, ex%k, ex == 0 && share == t, l.id),
			map[string]*tile.Tile{"Y": y, "WEIGHTS": wT, "OUT": outT}); err != nil {
			return err
		}
	}
	return nil
}

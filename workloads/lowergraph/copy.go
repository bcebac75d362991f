package lowergraph

import (
	"fmt"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/tile"
)

// copyWindow picks rows row0, row0+rowStep, ... (rows of them) and the
// columns from col0 of a source.
type copyWindow struct {
	rows, row0, rowStep, col0 int64
}

// chunkCols is how many columns a copy or bias tile takes: 8 KiB per
// partition, enough for the DMA engines' full rate.
func chunkCols(dt isa.DType, cols int64) int64 { return min(cols, 8192/int64(dt.Bytes())) }

// copyKernel copies a window of SRC [srcRows, srcCols] into DST [w.rows,
// cols] through SBUF, 128 rows and a chunk of columns at a time.
func copyKernel(dt isa.DType, srcRows, srcCols, cols int64, w copyWindow, opID int32) *tile.Kernel {
	return castKernel(dt, dt, srcRows, srcCols, cols, w, opID)
}

// castKernel is copyKernel into a DST of another dtype: the store casts
// (a DMA converts as it writes).
func castKernel(dt, out isa.DType, srcRows, srcCols, cols int64, w copyWindow, opID int32) *tile.Kernel {
	k := tile.New("copy")
	src := k.Tensor("SRC", dt, tile.Input, srcRows, srcCols)
	dst := k.Tensor("DST", out, tile.Output, w.rows, cols)
	free := chunkCols(dt, cols)
	k.Root().For("r", tile.C(0), tile.C(ceilDiv(w.rows, 128)), tile.Parallel, func(b *tile.Block, r tile.Expr) {
		n := tile.Min(tile.C(128), tile.C(w.rows).Sub(r.MulC(128)))
		b.For("c", tile.C(0), tile.C(ceilDiv(cols, free)), tile.Parallel, func(b *tile.Block, c tile.Expr) {
			nc := tile.Min(tile.C(free), tile.C(cols).Sub(c.MulC(free)))
			t := b.Tile("t", isa.MemSBUF, dt, []int64{128, free}, 3)
			first := tile.C(w.row0).Add(r.MulC(128 * w.rowStep))
			rows := tile.Range{Start: first, Stop: first.Add(n.Sub(tile.C(1)).MulC(w.rowStep)).Add(tile.C(1)), Step: w.rowStep}
			b.Add(&tile.Op{Opcode: isa.OpDMACopy, Any: true, Outs: []tile.Access{t.At(tile.R(tile.C(0), n), tile.R(tile.C(0), nc))},
				Ins: []tile.Access{src.At(rows, tile.RS(c.MulC(free).Add(tile.C(w.col0)), nc))}, OpID: opID})
			b.Add(&tile.Op{Opcode: isa.OpDMACopy, Any: true, Outs: []tile.Access{dst.At(tile.RS(r.MulC(128), n), tile.RS(c.MulC(free), nc))},
				Ins: []tile.Access{t.At(tile.R(tile.C(0), n), tile.R(tile.C(0), nc))}, OpID: opID})
		})
	})
	return k
}

// biasKernel adds BIAS [cols] to every row of X [rows, cols] into OUT.
// The bias is loaded once into every partition that rows use (a transfer
// each), then added on VectorE as each tile of X passes.
func biasKernel(dt isa.DType, rows, cols int64, opID int32) (*tile.Kernel, error) {
	k := tile.New("bias")
	x := k.Tensor("X", dt, tile.Input, rows, cols)
	bias := k.Tensor("BIAS", dt, tile.Input, 1, cols)
	out := k.Tensor("OUT", dt, tile.Output, rows, cols)
	parts := min(rows, 128)
	free := chunkCols(dt, cols)
	nc := ceilDiv(cols, free)
	root := k.Root()
	bt := root.Tile("bias_sb", isa.MemSBUF, dt, []int64{128, cols}, 1)
	root.For("p", tile.C(0), tile.C(parts), tile.Parallel, func(b *tile.Block, p tile.Expr) {
		b.Add(&tile.Op{Opcode: isa.OpDMACopy, Any: true, Outs: []tile.Access{bt.At(tile.RS(p, tile.C(1)), tile.R(tile.C(0), tile.C(cols)))},
			Ins: []tile.Access{bias.At(tile.R(tile.C(0), tile.C(1)), tile.R(tile.C(0), tile.C(cols)))}, OpID: opID})
	})
	root.For("r", tile.C(0), tile.C(ceilDiv(rows, 128)), tile.Parallel, func(b *tile.Block, r tile.Expr) {
		n := tile.Min(tile.C(128), tile.C(rows).Sub(r.MulC(128)))
		b.For("c", tile.C(0), tile.C(nc), tile.Parallel, func(b *tile.Block, c tile.Expr) {
			w := tile.Min(tile.C(free), tile.C(cols).Sub(c.MulC(free)))
			t := b.Tile("t", isa.MemSBUF, dt, []int64{128, free}, 3)
			s := b.Tile("s", isa.MemSBUF, dt, []int64{128, free}, 3)
			at := func(t *tile.Tile) tile.Access { return t.At(tile.R(tile.C(0), n), tile.R(tile.C(0), w)) }
			b.Add(&tile.Op{Opcode: isa.OpDMACopy, Any: true, Outs: []tile.Access{at(t)}, Ins: []tile.Access{x.At(tile.RS(r.MulC(128), n), tile.RS(c.MulC(free), w))}, OpID: opID})
			b.Add(&tile.Op{Opcode: isa.OpTensorTensor, Engine: isa.EngineVector, Outs: []tile.Access{at(s)},
				Ins: []tile.Access{at(t), bt.At(tile.R(tile.C(0), n), tile.RS(c.MulC(free), w))}, Attrs: isa.Attrs{ALU0: isa.ALUAdd}, OpID: opID})
			b.Add(&tile.Op{Opcode: isa.OpDMACopy, Any: true, Outs: []tile.Access{out.At(tile.RS(r.MulC(128), n), tile.RS(c.MulC(free), w))}, Ins: []tile.Access{at(s)}, OpID: opID})
		})
	})
	return k, nil
}

func (l *lowering) biasAdd(x, bias, out *tile.Tile, rows, cols int64, dt isa.DType) error {
	k, err := biasKernel(dt, rows, cols, l.id)
	if err != nil {
		return err
	}
	if bias.Shape[len(bias.Shape)-1] != cols {
		return fmt.Errorf("internal error: bias %v for %d columns", bias.Shape, cols)
	}
	return l.inline(k, map[string]*tile.Tile{"X": x, "BIAS": bias, "OUT": out})
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

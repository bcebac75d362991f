package kernels

import (
	"fmt"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/sched"
	. "github.com/trnsim/trnsim/workloads/tile"
)

// KVAppend appends Seq new rows per sequence to a KV cache: NEW is
// [Batch*Seq, Heads*HeadDim] and CACHE [Batch*T, Heads*HeadDim] with T =
// Past + Seq, both of DType; NEW row b*Seq + s is copied to CACHE row
// b*T + Past + s. With HeadMajor the cache is stored head by head,
// [Batch*Heads*T, HeadDim]: head h of NEW row b*Seq + s goes to CACHE row
// (b*Heads + h)*T + Past + s (so that attention reads each head's keys in
// one run). The kernel neither reads nor writes the cache rows before
// Past (the tokens already there).
type KVAppend struct {
	Batch, Seq, Past, Heads, HeadDim int64
	DType                            isa.DType
	HeadMajor                        bool
}

// KVAppendOptions are the KV append kernel's choices.
type KVAppendOptions struct {
	OpID int32
}

// KVAppendPlan is a resolved KV append lowering: DMA only, HBM to HBM.
type KVAppendPlan struct {
	A KVAppend
	// Block is the rows one transfer moves (at most 128 and Seq).
	Block int64
	// Split, when above 1, cuts each row into Split column pieces that
	// the transfer spreads over the DMA engines as its rows: an HBM to
	// HBM transfer spreads its rows over the engines, so a transfer of
	// fewer rows than engines would leave most of them idle.
	Split int64
	opID  int32
}

// kvSplitMinBytes is the smallest column piece of a split row: shorter
// descriptors cost more than the engines they bring in.
const kvSplitMinBytes = 512

// PlanKVAppend resolves the plan.
func PlanKVAppend(a KVAppend, o KVAppendOptions, tg *sched.Target) (*KVAppendPlan, error) {
	switch {
	case a.Batch <= 0:
		return nil, &ShapeError{Dim: "batch", Msg: fmt.Sprintf("%d is not positive", a.Batch)}
	case a.Seq <= 0:
		return nil, &ShapeError{Dim: "seq", Msg: fmt.Sprintf("%d is not positive", a.Seq)}
	case a.Past < 0:
		return nil, &ShapeError{Dim: "past", Msg: fmt.Sprintf("%d is negative", a.Past)}
	case a.Heads <= 0:
		return nil, &ShapeError{Dim: "heads", Msg: fmt.Sprintf("%d is not positive", a.Heads)}
	case a.HeadDim <= 0:
		return nil, &ShapeError{Dim: "head_dim", Msg: fmt.Sprintf("%d is not positive", a.HeadDim)}
	}
	width := mul(a.Heads, a.HeadDim)
	cacheRows, cacheCols := a.cacheShape()
	if err := checkHBM("kv_append", tg,
		hbmTensor{"NEW", a.DType, []int64{mul(a.Batch, a.Seq), width}},
		hbmTensor{"CACHE", a.DType, []int64{cacheRows, cacheCols}}); err != nil {
		return nil, err
	}
	p := &KVAppendPlan{A: a, Block: min(a.Seq, 128), Split: 1, opID: o.OpID}
	engines := int64(tg.Limits.DMAEngines)
	if a.Seq < engines && !a.HeadMajor {
		// (Head by head, each head's rows are one transfer of their own.)
		eb := int64(a.DType.Bytes())
		for s := min(engines, width); s > 1; s-- {
			if width%s == 0 && width/s*eb >= kvSplitMinBytes {
				p.Split = s
				break
			}
		}
	}
	return p, nil
}

// kvCacheRow is the row of position t of KV head h of sequence b in a KV
// cache stored head by head, positions rows per head and heads heads per
// sequence: the one layout the append writes and attention reads.
func kvCacheRow(b, h, t Expr, heads, positions int64) Expr {
	return b.MulC(heads).Add(h).MulC(positions).Add(t)
}

// cacheShape is the HBM shape of the cache: token-major, or head by head.
func (a KVAppend) cacheShape() (rows, cols int64) {
	t := add(a.Past, a.Seq)
	if a.HeadMajor {
		return mul(a.Batch, a.Heads, t), a.HeadDim
	}
	return mul(a.Batch, t), mul(a.Heads, a.HeadDim)
}

// Choices lists the resolved plan.
func (p *KVAppendPlan) Choices() []Choice {
	return []Choice{{Name: "kv_block", Value: p.Block, Auto: true}, {Name: "kv_split", Value: p.Split, Auto: true}}
}

// Kernel writes the plan: for each sequence b and block of Block new
// rows, one dma_copy from NEW straight into its rows of CACHE (HBM to
// HBM, no SBUF). With Split > 1 both sides are walked as [Split, rows,
// width/Split] (the rearrangement "s (p f) -> p s f"), so each DMA engine
// takes a column piece of every row.
func (p *KVAppendPlan) Kernel() (*Kernel, error) {
	a := p.A
	k := New("kv_append")
	width := a.Heads * a.HeadDim
	t := a.Past + a.Seq
	nw := k.Tensor("NEW", a.DType, Input, a.Batch*a.Seq, width)
	cacheRows, cacheCols := a.cacheShape()
	cache := k.Tensor("CACHE", a.DType, Output, cacheRows, cacheCols)
	blk := p.Block
	ns := ceilDiv(a.Seq, blk)
	view := func(acc Access) Access {
		if p.Split <= 1 {
			return acc
		}
		return acc.Rearranged(&Rearrange{In: [][]string{{"s"}, {"p", "f"}}, Out: []string{"p", "s", "f"}, Sizes: map[string]int64{"p": p.Split}})
	}
	k.Root().For("b", C(0), C(a.Batch), Parallel, func(b *Block, bi Expr) {
		b.For("s", C(0), C(ns), Parallel, func(b *Block, si Expr) {
			rows := Min(C(blk), C(a.Seq).Sub(si.MulC(blk)))
			if a.HeadMajor {
				b.For("h", C(0), C(a.Heads), Parallel, func(b *Block, h Expr) {
					src := nw.At(RS(bi.MulC(a.Seq).Add(si.MulC(blk)), rows), RS(h.MulC(a.HeadDim), C(a.HeadDim)))
					dst := cache.At(RS(kvCacheRow(bi, h, C(a.Past).Add(si.MulC(blk)), a.Heads, t), rows), R(C(0), C(a.HeadDim)))
					b.Add(&Op{Opcode: isa.OpDMACopy, Any: true, Outs: []Access{dst}, Ins: []Access{src}, OpID: p.opID})
				})
				return
			}
			src := nw.At(RS(bi.MulC(a.Seq).Add(si.MulC(blk)), rows), R(C(0), C(width)))
			dst := cache.At(RS(bi.MulC(t).AddC(a.Past).Add(si.MulC(blk)), rows), R(C(0), C(width)))
			b.Add(&Op{Opcode: isa.OpDMACopy, Any: true, Outs: []Access{view(dst)}, Ins: []Access{view(src)}, OpID: p.opID})
		})
	})
	if err := k.Finish(); err != nil {
		return nil, fmt.Errorf("internal error: the kv_append kernel: %w", err)
	}
	return k, nil
}

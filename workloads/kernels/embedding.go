package kernels

import (
	"fmt"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/sched"
	. "github.com/trnsim/trnsim/workloads/tile"
)

// Embedding is OUT[t, :] = TABLE[IDS[t], :] for t < Tokens: an embedding
// lookup. IDS is an int32 HBM tensor [Tokens, 1], TABLE [Vocab, Dim] and
// OUT [Tokens, Dim], both of DType. Only the rows the ids pick are read.
type Embedding struct {
	Tokens, Vocab, Dim int64
	DType              isa.DType
}

// EmbeddingOptions are the embedding kernel's choices (0: chosen).
type EmbeddingOptions struct {
	// Buffers is how many row tiles are in flight (0: 4: the gathers'
	// descriptor generation and the stores then overlap).
	Buffers int64
	OpID    int32
}

// EmbeddingPlan is a resolved embedding lowering.
type EmbeddingPlan struct {
	E Embedding
	// Free is the columns of TABLE one gather moves (all of Dim unless
	// the rows do not fit SBUF); NBuf the row tiles in flight.
	Free, NBuf int64
	// DGE is the gathers' descriptor generation: hardware where the
	// target's DGE does indirect transfers, else software (GpSimd).
	DGE  isa.DGEKind
	auto map[string]bool
	opID int32
}

// embeddingFreeMaxBytes caps the columns of one gather at 64 KiB per
// partition, so that several row tiles stay in flight.
const embeddingFreeMaxBytes = 64 << 10

// PlanEmbedding resolves the options.
func PlanEmbedding(e Embedding, o EmbeddingOptions, tg *sched.Target) (*EmbeddingPlan, error) {
	lim := tg.Limits
	switch {
	case e.Tokens <= 0:
		return nil, &ShapeError{Dim: "tokens", Msg: fmt.Sprintf("%d is not positive", e.Tokens)}
	case e.Vocab <= 0:
		return nil, &ShapeError{Dim: "vocab", Msg: fmt.Sprintf("%d is not positive", e.Vocab)}
	case e.Dim <= 0:
		return nil, &ShapeError{Dim: "dim", Msg: fmt.Sprintf("%d is not positive", e.Dim)}
	}
	p := &EmbeddingPlan{E: e, NBuf: o.Buffers, auto: map[string]bool{}, opID: o.OpID, DGE: isa.DGESoftware}
	if lim.HardwareDGE && lim.DMAIndirectHWDGE {
		p.DGE = isa.DGEHardware
	}
	if p.NBuf == 0 {
		p.NBuf = 4
		p.auto["buffers"] = true
	}
	if p.NBuf < 0 {
		return nil, optErr("buffers", "%d is negative", p.NBuf)
	}
	if err := checkHBM("embedding", tg,
		hbmTensor{"IDS", isa.INT32, []int64{e.Tokens, 1}},
		hbmTensor{"TABLE", e.DType, []int64{e.Vocab, e.Dim}},
		hbmTensor{"OUT", e.DType, []int64{e.Tokens, e.Dim}}); err != nil {
		return nil, err
	}
	eb := int64(e.DType.Bytes())
	// Per row tile: the ids (one int32 per partition) and the gathered
	// rows, Free columns of them.
	idsBytes := int64(64)
	avail := lim.SBUFPartitionBytes/p.NBuf - idsBytes
	free := min(e.Dim, max(embeddingFreeMaxBytes/eb, 1), max(avail/eb/64*64, 0))
	if free < min(e.Dim, 64) {
		// Not even 64 columns (or the whole row) fit beside the ids.
		need := mul(p.NBuf, add(idsBytes, roundUp(mul(min(e.Dim, 64), eb), 64)))
		return nil, &sched.FitError{Kernel: "embedding", Tile: "the gathered rows", Mem: isa.MemSBUF, Needed: need, Available: lim.SBUFPartitionBytes}
	}
	// Even chunks: the same number of gathers, as wide as each other.
	nc := ceilDiv(e.Dim, free)
	p.Free = ceilDiv(e.Dim, nc)
	p.auto["embedding_free"] = true
	return p, nil
}

// Choices lists the resolved options.
func (p *EmbeddingPlan) Choices() []Choice {
	return []Choice{{Name: "embedding_free", Value: p.Free, Auto: p.auto["embedding_free"]},
		{Name: "buffers", Value: p.NBuf, Auto: p.auto["buffers"]}}
}

// Kernel writes the plan: for each block of 128 tokens, one transfer
// loads the ids into SBUF (a token per partition), and for each block of
// Free columns a dma_gather picks those rows of TABLE into an SBUF tile,
// which is stored to OUT, NBuf deep.
func (p *EmbeddingPlan) Kernel() (*Kernel, error) {
	e := p.E
	k := New("embedding")
	ids := k.Tensor("IDS", isa.INT32, Input, e.Tokens, 1)
	table := k.Tensor("TABLE", e.DType, Input, e.Vocab, e.Dim)
	out := k.Tensor("OUT", e.DType, Output, e.Tokens, e.Dim)
	free := p.Free
	nr, nc := ceilDiv(e.Tokens, 128), ceilDiv(e.Dim, free)
	nbuf := int(p.NBuf)
	k.Root().For("r", C(0), C(nr), Parallel, func(b *Block, r Expr) {
		rows := Min(C(128), C(e.Tokens).Sub(r.MulC(128)))
		idx := b.Tile("ids", isa.MemSBUF, isa.INT32, []int64{128, 1}, nbuf)
		b.Add(&Op{Opcode: isa.OpDMACopy, Any: true, Outs: []Access{idx.At(R(C(0), rows))}, Ins: []Access{ids.At(RS(r.MulC(128), rows))}, OpID: p.opID})
		b.For("c", C(0), C(nc), Parallel, func(b *Block, c Expr) {
			cols := Min(C(free), C(e.Dim).Sub(c.MulC(free)))
			g := b.Tile("rows", isa.MemSBUF, e.DType, []int64{128, free}, nbuf)
			at := g.At(R(C(0), rows), R(C(0), cols))
			gather := &Op{Opcode: isa.OpDMAGather, Any: true, Outs: []Access{at},
				Ins:  []Access{table.At(R(C(0), C(e.Vocab)), RS(c.MulC(free), cols)), idx.At(R(C(0), rows))},
				OpID: p.opID, DGESet: true}
			gather.Attrs.DGE = p.DGE
			b.Add(gather)
			b.Add(&Op{Opcode: isa.OpDMACopy, Any: true, Outs: []Access{out.At(RS(r.MulC(128), rows), RS(c.MulC(free), cols))}, Ins: []Access{at}, OpID: p.opID})
		})
	})
	if err := k.Finish(); err != nil {
		return nil, fmt.Errorf("internal error: the embedding kernel: %w", err)
	}
	return k, nil
}

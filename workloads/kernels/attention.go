package kernels

import (
	"errors"
	"fmt"
	"math"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/sched"
	. "github.com/trnsim/trnsim/workloads/tile"
)

// Attention is scaled dot-product attention for transformer inference,
// O = softmax(Scale * Q K^T + mask) V, per batch element and query head,
// with grouped-query heads and a KV cache.
//
// The tensors are token-major, as the projections write them: Q and O are
// [Batch*Seq, QHeads*HeadDim] (row b*Seq+s is query s of sequence b; head
// h is columns [h*HeadDim, (h+1)*HeadDim)); K and V are
// [Batch*T, KVHeads*HeadDim] with T = Past+Seq (the KV cache with the new
// entries already appended; row b*T+t is key t of sequence b), or, with
// KVHeadMajor, [Batch*KVHeads*T, HeadDim] (row (b*KVHeads+h)*T+t: each
// head's keys in one run, as the KV cache is stored). Query head h uses
// KV head h / (QHeads/KVHeads).
type Attention struct {
	Batch, QHeads, KVHeads, HeadDim, Seq, Past int64
	// KVHeadMajor: K and V are stored head by head (the KV cache).
	KVHeadMajor bool
	// Causal: query s (absolute position Past+s) sees keys t <= Past+s.
	Causal bool
	// Window > 0 also limits query s to keys t > Past+s-Window.
	Window int64
	DType  isa.DType
	// Scale multiplies the scores (0: 1/sqrt(HeadDim)).
	Scale float64
}

// AttentionOptions are the attention kernel's choices (0: chosen).
type AttentionOptions struct {
	// Buffers is the depth of the Q, K and V buffering.
	Buffers int64
	OpID    int32
	// PerHeadRows loads each head's rows by itself even where whole token
	// rows would do (AttentionPlan.rows off), for comparisons.
	PerHeadRows bool
}

// AttentionPlan is a resolved attention lowering.
type AttentionPlan struct {
	A Attention
	// T is the number of keys per sequence (Past+Seq).
	T int64
	// QB is the queries of one sequence in a query block, Pack the query
	// heads of one KV group stacked in it (rows QB*Pack <= 128; Pack > 1
	// for decode, where Seq alone would leave the PE array mostly idle).
	QB, Pack int64
	// Lanes is how many query blocks (of consecutive head packs) the key
	// loop carries together, so that one block's softmax overlaps
	// another's matmuls; KVSlots the KV heads those lanes read.
	Lanes, KVSlots int64
	// KB is the keys of a key block (one PSUM bank of FP32 scores).
	KB int64
	// KVBlocks is 0 when a head group's K and V are loaded whole, before
	// its query blocks; otherwise the key blocks of the ring they stream
	// through, each loaded in the key loop's step that first reads it
	// (for each query block: several of them then finish one by one).
	KVBlocks int64
	// EndBufs is the rotation of the tiles that finish a head group's
	// last query block, after the key loop: 2, or 1 where SBUF is short
	// (the next head group's key loop then reuses their memory, and waits
	// for their last reads).
	EndBufs int64
	// NBuf is the depth of the Q, K and V buffering.
	NBuf int64
	// noQTGroup: each query block loads its own Q^T, where a head
	// group's whole Q^T (qtHG in Kernel) would not fit beside the rest.
	noQTGroup bool
	// rows: preloaded Q, K and V load as whole token rows (every head of
	// a batch element in one transfer), and TensorE transposes each
	// head's Q^T and K^T out of them (rowsLoad in Kernel); false where
	// the layout, the head packing, PSUM or SBUF do not allow it, or the
	// fit gave it up.
	rows  bool
	scale float64
	// sdt is the dtype of the scores in PSUM.
	sdt  isa.DType
	auto map[string]bool
	opID int32
}

// attnNeg is the additive mask: finite, so a row that a block masks
// entirely still has a finite maximum, and exp of it underflows to 0.
const attnNeg = -30000.0

// PlanAttention checks the problem and chooses the blocking.
func PlanAttention(a Attention, o AttentionOptions, tg *sched.Target) (*AttentionPlan, error) {
	// The same attention on the same target (every layer of a model) is
	// planned once: the plan is its op id's alone.
	k := attentionKey{a: a, buffers: o.Buffers, perHead: o.PerHeadRows, target: tg.Key()}
	p, err := planOnce(tg, k, func() (*AttentionPlan, error) {
		return planAttention(a, AttentionOptions{Buffers: o.Buffers, PerHeadRows: o.PerHeadRows}, tg)
	})
	if err != nil {
		return nil, err
	}
	p.opID = o.OpID
	return p, nil
}

// attentionKey is what an attention plan is made from, but its op id.
type attentionKey struct {
	a       Attention
	buffers int64
	perHead bool
	target  sched.TargetKey
}

func planAttention(a Attention, o AttentionOptions, tg *sched.Target) (*AttentionPlan, error) {
	lim := tg.Limits
	switch {
	case a.Batch < 1 || a.QHeads < 1 || a.KVHeads < 1 || a.HeadDim < 1 || a.Seq < 1 || a.Past < 0 || a.Window < 0:
		return nil, &ShapeError{Dim: "attention", Msg: fmt.Sprintf("batch %d, heads %d/%d, head_dim %d, seq %d, past %d, window %d: sizes must be positive (past and window non-negative)",
			a.Batch, a.QHeads, a.KVHeads, a.HeadDim, a.Seq, a.Past, a.Window)}
	case a.QHeads%a.KVHeads != 0:
		return nil, &ShapeError{Dim: "heads", Msg: fmt.Sprintf("%d query heads are not a multiple of %d KV heads", a.QHeads, a.KVHeads)}
	case a.HeadDim > int64(lim.ArrayRows) || a.HeadDim > 128:
		return nil, &ShapeError{Dim: "head_dim", Msg: fmt.Sprintf("%d exceeds the %d rows of the PE array", a.HeadDim, min(lim.ArrayRows, 128))}
	case a.DType.Bytes() != 2 && a.DType.Bytes() != 4 || !a.DType.IsFloat():
		return nil, optErr("dtype", "attention takes 2- and 4-byte float dtypes (dma_transpose), not %s", a.DType)
	}
	if lim.ArrayRows < 128 || lim.ArrayCols < 128 || lim.Partitions < 128 {
		return nil, optErr("array", "attention tiles for a 128x128 array over 128 partitions; this hardware has %dx%d over %d", lim.ArrayRows, lim.ArrayCols, lim.Partitions)
	}
	p := &AttentionPlan{A: a, T: a.Past + a.Seq, NBuf: o.Buffers, auto: map[string]bool{}, opID: o.OpID, scale: a.Scale}
	p.sdt = isa.FP32
	if attnHalfScores && a.DType.IsHalf() {
		p.sdt = a.DType
	}
	if p.scale == 0 {
		p.scale = 1 / math.Sqrt(float64(a.HeadDim))
	}
	if p.NBuf == 0 {
		p.NBuf = 2
		p.auto["buffers"] = true
	}
	eb := int64(a.DType.Bytes())
	d := a.HeadDim
	kvRows, kvCols := a.kvShape()
	if err := checkHBM("attention", tg, hbmTensor{"Q", a.DType, []int64{a.Batch * a.Seq, a.QHeads * d}},
		hbmTensor{"K", a.DType, []int64{kvRows, kvCols}}, hbmTensor{"V", a.DType, []int64{kvRows, kvCols}},
		hbmTensor{"O", a.DType, []int64{a.Batch * a.Seq, a.QHeads * d}}); err != nil {
		return nil, err
	}
	g := a.QHeads / a.KVHeads
	// Stack the heads of a KV group while one sequence's queries leave
	// rows free.
	p.Pack = 1
	if a.Seq < 128 {
		for c := g; c >= 1; c-- {
			if g%c == 0 && c*a.Seq <= 128 {
				p.Pack = c
				break
			}
		}
	}
	p.QB = min(a.Seq, 128/p.Pack)
	// Lanes: up to 4 packs whose KV heads are one, or whole KV heads each.
	packs := a.QHeads / p.Pack
	p.Lanes = 1
	for _, l := range []int64{4, 2} {
		if packs%l == 0 && (g%(l*p.Pack) == 0 || (l*p.Pack)%g == 0) {
			p.Lanes = l
			break
		}
	}
	p.KVSlots = max(1, p.Lanes*p.Pack/g)
	p.KB = min(512, lim.PSUMBankBytes()/4, int64(lim.MovingFreeMax))
	p.KB = p.KB / 128 * 128
	if p.KB < 128 {
		return nil, optErr("psum", "a PSUM bank of %d bytes holds fewer than 128 FP32 scores", lim.PSUMBankBytes())
	}
	// PSUM per lane: the scores (a bank), the transposed probabilities
	// and O or a block's P V (1 KiB).
	perLane := roundUp(p.KB*int64(p.sdt.Bytes()), lim.PSUMBankBytes()) + p.KB*eb + 1024
	for p.Lanes > 1 && p.Lanes*perLane > lim.PSUMPartitionBytes {
		p.Lanes /= 2
		p.KVSlots = max(1, p.Lanes*p.Pack/g)
	}
	if p.Lanes*perLane > lim.PSUMPartitionBytes {
		return nil, &sched.FitError{Kernel: "attention", Tile: "the scores, probabilities and output of a query block", Mem: isa.MemPSUM,
			Needed: perLane, Available: lim.PSUMPartitionBytes}
	}
	// SBUF: a head group's K and V resident for all T keys where they fit,
	// with the tiles after its key loop single-buffered if need be; else a
	// ring of key blocks streamed through the key loop, read again for
	// each query block (the largest ring up to kvRingBlocks that fits, at
	// least two blocks: one read while the next loads); then fewer lanes
	// (each lane group loads only its own KV heads), then single-buffered
	// inputs. A choice fits when the scheduler can place its kernel's
	// tiles.
	p.rows = !o.PerHeadRows && p.rowsFit(lim.PSUMBankBytes())
	stream := ceilDiv(p.T, p.KB) > 2
	p.EndBufs = 2
	for {
		k, err := p.Kernel()
		if err != nil {
			return nil, err
		}
		_, _, err = sched.PeakOnChip(k, tg)
		var fe *sched.FitError
		if err == nil || !errors.As(err, &fe) {
			return p, err
		}
		switch {
		case p.rows:
			p.rows = false
		case !p.noQTGroup && p.qtGroup():
			p.noQTGroup = true
		case p.EndBufs > 1:
			p.EndBufs = 1
		case stream && p.KVBlocks == 0:
			p.KVBlocks = min(kvRingBlocks, ceilDiv(p.T, p.KB))
		case p.KVBlocks > 2:
			p.KVBlocks--
		case p.Lanes > 1:
			p.Lanes /= 2
			p.KVSlots = max(1, p.Lanes*p.Pack/g)
			if stream {
				p.KVBlocks = min(kvRingBlocks, ceilDiv(p.T, p.KB))
			}
		case p.NBuf > 1 && p.auto["buffers"]:
			p.NBuf = 1
		default:
			what := fmt.Sprintf("every key resident, %d buffers", p.NBuf)
			if p.KVBlocks > 0 {
				what = fmt.Sprintf("a ring of %d key blocks of %d keys, %d buffers", p.KVBlocks, p.KB, p.NBuf)
			}
			return nil, fmt.Errorf("attention over %d keys, one KV head per head group (%s), the least it can hold: %w", p.T, what, fe)
		}
	}
}

// kvRingBlocks is the most key blocks a streamed K and V ring holds (the
// DMA queues' run-ahead of the key loop).
const kvRingBlocks = 8

// kvKeys is the keys a head group's K and V tiles hold, and their 128-key
// tiles: every key, or the streamed ring's.
func (p *AttentionPlan) kvKeys() (keys, tiles int64) {
	if p.KVBlocks > 0 {
		return p.KVBlocks * p.KB, p.KVBlocks * p.KB / 128
	}
	return p.T, ceilDiv(p.T, 128)
}

// kvShape is the HBM shape of K and of V: token-major, or head by head.
func (a Attention) kvShape() (rows, cols int64) {
	t := a.Past + a.Seq
	if a.KVHeadMajor {
		return a.Batch * a.KVHeads * t, a.HeadDim
	}
	return a.Batch * t, a.KVHeads * a.HeadDim
}

// interleavedV reports whether V's key tiles interleave their keys: with
// the cache stored head by head, one query block (decode) and no window,
// the f 128-key tiles of a key block take every f-th key of the block
// (tile j holds keys j, j+f, ...), so that each partition loads f
// consecutive keys in one run (KT head_dim-long rows, contiguous in a head-major
// cache) where plain tiles give it one row per descriptor; P's columns are
// transposed in the same order. V then has no column of ones: the row
// sums come from ScalarE's accumulator as it computes P.
func (p *AttentionPlan) interleavedV() bool {
	return p.A.KVHeadMajor && p.A.Window == 0 && ceilDiv(p.A.Seq, p.QB) == 1
}

// vWidth is the columns of a V row in SBUF: head_dim, and the ones column
// whose P V is the row sum unless the keys interleave.
func (p *AttentionPlan) vWidth() int64 {
	if p.interleavedV() {
		return p.A.HeadDim
	}
	return p.A.HeadDim + 1
}

// Choices lists the resolved options.
func (p *AttentionPlan) Choices() []Choice {
	return []Choice{{Name: "buffers", Value: p.NBuf, Auto: p.auto["buffers"]},
		{Name: "query_block", Value: p.QB, Auto: true}, {Name: "head_pack", Value: p.Pack, Auto: true},
		{Name: "lanes", Value: p.Lanes, Auto: true}, {Name: "key_block", Value: p.KB, Auto: true},
		{Name: "kv_ring_blocks", Value: p.KVBlocks, Auto: true}}
}

// FLOPs returns the matmul FLOPs attention needs: Q K^T and P V over the
// (query, key) pairs the mask keeps.
func (a Attention) FLOPs() float64 {
	t := a.Past + a.Seq
	var pairs int64
	for s := int64(0); s < a.Seq; s++ {
		hi := t // keys [lo, hi)
		if a.Causal {
			hi = min(t, a.Past+s+1)
		}
		lo := int64(0)
		if a.Window > 0 {
			lo = max(0, a.Past+s-a.Window+1)
		}
		pairs += max(0, hi-lo)
	}
	return 4 * float64(a.HeadDim) * float64(pairs) * float64(a.QHeads*a.Batch)
}

// Kernel writes the plan as a tile-IR kernel: a flash-attention loop.
//
// For each batch element and group of Lanes head packs, K^T (HeadDim on
// partitions, by dma_transpose) and V (keys on partitions, with a column
// of ones appended so that P V also yields the softmax row sums) are
// loaded once for all keys. For each query block, each lane's Q^T is
// loaded by dma_transpose, and the key loop runs over the key blocks the
// mask does not hide entirely (causal and window blocks outside are never
// computed). Per key block and lane: S = Q K^T into PSUM (TensorE); the
// diagonal and window edges get an additive mask (VectorE, from constant
// tiles built once with iota); the block's row max (VectorE
// tensor_reduce) and the running max (GpSimd); P = exp(scale*S -
// scale*max) on ScalarE, which also gives alpha = exp(scale*(old max -
// new max)); P^T by TensorE transposes, evacuated to SBUF (VectorE,
// whose BF16 copies from PSUM run at twice ScalarE's rate); O = alpha*O +
// P V. With several query blocks O accumulates in PSUM over a query
// block's key blocks (TensorE adds each block's P V to it, ScalarE scales
// it by the next block's alpha in place); with one (a short prompt,
// decode) the block's P V lands in PSUM and O is updated in SBUF
// (GpSimd, VectorE). The lanes' softmax steps of one
// key block come before their P V steps, so one lane's ScalarE and
// VectorE work overlaps another's matmuls. At the end O is divided by its
// last column (the row sum) and stored. Decode from a head-major cache
// (interleavedV) loads V without the ones column, its key tiles
// interleaved, and adds each block's row sums from ScalarE's accumulator
// (the exp that makes P accumulates them) to O's last column.
func (p *AttentionPlan) Kernel() (*Kernel, error) {
	a := p.A
	d, T, g := a.HeadDim, p.T, a.QHeads/a.KVHeads
	dt := a.DType
	L, Pk, QB, KB := p.Lanes, p.Pack, p.QB, p.KB
	RB := QB * Pk // rows of a query block
	KT := KB / 128
	nT := ceilDiv(T, 128)
	nbuf := int(p.NBuf)
	k := New("attention")
	qHBM := k.Tensor("Q", dt, Input, a.Batch*a.Seq, a.QHeads*d)
	kvRows, kvCols := a.kvShape()
	kHBM := k.Tensor("K", dt, Input, kvRows, kvCols)
	vHBM := k.Tensor("V", dt, Input, kvRows, kvCols)
	oHBM := k.Tensor("O", dt, Output, a.Batch*a.Seq, a.QHeads*d)
	root := k.Root()
	op := func(b *Block, o *Op) *Op { o.OpID = p.opID; return b.Add(o) }
	ins := func(xs ...Access) []Access { return xs }
	dma := func(b *Block, code isa.Opcode, dst, src Access) {
		op(b, &Op{Opcode: code, Any: true, Outs: ins(dst), Ins: ins(src)})
	}
	// The masks, built once: V[r, c'] = Pack*(c'-128) - r over
	// c' in [0, 128+QB) (iota fills a tile in element order, partition
	// by partition: base + step*(r*width + c')); Mc adds attnNeg where
	// Pack*c > r (c = c'-128: keys past a row's position), Mw where
	// Pack*c <= r (keys before its window).
	WM := 128 + QB
	var mc, mw *Tile
	needWindow := a.Window > 0
	if a.Causal || needWindow {
		iv := root.Tile("mask_iota", isa.MemSBUF, isa.FP32, []int64{128, WM}, 1)
		ip := root.Tile("mask_part", isa.MemSBUF, isa.FP32, []int64{128, 1}, 1)
		op(root, &Op{Opcode: isa.OpIota, Engine: isa.EngineGpSimd, Outs: ins(iv.All()), Attrs: isa.Attrs{Value: float64(-128 * Pk), Step: float64(Pk)}})
		op(root, &Op{Opcode: isa.OpIota, Engine: isa.EngineGpSimd, Outs: ins(ip.All()), Attrs: isa.Attrs{Value: 0, Step: float64(Pk*WM + 1)}})
		op(root, &Op{Opcode: isa.OpTensorScalar, Engine: isa.EngineGpSimd, Outs: ins(iv.All()), Ins: ins(iv.All(), ip.All()), Attrs: isa.Attrs{ALU0: isa.ALUSubtract}})
		if a.Causal {
			mc = root.Tile("mask_causal", isa.MemSBUF, isa.FP32, []int64{128, WM}, 1)
			op(root, &Op{Opcode: isa.OpTensorScalar, Engine: isa.EngineGpSimd, Outs: ins(mc.All()), Ins: ins(iv.All()),
				Attrs: isa.Attrs{ALU0: isa.ALUIsGreater, Imm0: 0, ALU1: isa.ALUMultiply, Imm1: attnNeg}})
		}
		if needWindow {
			mw = root.Tile("mask_window", isa.MemSBUF, isa.FP32, []int64{128, WM}, 1)
			op(root, &Op{Opcode: isa.OpTensorScalar, Engine: isa.EngineGpSimd, Outs: ins(mw.All()), Ins: ins(iv.All()),
				Attrs: isa.Attrs{ALU0: isa.ALUIsLE, Imm0: 0, ALU1: isa.ALUMultiply, Imm1: attnNeg}})
		}
	}
	split := func() *Rearrange {
		return &Rearrange{In: [][]string{{"t", "p"}, {"f"}}, Out: []string{"p", "t", "f"}, Sizes: map[string]int64{"p": 128}}
	}
	nGroups := a.QHeads / (L * Pk)
	nQB := ceilDiv(a.Seq, QB)
	// endBufs is the rotation of the P^T, 1/l and output tiles of the
	// accumulation and finalisation with suffix sfx: two inside the key
	// loop; EndBufs for those after it ("e"), declared in the head group's
	// body, where a rotating tile is live for the whole body (the key
	// loop's tiles included) and a single one from its first use on.
	endBufs := func(sfx string) int {
		if sfx == "e" {
			return int(p.EndBufs)
		}
		return 2
	}
	inter, vw := p.interleavedV(), p.vWidth()
	// oPSUM: O accumulates in PSUM, scaled there by alpha, where there are
	// several query blocks (on trn2 at 2,048 tokens 1,446 -> 1,434 us, at
	// 300 tokens 112 -> 91 us); else in SBUF, where its updates leave
	// VectorE and ScalarE to the next head group's softmax sooner (one
	// query block of 128 tokens: 32.5 against 36.2 us; decode).
	oPSUM := !inter && nQB > 1
	// Where a head group's K^T and V tiles hold key block kb (first key
	// kb0) of a query block: key position kb0 and 128-key tile kb0/128
	// when they hold every key; slot kb mod KVBlocks of the ring when
	// they stream.
	ring := p.KVBlocks
	keys, nTk := p.kvKeys()
	// finishEach: streamed K and V with several query blocks; each query
	// block finishes within its own iteration (the next one's first key
	// block reuses the ring's first slot, which the pipeline across query
	// blocks would still read).
	finishEach := ring > 0 && nQB > 1
	kposOf := func(kb, kb0 Expr) Expr {
		if ring > 0 {
			return kb.Mod(C(ring)).MulC(KB)
		}
		return kb0
	}
	vtileOf := func(kb, kb0 Expr) Expr {
		if ring > 0 {
			return kb.Mod(C(ring)).MulC(KT)
		}
		return kb0.Div(C(128))
	}
	// kvOf is rows [t0, t0+n) of KV slot s's head (of head group hg, batch
	// element bi) in K or V (x).
	kvOf := func(x *Tile, bi, hg Expr, s int64, t0, n Expr) Access {
		// The KV head of slot s: the lanes' first head's, plus s.
		kvh := hg.MulC(L * Pk).Div(C(g)).AddC(s)
		if a.KVHeadMajor {
			return x.At(RS(kvCacheRow(bi, kvh, t0, a.KVHeads, T), n), R(C(0), C(d)))
		}
		return x.At(RS(bi.MulC(T).Add(t0), n), RS(kvh.MulC(d), C(d)))
	}
	// onesColumn sets V's column of ones (P V's last column is then the
	// row sum of P), unless the keys interleave.
	onesColumn := func(b *Block, vt atter, s int64) {
		if !inter {
			op(b, &Op{Opcode: isa.OpMemset, Engine: isa.EngineGpSimd, Outs: ins(vt.At(R(C(0), C(128)), I(C(s)), R(C(0), C(nTk)), RS(C(d), C(1)))), Attrs: isa.Attrs{Value: 1}})
		}
	}
	// loadChunk loads keys [t0, t0+w) of slot s's head: K^T at key
	// position kpos of kt, V from 128-key tile vtile of vt on. kc is the
	// block's index over all keys (t0 = kc*KB), which the interleaved V
	// (whose key loop starts at key 0) splits its two shapes by.
	loadChunk := func(b *Block, kt, vt atter, bi, hg Expr, s int64, kc, t0, w, kpos, vtile Expr) {
		dma(b, isa.OpDMATranspose, kt.At(R(C(0), C(d)), I(C(s)), RS(kpos, w)), kvOf(kHBM, bi, hg, s, t0, w))
		if inter {
			// Interleaved: partition p of the block's tiles takes its keys
			// p*f .. p*f+f-1 (f its tiles), in one run. byPartition walks
			// keys as [partition, key, column], consecutive keys on one
			// partition (sizes: one of them).
			byPartition := func(sizes map[string]int64) *Rearrange {
				return &Rearrange{In: [][]string{{"p", "t"}, {"f"}}, Out: []string{"p", "t", "f"}, Sizes: sizes}
			}
			interleave := func(b *Block, w int64) {
				f := ceilDiv(w, 128)
				np, r := w/f, w%f
				dma(b, isa.OpDMACopy, vt.At(R(C(0), C(np)), I(C(s)), RS(vtile, C(f)), R(C(0), C(d))),
					kvOf(vHBM, bi, hg, s, t0, C(np*f)).Rearranged(byPartition(map[string]int64{"t": f})))
				if r > 0 {
					dma(b, isa.OpDMACopy, vt.At(R(C(np), C(np+1)), I(C(s)), RS(vtile, C(r)), R(C(0), C(d))),
						kvOf(vHBM, bi, hg, s, t0.AddC(np*f), C(r)).Rearranged(byPartition(map[string]int64{"p": 1})))
				}
			}
			switch nFull, last := T/KB, T%KB; {
			case last == 0:
				interleave(b, KB)
			case nFull == 0:
				interleave(b, last)
			default:
				b.If(kc.Lt(C(nFull)), func(b *Block) { interleave(b, KB) }, func(b *Block) { interleave(b, last) })
			}
			return
		}
		full := w.Div(C(128))
		b.When(full.Gt(C(0)), func(b *Block) {
			dma(b, isa.OpDMACopy, vt.At(R(C(0), C(128)), I(C(s)), RS(vtile, full), R(C(0), C(d))),
				kvOf(vHBM, bi, hg, s, t0, full.MulC(128)).Rearranged(split()))
		})
		rem := w.Sub(full.MulC(128))
		b.When(rem.Gt(C(0)), func(b *Block) {
			dma(b, isa.OpDMACopy, vt.At(R(C(0), rem), I(C(s)), I(vtile.Add(full)), R(C(0), C(d))),
				kvOf(vHBM, bi, hg, s, t0.Add(full.MulC(128)), rem))
		})
	}
	// loadKV loads head group hg's K^T and V (of batch element bi) into
	// kt and vt, every key, in chunks of a key block, so the first blocks
	// start before the last keys arrive.
	loadKV := func(b *Block, kt, vt atter, bi, hg Expr) {
		for s := int64(0); s < p.KVSlots; s++ {
			onesColumn(b, vt, s)
			b.For(fmt.Sprintf("kc%d", s), C(0), C(ceilDiv(T, KB)), Parallel, func(b *Block, kc Expr) {
				t0 := kc.MulC(KB)
				loadChunk(b, kt, vt, bi, hg, s, kc, t0, Min(C(KB), C(T).Sub(t0)), t0, kc.MulC(KT))
			})
		}
	}
	// loadQ loads lane l's Q^T of query block gq (q0, nq) into qt.
	loadQ := func(b *Block, qt atter, bi, hg Expr, l int64, q0, nq Expr) {
		for gi := int64(0); gi < Pk; gi++ {
			h := hg.MulC(L * Pk).AddC(l*Pk + gi)
			dst := qt.At(R(C(0), C(d)), Range{Start: C(gi), Stop: nq.Sub(C(1)).MulC(Pk).AddC(gi + 1), Step: Pk})
			if Pk == 1 {
				dst = qt.At(R(C(0), C(d)), R(C(0), nq))
			}
			dma(b, isa.OpDMATranspose, dst, qHBM.At(RS(bi.MulC(a.Seq).Add(q0), nq), RS(h.MulC(d), C(d))))
		}
	}
	// Whole token rows (p.rows): per batch element one transfer each of
	// Q's, K's and V's rows (every head; K and V 128 keys a tile), from
	// which each head group's slots and lanes take theirs: TensorE
	// transposes a slot's K^T and a lane's Q^T into PSUM, copied out to
	// their tiles, and a slot's V is copied across.
	type tokenRows struct{ q, k, v *Tile }
	loadRows := func(b *Block, bi Expr) *tokenRows {
		qw, kw := a.QHeads*d, a.KVHeads*d
		r := &tokenRows{q: b.Tile("q_rows", isa.MemSBUF, dt, []int64{128, qw}, 2),
			k: b.Tile("k_rows", isa.MemSBUF, dt, []int64{128, nT, kw}, 2), v: b.Tile("v_rows", isa.MemSBUF, dt, []int64{128, nT, kw}, 2)}
		dma(b, isa.OpDMACopy, r.q.At(R(C(0), C(a.Seq)), R(C(0), C(qw))), qHBM.At(RS(bi.MulC(a.Seq), C(a.Seq)), R(C(0), C(qw))))
		for j := int64(0); j < nT; j++ {
			w := min(128, T-j*128)
			for _, x := range []struct{ rows, hbm *Tile }{{r.k, kHBM}, {r.v, vHBM}} {
				dma(b, isa.OpDMACopy, x.rows.At(R(C(0), C(w)), I(C(j)), R(C(0), C(kw))), x.hbm.At(RS(bi.MulC(T).AddC(j*128), C(w)), R(C(0), C(kw))))
			}
		}
		return r
	}
	// fromRowsKV fills head group hg's K^T (every key at position 0 of
	// kt) and V (tiles from 0 of vt) from r.
	fromRowsKV := func(b *Block, r *tokenRows, hg Expr, kt, vt atter) {
		ps := b.Tile("ps_rk", isa.MemPSUM, dt, []int64{128, p.KVSlots * nT, 128}, 1)
		for s := int64(0); s < p.KVSlots; s++ {
			kvh := hg.MulC(L * Pk).Div(C(g)).AddC(s)
			onesColumn(b, vt, s)
			for j := int64(0); j < nT; j++ {
				w, e := min(128, T-j*128), s*nT+j
				op(b, &Op{Opcode: isa.OpTranspose, Engine: isa.EngineTensor, Outs: ins(ps.At(R(C(0), C(d)), I(C(e)), R(C(0), C(w)))),
					Ins: ins(r.k.At(R(C(0), C(w)), I(C(j)), RS(kvh.MulC(d), C(d))))})
				op(b, &Op{Opcode: isa.OpTensorCopy, Any: true, Outs: ins(kt.At(R(C(0), C(d)), I(C(s)), R(C(j*128), C(j*128+w)))),
					Ins: ins(ps.At(R(C(0), C(d)), I(C(e)), R(C(0), C(w))))})
				op(b, &Op{Opcode: isa.OpTensorCopy, Any: true, Outs: ins(vt.At(R(C(0), C(w)), I(C(s)), I(C(j)), R(C(0), C(d)))),
					Ins: ins(r.v.At(R(C(0), C(w)), I(C(j)), RS(kvh.MulC(d), C(d))))})
			}
		}
	}
	// fromRowsQ fills lane l's Q^T (of head group hg) in qt from r,
	// transposed into ps (a PSUM tile of its own where ps is nil).
	fromRowsQ := func(b *Block, r *tokenRows, hg Expr, l int64, qt atter, ps func(rs ...Range) Access) {
		if ps == nil {
			ps = b.Tile(fmt.Sprintf("ps_rq%d", l), isa.MemPSUM, dt, []int64{128, 128}, 2).At
		}
		h := hg.MulC(L * Pk).AddC(l * Pk)
		op(b, &Op{Opcode: isa.OpTranspose, Engine: isa.EngineTensor, Outs: ins(ps(R(C(0), C(d)), R(C(0), C(a.Seq)))),
			Ins: ins(r.q.At(R(C(0), C(a.Seq)), RS(h.MulC(d), C(d))))})
		op(b, &Op{Opcode: isa.OpTensorCopy, Any: true, Outs: ins(qt.At(R(C(0), C(d)), R(C(0), C(a.Seq)))),
			Ins: ins(ps(R(C(0), C(d)), R(C(0), C(a.Seq))))})
	}
	// Preloaded (preload): with one query block and every head group's
	// Q^T, K^T and V within preloadBytes, all of them load first, into
	// kernel-level tiles, each transfer ahead of every matmul in program
	// order (so none waits for the multiplies of the tiles beside its own,
	// and each head group's loads overlap the groups before).
	nHG := a.Batch * nGroups
	eb := int64(dt.Bytes())
	preload := ring == 0 && nQB == 1 && mul(nHG, add(roundUp(mul(p.KVSlots, T, eb), 64), roundUp(mul(p.KVSlots, nT, vw, eb), 64), mul(L, roundUp(RB*eb, 64)))) <= preloadBytes
	var ktAll, vtAll, qtAll *Tile
	if preload {
		ktAll = root.Tile("kt_all", isa.MemSBUF, dt, []int64{128, nHG, p.KVSlots, T}, 1)
		vtAll = root.Tile("v_all", isa.MemSBUF, dt, []int64{128, nHG, p.KVSlots, nT, vw}, 1)
		qtAll = root.Tile("qt_all", isa.MemSBUF, dt, []int64{128, nHG * L, RB}, 1)
		if p.rows {
			root.For("b_r", C(0), C(a.Batch), Parallel, func(b *Block, bi Expr) {
				r := loadRows(b, bi)
				b.For("hg_r", C(0), C(nGroups), Parallel, func(b *Block, hg Expr) {
					idx := bi.MulC(nGroups).Add(hg)
					fromRowsKV(b, r, hg, slotted{ktAll, idx, true}, slotted{vtAll, idx, true})
					for l := int64(0); l < L; l++ {
						fromRowsQ(b, r, hg, l, slotted{qtAll, idx.MulC(L).AddC(l), true}, nil)
					}
				})
			})
		} else {
			root.For("b_p", C(0), C(a.Batch), Parallel, func(b *Block, bi Expr) {
				b.For("hg_p", C(0), C(nGroups), Parallel, func(b *Block, hg Expr) {
					idx := bi.MulC(nGroups).Add(hg)
					loadKV(b, slotted{ktAll, idx, true}, slotted{vtAll, idx, true}, bi, hg)
					for l := int64(0); l < L; l++ {
						loadQ(b, slotted{qtAll, idx.MulC(L).AddC(l), true}, bi, hg, l, C(0), C(a.Seq))
					}
				})
			})
		}
	}
	root.For("b", C(0), C(a.Batch), Parallel, func(b *Block, bi Expr) {
		// (Token rows for the head groups' loads, unless preloaded.)
		var rows *tokenRows
		if p.rows && !preload {
			rows = loadRows(b, bi)
		}
		b.For("hg", C(0), C(nGroups), Parallel, func(b *Block, hg Expr) {
			var kt, vt atter
			if preload {
				idx := bi.MulC(nGroups).Add(hg)
				kt, vt = slotted{ktAll, idx, true}, slotted{vtAll, idx, true}
			} else {
				kt = b.Tile("kt", isa.MemSBUF, dt, []int64{128, p.KVSlots, keys}, nbuf)
				vt = b.Tile("v", isa.MemSBUF, dt, []int64{128, p.KVSlots, nTk, vw}, nbuf)
				switch {
				case rows != nil:
					fromRowsKV(b, rows, hg, kt, vt)
				case ring == 0:
					loadKV(b, kt, vt, bi, hg)
				default:
					for s := int64(0); s < p.KVSlots; s++ {
						onesColumn(b, vt, s)
					}
				}
			}
			// qtHG: with K and V resident and prompts of 128 tokens or
			// more, every query block's Q^T of the head group loads with
			// them, where it fits qtGroupBytes (the next head group's
			// while this one runs), so that no query block waits for its
			// own (inside a Llama-3-8B layer at 2,048 tokens the attention
			// 1,896 -> 1,600 us, standalone 1,434 -> 1,442 us; BERT-base
			// 5.115 -> 4.917 ms; decode, where it cost 4%, loads as before).
			var qtHG *Tile
			if !preload && p.qtGroup() {
				qtHG = b.Tile("qt_hg", isa.MemSBUF, dt, []int64{128, L * nQB, RB}, nbuf)
				b.For("qb_q", C(0), C(nQB), Parallel, func(b *Block, qb Expr) {
					q0 := qb.MulC(QB)
					nq := Min(C(QB), C(a.Seq).Sub(q0))
					for l := int64(0); l < L; l++ {
						if rows != nil {
							// (One query block: qb is 0.)
							fromRowsQ(b, rows, hg, l, slotted{qtHG, qb.AddC(l * nQB), true}, nil)
							continue
						}
						loadQ(b, slotted{qtHG, qb.AddC(l * nQB), true}, bi, hg, l, q0, nq)
					}
				})
			}
			type lane struct {
				m, o, pr, al, rs *Tile
				slot             int64
			}
			// Per lane, the running state of two consecutive query blocks
			// (by parity of qb) and P and alpha of two consecutive key
			// blocks of each (by parity of kb): the pipeline runs across
			// query blocks. (O in PSUM has one slot per lane: a query
			// block's first P V waits for the last one's finalisation.)
			lanes := make([]lane, L)
			for l := int64(0); l < L; l++ {
				ln := &lanes[l]
				ln.slot = l * Pk / g
				ln.m = b.Tile(fmt.Sprintf("m%d", l), isa.MemSBUF, isa.FP32, []int64{128, 2, 2}, 1)
				if !oPSUM {
					// O in SBUF.
					ln.o = b.Tile(fmt.Sprintf("o%d", l), isa.MemSBUF, isa.FP32, []int64{128, 2, d + 1}, 1)
				}
				ln.pr = b.Tile(fmt.Sprintf("p%d", l), isa.MemSBUF, dt, []int64{128, 2, 2, KB}, 1)
				ln.al = b.Tile(fmt.Sprintf("al%d", l), isa.MemSBUF, isa.FP32, []int64{128, 2, 2}, 1)
				if inter {
					// The row sums of P, from ScalarE's accumulator.
					ln.rs = b.Tile(fmt.Sprintf("rs%d", l), isa.MemSBUF, isa.FP32, []int64{128, 2, 2}, 1)
				}
			}
			// PSUM, one tile each for all lanes (so that no lane's shares
			// another's memory): the scores (a bank per lane), P^T, and
			// O or a block's P V (a lane every 256 FP32 columns, inside
			// one bank).
			psS := b.Tile("ps_s", isa.MemPSUM, p.sdt, []int64{128, L, KB}, 1)
			psPT := b.Tile("ps_pt", isa.MemPSUM, dt, []int64{128, L, KT, 128}, 1)
			psO := b.Tile("ps_o", isa.MemPSUM, isa.FP32, []int64{128, L, 256}, 1)
			// lat is lane l's slice of an all-lanes tile.
			lat := func(t *Tile, l int64, rs ...Range) Access {
				return t.At(append([]Range{rs[0], I(C(l))}, rs[1:]...)...)
			}
			// The geometry of query block qb: its first query, queries,
			// rows, and the keys any of its rows sees, [kStart, kEnd),
			// kStart on a 128-key tile, in nKB key blocks.
			type geom struct{ qb, q0, nq, rows, kStart, kEnd, nKB, qpar Expr }
			geomOf := func(qb Expr) geom {
				q0 := qb.MulC(QB)
				nq := Min(C(QB), C(a.Seq).Sub(q0))
				kEnd := C(T)
				if a.Causal {
					kEnd = Min(C(T), q0.Add(nq).AddC(a.Past))
				}
				kStart := C(0)
				if needWindow {
					kStart = Max(C(0), q0.AddC(a.Past-a.Window+1)).Div(C(128)).MulC(128)
				}
				return geom{qb, q0, nq, nq.MulC(Pk), kStart, kEnd, kEnd.Sub(kStart).CDiv(C(KB)), qb.Mod(C(2))}
			}
			blockOf := func(gq geom, kb Expr) (kb0, bs, nt Expr) {
				kb0 = gq.kStart.Add(kb.MulC(KB))
				bs = Min(C(KB), gq.kEnd.Sub(kb0))
				return kb0, bs, bs.CDiv(C(128))
			}
			// softmax is the first stage of key block kb: S = Q K^T,
			// the masks, the running max, P = exp(scale*(S - max)) and
			// alpha, for every lane.
			softmax := func(b *Block, gq geom, qts []atter, kb Expr) {
				q0, nq, rows := gq.q0, gq.nq, gq.rows
				kb0, bs, _ := blockOf(gq, kb)
				cur, prev := kb.Mod(C(2)), kb.AddC(1).Mod(C(2))
				first := kb.Eq(C(0))
				for l := int64(0); l < L; l++ {
					ln := &lanes[l]
					mb := b.Tile(fmt.Sprintf("mb%d", l), isa.MemSBUF, p.sdt, []int64{128, 1}, 2)
					nbt := b.Tile(fmt.Sprintf("nb%d", l), isa.MemSBUF, isa.FP32, []int64{128, 1}, 2)
					sAll := lat(psS, l, R(C(0), rows), R(C(0), bs))
					op(b, &Op{Opcode: isa.OpLoadStationary, Engine: isa.EngineTensor, Ins: ins(qts[l].At(R(C(0), C(d)), R(C(0), rows)))})
					op(b, &Op{Opcode: isa.OpMultiplyMoving, Engine: isa.EngineTensor, Outs: ins(sAll),
						Ins: ins(kt.At(R(C(0), C(d)), I(C(ln.slot)), RS(kposOf(kb, kb0), bs))), Start: C(1), Stop: C(1)})
					if a.Causal {
						// Columns j >= delta+1 hold keys past row 0's
						// position: add Mc[:, 128 + j - delta].
						delta := q0.AddC(a.Past).Sub(kb0)
						j0 := Max(C(0), delta.AddC(1))
						b.When(j0.Lt(bs), func(b *Block) {
							op(b, &Op{Opcode: isa.OpTensorTensor, Engine: isa.EngineVector, Outs: ins(lat(psS, l, R(C(0), rows), R(j0, bs))),
								Ins:   ins(lat(psS, l, R(C(0), rows), R(j0, bs)), mc.At(R(C(0), rows), R(j0.Sub(delta).AddC(128), bs.Sub(delta).AddC(128)))),
								Attrs: isa.Attrs{ALU0: isa.ALUAdd}})
						})
					}
					if needWindow {
						// Columns j < eps+QB hold keys before the last
						// row's window: add Mw[:, 128 + j - eps].
						eps := q0.AddC(a.Past - a.Window).Sub(kb0)
						j1 := Min(bs, eps.Add(nq))
						b.When(j1.Gt(C(0)), func(b *Block) {
							op(b, &Op{Opcode: isa.OpTensorTensor, Engine: isa.EngineVector, Outs: ins(lat(psS, l, R(C(0), rows), R(C(0), j1))),
								Ins:   ins(lat(psS, l, R(C(0), rows), R(C(0), j1)), mw.At(R(C(0), rows), R(C(128).Sub(eps), j1.Sub(eps).AddC(128)))),
								Attrs: isa.Attrs{ALU0: isa.ALUAdd}})
						})
					}
					mCur := ln.m.At(R(C(0), rows), I(gq.qpar), RS(cur, C(1)))
					mPrev := ln.m.At(R(C(0), rows), I(gq.qpar), RS(prev, C(1)))
					mbA := mb.At(R(C(0), rows), R(C(0), C(1)))
					op(b, &Op{Opcode: isa.OpTensorReduce, Engine: isa.EngineVector, Outs: ins(mbA), Ins: ins(sAll), Attrs: isa.Attrs{ALU0: isa.ALUMax, Axis: 1}})
					b.If(first, func(b *Block) {
						op(b, &Op{Opcode: isa.OpTensorCopy, Engine: isa.EngineGpSimd, Outs: ins(mCur), Ins: ins(mbA)})
					}, func(b *Block) {
						op(b, &Op{Opcode: isa.OpTensorTensor, Engine: isa.EngineGpSimd, Outs: ins(mCur), Ins: ins(mPrev, mbA), Attrs: isa.Attrs{ALU0: isa.ALUMax}})
					})
					nb := nbt.At(R(C(0), rows), R(C(0), C(1)))
					op(b, &Op{Opcode: isa.OpTensorScalar, Engine: isa.EngineGpSimd, Outs: ins(nb), Ins: ins(mCur), Attrs: isa.Attrs{ALU0: isa.ALUMultiply, Imm0: -p.scale}})
					b.When(first.Not(), func(b *Block) {
						op(b, &Op{Opcode: isa.OpActivation, Engine: isa.EngineScalar, Outs: ins(ln.al.At(R(C(0), rows), I(gq.qpar), RS(cur, C(1)))), Ins: ins(mPrev, nb),
							Attrs: isa.Attrs{Func: isa.ActExp, Scale: p.scale}})
					})
					pAttrs := isa.Attrs{Func: isa.ActExp, Scale: p.scale}
					if inter {
						pAttrs.Accumulate = isa.ALUAdd
					}
					op(b, &Op{Opcode: isa.OpActivation, Engine: isa.EngineScalar, Outs: ins(ln.pr.At(R(C(0), rows), I(gq.qpar), I(cur), R(C(0), bs))), Ins: ins(sAll, nb),
						Attrs: pAttrs})
					if inter {
						op(b, &Op{Opcode: isa.OpActReadAccumulator, Engine: isa.EngineScalar, Outs: ins(ln.rs.At(R(C(0), rows), I(gq.qpar), RS(cur, C(1))))})
					}
				}
			}
			// ptTiles declares the lanes' P^T tiles in SBUF.
			ptTiles := func(b *Block, sfx string) []*Tile {
				pts := make([]*Tile, L)
				for l := int64(0); l < L; l++ {
					pts[l] = b.Tile(fmt.Sprintf("pt%d%s", l, sfx), isa.MemSBUF, dt, []int64{128, KT, 128}, endBufs(sfx))
				}
				return pts
			}
			// accumulateIn is the second stage of key block kb: P^T by
			// TensorE transposes into pts, then with O in PSUM O += P V
			// and O *= the next block's alpha, with O in SBUF P V and
			// O = alpha*O + P V, for every lane (each step for all lanes
			// before the next, so that no engine waits on one lane while
			// another is ready).
			accumulateIn := func(b *Block, gq geom, kb Expr, sfx string, pts []*Tile) {
				rows := gq.rows
				kb0, bs, nt := blockOf(gq, kb)
				cur := kb.Mod(C(2))
				first := kb.Eq(C(0))
				full := bs.Div(C(128))
				rem := bs.Sub(full.MulC(128))
				for l := int64(0); l < L; l++ {
					pr := lanes[l].pr
					b.For(fmt.Sprintf("tj%d%s", l, sfx), C(0), nt, Parallel, func(b *Block, j Expr) {
						w := Min(C(128), bs.Sub(j.MulC(128)))
						op(b, &Op{Opcode: isa.OpTranspose, Engine: isa.EngineTensor, Outs: ins(lat(psPT, l, R(C(0), w), I(j), R(C(0), rows))),
							Ins: ins(pr.At(R(C(0), rows), I(gq.qpar), I(cur), RS(j.MulC(128), w)))})
					})
				}
				for l := int64(0); l < L; l++ {
					pt := pts[l]
					// Evacuations on VectorE, whose BF16 copies from PSUM
					// run at twice ScalarE's rate (on trn2 at 2,048
					// tokens: 3.28x the FLOP bound, as with one lane of
					// four on ScalarE; 3.70x alternating by lane).
					eng := isa.EngineVector
					b.When(full.Gt(C(0)), func(b *Block) {
						op(b, &Op{Opcode: isa.OpTensorCopy, Engine: eng, Outs: ins(pt.At(R(C(0), C(128)), R(C(0), full), R(C(0), rows))),
							Ins: ins(lat(psPT, l, R(C(0), C(128)), R(C(0), full), R(C(0), rows)))})
					})
					b.When(rem.Gt(C(0)), func(b *Block) {
						op(b, &Op{Opcode: isa.OpTensorCopy, Engine: eng, Outs: ins(pt.At(R(C(0), rem), I(full), R(C(0), rows))),
							Ins: ins(lat(psPT, l, R(C(0), rem), I(full), R(C(0), rows)))})
					})
				}
				// The first P V of O's accumulation group: each block's
				// with O in SBUF, the query block's first with O in PSUM.
				start := func(j Expr) Expr { return j.Eq(C(0)) }
				if oPSUM {
					start = func(j Expr) Expr { return first.And(j.Eq(C(0))) }
				}
				for l := int64(0); l < L; l++ {
					ln := &lanes[l]
					pt := pts[l]
					oAll := lat(psO, l, R(C(0), rows), R(C(0), C(d+1)))
					b.For(fmt.Sprintf("vj%d%s", l, sfx), C(0), nt, Sequential, func(b *Block, j Expr) {
						w := Min(C(128), bs.Sub(j.MulC(128)))
						op(b, &Op{Opcode: isa.OpLoadStationary, Engine: isa.EngineTensor, Ins: ins(pt.At(R(C(0), w), I(j), R(C(0), rows)))})
						op(b, &Op{Opcode: isa.OpMultiplyMoving, Engine: isa.EngineTensor, Outs: ins(oAll),
							Ins:   ins(vt.At(R(C(0), w), I(C(ln.slot)), I(vtileOf(kb, kb0).Add(j)), R(C(0), C(d+1)))),
							Start: start(j), Stop: j.Eq(nt.Sub(C(1)))})
					})
				}
				if !oPSUM {
					// O in SBUF: O = alpha*O + P V (GpSimd, VectorE).
					for l := int64(0); l < L; l++ {
						ln := &lanes[l]
						oAll := lat(psO, l, R(C(0), rows), R(C(0), C(d+1)))
						oSB := ln.o.At(R(C(0), rows), I(gq.qpar), R(C(0), C(d+1)))
						al := ln.al.At(R(C(0), rows), I(gq.qpar), RS(cur, C(1)))
						b.If(first, func(b *Block) {
							op(b, &Op{Opcode: isa.OpTensorCopy, Engine: isa.EngineScalar, Outs: ins(oSB), Ins: ins(oAll)})
						}, func(b *Block) {
							op(b, &Op{Opcode: isa.OpTensorScalar, Engine: isa.EngineGpSimd, Outs: ins(oSB), Ins: ins(oSB, al),
								Attrs: isa.Attrs{ALU0: isa.ALUMultiply}})
							op(b, &Op{Opcode: isa.OpTensorTensor, Engine: isa.EngineVector, Outs: ins(oSB), Ins: ins(oSB, oAll), Attrs: isa.Attrs{ALU0: isa.ALUAdd}})
						})
					}
					return
				}
				// O (with the row sums in its last column) accumulates in
				// PSUM over the query block's key blocks: once a block's
				// P V is in, ScalarE scales O in place by the next block's
				// alpha (its softmax stage comes first in program order).
				b.When(kb.AddC(1).Lt(gq.nKB), func(b *Block) {
					next := kb.AddC(1).Mod(C(2))
					for l := int64(0); l < L; l++ {
						oAll := lat(psO, l, R(C(0), rows), R(C(0), C(d+1)))
						al := lanes[l].al.At(R(C(0), rows), I(gq.qpar), RS(next, C(1)))
						op(b, &Op{Opcode: isa.OpTensorScalar, Engine: isa.EngineScalar, Outs: ins(oAll), Ins: ins(oAll, al),
							Attrs: isa.Attrs{ALU0: isa.ALUMultiply}})
					}
				})
			}
			accumulate := func(b *Block, gq geom, kb Expr, sfx string) {
				accumulateIn(b, gq, kb, sfx, ptTiles(b, sfx))
			}
			// accumulateInter is accumulate with interleaved V
			// (interleavedV): key block kb (one query block, so kb0 = kb*KB)
			// has f tiles, and tile j its keys j, j+f, ...: np of them, one
			// more for the first r tiles. P^T tile j transposes those
			// columns of P; O's last column (the row sum) adds the block's
			// sum of P from ScalarE's accumulator.
			accumulateInter := func(b *Block, gq geom, kb Expr, sfx string) {
				// P^T's SBUF tiles, one set for both block shapes (a tile
				// declared in each branch would take SBUF of its own).
				pts := make([]*Tile, L)
				for l := int64(0); l < L; l++ {
					pts[l] = b.Tile(fmt.Sprintf("pt%d%s", l, sfx), isa.MemSBUF, dt, []int64{128, KT, 128}, endBufs(sfx))
				}
				body := func(b *Block, w int64) {
					rows := gq.rows
					f := ceilDiv(w, 128)
					np, r := w/f, w%f
					cnt := func(j int64) int64 {
						if j < r {
							return np + 1
						}
						return np
					}
					cur := kb.Mod(C(2))
					first := kb.Eq(C(0))
					for l := int64(0); l < L; l++ {
						pr := lanes[l].pr
						for j := int64(0); j < f; j++ {
							c := cnt(j)
							op(b, &Op{Opcode: isa.OpTranspose, Engine: isa.EngineTensor, Outs: ins(lat(psPT, l, R(C(0), C(c)), I(C(j)), R(C(0), rows))),
								Ins: ins(pr.At(R(C(0), rows), I(gq.qpar), I(cur), Range{Start: C(j), Stop: C(j + f*(c-1) + 1), Step: f}))})
						}
					}
					for l := int64(0); l < L; l++ {
						pt := pts[l]
						eng := isa.EngineVector
						if l%2 == 1 {
							eng = isa.EngineScalar
						}
						evac := func(parts, j0, j1 int64) {
							op(b, &Op{Opcode: isa.OpTensorCopy, Engine: eng, Outs: ins(pt.At(R(C(0), C(parts)), R(C(j0), C(j1)), R(C(0), rows))),
								Ins: ins(lat(psPT, l, R(C(0), C(parts)), R(C(j0), C(j1)), R(C(0), rows)))})
						}
						if r > 0 {
							evac(np+1, 0, r)
						}
						if r < f {
							evac(np, r, f)
						}
					}
					for l := int64(0); l < L; l++ {
						ln := &lanes[l]
						pt := pts[l]
						oAll := lat(psO, l, R(C(0), rows), R(C(0), C(d)))
						for j := int64(0); j < f; j++ {
							c := cnt(j)
							op(b, &Op{Opcode: isa.OpLoadStationary, Engine: isa.EngineTensor, Ins: ins(pt.At(R(C(0), C(c)), I(C(j)), R(C(0), rows)))})
							start, stop := int64(0), int64(0)
							if j == 0 {
								start = 1
							}
							if j == f-1 {
								stop = 1
							}
							op(b, &Op{Opcode: isa.OpMultiplyMoving, Engine: isa.EngineTensor, Outs: ins(oAll),
								Ins:   ins(vt.At(R(C(0), C(c)), I(C(ln.slot)), I(vtileOf(kb, kb.MulC(KB)).AddC(j)), R(C(0), C(d)))),
								Start: C(start), Stop: C(stop)})
						}
					}
					for l := int64(0); l < L; l++ {
						ln := &lanes[l]
						oAll := lat(psO, l, R(C(0), rows), R(C(0), C(d)))
						oSB := ln.o.At(R(C(0), rows), I(gq.qpar), R(C(0), C(d+1)))
						oD := ln.o.At(R(C(0), rows), I(gq.qpar), R(C(0), C(d)))
						oL := ln.o.At(R(C(0), rows), I(gq.qpar), RS(C(d), C(1)))
						al := ln.al.At(R(C(0), rows), I(gq.qpar), RS(cur, C(1)))
						rs := ln.rs.At(R(C(0), rows), I(gq.qpar), RS(cur, C(1)))
						b.If(first, func(b *Block) {
							op(b, &Op{Opcode: isa.OpTensorCopy, Engine: isa.EngineScalar, Outs: ins(oD), Ins: ins(oAll)})
							op(b, &Op{Opcode: isa.OpTensorCopy, Engine: isa.EngineGpSimd, Outs: ins(oL), Ins: ins(rs)})
						}, func(b *Block) {
							op(b, &Op{Opcode: isa.OpTensorScalar, Engine: isa.EngineGpSimd, Outs: ins(oSB), Ins: ins(oSB, al),
								Attrs: isa.Attrs{ALU0: isa.ALUMultiply}})
							op(b, &Op{Opcode: isa.OpTensorTensor, Engine: isa.EngineVector, Outs: ins(oD), Ins: ins(oD, oAll), Attrs: isa.Attrs{ALU0: isa.ALUAdd}})
							op(b, &Op{Opcode: isa.OpTensorTensor, Engine: isa.EngineVector, Outs: ins(oL), Ins: ins(oL, rs), Attrs: isa.Attrs{ALU0: isa.ALUAdd}})
						})
					}
				}
				switch nFull, last := T/KB, T%KB; {
				case last == 0:
					body(b, KB)
				case nFull == 0:
					body(b, last)
				default:
					b.If(kb.Lt(C(nFull)), func(b *Block) { body(b, KB) }, func(b *Block) { body(b, last) })
				}
			}
			if inter {
				accumulate = accumulateInter
			}
			// finalize divides O by the row sums and stores it.
			finalize := func(b *Block, gq geom, sfx string) {
				rows := gq.rows
				// With one head a lane (no packing) the lanes' outputs,
				// consecutive heads, store as one transfer: rows of every
				// lane's head (a head's own are head_dim elements, 128
				// bytes at 64 in BF16: descriptor-bound).
				var oAll *Tile
				if Pk == 1 && L > 1 {
					oAll = b.Tile("ot"+sfx, isa.MemSBUF, dt, []int64{128, L * d}, endBufs(sfx))
				}
				for l := int64(0); l < L; l++ {
					ln := &lanes[l]
					rl := b.Tile(fmt.Sprintf("rl%d%s", l, sfx), isa.MemSBUF, isa.FP32, []int64{128, 1}, endBufs(sfx))
					var ot atter
					if oAll != nil {
						ot = colsOf{oAll, l * d}
					} else {
						ot = b.Tile(fmt.Sprintf("ot%d%s", l, sfx), isa.MemSBUF, dt, []int64{128, d}, endBufs(sfx))
					}
					// O: in PSUM (oPSUM), or in SBUF.
					oD, oL := lat(psO, l, R(C(0), rows), R(C(0), C(d))), lat(psO, l, R(C(0), rows), RS(C(d), C(1)))
					eng := isa.EngineVector
					if !oPSUM {
						oD, oL = ln.o.At(R(C(0), rows), I(gq.qpar), R(C(0), C(d))), ln.o.At(R(C(0), rows), I(gq.qpar), RS(C(d), C(1)))
						eng = isa.EngineGpSimd
					}
					op(b, &Op{Opcode: isa.OpReciprocal, Any: true, Outs: ins(rl.At(R(C(0), rows), R(C(0), C(1)))), Ins: ins(oL)})
					op(b, &Op{Opcode: isa.OpTensorScalar, Engine: eng, Outs: ins(ot.At(R(C(0), rows), R(C(0), C(d)))),
						Ins: ins(oD, rl.At(R(C(0), rows), R(C(0), C(1)))), Attrs: isa.Attrs{ALU0: isa.ALUMultiply}})
					if oAll != nil {
						continue
					}
					h0 := hg.MulC(L * Pk).AddC(l * Pk)
					dma(b, isa.OpDMACopy, oHBM.At(RS(bi.MulC(a.Seq).Add(gq.q0), gq.nq), RS(h0.MulC(d), C(Pk*d))), ot.At(R(C(0), rows), R(C(0), C(d))))
				}
				if oAll != nil {
					h0 := hg.MulC(L * Pk)
					dma(b, isa.OpDMACopy, oHBM.At(RS(bi.MulC(a.Seq).Add(gq.q0), gq.nq), RS(h0.MulC(d), C(L*d))), oAll.At(R(C(0), rows), R(C(0), C(L*d))))
				}
			}
			b.For("qb", C(0), C(nQB), Parallel, func(b *Block, qb Expr) {
				gq := geomOf(qb)
				qts := make([]atter, L)
				for l := int64(0); l < L; l++ {
					if preload {
						qts[l] = slotted{qtAll, bi.MulC(nGroups).Add(hg).MulC(L).AddC(l), true}
						continue
					}
					if qtHG != nil {
						qts[l] = slotted{qtHG, qb.AddC(l * nQB), true}
						continue
					}
					qt := b.Tile(fmt.Sprintf("qt%d", l), isa.MemSBUF, dt, []int64{128, RB}, nbuf)
					qts[l] = qt
					if rows != nil {
						// (Into the lane's P^T tile, free before its first
						// scores: PSUM is full by now.)
						l := l
						fromRowsQ(b, rows, hg, l, qt, func(rs ...Range) Access { return lat(psPT, l, rs[0], I(C(0)), rs[1]) })
						continue
					}
					loadQ(b, qt, bi, hg, l, gq.q0, gq.nq)
				}
				// Software pipelined: key block kb's softmax, then the
				// accumulation of the block before it (of this query
				// block, or the last of the previous one, which is then
				// finished).
				b.For("kb", C(0), gq.nKB, Sequential, func(b *Block, kb Expr) {
					if ring > 0 {
						// Streamed: the block's keys into its slot of the ring
						// (its last reads, ring blocks back, before).
						kb0, bs, _ := blockOf(gq, kb)
						for s := int64(0); s < p.KVSlots; s++ {
							loadChunk(b, kt, vt, bi, hg, s, kb, kb0, bs, kposOf(kb, kb0), vtileOf(kb, kb0))
						}
					}
					softmax(b, gq, qts, kb)
					// The P^T tiles, one set for this query block's
					// accumulation and the last of the one before.
					acc := accumulate
					if !inter {
						pts := ptTiles(b, "")
						acc = func(b *Block, gq geom, kb Expr, sfx string) { accumulateIn(b, gq, kb, sfx, pts) }
					}
					if nQB == 1 || finishEach {
						// (No query block before this one to finish: its
						// tiles would take SBUF for nothing.)
						b.When(kb.Gt(C(0)), func(b *Block) { acc(b, gq, kb.Sub(C(1)), "") })
						return
					}
					b.If(kb.Gt(C(0)), func(b *Block) { acc(b, gq, kb.Sub(C(1)), "") }, func(b *Block) {
						b.When(qb.Gt(C(0)), func(b *Block) {
							gp := geomOf(qb.Sub(C(1)))
							acc(b, gp, gp.nKB.Sub(C(1)), "p")
							finalize(b, gp, "p")
						})
					})
				})
				if finishEach {
					accumulate(b, gq, gq.nKB.Sub(C(1)), "q")
					finalize(b, gq, "q")
				}
			})
			if !finishEach {
				gl := geomOf(C(nQB - 1))
				accumulate(b, gl, gl.nKB.Sub(C(1)), "e")
				finalize(b, gl, "e")
			}
		})
	})
	if err := k.Finish(); err != nil {
		return nil, fmt.Errorf("internal error: the attention kernel: %w", err)
	}
	return k, nil
}

// colsOf is columns [off, ...) of a 2-D tile: an atter whose second
// range is moved by off.
type colsOf struct {
	t   *Tile
	off int64
}

// At is the tile's access with the column range (the second of two
// ranges; a range or an index) moved by off.
func (c colsOf) At(rs ...Range) Access {
	r := rs[1]
	r.Start = r.Start.AddC(c.off)
	if !r.Index {
		r.Stop = r.Stop.AddC(c.off)
	}
	return c.t.At(rs[0], r)
}

// qtGroupBytes bounds the SBUF per partition of a head group's Q^T
// (every query block's, in one of its rotations).
const qtGroupBytes = 32 << 10

// qtGroup reports whether a head group's Q^T loads whole (qtHG in
// Kernel): K and V resident, a prompt of 128 tokens or more, within
// qtGroupBytes, and not given up for SBUF.
func (p *AttentionPlan) qtGroup() bool {
	rb := p.QB * p.Pack
	return !p.noQTGroup && p.KVBlocks == 0 && p.A.Seq >= 128 && mul(p.Lanes, ceilDiv(p.A.Seq, p.QB), roundUp(rb*int64(p.A.DType.Bytes()), 64)) <= qtGroupBytes
}

// preloadBytes bounds the SBUF per partition of attention's preloaded
// inputs (every head group's Q^T, K^T and V).
const preloadBytes = 24 << 10

// rowsStageBytes bounds the SBUF per partition of the token rows that
// the preloaded Q, K and V load whole (rowsLoad in Kernel), in their two
// rotations.
const rowsStageBytes = 16 << 10

// rowsFit reports whether the preloaded inputs can load as whole token
// rows: a token-major K and V (a head-major cache loads a head's rows
// contiguously already), one head a query block (no packing), one key
// tile's worth of transposes for every slot and lane in one PSUM bank,
// and the rows within rowsStageBytes. Each head's rows are head_dim
// elements (128 bytes at d = 64, BF16): a transfer per head is
// descriptor-bound (26% of the DMA engines' rate), where a row of every
// head is not; TensorE's transposes (idle before the first scores) and
// the copies out of PSUM cost less than the descriptors they save.
func (p *AttentionPlan) rowsFit(bankBytes int64) bool {
	a := p.A
	eb := int64(a.DType.Bytes())
	nT := ceilDiv(p.T, 128)
	stage := 2 * (a.QHeads*a.HeadDim + 2*nT*a.KVHeads*a.HeadDim) * eb
	return !a.KVHeadMajor && p.Pack == 1 && a.Seq <= 128 && p.KVBlocks == 0 &&
		p.KVSlots*nT*128*eb <= bankBytes && stage <= rowsStageBytes
}

// attnHalfScores keeps the scores in PSUM in the input's 2-byte dtype
// (the PE array rounds its FP32 sums on write), which halves VectorE's
// row-max reduction at the cost of score precision. Off: FP32 scores.
var attnHalfScores = false

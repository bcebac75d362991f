package isa

import "unsafe"

// Decoded is what the simulator derives from an instruction's body — its
// opcode, engine, placement, operands and attributes, not its waits or
// signals: the body has passed the limit checks and its cost flags are
// known. A Decoded never changes
// once made (but for the cost it remembers), so one handed out stays valid, so a cache of many stays cheap:
// the attributes and cost variables are read from the first instruction
// seen with the body.
type Decoded struct {
	// The body it was decoded from: operand arrays by identity, and the
	// first instruction with it (for its attributes and cost variables).
	outs, ins   *Operand
	proto       *Instruction
	model       *CostModel
	cache       *DecodeCache
	nOuts, nIns int32
	chip, core  int32
	op          Opcode
	engine      Engine
	costOK      bool
	// Flags are the cost-table conditions that hold (CostModel.Flags).
	Flags uint32
	// FLOPs is what a multiply_moving computes (2 x multiply-accumulates);
	// 0 for other instructions.
	FLOPs  float64
	nSpans int32
	costNS int64
	cost   Cost
	// spans are the on-chip operands' byte spans, outputs first.
	spans [maxOperands]Span
}

// maxOperands bounds an instruction's operands (one output and up to three
// inputs; see opInfo).
const maxOperands = 4

// Span is one operand's footprint in SBUF or PSUM: partitions
// [PartLo, PartHi) and the bounding byte range [Lo, Hi) inside each (see
// AccessPattern.ByteSpan).
type Span struct {
	Mem            Memory
	Write          bool // an output
	Chip, Core     int32
	PartLo, PartHi int32
	Lo, Hi         int64
}

// Spans returns the on-chip operands' spans, outputs first; operands in
// HBM and empty ones are left out.
func (d *Decoded) Spans() []Span { return d.spans[:d.nSpans] }

// AppendSpans appends the on-chip spans of in's operands, outputs first
// (what Decoded.Spans holds), to dst.
func AppendSpans(dst []Span, in *Instruction) []Span {
	add := func(ops []Operand, write bool) {
		for i := range ops {
			ap := &ops[i].AP
			if !ap.Mem.OnChip() {
				continue
			}
			lo, hi := ap.ByteSpan()
			if hi <= lo {
				continue
			}
			dst = append(dst, Span{Mem: ap.Mem, Write: write, Chip: ap.Chip, Core: ap.Core,
				PartLo: ap.PartStart, PartHi: ap.PartStart + ap.PartCount, Lo: lo, Hi: hi})
		}
	}
	add(in.Outs, true)
	add(in.Ins, false)
	return dst
}

// Cost returns the instruction's cost for a stationary free size ns
// (TensorE's NS; 0 elsewhere), remembering the last one.
func (d *Decoded) Cost(ns int64) Cost {
	if d.costOK && d.costNS == ns {
		return d.cost
	}
	// The cache's scratch environment: one on the stack would escape
	// through the compiled expressions and cost an allocation.
	env := &d.cache.env
	FillEnv(d.proto, env)
	env[VarNS] = float64(ns)
	d.cost = d.model.cost(d.op, d.engine, d.Flags, env)
	d.costNS, d.costOK = ns, true
	return d.cost
}

// A DecodeCache starts with decodeSlotsMin slots and doubles, up to
// decodeSlotsMax, when, since it last grew, it has missed on bodies it had
// seen before as many times as half its slots and on at least a quarter of
// its misses: enough for the bodies an engine cycles through in a blocked
// GEMM, while a stream of one-off bodies (an assembly file) keeps the small
// table. Bodies seen are remembered in a bit set of seenBits hashes,
// cleared every seenBits/8 misses (so false repeats stay under 1 in 8).
const (
	decodeSlotsMin = 64
	decodeSlotsMax = 8192
	seenBits       = 1 << 14
)

// DecodeCache checks and decodes instructions for one engine, remembering
// the bodies it has seen. Generated streams hand out fresh instructions
// whose bodies repeat — the same shared operand slices with new waits and
// signals — so a body is recognised by the identity of its operand arrays
// (plus opcode, engine, placement and attributes), and only its waits and
// signals are checked again. This relies on the stream contract that an
// instruction, operands included, never changes once handed out. Not safe
// for concurrent use.
type DecodeCache struct {
	limits *Limits
	model  *CostModel
	// slots index decodings by body hash; a collision replaces the entry
	// (the decoding it pointed to stays valid for whoever holds it).
	slots   []*Decoded
	scratch Decoded
	// arena hands out decodings in chunks of arenaChunk.
	arena []Decoded
	// seen marks the hashes of bodies missed on; repeats counts misses on
	// bodies seen before, since the table last grew.
	seen       [seenBits / 64]uint64
	seenMisses int
	repeats    int
	growMisses int
	env        CostEnv
	// byInst (as long as slots) remembers the decoding of a recently seen
	// instruction: a stream that hands out the same instruction again
	// (waits, signals and all) skips even the body comparison and the
	// semaphore checks.
	byInst []instSlot
	// Hits and Misses count lookups.
	Hits, Misses int64
}

// arenaChunk is how many decodings the cache allocates at a time.
const arenaChunk = 64

type instSlot struct {
	in *Instruction
	d  *Decoded
}

// NewDecodeCache returns an empty cache for the given limits and costs.
func NewDecodeCache(l *Limits, m *CostModel) *DecodeCache {
	return &DecodeCache{limits: l, model: m, slots: make([]*Decoded, decodeSlotsMin), byInst: make([]instSlot, decodeSlotsMin)}
}

// Decode checks in against the limits (a *LimitError on failure) and
// returns its decoding. A decoding of a body the cache keeps stays valid;
// one of an uncacheable body (a barrier's), only until the next call.
func (c *DecodeCache) Decode(in *Instruction) (*Decoded, error) {
	ih := instHash(in)
	is := c.instSlot(ih)
	if is.in == in {
		c.Hits++
		return is.d, nil
	}
	var outs, ins *Operand
	if len(in.Outs) > 0 {
		outs = &in.Outs[0]
	}
	if len(in.Ins) > 0 {
		ins = &in.Ins[0]
	}
	cacheable := in.Attrs.BarrierCores == nil && (outs != nil || ins != nil)
	if !cacheable {
		if err := c.limits.Check(in); err != nil {
			return nil, err
		}
		c.fill(&c.scratch, in, outs, ins)
		return &c.scratch, nil
	}
	h := bodyHash(outs, ins, in.Op)
	slot := c.slot(h)
	if d := *slot; d != nil && d.outs == outs && d.ins == ins && int(d.nOuts) == len(in.Outs) && int(d.nIns) == len(in.Ins) &&
		d.op == in.Op && d.engine == in.Engine && d.chip == in.Chip && d.core == in.Core && d.proto.Attrs.sameScalars(&in.Attrs) {
		c.Hits++
		if err := c.limits.checkSems(in); err != nil {
			return nil, err
		}
		*is = instSlot{in: in, d: d}
		return d, nil
	}
	c.Misses++
	if len(c.slots) < decodeSlotsMax {
		bit := (h ^ h>>16) % seenBits
		if c.seen[bit/64]&(1<<(bit%64)) != 0 {
			c.repeats++
		}
		c.seen[bit/64] |= 1 << (bit % 64)
		if c.seenMisses++; c.seenMisses == seenBits/8 {
			c.seen, c.seenMisses = [seenBits / 64]uint64{}, 0
		}
		c.growMisses++
		if 2*c.repeats > len(c.slots) && 4*c.repeats > c.growMisses {
			c.grow()
			is, slot = c.instSlot(ih), c.slot(h)
		}
	}
	if err := c.limits.Check(in); err != nil {
		return nil, err
	}
	if len(c.arena) == 0 {
		c.arena = make([]Decoded, arenaChunk)
	}
	d := &c.arena[0]
	c.arena = c.arena[1:]
	c.fill(d, in, outs, ins)
	*slot = d
	*is = instSlot{in: in, d: d}
	return d, nil
}

// fill decodes in (which passed the limit checks) into d.
func (c *DecodeCache) fill(d *Decoded, in *Instruction, outs, ins *Operand) {
	*d = Decoded{Flags: c.model.Flags(in), model: c.model, cache: c, outs: outs, ins: ins, proto: in,
		nOuts: int32(len(in.Outs)), nIns: int32(len(in.Ins)), op: in.Op, engine: in.Engine, chip: in.Chip, core: in.Core}
	d.nSpans = int32(len(AppendSpans(d.spans[:0], in)))
	if in.Op == OpMultiplyMoving && len(in.Ins) > 0 && len(in.Outs) > 0 {
		mv := &in.Ins[0].AP
		k := float64(mv.PartCount) * float64(PerfModeRows(in.Attrs.PerfMode))
		d.FLOPs = 2 * k * float64(in.Outs[0].AP.PartCount) * float64(mv.FreeSize())
	}
}

// bodyHash hashes a body's operand arrays and opcode.
func bodyHash(outs, ins *Operand, op Opcode) uintptr {
	return uintptr(unsafe.Pointer(outs))>>3*0x9E3779B1 ^ uintptr(unsafe.Pointer(ins))>>3 ^ uintptr(op)<<7
}

// slot returns the table entry for body hash h.
func (c *DecodeCache) slot(h uintptr) **Decoded { return &c.slots[(h^h>>16)&uintptr(len(c.slots)-1)] }

// instSlot returns the byInst entry for instruction hash ih.
func (c *DecodeCache) instSlot(ih uintptr) *instSlot {
	return &c.byInst[(ih^ih>>9)&uintptr(len(c.byInst)-1)]
}

// instHash hashes an instruction's address.
func instHash(in *Instruction) uintptr { return uintptr(unsafe.Pointer(in)) >> 4 }

// grow doubles the tables, moving every entry across.
func (c *DecodeCache) grow() {
	old, oldInst := c.slots, c.byInst
	c.slots, c.byInst = make([]*Decoded, 2*len(old)), make([]instSlot, 2*len(oldInst))
	c.repeats, c.growMisses = 0, 0
	for _, d := range old {
		if d != nil {
			h := bodyHash(d.outs, d.ins, d.op)
			*c.slot(h) = d
		}
	}
	for _, is := range oldInst {
		if is.in != nil {
			ih := instHash(is.in)
			*c.instSlot(ih) = is
		}
	}
}

// sameScalars reports whether two attribute sets agree in every field but
// BarrierCores (TestAttrsSameScalarsCoversEveryField keeps it complete).
func (a *Attrs) sameScalars(b *Attrs) bool {
	return a.Start == b.Start && a.Stop == b.Stop && a.PerfMode == b.PerfMode &&
		a.ALU0 == b.ALU0 && a.ALU1 == b.ALU1 && a.Imm0 == b.Imm0 && a.Imm1 == b.Imm1 && a.Axis == b.Axis &&
		a.Func == b.Func && a.Scale == b.Scale && a.Accumulate == b.Accumulate &&
		a.Value == b.Value && a.Step == b.Step && a.Queue == b.Queue && a.DGE == b.DGE &&
		a.BarrierSem == b.BarrierSem && a.Target == b.Target
}

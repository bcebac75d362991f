package isa

// Decoded is what the simulator derives from an instruction's body — its
// opcode, engine, placement, operands and attributes, not its waits,
// signals or HBM offset: the body has passed the limit checks and its cost
// flags are known. A Decoded never changes once made (but for the cost it
// remembers), so one handed out stays valid.
type Decoded struct {
	body   *Body
	id     uint64
	model  *CostModel
	cache  *DecodeCache
	costOK bool
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

// Overlaps reports whether two spans may touch a common byte: the same
// memory of the same core, common partitions and common bytes.
func (a *Span) Overlaps(b *Span) bool {
	return a.Mem == b.Mem && a.Chip == b.Chip && a.Core == b.Core &&
		a.PartLo < b.PartHi && b.PartLo < a.PartHi && a.Lo < b.Hi && b.Lo < a.Hi
}

// Covers reports whether a's partitions and bytes include all of b's.
func (a *Span) Covers(b *Span) bool {
	return a.Lo <= b.Lo && a.Hi >= b.Hi && a.PartLo <= b.PartLo && a.PartHi >= b.PartHi
}

// Spans returns the on-chip operands' spans, outputs first; operands in
// HBM and empty ones are left out.
func (d *Decoded) Spans() []Span { return d.spans[:d.nSpans] }

// Body returns the body it was decoded from.
func (d *Decoded) Body() *Body { return d.body }

// AppendSpans appends the on-chip spans of b's operands, outputs first
// (what Decoded.Spans holds), to dst.
func AppendSpans(dst []Span, b *Body) []Span {
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
	add(b.Outs, true)
	add(b.Ins, false)
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
	FillEnv(&Instruction{Body: d.body}, env)
	env[VarNS] = float64(ns)
	d.cost = d.model.cost(d.body.Op, d.body.Engine, d.Flags, env)
	d.costNS, d.costOK = ns, true
	return d.cost
}

// A DecodeCache starts with decodeSlotsMin slots and doubles, up to
// decodeSlotsMax, when, since it last grew, it has missed on bodies it had
// seen before as many times as half its slots and on at least a quarter of
// its misses: enough for the bodies an engine cycles through in a blocked
// GEMM, while a stream of one-off bodies keeps the small table. Bodies seen
// are remembered in a bit set of seenBits hashes, cleared every seenBits/8
// misses (so false repeats stay under 1 in 8).
const (
	decodeSlotsMin = 256
	decodeSlotsMax = 8192
	seenBits       = 1 << 14
)

// DecodeCache checks and decodes instructions for one engine, remembering
// the bodies it has seen by their ID (Body.ID): a body is checked against
// the limits and costed once, and an instruction that names it again has
// only its waits and signals checked. Bodies with ID 0 are not cached. Not
// safe for concurrent use.
type DecodeCache struct {
	limits *Limits
	model  *CostModel
	// slots index decodings by body ID; a collision replaces the entry
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
	// Hits and Misses count lookups.
	Hits, Misses int64
}

// arenaChunk is how many decodings the cache allocates at a time.
const arenaChunk = 64

// NewDecodeCache returns an empty cache for the given limits and costs.
func NewDecodeCache(l *Limits, m *CostModel) *DecodeCache {
	return &DecodeCache{limits: l, model: m, slots: make([]*Decoded, decodeSlotsMin)}
}

// Decode checks in against the limits (a *LimitError on failure) and
// returns its decoding. A decoding of a body the cache keeps stays valid;
// one of an uncacheable body (ID 0, or a barrier's), only until the next
// call.
func (c *DecodeCache) Decode(in *Instruction) (*Decoded, error) {
	b := in.Body
	if b.ID == 0 || b.Attrs.BarrierCores != nil {
		if err := c.limits.Check(in); err != nil {
			return nil, err
		}
		c.fill(&c.scratch, b)
		return &c.scratch, nil
	}
	h := idHash(b.ID)
	slot := c.slot(h)
	if d := *slot; d != nil && d.id == b.ID {
		c.Hits++
		if err := c.limits.checkSems(in); err != nil {
			return nil, err
		}
		return d, nil
	}
	c.Misses++
	if len(c.slots) < decodeSlotsMax {
		bit := h % seenBits
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
			slot = c.slot(h)
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
	c.fill(d, b)
	*slot = d
	return d, nil
}

// fill decodes body b (which passed the limit checks) into d.
func (c *DecodeCache) fill(d *Decoded, b *Body) {
	*d = Decoded{Flags: c.model.Flags(&Instruction{Body: b}), model: c.model, cache: c, body: b, id: b.ID}
	d.nSpans = int32(len(AppendSpans(d.spans[:0], b)))
	if b.Op == OpMultiplyMoving && len(b.Ins) > 0 && len(b.Outs) > 0 {
		// K is the moving tile's partitions times the rows each carries;
		// the output is [M, N].
		k := float64(b.Ins[0].AP.PartCount) * float64(PerfModeRows(b.Attrs.PerfMode))
		out := &b.Outs[0].AP
		d.FLOPs = 2 * k * float64(out.PartCount) * float64(out.FreeSize())
	}
}

// idHash spreads a body ID over the table. IDs are usually dense, and the
// low bits of a product by an odd constant are a bijection of the ID's low
// bits, so any run of consecutive IDs no longer than the table lands in
// distinct slots (mixing in higher bits, as this once did, made bodies an
// engine cycles through collide and decode again on every pass).
func idHash(id uint64) uint64 {
	return id * 0x9E3779B97F4A7C15
}

// slot returns the table entry for body hash h.
func (c *DecodeCache) slot(h uint64) **Decoded { return &c.slots[h&uint64(len(c.slots)-1)] }

// grow doubles the table, moving every entry across.
func (c *DecodeCache) grow() {
	old := c.slots
	c.slots = make([]*Decoded, 2*len(old))
	c.repeats, c.growMisses = 0, 0
	for _, d := range old {
		if d != nil {
			*c.slot(idHash(d.id)) = d
		}
	}
}

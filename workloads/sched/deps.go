package sched

import "github.com/trnsim/trnsim/isa"

// The dependency tracker remembers, for every byte range of SBUF, PSUM and
// HBM that the program has touched, the recent accesses: which stream
// (an engine, or a DMA queue) at which position, reading or writing, and
// when it is estimated to complete. Records are physical (by address), so
// memory reused by another tile orders its new tile's first accesses after
// the old tile's last ones without further bookkeeping.
//
// A write that covers earlier records replaces them: whoever conflicts
// with them conflicts with the write too, and the write was ordered after
// them, so waiting for the write implies waiting for them. A read replaces
// the same stream's earlier reads that it covers.

// granuleShift sets the on-chip bucket size (8 KiB of each partition).
const granuleShift = 13

// hbmRecsPerStream bounds the records one stream keeps per HBM tensor and
// kind (reads, writes); beyond it the two oldest merge into one covering
// both (conservative: a later conflicting access waits for the later).
const hbmRecsPerStream = 64

type rec struct {
	stream int32
	write  bool
	pos    int64
	est    float64
	span   isa.Span
}

type hrec struct {
	stream int32
	write  bool
	pos    int64
	est    float64
	reg    isa.Region
}

type bucket struct {
	recs []rec
}

type hbmRecs struct {
	reads, writes []hrec
}

type tracker struct {
	// onchip[coreIndex][0 SBUF, 1 PSUM] are the granules of one partition's
	// byte range (records carry their partitions).
	onchip [][2][]bucket
	hbm    map[int32]*hbmRecs // by buffer index
}

func newTracker(cores int, sbufBytes, psumBytes int64) *tracker {
	t := &tracker{onchip: make([][2][]bucket, cores), hbm: map[int32]*hbmRecs{}}
	for c := range t.onchip {
		t.onchip[c][0] = make([]bucket, (sbufBytes>>granuleShift)+1)
		t.onchip[c][1] = make([]bucket, (psumBytes>>granuleShift)+1)
	}
	return t
}

func memIndex(m isa.Memory) int {
	if m == isa.MemPSUM {
		return 1
	}
	return 0
}

// conflictFn receives a conflicting earlier access.
type conflictFn func(stream int32, pos int64, est float64)

// spanConflicts calls fn for every record that conflicts with an access of
// sp (sp.Write says whether it writes) on core index ci.
func (t *tracker) spanConflicts(ci int, sp *isa.Span, fn conflictFn) {
	bs := t.onchip[ci][memIndex(sp.Mem)]
	g0, g1 := sp.Lo>>granuleShift, (sp.Hi-1)>>granuleShift
	for g := g0; g <= g1 && int(g) < len(bs); g++ {
		for i := range bs[g].recs {
			r := &bs[g].recs[i]
			if (r.write || sp.Write) && r.span.Overlaps(sp) {
				fn(r.stream, r.pos, r.est)
			}
		}
	}
}

// recordSpan remembers an access of sp by stream at pos.
func (t *tracker) recordSpan(ci int, sp *isa.Span, stream int32, pos int64, est float64) {
	bs := t.onchip[ci][memIndex(sp.Mem)]
	g0, g1 := sp.Lo>>granuleShift, (sp.Hi-1)>>granuleShift
	nr := rec{stream: stream, write: sp.Write, pos: pos, est: est, span: *sp}
	for g := g0; g <= g1 && int(g) < len(bs); g++ {
		b := &bs[g]
		kept := b.recs[:0]
		for _, r := range b.recs {
			covered := sp.Covers(&r.span) && (sp.Write || (!r.write && r.stream == stream))
			if !covered {
				kept = append(kept, r)
			}
		}
		b.recs = append(kept, nr)
	}
}

// regionConflicts calls fn for every HBM record of buffer buf that
// conflicts with an access of reg.
func (t *tracker) regionConflicts(buf int32, reg *isa.Region, write bool, fn conflictFn) {
	h := t.hbm[buf]
	if h == nil {
		return
	}
	for i := range h.writes {
		r := &h.writes[i]
		if r.reg.Overlaps(reg) {
			fn(r.stream, r.pos, r.est)
		}
	}
	if !write {
		return
	}
	for i := range h.reads {
		r := &h.reads[i]
		if r.reg.Overlaps(reg) {
			fn(r.stream, r.pos, r.est)
		}
	}
}

// recordRegion remembers an HBM access.
func (t *tracker) recordRegion(buf int32, reg *isa.Region, write bool, stream int32, pos int64, est float64) {
	h := t.hbm[buf]
	if h == nil {
		h = &hbmRecs{}
		t.hbm[buf] = h
	}
	nr := hrec{stream: stream, write: write, pos: pos, est: est, reg: *reg}
	drop := func(list []hrec, any bool) []hrec {
		kept := list[:0]
		for _, r := range list {
			if (any || r.stream == stream) && reg.Covers(&r.reg) {
				continue
			}
			kept = append(kept, r)
		}
		return kept
	}
	if write {
		h.writes = drop(h.writes, true)
		h.reads = drop(h.reads, true)
		h.writes = appendCapped(h.writes, nr)
	} else {
		h.reads = drop(h.reads, false)
		h.reads = appendCapped(h.reads, nr)
	}
}

// appendCapped appends r, merging the stream's two oldest records when it
// has more than hbmRecsPerStream.
func appendCapped(list []hrec, r hrec) []hrec {
	list = append(list, r)
	n, first, second := 0, -1, -1
	for i := range list {
		if list[i].stream == r.stream {
			n++
			if first < 0 {
				first = i
			} else if second < 0 {
				second = i
			}
		}
	}
	if n <= hbmRecsPerStream {
		return list
	}
	a, b := &list[first], &list[second]
	b.reg = unionRegion(&a.reg, &b.reg)
	b.write = a.write || b.write
	b.pos = max(a.pos, b.pos)
	b.est = max(a.est, b.est)
	return append(list[:first], list[first+1:]...)
}

// unionRegion returns a region that covers both.
func unionRegion(a, b *isa.Region) isa.Region {
	u := *a
	u.ByteLo, u.ByteHi = min(a.ByteLo, b.ByteLo), max(a.ByteHi, b.ByteHi)
	if a.Box && b.Box && a.Buffer == b.Buffer && a.NDims == b.NDims {
		for d := uint8(0); d < a.NDims; d++ {
			u.Lo[d], u.Hi[d] = min(a.Lo[d], b.Lo[d]), max(a.Hi[d], b.Hi[d])
		}
		return u
	}
	u.Box = false
	return u
}

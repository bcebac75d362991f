package sched

import (
	"math"

	"github.com/trnsim/trnsim/isa"
)

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

// granuleShift sets the on-chip bucket sizes (SBUF, PSUM): 8 KiB of each
// partition (four PSUM banks, an accumulation group of a GEMM).
var granuleShift = [2]uint{13, 13}

// hbmRecsPerStream bounds the records one stream keeps per HBM tensor and
// kind (reads, writes); beyond it the two oldest merge into one covering
// both (conservative: a later conflicting access waits for the later).
const hbmRecsPerStream = 64

// rec is an on-chip access: bytes [lo, hi) of partitions [plo, phi) of
// its bucket's memory (the bucket says which core and memory).
type rec struct {
	lo, hi   int64
	plo, phi int32
	write    bool
	pos      int64
	est      float64
}

// box is the part of a span records compare.
type box struct {
	lo, hi   int64
	plo, phi int32
}

func boxOf(sp *isa.Span) box { return box{sp.Lo, sp.Hi, sp.PartLo, sp.PartHi} }

func (r *rec) overlaps(b *box) bool {
	return r.plo < b.phi && b.plo < r.phi && r.lo < b.hi && b.lo < r.hi
}

// coveredBy reports whether b includes all of r.
func (r *rec) coveredBy(b *box) bool {
	return b.plo <= r.plo && r.phi <= b.phi && b.lo <= r.lo && r.hi <= b.hi
}

type hrec struct {
	stream int32
	write  bool
	pos    int64
	est    float64
	reg    isa.Region
}

// bucket holds a granule's records, per stream, oldest first (positions
// only grow), so a check finds a stream's latest conflicting access by
// looking from the newest end, and stops there.
type bucket struct {
	streams []streamRecs
	// idx[stream] is the stream's index in streams, -1 when it has none
	// (made on first use).
	idx []int8
	// ver counts the changes of the bucket's records. At version skipVer,
	// a batch of stream skipFor found no record of another stream it had
	// to look at (all known, and estimated done by its start); knowledge
	// and estimates only grow, so while only that stream changes the
	// bucket, its next batches need not look either.
	ver     uint64
	skipVer uint64
	skipFor int32
}

// own returns the stream's records in the bucket, made when make is set
// (nil otherwise, when it has none).
func (b *bucket) own(stream int32, nStreams int, make_ bool) *streamRecs {
	if b.idx == nil {
		if !make_ {
			return nil
		}
		b.idx = make([]int8, nStreams)
		for i := range b.idx {
			b.idx[i] = -1
		}
	}
	if k := b.idx[stream]; k >= 0 {
		return &b.streams[k]
	}
	if !make_ {
		return nil
	}
	b.idx[stream] = int8(len(b.streams))
	b.streams = append(b.streams, streamRecs{stream: stream})
	return &b.streams[len(b.streams)-1]
}

type streamRecs struct {
	stream int32
	recs   []rec
	// maxPos and maxEst bound the records' positions and estimates from
	// above.
	maxPos int64
	maxEst float64
}

// maxRecsPerStream bounds a stream's records in one granule; beyond it the
// two oldest merge into one covering both (conservative).
const maxRecsPerStream = 32

// hbmRecs are one HBM tensor's records, per stream, oldest first: lists
// of the streams that have touched it, in the order they first did
// (slot[stream] is one more than the stream's index in lists; 0: none).
type hbmRecs struct {
	lists []hbmList
	slot  []int32
}

// hbmList is one stream's records of an HBM tensor, with bounds on the
// bytes of its reads and of its writes (conservative: they never shrink
// while the list has records), so that an access beside them skips them.
type hbmList struct {
	stream        int32
	reads, writes []hrec
	rlo, rhi      int64
	wlo, whi      int64
}

// estRef names a stream's records in a bucket, whose newest gets an
// estimate once known.
type estRef struct {
	b *bucket
	k int32
}

type tracker struct {
	// pending are the records checkRecord made whose estimate is not known
	// yet (see setEsts).
	pending []estRef
	// onchip[coreIndex][0 SBUF, 1 PSUM] are the granules of one partition's
	// byte range (records carry their partitions).
	onchip  [][2][]bucket
	hbm     map[int32]*hbmRecs // by buffer index
	streams int
	// shadow, when >= 0, is where the shadow streams start: stream
	// shadow+q holds the records of queue stream q's mirrored transfers
	// (symmetric-core reuse), which the queue's order does not imply.
	shadow int32
}

// real returns the stream a record's stream stands for: a shadow stream's
// queue.
func (t *tracker) real(s int32) int32 {
	if t.shadow >= 0 && s >= t.shadow {
		return s - t.shadow
	}
	return s
}

func newTracker(cores int, sbufBytes, psumBytes int64, streams int) *tracker {
	t := &tracker{onchip: make([][2][]bucket, cores), hbm: map[int32]*hbmRecs{}, streams: streams, shadow: -1}
	for c := range t.onchip {
		t.onchip[c][0] = make([]bucket, (sbufBytes>>granuleShift[0])+1)
		t.onchip[c][1] = make([]bucket, (psumBytes>>granuleShift[1])+1)
	}
	return t
}

func memIndex(m isa.Memory) int {
	if m == isa.MemPSUM {
		return 1
	}
	return 0
}

// depSet collects an access's dependencies: for every stream, the latest
// conflicting position (-1: none) and the latest estimated completion.
type depSet struct {
	pos  []int64
	est  []float64
	list []int32 // the streams with a dependency
}

func newDepSet(streams int) depSet {
	d := depSet{pos: make([]int64, streams), est: make([]float64, streams)}
	for i := range d.pos {
		d.pos[i] = -1
	}
	return d
}

// add records a conflicting access of stream at pos, completing at est.
func (d *depSet) add(stream int32, pos int64, est float64) {
	if d.pos[stream] < 0 {
		d.list = append(d.list, stream)
	}
	if pos > d.pos[stream] {
		d.pos[stream] = pos
	}
	if est > d.est[stream] {
		d.est[stream] = est
	}
}

// clear empties the set.
func (d *depSet) clear() {
	for _, s := range d.list {
		d.pos[s], d.est[s] = -1, 0
	}
	d.list = d.list[:0]
}

// spanConflicts calls fn, for every stream with a record that conflicts
// with an access of sp (sp.Write says whether it writes) on core index ci,
// with its latest conflicting record.
func (t *tracker) spanConflicts(ci int, sp *isa.Span, deps *depSet) {
	bx := boxOf(sp)
	mi := memIndex(sp.Mem)
	bs := t.onchip[ci][mi]
	g0, g1 := sp.Lo>>granuleShift[mi], (sp.Hi-1)>>granuleShift[mi]
	for g := g0; g <= g1 && int(g) < len(bs); g++ {
		b := &bs[g]
		for k := range b.streams {
			sr := &b.streams[k]
			for i := len(sr.recs) - 1; i >= 0; i-- {
				r := &sr.recs[i]
				if (r.write || sp.Write) && r.overlaps(&bx) {
					deps.add(sr.stream, r.pos, r.est)
					break
				}
			}
		}
	}
}

// recordSpan remembers an access of sp by stream at pos. A write drops
// every record it covers; a read, the stream's reads it covers, and it
// merges with a read of the stream that it overlaps (the two become their
// hull, at the later position: whoever conflicts with either waits for the
// later, as it would for both). A dropped record of the stream itself that
// is later than pos lends the new record its position.
func (t *tracker) recordSpan(ci int, sp *isa.Span, stream int32, pos int64, est float64) {
	t.checkRecord(ci, sp, stream, pos, est, nil, nil, 0)
}

// checkRecord does spanConflicts (when deps is set) and recordSpan in one
// pass over the granules: each granule's conflicts are found before its
// records change. With know set, it is for a batch of stream, which knows
// position know[s] of every stream s and starts no earlier than estLo: a
// stream's records that cannot change its waits or its start are not
// looked at (its own, and another's whose every record is known and
// estimated to complete by estLo).
func (t *tracker) checkRecord(ci int, sp *isa.Span, stream int32, pos int64, est float64, deps *depSet, know *mclock, estLo float64) {
	bx := boxOf(sp)
	write := sp.Write
	mi := memIndex(sp.Mem)
	bs := t.onchip[ci][mi]
	g0, g1 := sp.Lo>>granuleShift[mi], (sp.Hi-1)>>granuleShift[mi]
	for g := g0; g <= g1 && int(g) < len(bs); g++ {
		b := &bs[g]
		npos, nest := pos, est
		// skipped: no other stream's records needed looking at.
		skipped := know != nil && b.skipFor == stream && b.skipVer == b.ver && b.streams != nil
		if skipped && !write {
			// Only the stream's own reads change (below).
		} else {
			skipped = know != nil
			for k := range b.streams {
				sr := &b.streams[k]
				recs := sr.recs
				if deps != nil && (know == nil || (sr.stream != stream && (sr.maxPos > know.get(t.real(sr.stream)) || sr.maxEst > estLo))) {
					skipped = false
					for i := len(recs) - 1; i >= 0; i-- {
						r := &recs[i]
						if (r.write || write) && r.overlaps(&bx) {
							deps.add(sr.stream, r.pos, r.est)
							break
						}
					}
				}
				mine := sr.stream == stream
				if !write {
					// A read drops only the stream's own reads (below).
					continue
				}
				kept := 0
				for i := range recs {
					r := &recs[i]
					if (write || !r.write) && r.coveredBy(&bx) {
						if mine && r.pos > npos {
							npos, nest = r.pos, max(nest, r.est)
						}
						continue
					}
					if kept != i {
						recs[kept] = *r
					}
					kept++
				}
				if kept != len(recs) {
					sr.recs = recs[:kept]
				}
			}
		}
		own := b.own(stream, t.streams, true)
		if deps != nil {
			t.pending = append(t.pending, estRef{b, int32(b.idx[stream])})
		}
		if !write {
			// One pass: the own reads the read covers go, and the newest
			// own read it overlaps (after that) is the one it merges into.
			mi := -1
			kept := 0
			for i := range own.recs {
				r := &own.recs[i]
				if !r.write && r.coveredBy(&bx) {
					if r.pos > npos {
						npos, nest = r.pos, max(nest, r.est)
					}
					continue
				}
				if !r.write && r.overlaps(&bx) {
					mi = kept
				}
				if kept != i {
					own.recs[kept] = *r
				}
				kept++
			}
			if kept != len(own.recs) {
				own.recs = own.recs[:kept]
			}
			merged := false
			if mi >= 0 {
				i := mi
				r := &own.recs[i]
				r.lo, r.hi = min(r.lo, bx.lo), max(r.hi, bx.hi)
				r.plo, r.phi = min(r.plo, bx.plo), max(r.phi, bx.phi)
				r.pos, r.est = max(r.pos, npos), max(r.est, nest)
				own.maxPos, own.maxEst = max(own.maxPos, r.pos), max(own.maxEst, r.est)
				// Keep the list in position order.
				for j := i; j+1 < len(own.recs); j++ {
					own.recs[j], own.recs[j+1] = own.recs[j+1], own.recs[j]
				}
				merged = true
			}
			if merged {
				b.changed(stream, skipped)
				continue
			}
		}
		own.recs = append(own.recs, rec{lo: bx.lo, hi: bx.hi, plo: bx.plo, phi: bx.phi, write: write, pos: npos, est: nest})
		own.maxPos, own.maxEst = max(own.maxPos, npos), max(own.maxEst, nest)
		if len(own.recs) > maxRecsPerStream {
			a, c := &own.recs[0], &own.recs[1]
			c.lo, c.hi = min(a.lo, c.lo), max(a.hi, c.hi)
			c.plo, c.phi = min(a.plo, c.plo), max(a.phi, c.phi)
			c.write = a.write || c.write
			c.est = max(a.est, c.est)
			own.recs = append(own.recs[:0], own.recs[1:]...)
		}
		b.changed(stream, skipped)
	}
}

// changed notes a change of the bucket by stream; skipped says whether
// the change found no other stream's records to look at (see bucket).
func (b *bucket) changed(stream int32, skipped bool) {
	b.ver++
	if skipped {
		b.skipFor, b.skipVer = stream, b.ver
	}
}

// setEsts sets the estimated completion of the records checkRecord made
// (with deps): in every granule it visited, the stream's newest record.
func (t *tracker) setEsts(est float64) {
	for _, r := range t.pending {
		sr := &r.b.streams[r.k]
		if n := len(sr.recs); n > 0 {
			rc := &sr.recs[n-1]
			rc.est = max(rc.est, est)
			sr.maxEst = max(sr.maxEst, rc.est)
		}
	}
	t.pending = t.pending[:0]
}

// regionConflicts adds every HBM record of buffer buf that conflicts with
// an access of reg.
func (t *tracker) regionConflicts(buf int32, reg *isa.Region, write bool, deps *depSet) {
	h := t.hbm[buf]
	if h == nil {
		return
	}
	lo, hi := reg.ByteLo, reg.ByteHi
	for li := range h.lists {
		l := &h.lists[li]
		if l.wlo < hi && lo < l.whi {
			for i := range l.writes {
				r := &l.writes[i]
				if r.reg.Overlaps(reg) {
					deps.add(r.stream, r.pos, r.est)
				}
			}
		}
		if !write || l.rlo >= hi || lo >= l.rhi {
			continue
		}
		for i := range l.reads {
			r := &l.reads[i]
			if r.reg.Overlaps(reg) {
				deps.add(r.stream, r.pos, r.est)
			}
		}
	}
}

// recordRegion remembers an HBM access. A write drops the records it
// covers; reads accumulate, at most hbmRecsPerStream per stream and
// tensor (beyond it the stream's two oldest merge).
func (t *tracker) recordRegion(buf int32, reg *isa.Region, write bool, stream int32, pos int64, est float64) {
	h := t.hbm[buf]
	if h == nil {
		h = &hbmRecs{slot: make([]int32, t.streams)}
		t.hbm[buf] = h
	}
	k := h.slot[stream] - 1
	if k < 0 {
		k = int32(len(h.lists))
		h.slot[stream] = k + 1
		h.lists = append(h.lists, hbmList{stream: stream, rlo: math.MaxInt64, rhi: math.MinInt64, wlo: math.MaxInt64, whi: math.MinInt64})
	}
	nr := hrec{stream: stream, write: write, pos: pos, est: est, reg: *reg}
	lo, hi := reg.ByteLo, reg.ByteHi
	drop := func(list []hrec) []hrec {
		kept := list[:0]
		for _, r := range list {
			if !reg.Covers(&r.reg) {
				kept = append(kept, r)
			}
		}
		return kept
	}
	if write {
		// A record the write covers shares bytes with it: lists whose
		// bounds it misses have none.
		for li := range h.lists {
			l := &h.lists[li]
			if l.wlo < hi && lo < l.whi {
				l.writes = drop(l.writes)
			}
			if l.rlo < hi && lo < l.rhi {
				l.reads = drop(l.reads)
			}
		}
		l := &h.lists[k]
		l.writes = appendCapped(l.writes, nr)
		l.wlo, l.whi = min(l.wlo, lo), max(l.whi, hi)
	} else {
		l := &h.lists[k]
		l.reads = appendCapped(l.reads, nr)
		l.rlo, l.rhi = min(l.rlo, lo), max(l.rhi, hi)
	}
}

// appendCapped appends r to a stream's list, merging its two oldest
// records when it has more than hbmRecsPerStream.
func appendCapped(list []hrec, r hrec) []hrec {
	list = append(list, r)
	if len(list) <= hbmRecsPerStream {
		return list
	}
	a, b := &list[0], &list[1]
	b.reg = unionRegion(&a.reg, &b.reg)
	b.write = a.write || b.write
	b.pos = max(a.pos, b.pos)
	b.est = max(a.est, b.est)
	// Dropping the front moves the slice's start; append copies it to a
	// new array once the capacity behind it is used up (amortised).
	return list[1:]
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

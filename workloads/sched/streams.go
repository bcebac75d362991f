package sched

import (
	"github.com/trnsim/trnsim/isa"
)

// A stream is an engine of a core, or a DMA queue of a core: what a
// semaphore counts. Positions number a stream's instructions (for a queue,
// its transfers) from 0.
//
// An engine's semaphore counts the instructions that signal it ("marks");
// which do is decided per instruction: when a later op of another stream
// needs one, it is marked if it is not yet final, otherwise the consumer
// waits for the first mark after it. An instruction is final once the
// walk is FinalizeDistance instructions past it; a final instruction with
// no mark after it has the newest instruction of its stream marked, so
// every consumer finds a mark among instructions that precede it in
// program order (no wait can then deadlock). Every DMA transfer signals
// its queue's semaphore.

// markRingLen bounds the marks a stream remembers; a consumer of an
// older instruction waits for the oldest mark remembered (later, so still
// correct).
const markRingLen = 256

type stream struct {
	core   int // core index in the layout
	queue  int // DMA queue, -1 for an engine
	engine isa.Engine
	sem    isa.SemRef
	// mult is what one mark adds to the semaphore (the DMA engines of the
	// core, for a queue).
	mult int64
	pos  int64 // positions so far
	// know is an engine's knowledge: for every stream, the highest
	// position known complete (-1: none). Queues use their trigger's. The
	// engine's own entry is not kept (it is its position): the marks that
	// carry its knowledge say it (mark.pos, mark.trigPos).
	know mclock
	// count is the marks so far; marks are the latest, with the knowledge
	// each marked instruction had.
	count int64
	marks []mark
	mhead int
	// lastMark is the position of the latest mark (-1: none); newest the
	// newest position that may be marked (a compute instruction).
	lastMark int64
	newest   int64
	// snaps hold the knowledge at each instruction that changed it (one
	// that waited), for instructions not yet final, oldest first from
	// shead; unfinal counts the stream's compute instructions whose signal
	// is not final (while none is, no snapshot but the latest is needed).
	snaps   []snap
	shead   int
	unfinal int
	// est is when the stream is estimated to be free (ns).
	est float64
	// queues an engine triggers DMA transfers on, and the next to use.
	queues []int
	rr     int
	// out holds instructions generated but not handed out (kept
	// streams): a ring of ocount entries from ohead, for positions opos..;
	// extra holds the waits and offsets of those that have any, in order,
	// from xhead.
	out    []outEntry
	ohead  int
	ocount int
	// held counts the instructions every stream of the walk holds.
	held  *int
	opos  int64
	extra []outExtra
	xhead int
	// finalTo is the last position whose signal is decided (compute
	// instructions are finalised in position order; a transfer's trigger
	// is final when made).
	finalTo int64
	// signal1 is the one signal of the stream's semaphore an instruction
	// makes (shared: instructions never change once handed out).
	signal1  []isa.SemSignal
	keep     bool
	skip     int64 // instructions to drop (already handed out by another walk)
	detached bool
}

// mark is a signalling instruction at pos, the count-th of its stream,
// with the knowledge it had (frozen; its own stream's entry is pos, not
// the clock's); a queue's mark also names its trigger and the trigger's
// position (trig -1: none).
type mark struct {
	pos, count int64
	clock      vclock
	trig       int32
	trigPos    int64
}

type snap struct {
	pos   int64
	clock vclock
}

// outEntry is an instruction made but not handed out: 8 bytes, with no
// pointer, so a stream far ahead of another costs little to hold. The
// Instruction itself is built when it is handed out: most have no wait,
// no signal and no HBM offset, and are then their body's one shared
// Instruction.
type outEntry struct {
	meta  uint32 // index of the body in compiled.metas
	flags uint32
}

// Entry flags.
const (
	// outFinal: the instruction's signal is decided.
	outFinal = 1 << iota
	// outSignal: it signals its stream's semaphore.
	outSignal
	// outDMA: it triggers a transfer, which signals its queue's.
	outDMA
	// outHasExtra: it has waits or an HBM offset (the next in extra).
	outHasExtra
)

// outExtra is what the few instructions that wait or move an HBM offset
// carry.
type outExtra struct {
	waits  []isa.SemWait
	hbmOff int64
}

func (s *stream) isQueue() bool { return s.queue >= 0 }

// markAt returns the first mark at position p or later, or nil.
func (s *stream) markAt(p int64) *mark {
	n := len(s.marks)
	if n == 0 || s.lastMark < p {
		return nil
	}
	// The ring holds marks in increasing position from mhead.
	lo, hi := 0, n
	for lo < hi {
		mid := (lo + hi) / 2
		if s.marks[(s.mhead+mid)%n].pos >= p {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo == n {
		return nil
	}
	return &s.marks[(s.mhead+lo)%n]
}

// addMark records a mark of stream self at position p with knowledge
// clock (held: see vcAlloc.hold) and, for a queue's, its trigger trig at
// trigPos (-1: none). A dense copy is written the two positions too.
func (s *stream) addMark(p int64, clock vclock, a *vcAlloc, self, trig int32, trigPos int64) *mark {
	s.count++
	var m *mark
	if len(s.marks) < markRingLen {
		s.marks = append(s.marks, mark{})
		m = &s.marks[len(s.marks)-1]
	} else {
		m = &s.marks[s.mhead]
		s.mhead = (s.mhead + 1) % len(s.marks)
	}
	a.hold(&m.clock, clock)
	m.pos, m.count, m.trig, m.trigPos = p, s.count, trig, trigPos
	if d := m.clock.d; d != nil {
		d[self] = p
		if trig >= 0 {
			d[trig] = trigPos
		}
	}
	s.lastMark = p
	return m
}

// clockAt returns the knowledge of the engine at its position p (p not
// final yet): the latest snapshot at or before p (ok false: none).
func (s *stream) clockAt(p int64) (vclock, bool) {
	for i := len(s.snaps) - 1; i >= s.shead; i-- {
		if s.snaps[i].pos <= p {
			return s.snaps[i].clock, true
		}
	}
	return vclock{}, false
}

// addSnap remembers the knowledge at position p.
func (s *stream) addSnap(p int64, clock vclock, a *vcAlloc) {
	if s.unfinal == 0 {
		// Nothing can be marked at or before p any more: only this one can
		// be needed.
		for i := s.shead; i < len(s.snaps); i++ {
			a.release(s.snaps[i].clock)
		}
		clear(s.snaps)
		s.snaps, s.shead = s.snaps[:0], 0
	}
	if s.shead > 0 && len(s.snaps) == cap(s.snaps) {
		n := copy(s.snaps, s.snaps[s.shead:])
		clear(s.snaps[n:])
		s.snaps, s.shead = s.snaps[:n], 0
	}
	s.snaps = append(s.snaps, snap{pos: p, clock: clock})
}

// pruneSnaps drops snapshots no position from p on needs.
func (s *stream) pruneSnaps(p int64, a *vcAlloc) {
	for s.shead+1 < len(s.snaps) && s.snaps[s.shead+1].pos <= p {
		a.release(s.snaps[s.shead].clock)
		s.snaps[s.shead] = snap{}
		s.shead++
	}
}

// entryAt returns the kept instruction at position p, or nil.
func (s *stream) entryAt(p int64) *outEntry {
	i := p - s.opos
	if i < 0 || i >= int64(s.ocount) {
		return nil
	}
	return &s.out[(s.ohead+int(i))&(len(s.out)-1)]
}

// pushOut appends the instruction at the next position (pos).
func (s *stream) pushOut(e outEntry, pos int64, x *outExtra) {
	s.room(1)
	if s.ocount == 0 {
		s.opos = pos
	}
	s.out[(s.ohead+s.ocount)&(len(s.out)-1)] = e
	s.ocount++
	*s.held++
	if x != nil {
		if s.xhead > 0 && len(s.extra) == cap(s.extra) && 2*s.xhead >= len(s.extra) {
			n := copy(s.extra, s.extra[s.xhead:])
			clear(s.extra[n:])
			s.extra, s.xhead = s.extra[:n], 0
		}
		s.extra = append(s.extra, *x)
	}
}

// room grows the ring (a power of two, oldest first) until k more entries
// fit.
func (s *stream) room(k int) {
	if s.ocount+k <= len(s.out) {
		return
	}
	n := max(64, len(s.out))
	for n < s.ocount+k {
		n *= 2
	}
	ring := make([]outEntry, n)
	for i := 0; i < s.ocount; i++ {
		ring[i] = s.out[(s.ohead+i)&(len(s.out)-1)]
	}
	s.out, s.ohead = ring, 0
}

// pushBulk appends entries with no extra at the next positions, from pos.
func (s *stream) pushBulk(es []outEntry, pos int64) {
	if s.skip > 0 {
		k := int(min(s.skip, int64(len(es))))
		s.skip -= int64(k)
		es, pos = es[k:], pos+int64(k)
	}
	if len(es) == 0 {
		return
	}
	s.room(len(es))
	if s.ocount == 0 {
		s.opos = pos
	}
	at := (s.ohead + s.ocount) & (len(s.out) - 1)
	k := copy(s.out[at:], es)
	copy(s.out, es[k:])
	s.ocount += len(es)
	*s.held += len(es)
}

// popPlain hands out the stream's oldest instruction held when it is the
// common case — final, with no wait, signal or offset: its body's shared
// Instruction — or returns nil.
func (w *walk) popPlain(st *stream) *isa.Instruction {
	if st.ocount == 0 || st.opos > st.finalTo {
		return nil
	}
	e := &st.out[st.ohead]
	if e.flags != 0 {
		return nil
	}
	st.ohead = (st.ohead + 1) & (len(st.out) - 1)
	st.ocount--
	*st.held--
	st.opos++
	return w.c.metas.get(e.meta).inst
}

// head returns the oldest instruction held, or nil.
func (s *stream) head() *outEntry {
	if s.ocount == 0 {
		return nil
	}
	return &s.out[s.ohead]
}

// headFinal returns the oldest instruction held if its signal is decided
// (or all is, at the end), or nil.
func (s *stream) headFinal(all bool) *outEntry {
	if s.ocount == 0 {
		return nil
	}
	e := &s.out[s.ohead]
	if all || s.opos <= s.finalTo || e.flags&outFinal != 0 {
		return e
	}
	return nil
}

// pop drops the oldest instruction held, returning its extra (if any).
func (s *stream) pop(e *outEntry) (x outExtra) {
	if e.flags&outHasExtra != 0 {
		x = s.extra[s.xhead]
		s.extra[s.xhead] = outExtra{}
		s.xhead++
		if s.xhead == len(s.extra) {
			s.extra, s.xhead = s.extra[:0], 0
		}
	}
	s.ohead = (s.ohead + 1) & (len(s.out) - 1)
	s.ocount--
	*s.held--
	s.opos++
	return x
}

// dropOut forgets every instruction held, as if handed out (so that the
// releaser's checkpoints, counts of instructions made, are passed).
func (s *stream) dropOut() {
	*s.held -= s.ocount
	s.opos += int64(s.ocount)
	s.out, s.ohead, s.ocount, s.extra, s.xhead = nil, 0, 0, nil, 0
}

// buffered returns how many instructions the stream holds.
func (s *stream) buffered() int { return s.ocount }

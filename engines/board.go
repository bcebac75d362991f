package engines

import (
	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/memory"
)

// SemBoard holds one core's semaphores. Semaphores count up. An increment
// is posted when the instruction (or DMA engine transfer) that makes it is
// committed, with the time it takes effect; nothing ticks in between. A
// waiting engine is woken with one event at the time the value it waits for
// is reached — no Akita port messages on this path.
type SemBoard struct {
	Chip, Core int32
	// Clocks, if set, is the simulation's (see memory.Clocks).
	Clocks *memory.Clocks
	sems   []semaphore
	agents int
	// freeVCs are spent clocks of pending increments, for reuse.
	freeVCs []memory.VClock
}

type semaphore struct {
	value int64 // increments already in effect
	// pending holds the posted increments not yet in effect, sorted by
	// time, from index head on (the prefix is spent space, reclaimed when
	// the list empties or must grow).
	pending []pending
	head    int
	// Clocks (only while the race detector runs): each pending increment
	// carries its poster's clock; once in effect, it is folded into hist,
	// where entry i holds the value the increments in effect reached and
	// the join of their clocks (a prefix). A waiter for value v is ordered
	// after exactly the increments up to the one that reached v, not after
	// later ones that happen to be in effect when it starts (that would be
	// timing, not synchronisation). Entries leave the ring into vc, the
	// prefix up to value oldValue; a waiter for a value that old joins vc.
	hist     []histEntry
	hhead    int
	vc       memory.VClock
	oldValue int64
	waiters  []*waiter
	// posts counts increments, for reports.
	posts int64
}

type pending struct {
	at  clock.Time
	add int64
	vc  memory.VClock // the poster's clock (nil without a race detector)
}

type histEntry struct {
	value  int64
	prefix memory.VClock
}

// histLen is how many increments in effect a semaphore remembers the
// clocks of, one by one.
const histLen = 32

type waiter struct {
	seq    *Sequencer
	target int64
	wake   clock.Time // scheduled wake, or clock.Never
	gen    uint64     // seq.gen of the scheduled wake
}

// woken reports whether the waiter's scheduled wake has fired or been
// replaced: the sequencer no longer waits here.
func (w *waiter) woken() bool {
	return w.wake != clock.Never && (w.seq.gen != w.gen || w.seq.pendingT != w.wake)
}

// NewSemBoard returns a board of n semaphores at zero; agents sizes the
// vector clocks.
func NewSemBoard(chip, core int32, n, agents int) *SemBoard {
	b := &SemBoard{Chip: chip, Core: core, sems: make([]semaphore, n), agents: agents}
	clocks := make(memory.VClock, n*agents) // one allocation for all
	for i := range b.sems {
		b.sems[i].vc = clocks[i*agents : (i+1)*agents : (i+1)*agents]
	}
	return b
}

// fold moves increments that took effect by now into the value (and their
// clocks into the semaphore's).
func (b *SemBoard) fold(s *semaphore, now clock.Time) {
	n := s.head
	for n < len(s.pending) && s.pending[n].at <= now {
		p := &s.pending[n]
		s.value += p.add
		if p.vc != nil {
			b.remember(s, p.vc)
			b.freeVCs = append(b.freeVCs, p.vc)
			p.vc = nil
		}
		n++
	}
	if n == len(s.pending) {
		s.pending, s.head = s.pending[:0], 0
	} else {
		s.head = n
	}
}

// live returns the increments not yet in effect.
func (s *semaphore) live() []pending { return s.pending[s.head:] }

// ValueAt returns semaphore id's value at time t, counting every increment
// posted so far that takes effect by t.
func (b *SemBoard) ValueAt(id int32, t, now clock.Time) int64 {
	s := &b.sems[id]
	b.fold(s, now)
	v := s.value
	for _, p := range s.live() {
		if p.at > t {
			break
		}
		v += p.add
	}
	return v
}

// Final returns a semaphore's value once every posted increment is in
// effect.
func (b *SemBoard) Final(id int32) int64 {
	s := &b.sems[id]
	v := s.value
	for _, p := range s.live() {
		v += p.add
	}
	return v
}

// ReachTime returns when semaphore id reaches target given the increments
// posted so far, or clock.Never.
func (b *SemBoard) ReachTime(id int32, target int64, now clock.Time) clock.Time {
	s := &b.sems[id]
	b.fold(s, now)
	if s.value >= target {
		return now
	}
	v := s.value
	for _, p := range s.live() {
		v += p.add
		if v >= target {
			return p.at
		}
	}
	return clock.Never
}

// remember adds an increment in effect, with its poster's clock, to the
// semaphore's history.
func (b *SemBoard) remember(s *semaphore, vc memory.VClock) {
	var e *histEntry
	var prev memory.VClock
	if len(s.hist) < histLen {
		s.hist = append(s.hist, histEntry{prefix: make(memory.VClock, b.agents)})
		e = &s.hist[len(s.hist)-1]
		if n := len(s.hist); n > 1 {
			prev = s.hist[n-2].prefix
		} else {
			prev = s.vc
		}
	} else {
		// The oldest entry leaves into vc; the newest is the one before.
		e = &s.hist[s.hhead]
		b.Clocks.Copy(s.vc, e.prefix)
		s.oldValue = e.value
		prev = s.hist[(s.hhead+len(s.hist)-1)%len(s.hist)].prefix
		s.hhead = (s.hhead + 1) % len(s.hist)
	}
	b.Clocks.JoinOf(e.prefix, prev, vc)
	e.value = s.value
}

// JoinVC joins into vc what an instruction that waited for semaphore id to
// reach target, and starts at t (at least the time of the event being
// handled), is ordered after: the clocks of the increments, in the order
// they took effect, up to the one that reached target.
func (b *SemBoard) JoinVC(vc memory.VClock, id int32, target int64, t clock.Time) {
	s := &b.sems[id]
	if target <= s.oldValue || len(s.hist) == 0 {
		b.Clocks.Join(vc, s.vc)
		if target <= s.oldValue {
			return
		}
	}
	n := len(s.hist)
	if n > 0 {
		// The first entry (oldest first) that reached target.
		lo, hi := 0, n
		for lo < hi {
			mid := (lo + hi) / 2
			if s.hist[(s.hhead+mid)%n].value >= target {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		if lo < n {
			b.Clocks.Join(vc, s.hist[(s.hhead+lo)%n].prefix)
			return
		}
		b.Clocks.Join(vc, s.hist[(s.hhead+n-1)%n].prefix)
	}
	v := s.value
	for _, p := range s.live() {
		if v >= target || p.at > t {
			break
		}
		v += p.add
		if p.vc != nil {
			b.Clocks.Join(vc, p.vc)
		}
	}
}

// Post adds add to semaphore id, effective at time at, from an agent whose
// clock is vc (nil when no race detector runs). Waiters that the increment satisfies are woken at that time.
func (b *SemBoard) Post(id int32, at clock.Time, add int64, vc memory.VClock, now clock.Time) {
	s := &b.sems[id]
	s.posts++
	var own memory.VClock
	if vc != nil {
		// The increment carries a copy of its poster's clock until it takes
		// effect.
		if n := len(b.freeVCs); n > 0 {
			own = b.freeVCs[n-1]
			b.freeVCs = b.freeVCs[:n-1]
		} else {
			own = make(memory.VClock, b.agents)
		}
		b.Clocks.Copy(own, vc) // (the entries of agents that ran: the rest are zero in both)
	}
	if s.head > 0 && len(s.pending) == cap(s.pending) {
		// Reclaim the spent prefix rather than grow.
		n := copy(s.pending, s.pending[s.head:])
		s.pending, s.head = s.pending[:n], 0
	}
	// Insert sorted by time (stable for equal times).
	i := len(s.pending)
	for i > s.head && s.pending[i-1].at > at {
		i--
	}
	s.pending = append(s.pending, pending{at: at, add: add, vc: own})
	if i < len(s.pending)-1 {
		copy(s.pending[i+1:], s.pending[i:])
		s.pending[i] = pending{at: at, add: add, vc: own}
	}
	if len(s.waiters) == 0 {
		return
	}
	// A satisfied waiter stays until its wake fires: an increment posted
	// later but effective earlier must still bring the wake forward.
	stale := 0
	for _, w := range s.waiters {
		if w.woken() {
			stale++
			continue
		}
		t := b.ReachTime(id, w.target, now)
		if t < w.wake {
			w.wake = clock.Max(t, now)
			w.seq.wakeAt(w.wake)
			w.gen = w.seq.gen
		}
	}
	if stale > 0 {
		// Drop the waiters whose wake has fired or been replaced.
		kept := s.waiters[:0]
		for _, w := range s.waiters {
			if !w.woken() {
				kept = append(kept, w)
			}
		}
		clear(s.waiters[len(kept):])
		s.waiters = kept
	}
}

// addWaiter registers seq as waiting for semaphore id to reach target.
// addWaiterAt registers seq as waiting for semaphore id to reach target,
// with a wake-up already due at `at`, the reach time known so far: an
// increment posted later but effective earlier brings it forward.
func (b *SemBoard) addWaiterAt(id int32, seq *Sequencer, target int64, at clock.Time) {
	b.addWaiter(id, seq, target)
	seq.wakeAt(at)
	for _, w := range b.sems[id].waiters {
		if w.seq == seq {
			w.wake, w.gen = at, seq.gen
		}
	}
}

func (b *SemBoard) addWaiter(id int32, seq *Sequencer, target int64) {
	s := &b.sems[id]
	for _, w := range s.waiters {
		if w.seq == seq {
			w.target, w.wake = target, clock.Never
			return
		}
	}
	s.waiters = append(s.waiters, &waiter{seq: seq, target: target, wake: clock.Never})
}

// Len returns the number of semaphores.
func (b *SemBoard) Len() int { return len(b.sems) }

package memory

import (
	"github.com/trnsim/trnsim/clock"
)

// HBM is a chip's high-bandwidth memory modelled per stack as a shared
// bandwidth server. The DMA engines that are moving data on a stack split its
// bandwidth evenly: when an engine starts a transfer share there, it may run
// at most at stack rate / engines active on the stack, so a share is slowed
// by max(1, engine rate x active engines / stack rate). One calculation per
// engine transfer, never per byte or descriptor.
//
// Simplification (documented in docs/validation.md): a share's slowdown is
// fixed when it starts, from the engines active on its stack at that moment
// (and those that start at the same time: Started); engines that start or
// stop later do not change it. While the engines' total
// rate stays below the stack's (16 x 23 GB/s = 368 GB/s per trn2 core against
// 725 GB/s per stack) the stack never binds and the simplification costs
// nothing; when it binds, a share's time is off by at most the change in the
// number of active engines during its life.
// Row-buffer, refresh and channel effects are not modelled: nothing public
// describes them (reference §11).
type HBM struct {
	stacks          []stack
	stackBytes      int64
	interleaveBytes int64
	latency         clock.Time
	// dirty are the stacks whose shares of time flushAt wait for Flush.
	dirty   []int
	flushAt clock.Time
	// ReadBytes and WriteBytes count traffic.
	ReadBytes, WriteBytes int64
}

type stack struct {
	gbps float64
	// active counts, per engine, the shares it has running on the stack;
	// engines is how many engines have at least one.
	active  []int32
	engines int
	// started are the shares that began on the stack at time at (Started);
	// dirty is set while the engines changed after one of them began,
	// until Flush.
	at      clock.Time
	started []Rescaler
	dirty   bool
}

// Rescaler is a share whose slowdown was fixed when it started at now:
// Rescale sets it to what its stacks' engines ask now.
type Rescaler interface {
	Rescale(now clock.Time)
}

// NewHBM builds an HBM of n stacks sharing totalGBps, each stackBytes large.
// interleaveBytes > 0 rotates addresses over the stacks in blocks of that
// size; 0 gives each stack a contiguous address range.
func NewHBM(n int, totalGBps float64, stackBytes, interleaveBytes int64, latency clock.Time) *HBM {
	h := &HBM{stackBytes: stackBytes, interleaveBytes: interleaveBytes, latency: latency}
	per := totalGBps / float64(n)
	for i := 0; i < n; i++ {
		h.stacks = append(h.stacks, stack{gbps: per})
	}
	return h
}

// Stacks returns the number of stacks.
func (h *HBM) Stacks() int { return len(h.stacks) }

// StackOf returns the stack that holds an address.
func (h *HBM) StackOf(addr int64) int {
	if h.interleaveBytes > 0 {
		return int((addr / h.interleaveBytes) % int64(len(h.stacks)))
	}
	s := int(addr / h.stackBytes)
	if s >= len(h.stacks) {
		s = len(h.stacks) - 1
	}
	if s < 0 {
		s = 0
	}
	return s
}

// Begin starts a share of bytes on the stack holding addr, moved by engine
// (a chip-wide engine number) whose own rate is engineGBps. It returns the
// stack (for End) and the factor by which the stack slows the share (>= 1).
func (h *HBM) Begin(addr, bytes int64, write bool, engine int, engineGBps float64) (int, float64) {
	return h.BeginEngines(addr, bytes, write, engine, 1, engineGBps)
}

// BeginEngines is Begin for n engines, numbered from first, that each start
// an identical share of bytes at once.
func (h *HBM) BeginEngines(addr, bytes int64, write bool, first, n int, engineGBps float64) (int, float64) {
	if write {
		h.WriteBytes += bytes * int64(n)
	} else {
		h.ReadBytes += bytes * int64(n)
	}
	si := h.StackOf(addr)
	st := &h.stacks[si]
	for first+n > len(st.active) {
		st.active = append(st.active, 0)
	}
	for _, a := range st.active[first : first+n] {
		if a == 0 {
			st.engines++
		}
	}
	for i := range st.active[first : first+n] {
		st.active[first+i]++
	}
	slow := engineGBps * float64(st.engines) / st.gbps
	if slow < 1 {
		slow = 1
	}
	return si, slow
}

// Demand returns how much a share of an engine of rate engineGBps that
// passes its bytes through stack `passes` times (a copy from HBM to HBM on
// one stack reads and writes it; a read-modify-write reads its
// destination too) asks of the stack, relative to the stack's rate, with
// the engines now active on it: the factor (>= 1) it is slowed by.
func (h *HBM) Demand(stack int, engineGBps float64, passes int) float64 {
	st := &h.stacks[stack]
	slow := engineGBps * float64(st.engines) * float64(passes) / st.gbps
	return max(slow, 1)
}

// Started records that share r began on stack at time now (after
// BeginEngines, with its slowdown from Demand). Every share starting at
// one time is to see every engine that starts then and none that stops
// then, whatever order the simulation handles them in: the shares that
// began on the stack earlier at the same time are rescaled by Flush, once
// for all the changes of the time. It reports whether the caller is to
// schedule Flush at now, after everything else of that time (the first
// change of the time that needs it).
func (h *HBM) Started(stack int, now clock.Time, r Rescaler) bool {
	st := &h.stacks[stack]
	flush := false
	if st.at != now || len(st.started) == 0 {
		clear(st.started)
		st.at, st.started = now, st.started[:0]
	} else {
		flush = h.markDirty(stack, now)
	}
	st.started = append(st.started, r)
	return flush
}

// Ended is called after EndEngines at time now: shares that began on the
// stack at the same time are to be rescaled to the engines left (an
// engine whose share ends when another's starts does not slow it,
// whichever the simulation handles first). It reports whether the caller
// is to schedule Flush at now.
func (h *HBM) Ended(stack int, now clock.Time) bool {
	st := &h.stacks[stack]
	if st.at == now && len(st.started) > 0 {
		return h.markDirty(stack, now)
	}
	return false
}

// markDirty notes that the stack's shares of now need rescaling, and
// reports whether this is the first such note of the time.
func (h *HBM) markDirty(stack int, now clock.Time) bool {
	st := &h.stacks[stack]
	if st.dirty {
		return false
	}
	first := len(h.dirty) == 0 || h.flushAt != now
	if h.flushAt != now {
		// (A flush of an earlier time has run: its list is done with.)
		h.clearDirty()
	}
	st.dirty, h.flushAt = true, now
	h.dirty = append(h.dirty, stack)
	return first
}

// Flush rescales the shares that began at the time of the pending
// changes (Started, Ended) to the engines of the stacks now: the last
// thing done at that time.
func (h *HBM) Flush() {
	now := h.flushAt
	for _, i := range h.dirty {
		st := &h.stacks[i]
		st.dirty = false
		if st.at != now {
			continue
		}
		for _, x := range st.started {
			x.Rescale(now)
		}
	}
	h.dirty = h.dirty[:0]
}

func (h *HBM) clearDirty() {
	for _, i := range h.dirty {
		h.stacks[i].dirty = false
	}
	h.dirty = h.dirty[:0]
}

// Latency returns the access latency added to every share.
func (h *HBM) Latency() clock.Time { return h.latency }

// End finishes a share started with Begin.
func (h *HBM) End(stack, engine int) { h.EndEngines(stack, engine, 1) }

// EndEngines finishes the shares started with BeginEngines.
func (h *HBM) EndEngines(stack, first, n int) {
	st := &h.stacks[stack]
	for e := first; e < first+n; e++ {
		if st.active[e] > 0 {
			st.active[e]--
			if st.active[e] == 0 {
				st.engines--
			}
		}
	}
}

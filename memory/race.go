// Package memory models a NeuronCore's on-chip memories and the chip's HBM:
// SBUF/PSUM capacity and port sharing, the data-race detector that checks
// every SBUF/PSUM access against semaphore ordering, and HBM stacks as
// bandwidth servers shared by the DMA engines.
package memory

import (
	"fmt"

	"github.com/trnsim/trnsim/isa"
)

// VClock is a vector clock over the simulation's agents (every engine and
// every DMA queue of every active core). Agent a's entry counts a's
// instructions; a semaphore carries the join of its incrementers' clocks,
// and an instruction whose waits are met joins them in: that is the
// happens-before order the race detector checks against.
type VClock []uint32

// Join raises each entry of v to at least o's.
func (v VClock) Join(o VClock) {
	for i, x := range o {
		if x > v[i] {
			v[i] = x
		}
	}
}

// Access is one instruction's use of an on-chip byte range.
type Access struct {
	Mem        isa.Memory
	Chip, Core int32
	PartLo     int32 // first partition
	PartHi     int32 // one past the last
	Lo, Hi     int64 // byte range inside each partition
	Write      bool
	Agent      int
	Epoch      uint32
	// Who identifies the instruction for reports.
	Who *isa.Instruction
	// AgentName names the engine or DMA queue.
	AgentName string
}

func (a *Access) overlaps(b *Access) bool {
	return a.Mem == b.Mem && a.Chip == b.Chip && a.Core == b.Core &&
		a.PartLo < b.PartHi && b.PartLo < a.PartHi && a.Lo < b.Hi && b.Lo < a.Hi
}

// RaceError reports two conflicting accesses that no semaphore orders.
type RaceError struct {
	First, Second Access
	Describe      func(in *isa.Instruction) string
}

func (e *RaceError) Error() string {
	verb := func(a *Access) string {
		if a.Write {
			return "writes"
		}
		return "reads"
	}
	desc := func(a *Access) string {
		if e.Describe != nil && a.Who != nil {
			return e.Describe(a.Who)
		}
		return "instruction"
	}
	lo, hi := max(e.First.Lo, e.Second.Lo), min(e.First.Hi, e.Second.Hi)
	plo, phi := max(e.First.PartLo, e.Second.PartLo), min(e.First.PartHi, e.Second.PartHi)
	return fmt.Sprintf("data race on %s (chip %d core %d) partitions %d:%d bytes %d:%d: %s %s [%s] and %s %s [%s], with no semaphore ordering them",
		e.First.Mem, e.First.Chip, e.First.Core, plo, phi, lo, hi,
		e.First.AgentName, verb(&e.First), desc(&e.First), e.Second.AgentName, verb(&e.Second), desc(&e.Second))
}

// granuleShift sets the size of the detector's index buckets (4 KiB).
const granuleShift = 12

// recordsPerGranule bounds how many past accesses each bucket remembers.
// Older accesses are forgotten: a race between two accesses separated by
// more than this many conflicting accesses to the same 4 KiB is missed.
const recordsPerGranule = 16

type granuleKey struct {
	mem        isa.Memory
	chip, core int32
	granule    int64
}

type bucket struct {
	recs []int32 // indices into RaceDetector.recs (ring of recent records)
}

// RaceDetector finds pairs of SBUF/PSUM accesses that touch the same bytes,
// at least one writing, from different agents, with neither ordered before
// the other by semaphores (vector clocks). Ranges are bounding ranges of the
// access patterns, so strided accesses that interleave without touching a
// common byte are still reported: write such kernels with disjoint ranges or
// order them.
type RaceDetector struct {
	recs    []Access
	buckets map[granuleKey]*bucket
}

// NewRaceDetector returns an empty detector.
func NewRaceDetector() *RaceDetector {
	return &RaceDetector{buckets: map[granuleKey]*bucket{}}
}

// Check records access a made by an agent whose clock is vc, and returns the
// first earlier access it races with, or nil.
func (d *RaceDetector) Check(a Access, vc VClock) *Access {
	var race *Access
	g0, g1 := a.Lo>>granuleShift, (a.Hi-1)>>granuleShift
	idx := int32(len(d.recs))
	d.recs = append(d.recs, a)
	for g := g0; g <= g1; g++ {
		key := granuleKey{a.Mem, a.Chip, a.Core, g}
		b := d.buckets[key]
		if b == nil {
			b = &bucket{}
			d.buckets[key] = b
		}
		for _, ri := range b.recs {
			r := &d.recs[ri]
			if race != nil || r.Agent == a.Agent || (!r.Write && !a.Write) || !r.overlaps(&a) {
				continue
			}
			if r.Epoch > vc[r.Agent] {
				rc := *r
				race = &rc
			}
		}
		// Drop records this access supersedes: same agent, fully covered,
		// and (for a write) nothing left to protect.
		kept := b.recs[:0]
		for _, ri := range b.recs {
			r := &d.recs[ri]
			if r.Agent == a.Agent && (a.Write || !r.Write) && a.PartLo <= r.PartLo && a.PartHi >= r.PartHi && a.Lo <= r.Lo && a.Hi >= r.Hi {
				continue
			}
			kept = append(kept, ri)
		}
		b.recs = kept
		if len(b.recs) >= recordsPerGranule {
			b.recs = b.recs[1:]
		}
		b.recs = append(b.recs, idx)
	}
	if len(d.recs) > 1<<16 {
		d.compact()
	}
	return race
}

// compact drops records no bucket refers to.
func (d *RaceDetector) compact() {
	remap := map[int32]int32{}
	var out []Access
	for _, b := range d.buckets {
		for i, ri := range b.recs {
			ni, ok := remap[ri]
			if !ok {
				ni = int32(len(out))
				out = append(out, d.recs[ri])
				remap[ri] = ni
			}
			b.recs[i] = ni
		}
	}
	d.recs = out
}

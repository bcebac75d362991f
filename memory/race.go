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

type bucket struct {
	recs []Access
}

// coreShadow indexes one core's SBUF and PSUM by 4 KiB granule.
type coreShadow struct {
	mem [2][]bucket // SBUF, PSUM
}

// RaceDetector finds pairs of SBUF/PSUM accesses that touch the same bytes,
// at least one writing, from different agents, with neither ordered before
// the other by semaphores (vector clocks). Ranges are bounding ranges of the
// access patterns, so strided accesses that interleave without touching a
// common byte are still reported: write such kernels with disjoint ranges or
// order them.
type RaceDetector struct {
	cores map[[2]int32]*coreShadow
	last  *coreShadow
	lastK [2]int32
}

// NewRaceDetector returns an empty detector.
func NewRaceDetector() *RaceDetector {
	return &RaceDetector{cores: map[[2]int32]*coreShadow{}, lastK: [2]int32{-1, -1}}
}

func (d *RaceDetector) shadow(chip, core int32) *coreShadow {
	k := [2]int32{chip, core}
	if d.last != nil && d.lastK == k {
		return d.last
	}
	sh := d.cores[k]
	if sh == nil {
		sh = &coreShadow{}
		d.cores[k] = sh
	}
	d.last, d.lastK = sh, k
	return sh
}

// Check records access a made by an agent whose clock is vc, and returns the
// first earlier access it races with, or nil.
func (d *RaceDetector) Check(a Access, vc VClock) *Access {
	if a.Hi <= a.Lo || !a.Mem.OnChip() {
		return nil
	}
	var race *Access
	sh := d.shadow(a.Chip, a.Core)
	mi := 0
	if a.Mem == isa.MemPSUM {
		mi = 1
	}
	g0, g1 := a.Lo>>granuleShift, (a.Hi-1)>>granuleShift
	if int(g1) >= len(sh.mem[mi]) {
		grown := make([]bucket, g1+1)
		copy(grown, sh.mem[mi])
		sh.mem[mi] = grown
	}
	for g := g0; g <= g1; g++ {
		b := &sh.mem[mi][g]
		kept := b.recs[:0]
		for i := range b.recs {
			r := &b.recs[i]
			if race == nil && r.Agent != a.Agent && (r.Write || a.Write) && r.overlaps(&a) && r.Epoch > vc[r.Agent] {
				rc := *r
				race = &rc
			}
			// Drop records this access supersedes: same agent, fully
			// covered, and (for a read) nothing written left to protect.
			if r.Agent == a.Agent && (a.Write || !r.Write) && a.PartLo <= r.PartLo && a.PartHi >= r.PartHi && a.Lo <= r.Lo && a.Hi >= r.Hi {
				continue
			}
			kept = append(kept, *r)
		}
		b.recs = kept
		if len(b.recs) >= recordsPerGranule {
			copy(b.recs, b.recs[1:])
			b.recs = b.recs[:len(b.recs)-1]
		}
		b.recs = append(b.recs, a)
	}
	return race
}

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

// Clocks is shared by everything that keeps vector clocks in one
// simulation. It hands out the agents' entries in the order they first run
// (Entry) and knows how many have ticked: the entries of agents that never
// ran are then a suffix, zero in every clock, and joins skip it (a run
// over many cores, each with many DMA queues of which it uses a few, joins
// only the agents that ran). A nil *Clocks keeps the agents' own numbers
// and joins whole clocks.
type Clocks struct {
	hi int
	// entry[a]-1 is agent a's entry in every clock (0: none yet), handed
	// out in the order the agents first ask (Entry): the agents that ran
	// are then a prefix of the clocks however the simulation numbers them
	// (many cores, each with many DMA queues of which it uses a few).
	entry []int32
	next  int32
}

// Entry returns agent a's entry in the clocks, the next free one the
// first time a asks. Every use of an agent's clock entry (Tick, the race
// detector's records) goes through it; a nil *Clocks keeps a's own.
func (c *Clocks) Entry(a int) int {
	if c == nil {
		return a
	}
	if a >= len(c.entry) {
		c.entry = append(c.entry, make([]int32, a+1-len(c.entry))...)
	}
	if e := c.entry[a]; e > 0 {
		return int(e - 1)
	}
	e := c.next
	c.next++
	c.entry[a] = e + 1
	return int(e)
}

// Tick counts one more instruction of agent in its clock v (agent is an
// entry: Entry).
func (c *Clocks) Tick(v VClock, agent int) {
	v[agent]++
	if c != nil && agent >= c.hi {
		c.hi = agent + 1
	}
}

// Copy sets dst to src (the entries of agents that ticked: the others are
// zero in both).
func (c *Clocks) Copy(dst, src VClock) {
	if c != nil && c.hi < len(src) {
		src = src[:c.hi]
	}
	copy(dst, src)
}

// JoinOf sets dst to the join of a and b (dst may be neither).
func (c *Clocks) JoinOf(dst, a, b VClock) {
	if c != nil && c.hi < len(a) {
		a = a[:c.hi]
	}
	b = b[:len(a)]
	dst = dst[:len(a)]
	for i, x := range a {
		dst[i] = max(x, b[i])
	}
}

// Join raises each entry of v to at least o's.
func (c *Clocks) Join(v, o VClock) {
	if c != nil && c.hi < len(o) {
		o = o[:c.hi]
	}
	v.Join(o)
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
	// hbm names the shared elements of an HBM race ("" on chip).
	hbm string
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
		// Forgotten (see whoRingLen): the epoch numbers the agent's
		// instructions, or a DMA queue's transfers, from 1.
		return fmt.Sprintf("its instruction #%d", a.Epoch)
	}
	if e.First.Mem == isa.MemHBM {
		return fmt.Sprintf("data race on hbm (chip %d) %s: %s %s [%s] and %s %s [%s], with no semaphore ordering them",
			e.First.Chip, e.hbm, e.First.AgentName, verb(&e.First), desc(&e.First), e.Second.AgentName, verb(&e.Second), desc(&e.Second))
	}
	lo, hi := max(e.First.Lo, e.Second.Lo), min(e.First.Hi, e.Second.Hi)
	plo, phi := max(e.First.PartLo, e.Second.PartLo), min(e.First.PartHi, e.Second.PartHi)
	return fmt.Sprintf("data race on %s (chip %d core %d) partitions %d:%d bytes %d:%d: %s %s [%s] and %s %s [%s], with no semaphore ordering them",
		e.First.Mem, e.First.Chip, e.First.Core, plo, phi, lo, hi,
		e.First.AgentName, verb(&e.First), desc(&e.First), e.Second.AgentName, verb(&e.Second), desc(&e.Second))
}

// granuleShift sets the size of the detector's index buckets (4 KiB).
const granuleShift = 12

// recordsPerAgent bounds how many past accesses each bucket remembers per
// agent (a power of two). Older accesses are forgotten: a race with an
// access that its own agent followed by this many other accesses to the
// same 4 KiB (none covering it) is missed.
const recordsPerAgent = 8

// compactBackoff is how many pushes a full ring skips compacting after a
// compaction found nothing to drop: an agent cycling through more distinct
// byte ranges of a granule than the ring holds (a GEMM's stationary tiles)
// would otherwise pay a fruitless scan on every access. Meanwhile a full
// ring forgets its oldest record, as it would with nothing to drop.
const compactBackoff = recordsPerAgent

// rec is a compact Access kept in a bucket. It holds no pointer (so the
// shadow memory costs the garbage collector nothing): the instruction is
// found from the agent and epoch in whoRing.
type rec struct {
	partLo, partHi int32
	epoch          uint32
	write          bool
	lo, hi         int64
}

// whoRingLen is how many of each agent's latest instructions the detector
// remembers for its reports; a race with an older one names it by number.
const whoRingLen = 256

// whoRing maps an agent's recent epochs to their instructions.
type whoRing [whoRingLen]struct {
	epoch uint32
	in    *isa.Instruction
}

// agentRing holds one agent's most recent accesses to a granule. Its
// epochs only grow, so when the newest is ordered before an access, all
// are, and the ring is skipped whole.
type agentRing struct {
	agent    int32
	backoff  uint8 // pushes left before the ring compacts again
	maxEpoch uint32
	// clean is the bucket's version after this agent's last access, when
	// every other agent's record was ordered before it. While the version
	// is unchanged no other agent has touched the granule since, and the
	// agent's clock only grows: its next access is ordered after all of
	// them too, and they need not be looked at.
	clean uint64
	recRing[rec]
}

func (g *agentRing) push(r rec) {
	g.maxEpoch = r.epoch
	g.recRing.push(r)
}

// recRing is an agent's recordsPerAgent most recent records, oldest first
// from head; a push into a full ring replaces the oldest.
type recRing[R any] struct {
	head, n uint8
	recs    [recordsPerAgent]R
}

func (g *recRing[R]) at(i int) *R { return &g.recs[(int(g.head)+i)&(recordsPerAgent-1)] }

func (g *recRing[R]) push(r R) {
	if int(g.n) == recordsPerAgent {
		g.recs[g.head] = r
		g.head = (g.head + 1) & (recordsPerAgent - 1)
		return
	}
	g.recs[(int(g.head)+int(g.n))&(recordsPerAgent-1)] = r
	g.n++
}

// bucket holds, per agent, the recent accesses to one granule. version
// counts the changes to its records.
type bucket struct {
	groups  []*agentRing
	last    *agentRing // the ring of the agent that accessed it last
	version uint64
}

// coreShadow indexes one core's SBUF and PSUM by 4 KiB granule.
type coreShadow struct {
	mem [2][]bucket // SBUF, PSUM
}

// RaceDetector finds pairs of SBUF/PSUM or HBM accesses that touch the same bytes,
// at least one writing, from different agents, with neither ordered before
// the other by semaphores (vector clocks). Ranges are bounding ranges of the
// access patterns, so strided accesses that interleave without touching a
// common byte are still reported: write such kernels with disjoint ranges or
// order them.
type RaceDetector struct {
	cores map[[2]int32]*coreShadow
	last  *coreShadow
	lastK [2]int32
	names []string   // agent names, by agent
	whos  []*whoRing // recent instructions, by agent
	// HBM: the program's buffers and each chip's records (racehbm.go).
	buffers []*isa.Buffer
	hbm     map[int32]*hbmShadow
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

// who returns the instruction agent made at epoch, if still remembered.
func (d *RaceDetector) who(agent int32, epoch uint32) *isa.Instruction {
	if int(agent) < len(d.whos) && d.whos[agent] != nil {
		if w := &d.whos[agent][epoch%whoRingLen]; w.epoch == epoch {
			return w.in
		}
	}
	return nil
}

// covers reports whether access a (by agent, which writes if write) makes
// r redundant for its own agent: a covers r and, when r wrote, a writes too.
func covers(a *isa.Span, r *rec) bool {
	// Byte ranges first: they tell distinct tiles apart soonest.
	return a.Lo <= r.lo && a.Hi >= r.hi && (a.Write || !r.write) && a.PartLo <= r.partLo && a.PartHi >= r.partHi
}

// Check records access a made by an agent whose clock is vc, and returns the
// first earlier access it races with, or nil.
func (d *RaceDetector) Check(a Access, vc VClock) *Access {
	if a.Hi <= a.Lo || !a.Mem.OnChip() {
		return nil
	}
	d.register(a.Agent, a.AgentName, a.Epoch, a.Who)
	sp := isa.Span{Mem: a.Mem, Write: a.Write, Chip: a.Chip, Core: a.Core, PartLo: a.PartLo, PartHi: a.PartHi, Lo: a.Lo, Hi: a.Hi}
	if r, ragent, ok := d.check(d.shadow(a.Chip, a.Core), &sp, int32(a.Agent), a.Epoch, vc); ok {
		return d.access(&sp, &r, ragent)
	}
	return nil
}

// register notes the agent's name and the instruction it issues at epoch.
func (d *RaceDetector) register(agent int, name string, epoch uint32, who *isa.Instruction) {
	for agent >= len(d.names) {
		d.names = append(d.names, "")
		d.whos = append(d.whos, nil)
	}
	if d.names[agent] == "" {
		d.names[agent] = name
	}
	if who != nil {
		if d.whos[agent] == nil {
			d.whos[agent] = &whoRing{}
		}
		w := &d.whos[agent][epoch%whoRingLen]
		w.epoch, w.in = epoch, who
	}
}

// access expands a record of agent that races with sp into an Access.
func (d *RaceDetector) access(sp *isa.Span, r *rec, agent int32) *Access {
	return &Access{Mem: sp.Mem, Chip: sp.Chip, Core: sp.Core, PartLo: r.partLo, PartHi: r.partHi, Lo: r.lo, Hi: r.hi,
		Write: r.write, Agent: int(agent), Epoch: r.epoch, Who: d.who(agent, r.epoch), AgentName: d.names[agent]}
}

// check records a, made by agent at epoch with clock vc, in the core's
// shadow sh, and returns the first earlier record it races with and that
// record's agent.
func (d *RaceDetector) check(sh *coreShadow, a *isa.Span, agent int32, epoch uint32, vc VClock) (race rec, raceAgent int32, found bool) {
	mi := 0
	if a.Mem == isa.MemPSUM {
		mi = 1
	}
	g0, g1 := a.Lo>>granuleShift, (a.Hi-1)>>granuleShift
	buckets := sh.mem[mi]
	if int(g1) >= len(buckets) {
		grown := make([]bucket, max(g1+1, 2*int64(len(buckets)), 16))
		copy(grown, buckets)
		sh.mem[mi], buckets = grown, grown
	}
	mine := rec{partLo: a.PartLo, partHi: a.PartHi, epoch: epoch, lo: a.Lo, hi: a.Hi, write: a.Write}
	for g := g0; g <= g1; g++ {
		b := &buckets[g]
		own := b.last
		if own == nil || own.agent != agent {
			own = nil
			for _, grp := range b.groups {
				if grp.agent == agent {
					own = grp
					break
				}
			}
		}
		ordered := true // every other agent's record is ordered before a
		if own == nil || own.clean != b.version {
			for _, grp := range b.groups {
				// Every record of this agent is ordered before a: skip it whole.
				if grp == own || grp.maxEpoch <= vc[grp.agent] {
					continue
				}
				ordered = false
				if found {
					continue
				}
				seen := vc[grp.agent]
				for i := 0; i < int(grp.n); i++ {
					r := grp.at(i)
					if r.epoch > seen && (r.write || a.Write) && r.partLo < a.PartHi && a.PartLo < r.partHi && r.lo < a.Hi && a.Lo < r.hi {
						race, raceAgent, found = *r, grp.agent, true
						break
					}
				}
			}
		}
		b.version++
		if own == nil {
			own = &agentRing{agent: agent}
			b.groups = append(b.groups, own)
		}
		b.last = own
		if ordered {
			own.clean = b.version
		}
		switch {
		case own.n == 0:
		case own.n > 0 && covers(a, own.at(int(own.n)-1)):
			// a covers the agent's newest record, whose epoch is older:
			// anything that races with that record races with a, so a
			// takes its place.
			*own.at(int(own.n) - 1) = mine
			own.maxEpoch = epoch
			continue
		case own.backoff > 0:
			own.backoff--
		case int(own.n) == recordsPerAgent && !covers(a, own.at(0)):
			// Full, and the oldest record (which the push forgets) is not
			// made redundant by a: drop the agent's records that a makes
			// redundant before the oldest would be forgotten (a covered
			// record conflicts with nothing the covering one does not).
			w := 0
			for i := 0; i < int(own.n); i++ {
				if r := own.at(i); !covers(a, r) {
					if w != i {
						*own.at(w) = *r
					}
					w++
				}
			}
			if w == int(own.n) {
				own.backoff = compactBackoff
			}
			own.n = uint8(w)
		}
		own.push(mine)
	}
	return race, raceAgent, found
}

// CheckSpans checks every SBUF/PSUM operand of in, given by its on-chip
// spans (isa.Decoded.Spans, outputs first), as an access by agent (called
// name) whose clock is vc, and returns a *RaceError naming the first
// conflicting pair, or nil. describe prints instructions for the error.
func (d *RaceDetector) CheckSpans(in *isa.Instruction, spans []isa.Span, agent int, name string, vc VClock, describe func(*isa.Instruction) string) error {
	if len(spans) == 0 {
		return nil
	}
	epoch := vc[agent]
	d.register(agent, name, epoch, in)
	sh := d.shadow(spans[0].Chip, spans[0].Core)
	for i := range spans {
		sp := &spans[i]
		if sp.Chip != spans[0].Chip || sp.Core != spans[0].Core {
			sh = d.shadow(sp.Chip, sp.Core)
		}
		if r, ragent, ok := d.check(sh, sp, int32(agent), epoch, vc); ok {
			mine := Access{Mem: sp.Mem, Chip: sp.Chip, Core: sp.Core, PartLo: sp.PartLo, PartHi: sp.PartHi,
				Lo: sp.Lo, Hi: sp.Hi, Write: sp.Write, Agent: agent, Epoch: epoch, Who: in, AgentName: name}
			return &RaceError{First: *d.access(sp, &r, ragent), Second: mine, Describe: describe}
		}
	}
	return nil
}

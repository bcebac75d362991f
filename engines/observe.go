package engines

import (
	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/memory"
)

// Commit is one committed instruction as observers see it: what ran, where,
// when, and the stall time its engine spent before starting it. The
// sequencer reuses one Commit for every instruction: an observer that keeps
// anything copies it.
type Commit struct {
	Chip, Core int32
	Engine     isa.Engine
	// Agent is the engine's index among the simulation's agents (dense from
	// 0: observers may index slices by it).
	Agent int
	In    *isa.Instruction
	Dec   *isa.Decoded
	// Start and End bound the engine's issue interval; Completion is when
	// the results are written (End plus the latency).
	Start, End, Completion clock.Time
	// Stalls are the stall times charged to this instruction, by cause
	// (NStalls of them; a cause may appear more than once).
	Stalls  [3]Stall
	NStalls int
	// SemWait is the semaphore wait the instruction ended, for timelines:
	// [SemWaitFrom, SemWaitTo) on SemWaitSem; SemWaitFrom < 0 when none.
	SemWaitSem             isa.SemRef
	SemWaitFrom, SemWaitTo clock.Time
	// Now is the simulated time of the event that committed it.
	Now clock.Time
}

// Stall is stall time of one cause.
type Stall struct {
	Cause StallCause
	Time  clock.Time
}

// addStall charges t to cause (nothing when t is not positive).
func (c *Commit) addStall(cause StallCause, t clock.Time) {
	if t > 0 && c.NStalls < len(c.Stalls) {
		c.Stalls[c.NStalls] = Stall{cause, t}
		c.NStalls++
	}
}

// An Observer watches the instructions engines commit (statistics, timelines,
// progress). It never changes the simulation, and the issue path calls
// nothing when no observer is attached.
type Observer interface {
	Committed(c *Commit)
}

// A Checker checks each committed compute instruction's on-chip accesses
// against the other agents' (the data-race detector) and may stop the run
// with an error. vc is the engine's vector clock at the commit.
type Checker interface {
	CheckSpans(in *isa.Instruction, spans []isa.Span, agent int, name string, vc memory.VClock, describe func(*isa.Instruction) string) error
}

// Hooks are what a core's engines report to and are checked by.
type Hooks struct {
	// Race, if set, checks every compute instruction's on-chip accesses
	// (the engines keep vector clocks only when it is set).
	Race Checker
	// Observers see every committed instruction, in commit order.
	Observers []Observer
}

// TraceObserver adapts a Tracer (instructions and semaphore waits, as
// timelines take them) to an Observer.
func TraceObserver(t Tracer) Observer { return traceObserver{t} }

type traceObserver struct{ t Tracer }

func (o traceObserver) Committed(c *Commit) {
	if c.SemWaitFrom >= 0 {
		o.t.Wait(c.Chip, c.Core, c.Engine, c.In, c.SemWaitSem, c.SemWaitFrom, c.SemWaitTo)
	}
	o.t.Instruction(c.Chip, c.Core, c.Engine, c.In, c.Start, c.End)
}

// ProgressObserver calls report every `every` instructions committed
// anywhere it is attached, with the count and the simulated time.
type ProgressObserver struct {
	Every  int64
	Report func(instructions int64, now clock.Time)
	n      int64
}

// Committed counts c.
func (p *ProgressObserver) Committed(c *Commit) {
	p.n++
	if p.Every > 0 && p.n%p.Every == 0 {
		p.Report(p.n, c.Now)
	}
}

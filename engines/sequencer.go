package engines

import (
	"fmt"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/internal/eventpool"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/memory"
)

// Sequencer is one engine of a core: it fetches its stream in order, waits
// for semaphores, claims shared resources and commits each instruction with
// its interval and latency.
type Sequencer struct {
	*sim.ComponentBase
	core   *Core
	eng    isa.Engine
	clk    clock.EdgeMemo
	stream isa.Stream
	agent  int
	// centry is the engine's entry in the vector clocks (-1: none yet).
	centry int
	name   string // agent name for race reports
	// vc is the engine's vector clock, kept only for the race detector
	// (nil without one).
	vc memory.VClock

	cur      *isa.Instruction
	curDec   *isa.Decoded // cur's decoding, valid until the next fetch
	decode   *isa.DecodeCache
	curIndex int64 // index of cur in the stream
	curFresh bool  // cur not yet validated
	// freeAt is when the engine can start its next instruction.
	freeAt clock.Time
	// waitStart is when cur began waiting for something (-1: not waiting).
	waitStart clock.Time
	waitSem   isa.SemRef
	waitCause StallCause
	// barrierPosted is set once a barrier instruction has signalled.
	barrierPosted bool
	// lastSignal is when the engine's latest semaphore increment takes
	// effect.
	lastSignal clock.Time
	// usedPorts is set when the last committed instruction booked a shared
	// SBUF/PSUM port or PSUM bank.
	usedPorts bool
	// portRules is set when some port or bank rule of the config applies
	// to this engine; psumBankBytes is the PSUM bank size.
	portRules     bool
	psumBankBytes int64

	gen      uint64
	pendingT clock.Time // time of the scheduled issue event, or Never
	events   eventpool.Pool
	done     bool
	busyEnd  clock.Time

	// inflight is a ring of the engine's latest on-chip writes.
	inflight [4]inflightWrite
	inflN    int
	inflHead int

	tensor tensorState
	// Stats are the engine's own counters; commit is what observers are
	// handed (reused).
	Stats  Stats
	commit Commit
}

type inflightWrite struct {
	mem        isa.Memory
	plo, phi   int32
	lo, hi     int64
	completion clock.Time
}

func newSequencer(c *Core, e isa.Engine, st isa.Stream) *Sequencer {
	name := fmt.Sprintf("Chip[%d].Core[%d].%s", c.Cfg.Chip, c.Cfg.Core, seqNames[e])
	s := &Sequencer{
		ComponentBase: sim.NewComponentBase(name),
		core:          c,
		eng:           e,
		clk:           clock.NewEdgeMemo(c.Cfg.Clocks[e]),
		stream:        st,
		agent:         c.Cfg.AgentBase + int(e),
		centry:        -1,
		name:          c.agentName(e),
		waitStart:     -1,
		pendingT:      clock.Never,
		curIndex:      -1,
		decode:        isa.NewDecodeCache(c.Cfg.Limits, c.Cfg.Cost),
	}
	s.events.Handler = s
	s.events.Order = EventOrder(c.Cfg.Chip, c.Cfg.Core, int(e))
	vgs := e == isa.EngineVector || e == isa.EngineScalar || e == isa.EngineGpSimd
	s.portRules = (c.Cfg.SamePSUMBankExclusive && vgs) ||
		(c.Cfg.VectorGpSimdShareSBUF && (e == isa.EngineVector || e == isa.EngineGpSimd)) ||
		(c.Cfg.VectorScalarSharePSUM && (e == isa.EngineVector || e == isa.EngineScalar))
	s.psumBankBytes = c.Cfg.Limits.PSUMBankBytes()
	if c.Race != nil {
		s.vc = make(memory.VClock, c.Cfg.Agents)
	}
	s.Stats = NewStats()
	s.commit = Commit{Chip: c.Cfg.Chip, Core: c.Cfg.Core, Engine: e, Agent: s.agent}
	s.tensor.power.init(c.Cfg.Power)
	if st == nil {
		s.done = true
	}
	return s
}

var seqNames = [...]string{"TensorEngine", "VectorEngine", "ScalarEngine", "GpSimdEngine", "SyncEngine"}

// Engine returns which engine this is.
func (s *Sequencer) Engine() isa.Engine { return s.eng }

// clockEntry is the engine's entry in the vector clocks (memory.Clocks.Entry).
func (s *Sequencer) clockEntry() int {
	if s.centry < 0 {
		s.centry = s.core.Sim.Clocks.Entry(s.agent)
	}
	return s.centry
}

// HasStream reports whether the engine has an instruction stream.
func (s *Sequencer) HasStream() bool { return s.stream != nil }

// Done reports whether the stream has been fully issued.
func (s *Sequencer) Done() bool { return s.done }

// Current returns the instruction the sequencer is stuck on (nil if done),
// with its index in the stream.
func (s *Sequencer) Current() (*isa.Instruction, int64) { return s.cur, s.curIndex }

// Waiting returns what the sequencer waits for when stuck.
func (s *Sequencer) Waiting() (cause StallCause, sem isa.SemRef, since clock.Time, ok bool) {
	return s.waitCause, s.waitSem, s.waitStart, s.waitStart >= 0
}

// wakeAt schedules an issue attempt at t unless one is already due earlier.
func (s *Sequencer) wakeAt(t clock.Time) {
	if s.done || t >= s.pendingT {
		return
	}
	s.gen++
	s.pendingT = t
	s.events.Schedule(s.core.Sim.Engine, t, s.gen)
}

// Handle runs an issue attempt.
func (s *Sequencer) Handle(e sim.Event) error {
	ev, ok := s.events.Handled(e)
	if !ok || ev.Gen != s.gen {
		return nil
	}
	simState := s.core.Sim
	simState.Events++
	if simState.Err != nil {
		return nil
	}
	s.pendingT = clock.Never
	now := ev.At
	simState.Now = now
	s.step(now)
	return nil
}

// step issues as many instructions as can be committed at this event.
func (s *Sequencer) step(now clock.Time) {
	for !s.done {
		if s.cur == nil {
			in, err := s.stream.Next()
			if err != nil {
				s.core.Sim.Fail(fmt.Errorf("chip %d core %d %s stream: %w", s.core.Cfg.Chip, s.core.Cfg.Core, s.eng, err))
				return
			}
			if in == nil {
				s.done = true
				return
			}
			s.cur = in
			s.curIndex++
			dec, err := s.decode.Decode(in)
			if err != nil {
				s.core.Sim.Fail(fmt.Errorf("%s: %w", s.core.Sim.Describe(in), err))
				return
			}
			s.curDec = dec
			if in.Engine != s.eng || in.Chip != s.core.Cfg.Chip || in.Core != s.core.Cfg.Core {
				s.core.Sim.Fail(fmt.Errorf("%s: instruction for chip %d core %d %s found in the stream of chip %d core %d %s",
					s.core.Sim.Describe(in), in.Chip, in.Core, in.Engine, s.core.Cfg.Chip, s.core.Cfg.Core, s.eng))
				return
			}
		}
		next, ok := s.tryIssue(now)
		if !ok {
			return
		}
		s.cur = nil
		s.barrierPosted = false
		if next > now && s.usedPorts {
			// An instruction that booked a shared port: issue the next one
			// at its own time, so ports are granted in time order.
			s.wakeAt(next)
			return
		}
		// Otherwise commit the next instruction now, ahead of its start:
		// its waits see every increment posted so far (one not yet posted
		// makes it wait for a wake-up), and nothing else it needs is
		// shared, so the result is the same with fewer events.
	}
}

func (s *Sequencer) startWait(now clock.Time, cause StallCause, sem isa.SemRef) {
	if s.waitStart < 0 {
		// The wait starts when the engine is idle: for TensorE, whose
		// sequencer moves on while a multiply still runs, that is the end of
		// its last issue interval.
		s.waitStart = clock.Max(now, clock.Max(s.freeAt, s.busyEnd))
	}
	s.waitCause = cause
	s.waitSem = sem
}

// tryIssue tries to commit s.cur. It returns the time of the next issue
// attempt and true, or false when the instruction must wait for an event
// (a semaphore increment nobody has posted yet, or a DMA queue slot).
func (s *Sequencer) tryIssue(now clock.Time) (clock.Time, bool) {
	in := s.cur
	c := s.core
	ready := s.clk.Edge(clock.Max(now, s.freeAt))
	t := ready
	cause := StallCause(255)

	// Barrier: signal every listed core once, then wait locally.
	if in.Op == isa.OpBarrier && !s.barrierPosted {
		for _, r := range in.Attrs.BarrierCores {
			b := c.Sim.Boards(r.Chip, r.Core)
			if b == nil {
				c.Sim.Fail(fmt.Errorf("%s: barrier names chip %d core %d, which is not simulated", c.Sim.Describe(in), r.Chip, r.Core))
				return 0, false
			}
			lat, ok := c.postLatency(in, r)
			if !ok {
				return 0, false
			}
			b.Post(r.ID, t+lat, 1, s.vc, now)
		}
		s.barrierPosted = true
	}

	// Semaphore waits: the instruction starts once each is reached.
	for i := range in.Waits {
		w := &in.Waits[i]
		b := c.board(w.Sem)
		at := b.ReachTime(w.Sem.ID, w.Value, now)
		if at == clock.Never {
			s.startWait(now, StallSemaphore, w.Sem)
			b.addWaiter(w.Sem.ID, s, w.Value)
			return 0, false
		}
		if at > t {
			// Reached only by an increment that takes effect later: wait for
			// that time before deciding, since an increment still to be
			// posted may take effect earlier.
			s.startWait(now, StallSemaphore, w.Sem)
			b.addWaiterAt(w.Sem.ID, s, w.Value, at)
			return 0, false
		}
	}
	if in.Op == isa.OpBarrier {
		local := isa.SemRef{Chip: c.Cfg.Chip, Core: c.Cfg.Core, ID: in.Attrs.BarrierSem}
		at := c.Board.ReachTime(local.ID, in.Attrs.Target, now)
		if at == clock.Never {
			s.startWait(now, StallSemaphore, local)
			c.Board.addWaiter(local.ID, s, in.Attrs.Target)
			return 0, false
		}
		if at > t {
			s.startWait(now, StallSemaphore, local)
			c.Board.addWaiterAt(local.ID, s, in.Attrs.Target, at)
			return 0, false
		}
	}

	// A DMA trigger needs a free slot in its queue.
	isDMA := in.Op.IsDMA()
	if isDMA && c.DMA.QueueFull(in.Attrs.Queue) {
		s.startWait(now, StallDMAQueue, isa.SemRef{})
		c.DMA.WaitQueue(in.Attrs.Queue, s.wakeAt)
		return 0, false
	}

	// Acquire the happens-before of every wait.
	if s.vc != nil {
		clocks := c.Sim.Clocks
		// Every wait is met by t: the instruction is ordered after the
		// increments that met it.
		for i := range in.Waits {
			w := &in.Waits[i]
			c.board(w.Sem).JoinVC(s.vc, w.Sem.ID, w.Value, t)
		}
		if in.Op == isa.OpBarrier {
			c.Board.JoinVC(s.vc, in.Attrs.BarrierSem, in.Attrs.Target, t)
		}
		clocks.Tick(s.vc, s.clockEntry())
	}

	// Cost.
	var ns int64
	if s.eng == isa.EngineTensor {
		ns = s.tensor.statCols
	}
	cost := s.curDec.Cost(ns)
	interval := s.clk.Cycles(cost.IntervalCycles)
	latency := s.clk.Cycles(cost.LatencyCycles)
	if isDMA && in.Attrs.DGE == isa.DGESoftware {
		extra := s.clk.CyclesF(float64(c.DMA.Descriptors(in)) * c.Cfg.SoftwareDGECycles)
		interval += extra
		latency += extra
	}

	var start clock.Time
	var next clock.Time
	var powerExtra clock.Time
	switch s.eng {
	case isa.EngineTensor:
		var pathReady clock.Time
		start, interval, latency, next, powerExtra, cause, pathReady = s.tensorPlan(in, t, cause, interval, latency)
		ready = clock.Max(ready, pathReady)
	default:
		start = t
		// The engine's own in-flight results (RAW and WAW interlock).
		if dep := s.dependencyTime(start); dep > start {
			start, cause = s.clk.Edge(dep), StallDependency
		}
		// Shared ports and PSUM banks.
		start, cause = s.claimPorts(in, start, interval, cause)
		next = start + interval
		if interval == s.clk.Cycles(cost.IntervalCycles) {
			next = s.clk.After(start, cost.IntervalCycles)
		}
		s.recordInflight(start + latency)
	}

	// What observers see: the stall time charged to this instruction and
	// the semaphore wait it ended.
	cm := &s.commit
	cm.In, cm.Dec, cm.Now = in, s.curDec, now
	cm.NStalls, cm.SemWaitFrom = 0, -1
	if start > ready && cause != 255 {
		// The gap between ready and start goes to the binding cause.
		cm.addStall(cause, start-ready)
	}
	if s.waitStart >= 0 {
		// Time spent blocked before this event.
		if ready > s.waitStart {
			cm.addStall(s.waitCause, ready-s.waitStart)
		}
		if s.waitCause == StallSemaphore {
			cm.SemWaitSem, cm.SemWaitFrom, cm.SemWaitTo = s.waitSem, s.waitStart, start
		}
		s.waitStart = -1
	} else if cause == StallSemaphore && start > ready {
		cm.SemWaitSem, cm.SemWaitFrom, cm.SemWaitTo = s.waitSem, ready, start
	}
	cm.addStall(StallPower, powerExtra)

	// Data races against every other agent.
	if c.Race != nil && !isDMA {
		if err := c.Race.CheckSpans(in, s.curDec.Spans(), s.clockEntry(), s.name, s.vc, c.Sim.Describe); err != nil {
			c.Sim.Fail(err)
			return 0, false
		}
	}

	completion := start + latency
	if len(in.Signal) > 0 && !isDMA {
		// An engine's semaphore increments take effect in program order
		// (retirement is in order): a later instruction with a shorter
		// latency, such as a LoadStationary after a multiply, never moves
		// a count before an earlier instruction has completed. (The DMA
		// engines signal DMA triggers when the transfer completes.)
		postAt := clock.Max(completion, s.lastSignal)
		s.lastSignal = postAt
		for i := range in.Signal {
			sg := &in.Signal[i]
			lat, ok := c.postLatency(in, sg.Sem)
			if !ok {
				return 0, false
			}
			c.board(sg.Sem).Post(sg.Sem.ID, postAt+lat, sg.Add, s.vc, now)
		}
	}
	if isDMA {
		if err := c.DMA.SubmitDecoded(in, s.curDec.Spans(), start+interval, s.vc); err != nil {
			c.Sim.Fail(fmt.Errorf("%s: %w", c.Sim.Describe(in), err))
			return 0, false
		}
	}

	end := start + interval
	if end > s.busyEnd {
		s.busyEnd = end
	}
	cm.Start, cm.End, cm.Completion = start, end, completion
	s.Stats.Committed(cm)
	for _, o := range c.Observers {
		o.Committed(cm)
	}
	c.Sim.Instructions++
	if s.eng != isa.EngineTensor {
		s.freeAt = next
	}
	return next, true
}

// claimPorts delays start until every shared port or PSUM bank the
// instruction needs is free for its interval, and books them.
func (s *Sequencer) claimPorts(in *isa.Instruction, start, interval clock.Time, cause StallCause) (clock.Time, StallCause) {
	c := s.core
	if !s.portRules {
		s.usedPorts = false
		return start, cause
	}
	var ports [4]*memory.Port
	var causes [4]StallCause
	n := 0
	usesSBUF, usesPSUM := false, false
	spans := s.curDec.Spans()
	for i := range spans {
		sp := &spans[i]
		switch sp.Mem {
		case isa.MemSBUF:
			usesSBUF = true
		case isa.MemPSUM:
			usesPSUM = true
			if c.Cfg.SamePSUMBankExclusive && n < len(ports) && (s.eng == isa.EngineVector || s.eng == isa.EngineScalar || s.eng == isa.EngineGpSimd) {
				bank := int(sp.Lo / s.psumBankBytes)
				if bank < len(c.psumBank) {
					p := c.psumBank[bank]
					dup := false
					for i := 0; i < n; i++ {
						dup = dup || ports[i] == p
					}
					if !dup {
						ports[n], causes[n] = p, StallPSUMBank
						n++
					}
				}
			}
		}
	}
	if usesSBUF && c.Cfg.VectorGpSimdShareSBUF && (s.eng == isa.EngineVector || s.eng == isa.EngineGpSimd) && n < len(ports) {
		ports[n], causes[n] = c.sbufVG, StallPort
		n++
	}
	if usesPSUM && c.Cfg.VectorScalarSharePSUM && (s.eng == isa.EngineVector || s.eng == isa.EngineScalar) && n < len(ports) {
		ports[n], causes[n] = c.psumVS, StallPort
		n++
	}
	s.usedPorts = n > 0
	if n == 0 {
		return start, cause
	}
	owner := int(s.eng)
	// Find a start that suits every port (each Earliest only moves forward).
	for changed := true; changed; {
		changed = false
		for i := 0; i < n; i++ {
			ports[i].Prune(s.core.Sim.Now)
			if e := ports[i].Earliest(start, interval, owner); e > start {
				start, cause, changed = s.clk.Edge(e), causes[i], true
			}
		}
	}
	for i := 0; i < n; i++ {
		ports[i].Reserve(start, interval, owner)
	}
	return start, cause
}

// dependencyTime returns when the engine's own in-flight writes that the
// current instruction touches are complete (t if none).
func (s *Sequencer) dependencyTime(t clock.Time) clock.Time {
	dep := t
	if s.inflN == 0 {
		return dep
	}
	spans := s.curDec.Spans()
	for i := range spans {
		sp := &spans[i]
		for j := range s.inflight[:s.inflN] {
			w := &s.inflight[j]
			if w.completion <= dep || w.mem != sp.Mem || w.plo >= sp.PartHi || sp.PartLo >= w.phi || w.lo >= sp.Hi || sp.Lo >= w.hi {
				continue
			}
			dep = w.completion
		}
	}
	return dep
}

// recordInflight remembers the current instruction's on-chip writes, which
// complete at completion.
func (s *Sequencer) recordInflight(completion clock.Time) {
	spans := s.curDec.Spans()
	for i := range spans {
		sp := &spans[i]
		if !sp.Write {
			break // outputs come first
		}
		// Overwrite the oldest once full (order within the ring does not
		// matter to dependencyTime).
		s.inflight[s.inflHead] = inflightWrite{mem: sp.Mem, plo: sp.PartLo, phi: sp.PartHi, lo: sp.Lo, hi: sp.Hi, completion: completion}
		s.inflHead = (s.inflHead + 1) % len(s.inflight)
		s.inflN = min(s.inflN+1, len(s.inflight))
	}
}

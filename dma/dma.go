// Package dma models a NeuronCore's DMA engines and queues (reference §4).
//
// A transfer (one DMA instruction) uses one queue ID on every DMA engine of
// the core. Each engine serves a fixed block of partitions (128 / 16 = 8),
// so a transfer becomes one share per engine: the rows of its partitions,
// or nothing at all — an idle engine still writes its semaphore update, so
// a transfer that signals s raises it by one per engine (16).
//
// Shares in one queue of one engine run in order. An engine serves the
// shares at the heads of its queues together, splitting its bandwidth evenly
// among them (on NC-v4 only the highest-priority QoS class present is
// served): the hardware interleaves queues descriptor by descriptor, and
// this processor-sharing model follows that without an event per
// descriptor. A share needs a fixed engine time per descriptor plus its
// bytes at the engine's rate, and books its HBM bytes on the stack it
// touches. The fixed trigger-to-semaphore latency (~1.3 us) is split into a
// start latency and a completion latency that overlap across outstanding
// transfers instead of occupying the engine. A share costs at most two
// events (it becomes ready, it completes); none per byte or descriptor.
package dma

import (
	"fmt"
	"math"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/memory"
)

// Config describes one core's DMA engines.
type Config struct {
	Chip, Core         int32
	Engines            int
	Queues             int
	QueueDepth         int
	Partitions         int
	EngineGBps         float64 // bytes per ns
	DescriptorMaxBytes int64
	DescriptorOverhead clock.Time
	StartLatency       clock.Time
	CompletionLatency  clock.Time
	HWDGEBlocks        int
	HWDGETime          clock.Time
	TransposeEffHBM    float64
	TransposeEffSBUF   float64
	// QoSClasses > 0 selects QoS arbitration: queue q is in class q mod
	// QoSClasses, lower classes first.
	QoSClasses int
	// AgentBase is the vector-clock agent of queue 0; Agents the clock size.
	AgentBase, Agents int
}

// Tracer receives every engine share as it is scheduled.
type Tracer interface {
	DMA(chip, core int32, engine int, queue int16, in *isa.Instruction, bytes int64, start, end clock.Time)
}

// Env is what the DMA engines need from the rest of the simulation.
type Env struct {
	Engine sim.Engine
	// Post increments a semaphore, effective at time at.
	Post func(sem isa.SemRef, at clock.Time, add int64, vc memory.VClock) error
	// Now returns the time of the event being handled.
	Now func() clock.Time
	// Failed reports whether the simulation has stopped on an error.
	Failed   func() bool
	Fail     func(error)
	Event    func()
	HBM      *memory.HBM
	Race     *memory.RaceDetector
	Tracer   Tracer
	Describe func(*isa.Instruction) string
}

// EngineStats are one DMA engine's counters.
type EngineStats struct {
	Shares int64
	Bytes  int64
	// Active is the time the engine spent moving data (sum of share
	// durations: an engine serves one share at a time).
	Active clock.Time
	// FirstByte and LastByte bound its activity.
	FirstByte, LastByte clock.Time
}

// Stats are the core's DMA counters.
type Stats struct {
	Transfers      int64
	Bytes          int64 // bytes written to the destination
	QueueTransfers []int64
	Engines        []EngineStats
	// LastCompletion is when the last transfer's semaphore moved.
	LastCompletion clock.Time
}

// Subsystem is a core's DMA engines and queues.
type Subsystem struct {
	cfg     Config
	env     Env
	engines []*Engine
	// outstanding transfers per queue ID, and triggers waiting for a slot.
	outstanding []int
	queueWait   [][]func(clock.Time)
	queueVC     []memory.VClock
	dgeFree     []clock.Time
	Stats       Stats
	fsPerByte   float64
}

// New builds the DMA engines of one core.
func New(cfg Config, env Env) *Subsystem {
	d := &Subsystem{cfg: cfg, env: env,
		outstanding: make([]int, cfg.Queues),
		queueWait:   make([][]func(clock.Time), cfg.Queues),
		dgeFree:     make([]clock.Time, cfg.HWDGEBlocks),
		fsPerByte:   1e6 / cfg.EngineGBps,
	}
	d.Stats.QueueTransfers = make([]int64, cfg.Queues)
	d.Stats.Engines = make([]EngineStats, cfg.Engines)
	for q := 0; q < cfg.Queues; q++ {
		d.queueVC = append(d.queueVC, make(memory.VClock, cfg.Agents))
	}
	for e := 0; e < cfg.Engines; e++ {
		eng := &Engine{
			ComponentBase: sim.NewComponentBase(fmt.Sprintf("Chip[%d].Core[%d].DMA[%d]", cfg.Chip, cfg.Core, e)),
			sub:           d, index: e,
			queues: make([][]*share, cfg.Queues),
		}
		d.Stats.Engines[e].FirstByte = clock.Never
		d.engines = append(d.engines, eng)
	}
	return d
}

type transfer struct {
	in         *isa.Instruction
	queue      int16
	ready      clock.Time
	sharesLeft int
	vc         memory.VClock
}

type share struct {
	t        *transfer
	bytes    int64
	descs    int64
	eff      float64
	hbmAddr  int64
	hbmBytes int64
	hbmWrite bool
	// Once active: when it started, the engine time it still needs at the
	// full rate, and the HBM stack it holds (-1: none).
	start     clock.Time
	remaining float64
	stack     int
}

// engineID numbers an engine uniquely on its chip.
func (d *Subsystem) engineID(e int) int { return int(d.cfg.Core)*d.cfg.Engines + e }

// QueueFull reports whether queue q holds QueueDepth outstanding transfers.
func (d *Subsystem) QueueFull(q int16) bool { return d.outstanding[q] >= d.cfg.QueueDepth }

// WaitQueue registers wake to be called when queue q frees a slot.
func (d *Subsystem) WaitQueue(q int16, wake func(clock.Time)) {
	d.queueWait[q] = append(d.queueWait[q], wake)
}

// plan describes how a transfer splits over the engines.
type plan struct {
	onChip   *isa.AccessPattern // the side whose partitions pick the engines (nil: HBM to HBM)
	hbm      *isa.AccessPattern // the HBM side, if any
	hbmWrite bool
	rows     int64 // rows (partitions) in the transfer
	rowBytes int64 // bytes moved per row (the larger side, for casts)
	descsRow int64 // descriptors per row
	eff      float64
}

func (d *Subsystem) plan(in *isa.Instruction) plan {
	dst, src := &in.Outs[0].AP, &in.Ins[0].AP
	p := plan{eff: 1}
	switch {
	case dst.Mem.OnChip():
		p.onChip = dst
	case src.Mem.OnChip():
		p.onChip = src
	}
	if src.Mem == isa.MemHBM {
		p.hbm = src
	} else if dst.Mem == isa.MemHBM {
		p.hbm, p.hbmWrite = dst, true
	}
	rowSide := dst
	if p.onChip != nil {
		rowSide = p.onChip
	}
	p.rows = int64(rowSide.PartCount)
	if p.rows <= 0 {
		p.rows = 1
	}
	total := max(dst.Bytes(), src.Bytes())
	p.rowBytes = (total + p.rows - 1) / p.rows
	// Descriptors: each row is split at every break in contiguity on either
	// side and at the descriptor size limit.
	run := func(ap *isa.AccessPattern) int64 {
		r := ap.ContiguousRunElems() * int64(ap.DType.Bytes())
		if ap.Mem == isa.MemHBM && ap.RowContiguous() {
			r = ap.Bytes()
		}
		return max(r, 1)
	}
	chunk := min(run(dst), run(src), p.rowBytes)
	if in.Op == isa.OpDMAGather || in.Op == isa.OpDMAScatter {
		chunk = min(chunk, p.rowBytes)
	}
	segs := (p.rowBytes + chunk - 1) / chunk
	p.descsRow = segs * ((chunk + d.cfg.DescriptorMaxBytes - 1) / d.cfg.DescriptorMaxBytes)
	if p.descsRow < 1 {
		p.descsRow = 1
	}
	if in.Op == isa.OpDMATranspose {
		// The same descriptors as a copy, at the stated fraction of the
		// copy's throughput (reference §4).
		p.eff = d.cfg.TransposeEffHBM
		if src.Mem != isa.MemHBM {
			p.eff = d.cfg.TransposeEffSBUF
		}
	}
	return p
}

// Descriptors returns how many descriptors a transfer needs in total.
func (d *Subsystem) Descriptors(in *isa.Instruction) int64 {
	p := d.plan(in)
	return p.rows * p.descsRow
}

// rowsOfEngine returns the rows engine e serves: [lo, hi) within the
// transfer's rows.
func (d *Subsystem) rowsOfEngine(p *plan, e int) (int64, int64) {
	per := int64(d.cfg.Partitions / d.cfg.Engines)
	if p.onChip != nil {
		first := int64(p.onChip.PartStart)
		lo := max(first, int64(e)*per)
		hi := min(first+p.rows, int64(e+1)*per)
		if hi <= lo {
			return 0, 0
		}
		return lo - first, hi - first
	}
	// HBM to HBM: rows spread evenly.
	n := int64(d.cfg.Engines)
	each := (p.rows + n - 1) / n
	lo := min(int64(e)*each, p.rows)
	hi := min(lo+each, p.rows)
	return lo, hi
}

// Submit queues a transfer triggered at time trigger by an agent whose
// clock is vc.
func (d *Subsystem) Submit(in *isa.Instruction, trigger clock.Time, vc memory.VClock) error {
	q := in.Attrs.Queue
	agent := d.cfg.AgentBase + int(q)
	qvc := d.queueVC[q]
	qvc.Join(vc)
	qvc[agent]++
	if d.env.Race != nil {
		if err := d.checkRaces(in, agent, qvc); err != nil {
			return err
		}
	}
	p := d.plan(in)
	ready := trigger + d.cfg.StartLatency
	if in.Attrs.DGE == isa.DGEHardware && len(d.dgeFree) > 0 {
		b := 0
		for i := range d.dgeFree {
			if d.dgeFree[i] < d.dgeFree[b] {
				b = i
			}
		}
		s := clock.Max(trigger, d.dgeFree[b])
		d.dgeFree[b] = s + d.cfg.HWDGETime
		ready = clock.Max(ready, d.dgeFree[b])
	}
	t := &transfer{in: in, queue: q, ready: ready, sharesLeft: d.cfg.Engines, vc: append(memory.VClock(nil), qvc...)}
	d.outstanding[q]++
	d.Stats.Transfers++
	d.Stats.QueueTransfers[q]++
	d.Stats.Bytes += in.Outs[0].AP.Bytes()
	now := d.env.Now()
	for e, eng := range d.engines {
		lo, hi := d.rowsOfEngine(&p, e)
		sh := &share{t: t, eff: p.eff}
		if hi > lo {
			rows := hi - lo
			sh.bytes = rows * p.rowBytes
			sh.descs = rows * p.descsRow
			if p.hbm != nil {
				sh.hbmBytes = sh.bytes
				sh.hbmWrite = p.hbmWrite
				sh.hbmAddr = p.hbm.Offset + lo*p.hbm.PartStride*int64(p.hbm.DType.Bytes())
			}
		}
		eng.queues[q] = append(eng.queues[q], sh)
		eng.update(now)
	}
	return nil
}

func (d *Subsystem) checkRaces(in *isa.Instruction, agent int, vc memory.VClock) error {
	var race *memory.Access
	var mine memory.Access
	in.Operands(func(op *isa.Operand, role isa.OperandRole) {
		ap := &op.AP
		if race != nil || !ap.Mem.OnChip() {
			return
		}
		lo, hi := ap.ByteSpan()
		a := memory.Access{Mem: ap.Mem, Chip: ap.Chip, Core: ap.Core, PartLo: ap.PartStart, PartHi: ap.PartStart + ap.PartCount,
			Lo: lo, Hi: hi, Write: role == isa.RoleWrite, Agent: agent, Epoch: vc[agent], Who: in,
			AgentName: fmt.Sprintf("chip %d core %d DMA queue %d", d.cfg.Chip, d.cfg.Core, in.Attrs.Queue)}
		if r := d.env.Race.Check(a, vc); r != nil {
			race, mine = r, a
		}
	})
	if race != nil {
		return &memory.RaceError{First: *race, Second: mine, Describe: d.env.Describe}
	}
	return nil
}

// finish completes one engine's share of a transfer at time end.
func (d *Subsystem) finish(sh *share, end clock.Time) {
	t := sh.t
	at := end + d.cfg.CompletionLatency
	for _, sg := range t.in.Signal {
		if err := d.env.Post(sg.Sem, at, sg.Add, t.vc); err != nil {
			d.env.Fail(err)
			return
		}
	}
	if at > d.Stats.LastCompletion {
		d.Stats.LastCompletion = at
	}
	t.sharesLeft--
	if t.sharesLeft == 0 {
		q := t.queue
		d.outstanding[q]--
		if w := d.queueWait[q]; len(w) > 0 {
			d.queueWait[q] = nil
			now := d.env.Now()
			for _, wake := range w {
				wake(now)
			}
		}
	}
}

// Engine is one DMA engine: 16 queues whose head shares it serves together.
type Engine struct {
	*sim.ComponentBase
	sub    *Subsystem
	index  int
	queues [][]*share
	// active[q] is the share of queue q being served (nil: none).
	active  []*share
	nActive int
	last    clock.Time // when remaining works were last brought up to date
	gen     uint64
	pending clock.Time // time of the scheduled event, or Never
	// busySince is when the engine last went from idle to busy.
	busySince clock.Time
}

type wakeEvent struct {
	at  clock.Time
	vt  sim.VTimeInSec
	eng *Engine
	gen uint64
}

func (e *wakeEvent) Time() sim.VTimeInSec { return e.vt }
func (e *wakeEvent) Handler() sim.Handler { return e.eng }
func (e *wakeEvent) IsSecondary() bool    { return false }

// Handle brings the engine up to date at the event's time.
func (e *Engine) Handle(ev sim.Event) error {
	we, ok := ev.(*wakeEvent)
	if !ok || we.gen != e.gen {
		return nil
	}
	d := e.sub
	if d.env.Event != nil {
		d.env.Event()
	}
	if d.env.Failed() {
		return nil
	}
	e.pending = clock.Never
	e.update(we.at)
	return nil
}

// served returns the QoS class being served (-1: every active share).
func (e *Engine) servedClass() int {
	classes := e.sub.cfg.QoSClasses
	if classes <= 0 {
		return -1
	}
	best := -1
	for q, sh := range e.active {
		if sh != nil && (best < 0 || q%classes < best) {
			best = q % classes
		}
	}
	return best
}

func (e *Engine) isServed(q, class int) bool {
	return class < 0 || q%e.sub.cfg.QoSClasses == class
}

// advance charges the time since the last update to the served shares.
func (e *Engine) advance(now clock.Time) {
	if now <= e.last {
		return
	}
	if e.nActive > 0 {
		class := e.servedClass()
		n := 0
		for q, sh := range e.active {
			if sh != nil && e.isServed(q, class) {
				n++
			}
		}
		per := float64(now-e.last) / float64(n)
		for q, sh := range e.active {
			if sh != nil && e.isServed(q, class) {
				sh.remaining -= per
			}
		}
	}
	e.last = now
}

// update completes finished shares, starts ready ones and schedules the
// next event.
func (e *Engine) update(now clock.Time) {
	d := e.sub
	if e.active == nil {
		e.active = make([]*share, len(e.queues))
		e.pending = clock.Never
	}
	e.advance(now)
	// Complete shares whose work is done (half a femtosecond of rounding).
	for q, sh := range e.active {
		if sh != nil && sh.remaining <= 0.5 {
			e.active[q] = nil
			e.nActive--
			e.retire(sh, now)
			if d.env.Failed() {
				return
			}
		}
	}
	// Start the head of every idle queue that is ready; shares that move
	// no bytes only write their semaphore update, in queue order.
	nextReady := clock.Never
	for q := range e.queues {
		for e.active[q] == nil && len(e.queues[q]) > 0 {
			sh := e.queues[q][0]
			if sh.bytes == 0 {
				e.queues[q] = e.queues[q][1:]
				d.finish(sh, clock.Max(now, sh.t.ready))
				if d.env.Failed() {
					return
				}
				continue
			}
			if sh.t.ready > now {
				nextReady = clock.Min(nextReady, sh.t.ready)
				break
			}
			e.queues[q] = e.queues[q][1:]
			e.activate(q, sh, now)
		}
	}
	// Next completion at the current sharing.
	next := nextReady
	if e.nActive > 0 {
		class := e.servedClass()
		n := 0
		for q, sh := range e.active {
			if sh != nil && e.isServed(q, class) {
				n++
			}
		}
		for q, sh := range e.active {
			if sh != nil && e.isServed(q, class) {
				t := now + clock.Time(math.Ceil(sh.remaining*float64(n)))
				next = clock.Min(next, t)
			}
		}
	}
	if next != clock.Never && next != e.pending {
		e.gen++
		e.pending = next
		d.env.Engine.Schedule(&wakeEvent{at: next, vt: next.VTime(), eng: e, gen: e.gen})
	}
}

// activate starts serving sh from queue q at time now.
func (e *Engine) activate(q int, sh *share, now clock.Time) {
	d := e.sub
	work := float64(sh.descs)*float64(d.cfg.DescriptorOverhead) + float64(sh.bytes)*d.fsPerByte/sh.eff
	sh.stack = -1
	if sh.hbmBytes > 0 && d.env.HBM != nil {
		// A share cannot outrun its part of the HBM stack.
		stack, slow := d.env.HBM.Begin(sh.hbmAddr, sh.hbmBytes, sh.hbmWrite, d.engineID(e.index), d.cfg.EngineGBps)
		sh.stack = stack
		work = work*slow + float64(d.env.HBM.Latency())
	}
	sh.start = now
	sh.remaining = math.Round(work)
	if e.nActive == 0 {
		e.busySince = now
	}
	e.active[q] = sh
	e.nActive++
	st := &d.Stats.Engines[e.index]
	st.Shares++
	st.Bytes += sh.bytes
	if now < st.FirstByte {
		st.FirstByte = now
	}
}

// retire records a finished share and signals its transfer.
func (e *Engine) retire(sh *share, now clock.Time) {
	d := e.sub
	if sh.stack >= 0 {
		d.env.HBM.End(sh.stack, d.engineID(e.index))
	}
	st := &d.Stats.Engines[e.index]
	if now > st.LastByte {
		st.LastByte = now
	}
	if e.nActive == 0 {
		st.Active += now - e.busySince
	}
	if d.env.Tracer != nil {
		d.env.Tracer.DMA(d.cfg.Chip, d.cfg.Core, e.index, sh.t.queue, sh.t.in, sh.bytes, sh.start, now)
	}
	d.finish(sh, now)
}

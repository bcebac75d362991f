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
//
// Across chips (Env.Fabric, package noc): a transfer whose source and
// destination are on different chips books its bytes on every link of the
// route and ends no sooner than they have crossed, its completion comes
// the hops' latency later, and it books the far chip's HBM; an HBM side on
// a stack that is not its core's own pays the on-chip fabric's latency.
// Semaphore updates for another core or chip follow the data there.
package dma

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/internal/eventpool"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/memory"
	"github.com/trnsim/trnsim/noc"
)

// Config describes one core's DMA engines.
type Config struct {
	Chip, Core int32
	// CoresPerChip numbers engines system-wide for the HBM stacks and links
	// they share.
	CoresPerChip int
	// LocalStack is the HBM stack next to this core (-1: every stack is as
	// near, as with interleaving); reaching another stack crosses the
	// on-chip fabric.
	LocalStack int
	// Stacks is the HBM stacks of a chip (core c's is c * Stacks /
	// CoresPerChip): where a transfer's Via core (isa.Attrs.Via) is.
	Stacks             int
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
	// EventOrder ranks the subsystem's wake-ups among those at one time
	// (eventpool.Pool.Order).
	EventOrder uint64
	// AgentBase is the vector-clock agent of queue 0; Agents the clock size.
	AgentBase, Agents int
	// CollectiveOverhead delays the data of a collective op on this core
	// by that much after its first transfer could have started (the
	// runtime's orchestration of one collective; an op id in a loop pays
	// it once); Env.IsCollective says which op ids are collectives.
	CollectiveOverhead clock.Time
}

// Tracer receives every engine share as it is scheduled: engines identical
// shares, one on each engine from engine on, of bytes each.
type Tracer interface {
	DMA(chip, core int32, engine, engines int, queue int16, in *isa.Instruction, bytes int64, start, end clock.Time)
}

// Env is what the DMA engines need from the rest of the simulation.
type Env struct {
	Engine sim.Engine
	// Post increments a semaphore, effective at time at.
	Post func(sem isa.SemRef, at clock.Time, add int64, vc memory.VClock) error
	// Now returns the time of the event being handled.
	Now func() clock.Time
	// Failed reports whether the simulation has stopped on an error.
	Failed func() bool
	Fail   func(error)
	// Event is called with the time of every DMA event handled.
	Event func(at clock.Time)
	HBM   *memory.HBM
	// HBMOf returns another chip's HBM (nil: single-chip system).
	HBMOf func(chip int32) *memory.HBM
	// Fabric carries transfers between chips and their semaphore updates
	// between cores (nil: no latency, no links).
	Fabric *noc.Fabric
	// IsCollective reports whether an op id is a collective's (nil: none
	// is).
	IsCollective func(opID int32) bool
	Race         *memory.RaceDetector
	// Clocks is the simulation's (see memory.Clocks); nil joins whole
	// clocks.
	Clocks   *memory.Clocks
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
	*sim.ComponentBase
	cfg     Config
	env     Env
	engines []*Engine
	// updating is set inside update; repoke asks it for another pass (a
	// share was rescaled: share.Rescale).
	updating, repoke bool
	// outstanding transfers per queue ID, and triggers waiting for a slot.
	outstanding []int
	// order lists each queue's transfers that have not retired, oldest
	// first: a transfer's semaphore updates take effect only once every
	// earlier transfer of its queue has completed.
	order     []transferFIFO
	queueWait [][]func(clock.Time)
	queueVC   []memory.VClock
	dgeFree   []clock.Time
	Stats     Stats
	fsPerByte float64
	gen       uint64
	pending   clock.Time // time of the scheduled event, or Never
	// events and transfers for reuse.
	events     eventpool.Pool
	freeXfers  []*transfer
	touched    []*transfer
	queueNames []string
	scratch    []*share
	// lockstep is true while every engine has the same queues and shares
	// (every transfer so far spread evenly over all engines): then engine 0
	// alone is simulated and stands for all of them, and mirror collects
	// the statistics the other engines will be credited with.
	lockstep bool
	mirror   EngineStats
	statsBuf [2]*EngineStats
	// now is the time of the update in progress: env.Now() follows the
	// sequencers' events, not the subsystem's own.
	now clock.Time
	// collGate is, per collective op id, when its data may start moving
	// (its first trigger plus Config.CollectiveOverhead).
	collGate map[int32]clock.Time
}

// New builds the DMA engines of one core.
func New(cfg Config, env Env) *Subsystem {
	d := &Subsystem{ComponentBase: sim.NewComponentBase(fmt.Sprintf("Chip[%d].Core[%d].DMA", cfg.Chip, cfg.Core)),
		cfg: cfg, env: env, pending: clock.Never, lockstep: cfg.Engines > 1,
		outstanding: make([]int, cfg.Queues),
		order:       make([]transferFIFO, cfg.Queues),
		queueWait:   make([][]func(clock.Time), cfg.Queues),
		dgeFree:     make([]clock.Time, cfg.HWDGEBlocks),
		fsPerByte:   1e6 / cfg.EngineGBps,
	}
	d.events.Handler = d
	d.events.Order = cfg.EventOrder
	d.Stats.QueueTransfers = make([]int64, cfg.Queues)
	d.Stats.Engines = make([]EngineStats, cfg.Engines)
	d.mirror.FirstByte = clock.Never
	for q := 0; q < cfg.Queues; q++ {
		d.queueNames = append(d.queueNames, fmt.Sprintf("chip %d core %d DMA queue %d", cfg.Chip, cfg.Core, q))
		d.queueVC = append(d.queueVC, make(memory.VClock, cfg.Agents))
	}
	for e := 0; e < cfg.Engines; e++ {
		eng := &Engine{sub: d, index: e, queues: make([]shareFIFO, cfg.Queues), active: make([]*share, cfg.Queues), nextAt: clock.Never}
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
	// unposted semaphore updates (shares finished at unpostedAt).
	unposted   int64
	unpostedAt clock.Time
	// shares holds the transfer's shares: one in lockstep, else one per
	// engine. The transfer, its shares and its clock are reused once every
	// share has finished and its updates are posted (free marks it).
	shares []share
	free   bool
	// latency is what the data adds crossing the fabric (links between
	// chips, the on-chip fabric to a far HBM stack); dstChip is the chip
	// the data lands on, where its semaphore updates start from.
	latency clock.Time
	dstChip int32
	// deferred counts semaphore updates of finished shares held back
	// until every earlier transfer of the queue has completed (at
	// deferredAt at the earliest); retired is set once the transfer has
	// left its queue's order.
	deferred   int64
	deferredAt clock.Time
	retired    bool
}

// newTransfer returns a transfer from the free list, or a new one.
func (d *Subsystem) newTransfer() *transfer {
	if n := len(d.freeXfers); n > 0 {
		t := d.freeXfers[n-1]
		d.freeXfers = d.freeXfers[:n-1]
		t.free = false
		return t
	}
	return &transfer{vc: make(memory.VClock, d.cfg.Agents), shares: make([]share, 0, len(d.engines))}
}

type share struct {
	t        *transfer
	bytes    int64
	descs    int64
	eff      float64
	hbmAddr  int64
	hbmBytes int64
	hbmWrite bool
	hbmMem   *memory.HBM
	// The second HBM side of an HBM-to-HBM transfer (the write), and the
	// read-modify-write of an accumulating one.
	hbm2Addr, hbm2Bytes int64
	hbm2Mem             *memory.HBM
	hbmRMW              bool
	stack2              int
	// route is the links from the source chip to the destination chip
	// (nil: one chip).
	route *noc.Route
	// mirrorBase, when >= 0, is the engine number of engine 0 of the core
	// whose transfer this one's write mirrors (isa.Attrs.Via): the written
	// side counts as that core's engines on its stack, and apart from the
	// read side unless the real destination shares the source's stack.
	mirrorBase int
	apart      bool
	// Once active: the engine time without slowdown (work0), the HBM
	// latency added (lat), the passes of its bytes through each stack, the
	// links' slowdown and the slowdown applied (Rescale raises it).
	eng              *Engine
	q                int
	work0            float64
	lat              clock.Time
	passes1, passes2 int8
	linkSlow, slow   float64
	// Once active: when it started, the engine time it still needs at the
	// full rate, and the HBM stack it holds (-1: none).
	start     clock.Time
	remaining float64
	stack     int
	// mult is how many engines this share stands for: while the engines
	// run in lockstep, engine 0 carries every engine's identical share.
	mult int
}

// hbmSlow is the factor the HBM stacks the share touches slow it by, with
// the engines now active on them.
func (sh *share) hbmSlow() float64 {
	d := sh.eng.sub
	slow := 1.0
	p1, p2 := int(sh.passes1), int(sh.passes2)
	if p1 > 0 && p2 > 0 && sh.hbmMem == sh.hbm2Mem && sh.stack == sh.stack2 && !sh.apart {
		// Both sides on one stack: every byte passes it on each side.
		return max(slow, sh.hbmMem.Demand(sh.stack, d.cfg.EngineGBps, p1+p2))
	}
	if p1 > 0 {
		slow = max(slow, sh.hbmMem.Demand(sh.stack, d.cfg.EngineGBps, p1))
	}
	if p2 > 0 {
		slow = max(slow, sh.hbm2Mem.Demand(sh.stack2, d.cfg.EngineGBps, p2))
	}
	return slow
}

// Rescale sets the slowdown of a share that started at now to what its
// stacks' engines ask now (memory.HBM.Started and Ended): it has run no
// time yet, so its remaining work is its whole work at the new rate. Its
// engine looks again now where the share finishes sooner (an engine's
// next event due before the share's end finds it unfinished and looks
// again then).
func (sh *share) Rescale(now clock.Time) {
	e := sh.eng
	if sh.start != now || e == nil || e.active[sh.q] != sh {
		return
	}
	slow := max(1, sh.linkSlow, sh.hbmSlow())
	if slow == sh.slow {
		return
	}
	old := sh.remaining
	sh.slow = slow
	sh.remaining = math.Round(sh.work0*slow + float64(sh.lat))
	if sh.remaining < old {
		e.dirty = true
		e.sub.poke(now)
	}
}

// poke has the engines brought up to date at now, after a share of one of
// them was rescaled to end sooner: inside update, by one more pass before
// it ends; otherwise by a wake-up now (never by updating from inside
// another subsystem's work).
func (d *Subsystem) poke(now clock.Time) {
	if d.updating {
		d.repoke = true
		return
	}
	now = clock.Max(now, d.env.Now())
	if d.pending > now {
		d.gen++
		d.pending = now
		d.events.Schedule(d.env.Engine, now, d.gen)
	}
}

// stackOfCore is the HBM stack next to a core of a chip (-1: unknown).
func (d *Subsystem) stackOfCore(core int32) int {
	if d.cfg.CoresPerChip <= 0 {
		return -1
	}
	return int(core) * d.cfg.Stacks / d.cfg.CoresPerChip
}

// hbmID is the engine number the first HBM side of engine e's share
// counts as: the written side's (writeID) when it writes.
func (sh *share) hbmID(d *Subsystem, e int) int {
	if sh.hbmWrite {
		return sh.writeID(d, e)
	}
	return d.engineID(e)
}

// eachStack calls fn for every HBM stack the active share holds, once.
func (sh *share) eachStack(fn func(h *memory.HBM, stack int)) {
	if sh.stack >= 0 {
		fn(sh.hbmMem, sh.stack)
	}
	if sh.stack2 >= 0 && (sh.hbm2Mem != sh.hbmMem || sh.stack2 != sh.stack) {
		fn(sh.hbm2Mem, sh.stack2)
	}
}

// writeID is the engine number the written HBM side of engine e's share
// counts as: the engine's own, or the mirrored core's (mirrorBase).
func (sh *share) writeID(d *Subsystem, e int) int {
	if sh.mirrorBase >= 0 {
		return sh.mirrorBase + e
	}
	return d.engineID(e)
}

// engineID numbers an engine uniquely in the system.
func (d *Subsystem) engineID(e int) int {
	return (int(d.cfg.Chip)*max(d.cfg.CoresPerChip, 1)+int(d.cfg.Core))*d.cfg.Engines + e
}

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
	// hbm2 is the written side of an HBM-to-HBM transfer.
	hbm2 *isa.AccessPattern
	// srcChip and dstChip are where the data comes from and goes to.
	srcChip, dstChip int32
	rows             int64 // rows (partitions) in the transfer
	rowBytes         int64 // bytes moved per row (the larger side, for casts)
	// hbmRowBytes is what a row reads or writes in HBM: the HBM side's
	// own bytes (a casting transfer works in the wider dtype on the
	// engines, but HBM holds the narrower one).
	hbmRowBytes int64
	descsRow    int64 // descriptors per row
	eff         float64
}

func (d *Subsystem) plan(in *isa.Instruction) plan {
	dst, src := &in.Outs[0].AP, &in.Ins[0].AP
	if in.HBMOffset != 0 {
		// The instruction moves its body's HBM tile by HBMOffset.
		dv, sv := in.HBMAP(&in.Outs[0]), in.HBMAP(&in.Ins[0])
		dst, src = &dv, &sv
	}
	p := plan{eff: 1}
	switch {
	case dst.Mem.OnChip():
		p.onChip = dst
	case src.Mem.OnChip():
		p.onChip = src
	}
	if src.Mem == isa.MemHBM {
		p.hbm = src
		if dst.Mem == isa.MemHBM {
			p.hbm2 = dst
		}
	} else if dst.Mem == isa.MemHBM {
		p.hbm, p.hbmWrite = dst, true
	}
	p.srcChip, p.dstChip = d.cfg.Chip, d.cfg.Chip
	if src.Mem == isa.MemHBM {
		p.srcChip = src.Chip
	}
	if dst.Mem == isa.MemHBM {
		p.dstChip = dst.Chip
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
	switch in.Op {
	case isa.OpDMAGather:
		// The source is the whole table; only the gathered rows move.
		total = dst.Bytes()
	case isa.OpDMAScatter:
		total = src.Bytes()
	}
	p.rowBytes = (total + p.rows - 1) / p.rows
	p.hbmRowBytes = p.rowBytes
	if p.hbm != nil && in.Op != isa.OpDMAGather && in.Op != isa.OpDMAScatter {
		p.hbmRowBytes = (p.hbm.Bytes() + p.rows - 1) / p.rows
	}
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

// hbmOf returns a chip's HBM.
func (d *Subsystem) hbmOf(chip int32) *memory.HBM {
	if chip == d.cfg.Chip || d.env.HBMOf == nil {
		return d.env.HBM
	}
	return d.env.HBMOf(chip)
}

// fabricOf sets the transfer's fabric latency and destination chip and
// returns the links its data crosses.
func (d *Subsystem) fabricOf(p *plan, t *transfer) (*noc.Route, error) {
	dstChip := p.dstChip
	via := &t.in.Attrs
	if !via.Via || t.in.Op != isa.OpDMACopy {
		via = nil
	} else {
		dstChip = via.ViaChip
	}
	t.latency, t.dstChip = 0, dstChip
	f := d.env.Fabric
	if f == nil {
		return nil, nil
	}
	var route *noc.Route
	if p.srcChip != dstChip {
		r, err := f.Route(int(p.srcChip), int(dstChip))
		if err != nil {
			return nil, err
		}
		route = r
		t.latency = r.Latency
	}
	// An HBM side on this chip in a stack that is not the core's own is
	// reached over the on-chip fabric; a Via transfer's destination side
	// is the Via core's stack.
	if d.cfg.LocalStack >= 0 && d.env.HBM != nil {
		written := p.hbm2
		if p.hbm != nil && p.hbmWrite {
			written = p.hbm
		}
		for _, ap := range []*isa.AccessPattern{p.hbm, p.hbm2} {
			if ap == nil {
				continue
			}
			chip, stack := ap.Chip, d.env.HBM.StackOf(ap.Offset)
			if via != nil && ap == written {
				chip, stack = via.ViaChip, d.stackOfCore(via.ViaCore)
			}
			if chip == d.cfg.Chip && stack != d.cfg.LocalStack {
				t.latency += f.NoCLatency()
				break
			}
		}
	}
	return route, nil
}

// Submit queues a transfer triggered at time trigger by an agent whose
// clock is vc.
func (d *Subsystem) Submit(in *isa.Instruction, trigger clock.Time, vc memory.VClock) error {
	return d.SubmitDecoded(in, isa.AppendSpans(nil, in.Body), trigger, vc)
}

// SubmitDecoded is Submit with the on-chip spans of the transfer's
// operands given (isa.Decoded.Spans), as the sequencers have them.
func (d *Subsystem) SubmitDecoded(in *isa.Instruction, spans []isa.Span, trigger clock.Time, vc memory.VClock) error {
	q := in.Attrs.Queue
	qvc := d.queueVC[q]
	if d.env.Race != nil {
		agent := d.env.Clocks.Entry(d.cfg.AgentBase + int(q))
		// Happens-before is tracked only for the race detector.
		d.env.Clocks.Join(qvc, vc)
		d.env.Clocks.Tick(qvc, agent)
		if err := d.env.Race.CheckSpans(in, spans, agent, d.queueNames[q], qvc, d.env.Describe); err != nil {
			return err
		}
		if err := d.env.Race.CheckHBM(in, agent, d.queueNames[q], qvc, d.env.Describe); err != nil {
			return err
		}
	}
	if a := &in.Attrs; a.Via && in.Op == isa.OpDMACopy {
		per := int32(max(d.cfg.CoresPerChip, 1))
		if a.ViaCore < 0 || a.ViaCore >= per || a.MirrorCore < 0 || a.MirrorCore >= per || a.MirrorChip < 0 {
			return fmt.Errorf("via=%d.%d mirror=%d.%d: a chip has cores 0 to %d", a.ViaChip, a.ViaCore, a.MirrorChip, a.MirrorCore, per-1)
		}
		if f := d.env.Fabric; f != nil {
			for i := 0; i+1 < len(a.LinkImages); i += 2 {
				if _, err := f.Route(int(a.LinkImages[i]), int(a.LinkImages[i+1])); err != nil {
					return fmt.Errorf("images=%d.%d: %w", a.LinkImages[i], a.LinkImages[i+1], err)
				}
			}
		}
	}
	p := d.plan(in)
	ready := trigger + d.cfg.StartLatency
	if d.cfg.CollectiveOverhead > 0 && d.env.IsCollective != nil && in.OpID != 0 && d.env.IsCollective(in.OpID) {
		if d.collGate == nil {
			d.collGate = map[int32]clock.Time{}
		}
		gate, ok := d.collGate[in.OpID]
		if !ok {
			gate = trigger + d.cfg.StartLatency + d.cfg.CollectiveOverhead
			d.collGate[in.OpID] = gate
		}
		ready = clock.Max(ready, gate)
	}
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
	t := d.newTransfer()
	t.in, t.queue, t.ready, t.sharesLeft = in, q, ready, d.cfg.Engines
	t.unposted, t.unpostedAt = 0, 0
	t.deferred, t.deferredAt, t.retired = 0, 0, false
	route, err := d.fabricOf(&p, t)
	if err != nil {
		return err // the sequencer names the instruction
	}
	hbm1, hbm2 := d.hbmOf(p.srcChip), d.hbmOf(p.dstChip)
	if p.hbm != nil && p.hbmWrite {
		hbm1 = hbm2
	}
	rmw := in.Op == isa.OpDMACopy && in.Attrs.Accumulate != isa.ALUNone
	d.order[q].push(t)
	if d.env.Race != nil {
		copy(t.vc, qvc)
	}
	d.outstanding[q]++
	d.Stats.Transfers++
	d.Stats.QueueTransfers[q]++
	d.Stats.Bytes += in.Outs[0].AP.Bytes()
	now := d.env.Now()
	mirrorBase, apart := -1, false
	if a := &in.Attrs; a.Via && in.Op == isa.OpDMACopy {
		per := max(d.cfg.CoresPerChip, 1)
		mirrorBase = (int(a.MirrorChip)*per + int(a.MirrorCore)) * d.cfg.Engines
		apart = a.ViaChip != d.cfg.Chip || d.cfg.LocalStack < 0 || d.stackOfCore(a.ViaCore) != d.cfg.LocalStack
	}
	shareOf := func(e int, sh *share) {
		lo, hi := d.rowsOfEngine(&p, e)
		*sh = share{t: t, eff: p.eff, mult: 1, mirrorBase: mirrorBase, apart: apart}
		if hi > lo {
			rows := hi - lo
			sh.bytes = rows * p.rowBytes
			sh.descs = rows * p.descsRow
			sh.route = route
			if p.hbm != nil {
				sh.hbmBytes = rows * p.hbmRowBytes
				sh.hbmWrite = p.hbmWrite
				sh.hbmAddr = p.hbm.Offset + lo*p.hbm.PartStride*int64(p.hbm.DType.Bytes())
				sh.hbmMem = hbm1
				sh.hbmRMW = rmw && p.hbmWrite
			}
			if p.hbm2 != nil {
				sh.hbm2Bytes = rows * ((p.hbm2.Bytes() + p.rows - 1) / p.rows)
				sh.hbm2Addr = p.hbm2.Offset + lo*p.hbm2.PartStride*int64(p.hbm2.DType.Bytes())
				sh.hbm2Mem = hbm2
				sh.hbmRMW = rmw
			}
		}
	}
	// A transfer over every partition (or, HBM to HBM, a row count the
	// engines divide) gives every engine the same share.
	n := int64(len(d.engines))
	symmetric := (p.onChip != nil && int(p.onChip.PartStart) == 0 && p.rows == int64(d.cfg.Partitions)) ||
		(p.onChip == nil && p.rows%n == 0)
	if d.lockstep && symmetric {
		// Engine 0 carries every engine's share.
		t.shares = t.shares[:1]
		sh := &t.shares[0]
		shareOf(0, sh)
		sh.mult = len(d.engines)
		d.enqueue(d.engines[0], q, sh)
	} else {
		if d.lockstep {
			d.split()
		}
		t.shares = t.shares[:len(d.engines)]
		slab := t.shares
		for e, eng := range d.engines {
			shareOf(e, &slab[e])
			d.enqueue(eng, q, &slab[e])
		}
	}
	d.update(now)
	return nil
}

func (d *Subsystem) enqueue(eng *Engine, q int16, sh *share) {
	eng.queues[q].push(sh)
	eng.queued++
	eng.ready |= 1 << q
	eng.dirty = true
}

// split leaves lockstep: engine 0's shares, which stood for every engine,
// are copied to the other engines, and the statistics mirrored so far are
// credited to them.
func (d *Subsystem) split() {
	d.lockstep = false
	e0 := d.engines[0]
	for _, eng := range d.engines[1:] {
		for q := range e0.queues {
			for _, sh := range e0.queues[q].live() {
				c := *sh
				c.mult = 1
				eng.queues[q].push(&c)
			}
			if sh := e0.active[q]; sh != nil {
				c := *sh
				c.mult = 1
				c.eng = eng
				eng.active[q] = &c
				if now := d.env.Now(); c.start == now {
					// Started now: rescaled with the others of now.
					c.eachStack(func(h *memory.HBM, st int) { d.flushLater(h, h.Started(st, now, &c), now) })
				}
			}
		}
		eng.activeQs = append(eng.activeQs[:0], e0.activeQs...)
		eng.queued, eng.ready, eng.last, eng.busySince = e0.queued, e0.ready, e0.last, e0.busySince
		eng.nextAt, eng.dirty = e0.nextAt, true
	}
	for q := range e0.queues {
		for _, sh := range e0.queues[q].live() {
			sh.mult = 1
		}
		if sh := e0.active[q]; sh != nil {
			sh.mult = 1
		}
	}
	d.creditMirror()
}

// creditMirror adds the statistics engine 0 gathered in lockstep to the
// other engines.
func (d *Subsystem) creditMirror() {
	m := d.mirror
	for e := 1; e < len(d.Stats.Engines); e++ {
		st := &d.Stats.Engines[e]
		st.Shares += m.Shares
		st.Bytes += m.Bytes
		st.Active += m.Active
		st.FirstByte = clock.Min(st.FirstByte, m.FirstByte)
		st.LastByte = clock.Max(st.LastByte, m.LastByte)
	}
	d.mirror = EngineStats{FirstByte: clock.Never}
}

// FinalStats returns the statistics with every engine credited.
func (d *Subsystem) FinalStats() Stats {
	d.creditMirror()
	return d.Stats
}

// finish completes one engine's share of a transfer at time end.
//
// Semaphore updates of shares of one transfer that finish at the same time
// are posted together (one increment of n rather than n of one) when the
// update that retired them ends: the same values at the same times, fewer
// board operations.
//
// A queue's semaphore counts its transfers in order: the updates of a
// share whose transfer is not the oldest unfinished one of its queue are
// held back until every earlier transfer has completed. Each engine serves
// a queue in order, so this only matters when engines carry unequal shares
// (an engine with no rows of a transfer finishes at once); without it,
// early updates of a later transfer could make a count reach 16 k before
// transfer k has completed on every engine.
func (d *Subsystem) finish(sh *share, end clock.Time) {
	t := sh.t
	at := end + d.cfg.CompletionLatency + t.latency
	if d.order[t.queue].front() != t {
		t.deferred += int64(sh.mult)
		t.deferredAt = clock.Max(t.deferredAt, at)
	} else {
		d.addUnposted(t, int64(sh.mult), at)
	}
	if at > d.Stats.LastCompletion {
		d.Stats.LastCompletion = at
	}
	t.sharesLeft -= sh.mult
	if t.sharesLeft == 0 {
		q := t.queue
		d.outstanding[q]--
		if w := d.queueWait[q]; len(w) > 0 {
			d.queueWait[q] = nil
			for _, wake := range w {
				wake(d.now)
			}
		}
		if d.order[q].front() == t {
			d.retire(q, at)
		}
	}
}

// addUnposted adds n semaphore updates of t that take effect at at.
func (d *Subsystem) addUnposted(t *transfer, n int64, at clock.Time) {
	if t.unposted > 0 && t.unpostedAt != at {
		d.post(t)
	}
	if t.unposted == 0 {
		d.touched = append(d.touched, t)
	}
	t.unposted += n
	t.unpostedAt = at
}

// retire removes queue q's oldest transfer, complete at time at, and
// releases the updates held back for the transfers after it, retiring
// those that have completed too.
func (d *Subsystem) retire(q int16, at clock.Time) {
	f := &d.order[q]
	for {
		t := f.front()
		t.retired = true
		f.pop()
		d.touched = append(d.touched, t) // to be freed once posted
		h := f.front()
		if h == nil {
			return
		}
		if h.deferred > 0 {
			released := clock.Max(h.deferredAt, at)
			d.addUnposted(h, h.deferred, released)
			h.deferred = 0
			at = released
		}
		if h.sharesLeft > 0 {
			return
		}
	}
}

// transferFIFO is one queue's transfers in submission order.
type transferFIFO = fifo[*transfer]

// fifo is a queue of items from index head on; the spent prefix is
// reclaimed when the queue empties or must grow.
type fifo[T any] struct {
	items []T
	head  int
}

func (f *fifo[T]) len() int  { return len(f.items) - f.head }
func (f *fifo[T]) live() []T { return f.items[f.head:] }

// front returns the oldest item, or the zero value when there is none.
func (f *fifo[T]) front() T {
	if f.head < len(f.items) {
		return f.items[f.head]
	}
	var zero T
	return zero
}

func (f *fifo[T]) push(t T) {
	if f.head > 0 && len(f.items) == cap(f.items) {
		n := copy(f.items, f.items[f.head:])
		clear(f.items[n:])
		f.items, f.head = f.items[:n], 0
	}
	f.items = append(f.items, t)
}

func (f *fifo[T]) pop() {
	var zero T
	f.items[f.head] = zero
	f.head++
	if f.head == len(f.items) {
		f.items, f.head = f.items[:0], 0
	}
}

// post writes a transfer's pending semaphore updates.
func (d *Subsystem) post(t *transfer) {
	for _, sg := range t.in.Signal {
		var vc memory.VClock
		if d.env.Race != nil {
			vc = t.vc
		}
		at := t.unpostedAt
		if f := d.env.Fabric; f != nil && (sg.Sem.Chip != d.cfg.Chip || sg.Sem.Core != d.cfg.Core) {
			// The update follows the data: from the chip it landed on to
			// the semaphore's core. A transfer's own queue semaphore counts
			// it when its data has landed (at already has the data's way):
			// the scheduler's cross-core waits read the writer's count,
			// which stands for the hardware's semaphore write to the
			// waiting core travelling with the data, so a dependency pays
			// the fabric's latency once.
			from := d.cfg.Core
			if t.dstChip != d.cfg.Chip {
				from = -1
			}
			lat, err := f.PostLatency(t.dstChip, from, sg.Sem.Chip, sg.Sem.Core)
			if err != nil {
				d.env.Fail(fmt.Errorf("%s: signal s%d@%d.%d: %w", d.env.Describe(t.in), sg.Sem.ID, sg.Sem.Chip, sg.Sem.Core, err))
				break
			}
			at += lat
		}
		if err := d.env.Post(sg.Sem, at, sg.Add*t.unposted, vc); err != nil {
			d.env.Fail(err)
			break
		}
	}
	t.unposted = 0
}

// flush posts every pending semaphore update.
func (d *Subsystem) flush() {
	for i, t := range d.touched {
		if t.unposted > 0 {
			d.post(t)
		}
		if t.sharesLeft == 0 && t.retired && t.unposted == 0 && !t.free {
			// Every share has finished and posted, and the transfer has left
			// its queue's order: nothing refers to it any more (a transfer
			// may be listed twice).
			t.free, t.in = true, nil
			d.freeXfers = append(d.freeXfers, t)
		}
		d.touched[i] = nil
	}
	d.touched = d.touched[:0]
}

// Engine is one DMA engine: 16 queues whose head shares it serves together.
// The engines of a core are brought up to date together by their Subsystem,
// which schedules one Akita event for the earliest change among them: the
// shares of one transfer usually start and finish at the same time on every
// engine, so a transfer costs about two events rather than two per engine.
type Engine struct {
	sub    *Subsystem
	index  int
	queues []shareFIFO
	queued int    // shares waiting in queues
	ready  uint64 // bit q set: queue q has waiting shares
	// nextAt is the engine's next change; dirty marks a new share.
	nextAt clock.Time
	dirty  bool
	// active[q] is the share of queue q being served (nil: none); activeQs
	// lists those queues.
	active   []*share
	activeQs []int
	last     clock.Time // when remaining works were last brought up to date
	// busySince is when the engine last went from idle to busy.
	busySince clock.Time
}

// Handle brings the engines up to date at the event's time.
func (d *Subsystem) Handle(ev sim.Event) error {
	we, ok := d.events.Handled(ev)
	if !ok || we.Gen != d.gen {
		return nil
	}
	if d.env.Event != nil {
		d.env.Event(we.At)
	}
	if d.env.Failed() {
		return nil
	}
	d.pending = clock.Never
	d.update(we.At)
	return nil
}

// update brings every engine with work up to date and schedules the next
// event.
func (d *Subsystem) update(now clock.Time) {
	d.now = now
	next := clock.Never
	engines := d.engines
	if d.lockstep {
		// Engine 0 carries every engine's work; the others are idle.
		engines = engines[:1]
	}
	d.updating = true
	for pass := true; pass; {
		next = clock.Never
		for _, e := range engines {
			if e.dirty || e.nextAt <= now {
				e.dirty = false
				e.nextAt = e.update(now)
				if d.env.Failed() {
					d.updating = false
					return
				}
			}
			next = clock.Min(next, e.nextAt)
		}
		// A share rescaled during the pass (poke) may end sooner.
		pass, d.repoke = d.repoke, false
	}
	d.updating = false
	d.flush()
	if !d.lockstep && len(d.engines) > 1 {
		idle := true
		for _, e := range d.engines {
			if len(e.activeQs) > 0 || e.queued > 0 {
				idle = false
				break
			}
		}
		// Every engine has drained: they are identical again.
		d.lockstep = idle
	}
	if next != clock.Never && next != d.pending {
		d.gen++
		d.pending = next
		d.events.Schedule(d.env.Engine, next, d.gen)
	}
}

// servedClass returns the QoS class being served (-1: every active share).
func (e *Engine) servedClass() int {
	classes := e.sub.cfg.QoSClasses
	if classes <= 0 {
		return -1
	}
	best := -1
	for _, q := range e.activeQs {
		if best < 0 || q%classes < best {
			best = q % classes
		}
	}
	return best
}

func (e *Engine) isServed(q, class int) bool {
	return class < 0 || q%e.sub.cfg.QoSClasses == class
}

// servedCount returns how many active shares are being served.
func (e *Engine) servedCount(class int) int {
	if class < 0 {
		return len(e.activeQs)
	}
	n := 0
	for _, q := range e.activeQs {
		if e.isServed(q, class) {
			n++
		}
	}
	return n
}

// advance charges the time since the last update to the served shares.
func (e *Engine) advance(now clock.Time) {
	if now <= e.last {
		return
	}
	if len(e.activeQs) > 0 {
		class := e.servedClass()
		per := float64(now-e.last) / float64(e.servedCount(class))
		for _, q := range e.activeQs {
			if e.isServed(q, class) {
				e.active[q].remaining -= per
			}
		}
	}
	e.last = now
}

// update completes finished shares, starts ready ones and returns the time
// of the engine's next change (or Never).
func (e *Engine) update(now clock.Time) clock.Time {
	d := e.sub
	e.advance(now)
	// Complete shares whose work is done (half a femtosecond of rounding).
	if len(e.activeQs) > 0 {
		kept := e.activeQs[:0]
		done := d.scratch[:0]
		for _, q := range e.activeQs {
			if sh := e.active[q]; sh.remaining <= 0.5 {
				e.active[q] = nil
				done = append(done, sh)
			} else {
				kept = append(kept, q)
			}
		}
		e.activeQs = kept
		if len(kept) == 0 && len(done) > 0 {
			// The engine goes idle: its busy period counts once, however
			// many shares finish together (equal shares of queues served
			// side by side do).
			for _, st := range d.statsOf(e, done[len(done)-1]) {
				st.Active += now - e.busySince
			}
		}
		for i, sh := range done {
			e.retire(sh, now)
			done[i] = nil
			if d.env.Failed() {
				return clock.Never
			}
		}
		d.scratch = done[:0]
	}
	// Start the head of every idle queue that is ready; shares that move
	// no bytes only write their semaphore update, in queue order.
	next := clock.Never
	if e.queued > 0 {
		for bits := e.ready; bits != 0; bits &= bits - 1 {
			q := bits2q(bits)
			for e.active[q] == nil && e.queues[q].len() > 0 {
				sh := e.queues[q].front()
				if sh.bytes == 0 {
					e.pop(q)
					d.finish(sh, clock.Max(now, sh.t.ready))
					if d.env.Failed() {
						return clock.Never
					}
					continue
				}
				if sh.t.ready > now {
					next = clock.Min(next, sh.t.ready)
					break
				}
				e.pop(q)
				e.activate(q, sh, now)
			}
		}
	}
	// Next completion at the current sharing.
	if len(e.activeQs) > 0 {
		class := e.servedClass()
		n := float64(e.servedCount(class))
		for _, q := range e.activeQs {
			if e.isServed(q, class) {
				next = clock.Min(next, now+clock.Time(math.Ceil(e.active[q].remaining*n)))
			}
		}
	}
	return next
}

// shareFIFO is one queue's waiting shares.
type shareFIFO = fifo[*share]

func (e *Engine) pop(q int) {
	e.queues[q].pop()
	e.queued--
	if e.queues[q].len() == 0 {
		e.ready &^= 1 << q
	}
}

// bits2q returns the index of the lowest set bit.
func bits2q(b uint64) int { return bits.TrailingZeros64(b) }

// activate starts serving sh from queue q at time now.
func (e *Engine) activate(q int, sh *share, now clock.Time) {
	d := e.sub
	work := float64(sh.descs)*float64(d.cfg.DescriptorOverhead) + float64(sh.bytes)*d.fsPerByte/sh.eff
	sh.stack, sh.stack2 = -1, -1
	latency := clock.Time(0)
	// A share cannot outrun its part of the HBM stacks it touches: each
	// pass of its bytes through a stack (the read, the write, the read of
	// a read-modify-write) counts.
	passes1, passes2 := 0, 0
	if sh.hbmBytes > 0 && sh.hbmMem != nil {
		sh.stack, _ = sh.hbmMem.BeginEngines(sh.hbmAddr, sh.hbmBytes, sh.hbmWrite, sh.hbmID(d, e.index), sh.mult, d.cfg.EngineGBps)
		latency = sh.hbmMem.Latency()
		passes1 = 1
		if sh.hbmRMW && sh.hbmWrite {
			// The read of a read-modify-write.
			sh.hbmMem.ReadBytes += sh.hbmBytes * int64(sh.mult)
			passes1++
		}
	}
	if sh.hbm2Bytes > 0 && sh.hbm2Mem != nil {
		sh.stack2, _ = sh.hbm2Mem.BeginEngines(sh.hbm2Addr, sh.hbm2Bytes, true, sh.writeID(d, e.index), sh.mult, d.cfg.EngineGBps)
		latency = max(latency, sh.hbm2Mem.Latency())
		passes2 = 1
		if sh.hbmRMW {
			sh.hbm2Mem.ReadBytes += sh.hbm2Bytes * int64(sh.mult)
			passes2++
		}
	}
	sh.eng, sh.q, sh.work0, sh.lat, sh.passes1, sh.passes2, sh.linkSlow = e, q, work, latency, int8(passes1), int8(passes2), 1
	if sh.route != nil && work > 0 {
		// Nor the links on its way: they are booked in order, and the
		// share ends no sooner than its bytes have crossed them.
		// Bookings of one time share the links (noc.Fabric.Defer): the
		// share learns its end once every booking of now is made, and is
		// rescaled to it.
		f := d.env.Fabric
		bytes := sh.bytes * int64(sh.mult)
		t, qq, w := sh.t, q, sh.work0
		flush := f.Defer(sh.route, now, bytes, func(end clock.Time) {
			// The share, and its copies on the other engines if the
			// engines split since (split): every engine's part ends then.
			slow := float64(end-now) / w
			for _, eng := range d.engines {
				if s := eng.active[qq]; s != nil && s.t == t && s.start == now {
					s.linkSlow = slow
					s.Rescale(now)
				}
			}
		})
		// The images of a transfer that stands for others' (symmetric-core
		// reuse) load their routes' links as their own bytes would.
		if a := &sh.t.in.Attrs; a.Via {
			for i := 0; i+1 < len(a.LinkImages); i += 2 {
				if r, err := f.Route(int(a.LinkImages[i]), int(a.LinkImages[i+1])); err == nil {
					flush = f.Defer(r, now, bytes, nil) || flush
				}
			}
		}
		if flush {
			d.env.Engine.Schedule(eventpool.NewCall(now, f.Flush))
		}
	}
	sh.slow = max(1, sh.linkSlow, sh.hbmSlow())
	if sh.slow != 1 || latency != 0 {
		work = work*sh.slow + float64(latency)
	}
	sh.eachStack(func(h *memory.HBM, st int) { d.flushLater(h, h.Started(st, now, sh), now) })
	sh.start = now
	sh.remaining = math.Round(work)
	if len(e.activeQs) == 0 {
		e.busySince = now
	}
	e.active[q] = sh
	e.activeQs = append(e.activeQs, q)
	for _, st := range d.statsOf(e, sh) {
		st.Shares++
		st.Bytes += sh.bytes
		if now < st.FirstByte {
			st.FirstByte = now
		}
	}
}

// statsOf returns the statistics a share of engine e updates: its own, and
// the mirror when it stands for other engines too.
func (d *Subsystem) statsOf(e *Engine, sh *share) []*EngineStats {
	d.statsBuf[0] = &d.Stats.Engines[e.index]
	if sh.mult > 1 {
		d.statsBuf[1] = &d.mirror
		return d.statsBuf[:2]
	}
	return d.statsBuf[:1]
}

// flushLater schedules the HBM's Flush at now, after everything else of
// that time, where Started or Ended asked for it (need).
func (d *Subsystem) flushLater(h *memory.HBM, need bool, now clock.Time) {
	if need {
		d.env.Engine.Schedule(eventpool.NewCall(now, h.Flush))
	}
}

// retire records a finished share and signals its transfer.
func (e *Engine) retire(sh *share, now clock.Time) {
	d := e.sub
	if sh.stack >= 0 {
		sh.hbmMem.EndEngines(sh.stack, sh.hbmID(d, e.index), sh.mult)
	}
	if sh.stack2 >= 0 {
		sh.hbm2Mem.EndEngines(sh.stack2, sh.writeID(d, e.index), sh.mult)
	}
	sh.eachStack(func(h *memory.HBM, st int) { d.flushLater(h, h.Ended(st, now), now) })

	for _, st := range d.statsOf(e, sh) {
		if now > st.LastByte {
			st.LastByte = now
		}
	}
	if d.env.Tracer != nil {
		d.env.Tracer.DMA(d.cfg.Chip, d.cfg.Core, e.index, sh.mult, sh.t.queue, sh.t.in, sh.bytes, sh.start, now)
	}
	d.finish(sh, now)
}

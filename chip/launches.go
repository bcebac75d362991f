package chip

import (
	"fmt"
	"sort"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/dma"
	"github.com/trnsim/trnsim/engines"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/noc"
	"github.com/trnsim/trnsim/opstats"
)

// Launches is a sequence of programs that run one after another on the
// same hardware, each launched once the one before has finished (every
// engine and DMA queue idle), as the Neuron runtime runs a decode's steps:
// First runs first, and Next(i) makes the i-th (1 <= i < N) once the one
// before it has run, so that one program at a time is held.
type Launches struct {
	N     int
	First *isa.Program
	Next  func(i int) (*isa.Program, error)
	// OnLaunch, if set, is called with each program just before it runs
	// (a trace writer that prints instructions follows it).
	OnLaunch func(i int, prog *isa.Program)
}

// RunLaunches simulates the launches on the hardware of cfg, each on a
// system of its own that starts when the one before ends (launches are
// back to back: the runtime's overhead per launch is the report's to
// add). The result is theirs together: simulated time runs on from one
// launch to the next (the tracer, the progress and the observers see it
// so), counts, bytes, busy and stall times add up (the host time too:
// the simulations', not Next's), and the op figures add up by op id (the
// launches' programs share op ids). An error names the launch it stopped.
func RunLaunches(cfg *configs.RunConfig, l Launches, opts Options) (*Result, error) {
	if l.N < 1 || l.First == nil || (l.N > 1 && l.Next == nil) {
		return nil, fmt.Errorf("internal error: %d launches, first %v", l.N, l.First != nil)
	}
	if opts.Progress != nil && opts.ProgressEvery > 0 && l.N > 1 {
		// One count over all the launches (each may be shorter than
		// ProgressEvery), its times shifted as every observer's.
		po := &engines.ProgressObserver{Every: opts.ProgressEvery, Report: opts.Progress}
		opts.Observers = append(opts.Observers[:len(opts.Observers):len(opts.Observers)], po)
		opts.Progress = nil
	}
	var total *Result
	var off clock.Time
	var done int64
	for i := 0; i < l.N; i++ {
		prog := l.First
		if i > 0 {
			p, err := l.Next(i)
			if err != nil {
				return nil, fmt.Errorf("launch %d of %d: %w", i+1, l.N, err)
			}
			prog = p
		}
		if l.OnLaunch != nil {
			l.OnLaunch(i, prog)
		}
		res, err := Run(cfg, prog, shifted(opts, off, done))
		if err != nil {
			if l.N == 1 {
				return nil, err
			}
			return nil, fmt.Errorf("launch %d of %d: %w", i+1, l.N, err)
		}
		if total == nil {
			total = res
		} else {
			total.add(res, off)
		}
		off = total.SimTime
		done = total.Instructions
	}
	return total, nil
}

// shifted returns opts with what watches the run seeing times off later
// and instruction counts done more.
func shifted(opts Options, off clock.Time, done int64) Options {
	if off == 0 && done == 0 {
		return opts
	}
	if opts.Tracer != nil {
		opts.Tracer = offsetTracer{opts.Tracer, off}
	}
	if p := opts.Progress; p != nil {
		opts.Progress = func(n int64, now clock.Time) { p(done+n, off+now) }
	}
	if len(opts.Observers) > 0 {
		obs := make([]engines.Observer, len(opts.Observers))
		for i, o := range opts.Observers {
			obs[i] = offsetObserver{o, off}
		}
		opts.Observers = obs
	}
	return opts
}

// offsetTracer passes the timeline on, off later.
type offsetTracer struct {
	next Tracer
	off  clock.Time
}

func (t offsetTracer) Instruction(chip, core int32, eng isa.Engine, in *isa.Instruction, start, end clock.Time) {
	t.next.Instruction(chip, core, eng, in, start+t.off, end+t.off)
}

func (t offsetTracer) Wait(chip, core int32, eng isa.Engine, in *isa.Instruction, sem isa.SemRef, start, end clock.Time) {
	t.next.Wait(chip, core, eng, in, sem, start+t.off, end+t.off)
}

func (t offsetTracer) DMA(chip, core int32, engine, n int, queue int16, in *isa.Instruction, bytes int64, start, end clock.Time) {
	t.next.DMA(chip, core, engine, n, queue, in, bytes, start+t.off, end+t.off)
}

// offsetObserver passes commits on, off later.
type offsetObserver struct {
	next engines.Observer
	off  clock.Time
}

func (o offsetObserver) Committed(c *engines.Commit) {
	s := *c
	s.Start, s.End, s.Completion, s.Now = s.Start+o.off, s.End+o.off, s.Completion+o.off, s.Now+o.off
	if s.SemWaitFrom >= 0 {
		s.SemWaitFrom, s.SemWaitTo = s.SemWaitFrom+o.off, s.SemWaitTo+o.off
	}
	o.next.Committed(&s)
}

// add folds o, a launch that started at off, into r.
func (r *Result) add(o *Result, off clock.Time) {
	r.SimTime = off + o.SimTime
	r.LaunchTimes = append(r.LaunchTimes, o.SimTime)
	r.Instructions += o.Instructions
	r.Events += o.Events
	r.HostTime += o.HostTime
	r.dmaTime += o.dmaTime
	r.dmaWithCompute += o.dmaWithCompute
	r.DMAComputeOverlapPct = 0
	if r.dmaTime > 0 {
		r.DMAComputeOverlapPct = 100 * float64(r.dmaWithCompute) / float64(r.dmaTime)
	}
	r.CommTime += o.CommTime
	r.ExposedCommTime += o.ExposedCommTime
	ran := map[[2]int32]bool{}
	for _, oc := range o.Chips {
		rc := r.chip(oc.Chip)
		rc.HBMReadBytes += oc.HBMReadBytes
		rc.HBMWriteBytes += oc.HBMWriteBytes
		for _, core := range oc.Cores {
			c, created := rc.core(core.Core)
			if created {
				// (Idle in every launch before: it ran nothing.)
				for e := range c.Engines {
					c.Engines[e].Idle = off
				}
			}
			c.add(&core, off)
			ran[[2]int32{oc.Chip, core.Core}] = true
		}
	}
	// A core this launch did not run was idle all of it.
	for i := range r.Chips {
		for j := range r.Chips[i].Cores {
			if c := &r.Chips[i].Cores[j]; !ran[[2]int32{r.Chips[i].Chip, c.Core}] {
				for e := range c.Engines {
					c.Engines[e].Idle += o.SimTime
				}
			}
		}
	}
	r.Ops = addOps(r.Ops, o.Ops, off)
	r.allLinks = addLinks(r.allLinks, o.allLinks)
	r.Links = usedLinks(r.allLinks)
}

// chip returns r's chip id, added in order if it has none.
func (r *Result) chip(id int32) *ChipResult {
	i := 0
	for ; i < len(r.Chips) && r.Chips[i].Chip < id; i++ {
	}
	if i == len(r.Chips) || r.Chips[i].Chip != id {
		r.Chips = append(r.Chips, ChipResult{})
		copy(r.Chips[i+1:], r.Chips[i:])
		r.Chips[i] = ChipResult{Chip: id}
	}
	return &r.Chips[i]
}

// core returns the chip's core id, added in order if it has none
// (created).
func (c *ChipResult) core(id int32) (core *CoreResult, created bool) {
	i := 0
	for ; i < len(c.Cores) && c.Cores[i].Core < id; i++ {
	}
	if i == len(c.Cores) || c.Cores[i].Core != id {
		c.Cores = append(c.Cores, CoreResult{})
		copy(c.Cores[i+1:], c.Cores[i:])
		c.Cores[i] = CoreResult{Chip: c.Chip, Core: id}
		for e := range c.Cores[i].Engines {
			c.Cores[i].Engines[e].Engine = isa.Engine(e)
		}
		created = true
	}
	return &c.Cores[i], created
}

// add folds o, a launch's figures of the core that started at off, into c.
func (c *CoreResult) add(o *CoreResult, off clock.Time) {
	for e := range c.Engines {
		ce, oe := &c.Engines[e], &o.Engines[e]
		extend(&ce.FirstStart, &ce.LastEnd, ce.Instructions > 0, oe.Instructions > 0, oe.FirstStart, oe.LastEnd, off)
		ce.Instructions += oe.Instructions
		ce.Busy += oe.Busy
		ce.Idle += oe.Idle
		for i := range ce.Stall {
			ce.Stall[i] += oe.Stall[i]
		}
		ce.FLOPs += oe.FLOPs
		for i := range ce.MatmulFLOPs {
			ce.MatmulFLOPs[i] += oe.MatmulFLOPs[i]
		}
		for i := range ce.OpCounts {
			ce.OpCounts[i] += oe.OpCounts[i]
		}
	}
	c.PeakSBUFBytes = max(c.PeakSBUFBytes, o.PeakSBUFBytes)
	c.PeakPSUMBytes = max(c.PeakPSUMBytes, o.PeakPSUMBytes)
	d, od := &c.DMA, &o.DMA
	if od.Transfers > 0 {
		d.LastCompletion = od.LastCompletion + off
	}
	d.Transfers += od.Transfers
	d.Bytes += od.Bytes
	for len(d.QueueTransfers) < len(od.QueueTransfers) {
		d.QueueTransfers = append(d.QueueTransfers, 0)
	}
	for i, n := range od.QueueTransfers {
		d.QueueTransfers[i] += n
	}
	for len(d.Engines) < len(od.Engines) {
		d.Engines = append(d.Engines, dma.EngineStats{})
	}
	for i := range od.Engines {
		de, oe := &d.Engines[i], od.Engines[i]
		extend(&de.FirstByte, &de.LastByte, de.Shares > 0, oe.Shares > 0, oe.FirstByte, oe.LastByte, off)
		de.Shares += oe.Shares
		de.Bytes += oe.Bytes
		de.Active += oe.Active
	}
}

// extend moves the bounds first and last of what ran before (had: some
// did) over a launch's, oFirst and oLast from its start at off (has: some
// ran in it).
func extend(first, last *clock.Time, had, has bool, oFirst, oLast, off clock.Time) {
	if !has {
		return
	}
	if !had {
		*first = oFirst + off
	}
	*last = oLast + off
}

// addOps folds the ops of a launch that started at off into ops, by id.
func addOps(ops, more []opstats.Op, off clock.Time) []opstats.Op {
	at := make(map[int32]int, len(ops))
	for i, o := range ops {
		at[o.ID] = i
	}
	for _, m := range more {
		if m.Start != clock.Never {
			m.Start += off
		}
		if m.ComputeStart != clock.Never {
			m.ComputeStart += off
		}
		if m.End > 0 {
			m.End += off
		}
		i, ok := at[m.ID]
		if !ok {
			at[m.ID] = len(ops)
			ops = append(ops, m)
			continue
		}
		o := &ops[i]
		o.Instructions += m.Instructions
		o.FLOPs += m.FLOPs
		o.DMABytes += m.DMABytes
		o.HBMReadBytes += m.HBMReadBytes
		o.HBMWriteBytes += m.HBMWriteBytes
		o.Start = clock.Min(o.Start, m.Start)
		o.End = clock.Max(o.End, m.End)
		o.ComputeStart = clock.Min(o.ComputeStart, m.ComputeStart)
		for e := range o.Busy {
			o.Busy[e] += m.Busy[e]
			for c := range o.Stall[e] {
				o.Stall[e][c] += m.Stall[e][c]
			}
		}
		o.DMABusy += m.DMABusy
		o.Time += m.Time
		o.Span += m.Span
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].ID < ops[j].ID })
	return ops
}

// addLinks folds a launch's link figures into links: every launch runs
// on one config's fabric, so the lists are its links in the same order.
func addLinks(links, more []noc.LinkStats) []noc.LinkStats {
	for i := range min(len(links), len(more)) {
		links[i].Bytes += more[i].Bytes
		links[i].Shares += more[i].Shares
		links[i].Busy += more[i].Busy
	}
	return links
}

// Package opstats keeps statistics per workload op: counters per (chip,
// core, engine, op id) fed by the engines' commits and the DMA engines'
// shares, and the rule that splits the simulated time among ops. Reports
// and the GPU comparison read its figures to say which op is slow and why.
package opstats

import (
	"sort"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/engines"
	"github.com/trnsim/trnsim/isa"
)

// Counters are one (chip, core, engine, op)'s figures.
type Counters struct {
	Instructions int64
	// Busy is the union of the op's issue intervals on the engine.
	Busy clock.Time
	// Stall is the stall time charged to the op's instructions, by cause.
	Stall [engines.NumStallCauses]clock.Time
	// FirstStart and LastEnd bound the op's activity on the engine
	// (LastEnd includes completion latency).
	FirstStart, LastEnd clock.Time
	// FLOPs are TensorE's multiply-accumulates x 2.
	FLOPs   float64
	busyEnd clock.Time
}

// DMACounters are one (chip, core, op)'s transfers.
type DMACounters struct {
	// Bytes are the bytes the op's transfers wrote to their destinations;
	// HBMReadBytes and HBMWriteBytes the part read from or written to HBM.
	Bytes, HBMReadBytes, HBMWriteBytes int64
	// Busy is the time some DMA engine of the core moved the op's data
	// (the union of its shares' intervals).
	Busy clock.Time
	// FirstStart and LastEnd bound the op's data movement.
	FirstStart, LastEnd clock.Time
	open                unionTail
}

// Key names one engine's counters of one op.
type Key struct {
	Chip, Core int32
	Engine     isa.Engine
	Op         int32
}

// DMAKey names one core's DMA counters of one op.
type DMAKey struct {
	Chip, Core int32
	Op         int32
}

// Collector gathers the counters; it is an engines.Observer and a
// dma.Tracer. Not safe for concurrent use (one simulation runs its events
// in order).
type Collector struct {
	compute map[Key]*Counters
	dma     map[DMAKey]*DMACounters
	// last caches, per agent, the counters of its latest op: an engine
	// runs long stretches of one op.
	last []lastCounters
}

type lastCounters struct {
	op int32
	c  *Counters
}

// New returns an empty collector.
func New() *Collector {
	return &Collector{compute: map[Key]*Counters{}, dma: map[DMAKey]*DMACounters{}}
}

// Committed counts one engine instruction.
func (s *Collector) Committed(cm *engines.Commit) {
	op := cm.In.OpID
	for len(s.last) <= cm.Agent {
		s.last = append(s.last, lastCounters{op: -1})
	}
	l := &s.last[cm.Agent]
	c := l.c
	if c == nil || l.op != op {
		k := Key{cm.Chip, cm.Core, cm.Engine, op}
		c = s.compute[k]
		if c == nil {
			c = &Counters{FirstStart: clock.Never}
			s.compute[k] = c
		}
		l.op, l.c = op, c
	}
	c.Instructions++
	for i := 0; i < cm.NStalls; i++ {
		c.Stall[cm.Stalls[i].Cause] += cm.Stalls[i].Time
	}
	if cm.Start < c.FirstStart {
		c.FirstStart = cm.Start
	}
	if cm.Completion > c.LastEnd {
		c.LastEnd = cm.Completion
	}
	if cm.End > c.busyEnd {
		c.Busy += cm.End - clock.Max(cm.Start, c.busyEnd)
		c.busyEnd = cm.End
	}
	c.FLOPs += cm.Dec.FLOPs
	if in := cm.In; in.Op.IsDMA() && len(in.Outs) > 0 && len(in.Ins) > 0 {
		// The transfer's bytes, as the DMA statistics count them: the
		// destination's, and each side's that is in HBM.
		d := s.transfers(cm.Chip, cm.Core, op)
		dst, src := in.Outs[0].AP.Bytes(), in.Ins[0].AP.Bytes()
		d.Bytes += dst
		if in.Ins[0].AP.Mem == isa.MemHBM {
			d.HBMReadBytes += src
		}
		if in.Outs[0].AP.Mem == isa.MemHBM {
			d.HBMWriteBytes += dst
		}
	}
}

// transfers returns the DMA counters of (chip, core, op).
func (s *Collector) transfers(chip, core, op int32) *DMACounters {
	k := DMAKey{chip, core, op}
	c := s.dma[k]
	if c == nil {
		c = &DMACounters{FirstStart: clock.Never}
		s.dma[k] = c
	}
	return c
}

// DMA counts one share of a transfer: engines engine..engine+n-1 each
// moved bytes over [start, end). Shares arrive as they retire, in order of
// end. (A transfer's bytes are counted once, when its trigger commits.)
func (s *Collector) DMA(chip, core int32, engine, n int, queue int16, in *isa.Instruction, bytes int64, start, end clock.Time) {
	c := s.transfers(chip, core, in.OpID)
	if start < c.FirstStart {
		c.FirstStart = start
	}
	if end > c.LastEnd {
		c.LastEnd = end
	}
	c.Busy += c.open.add(start, end)
}

// Compute returns the engine counters.
func (s *Collector) Compute() map[Key]*Counters { return s.compute }

// Transfers returns the DMA counters.
func (s *Collector) Transfers() map[DMAKey]*DMACounters { return s.dma }

// unionTail measures the union of intervals that arrive in order of end
// by keeping the last unionRuns disjoint runs open: an interval that
// starts before an open run's end merges into it. Only an interval that
// reaches back past every open run, over a gap already closed, is counted
// twice where it overlaps closed runs (a transfer spanning more than
// unionRuns gaps in its op's data movement).
type unionTail struct {
	runs [unionRuns]struct{ lo, hi clock.Time }
	n    int
}

const unionRuns = 8

// add records [lo, hi) (hi at least every earlier hi) and returns how much
// it adds to the union.
func (u *unionTail) add(lo, hi clock.Time) clock.Time {
	if hi <= lo {
		return 0
	}
	// Merge with every open run it reaches, newest first.
	added := hi - lo
	i := u.n
	for i > 0 && lo <= u.runs[i-1].hi {
		r := u.runs[i-1]
		// The overlap with r is counted already.
		ov := min(hi, r.hi) - max(lo, r.lo)
		if ov > 0 {
			added -= ov
		}
		lo = min(lo, r.lo)
		i--
	}
	u.n = i
	if u.n == unionRuns {
		copy(u.runs[:], u.runs[1:])
		u.n--
	}
	u.runs[u.n] = struct{ lo, hi clock.Time }{lo, hi}
	u.n++
	return added
}

// Window is an op's span of activity, for the time split.
type Window struct {
	Op         int32
	Start, End clock.Time
}

// SplitTime divides [0, simTime) among the ops by the rule reports state:
// every instant goes to the ops whose window [first start, last end)
// covers it, in equal parts; an instant no window covers goes to the op
// that starts next (before the first op: the first; after the last window:
// the op that ended last). The shares sum to simTime (an op whose window
// is empty gets a share only when no op has a window: then the first takes
// it all). Shares are returned in the order of ws.
func SplitTime(ws []Window, simTime clock.Time) []clock.Time {
	share := make([]float64, len(ws))
	if len(ws) == 0 || simTime <= 0 {
		return make([]clock.Time, len(ws))
	}
	type edge struct {
		t     clock.Time
		open  bool
		index int
	}
	edges := make([]edge, 0, 2*len(ws))
	for i, w := range ws {
		if w.End > w.Start {
			edges = append(edges, edge{w.Start, true, i}, edge{w.End, false, i})
		}
	}
	if len(edges) == 0 {
		out := make([]clock.Time, len(ws))
		out[0] = simTime
		return out
	}
	sort.Slice(edges, func(a, b int) bool {
		if edges[a].t != edges[b].t {
			return edges[a].t < edges[b].t
		}
		if edges[a].open != edges[b].open {
			return !edges[a].open // close before open at the same instant
		}
		return edges[a].index < edges[b].index
	})
	var order []int // active ops, kept sorted for determinism
	prev := clock.Time(0)
	lastEnded := -1
	var lastEnd clock.Time = -1
	for _, e := range edges {
		t := min(e.t, simTime)
		if t > prev {
			d := float64(t - prev)
			if len(order) == 0 {
				// A gap: it goes to the op that starts next (this edge opens
				// it, since no window is open).
				share[e.index] += d
			} else {
				for _, i := range order {
					share[i] += d / float64(len(order))
				}
			}
			prev = t
		}
		if e.open {
			order = insertSorted(order, e.index)
		} else {
			order = removeSorted(order, e.index)
			if e.t >= lastEnd {
				lastEnded, lastEnd = e.index, e.t
			}
		}
	}
	if simTime > prev && lastEnded >= 0 {
		share[lastEnded] += float64(simTime - prev)
	}
	// Round to femtoseconds so the shares sum exactly: the remainder goes
	// to the largest share.
	out := make([]clock.Time, len(ws))
	var sum clock.Time
	big := 0
	for i, v := range share {
		out[i] = clock.Time(v)
		sum += out[i]
		if share[i] > share[big] {
			big = i
		}
	}
	out[big] += simTime - sum
	return out
}

func insertSorted(s []int, v int) []int {
	i := sort.SearchInts(s, v)
	s = append(s, 0)
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}

func removeSorted(s []int, v int) []int {
	i := sort.SearchInts(s, v)
	if i < len(s) && s[i] == v {
		s = append(s[:i], s[i+1:]...)
	}
	return s
}

// Op is one op's figures, summed over the cores and engines that ran it.
type Op struct {
	ID           int32
	Instructions int64
	// FLOPs are TensorE's multiply-accumulates x 2.
	FLOPs                                 float64
	DMABytes, HBMReadBytes, HBMWriteBytes int64
	// Start and End bound the op's activity on any engine or DMA engine.
	Start, End clock.Time
	// Busy is the op's busy time per engine, summed over cores; DMABusy
	// the time some DMA engine moved its data, summed over cores.
	Busy    [isa.NumEngines]clock.Time
	DMABusy clock.Time
	// Stall is the stall time charged to the op, per engine and cause,
	// summed over cores.
	Stall [isa.NumEngines][engines.NumStallCauses]clock.Time
	// Time is the op's share of the simulated time (SplitTime).
	Time clock.Time
}

// Ops sums the counters per op, in order of op id, and splits simTime
// among them.
func (s *Collector) Ops(simTime clock.Time) []Op {
	byID := map[int32]*Op{}
	get := func(id int32) *Op {
		o := byID[id]
		if o == nil {
			o = &Op{ID: id, Start: clock.Never}
			byID[id] = o
		}
		return o
	}
	for k, c := range s.compute {
		o := get(k.Op)
		o.Instructions += c.Instructions
		o.FLOPs += c.FLOPs
		o.Busy[k.Engine] += c.Busy
		for i, t := range c.Stall {
			o.Stall[k.Engine][i] += t
		}
		o.Start = min(o.Start, c.FirstStart)
		o.End = max(o.End, c.LastEnd)
	}
	for k, c := range s.dma {
		o := get(k.Op)
		o.DMABytes += c.Bytes
		o.HBMReadBytes += c.HBMReadBytes
		o.HBMWriteBytes += c.HBMWriteBytes
		o.DMABusy += c.Busy
		o.Start = min(o.Start, c.FirstStart)
		o.End = max(o.End, c.LastEnd)
	}
	ops := make([]Op, 0, len(byID))
	for _, o := range byID {
		ops = append(ops, *o)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].ID < ops[j].ID })
	ws := make([]Window, len(ops))
	for i, o := range ops {
		ws[i] = Window{Op: o.ID, Start: o.Start, End: max(o.End, o.Start)}
	}
	for i, t := range SplitTime(ws, simTime) {
		ops[i].Time = t
	}
	return ops
}

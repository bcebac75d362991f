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

// DMACounters are the time one core's DMA engines spent on one op.
type DMACounters struct {
	// Busy is the time some DMA engine of the core moved the op's data
	// (the union of its shares' intervals).
	Busy clock.Time
	// FirstStart and LastEnd bound the op's data movement.
	FirstStart, LastEnd clock.Time
	open                unionTail
}

// DMAKey names one core's DMA counters of one op.
type DMAKey struct {
	Chip, Core int32
	Op         int32
}

// Collector gathers the per-op figures: the DMA engines' shares as they
// retire (it is a dma.Tracer) and, after the run, each engine's counters
// per op (engines.Stats.Ops). Not safe for concurrent use (one simulation
// runs its events in order).
type Collector struct {
	dma     map[DMAKey]*DMACounters
	engines []engineOps
}

type engineOps struct {
	chip, core int32
	eng        isa.Engine
	st         *engines.Stats
}

// New returns an empty collector.
func New() *Collector {
	return &Collector{dma: map[DMAKey]*DMACounters{}}
}

// AddEngine records an engine's counters per op, once its run is over.
func (s *Collector) AddEngine(chip, core int32, eng isa.Engine, st *engines.Stats) {
	s.engines = append(s.engines, engineOps{chip, core, eng, st})
}

// DMA counts one share of a transfer: engines engine..engine+n-1 each
// moved bytes over [start, end). Shares arrive as they retire, in order of
// end. (A transfer's bytes are counted once, when its trigger commits, by
// the triggering engine's counters.)
func (s *Collector) DMA(chip, core int32, engine, n int, queue int16, in *isa.Instruction, bytes int64, start, end clock.Time) {
	k := DMAKey{chip, core, in.OpID}
	c := s.dma[k]
	if c == nil {
		c = &DMACounters{FirstStart: clock.Never}
		s.dma[k] = c
	}
	if start < c.FirstStart {
		c.FirstStart = start
	}
	if end > c.LastEnd {
		c.LastEnd = end
	}
	c.Busy += c.open.add(start, end)
}

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
// every instant goes to the ops whose window (Op.window: first compute
// start, or first start, to last end) covers it, in equal parts; an instant no window covers goes to the op
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
	// Start and End bound the op's activity on any engine or DMA engine;
	// ComputeStart is the first start of an instruction of it other than
	// a DMA trigger (clock.Never: it has none).
	Start, End   clock.Time
	ComputeStart clock.Time
	// Busy is the op's busy time per engine, summed over cores; DMABusy
	// the time some DMA engine moved its data, summed over cores.
	Busy    [isa.NumEngines]clock.Time
	DMABusy clock.Time
	// Stall is the stall time charged to the op, per engine and cause,
	// summed over cores.
	Stall [isa.NumEngines][engines.NumStallCauses]clock.Time
	// Time is the op's share of the simulated time (SplitTime).
	Time clock.Time
	// Span is End - Start, or over several launches (chip.RunLaunches)
	// the sum of the op's spans in each.
	Span clock.Time
}

// window is the op's window in the time split: from its first compute
// instruction (its first activity where it has none) to its last
// activity. Transfers triggered before its compute (weight prefetches,
// issued as early as their slots allow, up to the run's start) do not
// stretch it: their time is hidden under the ops that run meanwhile.
func (o *Op) window() Window {
	start := o.Start
	if o.ComputeStart != clock.Never {
		start = o.ComputeStart
	}
	return Window{Op: o.ID, Start: start, End: max(o.End, start)}
}

// Ops sums the counters per op, in order of op id, and splits simTime
// among them.
func (s *Collector) Ops(simTime clock.Time) []Op {
	byID := map[int32]*Op{}
	get := func(id int32) *Op {
		o := byID[id]
		if o == nil {
			o = &Op{ID: id, Start: clock.Never, ComputeStart: clock.Never}
			byID[id] = o
		}
		return o
	}
	for _, e := range s.engines {
		for _, id := range e.st.OpIDs() {
			c := e.st.Ops[id]
			o := get(id)
			o.Instructions += c.Instructions
			o.FLOPs += c.FLOPs
			o.DMABytes += c.DMABytes
			o.HBMReadBytes += c.HBMReadBytes
			o.HBMWriteBytes += c.HBMWriteBytes
			o.Busy[e.eng] += c.Busy
			for i, t := range c.Stall {
				o.Stall[e.eng][i] += t
			}
			o.Start = min(o.Start, c.FirstStart)
			o.End = max(o.End, c.LastEnd)
			o.ComputeStart = min(o.ComputeStart, c.ComputeStart)
		}
	}
	keys := make([]DMAKey, 0, len(s.dma))
	for k := range s.dma {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.Chip != b.Chip {
			return a.Chip < b.Chip
		}
		if a.Core != b.Core {
			return a.Core < b.Core
		}
		return a.Op < b.Op
	})
	for _, k := range keys {
		c := s.dma[k]
		o := get(k.Op)
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
		ws[i] = o.window()
	}
	for i, t := range SplitTime(ws, simTime) {
		ops[i].Time = t
		if o := &ops[i]; o.End > o.Start {
			o.Span = o.End - o.Start
		}
	}
	return ops
}

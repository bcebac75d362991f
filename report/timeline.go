package report

import (
	"fmt"
	"sort"
	"sync"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads"
)

// TimelineRecorder keeps one core's busy intervals within a window of
// simulated time, for the engine timeline figure: each engine's
// instructions and semaphore waits, and each DMA queue's transfers. It
// implements chip.Tracer; runs without figures do not attach it.
//
// Memory is bounded: it keeps at most its capacity of intervals. A window
// without an end closes at the start of the interval that fills half of
// it; one that
// arrives later and starts before the close is still kept while there is
// room. When the room runs out, the window ends at the earliest start of an
// interval left out, so that every interval of the window that is reported
// is complete.
type TimelineRecorder struct {
	chip, core int32
	window     TraceWindow
	cap        int
	kinds      map[int32]string

	mu      sync.Mutex
	raw     []rawInterval
	closeAt clock.Time // the window's end once closed (clock.Never: open)
	cut     clock.Time // the earliest start of an interval left out for room
	leftOut int64
}

// rawInterval is one recorded interval: row 0..NumEngines-1 is an engine,
// NumEngines+q DMA queue q.
type rawInterval struct {
	start, end clock.Time
	row        int32
	op         int32
	opcode     isa.Opcode
	wait       bool
}

// DefaultTimelineCap is the intervals a recorder keeps by default.
const DefaultTimelineCap = 20000

// NewTimelineRecorder records chip 0 core 0's window (From to To; an
// open end closes when the recorder is half full) keeping at most capacity
// intervals (0: DefaultTimelineCap). ops names the workload's op kinds, by
// which the bars are coloured when there are several.
func NewTimelineRecorder(window TraceWindow, capacity int, ops []workloads.Op) *TimelineRecorder {
	if capacity <= 0 {
		capacity = DefaultTimelineCap
	}
	t := &TimelineRecorder{window: window, cap: capacity, kinds: map[int32]string{}, closeAt: window.To, cut: clock.Never}
	for _, o := range ops {
		t.kinds[o.ID] = o.Kind
	}
	return t
}

var _ chip.Tracer = (*TimelineRecorder)(nil)

// add records an interval of the recorded core that overlaps the window.
func (t *TimelineRecorder) add(chip, core int32, iv rawInterval) {
	if chip != t.chip || core != t.core || iv.end <= t.window.From {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if iv.start >= t.closeAt || iv.start >= t.cut {
		return
	}
	if len(t.raw) >= t.cap {
		t.leftOut++
		t.cut = min(t.cut, max(iv.start, t.window.From))
		return
	}
	t.raw = append(t.raw, iv)
	if t.closeAt == clock.Never && len(t.raw) >= t.cap/2 {
		t.closeAt = max(iv.start, t.window.From+1)
	}
}

// Instruction records an engine instruction's issue interval.
func (t *TimelineRecorder) Instruction(chip, core int32, eng isa.Engine, in *isa.Instruction, start, end clock.Time) {
	if end > start {
		t.add(chip, core, rawInterval{start: start, end: end, row: int32(eng), op: in.OpID, opcode: in.Op})
	}
}

// Wait records a semaphore wait.
func (t *TimelineRecorder) Wait(chip, core int32, eng isa.Engine, in *isa.Instruction, sem isa.SemRef, start, end clock.Time) {
	if end > start {
		t.add(chip, core, rawInterval{start: start, end: end, row: int32(eng), op: in.OpID, opcode: in.Op, wait: true})
	}
}

// DMA records a DMA engine's share of a transfer on its queue's row.
func (t *TimelineRecorder) DMA(chip, core int32, engine, engines int, queue int16, in *isa.Instruction, bytes int64, start, end clock.Time) {
	if end > start && queue >= 0 {
		t.add(chip, core, rawInterval{start: start, end: end, row: int32(isa.NumEngines) + int32(queue), op: in.OpID, opcode: in.Op})
	}
}

// TimelineReport is the engine timeline's window as results.json keeps
// it: a row per engine and per DMA queue that was busy in the window, its
// bars (merged where they touch and share a class) in time order, never
// overlapping.
type TimelineReport struct {
	Chip int32 `json:"chip"`
	Core int32 `json:"core"`
	// FromS and ToS bound the window (seconds of simulated time); Window
	// says how it was chosen.
	FromS  float64 `json:"from_s"`
	ToS    float64 `json:"to_s"`
	Window string  `json:"window"`
	// ColourBy is "op kind" or "opcode"; Classes the bars' classes, which
	// each bar indexes.
	ColourBy string        `json:"colour_by"`
	Classes  []string      `json:"classes"`
	Rows     []TimelineRow `json:"rows"`
	// Recorded counts the intervals recorded, LeftOut those left out for
	// room (only after the window's end).
	Recorded int   `json:"recorded"`
	LeftOut  int64 `json:"left_out"`
}

// TimelineRow is one engine's or DMA queue's bars.
type TimelineRow struct {
	Name string        `json:"name"`
	Bars []TimelineBar `json:"bars"`
}

// TimelineBar is a busy interval in seconds of simulated time, of class C.
type TimelineBar struct {
	S float64 `json:"s"`
	E float64 `json:"e"`
	C int     `json:"c"`
}

// timelineMaxBars is the most bars a timeline keeps after merging: bars
// closer than a gap are merged (of one class), the gap doubling until they
// fit.
const timelineMaxBars = 4000

// timelineMaxClasses is the most classes the legend names; the rest are
// "other".
const timelineMaxClasses = 8

// Report returns the window's timeline, the run having ended at end
// (nil when nothing was recorded).
func (t *TimelineRecorder) Report(end clock.Time) *TimelineReport {
	t.mu.Lock()
	defer t.mu.Unlock()
	from, to := t.window.From, min(t.closeAt, t.cut, end)
	if len(t.raw) == 0 || to <= from {
		return nil
	}
	how := "the requested window"
	switch {
	case t.cut < min(t.closeAt, end):
		how = fmt.Sprintf("the window until the recorder's %d intervals were full", t.cap)
	case t.window.To == clock.Never && to < end:
		how = fmt.Sprintf("the first %d intervals", t.cap/2)
		if from > 0 {
			how = fmt.Sprintf("the first %d intervals from %s", t.cap/2, fmtSeconds(from.Seconds()))
		}
	case to == end && from == 0:
		how = "the whole run"
	}
	// Colour by op kind when the window shows several (a model's ops),
	// else by opcode (a GEMM, a kernel: one kind, and instructions of no
	// op).
	kinds := map[string]bool{}
	for _, iv := range t.raw {
		if k := t.kinds[iv.op]; !iv.wait && k != "" {
			kinds[k] = true
		}
	}
	byKind := len(kinds) > 1
	classOf := func(iv rawInterval) string {
		switch {
		case iv.wait:
			return "semaphore wait"
		case byKind && t.kinds[iv.op] != "":
			return t.kinds[iv.op]
		case byKind:
			return "(no op)"
		}
		return iv.opcode.String()
	}
	// The classes by their time in the window, the longest first; waits
	// last.
	total := map[string]clock.Time{}
	for _, iv := range t.raw {
		total[classOf(iv)] += min(iv.end, to) - max(iv.start, from)
	}
	var names []string
	for c := range total {
		if c != "semaphore wait" {
			names = append(names, c)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		if total[names[i]] != total[names[j]] {
			return total[names[i]] > total[names[j]]
		}
		return names[i] < names[j]
	})
	index := map[string]int{}
	var classes []string
	for i, c := range names {
		if i < timelineMaxClasses-1 || len(names) == timelineMaxClasses {
			index[c] = len(classes)
			classes = append(classes, c)
		}
	}
	if len(names) > len(classes) {
		other := len(classes)
		classes = append(classes, "other")
		for _, c := range names {
			if _, ok := index[c]; !ok {
				index[c] = other
			}
		}
	}
	if _, ok := total["semaphore wait"]; ok {
		index["semaphore wait"] = len(classes)
		classes = append(classes, "semaphore wait")
	}
	// Bars per row, clipped to the window.
	perRow := map[int32][]TimelineBar{}
	for _, iv := range t.raw {
		s, e := max(iv.start, from), min(iv.end, to)
		if e <= s {
			continue
		}
		perRow[iv.row] = append(perRow[iv.row], TimelineBar{S: s.Seconds(), E: e.Seconds(), C: index[classOf(iv)]})
	}
	var rows []int32
	for r := range perRow {
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i] < rows[j] })
	gap := (to - from).Seconds() / 4000
	var out []TimelineRow
	for {
		out = out[:0]
		n := 0
		for _, r := range rows {
			bars := mergeBars(perRow[r], gap)
			n += len(bars)
			out = append(out, TimelineRow{Name: rowName(r), Bars: bars})
		}
		if n <= timelineMaxBars {
			break
		}
		gap *= 2
	}
	colour := "opcode"
	if byKind {
		colour = "op kind"
	}
	return &TimelineReport{Chip: t.chip, Core: t.core, FromS: from.Seconds(), ToS: to.Seconds(), Window: how,
		ColourBy: colour, Classes: classes, Rows: out, Recorded: len(t.raw), LeftOut: t.leftOut}
}

// mergeBars sorts a row's bars by start, moves each start past the end
// before it (a row's bars never overlap: the one that started first keeps
// the time) and merges bars of a class less than gap apart.
func mergeBars(in []TimelineBar, gap float64) []TimelineBar {
	bars := append([]TimelineBar(nil), in...)
	sort.SliceStable(bars, func(i, j int) bool {
		if bars[i].S != bars[j].S {
			return bars[i].S < bars[j].S
		}
		return bars[i].E > bars[j].E
	})
	var out []TimelineBar
	for _, b := range bars {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if b.S < last.E {
				b.S = last.E
			}
			if b.E <= b.S {
				continue
			}
			if b.C == last.C && b.S-last.E < gap {
				last.E = b.E
				continue
			}
		}
		out = append(out, b)
	}
	return out
}

// rowName names a timeline row: the engine, or "DMA queue q".
func rowName(row int32) string {
	if row < int32(isa.NumEngines) {
		return isa.Engine(row).String()
	}
	return fmt.Sprintf("DMA q%d", row-int32(isa.NumEngines))
}

// TeeTracer passes every trace event to each of its tracers in turn.
type TeeTracer []chip.Tracer

var _ chip.Tracer = TeeTracer(nil)

// Instruction passes the instruction on.
func (t TeeTracer) Instruction(chip, core int32, eng isa.Engine, in *isa.Instruction, start, end clock.Time) {
	for _, x := range t {
		x.Instruction(chip, core, eng, in, start, end)
	}
}

// Wait passes the wait on.
func (t TeeTracer) Wait(chip, core int32, eng isa.Engine, in *isa.Instruction, sem isa.SemRef, start, end clock.Time) {
	for _, x := range t {
		x.Wait(chip, core, eng, in, sem, start, end)
	}
}

// DMA passes the transfer's shares on.
func (t TeeTracer) DMA(chip, core int32, engine, engines int, queue int16, in *isa.Instruction, bytes int64, start, end clock.Time) {
	for _, x := range t {
		x.DMA(chip, core, engine, engines, queue, in, bytes, start, end)
	}
}

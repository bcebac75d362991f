package report

import (
	"fmt"
	"strings"
	"sync"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/isa"
)

// TraceWindow is a range of simulated time, [From, To). To is clock.Never
// for a range with no end.
type TraceWindow struct {
	From, To clock.Time
}

// All reports whether the window covers the whole run.
func (w TraceWindow) All() bool { return w.From <= 0 && w.To == clock.Never }

// String prints the window as ParseTraceWindow reads it.
func (w TraceWindow) String() string {
	end := ""
	if w.To != clock.Never {
		end = compactTime(w.To)
	}
	return compactTime(w.From) + ":" + end
}

// compactTime prints a time without spaces, exactly, in the largest unit
// that divides it.
func compactTime(t clock.Time) string {
	for _, u := range []struct {
		name string
		t    clock.Time
	}{{"s", clock.Second}, {"ms", clock.Millisecond}, {"us", clock.Microsecond}, {"ns", clock.Nanosecond}, {"ps", clock.Picosecond}} {
		if t%u.t == 0 {
			if t == 0 {
				return "0"
			}
			return fmt.Sprintf("%d%s", t/u.t, u.name)
		}
	}
	return fmt.Sprintf("%dfs", t)
}

// ParseTraceWindow reads START:END, two simulated times with units as
// clock.Parse reads them ("0:50us", "1ms:2ms"). Either may be left out: an
// empty START is 0, an empty END is the end of the run.
func ParseTraceWindow(s string) (TraceWindow, error) {
	from, to, ok := strings.Cut(s, ":")
	if !ok {
		return TraceWindow{}, fmt.Errorf("%q is not a window: write START:END, such as 0:50us or 1ms:2ms", s)
	}
	w := TraceWindow{To: clock.Never}
	var err error
	if strings.TrimSpace(from) != "" {
		if w.From, err = clock.Parse(from); err != nil {
			return TraceWindow{}, fmt.Errorf("start of the window: %v", err)
		}
	}
	if strings.TrimSpace(to) != "" {
		if w.To, err = clock.Parse(to); err != nil {
			return TraceWindow{}, fmt.Errorf("end of the window: %v", err)
		}
		if w.To <= w.From {
			return TraceWindow{}, fmt.Errorf("%q is an empty window: its end must come after its start", s)
		}
	}
	return w, nil
}

// TraceFilter passes on to Next only the trace events that overlap Window
// and, when Limit > 0, only the first Limit of them in the order the
// simulation reports them (which is the order instructions complete, close
// to time order). An event from start to end overlaps the window when
// start < Window.To and end >= Window.From: a slice that crosses an edge of
// the window is kept whole. Each DMA engine's share of a transfer is one
// event, as it is one slice of the trace.
//
// The filter drops events before the trace writer formats them, so a
// windowed trace of a long run costs little host time. A TraceFilter is
// safe for concurrent use if Next is.
type TraceFilter struct {
	Next   chip.Tracer
	Window TraceWindow
	Limit  int64

	mu sync.Mutex
	// kept and dropped count events.
	kept, dropped int64
}

var _ chip.Tracer = (*TraceFilter)(nil)

// take reports how many of n events from start to end to pass on, and
// counts the others as dropped.
func (f *TraceFilter) take(n int64, start, end clock.Time) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	keep := n
	if start >= f.Window.To || end < f.Window.From {
		keep = 0
	}
	if f.Limit > 0 && f.kept+keep > f.Limit {
		keep = f.Limit - f.kept
	}
	f.kept += keep
	f.dropped += n - keep
	return keep
}

// Instruction passes the instruction on if it is in the window and under
// the limit.
func (f *TraceFilter) Instruction(chip, core int32, eng isa.Engine, in *isa.Instruction, start, end clock.Time) {
	if f.take(1, start, end) == 1 {
		f.Next.Instruction(chip, core, eng, in, start, end)
	}
}

// Wait passes the wait on if it is in the window and under the limit.
func (f *TraceFilter) Wait(chip, core int32, eng isa.Engine, in *isa.Instruction, sem isa.SemRef, start, end clock.Time) {
	if f.take(1, start, end) == 1 {
		f.Next.Wait(chip, core, eng, in, sem, start, end)
	}
}

// DMA passes on the shares of the transfer that are in the window and
// under the limit (the first ones, when the limit cuts the transfer).
func (f *TraceFilter) DMA(chip, core int32, engine, engines int, queue int16, in *isa.Instruction, bytes int64, start, end clock.Time) {
	if k := f.take(int64(engines), start, end); k > 0 {
		f.Next.DMA(chip, core, engine, int(k), queue, in, bytes, start, end)
	}
}

// Counts returns how many events were passed on and how many dropped.
func (f *TraceFilter) Counts() (kept, dropped int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.kept, f.dropped
}

// Package clock keeps simulated time as an integer count of femtoseconds and
// converts between time and the cycles of each engine's clock. Integer time
// makes results identical run to run whatever the mix of clock domains; it is
// handed to Akita only to order events.
package clock

import (
	"fmt"
	"math"

	"github.com/sarchlab/akita/v3/sim"
)

// Time is simulated time in femtoseconds (1e-15 s). int64 reaches ~9,200 s.
type Time int64

// Never is a time later than any event.
const Never Time = math.MaxInt64

// Common durations.
const (
	Femtosecond Time = 1
	Picosecond  Time = 1000
	Nanosecond  Time = 1000 * Picosecond
	Microsecond Time = 1000 * Nanosecond
	Millisecond Time = 1000 * Microsecond
	Second      Time = 1000 * Millisecond
)

// Seconds converts to seconds.
func (t Time) Seconds() float64 { return float64(t) * 1e-15 }

// Nanoseconds converts to nanoseconds.
func (t Time) Nanoseconds() float64 { return float64(t) * 1e-6 }

// VTime converts to Akita's time (seconds as float64).
func (t Time) VTime() sim.VTimeInSec { return sim.VTimeInSec(t.Seconds()) }

// String prints the time with a readable unit.
func (t Time) String() string {
	switch {
	case t >= Millisecond:
		return fmt.Sprintf("%.3f ms", float64(t)/float64(Millisecond))
	case t >= Microsecond:
		return fmt.Sprintf("%.3f us", float64(t)/float64(Microsecond))
	default:
		return fmt.Sprintf("%.1f ns", float64(t)/float64(Nanosecond))
	}
}

// FromNanoseconds converts nanoseconds to Time, rounding to the nearest
// femtosecond.
func FromNanoseconds(ns float64) Time { return Time(math.Round(ns * 1e6)) }

// Max returns the later of two times.
func Max(a, b Time) Time {
	if a > b {
		return a
	}
	return b
}

// Min returns the earlier of two times.
func Min(a, b Time) Time {
	if a < b {
		return a
	}
	return b
}

// Clock is one clock domain.
type Clock struct {
	GHz      float64
	periodFS float64
}

// New returns a clock of the given frequency in GHz.
func New(ghz float64) Clock { return Clock{GHz: ghz, periodFS: 1e6 / ghz} }

// Cycles returns the duration of n cycles, rounded to the femtosecond.
func (c Clock) Cycles(n int64) Time { return Time(math.Round(float64(n) * c.periodFS)) }

// CyclesF returns the duration of a fractional number of cycles.
func (c Clock) CyclesF(n float64) Time { return Time(math.Round(n * c.periodFS)) }

// ToCycles converts a duration to (fractional) cycles of this clock.
func (c Clock) ToCycles(t Time) float64 { return float64(t) / c.periodFS }

// Edge returns the first clock edge at or after t. Edges are at whole
// cycles from time zero, each rounded to the femtosecond as Cycles rounds
// them, so Edge(c.Cycles(n)) == c.Cycles(n).
func (c Clock) Edge(t Time) Time {
	n := math.Ceil(float64(t) / c.periodFS)
	// Edge n-1 may still be >= t once rounded to the femtosecond.
	if e := Time(math.Round((n - 1) * c.periodFS)); e >= t {
		return e
	}
	e := Time(math.Round(n * c.periodFS))
	for e < t {
		// Float rounding put the edge before t: take the next one.
		n++
		e = Time(math.Round(n * c.periodFS))
	}
	return e
}

// After returns the time n cycles after edge, where edge is a clock edge of
// c. Computed from the edge's cycle number, not by adding two rounded
// durations, so a run of back-to-back instructions stays on the clock's
// edges instead of drifting a femtosecond past them (which Edge would turn
// into a whole lost cycle).
func (c Clock) After(edge Time, n int64) Time {
	k := math.Round(float64(edge) / c.periodFS)
	return Time(math.Round((k + float64(n)) * c.periodFS))
}

// EdgeMemo is a Clock that remembers the last edge it found and the last
// two durations it converted: a sequencer asks for the edge at or after the
// same times over and over (its own free time, which is an edge already),
// and for the same intervals and latencies, and a remembered answer skips
// the float arithmetic. Results are identical to Clock's.
type EdgeMemo struct {
	Clock
	in, out Time // Edge(in) == out, and out is an edge
	// The last two durations asked of Cycles (an interval and a latency).
	cycN [2]int64
	cycT [2]Time
}

// NewEdgeMemo returns a memo for c that remembers nothing yet.
func NewEdgeMemo(c Clock) EdgeMemo {
	return EdgeMemo{Clock: c, in: -1, out: -1, cycN: [2]int64{-1, -1}}
}

// Cycles returns the duration of n cycles (Clock.Cycles), remembering the
// last two asked.
func (m *EdgeMemo) Cycles(n int64) Time {
	switch n {
	case m.cycN[0]:
		return m.cycT[0]
	case m.cycN[1]:
		return m.cycT[1]
	}
	t := m.Clock.Cycles(n)
	m.cycN[1], m.cycT[1] = m.cycN[0], m.cycT[0]
	m.cycN[0], m.cycT[0] = n, t
	return t
}

// Edge returns the first clock edge at or after t (Clock.Edge).
func (m *EdgeMemo) Edge(t Time) Time {
	if t == m.in || t == m.out {
		return m.out
	}
	e := m.Clock.Edge(t)
	m.in, m.out = t, e
	return e
}

// After returns the time n cycles after edge (Clock.After), and remembers
// it as an edge.
func (m *EdgeMemo) After(edge Time, n int64) Time {
	e := m.Clock.After(edge, n)
	m.in, m.out = e, e
	return e
}

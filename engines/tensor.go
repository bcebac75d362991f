package engines

import (
	"math"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/isa"
)

// tensorState models TensorE's two paths: the moving path that streams
// MultiplyMoving tiles through the PE array, and the stationary path that
// loads weights. With background LoadStationary the array holds the active
// weights and a shadow copy: the next LoadStationary fills the shadow while
// the current multiply runs, and may start as soon as the previous weights
// have been taken into use.
type tensorState struct {
	movingFree clock.Time // moving path free
	lsFree     clock.Time // stationary path free
	statReady  clock.Time // latest stationary loaded
	statCols   int64      // its free size (NS in the cost formula)
	statUsed   bool       // an MM has started with the latest stationary
	firstUse   clock.Time // when that MM started
	power      powerState
}

// tensorPlan times a TensorE instruction: its start, its (possibly
// throttled) interval and latency, the sequencer's next issue attempt and the
// extra time the power ramp cost.
func (s *Sequencer) tensorPlan(in *isa.Instruction, t clock.Time, cause StallCause, interval, latency clock.Time) (start, iv, lat, next, powerExtra clock.Time, why StallCause, pathReadyOut clock.Time) {
	ts := &s.tensor
	bg := s.core.Cfg.BackgroundLoadStationary
	why = cause
	var pathReady clock.Time
	switch in.Op {
	case isa.OpLoadStationary:
		pathReady = ts.lsFree
		if !bg {
			pathReady = clock.Max(pathReady, ts.movingFree)
		}
		start = clock.Max(t, pathReady)
		if bg && ts.statUsed && ts.firstUse > start {
			// The shadow frees when the previous weights are taken into use.
			start, why = ts.firstUse, StallDependency
		}
		start = s.clk.Edge(start)
		ts.lsFree = start + interval
		ts.statReady = ts.lsFree
		ts.statCols = in.Ins[0].AP.FreeSize()
		ts.statUsed = false
	case isa.OpMultiplyMoving, isa.OpTranspose:
		pathReady = ts.movingFree
		if in.Op == isa.OpTranspose {
			pathReady = clock.Max(pathReady, ts.lsFree)
		}
		start = clock.Max(t, pathReady)
		if in.Op == isa.OpMultiplyMoving && ts.statReady > start {
			start, why = ts.statReady, StallDependency
		}
		start = s.clk.Edge(start)
		throttled := ts.power.throttle(start, interval)
		powerExtra = throttled - interval
		interval = throttled
		latency += powerExtra
		ts.movingFree = start + interval
		if in.Op == isa.OpTranspose {
			ts.lsFree = ts.movingFree
		} else if !ts.statUsed {
			ts.statUsed, ts.firstUse = true, start
		}
	default:
		// Sequencer-only instructions (DMA triggers, semaphores, nop).
		start = s.clk.Edge(t)
	}
	pathReadyOut = s.clk.Edge(pathReady)
	// Time the engine spent on its own busy path is not a stall.
	if pathReadyOut > t && start == pathReadyOut {
		why = 255
	}
	next = s.clk.After(start, 1)
	if in.Op != isa.OpLoadStationary && in.Op != isa.OpMultiplyMoving && in.Op != isa.OpTranspose {
		next = start + interval
	}
	s.freeAt = next
	return start, interval, latency, next, powerExtra, why, pathReadyOut
}

// MatmulClass is a class of TensorE matmuls with one peak rate: the moving
// tile's dtype and the performance mode (0 normal, 2 FP8 double row, 4 MX
// quad).
type MatmulClass uint8

const (
	classDTypes  = 16 // room for every isa.DType
	classModes   = 3  // perf 0, 2, 4
	classUnknown = classDTypes*classModes - 1
)

// NumMatmulClasses is the size of Stats.MatmulFLOPs.
const NumMatmulClasses = classDTypes * classModes

// ClassOf returns the class of a matmul with moving dtype dt in mode perf.
// A dtype or mode out of range lands in the last class, whose PerfMode is
// 255, so that a report cannot mistake it for a real mode.
func ClassOf(dt isa.DType, perf uint8) MatmulClass {
	m := 0
	switch perf {
	case 0:
	case 2:
		m = 1
	case 4:
		m = 2
	default:
		return classUnknown
	}
	if int(dt) >= classDTypes-1 {
		return classUnknown
	}
	return MatmulClass(int(dt)*classModes + m)
}

// DType returns the class's moving dtype.
func (c MatmulClass) DType() isa.DType { return isa.DType(int(c) / classModes) }

// PerfMode returns the class's performance mode (255 for the class of
// out-of-range values).
func (c MatmulClass) PerfMode() uint8 {
	if c == classUnknown {
		return 255
	}
	return [...]uint8{0, 2, 4}[int(c)%classModes]
}

// PowerParams configure TensorE's dI/dt throttle (reference §2.2, S13).
type PowerParams struct {
	Enabled       bool
	StartFraction float64    // throughput fraction when the throttle engages
	Ramp          clock.Time // sustained work to reach full rate
	Window        clock.Time // utilisation window
	LowUtil       float64    // below this utilisation the throttle re-engages
}

// powerState tracks the throttle level and an exponentially weighted
// utilisation with time constant Window. The throttle starts engaged; busy
// time raises the level linearly to 1 over Ramp; when the utilisation decays
// below LowUtil over an idle gap, it engages again.
type powerState struct {
	p       PowerParams
	level   float64
	util    float64
	lastEnd clock.Time
}

func (ps *powerState) init(p PowerParams) {
	ps.p = p
	ps.level = p.StartFraction
	ps.util = 1
}

// throttle returns the interval of an instruction that starts at start with
// nominal interval d, and advances the state.
func (ps *powerState) throttle(start, d clock.Time) clock.Time {
	if !ps.p.Enabled || d <= 0 {
		return d
	}
	if ps.level >= 1 && ps.util >= 0.9999 && start <= ps.lastEnd {
		// Back to back at full rate: nothing can change.
		ps.lastEnd = start + d
		return d
	}
	if gap := start - ps.lastEnd; gap > 0 && ps.lastEnd > 0 {
		ps.util *= math.Exp(-float64(gap) / float64(ps.p.Window))
		if ps.util < ps.p.LowUtil {
			ps.level = ps.p.StartFraction
			ps.util = 1
		}
	}
	out := clock.Time(math.Ceil(float64(d) / ps.level))
	ps.util = 1 - (1-ps.util)*math.Exp(-float64(out)/float64(ps.p.Window))
	ps.level += (1 - ps.p.StartFraction) * float64(out) / float64(ps.p.Ramp)
	if ps.level > 1 {
		ps.level = 1
	}
	ps.lastEnd = start + out
	return out
}

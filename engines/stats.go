package engines

import (
	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/isa"
)

// Stats are one engine's counters, kept by observing its commits.
type Stats struct {
	Instructions int64
	// BusyTime is the union of the engine's issue intervals (for TensorE, of
	// the moving and stationary paths).
	BusyTime clock.Time
	// Stall is the time the engine was ready but waited, by cause.
	Stall [NumStallCauses]clock.Time
	// FirstStart and LastEnd bound the engine's activity (LastEnd includes
	// completion latency).
	FirstStart, LastEnd clock.Time
	// FLOPs counts TensorE multiply-accumulates x 2; MatmulFLOPs splits
	// them by class (the moving tile's dtype and the performance mode), the
	// two things a matmul's peak rate depends on.
	FLOPs       float64
	MatmulFLOPs [NumMatmulClasses]float64
	// OpCounts counts instructions per opcode.
	OpCounts [isa.NumOpcodes]int64

	busyEnd clock.Time
}

// NewStats returns empty counters.
func NewStats() Stats { return Stats{FirstStart: clock.Never} }

// Committed counts c (an engine's commits arrive in start order, so the
// busy union needs only the end of the last interval).
func (st *Stats) Committed(c *Commit) {
	st.Instructions++
	in := c.In
	st.OpCounts[in.Op]++
	for i := 0; i < c.NStalls; i++ {
		st.Stall[c.Stalls[i].Cause] += c.Stalls[i].Time
	}
	if c.Start < st.FirstStart {
		st.FirstStart = c.Start
	}
	if c.Completion > st.LastEnd {
		st.LastEnd = c.Completion
	}
	if c.End > st.busyEnd {
		st.BusyTime += c.End - clock.Max(c.Start, st.busyEnd)
		st.busyEnd = c.End
	}
	if f := c.Dec.FLOPs; f != 0 {
		st.FLOPs += f
		if in.Op == isa.OpMultiplyMoving {
			st.MatmulFLOPs[ClassOf(in.Ins[0].AP.DType, in.Attrs.PerfMode)] += f
		}
	}
}

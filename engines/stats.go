package engines

import (
	"slices"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/isa"
)

// Stats are one engine's counters, kept by observing its commits: the
// engine's own, and the same per workload op (the instructions' op id).
// Call Finish before reading the totals.
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
	// Ops are the counters per workload op id.
	Ops map[int32]*OpCounters

	busyEnd clock.Time
	cur     *OpCounters // the counters of curOp, the latest op
	curOp   int32
}

// OpCounters are one engine's figures for one workload op.
type OpCounters struct {
	Instructions int64
	// Busy is the union of the op's issue intervals on the engine.
	Busy clock.Time
	// Stall is the stall time charged to the op's instructions, by cause.
	Stall [NumStallCauses]clock.Time
	// FirstStart and LastEnd bound the op's activity on the engine
	// (LastEnd includes completion latency).
	FirstStart, LastEnd clock.Time
	// ComputeStart is the first start of the op's instructions that
	// compute (not DMA triggers, nops, semaphore-only instructions or
	// barriers; clock.Never: none): a transfer triggered ahead of the op's
	// compute (a weight prefetch) does not start its window in the time
	// split (opstats.SplitTime).
	ComputeStart clock.Time
	FLOPs        float64
	// DMABytes are the bytes the op's transfers triggered here wrote to
	// their destinations; HBMReadBytes and HBMWriteBytes what they read
	// from or wrote to HBM, counted as the HBM counters count them (one
	// HBM side per transfer).
	DMABytes, HBMReadBytes, HBMWriteBytes int64

	busyEnd clock.Time
}

// NewStats returns empty counters.
func NewStats() Stats { return Stats{FirstStart: clock.Never, Ops: map[int32]*OpCounters{}} }

// Committed counts c. An engine's commits arrive in start order, so a busy
// union needs only the end of the last interval.
func (st *Stats) Committed(c *Commit) {
	in := c.In
	st.OpCounts[in.Op]++
	if c.End > st.busyEnd {
		st.BusyTime += c.End - clock.Max(c.Start, st.busyEnd)
		st.busyEnd = c.End
	}
	o := st.cur
	if o == nil || st.curOp != in.OpID {
		o = st.Ops[in.OpID]
		if o == nil {
			o = &OpCounters{FirstStart: clock.Never, ComputeStart: clock.Never}
			st.Ops[in.OpID] = o
		}
		st.cur, st.curOp = o, in.OpID
	}
	o.Instructions++
	for i := 0; i < c.NStalls; i++ {
		o.Stall[c.Stalls[i].Cause] += c.Stalls[i].Time
	}
	if c.Start < o.FirstStart {
		o.FirstStart = c.Start
	}
	if c.Start < o.ComputeStart && computes(in.Op) {
		o.ComputeStart = c.Start
	}
	if c.Completion > o.LastEnd {
		o.LastEnd = c.Completion
	}
	if c.End > o.busyEnd {
		o.Busy += c.End - clock.Max(c.Start, o.busyEnd)
		o.busyEnd = c.End
	}
	if f := c.Dec.FLOPs; f != 0 {
		o.FLOPs += f
		if in.Op == isa.OpMultiplyMoving {
			st.MatmulFLOPs[ClassOf(in.Ins[0].AP.DType, in.Attrs.PerfMode)] += f
		}
	}
	if in.Op.IsDMA() && len(in.Outs) > 0 && len(in.Ins) > 0 {
		// As the DMA engines count them: the destination's bytes, and the
		// HBM side's (the source if it is in HBM, else the destination);
		// a gather reads only the rows it gathers, a scatter writes only
		// the rows it scatters.
		dst, src := &in.Outs[0].AP, &in.Ins[0].AP
		o.DMABytes += dst.Bytes()
		switch {
		case in.Op == isa.OpDMAGather:
			o.HBMReadBytes += dst.Bytes()
		case in.Op == isa.OpDMAScatter:
			o.HBMWriteBytes += src.Bytes()
		case src.Mem == isa.MemHBM:
			o.HBMReadBytes += src.Bytes()
		case dst.Mem == isa.MemHBM:
			o.HBMWriteBytes += dst.Bytes()
		}
	}
}

// Finish sums the per-op counters into the engine's totals (in order of
// op id, so the sums are the same on every run).
func (st *Stats) Finish() {
	st.Instructions, st.FLOPs, st.Stall = 0, 0, [NumStallCauses]clock.Time{}
	st.FirstStart, st.LastEnd = clock.Never, 0
	for _, id := range st.OpIDs() {
		o := st.Ops[id]
		st.Instructions += o.Instructions
		st.FLOPs += o.FLOPs
		for i, t := range o.Stall {
			st.Stall[i] += t
		}
		st.FirstStart = min(st.FirstStart, o.FirstStart)
		st.LastEnd = max(st.LastEnd, o.LastEnd)
	}
}

// OpIDs returns the ids of the ops the engine ran, in order.
func (st *Stats) OpIDs() []int32 {
	ids := make([]int32, 0, len(st.Ops))
	for id := range st.Ops {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// computes reports whether an instruction of opcode op does the work of
// its op (neither a DMA trigger nor synchronisation alone).
func computes(op isa.Opcode) bool {
	switch op {
	case isa.OpNop, isa.OpSemWait, isa.OpSemInc, isa.OpBarrier:
		return false
	}
	return !op.IsDMA()
}

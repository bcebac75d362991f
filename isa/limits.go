package isa

import (
	"fmt"
)

// Limits are the hardware tile limits an instruction must respect. They come
// from the hardware config (configs.Hardware.Limits), never from constants, so
// an architect can ask for a 256x256 array or 384 KiB partitions.
type Limits struct {
	Generation   int // NeuronCore version: 2, 3 or 4
	Chips        int
	CoresPerChip int
	Semaphores   int

	Partitions         int
	SBUFPartitionBytes int64
	PSUMPartitionBytes int64
	PSUMBanks          int

	ArrayRows, ArrayCols int
	// MovingFreeMax is the largest moving free size for an FP32 PSUM
	// destination; MovingFreeMaxHalf for a BF16/FP16 destination.
	MovingFreeMax, MovingFreeMaxHalf int
	// MatmulMayCrossBanks allows one multiply_moving to write several PSUM
	// banks (NC-v4).
	MatmulMayCrossBanks bool
	FP8DoubleRow        bool // NC-v3+: FP8 double-row mode
	MXQuad              bool // NC-v4: MX quad mode

	VectorFreeMaxSBUF  int64
	VectorFreeMaxPSUM  int64
	BNStatsFreeMax     int64
	VectorTransposeMax int
	GpSimdPSUMAccess   bool

	APSizeMax   int64
	APStrideMin int64
	APStrideMax int64

	DMAEngines       int
	DMAQueues        int
	HardwareDGE      bool
	DMAIndirectHWDGE bool
	// HBMBytes is one chip's HBM capacity (0: unchecked).
	HBMBytes int64
}

// PSUMBankBytes returns the bytes of one PSUM bank in one partition.
func (l *Limits) PSUMBankBytes() int64 { return l.PSUMPartitionBytes / int64(l.PSUMBanks) }

// LimitError is an instruction that breaks a tile limit. Operand and Attr
// say what part of the instruction the rule is about, so that an error can
// point at it in the assembly text.
type LimitError struct {
	Inst *Instruction
	Msg  string
	// Operand is the operand the rule is about, counted from 1 over the
	// outputs then the inputs (0: none).
	Operand int
	// Attr is the attribute the rule is about ("queue", "dge", "perf",
	// "wait", "signal", "cores"; "opcode" for the opcode itself), "" for
	// none; AttrIndex is which of the attribute's repeats, from 0 (the
	// second wait= is 1).
	Attr      string
	AttrIndex int
}

func (e *LimitError) Error() string { return e.Msg }

func (l *Limits) fail(in *Instruction, format string, args ...any) error {
	return &LimitError{Inst: in, Msg: fmt.Sprintf(format, args...)}
}

// failOp is fail about operand n (from 1, outputs first).
func (l *Limits) failOp(in *Instruction, n int, format string, args ...any) error {
	return &LimitError{Inst: in, Msg: fmt.Sprintf(format, args...), Operand: n}
}

// failAttr is fail about the i-th repeat of an attribute.
func (l *Limits) failAttr(in *Instruction, attr string, i int, format string, args ...any) error {
	return &LimitError{Inst: in, Msg: fmt.Sprintf(format, args...), Attr: attr, AttrIndex: i}
}

// BufferError is a buffer that does not fit the hardware. Field says what
// of its declaration the rule is about: "dtype", "shape", "chip", "core",
// "part", "offset" (offset= or addr=) or "place" (the bytes it spans: its
// shape and offset).
type BufferError struct {
	Buffer *Buffer
	Field  string
	Msg    string
}

func (e *BufferError) Error() string { return "buffer " + e.Buffer.Name + ": " + e.Msg }

func bufErr(b *Buffer, field, format string, args ...any) error {
	return &BufferError{Buffer: b, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// CheckBuffer validates a buffer's placement against the memory sizes.
func (l *Limits) CheckBuffer(b *Buffer) error {
	if b.DType.Bytes() == 0 {
		return bufErr(b, "dtype", "unknown dtype")
	}
	if len(b.Shape) == 0 {
		return bufErr(b, "shape", "shape must have at least one dimension")
	}
	for i, s := range b.Shape {
		if s <= 0 {
			return bufErr(b, "shape", "dimension %d is %d; sizes must be positive", i, s)
		}
	}
	if int(b.Chip) < 0 || int(b.Chip) >= l.Chips {
		return bufErr(b, "chip", "chip %d does not exist (config has %d)", b.Chip, l.Chips)
	}
	if !b.Mem.OnChip() {
		if b.Offset < 0 {
			return bufErr(b, "offset", "negative address")
		}
		if l.HBMBytes > 0 && b.Offset+b.TotalBytes() > l.HBMBytes {
			return bufErr(b, "place", "bytes %d:%d do not fit the chip's %d bytes of HBM", b.Offset, b.Offset+b.TotalBytes(), l.HBMBytes)
		}
		return nil
	}
	if int(b.Core) < 0 || int(b.Core) >= l.CoresPerChip {
		return bufErr(b, "core", "core %d does not exist (config has %d per chip)", b.Core, l.CoresPerChip)
	}
	if b.PartStart < 0 || int64(b.PartStart)+b.Shape[0] > int64(l.Partitions) {
		return bufErr(b, "part", "partitions %d:%d outside 0:%d", b.PartStart, int64(b.PartStart)+b.Shape[0], l.Partitions)
	}
	capB := l.SBUFPartitionBytes
	if b.Mem == MemPSUM {
		capB = l.PSUMPartitionBytes
	}
	if b.Offset < 0 || b.Offset+b.BytesPerPartition() > capB {
		return bufErr(b, "place", "bytes %d:%d per partition do not fit %s (%d bytes per partition)",
			b.Offset, b.Offset+b.BytesPerPartition(), b.Mem, capB)
	}
	return nil
}

// Check validates one instruction against the limits. It returns a
// *LimitError naming the broken rule. The simulator checks through a
// DecodeCache, which skips the body of an instruction it has seen.
func (l *Limits) Check(in *Instruction) error {
	if err := l.checkBody(in); err != nil {
		return err
	}
	return l.checkSems(in)
}

// checkSems checks the instruction's waits and signals.
func (l *Limits) checkSems(in *Instruction) error {
	ok := true
	for i := range in.Waits {
		w := &in.Waits[i]
		ok = ok && l.semOK(w.Sem) && w.Value >= 0
	}
	for i := range in.Signal {
		s := &in.Signal[i]
		ok = ok && l.semOK(s.Sem) && s.Add > 0
	}
	if ok {
		return nil
	}
	return l.semError(in)
}

// semOK reports whether s names a semaphore that exists.
func (l *Limits) semOK(s SemRef) bool {
	return uint32(s.Chip) < uint32(l.Chips) && uint32(s.Core) < uint32(l.CoresPerChip) && uint32(s.ID) < uint32(l.Semaphores)
}

// semError returns the error for the first wait or signal that checkSems
// rejects.
func (l *Limits) semError(in *Instruction) error {
	for i, w := range in.Waits {
		if err := l.checkSem(in, w.Sem, "wait", i); err != nil {
			return err
		}
		if w.Value < 0 {
			return l.failAttr(in, "wait", i, "wait value %d is negative", w.Value)
		}
	}
	for i, s := range in.Signal {
		if err := l.checkSem(in, s.Sem, "signal", i); err != nil {
			return err
		}
		if s.Add <= 0 {
			return l.failAttr(in, "signal", i, "signal increment %d must be positive", s.Add)
		}
	}
	return nil
}

// checkBody checks everything but the waits and signals: what depends only
// on the instruction's body (see DecodeCache).
func (l *Limits) checkBody(in *Instruction) error {
	info := in.Op.Info()
	if !in.Op.RunsOn(in.Engine) {
		return l.failAttr(in, "opcode", 0, "%s cannot run on %s (it runs on %s)", info.Name, in.Engine, engineList(in.Op))
	}
	if int(in.Chip) < 0 || int(in.Chip) >= l.Chips || int(in.Core) < 0 || int(in.Core) >= l.CoresPerChip {
		return l.fail(in, "chip %d core %d does not exist (config: %d chips x %d cores)", in.Chip, in.Core, l.Chips, l.CoresPerChip)
	}
	if len(in.Outs) != info.NumOut {
		return l.failAttr(in, "opcode", 0, "%s takes %d output operand(s), got %d", info.Name, info.NumOut, len(in.Outs))
	}
	if len(in.Ins) < info.MinIn || len(in.Ins) > info.NumIn {
		if info.MinIn == info.NumIn {
			return l.failAttr(in, "opcode", 0, "%s takes %d input operand(s), got %d", info.Name, info.NumIn, len(in.Ins))
		}
		return l.failAttr(in, "opcode", 0, "%s takes %d to %d input operands, got %d", info.Name, info.MinIn, info.NumIn, len(in.Ins))
	}
	if in.Op.IsDMA() {
		return l.checkDMA(in)
	}
	// Compute-engine operands.
	var err error
	n := 0
	in.Operands(func(op *Operand, role OperandRole) {
		n++
		if err == nil {
			err = l.checkEngineOperand(in, &op.AP, n)
		}
	})
	if err != nil {
		return err
	}
	nOut := len(in.Outs)
	switch in.Op {
	case OpLoadStationary:
		st := &in.Ins[0].AP
		if st.Mem != MemSBUF {
			return l.failOp(in, nOut+1, "load_stationary reads SBUF, not %s", st.Mem)
		}
		if err := l.checkPerfMode(in, st); err != nil {
			return err
		}
		if int(st.PartCount) > l.ArrayRows {
			return l.failOp(in, nOut+1, "stationary tile has %d partitions; the PE array has %d rows", st.PartCount, l.ArrayRows)
		}
		if maxF := int64(l.ArrayCols) * int64(modeRows(in.Attrs.PerfMode)); st.FreeSize() > maxF {
			return l.failOp(in, nOut+1, "stationary free size %d exceeds %d (the PE array's %d columns)", st.FreeSize(), maxF, l.ArrayCols)
		}
	case OpMultiplyMoving:
		dst, mv := &in.Outs[0].AP, &in.Ins[0].AP
		if mv.Mem != MemSBUF {
			return l.failOp(in, 2, "multiply_moving reads its moving tile from SBUF, not %s", mv.Mem)
		}
		if dst.Mem != MemPSUM {
			return l.failOp(in, 1, "multiply_moving writes PSUM, not %s", dst.Mem)
		}
		if err := l.checkPerfMode(in, mv); err != nil {
			return err
		}
		if int(mv.PartCount) > l.ArrayRows {
			return l.failOp(in, 2, "moving tile has %d partitions; the PE array has %d rows", mv.PartCount, l.ArrayRows)
		}
		maxN := int64(l.MovingFreeMax)
		if dst.DType.IsHalf() {
			maxN = int64(l.MovingFreeMaxHalf)
		}
		// In double-row mode each moving partition carries modeRows rows
		// of the contraction: the moving tile is [128, rows, N] for an
		// output of N columns.
		rows := int64(modeRows(in.Attrs.PerfMode))
		if mv.FreeSize() > maxN*rows {
			return l.failOp(in, 2, "moving free size %d exceeds the limit of %d", mv.FreeSize(), maxN*rows)
		}
		if rows > 1 && dst.FreeSize()*rows != mv.FreeSize() {
			return l.failOp(in, 1, "multiply_moving output free size %d is not 1/%d of the double-row moving free size %d (the moving tile is [128, %d, N] for N output columns)", dst.FreeSize(), rows, mv.FreeSize(), rows)
		}
		if rows == 1 && dst.FreeSize() != mv.FreeSize() {
			return l.failOp(in, 1, "multiply_moving output free size %d differs from moving free size %d", dst.FreeSize(), mv.FreeSize())
		}
		if int(dst.PartCount) > l.ArrayCols {
			return l.failOp(in, 1, "multiply_moving output has %d partitions; the PE array has %d columns", dst.PartCount, l.ArrayCols)
		}
		if !l.MatmulMayCrossBanks {
			lo, hi := dst.ByteSpan()
			bank := l.PSUMBankBytes()
			if lo/bank != (hi-1)/bank {
				return l.failOp(in, 1, "multiply_moving output bytes %d:%d cross a PSUM bank boundary (%d bytes per bank)", lo, hi, bank)
			}
		}
	case OpTranspose:
		src, dst := &in.Ins[0].AP, &in.Outs[0].AP
		if in.Engine == EngineTensor {
			if src.Mem != MemSBUF {
				return l.failOp(in, nOut+1, "TensorE transpose reads SBUF and writes PSUM")
			}
			if dst.Mem != MemPSUM {
				return l.failOp(in, 1, "TensorE transpose reads SBUF and writes PSUM")
			}
			if int(src.PartCount) > l.ArrayRows || src.FreeSize() > int64(l.ArrayCols) {
				return l.failOp(in, nOut+1, "TensorE transpose input [%d, %d] exceeds the %dx%d array", src.PartCount, src.FreeSize(), l.ArrayRows, l.ArrayCols)
			}
		} else {
			m := int64(l.VectorTransposeMax)
			if int64(src.PartCount) > m || src.FreeSize() > m {
				return l.failOp(in, nOut+1, "VectorE transpose input [%d, %d] exceeds %dx%d", src.PartCount, src.FreeSize(), m, m)
			}
		}
		if int64(dst.PartCount) != src.FreeSize() || dst.FreeSize() != int64(src.PartCount) {
			return l.failOp(in, 1, "transpose output [%d, %d] is not the transpose of input [%d, %d]", dst.PartCount, dst.FreeSize(), src.PartCount, src.FreeSize())
		}
	case OpBNStats:
		if n := in.Ins[0].AP.FreeSize(); n > l.BNStatsFreeMax {
			return l.failOp(in, nOut+1, "bn_stats free size %d exceeds %d", n, l.BNStatsFreeMax)
		}
	}
	if in.Engine == EngineVector || in.Engine == EngineScalar || in.Engine == EngineGpSimd {
		var err error
		i := 0
		in.Operands(func(op *Operand, role OperandRole) {
			i++
			if err != nil {
				return
			}
			n := op.AP.FreeSize()
			if op.AP.Mem == MemPSUM && n > l.VectorFreeMaxPSUM {
				err = l.failOp(in, i, "free size %d from PSUM exceeds %d", n, l.VectorFreeMaxPSUM)
			}
			if op.AP.Mem == MemSBUF && n > l.VectorFreeMaxSBUF {
				err = l.failOp(in, i, "free size %d from SBUF exceeds %d", n, l.VectorFreeMaxSBUF)
			}
			if op.AP.Mem == MemPSUM && in.Engine == EngineGpSimd && !l.GpSimdPSUMAccess {
				err = l.failOp(in, i, "GpSimd cannot access PSUM")
			}
		})
		if err != nil {
			return err
		}
	}
	if in.Op == OpBarrier {
		for _, c := range in.Attrs.BarrierCores {
			if err := l.checkSem(in, c, "cores", 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkPerfMode checks a TensorE performance mode against the hardware and
// the tile's dtype (reference §2.2): double row takes fp8e4/fp8e5 (FP8_E3
// runs at the BF16 rate), and MX quad needs MX dtypes, which the ISA does
// not have yet.
func (l *Limits) checkPerfMode(in *Instruction, ap *AccessPattern) error {
	switch in.Attrs.PerfMode {
	case 2:
		if !l.FP8DoubleRow {
			return l.failAttr(in, "perf", 0, "FP8 double-row mode (perf=2) is NeuronCore-v3 only (this hardware has no fp8_double_row)")
		}
		if ap.DType != FP8E4 && ap.DType != FP8E5 {
			return l.failAttr(in, "perf", 0, "FP8 double-row mode (perf=2) takes fp8e4 or fp8e5 tiles, not %s (fp8e3 runs at the BF16 rate: perf=0)", ap.DType)
		}
	case 4:
		if !l.MXQuad {
			return l.failAttr(in, "perf", 0, "MX quad mode (perf=4) needs NeuronCore-v4")
		}
		return l.failAttr(in, "perf", 0, "MX quad mode (perf=4) needs MX tiles (MXFP8/MXFP4 with scales), which trnsim's ISA does not have yet")
	}
	return nil
}

// PerfModeRows returns how many array rows of contraction a TensorE
// performance mode packs per PE row: 1 normally, 2 in FP8 double-row mode,
// 4 in MX quad mode.
func PerfModeRows(perf uint8) int { return modeRows(perf) }

func modeRows(perf uint8) int {
	switch perf {
	case 2:
		return 2
	case 4:
		return 4
	}
	return 1
}

// checkSem checks a semaphore named by the i-th repeat of attr.
func (l *Limits) checkSem(in *Instruction, s SemRef, attr string, i int) error {
	if int(s.Chip) < 0 || int(s.Chip) >= l.Chips || int(s.Core) < 0 || int(s.Core) >= l.CoresPerChip {
		return l.failAttr(in, attr, i, "semaphore s%d names chip %d core %d, which does not exist", s.ID, s.Chip, s.Core)
	}
	if s.ID < 0 || int(s.ID) >= l.Semaphores {
		return l.failAttr(in, attr, i, "semaphore s%d out of range (config has %d per core)", s.ID, l.Semaphores)
	}
	return nil
}

// checkEngineOperand applies the SBUF/PSUM access rules of compute engines:
// partition ranges and start rules, and the uint16/int16 access-pattern fields.
func (l *Limits) checkEngineOperand(in *Instruction, ap *AccessPattern, n int) error {
	if ap.Mem == MemHBM {
		return l.failOp(in, n, "%s cannot access HBM directly; use a DMA transfer", in.Engine)
	}
	if err := l.checkPartitions(in, ap, n); err != nil {
		return err
	}
	if ap.Chip != in.Chip || ap.Core != in.Core {
		return l.failOp(in, n, "%s operand belongs to chip %d core %d, not the issuing core", ap.Mem, ap.Chip, ap.Core)
	}
	// Partition start rules (reference §3), scaled to the configured count.
	p := int32(l.Partitions)
	switch {
	case ap.PartCount > p/2:
		if ap.PartStart != 0 {
			return l.failOp(in, n, "an access of %d partitions must start at partition 0, not %d", ap.PartCount, ap.PartStart)
		}
	case ap.PartCount > p/4:
		if ap.PartStart%(p/2) != 0 {
			return l.failOp(in, n, "an access of %d partitions must start at partition 0 or %d, not %d", ap.PartCount, p/2, ap.PartStart)
		}
	default:
		if q := p / 4; q > 0 && ap.PartStart%q != 0 && int32(ap.PartStart/q) != (ap.PartStart+ap.PartCount-1)/q {
			return l.failOp(in, n, "an access of %d partitions starting at %d crosses a %d-partition quadrant", ap.PartCount, ap.PartStart, q)
		}
	}
	for i := uint8(0); i < ap.NDims; i++ {
		d := ap.Dims[i]
		if d.Size > l.APSizeMax {
			return l.failOp(in, n, "access-pattern size %d exceeds %d", d.Size, l.APSizeMax)
		}
		if d.Stride < l.APStrideMin || d.Stride > l.APStrideMax {
			return l.failOp(in, n, "access-pattern stride %d outside [%d, %d]", d.Stride, l.APStrideMin, l.APStrideMax)
		}
	}
	return nil
}

func (l *Limits) checkPartitions(in *Instruction, ap *AccessPattern, n int) error {
	if ap.PartCount <= 0 || ap.PartStart < 0 || int(ap.PartStart+ap.PartCount) > l.Partitions {
		return l.failOp(in, n, "partitions %d:%d outside 0:%d", ap.PartStart, ap.PartStart+ap.PartCount, l.Partitions)
	}
	lo, hi := ap.ByteSpan()
	capB := l.SBUFPartitionBytes
	if ap.Mem == MemPSUM {
		capB = l.PSUMPartitionBytes
	}
	if lo < 0 || hi > capB {
		return l.failOp(in, n, "%s bytes %d:%d outside the %d bytes of a partition", ap.Mem, lo, hi, capB)
	}
	return nil
}

func (l *Limits) checkDMA(in *Instruction) error {
	a := in.Attrs
	if a.Queue < 0 || int(a.Queue) >= l.DMAQueues {
		return l.failAttr(in, "queue", 0, "DMA queue %d out of range (0..%d)", a.Queue, l.DMAQueues-1)
	}
	switch a.DGE {
	case DGEHardware:
		if !l.HardwareDGE {
			return l.failAttr(in, "dge", 0, "hardware DGE (dge=hw) needs NeuronCore-v3 or later")
		}
		if in.Engine != EngineSync && in.Engine != EngineScalar {
			return l.failAttr(in, "dge", 0, "hardware DGE is triggered from the sync or scalar sequencer, not %s", in.Engine)
		}
		if (in.Op == OpDMAGather || in.Op == OpDMAScatter) && !l.DMAIndirectHWDGE {
			return l.failAttr(in, "dge", 0, "hardware DGE cannot do indirect (gather/scatter) transfers; use dge=sw")
		}
	case DGESoftware:
		if in.Engine != EngineGpSimd {
			return l.failAttr(in, "dge", 0, "software DGE (dge=sw) runs on gpsimd, not %s", in.Engine)
		}
	}
	dst, src := &in.Outs[0].AP, &in.Ins[0].AP
	for i, ap := range []*AccessPattern{dst, src} {
		if ap.Mem.OnChip() {
			if err := l.checkPartitions(in, ap, i+1); err != nil {
				return err
			}
			if ap.Mem == MemPSUM && in.Op != OpDMACopy {
				return l.failOp(in, i+1, "%s cannot use PSUM", in.Op)
			}
		}
	}
	switch in.Op {
	case OpDMACopy:
		if a := in.Attrs.Accumulate; a != ALUNone {
			// A read-modify-write at the destination (NKI's dma_copy
			// dst_rmw_op): only add, in SBUF or HBM, without a cast.
			if a != ALUAdd {
				return l.failAttr(in, "acc", 0, "dma_copy accumulates only with acc=add, not acc=%s", a)
			}
			if dst.Mem == MemPSUM {
				return l.failOp(in, 1, "dma_copy acc=add writes SBUF or HBM, not PSUM")
			}
			if dst.DType != src.DType {
				return l.failOp(in, 1, "dma_copy acc=add cannot cast %s to %s", src.DType, dst.DType)
			}
		}
		if dst.Elements() != src.Elements() {
			return l.failOp(in, 1, "dma_copy moves %d elements into %d", src.Elements(), dst.Elements())
		}
		if dst.DType != src.DType && (!dst.DType.IsFloat() && !src.DType.IsFloat()) && dst.DType.Bytes() != src.DType.Bytes() {
			return l.failOp(in, 1, "dma_copy cannot cast %s to %s", src.DType, dst.DType)
		}
	case OpDMATranspose:
		if dst.DType.Bytes() != 2 && dst.DType.Bytes() != 4 {
			return l.failOp(in, 1, "dma_transpose supports 2- and 4-byte dtypes, not %s", dst.DType)
		}
		if dst.Elements() != src.Elements() {
			return l.failOp(in, 1, "dma_transpose moves %d elements into %d", src.Elements(), dst.Elements())
		}
		if dst.Mem != MemSBUF {
			return l.failOp(in, 1, "dma_transpose writes SBUF, not %s", dst.Mem)
		}
	case OpDMAGather, OpDMAScatter:
		idx := &in.Ins[1].AP
		if idx.Mem != MemSBUF {
			return l.failOp(in, 3, "%s index tensor must be in SBUF, not %s", in.Op, idx.Mem)
		}
		if idx.DType != INT32 && idx.DType != UINT32 && idx.DType != INT16 && idx.DType != UINT16 {
			return l.failOp(in, 3, "%s index tensor must be an integer dtype, not %s", in.Op, idx.DType)
		}
	}
	return nil
}

func engineList(op Opcode) string {
	var names []string
	for _, e := range op.EnginesOf() {
		names = append(names, e.String())
	}
	return joinNames(names)
}

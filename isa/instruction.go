package isa

// SemRef names a semaphore: its index on the board of (Chip, Core).
type SemRef struct {
	Chip, Core int32
	ID         int32
}

// SemWait holds an instruction until semaphore Sem has reached at least Value.
// Semaphores only count up.
type SemWait struct {
	Sem   SemRef
	Value int64
}

// SemSignal increments Sem by Add when the instruction completes. For a DMA
// transfer every DMA engine of the core adds Add (reference §4: all 16
// engines write a semaphore update even when idle), so a transfer that
// signals `s3` raises it by 16 on a 16-engine core.
type SemSignal struct {
	Sem SemRef
	Add int64
}

// Attrs are the opcode-specific fields of an instruction. Unused fields are
// zero. Fields are ordered by size, which keeps the struct (and so every
// instruction) small.
type Attrs struct {
	// ALU immediates: tensor_scalar uses ALU0/Imm0 and ALU1/Imm1;
	// scalar_tensor_tensor uses both ALUs with Imm0.
	Imm0, Imm1 float64
	// Activation: Func(in*Scale + bias).
	Scale float64
	// Memset value; iota base and step.
	Value float64
	Step  float64
	// Barrier: the cores whose semaphore BarrierSem is incremented; the
	// instruction then waits for the local BarrierSem to reach Target.
	BarrierCores []SemRef
	Target       int64
	BarrierSem   int32

	// DMA: queue ID (0..15) and descriptor generation.
	Queue int16
	DGE   DGEKind

	// Matmul accumulation group flags (multiply_moving): Start zeroes the
	// PSUM accumulator, Stop closes the group.
	Start, Stop bool
	// PerfMode selects TensorE fast modes: 0 normal, 2 FP8 double-row, 4 MX
	// quad.
	PerfMode uint8

	// ALU operators (tensor_tensor and tensor_reduce use ALU0).
	ALU0, ALU1 ALUOp
	// Axis is a tensor_reduce option: reduce over the last Axis free
	// dimensions (1 = innermost).
	Axis uint8
	// Func is the activation function; Accumulate, when not ALUNone,
	// reduces the activation's result per partition into the accumulator
	// with that operator.
	Func       ActFunc
	Accumulate ALUOp

	// Via, on a DMA copy, says the transfer stands for one to core ViaCore
	// of chip ViaChip (symmetric-core reuse: a simulated rank's transfer to
	// a rank that is not simulated lands where the simulated rank that
	// mirrors it receives the same data): its route, fabric latency and
	// semaphore updates are that destination's; its bytes land, and load
	// HBM, where its output operand says, as the write of the transfer it
	// mirrors, issued by core MirrorCore of chip MirrorChip (whose DMA
	// engines, not this core's, the write counts as on the HBM stack).
	Via                    bool
	ViaChip, ViaCore       int32
	MirrorChip, MirrorCore int32
	// LinkImages, on such a transfer, are the chips (from, to, in pairs)
	// of the transfers of the ranks not simulated that are its images:
	// their bytes cross the links of those routes when its own do, so
	// that the links carry every rank's traffic.
	LinkImages []int32
}

// Body is what an instruction does: its opcode, engine, placement,
// operands, attributes and workload op. What varies from one execution of
// the same work to the next — the semaphore waits and signals, and the HBM
// offset of a tile that moves every iteration — lives in the Instruction
// instead, so a program names a small set of bodies many times.
//
// ID identifies the body within its program: two bodies of one program
// with the same non-zero ID are equal, field by field. The simulator's
// decode cache checks and costs a body once per ID; a body with ID 0 is
// decoded afresh every time. A body must not change once an instruction
// naming it has been handed out.
type Body struct {
	ID     uint64
	Op     Opcode
	Engine Engine
	Chip   int32
	Core   int32
	Outs   []Operand
	Ins    []Operand
	Attrs  Attrs
	// OpID is the id of the workload op this instruction came from (0: none).
	OpID int32
}

// Instruction is one line of the canonical assembly: one engine instruction
// or one DMA transfer (counted once however many DMA engines serve it). It
// is a body plus what varies per execution.
type Instruction struct {
	*Body
	Waits  []SemWait
	Signal []SemSignal
	// HBMOffset is added to the byte offset of every HBM operand of the
	// body (the access pattern's Offset): the same transfer body moves
	// another tile of an HBM tensor.
	HBMOffset int64
	// Line is the assembly line it was read from (0 when generated).
	Line int32
}

// Operands returns every operand with its role, outputs first.
func (b *Body) Operands(fn func(op *Operand, role OperandRole)) {
	for i := range b.Outs {
		fn(&b.Outs[i], RoleWrite)
	}
	for i := range b.Ins {
		fn(&b.Ins[i], RoleRead)
	}
}

// MainInput returns the input whose free size is N in the cost formulas (the
// first input), or the output when the instruction has no input.
func (b *Body) MainInput() *AccessPattern {
	if len(b.Ins) > 0 {
		return &b.Ins[0].AP
	}
	if len(b.Outs) > 0 {
		return &b.Outs[0].AP
	}
	return nil
}

// HBMAP returns operand op's access pattern as this instruction executes
// it: for an HBM operand, with the instruction's HBMOffset added.
func (in *Instruction) HBMAP(op *Operand) AccessPattern {
	if op.AP.Mem == MemHBM && in.HBMOffset != 0 {
		return op.AP.Shifted(in.HBMOffset)
	}
	return op.AP
}

package isa

import (
	"fmt"
	"strings"
)

// Engine names one of a NeuronCore's instruction sequencers.
type Engine uint8

// The engines of a NeuronCore. Each runs its own instruction stream; only
// semaphores order them.
const (
	EngineTensor Engine = iota
	EngineVector
	EngineScalar
	EngineGpSimd
	EngineSync
	NumEngines
)

var engineNames = [...]string{"tensor", "vector", "scalar", "gpsimd", "sync"}

// String returns the engine's assembly name.
func (e Engine) String() string {
	if int(e) < len(engineNames) {
		return engineNames[e]
	}
	return fmt.Sprintf("engine(%d)", uint8(e))
}

// ParseEngine converts an assembly engine name to an Engine.
func ParseEngine(s string) (Engine, bool) {
	for i, n := range engineNames {
		if n == s {
			return Engine(i), true
		}
	}
	return 0, false
}

// AllEngines lists the engines in their canonical order.
func AllEngines() []Engine {
	return []Engine{EngineTensor, EngineVector, EngineScalar, EngineGpSimd, EngineSync}
}

// Memory names where an operand lives.
type Memory uint8

// The memories an operand can name.
const (
	MemHBM Memory = iota
	MemSBUF
	MemPSUM
)

var memoryNames = [...]string{"hbm", "sbuf", "psum"}

// String returns the assembly name of the memory.
func (m Memory) String() string {
	if int(m) < len(memoryNames) {
		return memoryNames[m]
	}
	return fmt.Sprintf("memory(%d)", uint8(m))
}

// OnChip reports whether the memory is SBUF or PSUM (partitioned).
func (m Memory) OnChip() bool { return m == MemSBUF || m == MemPSUM }

// ParseMemory converts an assembly memory name.
func ParseMemory(s string) (Memory, bool) {
	for i, n := range memoryNames {
		if n == s {
			return Memory(i), true
		}
	}
	return 0, false
}

// DType is an element type.
type DType uint8

// Element types. The zero value is FP32.
const (
	FP32 DType = iota
	BF16
	FP16
	TF32
	FP8E4
	FP8E5
	FP8E3
	INT32
	UINT32
	INT16
	UINT16
	INT8
	UINT8
	numDTypes
)

type dtypeInfo struct {
	name  string
	bytes int
	float bool
}

var dtypeTable = [...]dtypeInfo{
	FP32:   {"fp32", 4, true},
	BF16:   {"bf16", 2, true},
	FP16:   {"fp16", 2, true},
	TF32:   {"tf32", 4, true},
	FP8E4:  {"fp8e4", 1, true},
	FP8E5:  {"fp8e5", 1, true},
	FP8E3:  {"fp8e3", 1, true},
	INT32:  {"int32", 4, false},
	UINT32: {"uint32", 4, false},
	INT16:  {"int16", 2, false},
	UINT16: {"uint16", 2, false},
	INT8:   {"int8", 1, false},
	UINT8:  {"uint8", 1, false},
}

// String returns the assembly name of the dtype.
func (d DType) String() string {
	if d < numDTypes {
		return dtypeTable[d].name
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Bytes returns the element size in bytes.
func (d DType) Bytes() int {
	if d < numDTypes {
		return dtypeTable[d].bytes
	}
	return 0
}

// IsFloat reports whether the dtype is a floating-point type.
func (d DType) IsFloat() bool { return d < numDTypes && dtypeTable[d].float }

// IsFP8 reports whether the dtype is one of the 8-bit float types.
func (d DType) IsFP8() bool { return d == FP8E4 || d == FP8E5 || d == FP8E3 }

// IsHalf reports whether the dtype is BF16 or FP16.
func (d DType) IsHalf() bool { return d == BF16 || d == FP16 }

// ParseDType converts an assembly dtype name.
func ParseDType(s string) (DType, bool) {
	for i, info := range dtypeTable {
		if info.name == s {
			return DType(i), true
		}
	}
	return 0, false
}

// DTypeNames lists every dtype name, for error messages and docs.
func DTypeNames() []string {
	out := make([]string, 0, len(dtypeTable))
	for _, info := range dtypeTable {
		out = append(out, info.name)
	}
	return out
}

// ALUOp is an arithmetic or logical operator used by VectorE/ScalarE/GpSimd
// instructions (tensor_tensor, tensor_scalar, tensor_reduce, accumulate).
type ALUOp uint8

// ALU operators. ALUNone means "no operator".
const (
	ALUNone ALUOp = iota
	ALUAdd
	ALUSubtract
	ALUMultiply
	ALUDivide
	ALUMax
	ALUMin
	ALUBypass
	ALUIsEqual
	ALUIsGreater
	ALUIsGE
	ALUIsLess
	ALUIsLE
	ALUAnd
	ALUOr
	ALUXor
	ALUPow
	numALUOps
)

var aluNames = [...]string{"none", "add", "subtract", "multiply", "divide", "max", "min",
	"bypass", "is_equal", "is_gt", "is_ge", "is_lt", "is_le", "and", "or", "xor", "pow"}

// String returns the assembly name of the operator.
func (a ALUOp) String() string {
	if a < numALUOps {
		return aluNames[a]
	}
	return fmt.Sprintf("alu(%d)", uint8(a))
}

// ParseALUOp converts an assembly operator name.
func ParseALUOp(s string) (ALUOp, bool) {
	for i, n := range aluNames {
		if n == s {
			return ALUOp(i), true
		}
	}
	return 0, false
}

// IsSimpleArith reports add, subtract or multiply: the operators that VectorE
// runs at the fast tensor_tensor rate.
func (a ALUOp) IsSimpleArith() bool {
	return a == ALUAdd || a == ALUSubtract || a == ALUMultiply
}

// ActFunc is a ScalarE activation function.
type ActFunc uint8

// Activation functions. Every function costs the same on ScalarE.
const (
	ActIdentity ActFunc = iota
	ActCopy
	ActExp
	ActLog
	ActTanh
	ActSigmoid
	ActRelu
	ActGelu
	ActGeluTanh
	ActSilu
	ActSqrt
	ActRsqrt
	ActSquare
	ActReciprocal
	ActSin
	ActErf
	numActFuncs
)

var actNames = [...]string{"identity", "copy", "exp", "log", "tanh", "sigmoid", "relu", "gelu",
	"gelu_tanh", "silu", "sqrt", "rsqrt", "square", "reciprocal", "sin", "erf"}

// String returns the assembly name of the function.
func (f ActFunc) String() string {
	if f < numActFuncs {
		return actNames[f]
	}
	return fmt.Sprintf("act(%d)", uint8(f))
}

// ParseActFunc converts an assembly activation name.
func ParseActFunc(s string) (ActFunc, bool) {
	for i, n := range actNames {
		if n == s {
			return ActFunc(i), true
		}
	}
	return 0, false
}

// DGEKind says who generates a DMA transfer's descriptors.
type DGEKind uint8

// Descriptor generation kinds (reference §4).
const (
	// DGENone: descriptors built ahead of time on the host and stored in HBM.
	DGENone DGEKind = iota
	// DGESoftware: GpSimd builds descriptors at run time (gather/scatter).
	DGESoftware
	// DGEHardware: one of the core's hardware DGE blocks (NC-v3 and later).
	DGEHardware
)

var dgeNames = [...]string{"none", "sw", "hw"}

// String returns the assembly name.
func (k DGEKind) String() string {
	if int(k) < len(dgeNames) {
		return dgeNames[k]
	}
	return fmt.Sprintf("dge(%d)", uint8(k))
}

// ParseDGEKind converts an assembly DGE name.
func ParseDGEKind(s string) (DGEKind, bool) {
	for i, n := range dgeNames {
		if n == s {
			return DGEKind(i), true
		}
	}
	return 0, false
}

func joinNames(names []string) string { return strings.Join(names, ", ") }

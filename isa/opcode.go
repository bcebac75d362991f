package isa

import "fmt"

// Opcode identifies what an instruction does. The same opcode may run on
// several engines (tensor_copy on VectorE, ScalarE or GpSimd); its cost then
// comes from that engine's row of the cost table.
type Opcode uint8

// Opcodes. Names follow the NKI ISA (reference §2, §6.1).
const (
	OpNop Opcode = iota

	// TensorE.
	OpLoadStationary // cache the stationary tile in the PE array
	OpMultiplyMoving // stream the moving tile; accumulate into PSUM
	OpTranspose      // TensorE (PE) transpose, or VectorE 32x32 transpose

	// ScalarE.
	OpActivation         // func(in*scale + bias), optional accumulate
	OpActReadAccumulator // read out the activation accumulator

	// VectorE (some also on ScalarE/GpSimd).
	OpTensorTensor
	OpTensorScalar
	OpScalarTensorTensor
	OpTensorReduce
	OpTensorCopy
	OpMemset
	OpBNStats
	OpBNAggr
	OpReciprocal
	OpSelect

	// GpSimd.
	OpIota

	// DMA triggers (issued by any sequencer; executed by the DMA engines).
	OpDMACopy      // copy, casting when source and destination dtypes differ
	OpDMATranspose // transposing transfer
	OpDMAGather    // indirect read: rows of src picked by an index tensor
	OpDMAScatter   // indirect write: rows of dst picked by an index tensor

	// Synchronisation.
	OpSemWait // wait only (uses the instruction's waits)
	OpSemInc  // increment only (uses the instruction's signals)
	OpBarrier // core barrier: signal every listed core, then wait locally

	numOpcodes
)

// NumOpcodes is the number of opcodes (for arrays indexed by Opcode).
const NumOpcodes = int(numOpcodes)

// OperandRole says how an instruction uses an operand.
type OperandRole uint8

// Operand roles.
const (
	RoleRead OperandRole = iota
	RoleWrite
)

// OpInfo describes an opcode: its name, which engines may run it and how many
// outputs and inputs it takes.
type OpInfo struct {
	Name    string
	Engines uint8 // bit mask over Engine
	// NumOut and NumIn are the exact operand counts; MinIn allows optional
	// trailing inputs (e.g. activation's bias).
	NumOut, MinIn, NumIn int
	IsDMA                bool
}

func engMask(es ...Engine) uint8 {
	var m uint8
	for _, e := range es {
		m |= 1 << e
	}
	return m
}

var anyEngine = engMask(EngineTensor, EngineVector, EngineScalar, EngineGpSimd, EngineSync)

var opTable = [numOpcodes]OpInfo{
	OpNop:                {Name: "nop", Engines: anyEngine},
	OpLoadStationary:     {Name: "load_stationary", Engines: engMask(EngineTensor), MinIn: 1, NumIn: 1},
	OpMultiplyMoving:     {Name: "multiply_moving", Engines: engMask(EngineTensor), NumOut: 1, MinIn: 1, NumIn: 1},
	OpTranspose:          {Name: "transpose", Engines: engMask(EngineTensor, EngineVector), NumOut: 1, MinIn: 1, NumIn: 1},
	OpActivation:         {Name: "activation", Engines: engMask(EngineScalar), NumOut: 1, MinIn: 1, NumIn: 3},
	OpActReadAccumulator: {Name: "act_read_accumulator", Engines: engMask(EngineScalar), NumOut: 1},
	OpTensorTensor:       {Name: "tensor_tensor", Engines: engMask(EngineVector, EngineGpSimd), NumOut: 1, MinIn: 2, NumIn: 2},
	OpTensorScalar:       {Name: "tensor_scalar", Engines: engMask(EngineVector, EngineScalar, EngineGpSimd), NumOut: 1, MinIn: 1, NumIn: 3},
	OpScalarTensorTensor: {Name: "scalar_tensor_tensor", Engines: engMask(EngineVector, EngineGpSimd), NumOut: 1, MinIn: 2, NumIn: 3},
	OpTensorReduce:       {Name: "tensor_reduce", Engines: engMask(EngineVector, EngineGpSimd), NumOut: 1, MinIn: 1, NumIn: 1},
	OpTensorCopy:         {Name: "tensor_copy", Engines: engMask(EngineVector, EngineScalar, EngineGpSimd), NumOut: 1, MinIn: 1, NumIn: 1},
	OpMemset:             {Name: "memset", Engines: engMask(EngineVector, EngineGpSimd), NumOut: 1},
	OpBNStats:            {Name: "bn_stats", Engines: engMask(EngineVector), NumOut: 1, MinIn: 1, NumIn: 1},
	OpBNAggr:             {Name: "bn_aggr", Engines: engMask(EngineVector), NumOut: 1, MinIn: 1, NumIn: 1},
	OpReciprocal:         {Name: "reciprocal", Engines: engMask(EngineVector, EngineScalar), NumOut: 1, MinIn: 1, NumIn: 1},
	OpSelect:             {Name: "select", Engines: engMask(EngineVector, EngineGpSimd), NumOut: 1, MinIn: 3, NumIn: 3},
	OpIota:               {Name: "iota", Engines: engMask(EngineGpSimd), NumOut: 1},
	OpDMACopy:            {Name: "dma_copy", Engines: anyEngine, NumOut: 1, MinIn: 1, NumIn: 1, IsDMA: true},
	OpDMATranspose:       {Name: "dma_transpose", Engines: anyEngine, NumOut: 1, MinIn: 1, NumIn: 1, IsDMA: true},
	OpDMAGather:          {Name: "dma_gather", Engines: anyEngine, NumOut: 1, MinIn: 2, NumIn: 2, IsDMA: true},
	OpDMAScatter:         {Name: "dma_scatter", Engines: anyEngine, NumOut: 1, MinIn: 2, NumIn: 2, IsDMA: true},
	OpSemWait:            {Name: "sem_wait", Engines: anyEngine},
	OpSemInc:             {Name: "sem_inc", Engines: anyEngine},
	OpBarrier:            {Name: "barrier", Engines: anyEngine},
}

// Info returns the opcode's description.
func (o Opcode) Info() OpInfo {
	if o < numOpcodes {
		return opTable[o]
	}
	return OpInfo{Name: fmt.Sprintf("opcode(%d)", uint8(o))}
}

// String returns the assembly mnemonic.
func (o Opcode) String() string { return o.Info().Name }

// IsDMA reports whether the opcode triggers a DMA transfer.
func (o Opcode) IsDMA() bool { return o >= OpDMACopy && o <= OpDMAScatter } // the DMA opcodes are consecutive (TestIsDMAMatchesTheTable)

// RunsOn reports whether the opcode may be issued by engine e.
func (o Opcode) RunsOn(e Engine) bool {
	return o < numOpcodes && opTable[o].Engines&(1<<e) != 0
}

// ParseOpcode converts an assembly mnemonic.
func ParseOpcode(s string) (Opcode, bool) {
	for i := range opTable {
		if opTable[i].Name == s {
			return Opcode(i), true
		}
	}
	return 0, false
}

// AllOpcodes lists every opcode in table order.
func AllOpcodes() []Opcode {
	out := make([]Opcode, 0, numOpcodes)
	for i := Opcode(0); i < numOpcodes; i++ {
		out = append(out, i)
	}
	return out
}

// EnginesOf lists the engines an opcode may run on.
func (o Opcode) EnginesOf() []Engine {
	var out []Engine
	for _, e := range AllEngines() {
		if o.RunsOn(e) {
			out = append(out, e)
		}
	}
	return out
}

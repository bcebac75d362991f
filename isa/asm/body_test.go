package asm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/isa"
)

// bodyHeader declares the buffers the body-sharing programs use.
const bodyHeader = `.version 1
.buffer A hbm bf16 [256, 512]
.buffer x sbuf bf16 [128, 512]
.buffer y sbuf bf16 [128, 512]
.buffer w sbuf bf16 [128, 128]
.buffer acc psum fp32 [128, 512]
`

// allInstructions returns every instruction of p, stream by stream.
func allInstructions(t *testing.T, p *isa.Program) []*isa.Instruction {
	t.Helper()
	var out []*isa.Instruction
	for _, s := range p.Streams {
		out = append(out, drain(t, s)...)
	}
	return out
}

// Two lines with the same text but for waits and signals (and their
// position in the file) share one body: the same pointer, so the same
// non-zero ID, while waits, signals and the line stay per instruction.
func TestIdenticalLinesShareABody(t *testing.T) {
	p := mustParse(t, bodyHeader+`vector tensor_copy y, x
vector tensor_copy y, x wait=s1>=1
vector   tensor_copy  y,x    signal=s2 ; a comment
vector tensor_copy y, x wait=s1>=2 wait=s3>=16 signal=s4+2
`)
	ins := streamOf(t, p, isa.StreamKey{Engine: isa.EngineVector})
	require.Len(t, ins, 4)
	for i, in := range ins {
		assert.NotZero(t, in.ID, "line %d", in.Line)
		assert.Same(t, ins[0].Body, in.Body, "instruction %d", i)
	}
	assert.Empty(t, ins[0].Waits)
	assert.Equal(t, []isa.SemWait{{Sem: isa.SemRef{ID: 1}, Value: 1}}, ins[1].Waits)
	assert.Equal(t, []isa.SemSignal{{Sem: isa.SemRef{ID: 2}, Add: 1}}, ins[2].Signal)
	assert.Len(t, ins[3].Waits, 2)
	assert.Equal(t, []int32{7, 8, 9, 10}, []int32{ins[0].Line, ins[1].Line, ins[2].Line, ins[3].Line})
	// Parsed assembly never moves an HBM operand per instance.
	for _, in := range allInstructions(t, p) {
		assert.Zero(t, in.HBMOffset)
	}
}

// The key is the canonical text of the body: attributes in another order,
// or an attribute written at its default, give the same body.
func TestBodyKeyIsTheCanonicalText(t *testing.T) {
	p := mustParse(t, bodyHeader+`vector tensor_scalar y, x alu0=multiply imm0=0.5 alu1=add imm1=1
vector tensor_scalar y, x imm1=1 alu1=add imm0=0.5 alu0=multiply
scalar activation y, x func=exp
scalar activation y, x func=exp scale=1
`)
	v := streamOf(t, p, isa.StreamKey{Engine: isa.EngineVector})
	require.Len(t, v, 2)
	assert.Same(t, v[0].Body, v[1].Body)
	s := streamOf(t, p, isa.StreamKey{Engine: isa.EngineScalar})
	require.Len(t, s, 2)
	assert.Same(t, s[0].Body, s[1].Body)
	assert.NotEqual(t, v[0].ID, s[0].ID)
}

// Lines that differ in anything the body holds do not share it.
func TestDifferentLinesHaveDifferentBodies(t *testing.T) {
	base := "vector tensor_copy y, x"
	tests := []struct {
		name  string
		other string
	}{
		{"output operand", "vector tensor_copy x, y"},
		{"input slice", "vector tensor_copy y, x[0:64, 0:512]"},
		{"slice step", "vector tensor_copy y[0:128, 0:256], x[0:128, 0:512:2]"},
		{"engine", "gpsimd tensor_copy y, x"},
		{"opcode", "vector reciprocal y, x"},
		{"op id", "vector tensor_copy y, x op=3"},
		// The same bytes written another way is another text, so another
		// body (the key is the text, not the access pattern).
		{"spelling of the same view", "vector tensor_copy y, x[0:128, 0:512]"},
		{"core", ".core 0 1\nvector tensor_copy y, x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := mustParse(t, bodyHeader+base+"\n"+tc.other+"\n")
			ins := allInstructions(t, p)
			require.Len(t, ins, 2)
			assert.NotSame(t, ins[0].Body, ins[1].Body)
			assert.NotEqual(t, ins[0].ID, ins[1].ID)
			assert.NotZero(t, ins[0].ID)
			assert.NotZero(t, ins[1].ID)
		})
	}

	attrs := []struct {
		name, a, b string
	}{
		{"alu", "vector tensor_tensor y, x, y alu=add", "vector tensor_tensor y, x, y alu=max"},
		{"immediate", "vector tensor_scalar y, x alu0=add imm0=1", "vector tensor_scalar y, x alu0=add imm0=2"},
		{"memset value", "vector memset y value=0", "vector memset y value=1"},
		{"activation function", "scalar activation y, x func=exp", "scalar activation y, x func=gelu"},
		{"start flag", "tensor multiply_moving acc, x start", "tensor multiply_moving acc, x"},
		{"queue", "sync dma_copy x, A[0:128, 0:512] queue=0", "sync dma_copy x, A[0:128, 0:512] queue=1"},
		{"dge", "sync dma_copy x, A[0:128, 0:512] dge=none", "sync dma_copy x, A[0:128, 0:512] dge=hw"},
		{"hbm offset", "sync dma_copy x, A[0:128, 0:512]", "sync dma_copy x, A[128:256, 0:512]"},
	}
	for _, tc := range attrs {
		t.Run(tc.name, func(t *testing.T) {
			p := mustParse(t, bodyHeader+tc.a+"\n"+tc.b+"\n")
			ins := allInstructions(t, p)
			require.Len(t, ins, 2)
			assert.NotSame(t, ins[0].Body, ins[1].Body)
			assert.NotEqual(t, ins[0].ID, ins[1].ID)
		})
	}
}

// IDs number the distinct bodies from 1 in order of first use; one ID
// always names one body. The engine and the core are part of the body, so
// no body is shared between streams.
func TestBodyIDsAreDenseAndPerProgram(t *testing.T) {
	p := mustParse(t, bodyHeader+`vector tensor_copy y, x
vector memset y value=0
vector tensor_copy y, x
vector memset y value=0
gpsimd memset y value=0
.core 0 1
vector memset y value=0
`)
	ids := map[uint64]*isa.Body{}
	for _, in := range allInstructions(t, p) {
		if b, ok := ids[in.ID]; ok {
			assert.Same(t, b, in.Body, "one ID, one body")
		}
		ids[in.ID] = in.Body
	}
	assert.Len(t, ids, 4)
	for id := uint64(1); id <= 4; id++ {
		assert.Contains(t, ids, id)
	}
}

// The matmul shorthand's load_stationary is the body an explicit
// load_stationary of the same tile has; its waits stay on the instruction.
func TestMatmulSugarSharesTheLoadBody(t *testing.T) {
	p := mustParse(t, bodyHeader+`tensor load_stationary w
tensor matmul acc, w, x start wait=s1>=16
tensor multiply_moving acc, x start signal=s5
`)
	ins := streamOf(t, p, isa.StreamKey{Engine: isa.EngineTensor})
	require.Len(t, ins, 4)
	assert.Same(t, ins[0].Body, ins[1].Body)
	assert.Same(t, ins[2].Body, ins[3].Body)
	assert.NotSame(t, ins[0].Body, ins[2].Body)
	assert.Len(t, ins[1].Waits, 1)
	assert.Empty(t, ins[0].Waits)
	assert.Len(t, ins[3].Signal, 1)
	assert.Empty(t, ins[2].Signal)
}

// Printing a program whose instructions share bodies and parsing it again
// shares them the same way.
func TestSharedBodiesSurviveTheRoundTrip(t *testing.T) {
	src := bodyHeader + `vector tensor_copy y, x wait=s1>=1
vector memset y value=0
vector tensor_copy y, x signal=s2
vector memset y value=0 wait=s2>=1
`
	p := mustParse(t, src)
	p2 := mustParse(t, mustPrint(t, p))
	shape := func(p *isa.Program) []uint64 {
		var ids []uint64
		for _, in := range allInstructions(t, p) {
			ids = append(ids, in.ID)
		}
		return ids
	}
	assert.Equal(t, []uint64{1, 2, 1, 2}, shape(p))
	assert.Equal(t, shape(p), shape(p2))
}

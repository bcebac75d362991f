package isa

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decodeModel is a cost model whose vector tensor_copy costs N cycles, or
// N/2 with the accumulate flag's stand-in (an ALU), and whose TensorE
// multiply costs NS + N.
func decodeModel(t *testing.T) *CostModel {
	t.Helper()
	table := minimalTable()
	for i := range table.Rules {
		r := &table.Rules[i]
		switch r.Op {
		case "tensor_copy":
			r.Variants = []CostVariant{{Name: "default", Interval: "N", Tag: "U"}}
		case "tensor_scalar":
			r.Variants = []CostVariant{
				{Name: "add", When: []string{"add_max"}, Interval: "N / 2", Tag: "U"},
				{Name: "default", Interval: "N", Tag: "U"}}
		case "multiply_moving":
			r.Variants = []CostVariant{{Name: "default", Interval: "NS + N", Tag: "U"}}
		}
	}
	m, err := table.Compile()
	require.NoError(t, err)
	return m
}

func TestDecodeCacheRecognisesRepeatedBodies(t *testing.T) {
	m := decodeModel(t)
	c := NewDecodeCache(trn2Limits(), m)
	outs := []Operand{sbufB(BF16, 128, 64).v(t)}
	ins := []Operand{sbufB(BF16, 128, 64).at(1024).v(t)}
	body := &Body{ID: 1, Op: OpTensorCopy, Engine: EngineVector, Outs: outs, Ins: ins}

	// Instructions naming one body, with new waits each time, decode once.
	for i := int64(1); i <= 3; i++ {
		in := &Instruction{Body: body, Waits: []SemWait{{Sem: SemRef{ID: 1}, Value: i}}}
		d, err := c.Decode(in)
		require.NoError(t, err)
		assert.Equal(t, int64(64), d.Cost(0).IntervalCycles)
		assert.Equal(t, m.Flags(in), d.Flags)
		assert.Same(t, body, d.Body())
	}
	assert.Equal(t, int64(1), c.Misses)
	assert.Equal(t, int64(2), c.Hits)

	// A hit still checks the waits and signals, which are not the body.
	_, err := c.Decode(&Instruction{Body: body, Waits: []SemWait{{Sem: SemRef{ID: 999}, Value: 1}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "semaphore s999 out of range")
	_, err = c.Decode(&Instruction{Body: body, Signal: []SemSignal{{Sem: SemRef{ID: 1}, Add: 0}}})
	require.Error(t, err)
	assert.Equal(t, int64(4), c.Hits)

	// Other IDs are other bodies (misses), whatever they hold.
	misses := c.Misses
	for i, b := range []*Body{
		{ID: 2, Op: OpTensorCopy, Engine: EngineVector, Outs: outs, Ins: ins},
		{ID: 3, Op: OpTensorScalar, Engine: EngineVector, Outs: outs, Ins: ins, Attrs: Attrs{ALU0: ALUAdd}},
		{ID: 4, Op: OpTensorScalar, Engine: EngineVector, Outs: outs, Ins: ins, Attrs: Attrs{ALU0: ALUMultiply}},
		{ID: 5, Op: OpTensorCopy, Engine: EngineGpSimd, Outs: outs, Ins: ins},
	} {
		in := &Instruction{Body: b}
		d, err := c.Decode(in)
		require.NoError(t, err)
		assert.Equal(t, m.CostOf(in, 0, &CostEnv{}), d.Cost(0), "body %d", i)
		misses++
		assert.Equal(t, misses, c.Misses)
	}
}

func TestDecodeCacheDoesNotKeepBodiesWithoutAnID(t *testing.T) {
	m := decodeModel(t)
	c := NewDecodeCache(trn2Limits(), m)
	outs := []Operand{sbufB(BF16, 128, 64).v(t)}
	b := &Body{Op: OpTensorCopy, Engine: EngineVector, Outs: outs, Ins: outs}
	for i := 0; i < 3; i++ {
		d, err := c.Decode(&Instruction{Body: b})
		require.NoError(t, err)
		assert.Equal(t, int64(64), d.Cost(0).IntervalCycles)
	}
	assert.Equal(t, int64(0), c.Hits+c.Misses, "ID 0 is decoded afresh, never looked up")
	// A changed ID-0 body is seen as changed.
	b2 := *b
	b2.Outs = []Operand{sbufB(BF16, 128, 32).v(t)}
	b2.Ins = b2.Outs
	d, err := c.Decode(&Instruction{Body: &b2})
	require.NoError(t, err)
	assert.Equal(t, int64(32), d.Cost(0).IntervalCycles)
}

func TestDecodeCacheChecksTheBodyOnAMiss(t *testing.T) {
	c := NewDecodeCache(trn2Limits(), decodeModel(t))
	hbm := []Operand{hbmB(BF16, 128, 64).v(t)}
	sb := []Operand{sbufB(BF16, 128, 64).v(t)}
	bad := &Instruction{Body: &Body{ID: 7, Op: OpTensorCopy, Engine: EngineVector, Outs: sb, Ins: hbm}}
	for i := 0; i < 2; i++ {
		_, err := c.Decode(bad)
		require.Error(t, err, "a body that failed is never remembered as good")
		assert.Contains(t, err.Error(), "cannot access HBM directly")
	}
	assert.Equal(t, int64(0), c.Hits)
}

func TestDecodedCostFollowsNS(t *testing.T) {
	c := NewDecodeCache(trn2Limits(), decodeModel(t))
	in := &Instruction{Body: &Body{ID: 1, Op: OpMultiplyMoving, Engine: EngineTensor, Outs: []Operand{psumB(FP32, 128, 512).v(t)},
		Ins: []Operand{sbufB(BF16, 128, 512).v(t)}}}
	d, err := c.Decode(in)
	require.NoError(t, err)
	assert.Equal(t, int64(512+128), d.Cost(128).IntervalCycles)
	assert.Equal(t, int64(512+64), d.Cost(64).IntervalCycles)
	assert.Equal(t, int64(512+128), d.Cost(128).IntervalCycles)
}

// TestDecodeCacheAgreesWithDirectCosting decodes a shuffled stream of
// instructions over more bodies than the cache has slots and checks every
// decoding against costing the instruction directly.
func TestDecodeCacheAgreesWithDirectCosting(t *testing.T) {
	m := decodeModel(t)
	c := NewDecodeCache(trn2Limits(), m)
	rng := rand.New(rand.NewSource(1))
	var operands [][]Operand
	for i := int64(0); i < 700; i++ {
		n := 1 + i%512
		operands = append(operands, []Operand{sbufB(BF16, 128, n).at(2 * i).v(t)})
	}
	ops := []Opcode{OpTensorCopy, OpTensorScalar}
	var bodies []*Body
	for i := 0; i < 3000; i++ {
		var b *Body
		if len(bodies) > 0 && rng.Intn(2) == 0 {
			b = bodies[rng.Intn(len(bodies))] // a body seen before
		} else {
			b = &Body{ID: uint64(len(bodies) + 1), Op: ops[rng.Intn(len(ops))], Engine: EngineVector,
				Outs: operands[rng.Intn(len(operands))], Ins: operands[rng.Intn(len(operands))],
				Attrs: Attrs{ALU0: ALUOp(rng.Intn(3))}}
			bodies = append(bodies, b)
		}
		in := &Instruction{Body: b, Waits: []SemWait{{Sem: SemRef{ID: int32(rng.Intn(4))}, Value: int64(i)}}}
		d, err := c.Decode(in)
		require.NoError(t, err)
		require.Equal(t, m.Flags(in), d.Flags, "instruction %d", i)
		require.Equal(t, m.CostOf(in, 0, &CostEnv{}), d.Cost(0), "instruction %d", i)
	}
	assert.Greater(t, c.Hits, int64(500))
	assert.Greater(t, c.Misses, int64(500))
}

// A table that thrashes on bodies it reuses grows; one-off bodies never
// make it grow.
func TestDecodeCacheGrowsOnlyWhenReuseThrashes(t *testing.T) {
	m := decodeModel(t)
	var bodies []*Body
	for i := int64(0); i < 3*decodeSlotsMin; i++ {
		ops := []Operand{sbufB(BF16, 128, 4).at(8 * i).v(t)}
		bodies = append(bodies, &Body{ID: uint64(i + 1), Op: OpTensorCopy, Engine: EngineVector, Outs: ops, Ins: ops})
	}
	once := NewDecodeCache(trn2Limits(), m)
	for _, b := range bodies {
		_, err := once.Decode(&Instruction{Body: b})
		require.NoError(t, err)
	}
	assert.Len(t, once.slots, decodeSlotsMin, "one-off bodies")

	cycled := NewDecodeCache(trn2Limits(), m)
	for round := 0; round < 6; round++ {
		for _, b := range bodies {
			_, err := cycled.Decode(&Instruction{Body: b}) // fresh instructions, repeated bodies
			require.NoError(t, err)
		}
	}
	assert.Greater(t, len(cycled.slots), decodeSlotsMin, "reused bodies that thrash")
	assert.Greater(t, cycled.Hits, int64(len(bodies)), "and, grown, it hits")
}

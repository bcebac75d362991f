package isa

import (
	"math/rand"
	"reflect"
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

	// Fresh instructions sharing operand slices, with new waits each time,
	// decode once.
	for i := int64(1); i <= 3; i++ {
		in := &Instruction{Op: OpTensorCopy, Engine: EngineVector, Outs: outs, Ins: ins,
			Waits: []SemWait{{Sem: SemRef{ID: 1}, Value: i}}}
		d, err := c.Decode(in)
		require.NoError(t, err)
		assert.Equal(t, int64(64), d.Cost(0).IntervalCycles)
		assert.Equal(t, m.Flags(in), d.Flags)
	}
	assert.Equal(t, int64(1), c.Misses)
	assert.Equal(t, int64(2), c.Hits)

	// A hit still checks the waits and signals, which are not the body.
	_, err := c.Decode(&Instruction{Op: OpTensorCopy, Engine: EngineVector, Outs: outs, Ins: ins,
		Waits: []SemWait{{Sem: SemRef{ID: 999}, Value: 1}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "semaphore s999 out of range")
	_, err = c.Decode(&Instruction{Op: OpTensorCopy, Engine: EngineVector, Outs: outs, Ins: ins,
		Signal: []SemSignal{{Sem: SemRef{ID: 1}, Add: 0}}})
	require.Error(t, err)
	assert.Equal(t, int64(4), c.Hits)

	// Equal operands in other slices are another body (a miss), and so is
	// the same body with other attributes, opcode or placement.
	other := []Operand{ins[0]}
	misses := c.Misses
	for _, in := range []*Instruction{
		{Op: OpTensorCopy, Engine: EngineVector, Outs: outs, Ins: other},
		{Op: OpTensorScalar, Engine: EngineVector, Outs: outs, Ins: ins, Attrs: Attrs{ALU0: ALUAdd}},
		{Op: OpTensorScalar, Engine: EngineVector, Outs: outs, Ins: ins, Attrs: Attrs{ALU0: ALUMultiply}},
		{Op: OpTensorCopy, Engine: EngineGpSimd, Outs: outs, Ins: ins},
	} {
		d, err := c.Decode(in)
		require.NoError(t, err)
		assert.Equal(t, m.CostOf(in, 0, &CostEnv{}), d.Cost(0), "%s on %s", in.Op, in.Engine)
		misses++
		assert.Equal(t, misses, c.Misses)
	}
}

func TestDecodeCacheChecksTheBodyOnAMiss(t *testing.T) {
	c := NewDecodeCache(trn2Limits(), decodeModel(t))
	hbm := []Operand{hbmB(BF16, 128, 64).v(t)}
	sb := []Operand{sbufB(BF16, 128, 64).v(t)}
	bad := &Instruction{Op: OpTensorCopy, Engine: EngineVector, Outs: sb, Ins: hbm}
	for i := 0; i < 2; i++ {
		_, err := c.Decode(bad)
		require.Error(t, err, "a body that failed is never remembered as good")
		assert.Contains(t, err.Error(), "cannot access HBM directly")
	}
	assert.Equal(t, int64(0), c.Hits)
}

func TestDecodedCostFollowsNS(t *testing.T) {
	c := NewDecodeCache(trn2Limits(), decodeModel(t))
	in := &Instruction{Op: OpMultiplyMoving, Engine: EngineTensor, Outs: []Operand{psumB(FP32, 128, 512).v(t)},
		Ins: []Operand{sbufB(BF16, 128, 512).v(t)}}
	d, err := c.Decode(in)
	require.NoError(t, err)
	assert.Equal(t, int64(512+128), d.Cost(128).IntervalCycles)
	assert.Equal(t, int64(512+64), d.Cost(64).IntervalCycles)
	assert.Equal(t, int64(512+128), d.Cost(128).IntervalCycles)
}

// TestAttrsSameScalarsCoversEveryField changes each field of Attrs in turn
// and expects sameScalars to notice, so a field added to Attrs cannot be
// forgotten by the decode cache's key.
func TestAttrsSameScalarsCoversEveryField(t *testing.T) {
	typ := reflect.TypeOf(Attrs{})
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if f.Name == "BarrierCores" {
			continue // bodies with barrier cores are never cached
		}
		var a, b Attrs
		v := reflect.ValueOf(&b).Elem().Field(i)
		switch v.Kind() {
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			v.SetInt(1)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			v.SetUint(1)
		case reflect.Float32, reflect.Float64:
			v.SetFloat(1)
		default:
			t.Fatalf("Attrs.%s has kind %s: teach sameScalars and this test about it", f.Name, v.Kind())
		}
		assert.False(t, a.sameScalars(&b), "sameScalars ignores Attrs.%s", f.Name)
		assert.True(t, b.sameScalars(&b))
	}
}

// TestDecodeCacheAgreesWithDirectCosting decodes a shuffled stream of
// instructions — some handed out again, some fresh with shared operands,
// more bodies than the cache has slots — and checks every decoding against
// costing the instruction directly.
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
	var pool []*Instruction
	for i := 0; i < 3000; i++ {
		var in *Instruction
		if len(pool) > 0 && rng.Intn(2) == 0 {
			in = pool[rng.Intn(len(pool))] // the same instruction again
		} else {
			in = &Instruction{Op: ops[rng.Intn(len(ops))], Engine: EngineVector,
				Outs: operands[rng.Intn(len(operands))], Ins: operands[rng.Intn(len(operands))],
				Attrs: Attrs{ALU0: ALUOp(rng.Intn(3))}, Waits: []SemWait{{Sem: SemRef{ID: int32(rng.Intn(4))}, Value: int64(i)}}}
			pool = append(pool, in)
		}
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
	var operands [][]Operand
	for i := int64(0); i < 3*decodeSlotsMin; i++ {
		operands = append(operands, []Operand{sbufB(BF16, 128, 4).at(8 * i).v(t)})
	}
	body := func(i int) *Instruction {
		return &Instruction{Op: OpTensorCopy, Engine: EngineVector, Outs: operands[i], Ins: operands[i]}
	}

	once := NewDecodeCache(trn2Limits(), m)
	for i := range operands {
		_, err := once.Decode(body(i))
		require.NoError(t, err)
	}
	assert.Len(t, once.slots, decodeSlotsMin, "one-off bodies")

	cycled := NewDecodeCache(trn2Limits(), m)
	for round := 0; round < 6; round++ {
		for i := range operands {
			_, err := cycled.Decode(body(i)) // fresh instructions, repeated bodies
			require.NoError(t, err)
		}
	}
	assert.Greater(t, len(cycled.slots), decodeSlotsMin, "reused bodies that thrash")
	assert.Greater(t, cycled.Hits, int64(len(operands)), "and, grown, it hits")
}

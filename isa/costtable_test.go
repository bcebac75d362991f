package isa

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The formulas of the embedded tables are tested against reference §6.1 in
// configs/costformulas_test.go (configs imports isa). These tests cover the
// table machinery with small hand-written tables.

// minimalTable costs every opcode on every engine at one cycle.
func minimalTable() *CostTable {
	t := &CostTable{Constants: []CostConstant{{Name: "MIN_II", Value: 64, Source: "test", Tag: "C"}}}
	for _, op := range AllOpcodes() {
		t.Rules = append(t.Rules, CostRule{Engine: "any", Op: op.String(),
			Variants: []CostVariant{{Name: "default", Interval: "1", Tag: "U"}}})
	}
	return t
}

func TestMinimalTableCompiles(t *testing.T) {
	m, err := minimalTable().Compile()
	require.NoError(t, err)
	v, ok := m.Constant("MIN_II")
	assert.True(t, ok)
	assert.Equal(t, 64.0, v)
	_, ok = m.Constant("NOPE")
	assert.False(t, ok)
	assert.Len(t, m.Lookup(EngineVector, OpTensorCopy), 1)
	assert.Nil(t, m.Lookup(EngineTensor, OpTensorCopy), "tensor_copy does not run on TensorE")
}

func TestCompileErrors(t *testing.T) {
	rule := func(eng, op string, vs ...CostVariant) CostRule { return CostRule{Engine: eng, Op: op, Variants: vs} }
	dflt := CostVariant{Name: "default", Interval: "N", Tag: "C"}
	cases := []struct {
		name   string
		modify func(t *CostTable)
		want   string
	}{
		{"duplicate constant", func(t *CostTable) {
			t.Constants = append(t.Constants, CostConstant{Name: "MIN_II", Value: 1, Tag: "C"})
		}, "costs.constants.MIN_II: defined twice"},
		{"constant named like a variable", func(t *CostTable) {
			t.Constants = append(t.Constants, CostConstant{Name: "NS", Value: 1, Tag: "C"})
		}, "costs.constants.NS: name is reserved for a variable"},
		{"negative constant", func(t *CostTable) {
			t.Constants = append(t.Constants, CostConstant{Name: "A", Value: -1, Tag: "C"})
		}, "costs.constants.A: value must be a finite non-negative number, got -1"},
		{"infinite constant", func(t *CostTable) {
			t.Constants = append(t.Constants, CostConstant{Name: "A", Value: math.Inf(1), Tag: "C"})
		}, "costs.constants.A: value must be a finite non-negative number, got +Inf"},
		{"NaN constant", func(t *CostTable) {
			t.Constants = append(t.Constants, CostConstant{Name: "A", Value: math.NaN(), Tag: "C"})
		}, "costs.constants.A: value must be a finite non-negative number, got NaN"},
		{"stride penalty below one", func(t *CostTable) {
			t.Constants = append(t.Constants, CostConstant{Name: "STRIDE_PENALTY", Value: 0.5, Tag: "C"})
		}, "costs.constants.STRIDE_PENALTY: must be >= 1, got 0.5"},
		{"bad constant tag", func(t *CostTable) {
			t.Constants = append(t.Constants, CostConstant{Name: "A", Value: 1, Tag: "maybe"})
		}, `costs.constants.A.tag: "maybe" is not one of C, I, 3P, R, U, F`},
		{"unknown opcode", func(t *CostTable) {
			t.Rules = append(t.Rules, rule("vector", "frobnicate", dflt))
		}, `costs.vector.frobnicate: unknown opcode "frobnicate"`},
		{"unknown engine", func(t *CostTable) {
			t.Rules = append(t.Rules, rule("dma", "dma_copy", dflt))
		}, `costs.dma.dma_copy: unknown engine "dma" (engines: tensor, vector, scalar, gpsimd, sync, any)`},
		{"opcode on the wrong engine", func(t *CostTable) {
			t.Rules = append(t.Rules, rule("scalar", "multiply_moving", dflt))
		}, "costs.scalar.multiply_moving: multiply_moving does not run on scalar"},
		{"unknown condition", func(t *CostTable) {
			t.Rules = append(t.Rules, rule("vector", "tensor_copy", CostVariant{Name: "fast", When: []string{"bf16"}, Interval: "N", Tag: "C"}, dflt))
		}, `costs.vector.tensor_copy.fast.when: unknown condition "bf16" (conditions: accumulate, add_max, fp32, fp8, half, hbm, int8, large_stride, mixed_in, n_even, perf2, perf4, psum_in, psum_out, sbuf_only, simple_alu, sub_mul, unit_stride, zero)`},
		{"unknown negated condition", func(t *CostTable) {
			t.Rules = append(t.Rules, rule("vector", "tensor_copy", CostVariant{Name: "fast", When: []string{"!fast"}, Interval: "N", Tag: "C"}, dflt))
		}, `costs.vector.tensor_copy.fast.when: unknown condition "!fast" (conditions: accumulate, add_max, fp32, fp8, half, hbm, int8, large_stride, mixed_in, n_even, perf2, perf4, psum_in, psum_out, sbuf_only, simple_alu, sub_mul, unit_stride, zero)`},
		{"bad interval", func(t *CostTable) {
			t.Rules = append(t.Rules, rule("vector", "tensor_copy", CostVariant{Name: "default", Interval: "max(N", Tag: "C"}))
		}, `costs.vector.tensor_copy.default.interval: expression "max(N", column 6: expected "," or ")" in call to max, got "end of expression"`},
		{"interval uses I", func(t *CostTable) {
			t.Rules = append(t.Rules, rule("vector", "tensor_copy", CostVariant{Name: "default", Interval: "I + 1", Tag: "C"}))
		}, "costs.vector.tensor_copy.default.interval: I (the interval) can only be used in a latency"},
		{"bad latency", func(t *CostTable) {
			t.Rules = append(t.Rules, rule("vector", "tensor_copy", CostVariant{Name: "default", Interval: "N", Latency: "I + PIPE", Tag: "C"}))
		}, `costs.vector.tensor_copy.default.latency: expression "I + PIPE", column 5: unknown name "PIPE" (variables: N, P, NS, NOUT, K, BYTES, I; or a constant of the cost table)`},
		{"bad variant tag", func(t *CostTable) {
			t.Rules = append(t.Rules, rule("vector", "tensor_copy", CostVariant{Name: "default", Interval: "N", Tag: "X"}))
		}, `costs.vector.tensor_copy.default.tag: "X" is not one of C, I, 3P, R, U, F`},
		{"no variants", func(t *CostTable) {
			t.Rules = append(t.Rules, rule("vector", "tensor_copy"))
		}, "costs.vector.tensor_copy: no variants"},
		{"conditional last variant", func(t *CostTable) {
			t.Rules = append(t.Rules, rule("vector", "tensor_copy", CostVariant{Name: "half", When: []string{"half"}, Interval: "N", Tag: "C"}))
		}, "costs.vector.tensor_copy: the last variant (half) must have no conditions, so every instruction is costed"},
		{"negated condition on last variant", func(t *CostTable) {
			t.Rules = append(t.Rules, rule("vector", "tensor_copy", CostVariant{Name: "rest", When: []string{"!half"}, Interval: "N", Tag: "C"}))
		}, "costs.vector.tensor_copy: the last variant (rest) must have no conditions, so every instruction is costed"},
		{"rule defined twice", func(t *CostTable) {
			t.Rules = append(t.Rules, rule("vector", "tensor_copy", dflt), rule("vector", "tensor_copy", dflt))
		}, "costs.vector.tensor_copy: defined twice"},
		{"missing rule", func(t *CostTable) {
			t.Rules = t.Rules[1:] // drop any.nop
		}, "costs: no rule for nop on tensor (add costs.tensor.nop or costs.any.nop)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			table := minimalTable()
			tc.modify(table)
			_, err := table.Compile()
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

// testOperand builds an operand of a [p, n*stride] buffer viewed with the
// given stride.
func testOperand(t *testing.T, mem Memory, dt DType, p, n, stride int64) Operand {
	t.Helper()
	b := &Buffer{Name: "b", Mem: mem, DType: dt, Shape: []int64{p, n * stride}}
	if mem == MemHBM {
		b.Core = -1
	}
	op, err := b.View(0, Slice{Start: 0, Stop: p, Step: 1}, Slice{Start: 0, Stop: n * stride, Step: stride})
	require.NoError(t, err)
	return op
}

func TestFlags(t *testing.T) {
	m, err := (&CostTable{
		Constants: []CostConstant{{Name: "STRIDE_PENALTY_BYTES", Value: 16, Tag: "C"}},
		Rules:     minimalTable().Rules,
	}).Compile()
	require.NoError(t, err)
	sb := func(dt DType, n int64) Operand { return testOperand(t, MemSBUF, dt, 128, n, 1) }
	ps := func(dt DType, n int64) Operand { return testOperand(t, MemPSUM, dt, 128, n, 1) }
	cases := []struct {
		name string
		in   Instruction
		want uint32
	}{
		{"bf16 sbuf add", Instruction{Body: &Body{Op: OpTensorTensor, Engine: EngineVector, Outs: []Operand{sb(BF16, 64)}, Ins: []Operand{sb(BF16, 64), sb(BF16, 64)}, Attrs: Attrs{ALU0: ALUAdd}}},
			FlagHalf | FlagSBUFOnly | FlagUnitStride | FlagSimpleALU | FlagAddMax | FlagNEven | FlagZero},
		{"fp32 psum and sbuf, odd N", Instruction{Body: &Body{Op: OpTensorTensor, Engine: EngineVector, Outs: []Operand{sb(FP32, 63)}, Ins: []Operand{ps(FP32, 63), sb(FP32, 63)}, Attrs: Attrs{ALU0: ALUMax, Value: 1}}},
			FlagFP32 | FlagPSUMIn | FlagMixedIn | FlagUnitStride | FlagAddMax},
		{"fp8 to psum", Instruction{Body: &Body{Op: OpMultiplyMoving, Engine: EngineTensor, Outs: []Operand{ps(FP32, 8)}, Ins: []Operand{sb(FP8E4, 8)}, Attrs: Attrs{PerfMode: 2, Value: 1}}},
			FlagFP8 | FlagPSUMOut | FlagUnitStride | FlagNEven | FlagPerf2},
		{"mx quad", Instruction{Body: &Body{Op: OpLoadStationary, Engine: EngineTensor, Ins: []Operand{sb(FP8E5, 8)}, Attrs: Attrs{PerfMode: 4, Value: 1}}},
			FlagFP8 | FlagSBUFOnly | FlagUnitStride | FlagNEven | FlagPerf4},
		{"subtract then multiply", Instruction{Body: &Body{Op: OpScalarTensorTensor, Engine: EngineVector, Outs: []Operand{sb(FP16, 2)}, Ins: []Operand{sb(FP16, 2), sb(FP16, 2)}, Attrs: Attrs{ALU0: ALUSubtract, ALU1: ALUMultiply, Value: 1}}},
			FlagHalf | FlagSBUFOnly | FlagUnitStride | FlagSimpleALU | FlagSubMul | FlagNEven},
		{"divide is not simple", Instruction{Body: &Body{Op: OpTensorScalar, Engine: EngineVector, Outs: []Operand{sb(BF16, 2)}, Ins: []Operand{sb(BF16, 2)}, Attrs: Attrs{ALU0: ALUAdd, ALU1: ALUDivide, Value: 1}}},
			FlagHalf | FlagSBUFOnly | FlagUnitStride | FlagAddMax | FlagNEven},
		{"accumulate", Instruction{Body: &Body{Op: OpActivation, Engine: EngineScalar, Outs: []Operand{sb(BF16, 3)}, Ins: []Operand{sb(BF16, 3)}, Attrs: Attrs{Accumulate: ALUAdd, Value: 1}}},
			FlagHalf | FlagSBUFOnly | FlagUnitStride | FlagAccumulate},
		{"large stride", Instruction{Body: &Body{Op: OpTensorCopy, Engine: EngineVector, Outs: []Operand{sb(FP32, 4)}, Ins: []Operand{testOperand(t, MemSBUF, FP32, 128, 4, 4)}, Attrs: Attrs{Value: 1}}},
			FlagFP32 | FlagSBUFOnly | FlagNEven | FlagLargeStride},
		{"small stride", Instruction{Body: &Body{Op: OpTensorCopy, Engine: EngineVector, Outs: []Operand{sb(FP32, 4)}, Ins: []Operand{testOperand(t, MemSBUF, FP32, 128, 4, 3)}, Attrs: Attrs{Value: 1}}},
			FlagFP32 | FlagSBUFOnly | FlagNEven},
		{"hbm stride is not an on-chip stride", Instruction{Body: &Body{Op: OpDMACopy, Engine: EngineSync, Outs: []Operand{sb(FP32, 4)}, Ins: []Operand{testOperand(t, MemHBM, FP32, 128, 4, 8)}, Attrs: Attrs{Value: 1}}},
			FlagFP32 | FlagNEven | FlagHBM},
		{"int8 to bf16", Instruction{Body: &Body{Op: OpTensorCopy, Engine: EngineGpSimd, Outs: []Operand{sb(BF16, 4)}, Ins: []Operand{sb(INT8, 4)}, Attrs: Attrs{Value: 1}}},
			FlagInt8 | FlagSBUFOnly | FlagUnitStride | FlagNEven},
		{"memset zero", Instruction{Body: &Body{Op: OpMemset, Engine: EngineVector, Outs: []Operand{sb(BF16, 5)}}},
			FlagHalf | FlagSBUFOnly | FlagUnitStride | FlagZero},
		{"no operands", Instruction{Body: &Body{Op: OpNop, Engine: EngineSync, Attrs: Attrs{Value: 1}}},
			FlagHalf | FlagSBUFOnly | FlagUnitStride},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := m.Flags(&tc.in)
			assert.Equal(t, flagString(tc.want), flagString(got))
		})
	}
}

// flagString names the set flags, for readable failures.
func flagString(f uint32) []string {
	var out []string
	for _, n := range FlagNames() {
		if f&flagNames[n] != 0 {
			out = append(out, n)
		}
	}
	return out
}

func TestFillEnv(t *testing.T) {
	sbuf := testOperand(t, MemSBUF, BF16, 64, 100, 1)
	out := testOperand(t, MemSBUF, FP32, 64, 7, 1)
	var env CostEnv
	env[VarNS] = 99 // reset by FillEnv
	FillEnv(&Instruction{Body: &Body{Op: OpTensorCopy, Engine: EngineVector, Outs: []Operand{out}, Ins: []Operand{sbuf}}}, &env)
	assert.Equal(t, 100.0, env[VarN])
	assert.Equal(t, 64.0, env[VarP])
	assert.Equal(t, 200.0, env[VarBytes])
	assert.Equal(t, 7.0, env[VarNOut])
	assert.Equal(t, 0.0, env[VarNS])

	idx := testOperand(t, MemSBUF, INT32, 64, 3, 1)
	FillEnv(&Instruction{Body: &Body{Op: OpDMAGather, Engine: EngineGpSimd, Outs: []Operand{out}, Ins: []Operand{sbuf, idx}}}, &env)
	assert.Equal(t, 100.0, env[VarK])

	FillEnv(&Instruction{Body: &Body{Op: OpMemset, Engine: EngineVector, Outs: []Operand{out}}}, &env)
	assert.Equal(t, 7.0, env[VarN], "without inputs N is the output's free size")
}

func TestCostVariantOrderAndClamps(t *testing.T) {
	table := minimalTable()
	table.Constants = append(table.Constants,
		CostConstant{Name: "PIPE", Value: 10, Tag: "U"},
		CostConstant{Name: "STRIDE_PENALTY", Value: 3, Tag: "C"},
		CostConstant{Name: "STRIDE_PENALTY_BYTES", Value: 16, Tag: "C"})
	table.Rules = append(table.Rules,
		CostRule{Engine: "vector", Op: "tensor_copy", Variants: []CostVariant{
			{Name: "half_not_psum", When: []string{"half", "!psum_in"}, Interval: "N/4", Latency: "I + PIPE", Tag: "C"},
			{Name: "half", When: []string{"half"}, Interval: "N/2", Tag: "C"},
			{Name: "default", Interval: "N", Latency: "I - 5", Tag: "C"},
		}},
		CostRule{Engine: "vector", Op: "reciprocal", Variants: []CostVariant{
			{Name: "default", Interval: "N / NS", Latency: "I * 2", Tag: "U"},
		}},
		CostRule{Engine: "vector", Op: "memset", Variants: []CostVariant{
			{Name: "default", Interval: "N - 1000", Tag: "U"},
		}},
	)
	m, err := table.Compile()
	require.NoError(t, err)
	run := func(in *Instruction) Cost {
		var env CostEnv
		FillEnv(in, &env)
		return m.Cost(in, m.Flags(in), &env)
	}
	copyOf := func(dst, src Operand) *Instruction {
		return &Instruction{Body: &Body{Op: OpTensorCopy, Engine: EngineVector, Outs: []Operand{dst}, Ins: []Operand{src}}}
	}
	sb := func(dt DType, n, stride int64) Operand { return testOperand(t, MemSBUF, dt, 128, n, stride) }

	c := run(copyOf(sb(BF16, 100, 1), sb(BF16, 100, 1)))
	assert.Equal(t, Cost{IntervalCycles: 25, LatencyCycles: 35, Variant: "vector.tensor_copy.half_not_psum"}, c)

	c = run(copyOf(sb(BF16, 100, 1), testOperand(t, MemPSUM, BF16, 128, 100, 1)))
	assert.Equal(t, Cost{IntervalCycles: 50, LatencyCycles: 50, Variant: "vector.tensor_copy.half"}, c, "the default latency is I")

	c = run(copyOf(sb(FP32, 100, 1), sb(FP32, 100, 1)))
	assert.Equal(t, Cost{IntervalCycles: 100, LatencyCycles: 100, Variant: "vector.tensor_copy.default"}, c, "latency never below the interval")

	// The stride penalty multiplies the formula, then rounds up.
	c = run(copyOf(sb(BF16, 10, 1), sb(BF16, 10, 8)))
	assert.Equal(t, Cost{IntervalCycles: 8, LatencyCycles: 18, StridePenalized: true, Variant: "vector.tensor_copy.half_not_psum"}, c)

	// A division by a zero variable is clamped, not an int64 overflow.
	c = run(&Instruction{Body: &Body{Op: OpReciprocal, Engine: EngineVector, Outs: []Operand{sb(FP32, 4, 1)}, Ins: []Operand{sb(FP32, 4, 1)}}})
	assert.Equal(t, int64(MaxCostCycles), c.IntervalCycles)
	assert.Equal(t, int64(MaxCostCycles), c.LatencyCycles)

	// Intervals below one cycle become one.
	c = run(&Instruction{Body: &Body{Op: OpMemset, Engine: EngineVector, Outs: []Operand{sb(FP32, 4, 1)}}})
	assert.Equal(t, int64(1), c.IntervalCycles)

	// Engines without their own rule use "any".
	gp := copyOf(sb(FP32, 4, 1), sb(FP32, 4, 1))
	gp.Engine = EngineGpSimd
	c = run(gp)
	assert.Equal(t, "any.tensor_copy.default", c.Variant)

	assert.Equal(t, []string{"half_not_psum", "half", "default"}, variantNames(m.Lookup(EngineVector, OpTensorCopy)))
}

func variantNames(vs []CostVariant) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return out
}

package configs_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
)

// These tests check every published cost formula of reference §6.1 against
// the embedded cost tables (they live in package configs because configs
// imports isa). MIN_II is 64 in every table.

const minII = 64

// mmFixed is MM_FIXED_CYCLES, the fixed cost per multiply_moving fitted on
// K1 (nc-v2.yaml; TestCostFormulasNCv2 checks that the table has it).
const mmFixed = 76

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// costModel compiles an embedded cost table.
func costModel(t *testing.T, name string) *isa.CostModel {
	t.Helper()
	table, err := configs.LoadCostTable(name)
	require.NoError(t, err)
	m, err := table.Compile()
	require.NoError(t, err)
	return m
}

// opd describes an operand: memory, dtype, partitions, free size N and inner
// stride in elements (1 when zero).
type opd struct {
	mem    isa.Memory
	dt     isa.DType
	p, n   int64
	stride int64
}

func sbuf(dt isa.DType, p, n int64) opd { return opd{mem: isa.MemSBUF, dt: dt, p: p, n: n} }
func psum(dt isa.DType, p, n int64) opd { return opd{mem: isa.MemPSUM, dt: dt, p: p, n: n} }

func (o opd) strided(s int64) opd { o.stride = s; return o }

func (o opd) operand(t *testing.T) isa.Operand {
	t.Helper()
	s := o.stride
	if s == 0 {
		s = 1
	}
	b := &isa.Buffer{Name: "b", Mem: o.mem, DType: o.dt, Shape: []int64{o.p, o.n * s}}
	var op isa.Operand
	var err error
	if s == 1 {
		op, err = b.Whole(0)
	} else {
		op, err = b.View(0, isa.Slice{Start: 0, Stop: o.p, Step: 1}, isa.Slice{Start: 0, Stop: o.n * s, Step: s})
	}
	require.NoError(t, err)
	require.Equal(t, o.n, op.AP.FreeSize())
	return op
}

func inst(t *testing.T, eng isa.Engine, op isa.Opcode, attrs isa.Attrs, outs []opd, ins ...opd) *isa.Instruction {
	t.Helper()
	in := &isa.Instruction{Body: &isa.Body{Op: op, Engine: eng, Attrs: attrs}}
	for _, o := range outs {
		in.Outs = append(in.Outs, o.operand(t))
	}
	for _, o := range ins {
		in.Ins = append(in.Ins, o.operand(t))
	}
	return in
}

func out(o opd) []opd { return []opd{o} }

// cost runs an instruction through the model the way the engines do.
func cost(m *isa.CostModel, in *isa.Instruction, ns int64) isa.Cost {
	var env isa.CostEnv
	isa.FillEnv(in, &env)
	env[isa.VarNS] = float64(ns)
	return m.Cost(in, m.Flags(in), &env)
}

// formula is one row of §6.1: an instruction built for free size N and the
// interval the formula gives.
type formula struct {
	name    string
	build   func(t *testing.T, n int64) *isa.Instruction
	ns      int64 // stationary free size (matmul)
	want    func(n int64) int64
	variant string // "" for the rows of perNVariant
}

// perNVariant gives the variant of rows whose variant depends on N.
var perNVariant = map[string]func(n int64) string{
	"scalar_tensor_tensor bf16 sub/mul": func(n int64) string {
		if n%2 == 0 {
			return "vector.scalar_tensor_tensor.fast"
		}
		return "vector.scalar_tensor_tensor.default"
	},
	// A one-element access has no stride, so N=1 stays on the fast path.
	"tensor_tensor bf16 add strided": func(n int64) string {
		if n == 1 {
			return "vector.tensor_tensor.half_sbuf"
		}
		return "vector.tensor_tensor.default"
	},
	"vector tensor_copy bf16 strided": func(n int64) string {
		if n == 1 {
			return "vector.tensor_copy.perf4"
		}
		return "vector.tensor_copy.perf2"
	},
}

var freeSizes = []int64{1, 2, 63, 64, 65, 127, 128, 512, 1000}

var (
	bf16 = isa.BF16
	fp32 = isa.FP32
	fp16 = isa.FP16
	fp8  = isa.FP8E4
	int8 = isa.INT8
)

// Builders shared by the generations.

func matmul(dt isa.DType) func(t *testing.T, n int64) *isa.Instruction {
	return func(t *testing.T, n int64) *isa.Instruction {
		return inst(t, isa.EngineTensor, isa.OpMultiplyMoving, isa.Attrs{}, out(psum(fp32, 128, n)), sbuf(dt, 128, n))
	}
}

func unary(eng isa.Engine, op isa.Opcode, attrs isa.Attrs, dst, src func(n int64) opd) func(t *testing.T, n int64) *isa.Instruction {
	return func(t *testing.T, n int64) *isa.Instruction {
		return inst(t, eng, op, attrs, out(dst(n)), src(n))
	}
}

func binary(eng isa.Engine, op isa.Opcode, attrs isa.Attrs, dst, a, b func(n int64) opd) func(t *testing.T, n int64) *isa.Instruction {
	return func(t *testing.T, n int64) *isa.Instruction {
		return inst(t, eng, op, attrs, out(dst(n)), a(n), b(n))
	}
}

func nullary(eng isa.Engine, op isa.Opcode, attrs isa.Attrs, dst func(n int64) opd) func(t *testing.T, n int64) *isa.Instruction {
	return func(t *testing.T, n int64) *isa.Instruction {
		return inst(t, eng, op, attrs, out(dst(n)))
	}
}

func sb(dt isa.DType) func(n int64) opd { return func(n int64) opd { return sbuf(dt, 128, n) } }
func ps(dt isa.DType) func(n int64) opd { return func(n int64) opd { return psum(dt, 128, n) } }
func sbStrided(dt isa.DType, s int64) func(n int64) opd {
	return func(n int64) opd { return sbuf(dt, 128, n).strided(s) }
}

func maxII(n int64) int64     { return max(minII, n) }
func maxII2N(n int64) int64   { return max(minII, 2*n) }
func maxIIHalf(n int64) int64 { return max(minII, ceilDiv(n, 2)) }
func maxIIQtr(n int64) int64  { return max(minII, ceilDiv(n, 4)) }

var (
	vec    = isa.EngineVector
	scal   = isa.EngineScalar
	gps    = isa.EngineGpSimd
	tensor = isa.EngineTensor
	add    = isa.Attrs{ALU0: isa.ALUAdd}
)

// ncV2Rows are the §6.1 formulas on NC-v2; nc-v3 and nc-v4 inherit the rows
// they do not change.
func ncV2Rows() []formula {
	return []formula{
		// nc_matmul: max(min(64, N_stationary), N_moving).
		{"matmul bf16 NS=128", matmul(bf16), 128, func(n int64) int64 { return max(min(64, 128), n) + mmFixed }, "tensor.multiply_moving.default"},
		{"matmul bf16 NS=32", matmul(bf16), 32, func(n int64) int64 { return max(min(64, 32), n) + mmFixed }, "tensor.multiply_moving.default"},
		{"matmul bf16 NS=1", matmul(bf16), 1, func(n int64) int64 { return max(1, n) + mmFixed }, "tensor.multiply_moving.default"},
		{"matmul fp16 NS=64", matmul(fp16), 64, func(n int64) int64 { return max(64, n) + mmFixed }, "tensor.multiply_moving.default"},
		{"matmul fp8 NS=128", matmul(fp8), 128, func(n int64) int64 { return max(64, n) + mmFixed }, "tensor.multiply_moving.default"},
		// FP32: 4x.
		{"matmul fp32 NS=128", matmul(fp32), 128, func(n int64) int64 { return 4*max(64, n) + mmFixed }, "tensor.multiply_moving.fp32"},
		{"matmul fp32 NS=16", matmul(fp32), 16, func(n int64) int64 { return 4*max(16, n) + mmFixed }, "tensor.multiply_moving.fp32"},
		// LoadStationary: about N/4.
		{"load_stationary", func(t *testing.T, n int64) *isa.Instruction {
			return inst(t, tensor, isa.OpLoadStationary, isa.Attrs{}, nil, sbuf(bf16, 128, n))
		}, 0, func(n int64) int64 { return max(1, ceilDiv(n, 4)) }, "tensor.load_stationary.default"},
		// nc_transpose on TensorE: max(P, min(64, F)).
		{"tensor transpose P=128", func(t *testing.T, n int64) *isa.Instruction {
			return inst(t, tensor, isa.OpTranspose, isa.Attrs{}, out(psum(bf16, n, 128)), sbuf(bf16, 128, n))
		}, 0, func(n int64) int64 { return max(128, min(64, n)) }, "tensor.transpose.default"},
		{"tensor transpose P=16", func(t *testing.T, n int64) *isa.Instruction {
			return inst(t, tensor, isa.OpTranspose, isa.Attrs{}, out(psum(bf16, n, 16)), sbuf(bf16, 16, n))
		}, 0, func(n int64) int64 { return max(16, min(64, n)) }, "tensor.transpose.default"},
		{"tensor transpose fp32 P=32", func(t *testing.T, n int64) *isa.Instruction {
			return inst(t, tensor, isa.OpTranspose, isa.Attrs{}, out(psum(fp32, n, 32)), sbuf(fp32, 32, n))
		}, 0, func(n int64) int64 { return 4 * max(32, min(64, n)) }, "tensor.transpose.fp32"},
		// nc_transpose on VectorE: max(MIN_II, N).
		{"vector transpose", unary(vec, isa.OpTranspose, isa.Attrs{}, sb(bf16), sb(bf16)), 0, maxII, "vector.transpose.default"},
		// activation: max(MIN_II, N); activation_reduce: + MIN_II.
		{"activation", unary(scal, isa.OpActivation, isa.Attrs{Func: isa.ActExp, Scale: 1}, sb(bf16), sb(bf16)), 0, maxII, "scalar.activation.default"},
		{"activation fp32", unary(scal, isa.OpActivation, isa.Attrs{Func: isa.ActGelu, Scale: 2}, sb(fp32), ps(fp32)), 0, maxII, "scalar.activation.default"},
		{"activation accumulate", unary(scal, isa.OpActivation, isa.Attrs{Func: isa.ActExp, Accumulate: isa.ALUAdd}, sb(bf16), sb(bf16)), 0,
			func(n int64) int64 { return max(minII, n) + minII }, "scalar.activation.accumulate"},
		{"act_read_accumulator", nullary(scal, isa.OpActReadAccumulator, isa.Attrs{}, sb(fp32)), 0,
			func(int64) int64 { return 64 }, "scalar.act_read_accumulator.default"},
		// tensor_scalar on VectorE, ScalarE and GpSimd: max(MIN_II, N).
		{"vector tensor_scalar", unary(vec, isa.OpTensorScalar, isa.Attrs{ALU0: isa.ALUMultiply, Imm0: 2}, sb(fp32), sb(fp32)), 0, maxII, "vector.tensor_scalar.default"},
		{"scalar tensor_scalar", unary(scal, isa.OpTensorScalar, isa.Attrs{ALU0: isa.ALUAdd, Imm0: 1, ALU1: isa.ALUMultiply, Imm1: 3}, sb(bf16), sb(bf16)), 0, maxII, "scalar.tensor_scalar.default"},
		{"vector tensor_scalar bf16 sbuf", unary(vec, isa.OpTensorScalar, isa.Attrs{ALU0: isa.ALUMultiply, Imm0: 2}, sb(bf16), sb(bf16)), 0, maxII, "vector.tensor_scalar.default"},
		{"vector tensor_scalar fp16 from psum", unary(vec, isa.OpTensorScalar, isa.Attrs{ALU0: isa.ALUMultiply, Imm0: 2}, sb(fp16), ps(fp16)), 0, maxII, "vector.tensor_scalar.default"},
		{"scalar tensor_scalar fp32", unary(scal, isa.OpTensorScalar, isa.Attrs{ALU0: isa.ALUAdd, Imm0: 1}, sb(fp32), sb(fp32)), 0, maxII, "scalar.tensor_scalar.default"},
		{"gpsimd tensor_scalar", unary(gps, isa.OpTensorScalar, isa.Attrs{ALU0: isa.ALUAdd}, sb(bf16), sb(bf16)), 0, maxII, "gpsimd.tensor_scalar.default"},
		// tensor_tensor: max(MIN_II, N) with one input in PSUM and one in
		// SBUF, or all BF16 in SBUF with add/sub/mul and unit stride;
		// otherwise max(MIN_II, 2N).
		{"tensor_tensor psum+sbuf", binary(vec, isa.OpTensorTensor, isa.Attrs{ALU0: isa.ALUMax}, sb(fp32), ps(fp32), sb(fp32)), 0, maxII, "vector.tensor_tensor.psum_sbuf"},
		{"tensor_tensor sbuf+psum", binary(vec, isa.OpTensorTensor, add, sb(bf16), sb(bf16), ps(fp32)), 0, maxII, "vector.tensor_tensor.psum_sbuf"},
		{"tensor_tensor bf16 add", binary(vec, isa.OpTensorTensor, add, sb(bf16), sb(bf16), sb(bf16)), 0, maxII, "vector.tensor_tensor.half_sbuf"},
		{"tensor_tensor bf16 subtract", binary(vec, isa.OpTensorTensor, isa.Attrs{ALU0: isa.ALUSubtract}, sb(bf16), sb(bf16), sb(bf16)), 0, maxII, "vector.tensor_tensor.half_sbuf"},
		{"tensor_tensor fp16 multiply", binary(vec, isa.OpTensorTensor, isa.Attrs{ALU0: isa.ALUMultiply}, sb(fp16), sb(fp16), sb(fp16)), 0, maxII, "vector.tensor_tensor.half_sbuf"},
		{"tensor_tensor bf16 max", binary(vec, isa.OpTensorTensor, isa.Attrs{ALU0: isa.ALUMax}, sb(bf16), sb(bf16), sb(bf16)), 0, maxII2N, "vector.tensor_tensor.default"},
		{"tensor_tensor fp32 add", binary(vec, isa.OpTensorTensor, add, sb(fp32), sb(fp32), sb(fp32)), 0, maxII2N, "vector.tensor_tensor.default"},
		{"tensor_tensor bf16 add fp32 out", binary(vec, isa.OpTensorTensor, add, sb(fp32), sb(bf16), sb(bf16)), 0, maxII2N, "vector.tensor_tensor.default"},
		{"tensor_tensor bf16 add strided", binary(vec, isa.OpTensorTensor, add, sb(bf16), sbStrided(bf16, 2), sb(bf16)), 0, maxII2N, ""},
		{"tensor_tensor bf16 add to psum", binary(vec, isa.OpTensorTensor, add, ps(bf16), sb(bf16), sb(bf16)), 0, maxII2N, "vector.tensor_tensor.default"},
		{"tensor_tensor both psum", binary(vec, isa.OpTensorTensor, add, sb(bf16), ps(bf16), ps(bf16)), 0, maxII2N, "vector.tensor_tensor.default"},
		{"gpsimd tensor_tensor", binary(gps, isa.OpTensorTensor, add, sb(bf16), sb(bf16), sb(bf16)), 0, maxII2N, "gpsimd.tensor_tensor.default"},
		// scalar_tensor_tensor: N for BF16 subtract-then-multiply with even
		// N; otherwise 2N.
		{"scalar_tensor_tensor bf16 sub/mul", binary(vec, isa.OpScalarTensorTensor, isa.Attrs{ALU0: isa.ALUSubtract, ALU1: isa.ALUMultiply}, sb(bf16), sb(bf16), sb(bf16)), 0,
			func(n int64) int64 {
				if n%2 == 0 {
					return n
				}
				return 2 * n
			}, ""},
		{"scalar_tensor_tensor bf16 add/mul", binary(vec, isa.OpScalarTensorTensor, isa.Attrs{ALU0: isa.ALUAdd, ALU1: isa.ALUMultiply}, sb(bf16), sb(bf16), sb(bf16)), 0,
			func(n int64) int64 { return 2 * n }, "vector.scalar_tensor_tensor.default"},
		{"scalar_tensor_tensor fp32 sub/mul", binary(vec, isa.OpScalarTensorTensor, isa.Attrs{ALU0: isa.ALUSubtract, ALU1: isa.ALUMultiply}, sb(fp32), sb(fp32), sb(fp32)), 0,
			func(n int64) int64 { return 2 * n }, "vector.scalar_tensor_tensor.default"},
		// tensor_reduce: N/2 for BF16 with add or max; otherwise N.
		{"tensor_reduce bf16 add", unary(vec, isa.OpTensorReduce, add, func(int64) opd { return sbuf(bf16, 128, 1) }, sb(bf16)), 0,
			func(n int64) int64 { return ceilDiv(n, 2) }, "vector.tensor_reduce.half"},
		{"tensor_reduce bf16 max", unary(vec, isa.OpTensorReduce, isa.Attrs{ALU0: isa.ALUMax}, func(int64) opd { return sbuf(bf16, 128, 1) }, sb(bf16)), 0,
			func(n int64) int64 { return ceilDiv(n, 2) }, "vector.tensor_reduce.half"},
		{"tensor_reduce bf16 multiply", unary(vec, isa.OpTensorReduce, isa.Attrs{ALU0: isa.ALUMultiply}, func(int64) opd { return sbuf(bf16, 128, 1) }, sb(bf16)), 0,
			func(n int64) int64 { return n }, "vector.tensor_reduce.default"},
		{"tensor_reduce fp32 add", unary(vec, isa.OpTensorReduce, add, func(int64) opd { return sbuf(fp32, 128, 1) }, sb(fp32)), 0,
			func(n int64) int64 { return n }, "vector.tensor_reduce.default"},
		// tensor_copy on VectorE/ScalarE/GpSimd: max(MIN_II, N).
		{"vector tensor_copy", unary(vec, isa.OpTensorCopy, isa.Attrs{}, sb(fp32), ps(fp32)), 0, maxII, "vector.tensor_copy.default"},
		{"scalar tensor_copy", unary(scal, isa.OpTensorCopy, isa.Attrs{}, sb(bf16), ps(fp32)), 0, maxII, "scalar.tensor_copy.default"},
		{"gpsimd tensor_copy", unary(gps, isa.OpTensorCopy, isa.Attrs{}, sb(bf16), sb(bf16)), 0, maxII, "gpsimd.tensor_copy.default"},
		{"vector tensor_copy bf16 sbuf", unary(vec, isa.OpTensorCopy, isa.Attrs{}, sb(bf16), sb(bf16)), 0, maxII, "vector.tensor_copy.default"},
		{"vector tensor_copy bf16 from psum", unary(vec, isa.OpTensorCopy, isa.Attrs{}, sb(bf16), ps(bf16)), 0, maxII, "vector.tensor_copy.default"},
		{"scalar tensor_copy bf16", unary(scal, isa.OpTensorCopy, isa.Attrs{}, sb(bf16), sb(bf16)), 0, maxII, "scalar.tensor_copy.default"},
		// The dequantisation of quantised weights: int8 (or FP8) to BF16
		// through FP32, at the copy's rate (S9, S8).
		{"vector tensor_copy int8 to bf16", unary(vec, isa.OpTensorCopy, isa.Attrs{}, sb(bf16), sb(int8)), 0, maxII, "vector.tensor_copy.from_int8"},
		{"scalar tensor_copy int8 to bf16", unary(scal, isa.OpTensorCopy, isa.Attrs{}, sb(bf16), sb(int8)), 0, maxII, "scalar.tensor_copy.from_int8"},
		{"gpsimd tensor_copy int8 to bf16", unary(gps, isa.OpTensorCopy, isa.Attrs{}, sb(bf16), sb(int8)), 0, maxII, "gpsimd.tensor_copy.from_int8"},
		{"activation copy int8 to bf16", unary(scal, isa.OpActivation, isa.Attrs{Func: isa.ActCopy, Scale: 1}, sb(bf16), sb(int8)), 0, maxII, "scalar.activation.from_int8"},
		{"activation copy fp8 to bf16", unary(scal, isa.OpActivation, isa.Attrs{Func: isa.ActCopy, Scale: 1}, sb(bf16), sb(fp8)), 0, maxII, "scalar.activation.default"},
		{"gpsimd tensor_copy fp8 to bf16", unary(gps, isa.OpTensorCopy, isa.Attrs{}, sb(bf16), sb(fp8)), 0, maxII, "gpsimd.tensor_copy.default"},
		// memset: max(MIN_II, N/2) for zero in BF16/FP16, otherwise
		// max(MIN_II, N).
		{"memset zero bf16", nullary(vec, isa.OpMemset, isa.Attrs{}, sb(bf16)), 0, maxIIHalf, "vector.memset.zero_half"},
		{"memset zero fp16", nullary(vec, isa.OpMemset, isa.Attrs{}, sb(fp16)), 0, maxIIHalf, "vector.memset.zero_half"},
		{"memset one bf16", nullary(vec, isa.OpMemset, isa.Attrs{Value: 1}, sb(bf16)), 0, maxII, "vector.memset.default"},
		{"memset zero fp32", nullary(vec, isa.OpMemset, isa.Attrs{}, sb(fp32)), 0, maxII, "vector.memset.default"},
		// bn_stats / bn_aggr: max(MIN_II, N) / max(MIN_II, 13N/3).
		{"bn_stats", unary(vec, isa.OpBNStats, isa.Attrs{}, func(int64) opd { return sbuf(fp32, 128, 6) }, sb(bf16)), 0, maxII, "vector.bn_stats.default"},
		{"bn_aggr", unary(vec, isa.OpBNAggr, isa.Attrs{}, func(int64) opd { return sbuf(fp32, 128, 2) }, sb(fp32)), 0,
			func(n int64) int64 { return max(minII, ceilDiv(13*n, 3)) }, "vector.bn_aggr.default"},
		// reciprocal on VectorE: max(MIN_II, 8N).
		{"vector reciprocal", unary(vec, isa.OpReciprocal, isa.Attrs{}, sb(fp32), sb(fp32)), 0,
			func(n int64) int64 { return max(minII, 8*n) }, "vector.reciprocal.default"},
		// tensor_copy_predicated (select): max(MIN_II, N) with an operand in
		// PSUM, max(MIN_II, 2N) with all in SBUF.
		{"select psum", func(t *testing.T, n int64) *isa.Instruction {
			return inst(t, vec, isa.OpSelect, isa.Attrs{}, out(sbuf(fp32, 128, n)), sbuf(fp32, 128, n), psum(fp32, 128, n), sbuf(fp32, 128, n))
		}, 0, maxII, "vector.select.psum"},
		{"select sbuf", func(t *testing.T, n int64) *isa.Instruction {
			return inst(t, vec, isa.OpSelect, isa.Attrs{}, out(sbuf(fp32, 128, n)), sbuf(fp32, 128, n), sbuf(fp32, 128, n), sbuf(fp32, 128, n))
		}, 0, maxII2N, "vector.select.default"},
		// iota: 150 + N.
		{"iota", nullary(gps, isa.OpIota, isa.Attrs{Step: 1}, sb(isa.INT32)), 0,
			func(n int64) int64 { return 150 + n }, "gpsimd.iota.default"},
	}
}

func TestCostFormulasNCv2(t *testing.T) {
	fixed, ok := costModel(t, "nc-v2").Constant("MM_FIXED_CYCLES")
	require.True(t, ok)
	require.Equal(t, float64(mmFixed), fixed, "the fitted constant the rows add")
	checkFormulas(t, "nc-v2", ncV2Rows())
}

// checkFormulas is checkFormulas where an empty variant means "the
// fast variant for even N, the default one otherwise" (scalar_tensor_tensor).
func checkFormulas(t *testing.T, table string, rows []formula) {
	m := costModel(t, table)
	for _, r := range rows {
		for _, n := range freeSizes {
			t.Run(fmt.Sprintf("%s/N=%d", r.name, n), func(t *testing.T) {
				in := r.build(t, n)
				c := cost(m, in, r.ns)
				assert.Equal(t, r.want(n), c.IntervalCycles, "interval")
				want := r.variant
				if f := perNVariant[r.name]; f != nil {
					want = f(n)
				}
				assert.Equal(t, want, c.Variant)
				assert.False(t, c.StridePenalized)
				assert.GreaterOrEqual(t, c.LatencyCycles, c.IntervalCycles)
			})
		}
	}
}

// change replaces a row's formula in a later generation.
type change struct {
	want    func(n int64) int64
	variant string
}

// modify applies changes to rows by name; every change must name a row.
func modify(t *testing.T, rows []formula, changes map[string]change) []formula {
	t.Helper()
	out := append([]formula(nil), rows...)
	used := map[string]bool{}
	for i := range out {
		if c, ok := changes[out[i].name]; ok {
			out[i].want, out[i].variant = c.want, c.variant
			used[out[i].name] = true
		}
	}
	for name := range changes {
		require.True(t, used[name], "no row %q", name)
	}
	return out
}

// ncV3Changes are the NC-v3 multipliers (S2): VectorE performance mode (4x
// for BF16/FP16 copy and tensor_scalar in SBUF with unit stride, 2x for the
// other half-precision cases), tensor_tensor BF16 in SBUF at N/2, and the 2x
// faster FP32 transpose.
func ncV3Changes() map[string]change {
	return map[string]change{
		"vector tensor_copy bf16 sbuf":        {maxIIQtr, "vector.tensor_copy.perf4"},
		"vector tensor_copy bf16 from psum":   {maxIIHalf, "vector.tensor_copy.perf2"},
		"vector tensor_scalar bf16 sbuf":      {maxIIQtr, "vector.tensor_scalar.perf4"},
		"vector tensor_scalar fp16 from psum": {maxIIHalf, "vector.tensor_scalar.perf2"},
		"tensor_tensor bf16 add":              {maxIIHalf, "vector.tensor_tensor.half_sbuf"},
		"tensor_tensor bf16 subtract":         {maxIIHalf, "vector.tensor_tensor.half_sbuf"},
		"tensor_tensor fp16 multiply":         {maxIIHalf, "vector.tensor_tensor.half_sbuf"},
		"tensor transpose fp32 P=32": {func(n int64) int64 { return 2 * max(32, min(64, n)) },
			"tensor.transpose.fp32"},
	}
}

func ncV3Rows(t *testing.T) []formula {
	rows := modify(t, ncV2Rows(), ncV3Changes())
	return append(rows,
		// Strided BF16: half precision but not unit stride, so 2x, not 4x.
		formula{"vector tensor_copy bf16 strided", unary(vec, isa.OpTensorCopy, isa.Attrs{}, sb(bf16), sbStrided(bf16, 2)), 0, maxIIHalf, ""},
	)
}

func TestCostFormulasNCv3(t *testing.T) {
	checkFormulas(t, "nc-v3", ncV3Rows(t))
}

// ncV4Changes are NC-v4's ScalarE BF16 modes (S3): 2x for tensor_scalar and
// tensor_copy, and 256 elements/cycle for activation.
func ncV4Changes() map[string]change {
	return map[string]change{
		"scalar tensor_scalar":    {maxIIHalf, "scalar.tensor_scalar.half"},
		"scalar tensor_copy bf16": {maxIIHalf, "scalar.tensor_copy.half"},
		"activation":              {maxIIHalf, "scalar.activation.half"},
		"activation accumulate":   {func(n int64) int64 { return max(minII, ceilDiv(n, 2)) + minII }, "scalar.activation.half_accumulate"},
		// FP8 is among ScalarE's 256-per-cycle dtypes; int8 is not.
		"activation copy fp8 to bf16": {maxIIHalf, "scalar.activation.from_fp8"},
	}
}

func TestCostFormulasNCv4(t *testing.T) {
	rows := modify(t, ncV3Rows(t), ncV4Changes())
	checkFormulas(t, "nc-v4", rows)
}

func TestCostStridePenalty(t *testing.T) {
	// An on-chip inner stride of 16 bytes or more halves the port bandwidth:
	// the interval doubles (reference §3, STRIDE_PENALTY = 2 from 16 bytes).
	m := costModel(t, "nc-v2")
	rawNeg := func(t *testing.T, n int64) isa.Operand {
		b := &isa.Buffer{Name: "r", Mem: isa.MemSBUF, DType: bf16, Shape: []int64{128, 8 * n}}
		op, err := b.Raw(0, 0, 128, 8*(n-1), []isa.Dim{{Size: n, Stride: -8}})
		require.NoError(t, err)
		return op
	}
	hbmOut := func(t *testing.T, n int64) isa.Operand {
		b := &isa.Buffer{Name: "h", Mem: isa.MemHBM, DType: fp32, Shape: []int64{128, n}, Core: -1}
		op, err := b.Whole(0)
		require.NoError(t, err)
		return op
	}
	cases := []struct {
		name      string
		build     func(t *testing.T) *isa.Instruction
		ns        int64
		want      int64
		penalized bool
	}{
		{"fp32 stride 4 (16 B)", func(t *testing.T) *isa.Instruction {
			return inst(t, vec, isa.OpTensorCopy, isa.Attrs{}, out(sbuf(fp32, 128, 128)), sbuf(fp32, 128, 128).strided(4))
		}, 0, 2 * 128, true},
		{"fp32 stride 2 (8 B)", func(t *testing.T) *isa.Instruction {
			return inst(t, vec, isa.OpTensorCopy, isa.Attrs{}, out(sbuf(fp32, 128, 128)), sbuf(fp32, 128, 128).strided(2))
		}, 0, 128, false},
		{"fp32 stride 3 (12 B)", func(t *testing.T) *isa.Instruction {
			return inst(t, vec, isa.OpTensorCopy, isa.Attrs{}, out(sbuf(fp32, 128, 128)), sbuf(fp32, 128, 128).strided(3))
		}, 0, 128, false},
		{"bf16 stride 8 (16 B), small N", func(t *testing.T) *isa.Instruction {
			return inst(t, vec, isa.OpTensorCopy, isa.Attrs{}, out(sbuf(bf16, 128, 32)), sbuf(bf16, 128, 32).strided(8))
		}, 0, 2 * minII, true},
		{"bf16 stride 4 (8 B)", func(t *testing.T) *isa.Instruction {
			return inst(t, vec, isa.OpTensorCopy, isa.Attrs{}, out(sbuf(bf16, 128, 32)), sbuf(bf16, 128, 32).strided(4))
		}, 0, minII, false},
		{"fp8 stride 16 (16 B)", func(t *testing.T) *isa.Instruction {
			return inst(t, vec, isa.OpTensorCopy, isa.Attrs{}, out(sbuf(bf16, 128, 200)), sbuf(fp8, 128, 200).strided(16))
		}, 0, 400, true},
		{"fp8 stride 15", func(t *testing.T) *isa.Instruction {
			return inst(t, vec, isa.OpTensorCopy, isa.Attrs{}, out(sbuf(bf16, 128, 200)), sbuf(fp8, 128, 200).strided(15))
		}, 0, 200, false},
		{"strided output", func(t *testing.T) *isa.Instruction {
			return inst(t, vec, isa.OpTensorCopy, isa.Attrs{}, out(sbuf(fp32, 128, 100).strided(4)), sbuf(fp32, 128, 100))
		}, 0, 200, true},
		{"strided psum input", func(t *testing.T) *isa.Instruction {
			return inst(t, scal, isa.OpTensorCopy, isa.Attrs{}, out(sbuf(fp32, 128, 100)), psum(fp32, 128, 100).strided(4))
		}, 0, 200, true},
		{"one element has no stride", func(t *testing.T) *isa.Instruction {
			return inst(t, vec, isa.OpTensorCopy, isa.Attrs{}, out(sbuf(fp32, 128, 1)), sbuf(fp32, 128, 1).strided(64))
		}, 0, minII, false},
		{"negative stride", func(t *testing.T) *isa.Instruction {
			in := inst(t, vec, isa.OpTensorCopy, isa.Attrs{}, out(sbuf(bf16, 128, 64)))
			in.Ins = []isa.Operand{rawNeg(t, 64)}
			return in
		}, 0, 2 * 64, true},
		{"activation", func(t *testing.T) *isa.Instruction {
			return inst(t, scal, isa.OpActivation, isa.Attrs{Func: isa.ActExp, Scale: 1}, out(sbuf(bf16, 128, 512)), sbuf(bf16, 128, 512).strided(8))
		}, 0, 1024, true},
		{"matmul moving", func(t *testing.T) *isa.Instruction {
			return inst(t, tensor, isa.OpMultiplyMoving, isa.Attrs{}, out(psum(fp32, 128, 128)), sbuf(bf16, 128, 128).strided(8))
		}, 128, 2 * (128 + mmFixed), true},
		{"tensor_tensor general rate", func(t *testing.T) *isa.Instruction {
			return inst(t, vec, isa.OpTensorTensor, add, out(sbuf(bf16, 128, 128)), sbuf(bf16, 128, 128).strided(8), sbuf(bf16, 128, 128))
		}, 0, 2 * 2 * 128, true},
		{"dma is not penalized", func(t *testing.T) *isa.Instruction {
			in := inst(t, isa.EngineSync, isa.OpDMACopy, isa.Attrs{}, nil, sbuf(fp32, 128, 128).strided(4))
			in.Outs = []isa.Operand{hbmOut(t, 128)}
			return in
		}, 0, 64, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cost(m, tc.build(t), tc.ns)
			assert.Equal(t, tc.want, c.IntervalCycles)
			assert.Equal(t, tc.penalized, c.StridePenalized)
		})
	}
}

func TestCostLatencies(t *testing.T) {
	m := costModel(t, "nc-v2")
	cases := []struct {
		name          string
		in            func(t *testing.T) *isa.Instruction
		ns            int64
		interval, lat int64
	}{
		// Latency = interval + the engine's pipeline constant.
		{"matmul", func(t *testing.T) *isa.Instruction { return matmul(bf16)(t, 512) }, 128, 512 + mmFixed, 512 + mmFixed + 128},
		{"load_stationary", func(t *testing.T) *isa.Instruction {
			return inst(t, tensor, isa.OpLoadStationary, isa.Attrs{}, nil, sbuf(bf16, 128, 128))
		}, 0, 32, 32},
		{"vector tensor_copy", func(t *testing.T) *isa.Instruction {
			return inst(t, vec, isa.OpTensorCopy, isa.Attrs{}, out(sbuf(fp32, 128, 128)), sbuf(fp32, 128, 128))
		}, 0, 128, 128 + 100},
		// MIN_II + SCALAR_PIPE_CYCLES (S1's ~100 cycles; S4's measured
		// 264-cycle chain is a validation row, not fitted).
		{"activation N=1", func(t *testing.T) *isa.Instruction {
			return inst(t, scal, isa.OpActivation, isa.Attrs{Func: isa.ActExp, Scale: 1}, out(sbuf(bf16, 128, 1)), sbuf(bf16, 128, 1))
		}, 0, 64, 164},
		{"iota", func(t *testing.T) *isa.Instruction {
			return inst(t, gps, isa.OpIota, isa.Attrs{}, out(sbuf(isa.INT32, 128, 10)))
		}, 0, 160, 260},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cost(m, tc.in(t), tc.ns)
			assert.Equal(t, tc.interval, c.IntervalCycles)
			assert.Equal(t, tc.lat, c.LatencyCycles)
		})
	}
}

func TestCostSyncAndDMAOnEveryEngine(t *testing.T) {
	for _, table := range configs.CostTableNames() {
		m := costModel(t, table)
		for _, e := range isa.AllEngines() {
			for _, op := range []isa.Opcode{isa.OpNop, isa.OpSemWait, isa.OpSemInc, isa.OpBarrier} {
				c := cost(m, &isa.Instruction{Body: &isa.Body{Op: op, Engine: e}}, 0)
				assert.Equal(t, int64(1), c.IntervalCycles, "%s %s %s", table, e, op)
				assert.Equal(t, "any."+op.String()+".default", c.Variant)
			}
			in := inst(t, e, isa.OpDMACopy, isa.Attrs{}, out(sbuf(bf16, 128, 4096)), sbuf(bf16, 128, 4096))
			c := cost(m, in, 0)
			assert.Equal(t, int64(64), c.IntervalCycles, "%s %s dma_copy: the trigger, not the transfer", table, e)
		}
	}
}

package tile

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/isa"
)

const sample = `kernel matmul_relu     # C = relu(A^T.T @ B), K = 256
param K = 256
param M = 128
param N = 1024
tile AT hbm bf16 [K, M] input
tile B hbm bf16 [K, N] input
tile C hbm bf16 [M, N] output
tile at sbuf bf16 [128, K // 128, M]
@lda sync dma_copy at[0:128, 0:2, 0:M], AT[0:K, 0:M]<(t p:128) m -> p t m>
for n in range(0, N // 512) parallel:
    tile b sbuf bf16 [128, 2, 512] bufs=2
    tile ps psum fp32 [128, 512] bufs=2
    tile c sbuf bf16 [128, 512] bufs=2
    any dma_copy b, B[0:K, n * 512:(n + 1) * 512]<(t p:128) f -> p t f>
    for k in range(0, 2) sequential:
        tensor load_stationary at[0:128, k, 0:M]
        tensor multiply_moving ps, b[0:128, k, 0:512] start=(k == 0) stop=(k == 1) op=1
    if n % 2 == 0:
        scalar activation c, ps func=relu
    else:
        any tensor_scalar c, ps alu0=max imm0=0
    sync dma_copy C[0:M, n * 512:n * 512 + 512], c queue=3 after=lda
`

func TestParsePrintRoundTrip(t *testing.T) {
	k, err := Parse(sample, "sample.tile")
	require.NoError(t, err)
	assert.Equal(t, "matmul_relu", k.Name)
	require.Len(t, k.Tiles, 7)
	assert.Len(t, k.Ops, 7)
	assert.Equal(t, Input, k.Tiles[0].Role)
	b := k.Tiles[4]
	assert.Equal(t, "b", b.Name)
	assert.Equal(t, 2, b.Bufs)
	require.NotNil(t, b.Scope)
	assert.Equal(t, "n", b.Scope.Var.Name)

	text1 := String(k)
	k2, err := Parse(text1, "printed.tile")
	require.NoError(t, err, text1)
	text2 := String(k2)
	assert.Equal(t, text1, text2, "printing is canonical")
	assert.Contains(t, text1, "param K = 256")
	assert.Contains(t, text1, "tile AT hbm bf16 [K, M] input")
	assert.Contains(t, text1, "AT[0:K, 0:M]<(t p:128) m -> p t m>")
	assert.Contains(t, text1, "start=(k == 0) stop=(k == 1) op=1")
	assert.Contains(t, text1, "queue=3 after=lda")

	mm := k.Ops[3]
	assert.Equal(t, isa.OpMultiplyMoving, mm.Opcode)
	env := make([]int64, len(k.Vars))
	env[mm.Start.n.a.v.Index] = 0
	assert.Equal(t, int64(1), mm.Start.Eval(env))
	assert.Equal(t, int64(0), mm.Stop.Eval(env))
	assert.True(t, k.Ops[1].Any)
	assert.Same(t, k.Ops[0], k.Ops[6].After[0])
}

func TestExprPrintsWithTheParenthesesItNeeds(t *testing.T) {
	k := New("x")
	a, b := k.Var("a"), k.Var("b")
	tests := []struct {
		e    Expr
		want string
	}{
		{a.E().Add(b.E()).MulC(3), "(a + b) * 3"},
		{a.E().Sub(b.E().Sub(C(1))), "a - (b - 1)"},
		{a.E().Sub(b.E()).Sub(C(1)), "a - b - 1"},
		{Min(a.E().MulC(128), C(1000)).CDiv(C(128)), "cdiv(min(a * 128, 1000), 128)"},
		{a.E().Eq(C(0)).And(b.E().Lt(C(2))), "a == 0 and b < 2"},
		{a.E().Mod(C(2)).Eq(C(1)).Or(a.E().Eq(C(4))), "a % 2 == 1 or a == 4"},
		{C(-3).Add(a.E()), "(-3) + a"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, tc.e.String())
	}
	env := []int64{5, 7}
	assert.Equal(t, int64(36), tests[0].e.Eval(env))
	assert.Equal(t, int64(-1), tests[1].e.Eval(env))
	assert.Equal(t, int64(5), tests[3].e.Eval(env))
	assert.Equal(t, int64(0), tests[4].e.Eval(env))
	// Floor semantics for negative operands.
	assert.Equal(t, int64(-2), C(-3).Div(C(2)).Eval(nil))
	assert.Equal(t, int64(1), C(-3).Mod(C(2)).Eval(nil))
	assert.Equal(t, int64(-1), C(-3).CDiv(C(2)).Eval(nil))
}

func TestParseErrorsAreLocated(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"no kernel line", "tile a sbuf bf16 [128, 4]\n", "k.tile:1:1: a kernel starts with"},
		{"unknown dtype", "kernel x\ntile a sbuf bf17 [128, 4]\n", "k.tile:2:13: unknown dtype \"bf17\""},
		{"unknown tile", "kernel x\nvector tensor_copy a, b\n", "k.tile:2:20: unknown tile \"a\""},
		{"tile out of scope", "kernel x\nfor i in range(0, 2):\n    tile a sbuf bf16 [128, 4]\nvector memset a\n", "k.tile:4:15: unknown tile \"a\""},
		{"variable out of scope", "kernel x\ntile a sbuf bf16 [128, 4]\nfor i in range(0, 2):\n    pass\nvector memset a[0:128, i]\n", "k.tile:5:24: unknown name \"i\""},
		{"bad indent", "kernel x\ntile a sbuf bf16 [128, 4]\n  vector memset a\n", "k.tile:3:3: unexpected indent"},
		{"missing block", "kernel x\nfor i in range(2):\nvector nop\n", "k.tile:2:18: expected an indented block"},
		{"wrong engine", "kernel x\ntile a sbuf bf16 [128, 4]\ntensor memset a\n", "k.tile:3:1: memset cannot run on tensor"},
		{"operand count", "kernel x\ntile a sbuf bf16 [128, 4]\nvector tensor_copy a\n", "k.tile:3:8: tensor_copy takes 2 operand(s), got 1"},
		{"bad attribute", "kernel x\ntile a sbuf bf16 [128, 4]\nvector memset a func=exp\n", "k.tile:3:17: memset does not take func"},
		{"unknown label", "kernel x\ntile a sbuf bf16 [128, 4]\nvector memset a after=z\n", "k.tile:3:23: after=z: no op has label @z"},
		{"rearrange on chip", "kernel x\ntile a sbuf bf16 [128, 4]\nvector memset a<p f -> f p>\n", "only HBM accesses are rearranged"},
		{"rearrange names", "kernel x\ntile A hbm bf16 [256, 4]\ntile a sbuf bf16 [128, 2, 4]\nsync dma_copy a, A<(t p) f -> p t f>\n", "each group needs the sizes of all its factors but one"},
		{"duplicate tile", "kernel x\ntile a sbuf bf16 [128, 4]\ntile a sbuf bf16 [128, 4]\n", "k.tile:3:6: a is already defined"},
		{"hbm in loop", "kernel x\nfor i in range(2):\n    tile A hbm bf16 [4]\n", "HBM tensors are declared at kernel level"},
		{"tab", "kernel x\n\ttile a sbuf bf16 [128, 4]\n", "k.tile:2:1: indent with spaces"},
		{"non-constant size", "kernel x\nfor i in range(2):\n    tile a sbuf bf16 [128, i]\n", "k.tile:3:28: tile sizes must be constant"},
		{"else alone", "kernel x\nelse:\n", "else without if"},
		{"non-ASCII name", "kernel x\ntile größe sbuf bf16 [128, 4]\n", "k.tile:2:8: unexpected character 'ö'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.src, "k.tile")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestRearrangeDims(t *testing.T) {
	r := &Rearrange{In: [][]string{{"t", "p"}, {"m"}}, Out: []string{"p", "t", "m"}, Sizes: map[string]int64{"p": 128}}
	sizes, strides, err := r.Dims([]int64{512, 100}, []int64{1000, 1})
	require.NoError(t, err)
	assert.Equal(t, []int64{128, 4, 100}, sizes)
	assert.Equal(t, []int64{1000, 128000, 1}, strides)
	_, _, err = r.Dims([]int64{500, 100}, []int64{1000, 1})
	assert.ErrorContains(t, err, "not a multiple of 128")
}

func TestGoBuilderMatchesTheTextForm(t *testing.T) {
	k := New("copy")
	x := k.Tensor("x", isa.BF16, Input, 1024, 256)
	y := k.Tensor("y", isa.BF16, Output, 1024, 256)
	root := k.Root()
	var load *Op
	root.For("i", C(0), C(8), Parallel, func(b *Block, i Expr) {
		s := b.Tile("s", isa.MemSBUF, isa.BF16, []int64{128, 256}, 2)
		load = b.Add(&Op{Opcode: isa.OpDMACopy, Any: true, Outs: []Access{s.All()}, Ins: []Access{x.At(RS(i.MulC(128), C(128)))}})
		b.Add(&Op{Opcode: isa.OpDMACopy, Any: true, Outs: []Access{y.At(RS(i.MulC(128), C(128)))}, Ins: []Access{s.All()}, After: []*Op{load}})
	})
	require.NoError(t, k.Finish())
	want := `kernel copy
tile x hbm bf16 [1024, 256] input
tile y hbm bf16 [1024, 256] output
for i in range(0, 8) parallel:
    tile s sbuf bf16 [128, 256] bufs=2
    @op0 any dma_copy s, x[i * 128:i * 128 + 128]
    any dma_copy y[i * 128:i * 128 + 128], s after=op0
`
	assert.Equal(t, want, String(k))
	k2, err := Parse(want, "copy.tile")
	require.NoError(t, err)
	assert.Equal(t, want, String(k2))
	assert.True(t, strings.HasPrefix(String(k2), "kernel copy\n"))
}

// Compiled expressions agree with the tree on random environments.
func TestCompiledExpressionsAgree(t *testing.T) {
	k := New("x")
	a, b, c := k.Var("a"), k.Var("b"), k.Var("c")
	exprs := []Expr{
		a.E().MulC(128).Add(b.E()).AddC(7),
		Min(C(128), C(1000).Sub(a.E().MulC(512)).Sub(b.E().MulC(128))),
		Min(C(512), C(3000).Sub(c.E().MulC(512))).CDiv(C(128)),
		a.E().Eq(C(0)).Or(b.E().Mod(C(3)).Eq(C(2))),
		a.E().Mul(b.E()).Sub(c.E().Div(C(4))),
		Max(a.E(), b.E()).Add(Min(c.E(), C(2)).MulC(-3)),
		a.E().Sub(a.E()).Add(C(5)),
	}
	env := []int64{0, 0, 0}
	for trial := 0; trial < 200; trial++ {
		env[0], env[1], env[2] = int64(trial%7), int64(trial*3%11)-4, int64(trial%13)
		for _, e := range exprs {
			assert.Equal(t, e.Eval(env), e.Compile().Eval(env), "%s at %v", e, env)
		}
	}
	assert.Equal(t, formAffine, exprs[0].Compile().form)
	assert.Equal(t, formAffine, exprs[6].Compile().form)
	assert.Empty(t, exprs[6].Compile().base.terms, "a - a + 5 is the constant 5")
}

func TestCompiledFormsAgree(t *testing.T) {
	k := New("x")
	a, b := k.Var("a"), k.Var("b")
	size := Min(C(512), C(3000).Sub(a.E().MulC(512)))
	exprs := []Expr{
		size,
		a.E().MulC(512).Add(size),
		size.CDiv(C(128)),
		Min(C(128), C(1000).Sub(b.E().MulC(128))).Add(C(3)),
		Min(C(128), size.Sub(b.E().MulC(128))),
		size.MulC(-2).Add(Max(a.E(), b.E())),
		Max(a.E(), Min(b.E(), C(3))),
		a.E().Eq(C(0)),
		size.Div(C(128)).MulC(128).Gt(C(0)),
	}
	forms := []uint8{formMin, formMin, formCDivMin, formMin, formMin, formNode, formNode, formCmp, formNode}
	for i, e := range exprs {
		c := e.Compile()
		assert.Equal(t, forms[i], c.form, "%s", e)
		for av := int64(0); av < 8; av++ {
			for bv := int64(0); bv < 10; bv++ {
				env := []int64{av, bv}
				assert.Equal(t, e.Eval(env), c.Eval(env), "%s at %v", e, env)
			}
		}
	}
}

// Two entries into a nest with equal signatures give equal values at every
// point of the nest; interior blocks share one.
func TestSignatureDecidesValuesOverANest(t *testing.T) {
	k := New("x")
	nb, nt := k.Var("nb"), k.Var("nt")
	// cols = min(512, 3000 - nb*2048 - nt*512), nt in [0, 4)
	cols := Min(C(512), C(3000).Sub(nb.E().MulC(2048)).Sub(nt.E().MulC(512))).Compile()
	start := nt.E().MulC(512).Add(nb.E().MulC(7)).Compile()
	nest := func(v int) bool { return v == nt.Index }
	lo, hi := []int64{0, 0}, []int64{0, 3}
	sig := func(c *Code, nbv int64) []int64 {
		s, ok := c.Signature(nil, []int64{nbv, 0}, nest, lo, hi)
		require.True(t, ok)
		return s
	}
	// nb = 0: 3000 - nt*512 >= 512 for nt <= 3 holds (3000-1536 = 1464):
	// the constant wins everywhere.
	assert.Equal(t, []int64{0, -1, 512}, sig(cols, 0))
	assert.Equal(t, sig(cols, 0), sig(cols, -1), "another interior block")
	// nb = 1: 952 - nt*512 goes below 512: every term counts.
	edge := sig(cols, 1)
	assert.NotEqual(t, sig(cols, 0), edge)
	for nbv := int64(-3); nbv <= 1; nbv++ {
		for nbw := int64(-3); nbw <= 1; nbw++ {
			if !assert.ObjectsAreEqual(sig(cols, nbv), sig(cols, nbw)) {
				continue
			}
			for ntv := int64(0); ntv <= 3; ntv++ {
				assert.Equal(t, cols.Eval([]int64{nbv, ntv}), cols.Eval([]int64{nbw, ntv}))
			}
		}
	}
	assert.NotEqual(t, sig(start, 0), sig(start, 1))
}

// A signature plan gives the same signatures as Signature.
func TestSignaturePlanAgrees(t *testing.T) {
	k := New("x")
	nb, mt, nt := k.Var("nb"), k.Var("mt"), k.Var("nt")
	exprs := []Expr{
		Min(C(512), C(3000).Sub(nb.E().MulC(2048)).Sub(nt.E().MulC(512))),
		nt.E().MulC(512).Add(nb.E().MulC(7)),
		Max(C(0), mt.E().Sub(nt.E())),
		nt.E().Eq(Min(C(4), C(9).Sub(nb.E())).CDiv(C(2)).Sub(C(1))),
		mt.E().MulC(3),
	}
	nest := func(v int) bool { return v != nb.Index }
	for _, e := range exprs {
		c := e.Compile()
		p := c.Plan(nest)
		for nbv := int64(-2); nbv < 3; nbv++ {
			for hi := int64(0); hi < 4; hi++ {
				env := []int64{nbv, 0, 0}
				lo, his := []int64{0, 0, 0}, []int64{0, hi, hi}
				want, ok := c.Signature(nil, env, nest, lo, his)
				require.True(t, ok)
				assert.Equal(t, want, p.Append(nil, env, lo, his), "%s", e)
			}
		}
	}
}

// Two kernels inlined into one share the bound tensors, keep their ops in
// order and get names of their own.
func TestInlineComposesKernels(t *testing.T) {
	mk := func(name string) *Kernel {
		k := New(name)
		x := k.Tensor("X", isa.BF16, Input, 256, 64)
		out := k.Tensor("OUT", isa.BF16, Output, 256, 64)
		k.Root().For("r", C(0), C(2), Parallel, func(b *Block, r Expr) {
			s := b.Tile("s", isa.MemSBUF, isa.BF16, []int64{128, 64}, 2)
			b.Add(&Op{Opcode: isa.OpDMACopy, Any: true, Outs: []Access{s.All()}, Ins: []Access{x.At(RS(r.MulC(128), C(128)))}})
			b.Add(&Op{Opcode: isa.OpDMACopy, Any: true, Outs: []Access{out.At(RS(r.MulC(128), C(128)))}, Ins: []Access{s.All()}})
		})
		return k
	}
	k := New("model")
	a := k.Tensor("a", isa.BF16, Input, 256, 64)
	h := k.Tensor("h", isa.BF16, Temp, 256, 64)
	o := k.Tensor("o", isa.BF16, Output, 256, 64)
	require.NoError(t, k.Root().Inline(mk("first"), "l0_", map[string]*Tile{"X": a, "OUT": h}))
	require.NoError(t, k.Root().Inline(mk("second"), "l1_", map[string]*Tile{"X": h, "OUT": o}))
	require.NoError(t, k.Finish())
	assert.Len(t, k.Ops, 4)
	assert.Same(t, h, k.Ops[1].Outs[0].Tile)
	assert.Same(t, h, k.Ops[2].Ins[0].Tile)
	text := String(k)
	assert.Contains(t, text, "l0_s")
	assert.Contains(t, text, "l1_r")

	err := k.Root().Inline(mk("third"), "l2_", map[string]*Tile{"X": a})
	assert.ErrorContains(t, err, "tensor OUT is not bound")
	wrong := k.Tensor("w", isa.FP32, Temp, 256, 64)
	err = k.Root().Inline(mk("fourth"), "l3_", map[string]*Tile{"X": a, "OUT": wrong})
	assert.ErrorContains(t, err, "tensor OUT is bf16[256 64], bound to w fp32[256 64]")
}

// Two kernels hand data through a kernel-level SBUF tile that both name
// and the caller binds to one of its own: the writer's and the reader's
// accesses are to that tile; an unbound one stays the kernel's own.
func TestInlineBindsOnChipTiles(t *testing.T) {
	writer := New("writer")
	x := writer.Tensor("X", isa.BF16, Input, 128, 64)
	s := writer.Root().Tile("S", isa.MemSBUF, isa.BF16, []int64{128, 64}, 1)
	writer.Root().Add(&Op{Opcode: isa.OpDMACopy, Any: true, Outs: []Access{s.All()}, Ins: []Access{x.All()}})
	reader := New("reader")
	out := reader.Tensor("OUT", isa.BF16, Output, 128, 64)
	r := reader.Root().Tile("S", isa.MemSBUF, isa.BF16, []int64{128, 64}, 1)
	reader.Root().Add(&Op{Opcode: isa.OpDMACopy, Any: true, Outs: []Access{out.All()}, Ins: []Access{r.All()}})

	k := New("model")
	a := k.Tensor("a", isa.BF16, Input, 128, 64)
	o := k.Tensor("o", isa.BF16, Output, 128, 64)
	shared := k.Root().Tile("shared", isa.MemSBUF, isa.BF16, []int64{128, 64}, 1)
	require.NoError(t, k.Root().Inline(writer, "w_", map[string]*Tile{"X": a, "S": shared}))
	require.NoError(t, k.Root().Inline(reader, "r_", map[string]*Tile{"OUT": o, "S": shared}))
	require.NoError(t, k.Finish())
	assert.Same(t, shared, k.Ops[0].Outs[0].Tile)
	assert.Same(t, shared, k.Ops[1].Ins[0].Tile)

	double := k.Root().Tile("double", isa.MemSBUF, isa.BF16, []int64{128, 64}, 2)
	again := New("again")
	again.Root().Tile("S", isa.MemSBUF, isa.BF16, []int64{128, 64}, 1)
	assert.ErrorContains(t, k.Root().Inline(again, "a_", map[string]*Tile{"S": double}), "tile S has 1 buffers at offset -1, bound to double with 2 at -1")
}

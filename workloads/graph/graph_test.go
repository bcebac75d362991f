package graph

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/isa"
)

func TestShapeErrorsNameTheOpAndShapes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(b *Builder)
		want  string
	}{
		{"linear in_features", func(b *Builder) {
			x := b.Input("x", []int64{2, 16, 4096}, isa.BF16)
			b.Scope("layers.0.mlp", func() {
				b.Add(Linear, "down_proj", Attrs{}, x, b.Param("down_proj.weight", []int64{4096, 14336}, isa.BF16), nil)
			})
		}, "layers.0.mlp.down_proj (linear): input [2, 16, 4096] has last dim 4096, but weight [4096, 14336] takes in_features 14336"},
		{"grouped-query heads", func(b *Builder) {
			q := b.Input("q", []int64{1, 32, 8, 128}, isa.BF16)
			k := b.Input("k", []int64{1, 5, 8, 128}, isa.BF16)
			b.Add(SDPA, "attn", Attrs{Causal: true}, q, k, k)
		}, "attn (sdpa): q's 32 heads are not a multiple of k's 5"},
		{"causal past beyond the cache", func(b *Builder) {
			q := b.Input("q", []int64{1, 8, 1, 64}, isa.BF16)
			k := b.Input("k", []int64{1, 8, 16, 64}, isa.BF16)
			b.Add(SDPA, "attn", Attrs{Causal: true, Past: 16}, q, k, k)
		}, "16 past and 1 new positions, but k [1, 8, 16, 64] holds 16"},
		{"norm weight", func(b *Builder) {
			x := b.Input("x", []int64{4, 768}, isa.BF16)
			b.Add(LayerNorm, "ln", Attrs{}, x, b.Param("w", []int64{512}, isa.BF16), nil)
		}, "ln (layer_norm): weight [512] does not match the normalised dim 768 of input [4, 768]"},
		{"embedding ids", func(b *Builder) {
			b.Add(Embedding, "embed", Attrs{}, b.Input("ids", []int64{4}, isa.BF16), b.Param("t", []int64{10, 8}, isa.BF16))
		}, "ids [4] must be integers"},
		{"reshape elements", func(b *Builder) {
			b.Add(Reshape, "view", Attrs{Shape: []int64{3, 5}}, b.Input("x", []int64{4, 4}, isa.BF16))
		}, "cannot view [4, 4] (16 elements) as [3, 5] (15)"},
		{"negative dim", func(b *Builder) { b.Input("x", []int64{4, -1}, isa.BF16) }, "x: every dimension must be positive, got [4, -1]"},
		{"unknown kind", func(b *Builder) { b.Add("conv9d", "c", Attrs{}, b.Input("x", []int64{4}, isa.BF16)) }, "c (conv9d): unknown op kind"},
		{"inputs", func(b *Builder) { b.Add(AddOp, "sum", Attrs{}, b.Input("x", []int64{4}, isa.BF16)) }, "sum (add): takes 2 inputs, got 1"},
		{"broadcast", func(b *Builder) {
			b.Add(AddOp, "sum", Attrs{}, b.Input("x", []int64{4, 8}, isa.BF16), b.Input("y", []int64{4}, isa.BF16))
		}, "sum (add): shapes [4, 8] and [4] do not match"},
		{"moe routing", func(b *Builder) {
			x := b.Input("x", []int64{6, 64}, isa.BF16)
			w := b.Input("w", []int64{6, 3}, isa.BF16)
			e := b.Param("e", []int64{8, 128, 64}, isa.BF16)
			d := b.Param("d", []int64{8, 64, 128}, isa.BF16)
			b.Add(MoEExperts, "experts", Attrs{Experts: 8, TopK: 2}, x, w, w, e, e, d)
		}, "routing [6, 3] must be [tokens 6, top_k 2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder()
			tc.build(b)
			// Later calls after the error add nothing and do not panic.
			b.Add(ReLU, "after", Attrs{}, b.Input("z", []int64{2}, isa.BF16))
			_, err := b.Graph()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestAttentionPairsAndFLOPs(t *testing.T) {
	for _, tc := range []struct {
		name          string
		s, t, past, w int64
		causal        bool
		pairs         int64
		keysRead      int64 // of K and V, for the least HBM bytes
	}{
		{"prefill causal", 4, 4, 0, 0, true, 10, 4},
		{"full", 4, 6, 0, 0, false, 24, 6},
		{"decode", 1, 8, 7, 0, true, 8, 8},
		{"chunked prefill", 2, 6, 4, 0, true, 5 + 6, 6},
		{"sliding window", 4, 4, 0, 2, true, 1 + 2 + 2 + 2, 4},
		// Behind the window: the first query (position 7) sees keys 5 to 7.
		{"decode behind a window", 1, 8, 7, 3, true, 3, 3},
		{"chunked prefill behind a window", 2, 10, 8, 4, true, 4 + 4, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder()
			q := b.Input("q", []int64{2, 8, tc.s, 64}, isa.BF16)
			k := b.Input("k", []int64{2, 2, tc.t, 64}, isa.BF16)
			o := b.Add(SDPA, "attn", Attrs{Causal: tc.causal, Past: tc.past, Window: tc.w}, q, k, k)
			g, err := b.Graph()
			require.NoError(t, err)
			assert.Equal(t, []int64{2, 8, tc.s, 64}, o.Shape)
			op := g.Ops[0]
			assert.Equal(t, tc.pairs, op.Pairs())
			assert.Equal(t, 2*8*tc.pairs*(2*64+2*64+5), op.FLOPs())
			// Q and the output, and K and V (the same tensor here) for the
			// keys some query sees, BF16.
			assert.Equal(t, 2*(2*8*tc.s*64)*2+2*(2*2*tc.keysRead*64)*2, op.MinHBMBytes())
		})
	}
}

func TestFLOPsAndBytes(t *testing.T) {
	b := NewBuilder()
	ids := b.Input("ids", []int64{1, 4}, isa.INT32)
	table := b.Param("embed.weight", []int64{1000, 64}, isa.BF16)
	x := b.Add(Embedding, "embed", Attrs{}, ids, table)
	w := b.Param("proj.weight", []int64{128, 64}, isa.BF16)
	y := b.Add(Linear, "proj", Attrs{}, x, w, nil)
	b.Output(b.Add(Linear, "head", Attrs{}, b.Add(Linear, "back", Attrs{}, y, b.Param("back.weight", []int64{64, 128}, isa.BF16), nil), table, nil))
	g, err := b.Graph()
	require.NoError(t, err)
	assert.Equal(t, int64(1000*64+128*64+64*128), g.ParamCount(), "the tied table counts once")
	assert.Equal(t, int64(2*4*64*128), g.Ops[1].FLOPs())
	// The embedding alone reads only the 4 rows it gathers.
	assert.Equal(t, int64(16+4*64*2+4*64*2), g.Ops[0].MinHBMBytes())
	// The graph reads the tied table whole (the head uses it), both
	// weights, the ids, and writes the logits.
	want := int64(1000*64*2 + 128*64*2 + 64*128*2 + 16 + 4*1000*2)
	assert.Equal(t, want, g.MinHBMBytes())
}

func TestKVAppendAndMoE(t *testing.T) {
	b := NewBuilder()
	cache := b.Cache("k_cache", []int64{1, 2, 10, 64}, isa.BF16)
	nw := b.Input("k", []int64{1, 2, 1, 64}, isa.BF16)
	full := b.Add(KVAppend, "append", Attrs{Past: 10}, cache, nw)
	assert.Equal(t, []int64{1, 2, 11, 64}, full.Shape)
	assert.Equal(t, KVCache, full.Role)
	x := b.Input("x", []int64{3, 64}, isa.BF16)
	top := b.AddMulti(TopK, "topk", Attrs{TopK: 2}, b.Input("p", []int64{3, 8}, isa.BF16))
	require.Len(t, top, 2)
	assert.Equal(t, isa.INT32, top[1].DType)
	gate := b.Param("w1", []int64{8, 128, 64}, isa.BF16)
	up := b.Param("w3", []int64{8, 128, 64}, isa.BF16)
	down := b.Param("w2", []int64{8, 64, 128}, isa.BF16)
	b.Add(MoEExperts, "experts", Attrs{Experts: 8, TopK: 2}, x, top[0], top[1], gate, up, down)
	g, err := b.Graph()
	require.NoError(t, err)
	moe := g.Ops[len(g.Ops)-1]
	assert.Equal(t, int64(6), moe.ExpertsTouched(), "3 tokens x 2 picks reach 6 of 8 experts")
	// The cache read once, the new entry written once, 6 of 8 experts'
	// weights.
	weights := int64(3*8*128*64*2) / 8 * 6
	assert.Equal(t, cache.Bytes()+nw.Bytes()+nw.Bytes()+x.Bytes()+int64(3*8*2)+weights, g.MinHBMBytes())
}

// An optional input left out (a Linear without bias) counts nothing.
func TestOptionalInputs(t *testing.T) {
	b := NewBuilder()
	x := b.Input("x", []int64{2, 8}, isa.BF16)
	b.Add(Linear, "l", Attrs{}, x, b.Param("w", []int64{4, 8}, isa.BF16), nil)
	g, err := b.Graph()
	require.NoError(t, err)
	assert.Equal(t, int64(2*8*2+4*8*2+2*4*2), g.Ops[0].MinHBMBytes())
	assert.Equal(t, int64(2*2*8*4), g.Ops[0].FLOPs())
}

// The routing assumption: balanced picks give every expert reached the
// same share; skewed ones fall off as (i+1)^-s, each share at most the
// tokens, the picks all placed where the cap allows.
func TestExpertShares(t *testing.T) {
	moe := func(tokens, k, e int64, skew float64) *Op {
		x := &Tensor{Shape: []int64{tokens, 64}}
		return &Op{Kind: MoEExperts, Inputs: []*Tensor{x}, Attrs: Attrs{Experts: e, TopK: k, RoutingSkew: skew}}
	}
	for _, tc := range []struct {
		name      string
		tokens, k int64
		e         int64
		skew      float64
		want      []int64
	}{
		{"balanced, every expert", 128, 2, 8, 0, []int64{32, 32, 32, 32, 32, 32, 32, 32}},
		{"balanced, few picks", 1, 2, 8, 0, []int64{1, 1}},
		{"balanced, rounded up", 5, 2, 8, 0, []int64{2, 2, 2, 2, 2, 2, 2, 2}},
		{"zipf 1", 128, 2, 8, 1, []int64{94, 47, 31, 24, 19, 16, 13, 12}},
		{"steep, capped at the tokens", 4, 2, 8, 2, []int64{4, 2, 1, 1}},
		{"steep, every expert full", 3, 8, 8, 3, []int64{3, 3, 3, 3, 3, 3, 3, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := moe(tc.tokens, tc.k, tc.e, tc.skew).ExpertShares()
			assert.Equal(t, tc.want, got)
			if tc.skew > 0 {
				var sum int64
				for i, s := range got {
					sum += s
					assert.LessOrEqual(t, s, tc.tokens, "a token picks an expert once")
					if i > 0 {
						assert.LessOrEqual(t, s, got[i-1], "largest first")
					}
				}
				assert.Equal(t, tc.tokens*tc.k, sum, "every pick placed")
			}
		})
	}
}

package zoo

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/graph"
	"github.com/trnsim/trnsim/workloads/nn"
)

// BuildOptions says what graph to build: the pass (batch, new tokens, KV
// positions before them), how many of the layers (0: all), and the
// dtype of the matmul weights (bf16; fp8e4 or int8 for quantised
// weights). Embeddings, norms and activations are in the pass's
// activation dtype.
type BuildOptions struct {
	Pass        nn.Pass
	Layers      int64
	WeightDType isa.DType
	// TP > 1 builds one rank of a tensor-parallel group of TP ranks
	// (Megatron's splits, see Shard): the projections into heads and the
	// MLP's first layer column-parallel, the output projections
	// row-parallel with an all-reduce, the embedding vocab-parallel with
	// an all-reduce, and the LM head column-parallel with an all-gather.
	TP int64
}

// Shard returns one tensor-parallel rank's slice of the model: the
// attention heads, the KV heads (each replicated on tp / kv ranks when
// there are fewer than the ranks), the MLP's (and experts') intermediate
// dim and the vocabulary (padded up to a multiple of the ranks, as
// Megatron pads it) divided over tp ranks. What does not divide is an
// error that says so.
func (c *Config) Shard(tp int64) (*Config, error) {
	if tp <= 1 {
		return c, nil
	}
	if tp > c.Heads {
		return nil, fmt.Errorf("%s: num_attention_heads %d is fewer than tp %d (attention heads are split across the ranks: at most %d ranks)", c.Name, c.Heads, tp, c.Heads)
	}
	if c.Heads%tp != 0 {
		return nil, fmt.Errorf("%s: num_attention_heads %d does not divide by tp %d (attention heads are split across the ranks; the nearest that divide it: %d and %d)",
			c.Name, c.Heads, tp, divisorBelow(c.Heads, tp), divisorAbove(c.Heads, tp))
	}
	r := *c
	r.Heads = c.Heads / tp
	switch {
	case c.KVHeads >= tp:
		if c.KVHeads%tp != 0 {
			return nil, fmt.Errorf("%s: num_key_value_heads %d does not divide by tp %d", c.Name, c.KVHeads, tp)
		}
		r.KVHeads = c.KVHeads / tp
	default:
		if tp%c.KVHeads != 0 {
			return nil, fmt.Errorf("%s: tp %d is not a multiple of num_key_value_heads %d (with fewer KV heads than ranks, each KV head is replicated on tp / %d ranks)", c.Name, tp, c.KVHeads, c.KVHeads)
		}
		r.KVHeads = 1
	}
	if c.Intermediate%tp != 0 {
		return nil, fmt.Errorf("%s: intermediate_size %d does not divide by tp %d (the MLP's columns are split across the ranks)", c.Name, c.Intermediate, tp)
	}
	r.Intermediate = c.Intermediate / tp
	r.Vocab = (c.Vocab + tp - 1) / tp
	return &r, nil
}

// divisorBelow and divisorAbove are the nearest divisors of n below and
// above d (for messages).
func divisorBelow(n, d int64) int64 {
	for x := d - 1; x > 1; x-- {
		if n%x == 0 {
			return x
		}
	}
	return 1
}

func divisorAbove(n, d int64) int64 {
	for x := d + 1; x < n; x++ {
		if n%x == 0 {
			return x
		}
	}
	return n
}

// ranksOf returns the collective group size of a build (0: none).
func (o BuildOptions) ranksOf() int64 {
	if o.TP > 1 {
		return o.TP
	}
	return 0
}

// Build makes the model's graph for one forward pass: the embedding, the
// first Layers decoder (or encoder) layers, and the head. A causal LM's
// head computes the logits of each sequence's last position (what
// generation needs). Op and parameter names are transformers' module
// paths.
func (c *Config) Build(o BuildOptions) (*graph.Graph, error) {
	if o.Layers <= 0 || o.Layers > c.Layers {
		o.Layers = c.Layers
	}
	p := o.Pass
	if p.Batch <= 0 || p.Seq <= 0 || p.Past < 0 {
		return nil, fmt.Errorf("%s: batch %d and tokens %d must be positive, past %d not negative", c.Name, p.Batch, p.Seq, p.Past)
	}
	if c.MaxPositions > 0 && p.Past+p.Seq > c.MaxPositions {
		return nil, fmt.Errorf("%s: %d positions (%d past + %d new) are more than max_position_embeddings %d", c.Name, p.Past+p.Seq, p.Past, p.Seq, c.MaxPositions)
	}
	r, err := c.Shard(o.TP)
	if err != nil {
		return nil, err
	}
	b := graph.NewBuilder()
	switch c.Family {
	case "gpt2":
		r.buildGPT2(b, o)
	case "bert":
		r.buildBERT(b, o)
	default:
		r.buildLlama(b, o)
	}
	return b.Graph()
}

func (c *Config) buildLlama(b *graph.Builder, o BuildOptions) {
	p, adt, wdt := o.Pass, o.Pass.ActDType, o.WeightDType
	ids := b.Input("input_ids", []int64{p.Batch, p.Seq}, isa.INT32)
	var embed *nn.Embedding
	var x *graph.Tensor
	b.Scope("model", func() {
		embed = nn.NewEmbedding(b, "embed_tokens", c.Vocab, c.Hidden, adt)
		embed.ReduceRanks = o.ranksOf()
		x = embed.Forward(b, ids)
	})
	rope := [2]*graph.Tensor{
		b.Input("rope_cos", []int64{p.Seq, c.HeadDim}, adt),
		b.Input("rope_sin", []int64{p.Seq, c.HeadDim}, adt),
	}
	for l := int64(0); l < o.Layers; l++ {
		b.Scope(fmt.Sprintf("model.layers.%d", l), func() {
			inNorm := nn.NewRMSNorm(b, "input_layernorm", c.Hidden, c.NormEps, adt)
			var attn *nn.Attention
			acfg := nn.AttentionConfig{Hidden: c.Hidden, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim,
				QKVBias: c.QKVBias, OutBias: c.OutBias, RoPE: &nn.RoPEConfig{Theta: c.RoPETheta}, Causal: true, Window: c.Windows[l],
				QName: "q_proj", KName: "k_proj", VName: "v_proj", OName: "o_proj"}
			b.Scope("self_attn", func() {
				attn = nn.NewAttention(b, acfg, wdt, adt)
				attn.O.ReduceRanks = o.ranksOf()
			})
			postNorm := nn.NewRMSNorm(b, "post_attention_layernorm", c.Hidden, c.NormEps, adt)
			h := inNorm.Forward(b, x)
			b.Scope("self_attn", func() { h = attn.Forward(b, h, p, rope) })
			x = b.Add(graph.AddOp, "residual_attn", graph.Attrs{}, x, h)
			h = postNorm.Forward(b, x)
			if c.Experts > 0 {
				b.Scope("block_sparse_moe", func() {
					m := nn.NewMoE(b, nn.MoEConfig{Hidden: c.Hidden, Intermediate: c.Intermediate, Experts: c.Experts, TopK: c.TopK, Act: c.Act, ReduceRanks: o.ranksOf(), RoutingSkew: p.RoutingSkew}, wdt, adt)
					h = m.Forward(b, h)
				})
			} else {
				b.Scope("mlp", func() {
					m := nn.NewMLP(b, nn.MLPConfig{Hidden: c.Hidden, Intermediate: c.Intermediate, Gated: true, Act: c.Act, Bias: c.MLPBias,
						GateName: "gate_proj", UpName: "up_proj", DownName: "down_proj"}, wdt, adt)
					m.Down.ReduceRanks = o.ranksOf()
					h = m.Forward(b, h)
				})
			}
			x = b.Add(graph.AddOp, "residual_mlp", graph.Attrs{}, x, h)
		})
	}
	b.Scope("model", func() { x = nn.NewRMSNorm(b, "norm", c.Hidden, c.NormEps, adt).Forward(b, x) })
	c.lmHead(b, o, x, embed, "lm_head")
}

// LayerOf returns the decoder or encoder layer an op or tensor name is in
// (model.layers.3.mlp.up_proj: 3; transformer.h.3, encoder.layer.3 too).
func LayerOf(name string) (int64, bool) {
	for _, prefix := range []string{"model.layers.", "transformer.h.", "encoder.layer."} {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		num, _, _ := strings.Cut(rest, ".")
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// lmHead adds the logits of each sequence's last position.
func (c *Config) lmHead(b *graph.Builder, o BuildOptions, x *graph.Tensor, embed *nn.Embedding, name string) {
	p := o.Pass
	if p.Seq > 1 {
		x = b.AddMulti(graph.Split, "last_position", graph.Attrs{Axis: 1, Shape: []int64{p.Seq - 1, 1}}, x)[1]
	}
	head := &nn.Linear{Name: name}
	if c.TiedEmbeddings {
		head.Weight = embed.Table
	} else {
		head = nn.NewLinear(b, name, c.Hidden, c.Vocab, false, o.WeightDType, p.ActDType)
	}
	head.GatherRanks = o.ranksOf()
	b.Output(head.Forward(b, x))
}

func (c *Config) buildGPT2(b *graph.Builder, o BuildOptions) {
	p, adt, wdt := o.Pass, o.Pass.ActDType, o.WeightDType
	ids := b.Input("input_ids", []int64{p.Batch, p.Seq}, isa.INT32)
	pos := b.Input("position_ids", []int64{p.Batch, p.Seq}, isa.INT32)
	var wte *nn.Embedding
	var x *graph.Tensor
	b.Scope("transformer", func() {
		wte = nn.NewEmbedding(b, "wte", c.Vocab, c.Hidden, adt)
		wte.ReduceRanks = o.ranksOf()
		wpe := nn.NewEmbedding(b, "wpe", c.MaxPositions, c.Hidden, adt)
		x = b.Add(graph.AddOp, "embed_sum", graph.Attrs{}, wte.Forward(b, ids), wpe.Forward(b, pos))
		for l := int64(0); l < o.Layers; l++ {
			b.Scope(fmt.Sprintf("h.%d", l), func() {
				ln1 := nn.NewLayerNorm(b, "ln_1", c.Hidden, true, c.NormEps, adt)
				var attn *nn.Attention
				acfg := nn.AttentionConfig{Hidden: c.Hidden, Heads: c.Heads, KVHeads: c.Heads, HeadDim: c.HeadDim,
					QKVBias: true, OutBias: true, FusedQKV: true, Causal: true, QKVName: "c_attn", OName: "c_proj"}
				b.Scope("attn", func() {
					attn = nn.NewAttention(b, acfg, wdt, adt)
					attn.O.ReduceRanks = o.ranksOf()
				})
				ln2 := nn.NewLayerNorm(b, "ln_2", c.Hidden, true, c.NormEps, adt)
				h := ln1.Forward(b, x)
				b.Scope("attn", func() { h = attn.Forward(b, h, p, [2]*graph.Tensor{}) })
				x = b.Add(graph.AddOp, "residual_attn", graph.Attrs{}, x, h)
				h = ln2.Forward(b, x)
				b.Scope("mlp", func() {
					m := nn.NewMLP(b, nn.MLPConfig{Hidden: c.Hidden, Intermediate: c.Intermediate, Act: c.Act, Bias: true, UpName: "c_fc", DownName: "c_proj"}, wdt, adt)
					m.Down.ReduceRanks = o.ranksOf()
					h = m.Forward(b, h)
				})
				x = b.Add(graph.AddOp, "residual_mlp", graph.Attrs{}, x, h)
			})
		}
		x = nn.NewLayerNorm(b, "ln_f", c.Hidden, true, c.NormEps, adt).Forward(b, x)
	})
	c.lmHead(b, o, x, wte, "lm_head")
}

// buildBERT is BertModel: embeddings, the encoder (post-norm layers,
// attention over the whole sequence) and the pooler. The task heads
// (masked LM, classification) are not built.
func (c *Config) buildBERT(b *graph.Builder, o BuildOptions) {
	p, adt, wdt := o.Pass, o.Pass.ActDType, o.WeightDType
	p.KVCache = false
	ids := b.Input("input_ids", []int64{p.Batch, p.Seq}, isa.INT32)
	pos := b.Input("position_ids", []int64{p.Batch, p.Seq}, isa.INT32)
	types := b.Input("token_type_ids", []int64{p.Batch, p.Seq}, isa.INT32)
	var x *graph.Tensor
	b.Scope("embeddings", func() {
		wordE := nn.NewEmbedding(b, "word_embeddings", c.Vocab, c.Hidden, adt)
		wordE.ReduceRanks = o.ranksOf()
		word := wordE.Forward(b, ids)
		posE := nn.NewEmbedding(b, "position_embeddings", c.MaxPositions, c.Hidden, adt).Forward(b, pos)
		typeE := nn.NewEmbedding(b, "token_type_embeddings", c.TypeVocab, c.Hidden, adt).Forward(b, types)
		x = b.Add(graph.AddOp, "sum_position", graph.Attrs{}, word, posE)
		x = b.Add(graph.AddOp, "sum_type", graph.Attrs{}, x, typeE)
		x = nn.NewLayerNorm(b, "LayerNorm", c.Hidden, true, c.NormEps, adt).Forward(b, x)
	})
	for l := int64(0); l < o.Layers; l++ {
		b.Scope(fmt.Sprintf("encoder.layer.%d", l), func() {
			var attn *nn.Attention
			var ln1 *nn.Norm
			acfg := nn.AttentionConfig{Hidden: c.Hidden, Heads: c.Heads, KVHeads: c.Heads, HeadDim: c.HeadDim, QKVBias: true, OutBias: true,
				QName: "self.query", KName: "self.key", VName: "self.value", OName: "output.dense"}
			b.Scope("attention", func() {
				attn = nn.NewAttention(b, acfg, wdt, adt)
				attn.O.ReduceRanks = o.ranksOf()
				ln1 = nn.NewLayerNorm(b, "output.LayerNorm", c.Hidden, true, c.NormEps, adt)
			})
			m := nn.NewMLP(b, nn.MLPConfig{Hidden: c.Hidden, Intermediate: c.Intermediate, Act: c.Act, Bias: true, UpName: "intermediate.dense", DownName: "output.dense"}, wdt, adt)
			m.Down.ReduceRanks = o.ranksOf()
			ln2 := nn.NewLayerNorm(b, "output.LayerNorm", c.Hidden, true, c.NormEps, adt)
			var h *graph.Tensor
			b.Scope("attention", func() {
				h = attn.Forward(b, x, p, [2]*graph.Tensor{})
				x = ln1.Forward(b, b.Add(graph.AddOp, "residual", graph.Attrs{}, x, h))
			})
			h = m.Forward(b, x)
			x = ln2.Forward(b, b.Add(graph.AddOp, "residual_mlp", graph.Attrs{}, x, h))
		})
	}
	b.Output(x)
	b.Scope("pooler", func() {
		first := x
		if p.Seq > 1 {
			first = b.AddMulti(graph.Split, "first_token", graph.Attrs{Axis: 1, Shape: []int64{1, p.Seq - 1}}, x)[0]
		}
		pooled := nn.NewLinear(b, "dense", c.Hidden, c.Hidden, true, wdt, adt).Forward(b, first)
		b.Output(b.Add(graph.Tanh, "activation", graph.Attrs{}, pooled))
	})
}

// Package nn composes graph ops into modules the way torch.nn does: a
// module is made under a name (its parameters are created then, as in a
// module's __init__), and Forward adds its ops for an input. Models are
// built from these (package zoo), so every model names its ops with
// torch's module paths (layers.0.self_attn.q_proj).
package nn

import (
	"fmt"
	"math"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/graph"
)

// Linear is torch.nn.Linear: weight [out, in], optional bias [out].
//
// Under tensor parallelism (Megatron's splits) a Linear is one rank's
// slice: a column-parallel one holds out/ranks outputs (GatherRanks > 1
// gathers them back along the last dim), a row-parallel one holds in/ranks
// inputs and sums the partial outputs over ReduceRanks ranks, adding the
// bias once, after the sum.
type Linear struct {
	Name   string
	Weight *graph.Tensor
	Bias   *graph.Tensor
	// ReduceRanks > 1 makes the Linear row-parallel; GatherRanks > 1
	// gathers a column-parallel one's outputs.
	ReduceRanks, GatherRanks int64
}

// NewLinear makes a Linear's parameters under the builder's scope; the
// weight in wdt (bf16, or fp8e4 and int8 for quantised weights), the bias
// in bdt.
func NewLinear(b *graph.Builder, name string, in, out int64, bias bool, wdt, bdt isa.DType) *Linear {
	l := &Linear{Name: name}
	b.Scope(name, func() {
		l.Weight = b.Param("weight", []int64{out, in}, wdt)
		if bias {
			l.Bias = b.Param("bias", []int64{out}, bdt)
		}
	})
	return l
}

// Forward is x @ weight.T + bias.
func (l *Linear) Forward(b *graph.Builder, x *graph.Tensor) *graph.Tensor {
	if l.ReduceRanks > 1 {
		y := b.Add(graph.Linear, l.Name, graph.Attrs{}, x, l.Weight, nil)
		y = b.Add(graph.AllReduce, l.Name+".all_reduce", graph.Attrs{Ranks: l.ReduceRanks}, y)
		if l.Bias != nil {
			y = b.Add(graph.AddOp, l.Name+".bias", graph.Attrs{}, y, l.Bias)
		}
		return y
	}
	y := b.Add(graph.Linear, l.Name, graph.Attrs{}, x, l.Weight, l.Bias)
	if l.GatherRanks > 1 {
		y = b.Add(graph.AllGather, l.Name+".all_gather", graph.Attrs{Ranks: l.GatherRanks, Axis: -1}, y)
	}
	return y
}

// Embedding is torch.nn.Embedding. Vocab-parallel (ReduceRanks > 1,
// Megatron's VocabParallelEmbedding), a rank holds a slice of the rows,
// gathers the ids it holds (zeros for the others) and the ranks' rows are
// summed.
type Embedding struct {
	Name        string
	Table       *graph.Tensor
	ReduceRanks int64
}

// NewEmbedding makes a [num, dim] table.
func NewEmbedding(b *graph.Builder, name string, num, dim int64, dt isa.DType) *Embedding {
	e := &Embedding{Name: name}
	b.Scope(name, func() { e.Table = b.Param("weight", []int64{num, dim}, dt) })
	return e
}

// Forward gathers the rows of ids.
func (e *Embedding) Forward(b *graph.Builder, ids *graph.Tensor) *graph.Tensor {
	y := b.Add(graph.Embedding, e.Name, graph.Attrs{}, ids, e.Table)
	if e.ReduceRanks > 1 {
		y = b.Add(graph.AllReduce, e.Name+".all_reduce", graph.Attrs{Ranks: e.ReduceRanks}, y)
	}
	return y
}

// Norm is torch.nn.LayerNorm (with a bias, or without) or RMSNorm.
type Norm struct {
	Name         string
	Kind         graph.Kind
	Weight, Bias *graph.Tensor
	Eps          float64
}

// NewLayerNorm makes a LayerNorm over dim.
func NewLayerNorm(b *graph.Builder, name string, dim int64, bias bool, eps float64, dt isa.DType) *Norm {
	n := &Norm{Name: name, Kind: graph.LayerNorm, Eps: eps}
	b.Scope(name, func() {
		n.Weight = b.Param("weight", []int64{dim}, dt)
		if bias {
			n.Bias = b.Param("bias", []int64{dim}, dt)
		}
	})
	return n
}

// NewRMSNorm makes an RMSNorm over dim.
func NewRMSNorm(b *graph.Builder, name string, dim int64, eps float64, dt isa.DType) *Norm {
	n := &Norm{Name: name, Kind: graph.RMSNorm, Eps: eps}
	b.Scope(name, func() { n.Weight = b.Param("weight", []int64{dim}, dt) })
	return n
}

// Forward normalises x over its last dim.
func (n *Norm) Forward(b *graph.Builder, x *graph.Tensor) *graph.Tensor {
	if n.Kind == graph.RMSNorm {
		return b.Add(graph.RMSNorm, n.Name, graph.Attrs{Eps: n.Eps}, x, n.Weight)
	}
	return b.Add(graph.LayerNorm, n.Name, graph.Attrs{Eps: n.Eps}, x, n.Weight, n.Bias)
}

// Activation names an MLP's nonlinearity.
type Activation string

// Activations, by Hugging Face's hidden_act names.
const (
	ActSiLU     Activation = "silu"
	ActGELU     Activation = "gelu"
	ActGELUTanh Activation = "gelu_new"
	ActReLU     Activation = "relu"
)

// Act applies an activation.
func Act(b *graph.Builder, name string, act Activation, x *graph.Tensor) *graph.Tensor {
	switch act {
	case ActSiLU:
		return b.Add(graph.SiLU, name, graph.Attrs{}, x)
	case ActGELU:
		return b.Add(graph.GELU, name, graph.Attrs{}, x)
	case ActGELUTanh:
		return b.Add(graph.GELU, name, graph.Attrs{Tanh: true}, x)
	case ActReLU:
		return b.Add(graph.ReLU, name, graph.Attrs{}, x)
	}
	b.Fail(fmt.Errorf("%s: unknown activation %q (known: silu, gelu, gelu_new, relu)", b.Path(name), act))
	return x
}

// Reshape views x as shape.
func Reshape(b *graph.Builder, name string, x *graph.Tensor, shape ...int64) *graph.Tensor {
	return b.Add(graph.Reshape, name, graph.Attrs{Shape: shape}, x)
}

// Permute reorders x's dims.
func Permute(b *graph.Builder, name string, x *graph.Tensor, perm ...int) *graph.Tensor {
	return b.Add(graph.Permute, name, graph.Attrs{Perm: perm}, x)
}

// Pass is what one forward pass of a decoder processes: Batch sequences
// of Seq new tokens each, after Past positions already in the KV cache
// (prefill: Past 0 and Seq the prompt; decode: Seq 1 and Past the
// context). ActDType is the activations' dtype.
type Pass struct {
	Batch, Seq, Past int64
	ActDType         isa.DType
	// KVCache says whether attention appends to and reads a KV cache (a
	// decoder's generation) or attends over the pass alone (an encoder).
	KVCache bool
	// RoutingSkew is the mixture of experts' routing assumption
	// (graph.Attrs.RoutingSkew).
	RoutingSkew float64
}

// RoPEConfig is rotary position embedding: the base, the part of the head
// dim rotated (0: all) and the scaling that changes the frequencies (not
// the shapes or the work).
type RoPEConfig struct {
	Theta     float64
	RotaryDim int64
}

// AttentionConfig is a multi-head, grouped-query attention block.
type AttentionConfig struct {
	Hidden, Heads, KVHeads, HeadDim int64
	// QKVBias and OutBias put biases on the projections; FusedQKV makes
	// one projection to q, k and v (GPT-2's c_attn).
	QKVBias, OutBias, FusedQKV bool
	// RoPE, if set, rotates q and k.
	RoPE *RoPEConfig
	// Causal masks later positions; Window, if positive, limits attention
	// to that many earlier positions.
	Causal bool
	Window int64
	// Names of the projections (torch's: q_proj, k_proj, v_proj, o_proj;
	// GPT-2's c_attn and c_proj).
	QName, KName, VName, OName, QKVName string
}

// Attention is the attention block's parameters.
type Attention struct {
	Cfg           AttentionConfig
	Q, K, V, O    *Linear
	QKV           *Linear
	WDType, ADTyp isa.DType
}

// NewAttention makes the projections.
func NewAttention(b *graph.Builder, c AttentionConfig, wdt, adt isa.DType) *Attention {
	a := &Attention{Cfg: c, WDType: wdt, ADTyp: adt}
	q, kv := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	if c.FusedQKV {
		a.QKV = NewLinear(b, c.QKVName, c.Hidden, q+2*kv, c.QKVBias, wdt, adt)
	} else {
		a.Q = NewLinear(b, c.QName, c.Hidden, q, c.QKVBias, wdt, adt)
		a.K = NewLinear(b, c.KName, c.Hidden, kv, c.QKVBias, wdt, adt)
		a.V = NewLinear(b, c.VName, c.Hidden, kv, c.QKVBias, wdt, adt)
	}
	a.O = NewLinear(b, c.OName, q, c.Hidden, c.OutBias, wdt, adt)
	return a
}

// Forward attends x [batch, seq, hidden] over the pass (and, with a KV
// cache, the Past positions before it); rope holds the cos and sin tables
// of the pass's positions when the block rotates.
func (a *Attention) Forward(b *graph.Builder, x *graph.Tensor, p Pass, rope [2]*graph.Tensor) *graph.Tensor {
	c := a.Cfg
	bs, s := p.Batch, p.Seq
	heads := func(name string, t *graph.Tensor, h int64) *graph.Tensor {
		t = Reshape(b, name+".view", t, bs, s, h, c.HeadDim)
		return Permute(b, name+".transpose", t, 0, 2, 1, 3) // [b, h, s, d]
	}
	var q, k, v *graph.Tensor
	if c.FusedQKV {
		// One projection; its output's columns are q, k and v.
		qkv := a.QKV.Forward(b, x)
		parts := b.AddMulti(graph.Split, c.QKVName+".split", graph.Attrs{Axis: 2, Shape: []int64{c.Heads * c.HeadDim, c.KVHeads * c.HeadDim, c.KVHeads * c.HeadDim}}, qkv)
		q, k, v = heads("q", parts[0], c.Heads), heads("k", parts[1], c.KVHeads), heads("v", parts[2], c.KVHeads)
	} else {
		q = heads("q", a.Q.Forward(b, x), c.Heads)
		k = heads("k", a.K.Forward(b, x), c.KVHeads)
		v = heads("v", a.V.Forward(b, x), c.KVHeads)
	}
	if c.RoPE != nil {
		attrs := graph.Attrs{Theta: c.RoPE.Theta, RotaryDim: c.RoPE.RotaryDim}
		q = b.Add(graph.RoPE, "rotary_q", attrs, q, rope[0], rope[1])
		k = b.Add(graph.RoPE, "rotary_k", attrs, k, rope[0], rope[1])
	}
	if p.KVCache {
		var kc, vc *graph.Tensor // nil: an empty cache (prefill)
		if p.Past > 0 {
			kc = b.Cache("k_cache", []int64{bs, c.KVHeads, p.Past, c.HeadDim}, p.ActDType)
			vc = b.Cache("v_cache", []int64{bs, c.KVHeads, p.Past, c.HeadDim}, p.ActDType)
		}
		k = b.Add(graph.KVAppend, "k_cache.append", graph.Attrs{Past: p.Past}, kc, k)
		v = b.Add(graph.KVAppend, "v_cache.append", graph.Attrs{Past: p.Past}, vc, v)
	}
	scale := 1 / math.Sqrt(float64(c.HeadDim))
	o := b.Add(graph.SDPA, "attn", graph.Attrs{Causal: c.Causal, Window: c.Window, Past: p.Past, Scale: scale}, q, k, v)
	o = Permute(b, "attn.transpose", o, 0, 2, 1, 3)
	o = Reshape(b, "attn.view", o, bs, s, c.Heads*c.HeadDim)
	return a.O.Forward(b, o)
}

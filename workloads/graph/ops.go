package graph

import (
	"fmt"
	"math"
	"sort"

	"github.com/trnsim/trnsim/isa"
)

// Kind names an op, in PyTorch's vocabulary.
type Kind string

// The op kinds of transformer inference. Elementwise FLOPs count each
// arithmetic operation on an element once (exp, add and divide are one
// each); see each kind's rule below.
const (
	// Linear: x [..., in], weight [out, in] (torch's layout), bias [out]
	// (optional) -> [..., out].
	Linear Kind = "linear"
	// MatMul: a [..., m, k], b [..., k, n] -> [..., m, n] (the leading
	// dimensions equal: a BMM).
	MatMul Kind = "matmul"
	// Embedding: ids [...] (integers), table [vocab, dim] -> [..., dim]:
	// an indirect gather of rows.
	Embedding Kind = "embedding"
	// LayerNorm: x [..., d], weight [d], bias [d] (optional); Attrs.Eps.
	LayerNorm Kind = "layer_norm"
	// RMSNorm: x [..., d], weight [d]; Attrs.Eps.
	RMSNorm Kind = "rms_norm"
	// Softmax along the last dimension.
	Softmax Kind = "softmax"
	// GELU (Attrs.Tanh: the tanh approximation), SiLU, ReLU: x -> x.
	GELU Kind = "gelu"
	SiLU Kind = "silu"
	ReLU Kind = "relu"
	// Tanh is the elementwise hyperbolic tangent (BERT's pooler).
	Tanh Kind = "tanh"
	// SwiGLU: gate, up (the same shape) -> silu(gate) * up.
	SwiGLU Kind = "swiglu"
	// AddOp and MulOp are elementwise with b broadcast over a's leading
	// dimensions (b's shape is a suffix of a's, or equal): residuals, bias,
	// scaling.
	AddOp Kind = "add"
	MulOp Kind = "mul"
	// RoPE rotates x [batch, heads, seq, head_dim] by cos and sin
	// [seq, rotary_dim] (inputs: the positions' tables); Attrs.Theta,
	// Attrs.RotaryDim.
	RoPE Kind = "rope"
	// SDPA is scaled-dot-product attention: q [b, hq, s, d], k [b, hkv, t,
	// d], v [b, hkv, t, dv] -> [b, hq, s, dv], hq a multiple of hkv
	// (grouped-query); Attrs.Causal (query i at position Past+i sees keys
	// up to it), Attrs.Window, Attrs.Scale.
	SDPA Kind = "sdpa"
	// KVAppend writes new keys or values [b, h, s, d] after the Past
	// positions of a cache [b, h, past, d] (nil: an empty cache, in
	// prefill): the output is the cache [b, h, past+s, d] attention reads.
	KVAppend Kind = "kv_append"
	// Reshape (to Attrs.Shape) and Permute (dims in Attrs.Perm's order)
	// change the view of a tensor; a lowering folds them into the
	// producing or consuming op's access pattern, so they cost no FLOPs
	// and no HBM bytes of their own.
	Reshape Kind = "reshape"
	Permute Kind = "permute"
	// Split views x as parts along Attrs.Axis of the sizes in Attrs.Shape
	// (GPT-2's fused q, k, v): outputs, one per part, that cost nothing.
	Split Kind = "split"
	// TopK: x [..., e] -> values [..., k], indices [..., k] (int32);
	// Attrs.TopK.
	TopK Kind = "topk"
	// MoEExperts runs each token through its top-k experts' gated MLPs and
	// sums them by the routing weights: x [t, d], weights [t, k], indices
	// [t, k], gate [e, f, d], up [e, f, d], down [e, d, f] -> [t, d];
	// Attrs.Experts, Attrs.TopK.
	MoEExperts Kind = "moe_experts"
	// AllReduce sums x over the Attrs.Ranks ranks of a tensor-parallel
	// group: each rank's partial sum in, the total out (the same shape).
	// Its work is communication, so it has no FLOPs.
	AllReduce Kind = "all_reduce"
	// AllGather concatenates x along Attrs.Axis over Attrs.Ranks ranks:
	// [..., n, ...] -> [..., n x ranks, ...].
	AllGather Kind = "all_gather"
)

// kindDef is an op kind's rules: its inputs, its shape inference, its
// FLOPs, and (when not every input read once and every output written
// once) its least HBM bytes.
type kindDef struct {
	inputs   int   // how many inputs it takes
	optional []int // the ones that may be nil
	outputs  int
	infer    func(o *Op) ([]Spec, error)
	flops    func(o *Op) int64
	bytes    func(o *Op) int64
}

func (d kindDef) isOptional(i int) bool {
	for _, j := range d.optional {
		if i == j {
			return true
		}
	}
	return false
}

// KindNames lists the op kinds.
func KindNames() []string {
	var out []string
	for k := range kinds {
		out = append(out, string(k))
	}
	sort.Strings(out)
	return out
}

// kinds is the registry. A later issue's ops (convolutions, gradients,
// optimizer steps) are new entries; nothing else changes.
var kinds map[Kind]kindDef

func init() {
	kinds = map[Kind]kindDef{
		Linear:     {inputs: 3, optional: []int{2}, outputs: 1, infer: inferLinear, flops: flopsLinear},
		MatMul:     {inputs: 2, outputs: 1, infer: inferMatMul, flops: flopsMatMul},
		Embedding:  {inputs: 2, outputs: 1, infer: inferEmbedding, flops: zero, bytes: bytesEmbedding},
		LayerNorm:  {inputs: 3, optional: []int{2}, outputs: 1, infer: inferNorm, flops: perElement(8)},
		RMSNorm:    {inputs: 2, outputs: 1, infer: inferNorm, flops: perElement(4)},
		Softmax:    {inputs: 1, outputs: 1, infer: same, flops: perElement(5)},
		GELU:       {inputs: 1, outputs: 1, infer: same, flops: perElement(8)},
		SiLU:       {inputs: 1, outputs: 1, infer: same, flops: perElement(4)},
		ReLU:       {inputs: 1, outputs: 1, infer: same, flops: perElement(1)},
		Tanh:       {inputs: 1, outputs: 1, infer: same, flops: perElement(4)},
		SwiGLU:     {inputs: 2, outputs: 1, infer: inferBinary(true), flops: perElement(5)},
		AddOp:      {inputs: 2, outputs: 1, infer: inferBinary(false), flops: perElement(1)},
		MulOp:      {inputs: 2, outputs: 1, infer: inferBinary(false), flops: perElement(1)},
		RoPE:       {inputs: 3, outputs: 1, infer: inferRoPE, flops: flopsRoPE},
		SDPA:       {inputs: 3, outputs: 1, infer: inferSDPA, flops: flopsSDPA, bytes: bytesSDPA},
		KVAppend:   {inputs: 2, optional: []int{0}, outputs: 1, infer: inferKVAppend, flops: zero, bytes: bytesKVAppend},
		Reshape:    {inputs: 1, outputs: 1, infer: inferReshape, flops: zero, bytes: zero},
		Permute:    {inputs: 1, outputs: 1, infer: inferPermute, flops: zero, bytes: zero},
		Split:      {inputs: 1, outputs: -1, infer: inferSplit, flops: zero, bytes: zero},
		TopK:       {inputs: 1, outputs: 2, infer: inferTopK, flops: flopsTopK},
		MoEExperts: {inputs: 6, outputs: 1, infer: inferMoE, flops: flopsMoE, bytes: bytesMoE},
		AllReduce:  {inputs: 1, outputs: 1, infer: inferAllReduce, flops: zero},
		AllGather:  {inputs: 1, outputs: 1, infer: inferAllGather, flops: zero},
	}
}

func zero(*Op) int64 { return 0 }

func inferAllReduce(o *Op) ([]Spec, error) {
	if o.Attrs.Ranks < 2 {
		return nil, fmt.Errorf("a collective needs at least 2 ranks, got %d", o.Attrs.Ranks)
	}
	return same(o)
}

func inferAllGather(o *Op) ([]Spec, error) {
	x := o.Inputs[0]
	if o.Attrs.Ranks < 2 {
		return nil, fmt.Errorf("a collective needs at least 2 ranks, got %d", o.Attrs.Ranks)
	}
	ax := o.Attrs.Axis
	if ax < 0 {
		ax += len(x.Shape)
	}
	if ax < 0 || ax >= len(x.Shape) {
		return nil, fmt.Errorf("axis %d is outside %s", o.Attrs.Axis, ShapeString(x.Shape))
	}
	out := append([]int64(nil), x.Shape...)
	out[ax] *= o.Attrs.Ranks
	return []Spec{{Shape: out, DType: x.DType}}, nil
}

func perElement(n int64) func(o *Op) int64 {
	return func(o *Op) int64 { return n * o.Outputs[0].Elements() }
}

func same(o *Op) ([]Spec, error) {
	x := o.Inputs[0]
	return []Spec{{Shape: x.Shape, DType: x.DType}}, nil
}

func last(s []int64) int64 { return s[len(s)-1] }

func rowsOf(s []int64) int64 {
	n := int64(1)
	for _, d := range s[:len(s)-1] {
		n *= d
	}
	return n
}

func inferLinear(o *Op) ([]Spec, error) {
	x, w, bias := o.Inputs[0], o.Inputs[1], o.Inputs[2]
	if len(w.Shape) != 2 {
		return nil, fmt.Errorf("weight %s must be [out_features, in_features]", ShapeString(w.Shape))
	}
	if len(x.Shape) < 1 || last(x.Shape) != w.Shape[1] {
		return nil, fmt.Errorf("input %s has last dim %d, but weight %s takes in_features %d", ShapeString(x.Shape), last(x.Shape), ShapeString(w.Shape), w.Shape[1])
	}
	if bias != nil && (len(bias.Shape) != 1 || bias.Shape[0] != w.Shape[0]) {
		return nil, fmt.Errorf("bias %s does not match out_features %d", ShapeString(bias.Shape), w.Shape[0])
	}
	out := append(append([]int64(nil), x.Shape[:len(x.Shape)-1]...), w.Shape[0])
	return []Spec{{Shape: out, DType: x.DType}}, nil
}

func flopsLinear(o *Op) int64 {
	x, w := o.Inputs[0], o.Inputs[1]
	f := 2 * rowsOf(x.Shape) * w.Shape[0] * w.Shape[1]
	if o.Inputs[2] != nil {
		f += rowsOf(x.Shape) * w.Shape[0]
	}
	return f
}

func inferMatMul(o *Op) ([]Spec, error) {
	a, b := o.Inputs[0], o.Inputs[1]
	if len(a.Shape) < 2 || len(a.Shape) != len(b.Shape) {
		return nil, fmt.Errorf("a %s and b %s must have the same rank, at least 2", ShapeString(a.Shape), ShapeString(b.Shape))
	}
	r := len(a.Shape)
	for i := 0; i < r-2; i++ {
		if a.Shape[i] != b.Shape[i] {
			return nil, fmt.Errorf("batch dims of a %s and b %s differ", ShapeString(a.Shape), ShapeString(b.Shape))
		}
	}
	if a.Shape[r-1] != b.Shape[r-2] {
		return nil, fmt.Errorf("a %s has k %d, b %s has k %d", ShapeString(a.Shape), a.Shape[r-1], ShapeString(b.Shape), b.Shape[r-2])
	}
	out := append(append([]int64(nil), a.Shape[:r-1]...), b.Shape[r-1])
	return []Spec{{Shape: out, DType: a.DType}}, nil
}

func flopsMatMul(o *Op) int64 {
	a, b := o.Inputs[0], o.Inputs[1]
	return 2 * rowsOf(a.Shape) * last(a.Shape) * last(b.Shape)
}

func inferEmbedding(o *Op) ([]Spec, error) {
	ids, table := o.Inputs[0], o.Inputs[1]
	if ids.DType.IsFloat() {
		return nil, fmt.Errorf("ids %s must be integers, not %s", ShapeString(ids.Shape), ids.DType)
	}
	if len(table.Shape) != 2 {
		return nil, fmt.Errorf("table %s must be [num_embeddings, embedding_dim]", ShapeString(table.Shape))
	}
	out := append(append([]int64(nil), ids.Shape...), table.Shape[1])
	return []Spec{{Shape: out, DType: table.DType}}, nil
}

// bytesEmbedding: the ids, the rows gathered (at most the table) and the
// output.
func bytesEmbedding(o *Op) int64 {
	return o.Inputs[0].Bytes() + gatheredBytes(o) + o.Outputs[0].Bytes()
}

func gatheredBytes(o *Op) int64 {
	return min(o.Outputs[0].Bytes(), o.Inputs[1].Bytes())
}

func inferNorm(o *Op) ([]Spec, error) {
	x := o.Inputs[0]
	for i, p := range o.Inputs[1:] {
		if p == nil {
			continue
		}
		if len(p.Shape) != 1 || p.Shape[0] != last(x.Shape) {
			name := []string{"weight", "bias"}[i]
			return nil, fmt.Errorf("%s %s does not match the normalised dim %d of input %s", name, ShapeString(p.Shape), last(x.Shape), ShapeString(x.Shape))
		}
	}
	return []Spec{{Shape: x.Shape, DType: x.DType}}, nil
}

// inferBinary: b equal to a, or a suffix of a's shape (broadcast over
// a's leading dimensions); exact requires equal shapes.
func inferBinary(exact bool) func(o *Op) ([]Spec, error) {
	return func(o *Op) ([]Spec, error) {
		a, b := o.Inputs[0], o.Inputs[1]
		ok := len(b.Shape) <= len(a.Shape)
		for i := 1; ok && i <= len(b.Shape); i++ {
			ok = a.Shape[len(a.Shape)-i] == b.Shape[len(b.Shape)-i]
		}
		if exact && len(a.Shape) != len(b.Shape) {
			ok = false
		}
		if !ok {
			return nil, fmt.Errorf("shapes %s and %s do not match", ShapeString(a.Shape), ShapeString(b.Shape))
		}
		return []Spec{{Shape: a.Shape, DType: a.DType}}, nil
	}
}

func inferRoPE(o *Op) ([]Spec, error) {
	x, cos, sin := o.Inputs[0], o.Inputs[1], o.Inputs[2]
	if len(x.Shape) != 4 {
		return nil, fmt.Errorf("input %s must be [batch, heads, seq, head_dim]", ShapeString(x.Shape))
	}
	rd := o.Attrs.RotaryDim
	if rd == 0 {
		rd = x.Shape[3]
	}
	if rd%2 != 0 || rd > x.Shape[3] {
		return nil, fmt.Errorf("rotary dim %d must be even and at most the head dim %d", rd, x.Shape[3])
	}
	for _, t := range []*Tensor{cos, sin} {
		if len(t.Shape) != 2 || t.Shape[0] != x.Shape[2] || t.Shape[1] != rd {
			return nil, fmt.Errorf("table %s must be [seq %d, rotary_dim %d] for input %s", ShapeString(t.Shape), x.Shape[2], rd, ShapeString(x.Shape))
		}
	}
	return []Spec{{Shape: x.Shape, DType: x.DType}}, nil
}

// flopsRoPE: x*cos + rotate(x)*sin, 3 per rotated element.
func flopsRoPE(o *Op) int64 {
	x := o.Inputs[0]
	rd := o.Attrs.RotaryDim
	if rd == 0 {
		rd = x.Shape[3]
	}
	return 3 * x.Shape[0] * x.Shape[1] * x.Shape[2] * rd
}

func inferSDPA(o *Op) ([]Spec, error) {
	q, k, v := o.Inputs[0], o.Inputs[1], o.Inputs[2]
	for _, t := range o.Inputs {
		if len(t.Shape) != 4 {
			return nil, fmt.Errorf("q %s, k %s and v %s must be [batch, heads, seq, head_dim]", ShapeString(q.Shape), ShapeString(k.Shape), ShapeString(v.Shape))
		}
	}
	switch {
	case q.Shape[0] != k.Shape[0] || k.Shape[0] != v.Shape[0]:
		return nil, fmt.Errorf("batch of q %s, k %s and v %s differ", ShapeString(q.Shape), ShapeString(k.Shape), ShapeString(v.Shape))
	case k.Shape[1] != v.Shape[1] || k.Shape[2] != v.Shape[2]:
		return nil, fmt.Errorf("k %s and v %s must have the same heads and length", ShapeString(k.Shape), ShapeString(v.Shape))
	case q.Shape[1]%k.Shape[1] != 0:
		return nil, fmt.Errorf("q's %d heads are not a multiple of k's %d (grouped-query attention shares each kv head among a whole number of query heads)", q.Shape[1], k.Shape[1])
	case q.Shape[3] != k.Shape[3]:
		return nil, fmt.Errorf("q %s and k %s have different head dims", ShapeString(q.Shape), ShapeString(k.Shape))
	case o.Attrs.Causal && o.Attrs.Past+q.Shape[2] > k.Shape[2]:
		return nil, fmt.Errorf("causal: %d past and %d new positions, but k %s holds %d", o.Attrs.Past, q.Shape[2], ShapeString(k.Shape), k.Shape[2])
	}
	return []Spec{{Shape: []int64{q.Shape[0], q.Shape[1], q.Shape[2], v.Shape[3]}, DType: q.DType}}, nil
}

// Pairs is the number of (query, key) pairs attention computes: all of
// them, or under a causal mask the keys at or before each query's
// position (within the sliding window, if any).
func (o *Op) Pairs() int64 {
	q, k := o.Inputs[0], o.Inputs[1]
	s, t := q.Shape[2], k.Shape[2]
	if !o.Attrs.Causal && o.Attrs.Window <= 0 {
		return s * t
	}
	var n int64
	for i := int64(0); i < s; i++ {
		hi := t
		if o.Attrs.Causal {
			hi = min(t, o.Attrs.Past+i+1)
		}
		lo := int64(0)
		if w := o.Attrs.Window; w > 0 {
			lo = max(0, hi-w)
		}
		n += hi - lo
	}
	return n
}

// flopsSDPA: the scores and the weighted values, 2 FLOPs a multiply-add
// over the pairs computed, and the softmax's 5 per score.
func flopsSDPA(o *Op) int64 {
	q, v := o.Inputs[0], o.Inputs[2]
	b, h, d, dv := q.Shape[0], q.Shape[1], q.Shape[3], v.Shape[3]
	p := o.Pairs()
	return b * h * p * (2*d + 2*dv + 5)
}

func inferKVAppend(o *Op) ([]Spec, error) {
	cache, nw := o.Inputs[0], o.Inputs[1]
	if cache == nil {
		// An empty cache (prefill): the output is the new entries.
		if o.Attrs.Past != 0 || len(nw.Shape) != 4 {
			return nil, fmt.Errorf("without a cache, past must be 0 and new %s [batch, heads, seq, head_dim]", ShapeString(nw.Shape))
		}
		return []Spec{{Shape: nw.Shape, DType: nw.DType, Role: KVCache}}, nil
	}
	if len(cache.Shape) != 4 || len(nw.Shape) != 4 {
		return nil, fmt.Errorf("cache %s and new %s must be [batch, heads, seq, head_dim]", ShapeString(cache.Shape), ShapeString(nw.Shape))
	}
	if cache.Shape[0] != nw.Shape[0] || cache.Shape[1] != nw.Shape[1] || cache.Shape[3] != nw.Shape[3] {
		return nil, fmt.Errorf("new %s does not match cache %s", ShapeString(nw.Shape), ShapeString(cache.Shape))
	}
	if cache.Shape[2] != o.Attrs.Past {
		return nil, fmt.Errorf("cache %s holds %d positions, past is %d", ShapeString(cache.Shape), cache.Shape[2], o.Attrs.Past)
	}
	out := []int64{cache.Shape[0], cache.Shape[1], cache.Shape[2] + nw.Shape[2], cache.Shape[3]}
	return []Spec{{Shape: out, DType: cache.DType, Role: KVCache}}, nil
}

// bytesSDPA: Q read and the output written once, and of K and V the keys
// some query sees: behind a sliding window, those from the first query's
// window on (every key otherwise).
func bytesSDPA(o *Op) int64 {
	q, k, v, out := o.Inputs[0], o.Inputs[1], o.Inputs[2], o.Outputs[0]
	kv := k.Bytes() + v.Bytes()
	if t := k.Shape[2]; o.Attrs.Window > 0 && t > 0 {
		first := o.Attrs.Past // the first query's position, as Pairs counts
		if !o.Attrs.Causal {
			first = t - 1
		}
		if lo := max(0, first-o.Attrs.Window+1); lo > 0 {
			kv = kv / t * (t - lo)
		}
	}
	return q.Bytes() + kv + out.Bytes()
}

// bytesKVAppend: the new entries, read and written into the cache.
func bytesKVAppend(o *Op) int64 { return 2 * o.Inputs[1].Bytes() }

func inferReshape(o *Op) ([]Spec, error) {
	x := o.Inputs[0]
	shape := o.Attrs.Shape
	var n int64 = 1
	for _, d := range shape {
		n *= d
	}
	if n != x.Elements() {
		return nil, fmt.Errorf("cannot view %s (%d elements) as %s (%d)", ShapeString(x.Shape), x.Elements(), ShapeString(shape), n)
	}
	return []Spec{{Shape: shape, DType: x.DType}}, nil
}

func inferPermute(o *Op) ([]Spec, error) {
	x := o.Inputs[0]
	perm := o.Attrs.Perm
	if len(perm) != len(x.Shape) {
		return nil, fmt.Errorf("permutation %v of %s has the wrong length", perm, ShapeString(x.Shape))
	}
	seen := make([]bool, len(perm))
	out := make([]int64, len(perm))
	for i, p := range perm {
		if p < 0 || p >= len(perm) || seen[p] {
			return nil, fmt.Errorf("%v is not a permutation of %s's dims", perm, ShapeString(x.Shape))
		}
		seen[p] = true
		out[i] = x.Shape[p]
	}
	return []Spec{{Shape: out, DType: x.DType}}, nil
}

func inferSplit(o *Op) ([]Spec, error) {
	x := o.Inputs[0]
	ax := o.Attrs.Axis
	if ax < 0 || ax >= len(x.Shape) {
		return nil, fmt.Errorf("axis %d is not a dim of %s", ax, ShapeString(x.Shape))
	}
	var sum int64
	var out []Spec
	for _, n := range o.Attrs.Shape {
		if n <= 0 {
			return nil, fmt.Errorf("part sizes %v must be positive", o.Attrs.Shape)
		}
		sum += n
		shape := append([]int64(nil), x.Shape...)
		shape[ax] = n
		out = append(out, Spec{Shape: shape, DType: x.DType})
	}
	if sum != x.Shape[ax] {
		return nil, fmt.Errorf("parts %v sum to %d, not dim %d of %s (%d)", o.Attrs.Shape, sum, ax, ShapeString(x.Shape), x.Shape[ax])
	}
	return out, nil
}

func inferTopK(o *Op) ([]Spec, error) {
	x := o.Inputs[0]
	k := o.Attrs.TopK
	if k <= 0 || k > last(x.Shape) {
		return nil, fmt.Errorf("k %d must be in 1..%d (the last dim of %s)", k, last(x.Shape), ShapeString(x.Shape))
	}
	out := append(append([]int64(nil), x.Shape[:len(x.Shape)-1]...), k)
	return []Spec{{Shape: out, DType: x.DType}, {Shape: out, DType: isa.INT32}}, nil
}

// flopsTopK: one comparison per element for each of the k picks.
func flopsTopK(o *Op) int64 { return o.Attrs.TopK * o.Inputs[0].Elements() }

func inferMoE(o *Op) ([]Spec, error) {
	x, w, idx, gate, up, down := o.Inputs[0], o.Inputs[1], o.Inputs[2], o.Inputs[3], o.Inputs[4], o.Inputs[5]
	if len(x.Shape) != 2 {
		return nil, fmt.Errorf("input %s must be [tokens, hidden]", ShapeString(x.Shape))
	}
	t, d, e, k := x.Shape[0], x.Shape[1], o.Attrs.Experts, o.Attrs.TopK
	for _, r := range []*Tensor{w, idx} {
		if len(r.Shape) != 2 || r.Shape[0] != t || r.Shape[1] != k {
			return nil, fmt.Errorf("routing %s must be [tokens %d, top_k %d]", ShapeString(r.Shape), t, k)
		}
	}
	if len(gate.Shape) != 3 || gate.Shape[0] != e || gate.Shape[2] != d {
		return nil, fmt.Errorf("gate %s must be [experts %d, intermediate, hidden %d]", ShapeString(gate.Shape), e, d)
	}
	f := gate.Shape[1]
	if len(up.Shape) != 3 || up.Shape[0] != e || up.Shape[1] != f || up.Shape[2] != d {
		return nil, fmt.Errorf("up %s must match gate %s", ShapeString(up.Shape), ShapeString(gate.Shape))
	}
	if len(down.Shape) != 3 || down.Shape[0] != e || down.Shape[1] != d || down.Shape[2] != f {
		return nil, fmt.Errorf("down %s must be [experts %d, hidden %d, intermediate %d]", ShapeString(down.Shape), e, d, f)
	}
	return []Spec{{Shape: x.Shape, DType: x.DType}}, nil
}

// flopsMoE: each token's k experts, each three matmuls and the SwiGLU,
// then the weighted sum.
func flopsMoE(o *Op) int64 {
	t, d, k := o.Inputs[0].Shape[0], o.Inputs[0].Shape[1], o.Attrs.TopK
	f := o.Inputs[3].Shape[1]
	return t*k*(3*2*d*f+5*f) + 2*t*k*d
}

// ExpertShares returns how many of the tokens' picks each expert reached
// receives, largest first (an expert no pick reaches is left out). Routing
// is an assumption, not data: with RoutingSkew 0 the picks spread evenly
// (every expert reached gets the same share, a whole number, rounded up);
// with skew s > 0, expert i (from 0) gets a share of the t*k picks in
// proportion to (i+1)^-s, a Zipf law [I], each at most the t tokens (a
// token picks an expert once, the excess shared by the others), in whole
// picks by the largest remainders.
func (o *Op) ExpertShares() []int64 {
	t, k, e := o.Inputs[0].Shape[0], o.Attrs.TopK, o.Attrs.Experts
	picks := t * k
	if o.Attrs.RoutingSkew <= 0 {
		touched := min(e, picks)
		share := min((picks+touched-1)/max(touched, 1), t)
		out := make([]int64, touched)
		for i := range out {
			out[i] = share
		}
		return out
	}
	// Quotas in proportion to the weights, those above t capped and their
	// excess shared by the others in proportion (again, until none is
	// above t), then whole picks by the largest remainders.
	quota := make([]float64, e)
	capped := make([]bool, e)
	for {
		var free, freeW float64
		free = float64(picks)
		for i := range quota {
			if capped[i] {
				free -= float64(t)
			} else {
				freeW += math.Pow(float64(i+1), -o.Attrs.RoutingSkew)
			}
		}
		over := false
		for i := range quota {
			if capped[i] {
				quota[i] = float64(t)
				continue
			}
			quota[i] = free * math.Pow(float64(i+1), -o.Attrs.RoutingSkew) / freeW
			if quota[i] > float64(t) {
				capped[i], over = true, true
			}
		}
		if !over {
			break
		}
	}
	n := make([]int64, e)
	var placed int64
	for i, q := range quota {
		n[i] = min(t, int64(q))
		placed += n[i]
	}
	order := make([]int, e)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ra, rb := quota[order[a]]-float64(n[order[a]]), quota[order[b]]-float64(n[order[b]])
		return ra > rb
	})
	for _, i := range order {
		if placed == picks {
			break
		}
		if n[i] < t {
			n[i]++
			placed++
		}
	}
	var out []int64
	for _, v := range n {
		if v > 0 {
			out = append(out, v)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a] > out[b] })
	return out
}

// ExpertsTouched is how many experts the tokens reach (ExpertShares).
func (o *Op) ExpertsTouched() int64 {
	return int64(len(o.ExpertShares()))
}

// bytesMoE: the tokens and routing read, the output written, and the
// weights of the experts touched.
func bytesMoE(o *Op) int64 {
	e := o.Attrs.Experts
	w := (o.Inputs[3].Bytes() + o.Inputs[4].Bytes() + o.Inputs[5].Bytes()) / e * o.ExpertsTouched()
	return o.Inputs[0].Bytes() + o.Inputs[1].Bytes() + o.Inputs[2].Bytes() + w + o.Outputs[0].Bytes()
}

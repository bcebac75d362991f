package graph

import (
	"fmt"
	"strings"

	"github.com/trnsim/trnsim/isa"
)

// Role says where a tensor lives and who owns it, which decides what the
// memory report and the minimum HBM traffic count it as.
type Role uint8

// Tensor roles.
const (
	// Activation is an intermediate value: produced by one op, consumed by
	// others; a good lowering keeps it on chip where it fits.
	Activation Role = iota
	// Parameter is a weight or bias: read from HBM, counted in the
	// model's parameter count.
	Parameter
	// KVCache is an attention key or value cache: read from HBM each step
	// and appended to.
	KVCache
	// Input is fed to the graph (token ids, positions, RoPE tables).
	Input
	// Output is a value the graph returns (logits, hidden states).
	Output
)

var roleNames = [...]string{"activation", "parameter", "kv_cache", "input", "output"}

// String names the role as results.json does.
func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return fmt.Sprintf("role(%d)", r)
}

// Tensor is a value of the graph: a shape, an element type and a role.
type Tensor struct {
	ID    int
	Name  string
	Shape []int64
	DType isa.DType
	Role  Role
	// Producer is the op that computes it (nil for parameters, inputs and
	// caches read as they are).
	Producer *Op
}

// Elements is the number of elements.
func (t *Tensor) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Bytes is the tensor's size in bytes.
func (t *Tensor) Bytes() int64 { return t.Elements() * int64(t.DType.Bytes()) }

// String prints the tensor as "name[2, 4096] bf16".
func (t *Tensor) String() string { return t.Name + ShapeString(t.Shape) + " " + t.DType.String() }

// ShapeString prints a shape as "[2, 4096]".
func ShapeString(s []int64) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Op is one operation: a kind from the registry (ops.go), its inputs and
// outputs, and its attributes.
type Op struct {
	ID int
	// Name is the op's module path, as torch names it
	// (layers.0.self_attn.q_proj).
	Name    string
	Kind    Kind
	Inputs  []*Tensor
	Outputs []*Tensor
	Attrs   Attrs
}

// Attrs are an op's attributes; each kind reads the ones it documents.
type Attrs struct {
	// Eps is a norm's epsilon.
	Eps float64
	// Causal masks attention to earlier positions; Scale multiplies the
	// scores (0: 1/sqrt(head dim)); Window, if positive, is a sliding
	// window of that many positions.
	Causal bool
	Scale  float64
	Window int64
	// Past is the number of positions already in the KV cache (decode):
	// the query positions start there.
	Past int64
	// Theta is RoPE's base; RotaryDim the leading part of the head
	// dimension it rotates (0: all of it).
	Theta     float64
	RotaryDim int64
	// Experts and TopK describe a mixture-of-experts layer; RoutingSkew
	// how unevenly its tokens' picks spread over the experts (Op.ExpertShares;
	// 0: evenly).
	Experts, TopK int64
	RoutingSkew   float64
	// Axis is the dimension an op works along (softmax, top-k: the last).
	Axis int
	// Tanh selects GELU's tanh approximation.
	Tanh bool
	// Shape is Reshape's target; Perm is Permute's order of dims.
	Shape []int64
	Perm  []int
	// Ranks is a collective's group size.
	Ranks int64
}

// FLOPs is the op's floating-point work (a multiply-add is 2), by its
// kind's rule (ops.go).
func (o *Op) FLOPs() int64 { return kinds[o.Kind].flops(o) }

// MinHBMBytes is what the op moves if it runs alone: every input read
// once and every output written once. A fused lowering moves less; the
// graph's minimum (Graph.MinHBMBytes) is the bound for the whole.
func (o *Op) MinHBMBytes() int64 {
	var n int64
	for _, t := range o.Inputs {
		if t != nil { // an optional input left out
			n += t.Bytes()
		}
	}
	for _, t := range o.Outputs {
		n += t.Bytes()
	}
	if f := kinds[o.Kind].bytes; f != nil {
		n = f(o)
	}
	return n
}

// Graph is a set of tensors and the ops between them, in the order they
// were added (a topological order: an op only reads tensors that exist).
type Graph struct {
	Tensors []*Tensor
	Ops     []*Op
}

// ParamCount is the number of parameter elements (a tensor shared by two
// ops, as tied embeddings are, counts once).
func (g *Graph) ParamCount() int64 {
	var n int64
	for _, t := range g.Tensors {
		if t.Role == Parameter {
			n += t.Elements()
		}
	}
	return n
}

// BytesByRole sums the tensors' bytes per role.
func (g *Graph) BytesByRole() map[Role]int64 {
	out := map[Role]int64{}
	for _, t := range g.Tensors {
		out[t.Role] += t.Bytes()
	}
	return out
}

// MinHBMBytes is the least HBM traffic of the whole graph: every
// parameter read once (of an embedding table only the rows gathered, of a
// mixture of experts only the experts the tokens reach), every input and
// cache read once, every output written once, and the entries appended to
// a cache written once; activations stay on chip. It is the bound a fused
// lowering is measured against.
func (g *Graph) MinHBMBytes() int64 {
	whole := map[*Tensor]bool{}
	part := map[*Tensor]int64{}
	var n int64
	for _, o := range g.Ops {
		switch o.Kind {
		case Embedding:
			part[o.Inputs[1]] += gatheredBytes(o)
		case MoEExperts:
			for _, w := range o.Inputs[3:6] {
				part[w] += w.Bytes() / o.Attrs.Experts * o.ExpertsTouched()
			}
		case KVAppend:
			n += o.Inputs[1].Bytes() // the new entries, written into the cache
		default:
			for _, t := range o.Inputs {
				if t != nil && t.Role == Parameter {
					whole[t] = true
				}
			}
		}
	}
	for _, t := range g.Tensors {
		switch {
		case t.Role == Parameter && whole[t]:
			n += t.Bytes()
		case t.Role == Parameter:
			n += min(t.Bytes(), part[t])
		case t.Role == Input, t.Role == Output:
			n += t.Bytes()
		}
	}
	return n + g.KVReadBytes()
}

// KVReadBytes is the bytes of the KV cache before the pass (the caches no
// op produces) that the pass reads at least: all of each, but behind a
// sliding window only the entries the window holds for the first query
// (of a past of P entries, those from P-window+1 on; the cache is
// [batch, heads, P, head dim]).
func (g *Graph) KVReadBytes() int64 {
	window := map[*Tensor]int64{}
	for _, o := range g.Ops {
		if o.Kind != SDPA || o.Attrs.Window <= 0 || !o.Attrs.Causal {
			continue
		}
		for _, kv := range o.Inputs[1:3] {
			if a := kv.Producer; a != nil && a.Kind == KVAppend && a.Inputs[0] != nil {
				window[a.Inputs[0]] = o.Attrs.Window
			}
		}
	}
	var n int64
	for _, t := range g.Tensors {
		if t.Role != KVCache || t.Producer != nil {
			continue
		}
		b := t.Bytes()
		if w, ok := window[t]; ok && len(t.Shape) == 4 && t.Shape[2] > w-1 {
			b = b / t.Shape[2] * (w - 1)
		}
		n += b
	}
	return n
}

// FLOPs is the sum of the ops' FLOPs.
func (g *Graph) FLOPs() int64 {
	var n int64
	for _, o := range g.Ops {
		n += o.FLOPs()
	}
	return n
}

// Error is a graph-building error: the op (by its module path and kind)
// and what is wrong, shapes included.
type Error struct {
	Op   string
	Kind Kind
	Msg  string
}

func (e *Error) Error() string {
	if e.Op == "" {
		return string(e.Kind) + ": " + e.Msg
	}
	return fmt.Sprintf("%s (%s): %s", e.Op, e.Kind, e.Msg)
}

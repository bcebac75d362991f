package graph

import (
	"fmt"
	"strings"

	"github.com/trnsim/trnsim/isa"
)

// Builder adds tensors and ops to a graph, inferring each op's output
// shapes. The first error sticks: later calls return placeholder tensors
// and add nothing, so a model's code composes modules without checking
// every call, and Graph reports the error.
type Builder struct {
	g     *Graph
	scope []string
	err   error
}

// NewBuilder starts an empty graph.
func NewBuilder() *Builder { return &Builder{g: &Graph{}} }

// Graph returns the graph, or the first error.
func (b *Builder) Graph() (*Graph, error) {
	if b.err != nil {
		return nil, b.err
	}
	return b.g, nil
}

// Err is the first error so far.
func (b *Builder) Err() error { return b.err }

// Fail records an error (the first one sticks) for code that builds on
// the builder, such as a module checking its configuration.
func (b *Builder) Fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Scope runs f with name appended to the module path that names the
// tensors and ops f adds (layers.0, then self_attn: layers.0.self_attn).
func (b *Builder) Scope(name string, f func()) {
	b.scope = append(b.scope, name)
	defer func() { b.scope = b.scope[:len(b.scope)-1] }()
	f()
}

// Path is name under the current scope.
func (b *Builder) Path(name string) string {
	if len(b.scope) == 0 {
		return name
	}
	if name == "" {
		return strings.Join(b.scope, ".")
	}
	return strings.Join(b.scope, ".") + "." + name
}

func (b *Builder) tensor(name string, shape []int64, dt isa.DType, role Role) *Tensor {
	t := &Tensor{ID: len(b.g.Tensors), Name: name, Shape: append([]int64(nil), shape...), DType: dt, Role: role}
	if b.err == nil {
		for _, d := range shape {
			if d <= 0 {
				b.Fail(&Error{Kind: "tensor", Msg: fmt.Sprintf("%s: every dimension must be positive, got %s", name, ShapeString(shape))})
				break
			}
		}
	}
	if b.err != nil {
		return t
	}
	b.g.Tensors = append(b.g.Tensors, t)
	return t
}

// Param adds a parameter (a weight or bias) under the current scope.
func (b *Builder) Param(name string, shape []int64, dt isa.DType) *Tensor {
	return b.tensor(b.Path(name), shape, dt, Parameter)
}

// Input adds a graph input.
func (b *Builder) Input(name string, shape []int64, dt isa.DType) *Tensor {
	return b.tensor(b.Path(name), shape, dt, Input)
}

// Cache adds a KV cache as it is before the graph runs.
func (b *Builder) Cache(name string, shape []int64, dt isa.DType) *Tensor {
	return b.tensor(b.Path(name), shape, dt, KVCache)
}

// Output marks t as a value the graph returns.
func (b *Builder) Output(t *Tensor) {
	if b.err == nil && t != nil && t.Role == Activation {
		t.Role = Output
	}
}

// Add adds an op of kind named name (under the current scope) over the
// inputs, and returns its first output. A nil input is an optional one
// left out (a Linear without bias).
func (b *Builder) Add(kind Kind, name string, attrs Attrs, inputs ...*Tensor) *Tensor {
	return b.AddMulti(kind, name, attrs, inputs...)[0]
}

// AddMulti is Add for ops with several outputs (top-k: values, indices).
func (b *Builder) AddMulti(kind Kind, name string, attrs Attrs, inputs ...*Tensor) []*Tensor {
	def, ok := kinds[kind]
	if !ok && b.err == nil {
		b.Fail(&Error{Op: b.Path(name), Kind: kind, Msg: fmt.Sprintf("unknown op kind (known: %s)", strings.Join(KindNames(), ", "))})
	}
	op := &Op{ID: len(b.g.Ops), Name: b.Path(name), Kind: kind, Inputs: inputs, Attrs: attrs}
	placeholder := func() []*Tensor {
		n := max(def.outputs, len(attrs.Shape), 1) // a split: a part per size
		out := make([]*Tensor, n)
		for i := range out {
			out[i] = &Tensor{Name: op.Name, Shape: []int64{1}}
		}
		return out
	}
	if b.err != nil {
		return placeholder()
	}
	if len(inputs) != def.inputs {
		b.Fail(&Error{Op: op.Name, Kind: kind, Msg: fmt.Sprintf("takes %d inputs, got %d", def.inputs, len(inputs))})
		return placeholder()
	}
	for i, t := range inputs {
		if t == nil && !def.isOptional(i) {
			b.Fail(&Error{Op: op.Name, Kind: kind, Msg: fmt.Sprintf("input %d is required", i)})
			return placeholder()
		}
	}
	outs, err := def.infer(op)
	if err != nil {
		b.Fail(&Error{Op: op.Name, Kind: kind, Msg: err.Error()})
		return placeholder()
	}
	var tensors []*Tensor
	for i, o := range outs {
		name := op.Name
		if len(outs) > 1 {
			name += fmt.Sprintf(".%d", i)
		}
		t := b.tensor(name, o.Shape, o.DType, o.Role)
		if b.err != nil {
			return placeholder()
		}
		t.Producer = op
		tensors = append(tensors, t)
	}
	op.Outputs = tensors
	b.g.Ops = append(b.g.Ops, op)
	return tensors
}

// Spec is an output an op's shape rule infers.
type Spec struct {
	Shape []int64
	DType isa.DType
	Role  Role
}

package lowergraph

import (
	"github.com/trnsim/trnsim/workloads/graph"
	"github.com/trnsim/trnsim/workloads/kernels"
	"github.com/trnsim/trnsim/workloads/tile"
)

func init() {
	extraLowerings[graph.Embedding] = (*lowering).embedding
	extraLowerings[graph.RoPE] = (*lowering).rope
	extraLowerings[graph.KVAppend] = (*lowering).kvAppend
}

// tensorAs returns t's HBM tensor, made with shape if t has none yet.
func (l *lowering) tensorAs(t *graph.Tensor, shape ...int64) (*tile.Tile, error) {
	if s, ok := l.store[t]; ok {
		if len(s.Shape) != len(shape) || product(s.Shape) != product(shape) {
			return nil, l.errf("internal error: %s is stored as %v, wanted %v", t.Name, s.Shape, shape)
		}
		return s, nil
	}
	role := tileRole(t)
	if t.Role == graph.KVCache {
		role = tile.Output // the cache: rows already there, rows appended
	}
	s := l.k.Tensor(l.unique(t.Name), t.DType, role, shape...)
	l.store[t] = s
	return s, nil
}

func product(s []int64) int64 {
	n := int64(1)
	for _, d := range s {
		n *= d
	}
	return n
}

// kvHeadMajor stores the KV cache head by head, [b*h*T, d] (as the
// Neuron stack's caches are laid out, [batch, heads, positions, head_dim]),
// not token-major like every other tensor: attention reads each head's
// keys and values in one run, where token-major rows would give it one
// head_dim-long piece per key (128 bytes at head_dim 64, a descriptor
// each).
const kvHeadMajor = true

// heads2D is the token-major storage of a [b, h, s, d] tensor: [b*s, h*d].
func heads2D(t *graph.Tensor) (rows, cols int64) {
	return t.Shape[0] * t.Shape[2], t.Shape[1] * t.Shape[3]
}

func (l *lowering) embedding(o *graph.Op) error {
	ids, table, out := o.Inputs[0], o.Inputs[1], o.Outputs[0]
	e := kernels.Embedding{Tokens: ids.Elements(), Vocab: table.Shape[0], Dim: table.Shape[1], DType: table.DType}
	plan, err := kernels.PlanEmbedding(e, kernels.EmbeddingOptions{OpID: l.id}, l.tg)
	if err != nil {
		return l.wrapErr(err)
	}
	k, err := plan.Kernel()
	if err != nil {
		return err
	}
	idsT, err := l.tensorAs(ids, ids.Elements(), 1)
	if err != nil {
		return err
	}
	return l.inline(k, map[string]*tile.Tile{"IDS": idsT, "TABLE": l.tensor2D(table), "OUT": l.tensor2D(out)})
}

func (l *lowering) rope(o *graph.Op) error {
	x, cos, sin, out := o.Inputs[0], o.Inputs[1], o.Inputs[2], o.Outputs[0]
	if o.Attrs.RotaryDim != 0 && o.Attrs.RotaryDim != x.Shape[3] {
		return l.errf("a rotary dim %d below the head dim %d is not lowered yet", o.Attrs.RotaryDim, x.Shape[3])
	}
	rows, cols := heads2D(x)
	d := x.Shape[3]
	r := kernels.RoPE{Rows: rows, Heads: x.Shape[1], HeadDim: d, DType: x.DType}
	plan, err := kernels.PlanRoPE(r, kernels.RoPEOptions{OpID: l.id}, l.tg)
	if err != nil {
		return l.wrapErr(err)
	}
	k, err := plan.Kernel()
	if err != nil {
		return err
	}
	xT, err := l.tensorAs(x, rows, cols)
	if err != nil {
		return err
	}
	// The tables hold each token's position: the pass's positions, once
	// per sequence of the batch.
	cosT, err := l.tensorAs(cos, rows, d)
	if err != nil {
		return err
	}
	sinT, err := l.tensorAs(sin, rows, d)
	if err != nil {
		return err
	}
	outT, err := l.tensorAs(out, rows, cols)
	if err != nil {
		return err
	}
	return l.inline(k, map[string]*tile.Tile{"X": xT, "COS": cosT, "SIN": sinT, "OUT": outT})
}

func (l *lowering) kvAppend(o *graph.Op) error {
	cache, nw, out := o.Inputs[0], o.Inputs[1], o.Outputs[0]
	b, h, s, d := nw.Shape[0], nw.Shape[1], nw.Shape[2], nw.Shape[3]
	past := o.Attrs.Past
	// The cache is stored head by head (kvHeadMajor).
	a := kernels.KVAppend{Batch: b, Seq: s, Past: past, Heads: h, HeadDim: d, DType: nw.DType, HeadMajor: kvHeadMajor}
	plan, err := kernels.PlanKVAppend(a, kernels.KVAppendOptions{OpID: l.id}, l.tg)
	if err != nil {
		return l.wrapErr(err)
	}
	k, err := plan.Kernel()
	if err != nil {
		return err
	}
	newT, err := l.tensorAs(nw, b*s, h*d)
	if err != nil {
		return err
	}
	// One HBM tensor is the cache before and after: rows b*T+t, or
	// (b*h+head)*T+t head by head.
	cacheRows, cacheCols := b*(past+s), h*d
	if kvHeadMajor {
		cacheRows, cacheCols = b*h*(past+s), d
	}
	cacheT, err := l.tensorAs(out, cacheRows, cacheCols)
	if err != nil {
		return err
	}
	if cache != nil {
		l.store[cache] = cacheT
	}
	return l.inline(k, map[string]*tile.Tile{"NEW": newT, "CACHE": cacheT})
}

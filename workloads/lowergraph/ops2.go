package lowergraph

import (
	"github.com/trnsim/trnsim/workloads/graph"
	"github.com/trnsim/trnsim/workloads/kernels"
	"github.com/trnsim/trnsim/workloads/tile"
)

func init() {
	extraLowerings[graph.RMSNorm] = (*lowering).norm
	extraLowerings[graph.LayerNorm] = (*lowering).norm
	extraLowerings[graph.Softmax] = (*lowering).softmax
	extraLowerings[graph.SDPA] = (*lowering).sdpa
}

func (l *lowering) norm(o *graph.Op) error {
	x, w, out := o.Inputs[0], o.Inputs[1], o.Outputs[0]
	var bias *graph.Tensor
	if len(o.Inputs) > 2 {
		bias = o.Inputs[2]
	}
	r, c := rowsCols(x)
	n := kernels.Norm{Rows: r, Cols: c, DType: x.DType, RMS: o.Kind == graph.RMSNorm, Bias: bias != nil, Eps: o.Attrs.Eps}
	plan, err := kernels.PlanNorm(n, kernels.NormOptions{OpID: l.id}, l.tg)
	if err != nil {
		return l.wrapErr(err)
	}
	k, err := plan.Kernel()
	if err != nil {
		return err
	}
	bind := map[string]*tile.Tile{"X": l.tensor2D(x), "W": l.tensor1D(w), "OUT": l.tensor2D(out)}
	if bias != nil {
		bind["B"] = l.tensor1D(bias)
	}
	return l.inline(k, bind)
}

func (l *lowering) softmax(o *graph.Op) error {
	x, out := o.Inputs[0], o.Outputs[0]
	r, c := rowsCols(x)
	plan, err := kernels.PlanSoftmax(kernels.Softmax{Rows: r, Cols: c, DType: x.DType}, kernels.SoftmaxOptions{OpID: l.id}, l.tg)
	if err != nil {
		return l.wrapErr(err)
	}
	k, err := plan.Kernel()
	if err != nil {
		return err
	}
	return l.inline(k, map[string]*tile.Tile{"X": l.tensor2D(x), "OUT": l.tensor2D(out)})
}

// sdpa lowers attention over the heads views: q [b, hq, s, d] of the
// token-major [b*s, hq*d], k and v [b, hkv, t, d] of the cache's [b*t,
// hkv*d].
func (l *lowering) sdpa(o *graph.Op) error {
	q, kt, v, out := o.Inputs[0], o.Inputs[1], o.Inputs[2], o.Outputs[0]
	b, hq, s, d := q.Shape[0], q.Shape[1], q.Shape[2], q.Shape[3]
	hkv, t := kt.Shape[1], kt.Shape[2]
	if v.Shape[3] != d {
		return l.errf("a value head dim %d unlike the query's %d is not lowered yet", v.Shape[3], d)
	}
	past := o.Attrs.Past
	if !o.Attrs.Causal {
		past = t - s // an encoder attends over its whole sequence: no cache
		if past != 0 {
			return l.errf("attention over %d keys for %d queries without a causal mask is not lowered yet", t, s)
		}
	}
	// K and V read from the cache are stored head by head; those of an
	// encoder (no cache) are views of their projections, token-major.
	headMajor := kvHeadMajor && kt.Role == graph.KVCache && v.Role == graph.KVCache
	if (kt.Role == graph.KVCache) != (v.Role == graph.KVCache) {
		return l.errf("internal error: attention reads one of K and V from the cache, not both")
	}
	a := kernels.Attention{Batch: b, QHeads: hq, KVHeads: hkv, HeadDim: d, Seq: s, Past: past, Causal: o.Attrs.Causal, Window: o.Attrs.Window, DType: q.DType, Scale: o.Attrs.Scale,
		KVHeadMajor: headMajor}
	plan, err := kernels.PlanAttention(a, kernels.AttentionOptions{OpID: l.id}, l.tg)
	if err != nil {
		return l.wrapErr(err)
	}
	k, err := plan.Kernel()
	if err != nil {
		return err
	}
	qT, err := l.tensorAs(q, b*s, hq*d)
	if err != nil {
		return err
	}
	kvRows, kvCols := b*t, hkv*d
	if headMajor {
		kvRows, kvCols = b*hkv*t, d
	}
	kT, err := l.tensorAs(kt, kvRows, kvCols)
	if err != nil {
		return err
	}
	vT, err := l.tensorAs(v, kvRows, kvCols)
	if err != nil {
		return err
	}
	oT, err := l.tensorAs(out, b*s, hq*d)
	if err != nil {
		return err
	}
	return l.inline(k, map[string]*tile.Tile{"Q": qT, "K": kT, "V": vT, "O": oT})
}

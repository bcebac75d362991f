package lowergraph

import (
	"fmt"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/graph"
	"github.com/trnsim/trnsim/workloads/kernels"
)

// fusion is elementwise work a Linear's GEMM does to its result on the
// way out (kernels.Epilogue) instead of passes of their own through HBM:
// the activation after it, a SwiGLU's silu and gating, a residual add.
type fusion struct {
	epi kernels.Epilogue
	// r is the epilogue's second operand (the up projection, the
	// residual); out the tensor the GEMM now writes (the last absorbed
	// op's output); bias the Linear's own bias, when fused.
	r, out, bias *graph.Tensor
	// nw and nb are an absorbed norm's weight and bias; norm the norm.
	nw, nb *graph.Tensor
	norm   *graph.Op
	// absorbed are the ops the GEMM does now.
	absorbed []*graph.Op
}

var fusableActs = map[graph.Kind]isa.ActFunc{graph.SiLU: isa.ActSilu, graph.GELU: isa.ActGelu, graph.ReLU: isa.ActRelu, graph.Tanh: isa.ActTanh}

// planFusions finds each Linear's epilogue: while the tensor it writes has
// one reader (and is not a graph output), an activation is absorbed (once,
// before any combination), then one add or multiply with another tensor
// already computed (a residual; SwiGLU's silu(gate) * up is both at once),
// then a LayerNorm or RMSNorm over its rows (a post-norm block's, after
// the residual), last. The GEMM may still give the norm back (Lowering's
// linear: no plan holds whole rows in one N block).
func planFusions(g *graph.Graph) (map[*graph.Op]*fusion, map[*graph.Op]*graph.Op) {
	readers := map[*graph.Tensor][]*graph.Op{}
	for _, o := range g.Ops {
		for _, t := range o.Inputs {
			if t != nil {
				readers[t] = append(readers[t], o)
			}
		}
	}
	// ready reports whether t is computed before op (an input, or the
	// output of an earlier op).
	ready := func(t *graph.Tensor, op *graph.Op) bool {
		return t.Producer == nil || t.Producer.ID < op.ID
	}
	fusions := map[*graph.Op]*fusion{}
	into := map[*graph.Op]*graph.Op{} // absorbed op -> the Linear
	for _, o := range g.Ops {
		if o.Kind != graph.Linear || into[o] != nil {
			continue
		}
		f := &fusion{out: o.Outputs[0]}
		if b := o.Inputs[2]; b != nil {
			// The bias is the epilogue's first step (its row in every
			// partition: up to 32 KiB of it).
			if b.Bytes() > 32<<10 || b.DType != o.Outputs[0].DType {
				continue
			}
			f.epi.Bias, f.bias = true, b
		}
		for {
			rs := readers[f.out]
			if len(rs) != 1 || f.out.Role == graph.Output {
				break
			}
			u := rs[0]
			if fn, ok := fusableActs[u.Kind]; ok && !f.epi.Apply && !f.epi.HasR() {
				f.epi.Apply, f.epi.Func = true, fn
				if u.Kind == graph.GELU && u.Attrs.Tanh {
					f.epi.Func = isa.ActGeluTanh
				}
			} else if (u.Kind == graph.AddOp || u.Kind == graph.MulOp || u.Kind == graph.SwiGLU) && !f.epi.HasR() {
				other := u.Inputs[0]
				if other == f.out {
					other = u.Inputs[1]
				}
				if other == f.out || !ready(other, o) || other.Elements() != f.out.Elements() || other.DType != f.out.DType {
					break
				}
				if u.Kind == graph.SwiGLU {
					if u.Inputs[0] != f.out || f.epi.Apply {
						break // the gate is the one that goes through silu
					}
					f.epi.Apply, f.epi.Func = true, isa.ActSilu
				}
				f.epi.Combine = isa.ALUAdd
				if u.Kind != graph.AddOp {
					f.epi.Combine = isa.ALUMultiply
				}
				f.r = other
			} else if (u.Kind == graph.LayerNorm || u.Kind == graph.RMSNorm) && u.Inputs[0] == f.out && normFits(u, o) {
				f.epi.Norm = kernels.EpilogueNorm{On: true, RMS: u.Kind == graph.RMSNorm, Eps: u.Attrs.Eps}
				f.nw, f.norm = u.Inputs[1], u
				if len(u.Inputs) > 2 && u.Inputs[2] != nil {
					f.epi.Norm.Bias, f.nb = true, u.Inputs[2]
				}
			} else {
				break
			}
			f.absorbed = append(f.absorbed, u)
			into[u] = o
			f.out = u.Outputs[0]
			if f.norm != nil {
				break // (the norm is the epilogue's last step)
			}
		}
		if len(f.absorbed) > 0 || f.epi.Bias {
			fusions[o] = f
		}
	}
	return fusions, into
}

// normFits reports whether Linear o's epilogue can do norm u: over the
// rows of o's result (its N columns), in its dtype, with a weight (and
// bias) of that dtype.
func normFits(u, o *graph.Op) bool {
	x := u.Inputs[0]
	n := o.Inputs[1].Shape[0]
	if len(x.Shape) == 0 || x.Shape[len(x.Shape)-1] != n {
		return false
	}
	for _, t := range u.Inputs[1:] {
		if t != nil && (t.DType != x.DType || t.Elements() != n) {
			return false
		}
	}
	return true
}

// fusedNote says what a Linear absorbed.
func fusedNote(o *graph.Op, f *fusion) string {
	names := ""
	for i, u := range f.absorbed {
		if i > 0 {
			names += ", "
		}
		names += u.Name
	}
	return fmt.Sprintf("%s: %s fused into its GEMM's epilogue", o.Name, names)
}

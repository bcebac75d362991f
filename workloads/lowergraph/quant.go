package lowergraph

import (
	"fmt"
	"strings"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/graph"
	"github.com/trnsim/trnsim/workloads/kernels"
	"github.com/trnsim/trnsim/workloads/tile"
)

// Quantised Linear weights, as the Neuron compiler runs weight-only
// quantisation: int8 weights (any hardware), and FP8 weights where
// TensorE has no FP8 double-row mode (NeuronCore-v2; NeuronCore-v4's is
// not sourced), stream from HBM at one byte per element and are converted
// to the activations' dtype (BF16) in SBUF before BF16 matmuls, the GEMM's
// Dequant (kernels/dequant.go). Each such weight [out, in] comes with its
// per-output-channel scales, a parameter <module>.scale [out] in the
// activations' dtype, which multiply the Linear's result. FP8 weights on
// NeuronCore-v3 keep the FP8 double-row matmuls (matmulInput).

// Dequantised reports whether a Linear with weights in w and activations
// in act has its weights dequantised to act before its matmuls, on
// hardware with (fp8DoubleRow) or without FP8 double-row matmuls.
func Dequantised(w, act isa.DType, fp8DoubleRow bool) bool {
	if w == act || !(act.IsHalf() || act == isa.FP32) {
		return false
	}
	return w == isa.INT8 || (w.IsFP8() && !fp8DoubleRow)
}

// Scale is the per-output-channel scale vector of a dequantised weight.
type Scale struct {
	// Weight is the Linear's weight; Name the scales' (<module>.scale).
	Weight *graph.Tensor
	Name   string
	// Elements are the weight's output channels; DType the activations'.
	Elements int64
	DType    isa.DType
}

// Bytes returns the scales' size.
func (s Scale) Bytes() int64 { return s.Elements * int64(s.DType.Bytes()) }

// ScaleName names a weight's scales: the module's path and .scale
// (model.layers.0.mlp.up_proj.scale).
func ScaleName(w *graph.Tensor) string { return strings.TrimSuffix(w.Name, ".weight") + ".scale" }

// Scales lists the scale vectors the lowering adds for g's dequantised
// Linear and expert weights, one per weight, in op order.
func Scales(g *graph.Graph, fp8DoubleRow bool) []Scale {
	var out []Scale
	seen := map[*graph.Tensor]bool{}
	add := func(x, w *graph.Tensor, channels int64) {
		if seen[w] || !Dequantised(w.DType, x.DType, fp8DoubleRow) {
			return
		}
		seen[w] = true
		out = append(out, Scale{Weight: w, Name: ScaleName(w), Elements: channels, DType: x.DType})
	}
	for _, o := range g.Ops {
		switch o.Kind {
		case graph.Linear:
			add(o.Inputs[0], o.Inputs[1], o.Inputs[1].Shape[0])
		case graph.MoEExperts:
			// Each expert's gate, up and down weights [experts, out, in]:
			// the scales of every expert's output channels.
			for _, w := range o.Inputs[3:6] {
				add(o.Inputs[0], w, w.Shape[0]*w.Shape[1])
			}
		}
	}
	return out
}

// quantState is what the lowering keeps of the dequantised Linears: each
// weight's scales in HBM ([1, out]) and the note that counts them.
type quantState struct {
	scales  map[*graph.Tensor]*tile.Tile
	linears int
	wdts    map[isa.DType]bool
	engines map[string]int
	note    int // index of the note in Result.Notes
}

// dequantised reports whether the current Linear's weights in wdt are
// dequantised for activations in adt.
func (l *lowering) dequantised(wdt, adt isa.DType) bool {
	return Dequantised(wdt, adt, l.tg.Limits.FP8DoubleRow)
}

// weightScale returns w's scales as an HBM input [1, out] in dt.
func (l *lowering) weightScale(w *graph.Tensor, dt isa.DType) *tile.Tile {
	q := l.quantState()
	if s, ok := q.scales[w]; ok {
		return s
	}
	s := l.k.Tensor(l.unique(ScaleName(w)), dt, tile.Input, 1, w.Shape[0])
	q.scales[w] = s
	return s
}

func (l *lowering) quantState() *quantState {
	if l.quant == nil {
		l.quant = &quantState{scales: map[*graph.Tensor]*tile.Tile{}, wdts: map[isa.DType]bool{}, engines: map[string]int{}, note: -1}
	}
	return l.quant
}

// noteDequant counts a dequantised matmul (a Linear or an expert's) in the
// lowering's note.
func (l *lowering) noteDequant(plan *kernels.GEMMPlan) {
	q := l.quantState()
	q.linears++
	q.wdts[plan.G.WeightDType] = true
	q.engines[plan.Dequantize.String()]++
	var dts, engs []string
	for _, dt := range []isa.DType{isa.INT8, isa.FP8E4, isa.FP8E5, isa.FP8E3} {
		if q.wdts[dt] {
			dts = append(dts, dt.String())
		}
	}
	for _, e := range []kernels.DequantEngine{kernels.DequantAlternate, kernels.DequantAlternateScalar, kernels.DequantScalar, kernels.DequantGpSimd, kernels.DequantVector, kernels.DequantAuto} {
		if n := q.engines[e.String()]; n > 0 {
			engs = append(engs, fmt.Sprintf("%s %d", e, n))
		}
	}
	note := fmt.Sprintf("%d matmuls' %s weights (Linears', experts') streamed at 1 byte per element and dequantised to %s in SBUF before the matmuls (engines: %s), their per-output-channel scales (<module>.scale) applied to the results",
		q.linears, strings.Join(dts, ", "), plan.G.In, strings.Join(engs, ", "))
	if q.note < 0 {
		q.note = len(l.res.Notes)
		l.res.Notes = append(l.res.Notes, note)
		return
	}
	l.res.Notes[q.note] = note
}

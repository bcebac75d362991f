package workloads

import (
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/graph"
	"github.com/trnsim/trnsim/workloads/lowergraph"
	"github.com/trnsim/trnsim/workloads/zoo"
)

// weightDTypes are the matmul weights' dtypes a model lowers: BF16; int8
// (weight-only, dequantised to BF16 on chip everywhere); fp8e4 (FP8
// double-row matmuls where TensorE has them, NeuronCore-v3; dequantised
// elsewhere). See docs/models.md.
var weightDTypes = []isa.DType{isa.BF16, isa.INT8, isa.FP8E4}

// quantFootprint adds to a model's figures what quantised matmul weights
// change: the per-output-channel scales the lowering adds for the weights
// it dequantises (lowergraph.Scales, <module>.scale [out]) are parameters
// and weight bytes, which every pass reads; and the whole model's weight
// bytes are its weights at their dtypes plus those scales, not every
// parameter in BF16. The whole model's figures extrapolate g's layers (all
// alike) to the model's.
func quantFootprint(mi *ModelInfo, cfg *configs.RunConfig, c *zoo.Config, g *graph.Graph) {
	var saved, scaleN, scaleB [2]int64 // [outside the layers, in g's layers]
	in := func(name string) int {
		if _, ok := zoo.LayerOf(name); ok {
			return 1
		}
		return 0
	}
	for _, t := range g.Tensors {
		if t.Role == graph.Parameter && t.DType != isa.BF16 && t.DType.Bytes() < isa.BF16.Bytes() {
			saved[in(t.Name)] += t.Elements() * int64(isa.BF16.Bytes()-t.DType.Bytes())
		}
	}
	for _, s := range lowergraph.Scales(g, cfg.Hardware.Core.Tensor.FP8DoubleRow) {
		i := in(s.Weight.Name)
		scaleN[i] += s.Elements
		scaleB[i] += s.Bytes()
	}
	if saved == [2]int64{} && scaleN == [2]int64{} {
		return
	}
	mi.WeightBytes += scaleB[0] + scaleB[1]
	mi.WeightReadBytes += scaleB[0] + scaleB[1]
	whole := func(v [2]int64) int64 {
		if mi.Layers <= 0 {
			return v[0]
		}
		return v[0] + v[1]/mi.Layers*c.Layers
	}
	mi.Params += whole(scaleN)
	mi.FullWeightBytes += whole(scaleB) - whole(saved)
}

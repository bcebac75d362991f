package report

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// What decides an op's Trainium time: the link for a collective, nothing
// for an op fused into another, else its busiest engine, the DMA engines
// named HBM where the cores' HBM is the narrower pipe.
func TestTrainiumBound(t *testing.T) {
	for _, tc := range []struct {
		name   string
		op     OpReport
		narrow bool
		want   string
	}{
		{"collective", OpReport{Kind: "all_reduce", Instructions: 4, BusyS: map[string]float64{"dma": 1}}, true, "link"},
		{"fused", OpReport{Kind: "silu"}, false, "fused"},
		{"tensor", OpReport{Kind: "linear", Instructions: 9, BusyS: map[string]float64{"tensor": 3, "dma": 2, "vector": 1}}, true, "TensorE"},
		{"hbm", OpReport{Kind: "linear", Instructions: 9, BusyS: map[string]float64{"tensor": 1, "dma": 2}}, true, "HBM"},
		{"dma", OpReport{Kind: "linear", Instructions: 9, BusyS: map[string]float64{"tensor": 1, "dma": 2}}, false, "DMA"},
		{"scalar", OpReport{Kind: "rms_norm", Instructions: 9, BusyS: map[string]float64{"scalar": 5, "vector": 4}}, false, "ScalarE"},
		{"idle", OpReport{Kind: "kv_append", Instructions: 1, BusyS: map[string]float64{}}, false, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, trainiumBound(&tc.op, tc.narrow)) })
	}
}

func TestLayerOf(t *testing.T) {
	for in, want := range map[string]string{
		"model.layers.12.mlp.up_proj": "model.layers.12",
		"model.layers.3":              "model.layers.3",
		"lm_head":                     "",
		"model.embed_tokens":          "",
	} {
		assert.Equal(t, want, layerOf(in), in)
	}
}

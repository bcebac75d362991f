package report

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// The ops figure's data: the longest Trainium ops that every GPU has an
// estimate of, longest first, each GPU's time beside (in µs).
func TestLongestOps(t *testing.T) {
	r := &Report{CoresUsed: 1,
		GPU: []GPUReport{{GPU: "h100", Title: "H100 SXM"}, {GPU: "b200", Title: "B200 SXM"}},
		Ops: []OpReport{
			{Name: "model.a", TimeS: 3e-6, GPU: []OpGPU{{GPU: "h100", TimeS: 2e-6}, {GPU: "b200", TimeS: 1e-6}}},
			{Name: "model.b", TimeS: 9e-6, GPU: []OpGPU{{GPU: "h100", TimeS: 4e-6}}}, // no B200 kernel: left out
			{Name: "model.c", TimeS: 5e-6, GPU: []OpGPU{{GPU: "b200", TimeS: 2e-6}, {GPU: "h100", TimeS: 6e-6}}},
			{Name: "model.d", TimeS: 1e-6, GPU: []OpGPU{{GPU: "h100", TimeS: 1e-6}, {GPU: "b200", TimeS: 1e-6}}},
		}}
	groups, series := r.longestOps(2)
	assert.Equal(t, []string{shortOp("model.c"), shortOp("model.a")}, groups)
	require.Len(t, series, 3)
	assert.Equal(t, []string{"H100 SXM", "B200 SXM"}, []string{series[1].Label, series[2].Label})
	for i, want := range [][]float64{{5, 3}, {6, 2}, {2, 1}} {
		require.Len(t, series[i].Values, 2)
		for j := range want {
			assert.InDelta(t, want[j], series[i].Values[j], 1e-9, "series %d, op %d", i, j)
		}
	}
}

package gpu

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/graph"
)

// The fitted rows come back exactly; the held-out rows are reported with
// their errors.
func TestRows(t *testing.T) {
	for _, r := range Default.Rows() {
		err := 100 * (r.Predicted/r.Measured - 1)
		t.Logf("%-18s %10.4g %10.4g %-6s %+6.1f%% target %v fitted %v", r.ID, r.Predicted, r.Measured, r.Unit, err, r.TargetPct, r.Fitted)
		if r.Fitted {
			assert.InEpsilon(t, r.Measured, r.Predicted, 1e-9, r.ID)
		}
	}
}

// A GEMM whose tile count is one more than a multiple of the SMs takes
// close to one extra wave.
func TestWaveQuantisation(t *testing.T) {
	d := devices["h100"]
	c := Default
	c.LaunchUs = 0
	// 132 tiles of 128x256 fill one wave; 133 need two.
	m, k := int64(128*12), int64(8192)
	full, _ := c.MatmulTime(d, m, k, 256*11, 1, isa.BF16, isa.BF16)   // 132 tiles
	over, _ := c.MatmulTime(d, m, k, 256*11+1, 1, isa.BF16, isa.BF16) // 144 tiles: 2 waves
	assert.InDelta(t, 2.0, over/full, 0.1, "one tile column more costs a second wave")
}

// Every op of a small graph gets a time, views none, and the times add up.
func TestEstimate(t *testing.T) {
	b := graph.NewBuilder()
	x := b.Input("x", []int64{1, 16, 512}, isa.BF16)
	w := b.Param("w", []int64{1024, 512}, isa.BF16)
	y := b.Add(graph.Linear, "proj", graph.Attrs{}, x, w, nil)
	y = b.Add(graph.Reshape, "view", graph.Attrs{Shape: []int64{16, 1024}}, y)
	b.Output(b.Add(graph.SiLU, "act", graph.Attrs{}, y))
	g, err := b.Graph()
	require.NoError(t, err)
	e, err := Default.Estimate(g, devices["b200"])
	require.NoError(t, err)
	require.Len(t, e.Ops, 3)
	assert.Equal(t, BoundNone, e.Ops[1].Bound)
	assert.Zero(t, e.Ops[1].TimeS)
	assert.InDelta(t, e.Ops[0].TimeS+e.Ops[2].TimeS, e.TimeS, 1e-15)
	_, err = Lookup("v100")
	assert.ErrorContains(t, err, `unknown GPU "v100"`)
}

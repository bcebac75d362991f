package cost

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrices(t *testing.T) {
	p5, err := Lookup("p5.48xlarge")
	require.NoError(t, err)
	assert.InDelta(t, 6.88, p5.PerAccelerator(), 1e-9, "gpu.md §4.1: $6.88 per H100-hour")
	trn2, ok := ForAccelerator("trn2")
	require.True(t, ok)
	assert.InDelta(t, 2.235, trn2.PerAccelerator(), 1e-3)
	assert.Contains(t, trn2.Kind, "Capacity Block")
	// $6.88 an hour at 1,000 tokens/s: 6.88 / 3.6 = $1.911 per million.
	assert.InDelta(t, 1.9111, PerMillionTokens(6.88, 1000), 1e-4)
	assert.Zero(t, PerMillionTokens(6.88, 0))
	_, err = Lookup("p9.huge")
	assert.ErrorContains(t, err, `unknown instance "p9.huge"`)
	for _, in := range instances {
		assert.Positive(t, in.USDPerHour, in.Name)
		assert.NotEmpty(t, in.Source, in.Name)
	}
}

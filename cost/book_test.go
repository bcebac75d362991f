package cost

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPerMillionTokens(t *testing.T) {
	for _, c := range []struct {
		name             string
		usdPerHour, tokS float64
		want             float64
	}{
		{"an H100-hour at 1,000 tokens/s", 6.88, 1000, 6.88 / 3600 / 1000 * 1e6},
		{"a trn2 core at 250 tokens/s", 35.76 / 128, 250, 35.76 / 128 / 3600 / 250 * 1e6},
		{"$3.60/h at 1 token/s is $1,000 per million", 3.6, 1, 1000},
		{"no throughput", 6.88, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.InDelta(t, c.want, PerMillionTokens(c.usdPerHour, c.tokS), 1e-9)
		})
	}
}

func TestBookOverrides(t *testing.T) {
	b, err := NewBook(map[string]float64{"p5.48xlarge": 40, "trn2.48xlarge": 25})
	require.NoError(t, err)
	p5, err := b.Lookup("p5.48xlarge")
	require.NoError(t, err)
	assert.True(t, p5.User)
	assert.Equal(t, 40.0, p5.USDPerHour)
	assert.Equal(t, 55.04, p5.TableUSDPerHour)
	assert.InDelta(t, 5.0, p5.PerAccelerator(), 1e-12)
	assert.Contains(t, p5.Origin(), "user")
	trn2, ok := b.ForAccelerator("trn2")
	require.True(t, ok)
	assert.InDelta(t, 25.0/16, trn2.PerAccelerator(), 1e-12)
	// Rows not overridden keep the table's price and source.
	b200, ok := b.ForAccelerator("b200")
	require.True(t, ok)
	assert.False(t, b200.User)
	assert.Equal(t, 113.9328, b200.USDPerHour)
	assert.Contains(t, b200.Origin(), "[S48]")
	assert.Equal(t, []string{"p5.48xlarge=40", "trn2.48xlarge=25"}, b.User())
	// The zero Book is the table.
	var zero Book
	p, err := zero.Lookup("p5.48xlarge")
	require.NoError(t, err)
	assert.False(t, p.User)
	assert.Equal(t, 55.04, p.USDPerHour)
}

func TestBookErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		prices map[string]float64
		want   string
	}{
		{"unknown instance", map[string]float64{"p9.huge": 1}, `unknown instance "p9.huge" (instances: inf2.48xlarge, `},
		{"negative", map[string]float64{"p5.48xlarge": -1}, "p5.48xlarge: the price must be a positive number"},
		{"zero", map[string]float64{"trn2.48xlarge": 0}, "trn2.48xlarge: the price must be a positive number"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewBook(c.prices)
			assert.ErrorContains(t, err, c.want)
		})
	}
}

func TestScaleToInstance(t *testing.T) {
	for _, c := range []struct {
		name           string
		capacity, used int
		tokS           float64
		want           PerInstance
	}{
		{"one trn2 chip's 8 cores in trn2.48xlarge's 128", 128, 8, 100, PerInstance{Replicas: 16, Instances: 1, TokensPerS: 1600}},
		{"one core", 128, 1, 10, PerInstance{Replicas: 128, Instances: 1, TokensPerS: 1280}},
		{"one H100 in p5.48xlarge", 8, 1, 50, PerInstance{Replicas: 8, Instances: 1, TokensPerS: 400}},
		{"3 cores: 42 copies fit, 2 cores idle", 128, 3, 1, PerInstance{Replicas: 42, Instances: 1, TokensPerS: 42}},
		{"two instances' cores", 128, 256, 1000, PerInstance{Replicas: 1, Instances: 2, TokensPerS: 500}},
		{"no throughput", 128, 8, 0, PerInstance{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, ScaleToInstance(c.capacity, c.used, c.tokS))
		})
	}
	assert.Equal(t, "16 replicas of the 8 NeuronCores simulated, side by side", ScaleToInstance(128, 8, 1).Describe(8, "NeuronCores"))
	assert.Equal(t, "8 replicas of the one GPU simulated, side by side", ScaleToInstance(8, 1, 1).Describe(1, "GPUs"))
}

func TestEnergy(t *testing.T) {
	for _, c := range []struct {
		name        string
		watts, tokS float64
		wantJ       float64
	}{
		{"an H100 at 700 W, 100 tokens/s", 700, 100, 7},
		{"a trn2 core's share, 500/8 W at 62.5 tokens/s", 500.0 / 8, 62.5, 1},
		{"no throughput", 700, 0, 0},
		{"no power", 0, 100, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := JoulesPerToken(c.watts, c.tokS)
			assert.InDelta(t, c.wantJ, j, 1e-12)
			assert.InDelta(t, c.wantJ*1e6/3600, WhPerMillionTokens(j), 1e-9)
		})
	}
	p, ok := ChipPower("trn2")
	require.True(t, ok)
	assert.Equal(t, 500.0, p.Watts)
	assert.Equal(t, "3P", p.Tag)
	_, ok = ChipPower("trn1")
	assert.False(t, ok, "AWS does not publish trn1's power")
}

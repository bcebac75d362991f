package validate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFigureChecks(t *testing.T) {
	yes, no := true, false
	rows := []Row{
		{ID: "K1", Unit: "ms", Predicted: 6.9, Measured: 7, TargetPct: 15, Pass: &yes},
		{ID: "K6", Unit: "ns", Predicted: 1500, Measured: 1416, TargetPct: 10, Pass: &yes},
		{ID: "C1", Unit: "us", Predicted: 1.8, Measured: 1.5, Range: []float64{1, 2}, Pass: &yes},
		{ID: "I5", Unit: "ms", Predicted: 1.3, Measured: 0.94, TargetPct: 25, Pass: &no},
		{ID: "G-MAMF", Unit: "TFLOPS", Predicted: 258, Measured: 271, TargetPct: 15, Pass: &yes},
		{ID: "G-COPY", Unit: "TB/s", Predicted: 4.3, Measured: 4.3},
		{ID: "H", Unit: "GB", Predicted: 1, Measured: 1},
		{ID: "ZERO", Unit: "%", Predicted: 0, Measured: 50},
	}
	checks, names := FigureChecks(rows)
	assert.ElementsMatch(t, []string{"time", "tflops", "bandwidth", "bytes"}, keys(checks), "a figure per quantity; a row at 0 is left out")
	assert.Equal(t, [2]string{"time", "µs"}, names["time"], "times in the unit their geometric mean reads best in")
	assert.Equal(t, [2]string{"bandwidth", "GB/s"}, names["bandwidth"])
	byID := map[string]int{}
	for i, c := range checks["time"] {
		byID[c.Label] = i
	}
	tm := checks["time"]
	assert.InDelta(t, 7000, tm[byID["K1"]].Measured, 1e-9)
	assert.InDelta(t, 1.416, tm[byID["K6"]].Measured, 1e-12)
	assert.InDelta(t, 1.8, tm[byID["C1"]].Predicted, 1e-12)
	assert.InDelta(t, 100.0/3, tm[byID["C1"]].TolerancePct, 1e-9, "a range's half width over its middle")
	assert.Equal(t, 25.0, tm[byID["I5"]].TolerancePct, "the row's own tolerance")
	assert.True(t, tm[byID["I5"]].Miss)
	assert.False(t, tm[byID["K1"]].Miss)
	assert.Equal(t, 4300.0, checks["bandwidth"][0].Measured, "TB/s in GB/s")
	assert.Equal(t, 0.0, checks["bandwidth"][0].TolerancePct, "no target: reported only")

	dir := t.TempDir()
	files, err := WriteFigures(dir, rows, []string{"png", "svg"})
	require.NoError(t, err)
	var got []string
	for _, f := range files {
		got = append(got, filepath.Base(f))
		fi, err := os.Stat(f)
		require.NoError(t, err)
		assert.Greater(t, fi.Size(), int64(1000))
	}
	assert.Equal(t, []string{"validation-bandwidth.png", "validation-bandwidth.svg", "validation-bytes.png", "validation-bytes.svg",
		"validation-tflops.png", "validation-tflops.svg", "validation-time.png", "validation-time.svg"}, got)
	_, err = WriteFigures(dir, []Row{{ID: "X", Unit: "ms"}}, []string{"png"})
	assert.ErrorContains(t, err, "no validation row with a measured figure")
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

package plots

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEveryPlotWritesPNGAndSVG(t *testing.T) {
	dir := t.TempDir()
	series := []Series{{Label: "a", X: []float64{1, 2, 3}, Y: []float64{3, 2, 4}}, {Label: "b", X: []float64{1, 3}, Y: []float64{1, 5}}}
	points := []Point{{1, 1, "p"}, {2, 3, "q"}, {3, 2, "r"}}
	fig := Figure{Title: "t", XLabel: "x (s)", YLabel: "y (%)"}
	logFig := fig
	logFig.LogX, logFig.LogY = true, true
	for _, ext := range []string{".png", ".svg"} {
		draws := map[string]func(string) error{
			"line":     func(p string) error { return Line(p, fig, series) },
			"line-log": func(p string) error { return Line(p, logFig, series) },
			"heat": func(p string) error {
				return Heat(p, fig, "z", []float64{1, 2}, []float64{10, 20}, [][]float64{{1, 2}, {math.NaN(), 4}})
			},
			"pareto": func(p string) error { return Pareto(p, fig, points, true, true) },
		}
		for name, draw := range draws {
			path := filepath.Join(dir, name+ext)
			require.NoError(t, draw(path), name)
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			if ext == ".png" {
				assert.True(t, bytes.HasPrefix(data, []byte("\x89PNG")), path)
			} else {
				assert.Contains(t, string(data), "<svg", path)
			}
		}
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 8, "no temporary file is left")
}

func TestParetoFront(t *testing.T) {
	for _, tc := range []struct {
		name       string
		xs, ys     []float64
		minX, maxY bool
		want       []int
	}{
		{"cost against throughput", []float64{1, 2, 3, 2, 4}, []float64{1, 3, 2, 2, 5}, true, true, []int{0, 1, 4}},
		{"both to maximise", []float64{1, 2, 3}, []float64{3, 2, 1}, false, true, []int{0, 1, 2}},
		{"both to minimise", []float64{1, 2, 3}, []float64{1, 2, 3}, true, false, []int{0}},
		{"equal points kept once", []float64{1, 1, 2}, []float64{2, 2, 1}, true, true, []int{0}},
		{"one point", []float64{5}, []float64{5}, true, true, []int{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ParetoFront(tc.xs, tc.ys, tc.minX, tc.maxY))
		})
	}
}

func TestPlotErrors(t *testing.T) {
	dir := t.TempDir()
	assert.ErrorContains(t, Line(filepath.Join(dir, "x.jpg"), Figure{}, nil), "plots are written as .png or .svg")
	nan := [][]float64{{math.NaN()}}
	assert.ErrorContains(t, Heat(filepath.Join(dir, "h.png"), Figure{}, "z", []float64{1}, []float64{1}, nan), "every cell is missing")
	assert.ErrorContains(t, Line(filepath.Join(dir, "l.png"), Figure{LogY: true, YLabel: "tflops"}, []Series{{X: []float64{1}, Y: []float64{0}}}), "logarithmic y axis needs values above 0 (tflops has 0)")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

func TestBars(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bars.png")
	require.NoError(t, Bars(path, Figure{Title: "t", YLabel: "USD per million tokens"}, []string{"trn2 core", "H100", "B200"},
		[]BarSeries{{Label: "cost", Values: []float64{1, 3, 4}}}))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(data, []byte("\x89PNG")))
	assert.ErrorContains(t, Bars(filepath.Join(dir, "b.png"), Figure{}, []string{"a"}, []BarSeries{{Label: "s", Values: []float64{1, 2}}}), "has 2 values for 1 groups")
	assert.ErrorContains(t, Bars(filepath.Join(dir, "b.png"), Figure{LogY: true}, []string{"a"}, []BarSeries{{Label: "s", Values: []float64{1}}}), "linear axes")
	assert.ErrorContains(t, Bars(filepath.Join(dir, "b.png"), Figure{}, []string{"a"}, []BarSeries{{Label: "s", Values: []float64{-1}}}), "cannot be drawn")
}

package plots

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/vg"
)

// pixels is a length's size in a PNG (96 dots per inch, rounded).
func pixels(l vg.Length) int { return int(l/vg.Inch*96 + 0.5) }

// checkImage checks that path is a PNG of the size given, or an SVG that
// parses as XML with an <svg> root.
func checkImage(t *testing.T, path string, size vg.Point) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	if filepath.Ext(path) == ".png" {
		cfg, err := png.DecodeConfig(bytes.NewReader(data))
		require.NoError(t, err, path)
		assert.Equal(t, pixels(size.X), cfg.Width, path)
		assert.Equal(t, pixels(size.Y), cfg.Height, path)
		_, err = png.Decode(bytes.NewReader(data))
		require.NoError(t, err, path)
		return
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, path)
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	assert.Equal(t, "svg", root, path)
}

func TestCeiling(t *testing.T) {
	c := Ceiling{PeakFLOPS: 80e12, BytesPerS: 400e9}
	assert.Equal(t, 200.0, c.Ridge())
	for _, tc := range []struct{ intensity, want float64 }{
		{1, 400e9},    // memory bound: the bandwidth times the intensity
		{100, 40e12},  // still below the ridge
		{200, 80e12},  // at the ridge
		{1000, 80e12}, // compute bound: the peak
		{0.25, 100e9}, // far below
		{1e6, 80e12},  // far above
		{199.5, 79.8e12},
	} {
		assert.InDelta(t, tc.want, c.Attainable(tc.intensity), tc.want*1e-12, "intensity %g", tc.intensity)
	}
}

func TestRunFiguresWritePNGAndSVG(t *testing.T) {
	dir := t.TempDir()
	c := Ceiling{PeakFLOPS: 80e12, BytesPerS: 400e9, PeakLabel: "TensorE", MemoryLabel: "HBM"}
	pts := []RooflinePoint{{"linear", 1, 3e11}, {"sdpa", 4, 1e12}, {"rms_norm", 0.7, 4e8}, {"matmul", 1000, 7e13}}
	rows := []TimelineRow{{Name: "tensor", Intervals: []Interval{{0, 2, 0}, {3, 5, 1}}}, {Name: "DMA q0", Intervals: []Interval{{1, 4, 2}}}}
	classes := []string{"linear", "sdpa", "semaphore wait"}
	groups := []string{"tensor", "vector"}
	stacked := []BarSeries{{Label: "busy", Values: []float64{60, 10}}, {Label: "semaphore stall", Values: []float64{30, 85}}, {Label: "idle", Values: []float64{10, 5}}}
	checks := []Check{{"K1", 6.97, 6.96, 15, false}, {"I5", 0.94, 1.33, 25, true}, {"S4", 189, 117, 0, false}, {"C1", 1.5, 1.8, 33.3, false}}
	for _, ext := range []string{".png", ".svg"} {
		for _, tc := range []struct {
			name string
			draw func(string) error
			size vg.Point
		}{
			{"roofline", func(p string) error { return Roofline(p, Figure{Title: "roofline"}, c, pts, "") }, rooflineSize()},
			{"timeline", func(p string) error {
				return Timeline(p, Figure{Title: "timeline", XLabel: "µs"}, 0, 5, rows, classes)
			}, timelineSize(len(rows), len(classes))},
			{"stalls", func(p string) error { return StackedPercent(p, Figure{Title: "stalls"}, groups, stacked) }, stackedSize()},
			{"measured", func(p string) error { return PredictedMeasured(p, Figure{Title: "validation"}, checks) }, measuredSize()},
		} {
			path := filepath.Join(dir, tc.name+ext)
			require.NoError(t, tc.draw(path), path)
			checkImage(t, path, tc.size)
		}
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 8, "no temporary file is left")
}

func TestRunFigureErrors(t *testing.T) {
	dir := t.TempDir()
	c := Ceiling{PeakFLOPS: 1e12, BytesPerS: 1e9}
	p := func(name string) string { return filepath.Join(dir, name) }
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"roofline extension", Roofline(p("r.jpg"), Figure{}, c, []RooflinePoint{{"a", 1, 1}}, ""), "plots are written as .png or .svg"},
		{"roofline without ceilings", Roofline(p("r.png"), Figure{}, Ceiling{}, []RooflinePoint{{"a", 1, 1}}, ""), "needs a peak and a bandwidth above 0"},
		{"roofline without points", Roofline(p("r.png"), Figure{}, c, nil, ""), "no op to place"},
		{"roofline zero intensity", Roofline(p("r.png"), Figure{}, c, []RooflinePoint{{"view", 0, 1}}, ""), `point "view": intensity 0`},
		{"roofline NaN rate", Roofline(p("r.png"), Figure{}, c, []RooflinePoint{{"a", 1, math.NaN()}}, ""), "must be above 0"},
		{"timeline no rows", Timeline(p("t.png"), Figure{}, 0, 1, nil, nil), "no timeline rows"},
		{"timeline empty window", Timeline(p("t.png"), Figure{}, 1, 1, []TimelineRow{{Name: "x"}}, nil), "empty timeline window"},
		{"timeline bad class", Timeline(p("t.png"), Figure{}, 0, 1, []TimelineRow{{Name: "x", Intervals: []Interval{{0, 1, 3}}}}, []string{"a"}), `row "x": class 3 of 1`},
		{"timeline no bars", Timeline(p("t.png"), Figure{}, 0, 1, []TimelineRow{{Name: "x"}}, []string{"a"}), "no interval in the window"},
		{"stacked above 100", StackedPercent(p("s.png"), Figure{}, []string{"tensor"}, []BarSeries{{"busy", []float64{70}}, {"stall", []float64{40}}}), `group "tensor": its shares add up to 110.00%`},
		{"stacked negative", StackedPercent(p("s.png"), Figure{}, []string{"tensor"}, []BarSeries{{"busy", []float64{-1}}}), "cannot be drawn"},
		{"stacked lengths", StackedPercent(p("s.png"), Figure{}, []string{"a", "b"}, []BarSeries{{"busy", []float64{1}}}), "has 1 values for 2 groups"},
		{"measured none", PredictedMeasured(p("m.png"), Figure{}, nil), "no row with a measured figure"},
		{"measured zero", PredictedMeasured(p("m.png"), Figure{}, []Check{{"X", 0, 1, 10, false}}), "X: 0 cannot be drawn on logarithmic axes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Error(t, tc.err)
			assert.Contains(t, tc.err.Error(), tc.want)
		})
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "a failed figure leaves nothing")
}

func TestParseFormats(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{"png,svg", []string{"png", "svg"}, ""},
		{"svg", []string{"svg"}, ""},
		{" PNG , .svg ,png", []string{"png", "svg"}, ""},
		{"jpg", nil, `"jpg" is not a figure format`},
		{"", nil, `"" is not a figure format`},
		{"png,", nil, `"" is not a figure format`},
	} {
		got, err := ParseFormats(tc.in)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestLog10Ticks(t *testing.T) {
	labels := func(lo, hi float64) []string {
		var out []string
		for _, tk := range (log10Ticks{}).Ticks(lg(lo), lg(hi)) {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	assert.Equal(t, []string{"0.01", "0.1", "1", "10", "100", "1000"}, labels(0.005, 2000))
	assert.Equal(t, []string{"200", "500", "1000", "2000"}, labels(114, 3678), "under two decades: 2 and 5 too")
	assert.Equal(t, []string{"1e-07", "2e-07", "5e-07", "1e-06"}, labels(1e-7, 1.5e-6))
	assert.Equal(t, []string{"5", "3", "7"}, labels(3, 7), "one label inside: the ends too")
}

func TestLinearTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		labels []string
	}{
		{0, 280, []string{"0", "50", "100", "150", "200", "250"}},
		{0, 0.0033, []string{"0", "0.0005", "0.0010", "0.0015", "0.0020", "0.0025", "0.0030"}},
		{0, 1.42e6, []string{"0", "0.2M", "0.4M", "0.6M", "0.8M", "1.0M", "1.2M", "1.4M"}},
		{0, 52000, []string{"0", "10k", "20k", "30k", "40k", "50k"}},
		{0, 9e6, []string{"0", "2M", "4M", "6M", "8M"}},
		{0, 1, []string{"0", "0.2", "0.4", "0.6", "0.8", "1.0"}},
	} {
		var got []string
		for _, tk := range (linearTicks{}).Ticks(tc.lo, tc.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		assert.Equal(t, tc.labels, got, "%g to %g", tc.lo, tc.hi)
		assert.GreaterOrEqual(t, len(got), 4)
	}
	// Ranges with nothing to divide return at once, with their ends.
	for _, r := range [][2]float64{{0, math.Inf(1)}, {0, 5e-324}, {3, 3}, {0, math.NaN()}, {0, 1e300}} {
		ticks := (linearTicks{}).Ticks(r[0], r[1])
		assert.NotEmpty(t, ticks, "%g to %g", r[0], r[1])
		assert.LessOrEqual(t, len(ticks), 40, "%g to %g", r[0], r[1])
		for _, tk := range ticks {
			assert.LessOrEqual(t, len(tk.Label), 12, "%g to %g: %q", r[0], r[1], tk.Label)
		}
	}
	assert.Equal(t, "4G", tickLabel(4e9, 1e9, 9e9))
}

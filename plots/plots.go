package plots

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Figure is what every plot has: a title, axis labels with their units,
// and whether an axis is logarithmic.
type Figure struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
}

// Series is one line of a line plot.
type Series struct {
	Label string
	X, Y  []float64
}

// Point is one labelled point of a scatter plot.
type Point struct {
	X, Y  float64
	Label string
}

// Line draws series against a shared x axis into path: PNG or SVG by its
// extension, with a legend when there is more than one series.
func Line(path string, f Figure, series []Series) error {
	if err := checkExt(path); err != nil {
		return err
	}
	if err := f.checkLog(series); err != nil {
		return err
	}
	p := f.newPlot()
	for i, s := range series {
		l, pts, err := linePoints(xys(s.X, s.Y))
		if err != nil {
			return err
		}
		c := lineColor(i)
		l.Color, pts.Color = c, c
		l.Width = vg.Points(1.5)
		pts.Shape = shape(i)
		p.Add(l, pts)
		if len(series) > 1 {
			p.Legend.Add(s.Label, l, pts)
		}
	}
	f.finish(p, series, true)
	return save(p, 16*vg.Centimeter, 10*vg.Centimeter, path)
}

// Pareto draws every point and, as a line through them, the ones no other
// point beats on both axes: lower x is better when minX (a cost), higher y
// when maxY (a throughput). The points of the front are labelled.
func Pareto(path string, f Figure, points []Point, minX, maxY bool) error {
	if err := checkExt(path); err != nil {
		return err
	}
	var xs, ys []float64
	for _, pt := range points {
		xs, ys = append(xs, pt.X), append(ys, pt.Y)
	}
	if err := f.checkLog([]Series{{X: xs, Y: ys}}); err != nil {
		return err
	}
	p := f.newPlot()
	all, err := plotter.NewScatter(xys(xs, ys))
	if err != nil {
		return err
	}
	all.Color = color.Gray{Y: 150}
	all.Shape = draw.RingGlyph{}
	p.Add(all)
	p.Legend.Add(fmt.Sprintf("every point (%d)", len(points)), all)
	front := ParetoFront(xs, ys, minX, maxY)
	var fx, fy []float64
	var labels plotter.XYLabels
	for _, i := range front {
		fx, fy = append(fx, xs[i]), append(fy, ys[i])
		labels.XYs = append(labels.XYs, plotter.XY{X: xs[i], Y: ys[i]})
		labels.Labels = append(labels.Labels, points[i].Label)
	}
	l, pts, err := linePoints(xys(fx, fy))
	if err != nil {
		return err
	}
	l.Color, pts.Color = palette10[3], palette10[3]
	l.Width = vg.Points(1.5)
	pts.Shape = draw.CircleGlyph{}
	p.Add(l, pts)
	p.Legend.Add(fmt.Sprintf("Pareto front (%d)", len(front)), l, pts)
	if len(front) <= 12 {
		text, err := plotter.NewLabels(labels)
		if err != nil {
			return err
		}
		for i := range text.TextStyle {
			text.TextStyle[i].Font.Size = vg.Points(7)
		}
		text.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(-10)}
		p.Add(text)
	}
	f.finish(p, []Series{{Label: fmt.Sprintf("every point (%d)", len(points)), X: xs, Y: ys}, {Label: "Pareto front (99)"}}, false)
	return save(p, 16*vg.Centimeter, 11*vg.Centimeter, path)
}

// ParetoFront returns the indices of the points no other point dominates
// (at least as good on both axes, better on one), ordered by x. Equal
// points are kept once, the first of them.
func ParetoFront(xs, ys []float64, minX, maxY bool) []int {
	better := func(a, b float64, lower bool) bool {
		if lower {
			return a < b
		}
		return a > b
	}
	var front []int
	for i := range xs {
		dominated := false
		for j := range xs {
			if i == j {
				continue
			}
			noWorse := !better(xs[i], xs[j], minX) && !better(ys[i], ys[j], !maxY)
			strictly := better(xs[j], xs[i], minX) || better(ys[j], ys[i], !maxY)
			if noWorse && (strictly || j < i) {
				dominated = true
				break
			}
		}
		if !dominated {
			front = append(front, i)
		}
	}
	sort.SliceStable(front, func(a, b int) bool { return xs[front[a]] < xs[front[b]] })
	return front
}

// Heat draws z over the grid of xs by ys into path, each cell labelled
// with its value; missing cells are NaN (drawn blank). The cells are all
// the same size whatever the spacing of the values (a sweep's axes are
// often geometric), with each tick labelled by its value; f's log flags
// are not used.
func Heat(path string, f Figure, zLabel string, xs, ys []float64, z [][]float64) error {
	if err := checkExt(path); err != nil {
		return err
	}
	g := grid{xs: xs, ys: ys, z: z}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, row := range z {
		for _, v := range row {
			if !math.IsNaN(v) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 0) {
		return fmt.Errorf("nothing to draw: every cell is missing")
	}
	if hi == lo {
		hi = lo + 1
	}
	pal := moreland.SmoothBlueTan()
	pal.SetMin(lo)
	pal.SetMax(hi)
	p := plot.New()
	p.Title.Text = f.Title + ": " + zLabel
	p.X.Label.Text = f.XLabel
	p.Y.Label.Text = f.YLabel
	h := plotter.NewHeatMap(g, pal.Palette(64))
	h.NaN = color.Transparent
	p.Add(h)
	// Each cell's value, so the map reads without a colour scale.
	var labels plotter.XYLabels
	for j := range ys {
		for i := range xs {
			if v := z[j][i]; !math.IsNaN(v) {
				labels.XYs = append(labels.XYs, plotter.XY{X: float64(i), Y: float64(j)})
				labels.Labels = append(labels.Labels, fmt.Sprintf("%.3g", v))
			}
		}
	}
	if len(labels.XYs) > 0 {
		l, err := plotter.NewLabels(labels)
		if err != nil {
			return err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].XAlign, l.TextStyle[i].YAlign = -0.5, -0.5
		}
		p.Add(l)
	}
	p.X.Tick.Marker = valueTicks(xs)
	p.Y.Tick.Marker = valueTicks(ys)
	return save(p, 16*vg.Centimeter, 12*vg.Centimeter, path)
}

func (f Figure) checkLog(series []Series) error {
	for _, s := range series {
		for i := range s.X {
			if f.LogX && s.X[i] <= 0 {
				return fmt.Errorf("a logarithmic x axis needs values above 0 (%s has %g)", f.XLabel, s.X[i])
			}
			if f.LogY && s.Y[i] <= 0 {
				return fmt.Errorf("a logarithmic y axis needs values above 0 (%s has %g)", f.YLabel, s.Y[i])
			}
		}
	}
	return nil
}

func (f Figure) newPlot() *plot.Plot {
	p := plot.New()
	p.Title.Text = f.Title
	p.X.Label.Text = f.XLabel
	p.Y.Label.Text = f.YLabel
	p.Add(plotter.NewGrid())
	return p
}

// finish sets the axes: a linear y axis starts at zero (differences are
// not exaggerated), log axes get log ticks, the legend goes below the
// lines, and a margin keeps the end points whole.
func (f Figure) finish(p *plot.Plot, labels []Series, joined bool) {
	if f.LogY {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		p.Y.Min, p.Y.Max = p.Y.Min/1.2, p.Y.Max*1.2
	} else {
		p.Y.Min = math.Min(p.Y.Min, 0)
		p.Y.Max *= 1.05
	}
	if f.LogX {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		p.X.Min, p.X.Max = p.X.Min/1.1, p.X.Max*1.1
	} else {
		pad := (p.X.Max - p.X.Min) * 0.04
		p.X.Min, p.X.Max = p.X.Min-pad, p.X.Max+pad
	}
	p.Legend.Top, p.Legend.Left = f.legendCorner(p, labels, joined)
	if !p.Legend.Top {
		p.Legend.YOffs = vg.Points(8)
	}
}

// legendCorner picks the corner of the data area the legend covers the
// fewest points and lines in, judged on samples along every line, where
// the legend is taken to fill a box as wide as its longest label and as
// tall as its rows.
func (f Figure) legendCorner(p *plot.Plot, labels []Series, joined bool) (top, left bool) {
	norm := func(a plot.Axis, v float64) float64 { return a.Norm(v) }
	longest := 0
	for _, s := range labels {
		longest = max(longest, len(s.Label))
	}
	// 16 cm wide figures fit about 110 characters of the legend's font.
	w := math.Min(0.9, float64(longest+4)/110)
	h := math.Min(0.9, float64(len(labels))*0.065+0.04)
	type corner struct{ top, left bool }
	order := []corner{{false, false}, {true, false}, {true, true}, {false, true}}
	count := make([]int, len(order))
	for _, s := range labels {
		for i := range s.X {
			// The segment to the next point, in 8 steps.
			steps := 1
			if joined && i+1 < len(s.X) {
				steps = 8
			}
			for k := 0; k < steps; k++ {
				t := float64(k) / 8
				x, y := s.X[i], s.Y[i]
				if steps > 1 {
					x, y = x+(s.X[i+1]-x)*t, y+(s.Y[i+1]-y)*t
				}
				nx, ny := norm(p.X, x), norm(p.Y, y)
				for c, o := range order {
					inX := (o.left && nx <= w) || (!o.left && nx >= 1-w)
					inY := (o.top && ny >= 1-h) || (!o.top && ny <= h)
					if inX && inY {
						count[c]++
					}
				}
			}
		}
	}
	best := 0
	for c := range order {
		if count[c] < count[best] {
			best = c
		}
	}
	return order[best].top, order[best].left
}

func xys(xs, ys []float64) plotter.XYs {
	out := make(plotter.XYs, len(xs))
	for i := range xs {
		out[i].X, out[i].Y = xs[i], ys[i]
	}
	return out
}

func linePoints(pts plotter.XYs) (*plotter.Line, *plotter.Scatter, error) {
	l, err := plotter.NewLine(pts)
	if err != nil {
		return nil, nil, err
	}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, nil, err
	}
	return l, s, nil
}

// grid is a heat map's cells, at the given x and y values.
type grid struct {
	xs, ys []float64
	z      [][]float64 // [y][x]
}

func (g grid) Dims() (c, r int)   { return len(g.xs), len(g.ys) }
func (g grid) Z(c, r int) float64 { return g.z[r][c] }
func (g grid) X(c int) float64    { return float64(c) }
func (g grid) Y(r int) float64    { return float64(r) }

// valueTicks puts a tick at each cell, labelled with the cell's value.
type valueTicks []float64

func (t valueTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for i, v := range t {
		out = append(out, plot.Tick{Value: float64(i), Label: fmt.Sprintf("%g", v)})
	}
	return out
}

// save renders the plot and puts it at path whole: it is written to a
// temporary file beside path and renamed over it, so a failed render or an
// interrupted write never leaves a truncated figure in place of an old one.
func save(p *plot.Plot, width, height vg.Length, path string) error {
	w, err := p.WriterTo(width, height, strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), "."))
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".partial-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(buf.Bytes())
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return werr
	}
	return nil
}

func checkExt(path string) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png", ".svg":
		return nil
	}
	return fmt.Errorf("%s: plots are written as .png or .svg", path)
}

var palette10 = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255}, {148, 103, 189, 255},
	{140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255}, {188, 189, 34, 255}, {23, 190, 207, 255},
}

func lineColor(i int) color.Color { return palette10[i%len(palette10)] }

func shape(i int) draw.GlyphDrawer { return shapes[i%len(shapes)] }

var shapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}}

// SortedFloats returns the distinct values, sorted.
func SortedFloats(vs []float64) []float64 {
	seen := map[float64]bool{}
	var out []float64
	for _, v := range vs {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Float64s(out)
	return out
}

// ParseFormats reads a comma-separated list of figure formats ("png",
// "svg", "png,svg"), each once, in the order given.
func ParseFormats(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(f), ".")))
		if f != "png" && f != "svg" {
			return nil, fmt.Errorf("%q is not a figure format: give png, svg or png,svg", f)
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out, nil
}

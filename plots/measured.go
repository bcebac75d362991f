package plots

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Check is one predicted figure beside its measurement, with the allowed
// error: TolerancePct (0: none, reported only). Miss marks a targeted
// figure outside its target; its label is drawn.
type Check struct {
	Label               string
	Measured, Predicted float64
	TolerancePct        float64
	Miss                bool
}

// PredictedMeasured draws predicted against measured on logarithmic axes
// into path: the 1:1 line, a shaded band for each tolerance the checks
// carry (±15%, ±25%, ...), every check as a point (passing, missing, or
// reported only) and the label of each that misses (of every check, when
// there are at most 16).
func PredictedMeasured(path string, f Figure, checks []Check) error {
	if err := checkExt(path); err != nil {
		return err
	}
	if len(checks) == 0 {
		return fmt.Errorf("nothing to draw: no row with a measured figure")
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	tols := map[float64]bool{}
	for _, c := range checks {
		for _, v := range []float64{c.Measured, c.Predicted} {
			if !(v > 0) || math.IsInf(v, 0) {
				return fmt.Errorf("%s: %g cannot be drawn on logarithmic axes", c.Label, v)
			}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		if c.TolerancePct > 0 {
			tols[c.TolerancePct] = true
		}
	}
	lo, hi = lo/2, hi*2
	p := plot.New()
	p.Title.Text = f.Title
	p.X.Label.Text = f.XLabel
	p.Y.Label.Text = f.YLabel
	p.Add(plotter.NewGrid())
	var ts []float64
	for t := range tols {
		ts = append(ts, t)
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(ts)))
	// The widest band first, so the narrower ones show on top of it.
	for i, t := range ts {
		down, up := math.Max(1-t/100, 1e-3), 1+t/100
		band, err := plotter.NewPolygon(plotter.XYs{{X: lg(lo), Y: lg(lo * down)}, {X: lg(hi), Y: lg(hi * down)}, {X: lg(hi), Y: lg(hi * up)}, {X: lg(lo), Y: lg(lo * up)}})
		if err != nil {
			return err
		}
		// The widest band lightest, each narrower one darker on top of it.
		shade := uint8(225)
		if len(ts) > 1 {
			shade = uint8(235 - 50*i/(len(ts)-1))
		}
		band.Color = color.RGBA{R: shade - 25, G: shade - 5, B: 255, A: 255}
		band.LineStyle.Width = 0
		p.Add(band)
		p.Legend.Add(fmt.Sprintf("target ±%.3g%%", t), band)
	}
	one, err := plotter.NewLine(plotter.XYs{{X: lg(lo), Y: lg(lo)}, {X: lg(hi), Y: lg(hi)}})
	if err != nil {
		return err
	}
	one.Color = color.Gray{Y: 60}
	one.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(one)
	p.Legend.Add("predicted = measured", one)
	kinds := []struct {
		name  string
		pick  func(Check) bool
		color color.Color
		shape draw.GlyphDrawer
	}{
		{"within its target", func(c Check) bool { return c.TolerancePct > 0 && !c.Miss }, palette10[2], draw.CircleGlyph{}},
		{"misses its target", func(c Check) bool { return c.Miss }, palette10[3], draw.CrossGlyph{}},
		{"reported only (no target)", func(c Check) bool { return c.TolerancePct == 0 && !c.Miss }, color.Gray{Y: 120}, draw.RingGlyph{}},
	}
	// Every point is named when there are few; else only those that miss.
	var missXY, plain plotter.XYs
	var missLabels []string
	all := len(checks) <= 16
	for _, k := range kinds {
		var xy plotter.XYs
		for _, c := range checks {
			if k.pick(c) {
				xy = append(xy, plotter.XY{X: lg(c.Measured), Y: lg(c.Predicted)})
				if c.Miss || all {
					missXY = append(missXY, xy[len(xy)-1])
					missLabels = append(missLabels, c.Label)
				} else {
					plain = append(plain, xy[len(xy)-1])
				}
			}
		}
		if len(xy) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return err
		}
		sc.Color, sc.Shape, sc.Radius = k.color, k.shape, vg.Points(3.5)
		if _, cross := k.shape.(draw.CrossGlyph); cross {
			sc.GlyphStyle.Radius = vg.Points(4)
		}
		p.Add(sc)
		p.Legend.Add(fmt.Sprintf("%s (%d)", k.name, len(xy)), sc)
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lg(lo), lg(hi), lg(lo), lg(hi)
	if err := addPointLabels(p, measuredSize(), missXY, missLabels, plain); err != nil {
		return err
	}
	logAxis(&p.X)
	logAxis(&p.Y)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	return save(p, measuredSize().X, measuredSize().Y, path)
}

// measuredSize is the predicted-against-measured figure's size.
func measuredSize() vg.Point { return vg.Point{X: 15 * vg.Centimeter, Y: 14 * vg.Centimeter} }

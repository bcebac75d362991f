package plots

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// BarSeries is one colour of a grouped bar chart: a value per group.
type BarSeries struct {
	Label  string
	Values []float64
}

// Bars draws grouped bars: a group per name along x (the options
// compared, or the ops), a bar per series in each, with a legend when
// there is more than one series. The y axis starts at zero (bars have no
// logarithmic form: f.LogY is an error).
func Bars(path string, f Figure, groups []string, series []BarSeries) error {
	if err := checkExt(path); err != nil {
		return err
	}
	if len(groups) == 0 || len(series) == 0 {
		return fmt.Errorf("nothing to draw: no groups or no series")
	}
	if f.LogY || f.LogX {
		return fmt.Errorf("bars are drawn on linear axes")
	}
	for _, s := range series {
		if len(s.Values) != len(groups) {
			return fmt.Errorf("series %q has %d values for %d groups", s.Label, len(s.Values), len(groups))
		}
		for _, v := range s.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return fmt.Errorf("series %q: value %g cannot be drawn", s.Label, v)
			}
		}
	}
	p := plot.New()
	p.Title.Text = f.Title
	p.X.Label.Text = f.XLabel
	p.Y.Label.Text = f.YLabel
	p.Add(plotter.NewGrid())
	w := vg.Points(float64(min(60, 300/(len(groups)*len(series)+1))))
	for i, s := range series {
		bc, err := plotter.NewBarChart(plotter.Values(s.Values), w)
		if err != nil {
			return err
		}
		bc.Color = palette10[i%len(palette10)]
		bc.LineStyle.Width = 0
		bc.Offset = w * vg.Length(float64(i)-float64(len(series)-1)/2)
		p.Add(bc)
		if len(series) > 1 {
			p.Legend.Add(s.Label, bc)
		}
	}
	p.NominalX(groups...)
	longest := 0
	for _, g := range groups {
		longest = max(longest, len(g))
	}
	if longest*len(groups) > 70 {
		// Names that would run into each other lean.
		p.X.Tick.Label.Rotation = math.Pi / 8
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
	p.Y.Min = 0
	p.Y.Max *= 1.1
	p.Legend.Top = true
	return save(p, 16*vg.Centimeter, 10*vg.Centimeter, path)
}

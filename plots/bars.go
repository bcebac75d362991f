package plots

import (
	"fmt"
	"math"
	"strconv"

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
	// Headroom above the tallest bar; with a legend (top right, one line
	// a series) enough that it sits above the bars.
	p.Y.Max *= 1.1
	if len(series) > 1 {
		p.Y.Max *= 1 + 0.07*float64(len(series))
	}
	p.Y.Tick.Marker = linearTicks{}
	p.Title.Padding = vg.Points(6)
	p.Legend.Top = true
	return save(p, 16*vg.Centimeter, 10*vg.Centimeter, path)
}

// linearTicks labels a linear axis from zero at a round step (1, 2 or 5
// times a power of ten) giving four to nine labels, with an unlabelled
// tick halfway between them (gonum's default labels as few as two).
type linearTicks struct{}

func (linearTicks) Ticks(lo, hi float64) []plot.Tick {
	span := hi - lo
	step := math.Pow(10, math.Floor(math.Log10(span/4)))
	if !(span > 0) || math.IsInf(span, 0) || !(step > 0) || math.IsInf(step, 0) || step < span*1e-6 {
		// Nothing to divide (an empty, infinite or subnormal range): the
		// ends alone.
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 4, 64)}, {Value: hi, Label: strconv.FormatFloat(hi, 'g', 4, 64)}}
	}
	for _, m := range []float64{1, 2, 5, 10} {
		if span/(step*m) <= 8 {
			step *= m
			break
		}
	}
	var out []plot.Tick
	first := math.Ceil(lo/step) * step
	for i := 0; i < 20; i++ {
		v := first + float64(i)*step
		if v > hi+step*1e-9 {
			break
		}
		out = append(out, plot.Tick{Value: v, Label: tickLabel(v, step, hi)})
		if h := v + step/2; h <= hi {
			out = append(out, plot.Tick{Value: h})
		}
	}
	return out
}

// tickLabel writes v for an axis of the given step whose largest value
// is hi: in thousands or millions with a k or M (1.5M, not 1500000), at
// the step's decimals (rounding away the float error of first + i*step).
func tickLabel(v, step, hi float64) string {
	if v == 0 {
		return "0"
	}
	unit, suffix := 1.0, ""
	switch {
	case hi >= 1e15 || step < 1e-6:
		return strconv.FormatFloat(v, 'g', 3, 64)
	case hi >= 1e12:
		unit, suffix = 1e12, "T"
	case hi >= 1e9:
		unit, suffix = 1e9, "G"
	case hi >= 1e6:
		unit, suffix = 1e6, "M"
	case hi >= 1e4:
		unit, suffix = 1e3, "k"
	}
	dec := max(0, int(-math.Floor(math.Log10(step/unit)+1e-9)))
	return strconv.FormatFloat(v/unit, 'f', dec, 64) + suffix
}

package plots

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// StackedPercent draws a bar per group (an engine), each stacked from its
// series' shares in percent (busy, each stall cause, idle), bottom to top
// in the series' order, on an axis from 0 to 100%. A group's shares may add
// to less than 100 (time the figure's series do not name), never to more.
// Series named "idle" draw light grey, "unaccounted" white with an outline.
func StackedPercent(path string, f Figure, groups []string, series []BarSeries) error {
	if err := checkExt(path); err != nil {
		return err
	}
	if len(groups) == 0 || len(series) == 0 {
		return fmt.Errorf("nothing to draw: no groups or no series")
	}
	sums := make([]float64, len(groups))
	for _, s := range series {
		if len(s.Values) != len(groups) {
			return fmt.Errorf("series %q has %d values for %d groups", s.Label, len(s.Values), len(groups))
		}
		for i, v := range s.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return fmt.Errorf("series %q: value %g cannot be drawn", s.Label, v)
			}
			sums[i] += v
		}
	}
	for i, s := range sums {
		if s > 100*(1+1e-6) {
			return fmt.Errorf("group %q: its shares add up to %.2f%%, above 100%%", groups[i], s)
		}
	}
	p := plot.New()
	p.Title.Text = f.Title
	p.X.Label.Text = f.XLabel
	p.Y.Label.Text = f.YLabel
	g := plotter.NewGrid()
	g.Vertical.Width = 0
	p.Add(g)
	w := vg.Points(float64(min(48, 320/(len(groups)+1))))
	var below *plotter.BarChart
	k := 0
	var charts []*plotter.BarChart
	for _, s := range series {
		bc, err := plotter.NewBarChart(plotter.Values(s.Values), w)
		if err != nil {
			return err
		}
		switch s.Label {
		case "idle":
			bc.Color = color.Gray{Y: 215}
			bc.LineStyle.Width = 0
		case "unaccounted":
			bc.Color = color.White
			bc.LineStyle.Width = vg.Points(0.5)
			bc.LineStyle.Color = color.Gray{Y: 120}
		default:
			bc.Color = palette10[k%len(palette10)]
			bc.LineStyle.Width = 0
			k++
		}
		if below != nil {
			bc.StackOn(below)
		}
		below = bc
		p.Add(bc)
		charts = append(charts, bc)
	}
	// The legend reads top to bottom as the stack does.
	for i := len(charts) - 1; i >= 0; i-- {
		p.Legend.Add(series[i].Label, charts[i])
	}
	p.NominalX(groups...)
	p.Y.Min, p.Y.Max = 0, 100
	p.Y.Tick.Marker = percentTicks{}
	// The legend goes right of the bars, in room kept for it.
	p.X.Max += 2.2
	p.Legend.Top, p.Legend.Left = true, false
	p.Legend.XOffs = vg.Points(-4)
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	return save(p, stackedSize().X, stackedSize().Y, path)
}

// stackedSize is the stacked bars' size.
func stackedSize() vg.Point { return vg.Point{X: 18 * vg.Centimeter, Y: 11 * vg.Centimeter} }

// percentTicks marks 0 to 100% every 20.
type percentTicks struct{}

func (percentTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for v := 0.0; v <= 100; v += 10 {
		t := plot.Tick{Value: v}
		if int(v)%20 == 0 {
			t.Label = fmt.Sprintf("%g", v)
		}
		out = append(out, t)
	}
	return out
}

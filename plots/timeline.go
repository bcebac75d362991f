package plots

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Interval is a bar of a timeline row: busy from Start to End (in the
// figure's x unit), coloured by Class, an index into the figure's classes.
type Interval struct {
	Start, End float64
	Class      int
}

// TimelineRow is one row of a timeline (an engine, a DMA queue) and its
// bars.
type TimelineRow struct {
	Name      string
	Intervals []Interval
}

// Timeline draws a Gantt chart into path: a row per TimelineRow, top to
// bottom in order, a bar per interval coloured by its class, over the x
// range [from, to), with a legend of the classes (classes that are named
// Wait draw in light grey). Bars are clipped to the range.
func Timeline(path string, f Figure, from, to float64, rows []TimelineRow, classes []string) error {
	if err := checkExt(path); err != nil {
		return err
	}
	if len(rows) == 0 {
		return fmt.Errorf("nothing to draw: no timeline rows")
	}
	if !(to > from) {
		return fmt.Errorf("an empty timeline window [%g, %g)", from, to)
	}
	bars := 0
	for _, r := range rows {
		for _, iv := range r.Intervals {
			if iv.Class < 0 || iv.Class >= len(classes) {
				return fmt.Errorf("row %q: class %d of %d", r.Name, iv.Class, len(classes))
			}
			if math.IsNaN(iv.Start) || math.IsNaN(iv.End) {
				return fmt.Errorf("row %q: an interval is not a number", r.Name)
			}
			bars++
		}
	}
	if bars == 0 {
		return fmt.Errorf("nothing to draw: no interval in the window")
	}
	p := plot.New()
	p.Title.Text = f.Title
	p.X.Label.Text = f.XLabel
	p.Y.Label.Text = f.YLabel
	g := plotter.NewGrid()
	g.Horizontal.Width = 0
	p.Add(g)
	tl := &gantt{rows: rows, from: from, to: to, colors: classColors(classes)}
	p.Add(tl)
	for i, c := range classes {
		p.Legend.Add(c, swatch{tl.colors[i]})
	}
	p.X.Min, p.X.Max = from, to
	p.X.Tick.Marker = linearTicks{}
	p.Y.Min, p.Y.Max = -0.6, float64(len(rows))-0.4
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
	}
	p.Y.Tick.Marker = rowTicks(names)
	p.Legend.Top = true
	p.Legend.Left = false
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	// Room above the rows for the legend: a row per class.
	p.Y.Max += float64(len(classes)) * 0.45 * float64(max(len(rows), 4)) / 10
	size := timelineSize(len(rows), len(classes))
	return save(p, size.X, size.Y, path)
}

// timelineSize is a timeline's size: 22 cm wide, taller with more rows
// and classes (at least 9 cm).
func timelineSize(rows, classes int) vg.Point {
	h := vg.Length(3+0.55*float64(rows)+0.3*float64(classes)) * vg.Centimeter
	return vg.Point{X: 22 * vg.Centimeter, Y: max(h, 9*vg.Centimeter)}
}

// classColors gives each class its colour: light grey for waits, the
// palette for the others in order.
func classColors(classes []string) []color.Color {
	out := make([]color.Color, len(classes))
	k := 0
	for i, c := range classes {
		switch c {
		case "semaphore wait":
			out[i] = color.Gray{Y: 200}
		case "other":
			out[i] = color.Gray{Y: 110}
		default:
			out[i] = palette10[k%len(palette10)]
			k++
		}
	}
	return out
}

// gantt draws the rows' bars.
type gantt struct {
	rows     []TimelineRow
	from, to float64
	colors   []color.Color
}

// Plot implements plot.Plotter.
func (g *gantt) Plot(c draw.Canvas, plt *plot.Plot) {
	x, y := plt.Transforms(&c)
	n := len(g.rows)
	for i, r := range g.rows {
		row := float64(n - 1 - i)
		y0, y1 := y(row-0.35), y(row+0.35)
		for _, iv := range r.Intervals {
			s, e := math.Max(iv.Start, g.from), math.Min(iv.End, g.to)
			if e <= s {
				continue
			}
			x0, x1 := x(s), x(e)
			if x1-x0 < vg.Points(0.4) {
				x1 = x0 + vg.Points(0.4) // a bar thinner than a pixel still shows
			}
			c.FillPolygon(g.colors[iv.Class], []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
		}
	}
}

// DataRange implements plot.DataRanger.
func (g *gantt) DataRange() (xmin, xmax, ymin, ymax float64) {
	return g.from, g.to, -0.5, float64(len(g.rows)) - 0.5
}

// rowTicks labels each row with its name (the first row at the top).
type rowTicks []string

func (t rowTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for i, name := range t {
		out = append(out, plot.Tick{Value: float64(len(t) - 1 - i), Label: name})
	}
	return out
}

// swatch is a legend entry's filled square.
type swatch struct{ color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(s.Color, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
}

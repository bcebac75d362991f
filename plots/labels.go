package plots

import (
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// box is a rectangle in points of the data area.
type box struct{ x0, y0, x1, y1 float64 }

func (a box) overlap(b box) float64 {
	w := math.Min(a.x1, b.x1) - math.Max(a.x0, b.x0)
	h := math.Min(a.y1, b.y1) - math.Max(a.y0, b.y0)
	if w <= 0 || h <= 0 {
		return 0
	}
	return w * h
}

// labelSide is where a label goes beside its point.
type labelSide struct {
	xa     draw.XAlignment
	ya     draw.YAlignment
	dx, dy float64 // the offset of the label's anchor, in points
}

// labelSides are the places tried for a label, in order: right, left,
// above, below, and the four corners.
func labelSides() [8]labelSide {
	return [...]labelSide{
		{draw.XLeft, draw.YCenter, 5, 0}, {draw.XRight, draw.YCenter, -5, 0},
		{draw.XCenter, draw.YBottom, 0, 5}, {draw.XCenter, draw.YTop, 0, -5},
		{draw.XLeft, draw.YBottom, 4, 4}, {draw.XLeft, draw.YTop, 4, -4},
		{draw.XRight, draw.YBottom, -4, 4}, {draw.XRight, draw.YTop, -4, -4},
	}
}

// addPointLabels writes each point's label beside it, at the first of
// labelSides where it overlaps no point (of xy or others, the points drawn
// without a label) and no label placed before it and stays inside the data
// area (else where it overlaps least). The axes' ranges must be set; the
// data area is taken as the figure's size less room for the axes and the
// title.
func addPointLabels(p *plot.Plot, size vg.Point, xy plotter.XYs, labels []string, others plotter.XYs) error {
	if len(xy) == 0 {
		return nil
	}
	sty := text.Style{Font: plot.DefaultFont, Handler: plot.DefaultTextHandler}
	sty.Font.Size = vg.Points(7)
	w, h := size.X.Points()-70, size.Y.Points()-110
	sx := w / (p.X.Max - p.X.Min)
	sy := h / (p.Y.Max - p.Y.Min)
	at := func(pt plotter.XY) (float64, float64) { return (pt.X - p.X.Min) * sx, (pt.Y - p.Y.Min) * sy }
	var taken []box
	for _, pt := range append(append(plotter.XYs(nil), xy...), others...) {
		x, y := at(pt)
		taken = append(taken, box{x - 4, y - 4, x + 4, y + 4})
	}
	sides := labelSides()
	groups := make([]plotter.XYLabels, len(sides))
	for i, pt := range xy {
		x, y := at(pt)
		tw, th := sty.Width(labels[i]).Points(), sty.Height(labels[i]).Points()
		best, bestCost := 0, math.Inf(1)
		for k, side := range sides {
			ax, ay := x+side.dx, y+side.dy
			b := box{ax + float64(side.xa)*tw, ay + float64(side.ya)*th, 0, 0}
			b.x1, b.y1 = b.x0+tw, b.y0+th
			cost := 0.0
			for j, t := range taken {
				if j != i {
					cost += t.overlap(b)
				}
			}
			if b.x0 < 0 || b.x1 > w || b.y0 < 0 || b.y1 > h {
				cost += tw * th
			}
			if cost < bestCost {
				best, bestCost = k, cost
			}
			if cost == 0 {
				break
			}
		}
		side := sides[best]
		ax, ay := x+side.dx, y+side.dy
		b := box{ax + float64(side.xa)*tw, ay + float64(side.ya)*th, 0, 0}
		b.x1, b.y1 = b.x0+tw, b.y0+th
		taken = append(taken, b)
		groups[best].XYs = append(groups[best].XYs, pt)
		groups[best].Labels = append(groups[best].Labels, labels[i])
	}
	for k, g := range groups {
		if len(g.XYs) == 0 {
			continue
		}
		l, err := plotter.NewLabels(g)
		if err != nil {
			return err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].Font.Size = vg.Points(7)
			l.TextStyle[i].XAlign, l.TextStyle[i].YAlign = sides[k].xa, sides[k].ya
		}
		l.Offset = vg.Point{X: vg.Points(sides[k].dx), Y: vg.Points(sides[k].dy)}
		p.Add(l)
	}
	return nil
}

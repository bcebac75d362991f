package plots

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Ceiling is a device's roofline: the most it computes (PeakFLOPS, FLOP/s)
// and the rate its memory delivers bytes (BytesPerS).
type Ceiling struct {
	PeakFLOPS, BytesPerS float64
	// PeakLabel and MemoryLabel say where each figure comes from
	// ("TensorE bf16 x 8 cores", "HBM, 8 of 8 cores' share").
	PeakLabel, MemoryLabel string
}

// Attainable is the roofline's rate at an arithmetic intensity (FLOP per
// byte): the lower of the peak and the intensity times the bandwidth.
func (c Ceiling) Attainable(intensity float64) float64 {
	return math.Min(c.PeakFLOPS, intensity*c.BytesPerS)
}

// Ridge is the intensity where the memory slope meets the peak.
func (c Ceiling) Ridge() float64 { return c.PeakFLOPS / c.BytesPerS }

// RooflinePoint is an op (or a kind of op) placed on a roofline: its
// arithmetic intensity (FLOP/byte) and the rate it achieved (FLOP/s).
type RooflinePoint struct {
	Label            string
	Intensity, FLOPS float64
}

// Roofline draws a device's roofline and the points on it into path, both
// axes logarithmic, rates in TFLOP/s. Each point is labelled; pointsLabel
// names them in the legend. f.XLabel, when set, says what the intensity's
// bytes are (least HBM bytes by default).
func Roofline(path string, f Figure, c Ceiling, points []RooflinePoint, pointsLabel string) error {
	if err := checkExt(path); err != nil {
		return err
	}
	p, err := rooflinePlot(f, c, points, pointsLabel)
	if err != nil {
		return err
	}
	return save(p, rooflineSize().X, rooflineSize().Y, path)
}

// rooflineSize is a roofline figure's width and height.
func rooflineSize() vg.Point { return vg.Point{X: 18 * vg.Centimeter, Y: 12 * vg.Centimeter} }

// rooflinePlot builds the roofline figure.
func rooflinePlot(f Figure, c Ceiling, points []RooflinePoint, pointsLabel string) (*plot.Plot, error) {
	if !(c.PeakFLOPS > 0) || !(c.BytesPerS > 0) || math.IsInf(c.PeakFLOPS, 0) || math.IsInf(c.BytesPerS, 0) {
		return nil, fmt.Errorf("a roofline needs a peak and a bandwidth above 0 (got %g FLOP/s, %g B/s)", c.PeakFLOPS, c.BytesPerS)
	}
	if len(points) == 0 {
		return nil, fmt.Errorf("nothing to draw: no op to place on the roofline")
	}
	lo, hi := c.Ridge(), c.Ridge()
	ylo := c.PeakFLOPS
	for _, pt := range points {
		if !(pt.Intensity > 0) || !(pt.FLOPS > 0) || math.IsInf(pt.Intensity, 0) || math.IsInf(pt.FLOPS, 0) {
			return nil, fmt.Errorf("point %q: intensity %g and rate %g must be above 0 on logarithmic axes", pt.Label, pt.Intensity, pt.FLOPS)
		}
		lo, hi = math.Min(lo, pt.Intensity), math.Max(hi, pt.Intensity)
		ylo = math.Min(ylo, pt.FLOPS)
	}
	lo, hi = lo/4, hi*4
	ylo = math.Min(ylo, c.Attainable(lo)) / 2
	const tera = 1e12
	p := plot.New()
	p.Title.Text = f.Title
	p.X.Label.Text = f.XLabel
	if p.X.Label.Text == "" {
		p.X.Label.Text = "arithmetic intensity (FLOP/byte, least HBM bytes)"
	}
	p.Y.Label.Text = "attainable and achieved (TFLOP/s)"
	p.Add(plotter.NewGrid())
	roof, err := plotter.NewLine(plotter.XYs{{X: lg(lo), Y: lg(c.Attainable(lo) / tera)}, {X: lg(c.Ridge()), Y: lg(c.PeakFLOPS / tera)}, {X: lg(hi), Y: lg(c.PeakFLOPS / tera)}})
	if err != nil {
		return nil, err
	}
	roof.Width = vg.Points(2)
	roof.Color = palette10[0]
	p.Add(roof)
	p.Legend.Add("roofline: the lower of the peak and bandwidth x intensity", roof)
	if c.PeakLabel != "" || c.MemoryLabel != "" {
		p.Title.Text += "\npeak: " + c.PeakLabel + "; memory: " + c.MemoryLabel
	}
	// The two ceilings' figures, written along them: the peak above its
	// line at the right end, the bandwidth above the slope (where no op
	// can be), ending half way up it or far enough from the left edge to
	// fit (about 140 points of text in the data area's width).
	perPoint := (lg(hi) - lg(lo)) / (rooflineSize().X.Points() - 70)
	mid := math.Min(math.Max(math.Sqrt(lo*c.Ridge()), lo*math.Pow(10, 140*perPoint)), c.Ridge())
	for _, n := range []struct {
		at     plotter.XY
		text   string
		xa     draw.XAlignment
		ya     draw.YAlignment
		offset vg.Point
	}{
		{plotter.XY{X: lg(hi), Y: lg(c.PeakFLOPS / tera)}, fmt.Sprintf("peak %s", rate(c.PeakFLOPS)), draw.XRight, draw.YBottom, vg.Point{X: vg.Points(-3), Y: vg.Points(4)}},
		{plotter.XY{X: lg(mid), Y: lg(c.Attainable(mid) / tera)}, fmt.Sprintf("%s x intensity", bandwidth(c.BytesPerS)), draw.XRight, draw.YBottom, vg.Point{X: vg.Points(-8), Y: vg.Points(2)}},
	} {
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: []plotter.XY{n.at}, Labels: []string{n.text}})
		if err != nil {
			return nil, err
		}
		l.TextStyle[0].Font.Size = vg.Points(8)
		l.TextStyle[0].Color = palette10[0]
		l.TextStyle[0].XAlign, l.TextStyle[0].YAlign = n.xa, n.ya
		l.Offset = n.offset
		p.Add(l)
	}
	var xy plotter.XYs
	var labels []string
	for _, pt := range points {
		xy = append(xy, plotter.XY{X: lg(pt.Intensity), Y: lg(pt.FLOPS / tera)})
		labels = append(labels, pt.Label)
	}
	sc, err := plotter.NewScatter(xy)
	if err != nil {
		return nil, err
	}
	sc.Color = palette10[3]
	sc.Shape = draw.CircleGlyph{}
	sc.Radius = vg.Points(3)
	p.Add(sc)
	if pointsLabel == "" {
		pointsLabel = fmt.Sprintf("ops: FLOPs / their time (%d)", len(points))
	}
	p.Legend.Add(pointsLabel, sc)
	p.X.Min, p.X.Max = lg(lo), lg(hi)
	p.Y.Min, p.Y.Max = lg(ylo/tera), lg(c.PeakFLOPS/tera*1.8)
	if err := addPointLabels(p, rooflineSize(), xy, labels, nil); err != nil {
		return nil, err
	}
	logAxis(&p.X)
	logAxis(&p.Y)
	// Above the memory slope, top left, no op can reach.
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(4)
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Title.TextStyle.Font.Size = vg.Points(10)
	return p, nil
}

// rate prints a FLOP/s figure in TFLOP/s or GFLOP/s.
func rate(flops float64) string {
	if flops >= 1e12 {
		return fmt.Sprintf("%.4g TFLOP/s", flops/1e12)
	}
	return fmt.Sprintf("%.4g GFLOP/s", flops/1e9)
}

// bandwidth prints a byte rate in TB/s or GB/s.
func bandwidth(b float64) string {
	if b >= 1e12 {
		return fmt.Sprintf("%.3g TB/s", b/1e12)
	}
	return fmt.Sprintf("%.4g GB/s", b/1e9)
}

package plots

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// The figures with logarithmic axes here (rooflines, predicted against
// measured) plot log10 of their values on linear axes and label the ticks
// with the values: gonum's own log scale places the axis labels' glyph
// boxes at the arithmetic middle of the range, which on a log axis pads
// the data area by half of it.

// lg is log10, the coordinate a value is drawn at.
func lg(v float64) float64 { return math.Log10(v) }

// log10Ticks labels an axis drawn in log10 units at each power of ten as a
// plain number (0.01, 1, 1000; 1e+06 beyond), and at 2 and 5 times each
// when the axis spans less than two decades, with unlabelled minor ticks
// at the other multiples; an axis with fewer than two labels gets its ends
// labelled too, so it never reads without a number.
type log10Ticks struct{}

func (log10Ticks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	var out []plot.Tick
	labelled := 0
	// Over less than two decades 2 and 5 times each are labelled too.
	few := hi-lo < 2
	for e := math.Floor(lo); e <= math.Ceil(hi); e++ {
		for k := 1.0; k <= 9; k++ {
			v := e + math.Log10(k)
			if v < lo-1e-9 || v > hi+1e-9 {
				continue
			}
			t := plot.Tick{Value: v}
			if k == 1 || few && (k == 2 || k == 5) {
				t.Label = tickNumber(k * math.Pow(10, e))
				labelled++
			}
			out = append(out, t)
		}
	}
	if labelled < 2 {
		out = append(out, plot.Tick{Value: lo, Label: tickNumber(math.Pow(10, lo))}, plot.Tick{Value: hi, Label: tickNumber(math.Pow(10, hi))})
	}
	return out
}

// tickNumber prints a tick's value: whole numbers up to a million in full,
// fractions to three significant digits, the rest in exponent form.
func tickNumber(v float64) string {
	if v >= 1 && v < 1e6 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	if v >= 1e-3 && v < 1 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(v, 'g', 2, 64)
}

// logAxis labels an axis whose values are drawn as their log10.
func logAxis(a *plot.Axis) { a.Tick.Marker = log10Ticks{} }

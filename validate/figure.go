package validate

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/trnsim/trnsim/plots"
)

// quantity is what a row's unit measures, in the unit a figure draws it:
// times in seconds, byte counts in GB, rates of bytes in GB/s; any other
// unit is a quantity of its own.
type quantity struct {
	key, name, unit string
	scale           float64 // from the row's unit
}

// quantityOf returns the quantity of a unit.
func quantityOf(unit string) quantity {
	switch unit {
	case "s", "ms", "us", "µs", "ns":
		s := map[string]float64{"s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}[unit]
		return quantity{"time", "time", "s", s}
	case "GB", "MB", "KB":
		return quantity{"bytes", "bytes", "GB", map[string]float64{"GB": 1, "MB": 1e-3, "KB": 1e-6}[unit]}
	case "GB/s", "TB/s":
		return quantity{"bandwidth", "bandwidth", "GB/s", map[string]float64{"GB/s": 1, "TB/s": 1e3}[unit]}
	case "%":
		return quantity{"pct", "percentages", "%", 1}
	}
	key := strings.Trim(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return '-'
	}, unit), "-")
	if key == "" {
		key = "other"
	}
	return quantity{key, unit, unit, 1}
}

// FigureChecks groups the rows that have a measured figure by quantity
// (figure key to its checks, each in the quantity's unit, and the
// quantity's name and unit): a range row's tolerance is its interval's
// half width over its middle; a row without a target is reported only.
// Rows whose figures are not above 0 cannot be drawn on log axes and are
// left out.
func FigureChecks(rows []Row) (map[string][]plots.Check, map[string][2]string) {
	checks := map[string][]plots.Check{}
	names := map[string][2]string{}
	for _, r := range rows {
		if !(r.Measured > 0) || !(r.Predicted > 0) {
			continue
		}
		q := quantityOf(r.Unit)
		c := plots.Check{Label: r.ID, Measured: r.Measured * q.scale, Predicted: r.Predicted * q.scale, TolerancePct: r.TargetPct,
			Miss: r.Pass != nil && !*r.Pass}
		if len(r.Range) == 2 && r.Range[0]+r.Range[1] > 0 {
			c.TolerancePct = 100 * (r.Range[1] - r.Range[0]) / (r.Range[0] + r.Range[1])
		}
		checks[q.key] = append(checks[q.key], c)
		names[q.key] = [2]string{q.name, q.unit}
	}
	if cs := checks["time"]; len(cs) > 0 {
		unit, scale := timeUnit(cs)
		for i := range cs {
			cs[i].Measured *= scale
			cs[i].Predicted *= scale
		}
		names["time"] = [2]string{"time", unit}
	}
	return checks, names
}

// timeUnit is the unit the time figure reads best in: the one in which the
// geometric mean of the measured times lies between 1 and 1000.
func timeUnit(cs []plots.Check) (string, float64) {
	logSum := 0.0
	for _, c := range cs {
		logSum += math.Log10(c.Measured)
	}
	mean := math.Pow(10, logSum/float64(len(cs)))
	switch {
	case mean >= 1:
		return "s", 1
	case mean >= 1e-3:
		return "ms", 1e3
	case mean >= 1e-6:
		return "µs", 1e6
	}
	return "ns", 1e9
}

// WriteFigures draws predicted against measured for the rows, a figure
// per quantity (validation-time, validation-tflops, ...), in each format
// given, into dir; it returns the files written.
func WriteFigures(dir string, rows []Row, formats []string) ([]string, error) {
	checks, names := FigureChecks(rows)
	if len(checks) == 0 {
		return nil, fmt.Errorf("no validation row with a measured figure to draw")
	}
	var keys []string
	for k := range checks {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var files []string
	for _, k := range keys {
		cs := checks[k]
		miss := 0
		for _, c := range cs {
			if c.Miss {
				miss++
			}
		}
		name, unit := names[k][0], names[k][1]
		f := plots.Figure{Title: fmt.Sprintf("Validation, predicted against measured: %s\n(%d rows, %d miss their target)", name, len(cs), miss),
			XLabel: fmt.Sprintf("measured (%s)", unit), YLabel: fmt.Sprintf("predicted (%s)", unit)}
		for _, ext := range formats {
			path := filepath.Join(dir, "validation-"+k+"."+ext)
			if err := plots.PredictedMeasured(path, f, cs); err != nil {
				return files, fmt.Errorf("%s: %w", path, err)
			}
			files = append(files, path)
		}
	}
	return files, nil
}

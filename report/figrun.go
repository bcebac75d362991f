package report

import (
	"fmt"
	"strings"

	"github.com/trnsim/trnsim/plots"
)

// what names the run in a figure's title: the workload and the hardware.
func (r *Report) what() string {
	if m := r.Model; m != nil {
		return fmt.Sprintf("%s %s, batch %d", m.Model, m.Mode, m.Batch)
	}
	return r.Workload
}

// writeRooflines draws a roofline per device of the report (the Trainium
// cores, each GPU baseline) with the ops that can be placed on it.
func (r *Report) writeRooflines(w *figureWriter) error {
	for _, d := range r.Roofline {
		if len(d.Points) == 0 {
			continue
		}
		var pts []plots.RooflinePoint
		for _, p := range d.Points {
			label := p.Name
			if !d.ByKind {
				label = shortOp(p.Name)
			}
			pts = append(pts, plots.RooflinePoint{Label: label, Intensity: p.Intensity, FLOPS: p.FLOPS})
		}
		title := fmt.Sprintf("Roofline, %s: %s", d.Device, r.what())
		what := fmt.Sprintf("ops: FLOPs / their time (%d)", len(pts))
		if d.ByKind {
			n := 0
			for _, p := range d.Points {
				n += p.Ops
			}
			what = fmt.Sprintf("ops by kind: FLOPs / their time (%d ops)", n)
		}
		if d.LeftOut > 0 {
			what += fmt.Sprintf("; %d without FLOPs left out", d.LeftOut)
		}
		xLabel := ""
		for _, p := range d.Points {
			if p.BytesMoved {
				xLabel = "arithmetic intensity (FLOP/byte, the HBM bytes it moved)"
			}
		}
		c := plots.Ceiling{PeakFLOPS: d.PeakFLOPS, BytesPerS: d.HBMBytesPerS, PeakLabel: d.PeakSource, MemoryLabel: d.HBMSource}
		if err := w.draw("roofline-"+d.Key, func(path string) error {
			return plots.Roofline(path, plots.Figure{Title: title, XLabel: xLabel}, c, pts, what)
		}); err != nil {
			return err
		}
	}
	return nil
}

// writeStalls draws the stall breakdown: per engine, busy, each stall
// cause, idle and what is left, as shares of the simulated time.
func (r *Report) writeStalls(w *figureWriter) error {
	shares := r.Shares()
	if len(shares) == 0 || r.SimulatedTimeS <= 0 {
		return nil
	}
	causes := StallCauses(shares)
	throttled := false
	for _, s := range shares {
		throttled = throttled || s.ThrottledPct > 0
	}
	var groups []string
	series := []plots.BarSeries{{Label: "busy"}}
	if throttled {
		series = append(series, plots.BarSeries{Label: "busy, added by the power ramp"})
	}
	first := len(series)
	for _, c := range causes {
		series = append(series, plots.BarSeries{Label: strings.ReplaceAll(c, "_", " ") + " stall"})
	}
	series = append(series, plots.BarSeries{Label: "idle"}, plots.BarSeries{Label: "unaccounted"})
	for _, s := range shares {
		groups = append(groups, s.Engine)
		series[0].Values = append(series[0].Values, s.BusyPct-s.ThrottledPct)
		if throttled {
			series[1].Values = append(series[1].Values, s.ThrottledPct)
		}
		for i, c := range causes {
			series[first+i].Values = append(series[first+i].Values, s.StallPct[c])
		}
		n := len(series)
		series[n-2].Values = append(series[n-2].Values, s.IdlePct)
		series[n-1].Values = append(series[n-1].Values, s.UnaccountedPct)
	}
	overlap := 0.0
	for _, s := range shares {
		overlap = max(overlap, s.OverlapPct)
	}
	cores := ""
	if overlap >= 0.005 {
		cores = fmt.Sprintf("\n(stalls overlapping busy time by up to %.2f%% of the run are scaled to fit)", overlap)
	}
	if r.CoresUsed > 1 {
		cores = fmt.Sprintf(", the mean of %d cores", r.CoresUsed) + cores
	}
	f := plots.Figure{Title: fmt.Sprintf("Where each engine's time went: %s on %s%s", r.what(), r.Hardware, cores),
		XLabel: "engine", YLabel: fmt.Sprintf("share of the simulated %s (%%)", fmtSeconds(r.SimulatedTimeS))}
	return w.draw("stalls", func(path string) error { return plots.StackedPercent(path, f, groups, series) })
}

// writeTimeline draws the engine timeline's window, when the report has
// one.
func (r *Report) writeTimeline(w *figureWriter) error {
	t := r.Timeline
	if t == nil || len(t.Rows) == 0 {
		return nil
	}
	var rows []plots.TimelineRow
	for _, row := range t.Rows {
		pr := plots.TimelineRow{Name: row.Name}
		for _, b := range row.Bars {
			pr.Intervals = append(pr.Intervals, plots.Interval{Start: b.S * 1e6, End: b.E * 1e6, Class: b.C})
		}
		rows = append(rows, pr)
	}
	from := "0"
	if t.FromS > 0 {
		from = fmtSeconds(t.FromS)
	}
	span := fmt.Sprintf("%s to %s of %s", from, fmtSeconds(t.ToS), fmtSeconds(r.SimulatedTimeS))
	f := plots.Figure{Title: fmt.Sprintf("Engine timeline, chip %d core %d: %s\n%s (%s), coloured by %s", t.Chip, t.Core, r.what(), span, t.Window, t.ColourBy),
		XLabel: "simulated time (µs)"}
	return w.draw("timeline", func(path string) error { return plots.Timeline(path, f, t.FromS*1e6, t.ToS*1e6, rows, t.Classes) })
}

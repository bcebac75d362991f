package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trnsim/trnsim/plots"
	"github.com/trnsim/trnsim/sweep"
)

// plotRequest is what `trnsim plot` was asked to draw.
type plotRequest struct {
	dir, x, y, heat, out    string
	fix                     []string
	pareto, logX, logY      bool
	betterX, betterY        string
	fixed                   map[string]string
	yScale                  float64 // seconds are drawn in µs or ms
	yUnit                   string
	maxLines                int
	rows                    []sweep.Row
	axisOrder               []string
	xIsMetric, yIsAxisValue bool
}

func newPlotCmd(stdout io.Writer) *cobra.Command {
	r := &plotRequest{maxLines: 10}
	var format string
	cmd := &cobra.Command{
		Use:   "plot DIR --x AXIS --y METRIC --out FILE.png|svg | plot RESULTS.json [--out DIR]",
		Short: "Draw a sweep's results (a metric against an axis, a heat map, a Pareto front), or redraw a run's figures from its results.json",
		Long: `trnsim plot RESULTS.json [--out DIR] redraws a run's figures (rooflines, stall
breakdown, engine timeline, and for models the GPU comparison) from the
results.json that trnsim run --json wrote, into DIR (default: the file's
folder), in the formats of --plot-format. The engine timeline needs a
results.json written by a run with --plots.

trnsim plot DIR draws a sweep's results (the folder trnsim sweep --out wrote)
as PNG or SVG.

  --x AXIS --y METRIC                 a line per combination of the other axes
  --x AXIS --heat AXIS2 --y METRIC    a heat map over two axes, each cell labelled
  --x A --y B --pareto                every point, and the front of the points no
                                      other beats on both (lower x, higher y by
                                      default; --better-x and --better-y change it);
                                      A and B may be axes or metrics

--fix AXIS=VALUE keeps only the points with that value (repeatable). Metrics
are the keys of results.jsonl's "metrics" (simulated_time_s, tflops, peak_pct,
dma_compute_overlap_pct, ...); axes are the sweep's config paths. Failed points are
left out.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if results, err := isResultsFile(args[0]); err != nil {
				return err
			} else if results {
				return plotResults(cmd, args[0], r.out, format, stdout)
			}
			r.dir = args[0]
			if r.x == "" || r.y == "" || r.out == "" {
				return fmt.Errorf("--x, --y and --out are required")
			}
			if err := r.load(); err != nil {
				return err
			}
			var err error
			switch {
			case r.pareto && r.heat != "":
				return fmt.Errorf("--pareto and --heat draw different figures: give one")
			case r.pareto:
				err = r.drawPareto()
			case r.heat != "":
				err = r.drawHeat()
			default:
				err = r.drawLines()
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "wrote %s\n", r.out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&r.x, "x", "", "the axis on the x axis (a config path of the sweep; with --pareto, an axis or a metric)")
	f.StringVar(&r.y, "y", "", "the metric (a key of results.jsonl's metrics, e.g. simulated_time_s, tflops, peak_pct)")
	f.StringVar(&r.heat, "heat", "", "a second axis: draw a heat map over --x and it")
	f.BoolVar(&r.pareto, "pareto", false, "draw every point of --x against --y and their Pareto front")
	f.StringVar(&r.betterX, "better-x", "lower", "with --pareto: which x is better, lower (a cost) or higher")
	f.StringVar(&r.betterY, "better-y", "higher", "with --pareto: which y is better, higher (a throughput) or lower")
	f.BoolVar(&r.logX, "log-x", false, "a logarithmic x axis")
	f.BoolVar(&r.logY, "log-y", false, "a logarithmic y axis")
	f.StringArrayVar(&r.fix, "fix", nil, "AXIS=VALUE: keep only the points with that value (repeatable)")
	f.StringVar(&r.out, "out", "", "the figure: .png or .svg (for a results.json: the folder of the figures)")
	f.StringVar(&format, "plot-format", "png,svg", "for a results.json: the figures' `FORMATS`, png, svg or png,svg")
	return cmd
}

// load reads the sweep's finished points that match --fix and checks that
// the names asked for are there.
func (r *plotRequest) load() error {
	all, err := sweep.ReadRows(r.dir)
	if err != nil {
		return err
	}
	if len(all) == 0 {
		return fmt.Errorf("%s: the sweep has no points yet", r.dir)
	}
	r.axisOrder = axisNames(all[0])
	r.fixed = map[string]string{}
	for _, f := range r.fix {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return fmt.Errorf("--fix %s: give AXIS=VALUE", f)
		}
		if _, ok := all[0].Axes[k]; !ok {
			return fmt.Errorf("--fix %s: not an axis of the sweep (axes: %s)", k, strings.Join(r.axisOrder, ", "))
		}
		r.fixed[k] = v
	}
	for _, row := range all {
		if row.Status != "ok" {
			continue
		}
		match := true
		for k, v := range r.fixed {
			if row.Axes[k] != v {
				match = false
			}
		}
		if match {
			r.rows = append(r.rows, row)
		}
	}
	if len(r.rows) == 0 {
		return fmt.Errorf("%s: no finished point matches", r.dir)
	}
	first := r.rows[0]
	if _, ok := first.Axes[r.x]; !ok {
		if _, metric := first.Metrics[r.x].(float64); !(r.pareto && metric) {
			if r.pareto {
				return fmt.Errorf("--x %s: neither an axis of the sweep (axes: %s) nor a numeric metric", r.x, strings.Join(r.axisOrder, ", "))
			}
			return fmt.Errorf("--x %s: not an axis of the sweep (axes: %s)", r.x, strings.Join(r.axisOrder, ", "))
		}
		r.xIsMetric = true
	}
	if _, ok := first.Metrics[r.y].(float64); !ok {
		if _, axis := first.Axes[r.y]; r.pareto && axis {
			r.yIsAxisValue = true
		} else if _, there := first.Metrics[r.y]; there {
			return fmt.Errorf("--y %s: not a numeric metric", r.y)
		} else {
			return fmt.Errorf("--y %s: not a metric of the results (for example simulated_time_s, tflops, peak_pct, dma_compute_overlap_pct)", r.y)
		}
	}
	if r.heat != "" {
		if _, ok := first.Axes[r.heat]; !ok {
			return fmt.Errorf("--heat %s: not an axis of the sweep (axes: %s)", r.heat, strings.Join(r.axisOrder, ", "))
		}
	}
	for _, b := range []struct{ flag, v string }{{"--better-x", r.betterX}, {"--better-y", r.betterY}} {
		if b.v != "lower" && b.v != "higher" {
			return fmt.Errorf("%s %s: give lower or higher", b.flag, b.v)
		}
	}
	// Seconds are drawn in the unit their largest value reads best in.
	r.yScale = 1
	if isSeconds(r.y) && !r.yIsAxisValue {
		hi := 0.0
		for _, row := range r.rows {
			v, _ := row.Metrics[r.y].(float64)
			hi = math.Max(hi, v)
		}
		switch {
		case hi < 1e-3:
			r.yScale, r.yUnit = 1e6, "µs"
		case hi < 1:
			r.yScale, r.yUnit = 1e3, "ms"
		}
	}
	return nil
}

// axisValue is a point's value of an axis, as a number.
func axisValue(row sweep.Row, axis string) (float64, error) {
	v, err := strconv.ParseFloat(row.Axes[axis], 64)
	if err != nil {
		return 0, fmt.Errorf("axis %s: value %q is not a number; put a numeric axis on --x or --heat (the other axes become lines)", axis, row.Axes[axis])
	}
	return v, nil
}

func (r *plotRequest) xValue(row sweep.Row) (float64, error) {
	if r.xIsMetric {
		v, _ := row.Metrics[r.x].(float64)
		return v, nil
	}
	return axisValue(row, r.x)
}

func (r *plotRequest) yValue(row sweep.Row) (float64, error) {
	if r.yIsAxisValue {
		return axisValue(row, r.y)
	}
	v, _ := row.Metrics[r.y].(float64)
	return v * r.yScale, nil
}

func (r *plotRequest) figure(xLabel string) plots.Figure {
	yLabel := label(r.y)
	if r.yUnit != "" {
		yLabel = strings.TrimSuffix(yLabel, "(s)") + "(" + r.yUnit + ")"
	}
	var parts []string
	for k, v := range r.fixed {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	t := "sweep " + r.dir
	if len(parts) > 0 {
		t += " (" + strings.Join(parts, ", ") + ")"
	}
	return plots.Figure{Title: t, XLabel: xLabel, YLabel: yLabel, LogX: r.logX, LogY: r.logY}
}

// others names a point by the axes that are neither drawn nor fixed.
func (r *plotRequest) others(row sweep.Row, drawn ...string) string {
	var parts []string
	for _, a := range r.axisOrder {
		if _, fixed := r.fixed[a]; fixed || contains(drawn, a) {
			continue
		}
		parts = append(parts, a+"="+row.Axes[a])
	}
	return strings.Join(parts, " ")
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// drawLines draws the metric against the x axis, a line per combination
// of the other axes.
func (r *plotRequest) drawLines() error {
	lines := map[string]*plots.Series{}
	var order []string
	for _, row := range r.rows {
		key := r.legendLabel(r.others(row, r.x))
		s := lines[key]
		if s == nil {
			s = &plots.Series{Label: key}
			lines[key] = s
			order = append(order, key)
		}
		xv, err := r.xValue(row)
		if err != nil {
			return err
		}
		yv, _ := r.yValue(row)
		s.X, s.Y = append(s.X, xv), append(s.Y, yv)
	}
	if len(order) > r.maxLines {
		return fmt.Errorf("%d lines: fix some axes with --fix AXIS=VALUE (at most %d lines)", len(order), r.maxLines)
	}
	var series []plots.Series
	for _, k := range order {
		s := lines[k]
		idx := make([]int, len(s.X))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return s.X[idx[a]] < s.X[idx[b]] })
		sorted := plots.Series{Label: s.Label}
		for _, i := range idx {
			sorted.X, sorted.Y = append(sorted.X, s.X[i]), append(sorted.Y, s.Y[i])
		}
		series = append(series, sorted)
	}
	return plots.Line(r.out, r.figure(axisLabel(r.x)), series)
}

// drawHeat draws the metric over the x and heat axes.
func (r *plotRequest) drawHeat() error {
	var xs, ys []float64
	cell := map[[2]float64]float64{}
	for _, row := range r.rows {
		xv, err := axisValue(row, r.x)
		if err != nil {
			return err
		}
		yv, err := axisValue(row, r.heat)
		if err != nil {
			return err
		}
		k := [2]float64{xv, yv}
		if _, dup := cell[k]; dup {
			return fmt.Errorf("several points at %s=%s %s=%s (%s): fix the other axes with --fix", r.x, row.Axes[r.x], r.heat, row.Axes[r.heat], r.others(row, r.x, r.heat))
		}
		cell[k], _ = r.yValue(row)
		xs, ys = append(xs, xv), append(ys, yv)
	}
	xs, ys = plots.SortedFloats(xs), plots.SortedFloats(ys)
	z := make([][]float64, len(ys))
	for j, yv := range ys {
		z[j] = make([]float64, len(xs))
		for i, xv := range xs {
			v, ok := cell[[2]float64{xv, yv}]
			if !ok {
				v = math.NaN()
			}
			z[j][i] = v
		}
	}
	f := r.figure(axisLabel(r.x))
	zLabel := f.YLabel
	f.YLabel = axisLabel(r.heat)
	return plots.Heat(r.out, f, zLabel, xs, ys, z)
}

// drawPareto draws every point and the front, each point of the front
// labelled with the axes that are not drawn.
func (r *plotRequest) drawPareto() error {
	var pts []plots.Point
	for _, row := range r.rows {
		xv, err := r.xValue(row)
		if err != nil {
			return err
		}
		yv, err := r.yValue(row)
		if err != nil {
			return err
		}
		pts = append(pts, plots.Point{X: xv, Y: yv, Label: r.legendLabel(r.others(row, r.x, r.y))})
	}
	xLabel := axisLabel(r.x)
	if r.xIsMetric {
		xLabel = label(r.x)
	}
	f := r.figure(xLabel)
	if r.yIsAxisValue {
		f.YLabel = axisLabel(r.y)
	}
	return plots.Pareto(r.out, f, pts, r.betterX == "lower", r.betterY == "higher")
}

// legendLabel drops the sections of the axes' dotted paths when their
// last names tell them apart: "hardware.core.sbuf.partition_kib=192"
// reads "partition_kib=192".
func (r *plotRequest) legendLabel(s string) string {
	last := func(k string) string { return k[strings.LastIndex(k, ".")+1:] }
	seen := map[string]bool{}
	for _, a := range r.axisOrder {
		if seen[last(a)] {
			return s
		}
		seen[last(a)] = true
	}
	parts := strings.Fields(s)
	for i, p := range parts {
		k, v, _ := strings.Cut(p, "=")
		parts[i] = last(k) + "=" + v
	}
	return strings.Join(parts, " ")
}

func axisNames(r sweep.Row) []string {
	var out []string
	for k := range r.Axes {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// isSeconds reports whether a metric is a time in seconds (_s, not a rate
// per second).
func isSeconds(metric string) bool {
	return strings.HasSuffix(metric, "_s") && !strings.HasSuffix(metric, "_per_s")
}

// label names a metric with its unit.
func label(metric string) string {
	words := func(s string) string { return strings.ReplaceAll(s, "_", " ") }
	switch {
	case strings.HasSuffix(metric, "_per_s"):
		return words(strings.TrimSuffix(metric, "_per_s")) + " per second (1/s)"
	case strings.Contains(metric, "usd_per_million_tokens"):
		return words(strings.Replace(metric, "usd_per_million_tokens", "cost per million tokens", 1)) + " (USD)"
	case strings.HasSuffix(metric, "_pct"):
		return strings.ReplaceAll(strings.TrimSuffix(metric, "_pct"), "_", " ") + " (%)"
	case isSeconds(metric):
		return strings.ReplaceAll(strings.TrimSuffix(metric, "_s"), "_", " ") + " (s)"
	case strings.HasSuffix(metric, "_bytes"):
		return strings.ReplaceAll(strings.TrimSuffix(metric, "_bytes"), "_", " ") + " (bytes)"
	case metric == "tflops":
		return "throughput (TFLOPS)"
	}
	return metric
}

// axisLabel names a config path with its unit, from the field's suffix.
func axisLabel(path string) string {
	units := []struct{ suffix, unit string }{{"_kib", "KiB"}, {"_gbps", "GB/s"}, {"_ghz", "GHz"}, {"_ns", "ns"}, {"_us", "µs"}, {"_bytes", "bytes"}, {"_pct", "%"}}
	for _, u := range units {
		if strings.HasSuffix(path, u.suffix) {
			return path + " (" + u.unit + ")"
		}
	}
	return path
}

package report

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"

	"github.com/trnsim/trnsim/plots"
	"github.com/trnsim/trnsim/workloads/zoo"
)

// DefaultFigureFormats returns the formats the run figures are written
// in when none is asked for: PNG and SVG.
func DefaultFigureFormats() []string { return []string{"png", "svg"} }

// figureWriter writes each figure in every format asked for and lists
// the files.
type figureWriter struct {
	dir     string
	formats []string
	files   []string
}

// draw writes the figure name (without extension) in each format with fn.
func (w *figureWriter) draw(name string, fn func(path string) error) error {
	for _, f := range w.formats {
		path := filepath.Join(w.dir, name+"."+f)
		if err := fn(path); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		w.files = append(w.files, path)
	}
	return nil
}

// WriteFigures draws the run's figures into dir, each in every format
// given (none: DefaultFigureFormats): for every run the roofline of the
// Trainium cores used with the ops on it, the stall breakdown per engine
// and, when the report has one, the engine timeline's window; for a model
// run with GPU baselines also each GPU's roofline, the cost per million
// tokens and the throughput against each baseline, and the longest ops'
// time on each. It returns the files written.
func (r *Report) WriteFigures(dir string, formats ...string) ([]string, error) {
	if len(formats) == 0 {
		formats = DefaultFigureFormats()
	}
	w := &figureWriter{dir: dir, formats: formats}
	for _, step := range []func(*figureWriter) error{r.writeComparison, r.writeRooflines, r.writeStalls, r.writeTimeline} {
		if err := step(w); err != nil {
			return w.files, err
		}
	}
	return w.files, nil
}

// longestOps returns the ops figure's data: the n longest ops on Trainium
// that every GPU baseline has an estimate of (compareOps), longest first,
// and a series of their times (µs) for Trainium and for each GPU.
func (r *Report) longestOps(n int) ([]string, []plots.BarSeries) {
	ops := append([]OpReport(nil), r.Ops...)
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].TimeS > ops[j].TimeS })
	var groups []string
	series := []plots.BarSeries{{Label: r.trainiumName()}}
	for _, g := range r.GPU {
		series = append(series, plots.BarSeries{Label: g.Title})
	}
	for _, o := range ops {
		if len(groups) == n || o.TimeS <= 0 {
			break
		}
		gpuT := make([]float64, len(r.GPU))
		for gi, g := range r.GPU {
			for _, e := range o.GPU {
				if e.GPU == g.GPU {
					gpuT[gi] = e.TimeS * 1e6
				}
			}
		}
		if slices.ContainsFunc(gpuT, func(t float64) bool { return t <= 0 }) {
			continue // an op some GPU has no kernel for
		}
		groups = append(groups, shortOp(o.Name))
		series[0].Values = append(series[0].Values, o.TimeS/r.opSteps()*1e6)
		for i, t := range gpuT {
			series[i+1].Values = append(series[i+1].Values, t)
		}
	}
	return groups, series
}

// writeComparison draws a model run's bars against its GPU baselines:
// throughput, cost per million tokens (when every option has a price) and
// the longest ops on each.
func (r *Report) writeComparison(w *figureWriter) error {
	m := r.Model
	if m == nil || len(r.GPU) == 0 {
		return nil
	}
	trn := r.trainiumName()
	names := []string{trn}
	tput := []float64{m.TokensPerS}
	costs := []float64{m.USDPerMillionTokens}
	for _, g := range r.GPU {
		names = append(names, g.Title)
		tput = append(tput, g.TokensPerS)
		costs = append(costs, g.USDPerMillionTokens)
	}
	what := fmt.Sprintf("%s %s, batch %d", m.Model, m.Mode, m.Batch)
	bars := func(name string, f plots.Figure, groups []string, series []plots.BarSeries) error {
		return w.draw(name, func(path string) error { return plots.Bars(path, f, groups, series) })
	}
	if err := bars("throughput", plots.Figure{Title: "Throughput: " + what, YLabel: "tokens/s"}, names,
		[]plots.BarSeries{{Label: "tokens/s", Values: tput}}); err != nil {
		return err
	}
	if costs[0] > 0 {
		ok := true
		for _, c := range costs {
			ok = ok && c > 0
		}
		if ok {
			if err := bars("cost", plots.Figure{Title: "Cost: " + what, YLabel: "USD per million tokens"}, names,
				[]plots.BarSeries{{Label: "USD per million tokens", Values: costs}}); err != nil {
				return err
			}
		}
	}
	groups, series := r.longestOps(6)
	if len(groups) > 0 {
		if err := bars("ops", plots.Figure{Title: "The longest ops on Trainium, and on the GPUs: " + what, YLabel: "time (µs)"}, groups, series); err != nil {
			return err
		}
	}
	return nil
}

// shortOp names an op by its layer and its last two parts
// (L0 self_attn.q_proj).
func shortOp(name string) string {
	short := name
	dots := 0
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '.' {
			dots++
			if dots == 2 {
				short = name[i+1:]
				break
			}
		}
	}
	if l, ok := zoo.LayerOf(name); ok {
		return fmt.Sprintf("L%d %s", l, short)
	}
	return short
}

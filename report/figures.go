package report

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/trnsim/trnsim/plots"
	"github.com/trnsim/trnsim/workloads/zoo"
)

// WriteFigures draws a model run's comparison figures into dir: the cost
// per million tokens and the throughput of the NeuronCores used against
// each GPU baseline, and the longest ops' time on each. It returns the
// files written (none for a run without a model or GPU baselines).
func (r *Report) WriteFigures(dir string) ([]string, error) {
	m := r.Model
	if m == nil || len(r.GPU) == 0 {
		return nil, nil
	}
	trn := fmt.Sprintf("%s (%d NeuronCore)", r.Hardware, max(r.CoresUsed, 1))
	if r.CoresUsed > 1 {
		trn += "s"
	}
	names := []string{trn}
	tput := []float64{m.TokensPerS}
	costs := []float64{m.USDPerMillionTokens}
	for _, g := range r.GPU {
		names = append(names, g.Title)
		tput = append(tput, g.TokensPerS)
		costs = append(costs, g.USDPerMillionTokens)
	}
	what := fmt.Sprintf("%s %s, batch %d", m.Model, m.Mode, m.Batch)
	var files []string
	draw := func(name string, f plots.Figure, groups []string, series []plots.BarSeries) error {
		path := filepath.Join(dir, name)
		if err := plots.Bars(path, f, groups, series); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		files = append(files, path)
		return nil
	}
	if err := draw("throughput.png", plots.Figure{Title: "Throughput: " + what, YLabel: "tokens/s"}, names,
		[]plots.BarSeries{{Label: "tokens/s", Values: tput}}); err != nil {
		return nil, err
	}
	if costs[0] > 0 {
		ok := true
		for _, c := range costs {
			ok = ok && c > 0
		}
		if ok {
			if err := draw("cost.png", plots.Figure{Title: "Cost: " + what, YLabel: "USD per million tokens"}, names,
				[]plots.BarSeries{{Label: "USD per million tokens", Values: costs}}); err != nil {
				return nil, err
			}
		}
	}
	// The longest ops on Trainium, and the same ops on each GPU.
	ops := append([]OpReport(nil), r.Ops...)
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].TimeS > ops[j].TimeS })
	var groups []string
	series := []plots.BarSeries{{Label: trn}}
	for _, g := range r.GPU {
		series = append(series, plots.BarSeries{Label: g.Title})
	}
	for _, o := range ops {
		if len(groups) == 6 || o.TimeS <= 0 {
			break
		}
		var gpuT []float64
		for _, g := range r.GPU {
			t := 0.0
			for _, go_ := range g.Ops {
				if go_.Name == o.Name {
					t = go_.TimeS
				}
			}
			gpuT = append(gpuT, t*1e6)
		}
		ok := true
		for _, t := range gpuT {
			ok = ok && t > 0
		}
		if !ok {
			continue
		}
		groups = append(groups, shortOp(o.Name))
		series[0].Values = append(series[0].Values, o.TimeS*1e6)
		for i, t := range gpuT {
			series[i+1].Values = append(series[i+1].Values, t)
		}
	}
	if len(groups) > 0 {
		if err := draw("ops.png", plots.Figure{Title: "The longest ops on Trainium, and on the GPUs: " + what, YLabel: "time (µs)"}, groups, series); err != nil {
			return nil, err
		}
	}
	return files, nil
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

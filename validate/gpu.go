package validate

import (
	"fmt"

	"github.com/trnsim/trnsim/gpu"
	"github.com/trnsim/trnsim/runner"
)

// gpuRows are the GPU baseline's rows: the fitted ones (reproduced by
// construction), its held-out kernel checks, and the model rows.
func gpuRows() ([]Row, error) {
	c := gpu.Default
	var rows []Row
	add := func(r gpu.Row) {
		row := Row{ID: r.ID, Title: r.Title, Metric: "gpu_" + r.Unit, Predicted: r.Predicted, Measured: r.Measured, Unit: r.Unit,
			TargetPct: r.TargetPct, Source: r.Source, Counters: "the GPU baseline model (gpu.Default)"}
		if r.Fitted {
			row.Counters += "; fitted row"
		}
		row.ErrorPct = 100 * (r.Predicted - r.Measured) / r.Measured
		if r.TargetPct > 0 {
			pass := row.ErrorPct <= r.TargetPct && row.ErrorPct >= -r.TargetPct
			row.Pass = &pass
		}
		rows = append(rows, row)
	}
	for _, r := range c.Rows() {
		add(r)
	}
	// gpt-fast's Llama-2-7B decode, batch 1, BF16, on one A100 (its
	// prompt is short: the step at a 128-position cache [I]).
	e, err := runner.GPUDecode("llama-2-7b", "a100-80gb", 1, 128)
	if err != nil {
		return nil, err
	}
	var launch float64
	for _, o := range e.Ops {
		if o.Bound != gpu.BoundNone {
			launch += c.LaunchUs * 1e-6
		}
	}
	add(gpu.Row{ID: "G-A100-LLAMA2-7B-DECODE", Title: "Llama-2-7B decode, batch 1, BF16, one A100 80GB (gpt-fast)", Source: "gpu.md §2.1/§2.6 [S19]: 105.1 tokens/s",
		Unit: "tokens/s", Predicted: 1 / e.TimeS, Measured: 105.1, TargetPct: 25})
	rows[len(rows)-1].Counters = fmt.Sprintf("the GPU baseline model: %.3f ms per token, of it kernel launches %.1f%% (%d kernels)", e.TimeS*1e3, 100*launch/e.TimeS, int(launch/(c.LaunchUs*1e-6)+0.5))
	return rows, nil
}

package validate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/trnsim/trnsim/gpu"
	"github.com/trnsim/trnsim/isa"
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
	launch := e.LaunchS
	add(gpu.Row{ID: "G-A100-LLAMA2-7B-DECODE", Title: "Llama-2-7B decode, batch 1, BF16, one A100 80GB (gpt-fast)", Source: "gpu.md §2.1/§2.6 [S19]: 105.1 tokens/s",
		Unit: "tokens/s", Predicted: 1 / e.TimeS, Measured: 105.1, TargetPct: 25})
	rows[len(rows)-1].Counters = fmt.Sprintf("the GPU baseline model: %.3f ms per token, of it kernel launches %.1f%% (%d kernels)", e.TimeS*1e3, 100*launch/e.TimeS, int(launch/(c.LaunchUs*1e-6)+0.5))

	// NIM's inter-token latency at concurrency 1, 5,000 tokens in and
	// 500 out: the decode step at the mean cache length, 5,000 + 499/2
	// (the step's work grows linearly with its cache). Neither row was
	// used to fit anything.
	past := int64(5000 + (500-1)/2)
	// Llama-3.3-70B FP8 on 2x H100 with TP2: Llama-3.3-70B has
	// Llama-3.1-70B's architecture, which is Llama-3-70B's (80 layers,
	// hidden 8192, 64/8 heads, intermediate 28672, vocab 128256) but for
	// the RoPE scaling and the 131,072-position limit; 5,500 positions
	// fit Llama-3-70B's 8,192, so the zoo's llama-3-70b stands in. FP8
	// weights, BF16 activations and KV cache [I: NIM's KV dtype is not
	// stated].
	e, err = runner.GPUDecodeTP("llama-3-70b", "h100", isa.FP8E4, 2, 1, past)
	if err != nil {
		return nil, err
	}
	add(gpu.Row{ID: "G-NIM-LLAMA33-70B-TP2-ITL", Title: "Llama-3.3-70B FP8 decode, TP2 on 2x H100, concurrency 1, 5000 in / 500 out: inter-token latency (NIM 1.8.0)",
		Source: "gpu.md §2.6 [S34]: ITL 18.58 ms", Unit: "ms", Predicted: e.TimeS * 1e3, Measured: 18.58, TargetPct: 25})
	rows[len(rows)-1].Counters = planCounters(c, e)
	// Llama-3.1-8B (Llama-3-8B's architecture but for the RoPE scaling and
	// the position limit, as above): NIM's page gives no GPU count or precision in the
	// row gpu.md quotes; assumed one H100, FP8, TP1 and the 70B row's
	// lengths [U], so the row is a report, not a target.
	e, err = runner.GPUDecodeTP("llama-3-8b", "h100", isa.FP8E4, 1, 1, past)
	if err != nil {
		return nil, err
	}
	add(gpu.Row{ID: "G-NIM-LLAMA31-8B-ITL", Title: "Llama-3.1-8B decode, concurrency 1: inter-token latency (NIM 1.8.0; assumed one H100, FP8, 5000 in / 500 out [U]; a report)",
		Source: "gpu.md §2.6 [S34]: ITL 4.63 ms", Unit: "ms", Predicted: e.TimeS * 1e3, Measured: 4.63})
	rows[len(rows)-1].Counters = planCounters(c, e)
	return rows, nil
}

// planCounters says what a multi-GPU row's time is made of.
func planCounters(c gpu.Calibration, e *gpu.Estimate) string {
	algs := map[string]int{}
	for _, o := range e.Ops {
		if o.Bound == gpu.BoundNVLink {
			algs[string(o.Algorithm)+"/"+o.Protocol]++
		}
	}
	var parts []string
	for _, a := range slices.Sorted(maps.Keys(algs)) {
		parts = append(parts, fmt.Sprintf("%d %s", algs[a], a))
	}
	comm := "no collectives"
	if len(parts) > 0 {
		comm = fmt.Sprintf("NCCL collectives %.3f ms (%.1f%%: %s)", e.CommS*1e3, 100*e.CommS/e.TimeS, strings.Join(parts, ", "))
	}
	return fmt.Sprintf("the GPU baseline model, one rank's graph: %.3f ms per token, kernel launches %.1f%% (%d kernels), %s", e.TimeS*1e3, 100*e.LaunchS/e.TimeS, int(e.LaunchS/(c.LaunchUs*1e-6)+0.5), comm)
}

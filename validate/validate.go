// Package validate holds trnsim's validation cases — published Trainium
// measurements with their exact shapes and sources, kept as data in
// validate/cases — and runs them: each case is simulated and the predicted
// figure is compared with the measured one. A prediction that beats the
// physical bound (compute at peak, minimal bytes at peak bandwidth) is an
// error, whatever its accuracy.
package validate

import (
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/report"
	"github.com/trnsim/trnsim/runner"
)

//go:embed cases/*.yaml
var casesFS embed.FS

// Case is one validation row.
type Case struct {
	ID     string `yaml:"id"`
	Title  string `yaml:"title"`
	Source string `yaml:"source"`
	// Metric is simulated_time, peak_pct, engine_busy_pct, dma_active_pct,
	// time_per_instruction (of Engine), dma_engine0_active, hbm_read_bytes
	// or hbm_write_bytes (unit GB).
	Metric   string  `yaml:"metric"`
	Engine   string  `yaml:"engine"`
	Measured float64 `yaml:"measured"`
	Unit     string  `yaml:"unit"`
	// TargetPct is the allowed |error| in percent; 0 means reported only.
	TargetPct float64 `yaml:"target_pct"`
	// Range, instead of a target, is a published interval the prediction
	// must fall in ([1, 2] us per hop); Measured is then its middle.
	Range []float64 `yaml:"range"`
	// Steps divides the simulated time for time_per_step (a ring
	// all-reduce over n ranks: 2(n-1)).
	Steps int `yaml:"steps"`
	// Constants are config paths of unknown constants the row depends on:
	// the table shows their values and tags beside the row.
	Constants []string  `yaml:"constants"`
	Fast      bool      `yaml:"fast"`
	Notes     string    `yaml:"notes"`
	Config    yaml.Node `yaml:"config"`
}

// Row is a case's result.
type Row struct {
	ID        string  `json:"id"`
	Title     string  `json:"title"`
	Metric    string  `json:"metric"`
	Predicted float64 `json:"predicted"`
	Measured  float64 `json:"measured"`
	Unit      string  `json:"unit"`
	ErrorPct  float64 `json:"error_pct"`
	TargetPct float64 `json:"target_pct,omitempty"`
	// Pass says whether a targeted row meets its target; it is nil (null in
	// JSON) for a row with no target, which is reported only.
	Pass *bool `json:"pass"`
	// Bound is the physical bound in the row's unit, when one applies.
	Bound float64 `json:"bound,omitempty"`
	// Range is the interval a range row must fall in.
	Range []float64 `json:"range,omitempty"`
	// Constants are the unknown constants the row depends on, as
	// "path = value (source)".
	Constants []string `json:"constants,omitempty"`
	Counters  string   `json:"counters"`
	Source    string   `json:"source"`
	HostS     float64  `json:"host_time_s"`
}

// Options select cases.
type Options struct {
	Fast     bool
	Only     []string
	Progress io.Writer
}

// Cases returns every validation case, sorted by id.
func Cases() ([]Case, error) {
	entries, err := casesFS.ReadDir("cases")
	if err != nil {
		return nil, err
	}
	var out []Case
	for _, e := range entries {
		data, err := casesFS.ReadFile("cases/" + e.Name())
		if err != nil {
			return nil, err
		}
		var c Case
		dec := yaml.NewDecoder(strings.NewReader(string(data)))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("validate/cases/%s: %v", e.Name(), err)
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Run simulates the selected cases. Cases with the same config share one
// simulation.
func Run(opts Options) ([]Row, error) {
	cases, err := Cases()
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, id := range opts.Only {
		want[strings.ToUpper(strings.TrimSpace(id))] = true
	}
	runs := map[string]*runner.Outcome{}
	var rows []Row
	for _, c := range cases {
		if len(want) > 0 && !want[strings.ToUpper(c.ID)] {
			continue
		}
		if len(want) == 0 && opts.Fast && !c.Fast {
			continue
		}
		data, err := yaml.Marshal(&c.Config)
		if err != nil {
			return nil, fmt.Errorf("case %s: %v", c.ID, err)
		}
		cfg, err := configs.LoadBytes(data, "validate/cases/"+strings.ToLower(c.ID)+".yaml#config", configs.LoadOptions{})
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.ID, err)
		}
		key := report.ConfigHash(cfg)
		out, ok := runs[key]
		if !ok {
			if opts.Progress != nil {
				fmt.Fprintf(opts.Progress, "validate: simulating %s (%s)\n", c.ID, cfg.Workload.Name)
			}
			out, err = runner.Run(cfg, runner.Options{})
			if err != nil {
				return nil, fmt.Errorf("case %s: %w", c.ID, err)
			}
			runs[key] = out
		}
		row, err := evaluate(&c, cfg, out)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	grows, err := gpuRows()
	if err != nil {
		return nil, fmt.Errorf("the GPU rows: %w", err)
	}
	for _, r := range grows {
		if (len(want) == 0 && !opts.Fast) || want[r.ID] {
			rows = append(rows, r)
		}
	}
	if len(want) > 0 && len(rows) < len(want) {
		var known []string
		for _, c := range cases {
			known = append(known, c.ID)
		}
		return nil, fmt.Errorf("unknown case id in --only (cases: %s)", strings.Join(known, ", "))
	}
	return rows, nil
}

// unitScale converts seconds to the row's unit.
func unitScale(unit string) (float64, error) {
	switch unit {
	case "s":
		return 1, nil
	case "ms":
		return 1e3, nil
	case "us":
		return 1e6, nil
	case "ns":
		return 1e9, nil
	}
	return 0, fmt.Errorf("unknown time unit %q", unit)
}

func evaluate(c *Case, cfg *configs.RunConfig, out *runner.Outcome) (Row, error) {
	r := out.Report
	row := Row{ID: c.ID, Title: c.Title, Metric: c.Metric, Measured: c.Measured, Unit: c.Unit, TargetPct: c.TargetPct,
		Source: c.Source, HostS: r.HostTimeS}
	h := &cfg.Hardware
	counters := fmt.Sprintf("time %.4g ms, %.1f TFLOPS (HFU %.1f%%), tensor busy %.1f%%, vector busy %.1f%%, DMA %.0f MiB at %.0f GB/s (engines active %.1f%%)",
		r.SimulatedTimeS*1e3, r.TFLOPS, r.PeakPct, r.Engines["tensor"].BusyPct, r.Engines["vector"].BusyPct,
		float64(r.DMA.Bytes)/(1<<20), r.DMA.BandwidthGBps, r.DMA.ActivePct)
	switch c.Metric {
	case "simulated_time":
		scale, err := unitScale(c.Unit)
		if err != nil {
			return row, fmt.Errorf("case %s: %v", c.ID, err)
		}
		row.Predicted = r.SimulatedTimeS * scale
		// Physical bound: compute at peak, or the least bytes at the
		// lesser of the HBM and DMA-engine bandwidths.
		// The peak follows the run's matmuls (their dtypes and modes), as
		// the report's HFU does.
		peak := r.PeakTFLOPS * 1e12
		bw := math.Min(h.Chip.HBM.BandwidthGBps, float64(h.Core.DMA.Engines)*h.Core.DMA.EngineBandwidthGBps*float64(max(out.Info.CoresUsed, 1))) * 1e9
		bound := math.Max(out.Info.FLOPs/peak, float64(out.Info.MinHBMBytes)/bw)
		row.Bound = bound * scale
	case "time_per_step":
		scale, err := unitScale(c.Unit)
		if err != nil {
			return row, fmt.Errorf("case %s: %v", c.ID, err)
		}
		if c.Steps < 1 {
			return row, fmt.Errorf("case %s: time_per_step needs steps", c.ID)
		}
		row.Predicted = r.SimulatedTimeS / float64(c.Steps) * scale
		// Bound: a step is at least one DMA's fixed cost.
		row.Bound = (h.Core.DMA.StartLatencyNs + h.Core.DMA.CompletionLatencyNs) * 1e-9 * scale
		counters = fmt.Sprintf("%.4g us in %d steps; %d DMA transfers", r.SimulatedTimeS*1e6, c.Steps, r.DMA.Transfers)
	case "model_ttft", "model_tpot", "inferences_per_s":
		m := r.Model
		if m == nil {
			return row, fmt.Errorf("case %s: %s needs a model workload", c.ID, c.Metric)
		}
		// The roofline: the pass at 100% MFU or 100% MBU, whichever is
		// slower (MFU and MBU never exceed 100%).
		util := math.Max(m.MFUPct, m.MBUPct) / 100
		if util > 1+1e-9 {
			return row, fmt.Errorf("case %s: MFU %.1f%% / MBU %.1f%% above 100%%", c.ID, m.MFUPct, m.MBUPct)
		}
		switch c.Metric {
		case "inferences_per_s":
			row.Predicted = m.TokensPerS / float64(max(m.Seq, 1))
			if util > 0 {
				row.Bound = row.Predicted / util
			}
		default:
			scale, err := unitScale(c.Unit)
			if err != nil {
				return row, fmt.Errorf("case %s: %v", c.ID, err)
			}
			row.Predicted = m.TimeS * scale
			row.Bound = m.TimeS * util * scale
		}
		counters = fmt.Sprintf("%s %s: time %.4g ms (%.0f tokens/s), MFU %.1f%%, MBU %.1f%%, %d cores", m.Model, m.Mode, m.TimeS*1e3, m.TokensPerS, m.MFUPct, m.MBUPct, r.ModelCores())
		if m.SimulatedReplicas < m.Replicas {
			counters += fmt.Sprintf(" (%d of %d copies simulated)", m.SimulatedReplicas, m.Replicas)
		}
		if r.Comm != nil {
			counters += fmt.Sprintf(", collectives %.4g ms (%.4g ms exposed)", r.Comm.TimeS*1e3, r.Comm.ExposedS*1e3)
		}
	case "peak_pct":
		row.Predicted = r.PeakPct
		row.Bound = 100
	case "engine_busy_pct":
		e, ok := r.Engines[c.Engine]
		if !ok {
			return row, fmt.Errorf("case %s: unknown engine %q", c.ID, c.Engine)
		}
		row.Predicted = e.BusyPct
		row.Bound = 100
	case "dma_active_pct":
		row.Predicted = r.DMA.ActivePct
		row.Bound = 100
	case "time_per_instruction":
		scale, err := unitScale(c.Unit)
		if err != nil {
			return row, fmt.Errorf("case %s: %v", c.ID, err)
		}
		e, ok := r.Engines[c.Engine]
		if !ok || e.Instructions == 0 {
			return row, fmt.Errorf("case %s: engine %q ran no instructions", c.ID, c.Engine)
		}
		row.Predicted = r.SimulatedTimeS / float64(e.Instructions) * scale
		// Bound: each instruction's published interval, MIN_II cycles.
		minII, _ := cfg.Cost.Constant("MIN_II")
		clk := map[string]float64{"scalar": h.Core.Scalar.ClockGHz, "vector": h.Core.Vector.ClockGHz, "gpsimd": h.Core.GpSimd.ClockGHz, "tensor": h.Core.Tensor.ClockGHz, "sync": h.Core.Sync.ClockGHz}[c.Engine]
		row.Bound = minII / (clk * 1e9) * scale
		counters = fmt.Sprintf("%d %s instructions in %.4g us, %s busy %.1f%%", e.Instructions, c.Engine, r.SimulatedTimeS*1e6, c.Engine, e.BusyPct)
	case "dma_engine0_active":
		scale, err := unitScale(c.Unit)
		if err != nil {
			return row, fmt.Errorf("case %s: %v", c.ID, err)
		}
		core := out.Result.Chips[0].Cores[0]
		es := core.DMA.Engines[0]
		row.Predicted = (es.LastByte - es.FirstByte).Seconds() * scale
		row.Bound = float64(es.Bytes) / (h.Core.DMA.EngineBandwidthGBps * 1e9) * scale
		counters = fmt.Sprintf("engine 0: %d bytes, active %.1f ns, first byte at %.1f ns; transfer complete (semaphore) at %.1f ns",
			es.Bytes, es.Active.Nanoseconds(), es.FirstByte.Nanoseconds(), core.DMA.LastCompletion.Nanoseconds())
	case "hbm_read_bytes", "hbm_write_bytes":
		if c.Unit != "GB" {
			return row, fmt.Errorf("case %s: %s is in GB, not %q", c.ID, c.Metric, c.Unit)
		}
		// Bound: every input read once, every output written once.
		in, outB := gemmBytes(cfg)
		if cfg.Workload.Kind != "gemm" {
			in, outB = out.Info.MinHBMBytes-out.Info.MinHBMWriteBytes, out.Info.MinHBMWriteBytes
		}
		row.Predicted, row.Bound = float64(r.HBM.ReadBytes)/1e9, float64(in)/1e9
		if c.Metric == "hbm_write_bytes" {
			row.Predicted, row.Bound = float64(r.HBM.WriteBytes)/1e9, float64(outB)/1e9
		}
		counters += fmt.Sprintf("; HBM read %.3f GB, written %.3f GB", float64(r.HBM.ReadBytes)/1e9, float64(r.HBM.WriteBytes)/1e9)
	default:
		return row, fmt.Errorf("case %s: unknown metric %q", c.ID, c.Metric)
	}
	row.Counters = counters
	for _, p := range c.Constants {
		v, ok := cfg.Value(p)
		if !ok {
			return row, fmt.Errorf("case %s: constants: no field %s", c.ID, p)
		}
		row.Constants = append(row.Constants, fmt.Sprintf("%s = %s (%s)", p, v, cfg.Sources[p].Note))
	}
	if len(c.Range) > 0 {
		if len(c.Range) != 2 || c.Range[0] >= c.Range[1] {
			return row, fmt.Errorf("case %s: range must be [low, high]", c.ID)
		}
		if c.TargetPct > 0 {
			return row, fmt.Errorf("case %s: a row has a range or a target, not both", c.ID)
		}
		row.Range = c.Range
		row.Measured = (c.Range[0] + c.Range[1]) / 2
		pass := row.Predicted >= c.Range[0] && row.Predicted <= c.Range[1]
		row.Pass = &pass
	}
	row.ErrorPct = 100 * (row.Predicted - row.Measured) / row.Measured
	if c.TargetPct > 0 {
		pass := math.Abs(row.ErrorPct) <= c.TargetPct
		row.Pass = &pass
	}
	// A time below the bound, or a percentage above it, is a bug.
	// Times and bytes have lower bounds, percentages upper ones.
	isTime := c.Metric == "simulated_time" || c.Metric == "dma_engine0_active" || c.Metric == "time_per_instruction" || c.Metric == "time_per_step" ||
		c.Metric == "model_ttft" || c.Metric == "model_tpot" ||
		c.Metric == "hbm_read_bytes" || c.Metric == "hbm_write_bytes"
	if isTime && row.Predicted < row.Bound*(1-1e-9) {
		return row, fmt.Errorf("case %s: predicted %.6g %s beats the physical bound %.6g %s", c.ID, row.Predicted, c.Unit, row.Bound, c.Unit)
	}
	if !isTime && row.Predicted > row.Bound*(1+1e-9) {
		return row, fmt.Errorf("case %s: predicted %.6g%% exceeds %.6g%%", c.ID, row.Predicted, row.Bound)
	}
	return row, nil
}

// gemmBytes returns the least HBM bytes a GEMM workload reads (its inputs
// once) and writes (its output once); 0, 0 for other kinds.
func gemmBytes(cfg *configs.RunConfig) (in, out int64) {
	g := cfg.Workload.GEMM
	if cfg.Workload.Kind != "gemm" || g == nil {
		return 0, 0
	}
	dt, _ := isa.ParseDType(g.DType)
	odt, _ := isa.ParseDType(g.OutDType)
	b := max(g.Batch, 1)
	return b * (g.M*g.K + g.K*g.N) * int64(dt.Bytes()), b * g.M * g.N * int64(odt.Bytes())
}

// Missed lists the ids of targeted rows that missed.
func Missed(rows []Row) []string {
	var out []string
	for _, r := range rows {
		if r.Pass != nil && !*r.Pass {
			out = append(out, r.ID)
		}
	}
	return out
}

// WriteJSON prints the rows as a JSON array.
func WriteJSON(w io.Writer, rows []Row) error {
	if rows == nil {
		rows = []Row{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}

// WriteTable prints the rows for people.
func WriteTable(w io.Writer, rows []Row) {
	fmt.Fprintf(w, "%-13s %-18s %12s %12s %-5s %9s %8s %-6s\n", "id", "metric", "predicted", "measured", "unit", "error", "target", "status")
	for _, r := range rows {
		target, status := "-", "report"
		if len(r.Range) == 2 {
			target = fmt.Sprintf("%g-%g", r.Range[0], r.Range[1])
			status = "PASS"
			if r.Pass != nil && !*r.Pass {
				status = "MISS"
			}
		}
		if r.TargetPct > 0 {
			target = fmt.Sprintf("±%g%%", r.TargetPct)
			status = "PASS"
			if r.Pass != nil && !*r.Pass {
				status = "MISS"
			}
		}
		fmt.Fprintf(w, "%-13s %-18s %12.4g %12.4g %-5s %+8.1f%% %8s %-6s\n", r.ID, r.Metric, r.Predicted, r.Measured, r.Unit, r.ErrorPct, target, status)
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		fmt.Fprintf(w, "%s: %s\n    source: %s\n    counters: %s\n", r.ID, r.Title, r.Source, r.Counters)
		for _, c := range r.Constants {
			fmt.Fprintf(w, "    unknown constant: %s\n", c)
		}
	}
}

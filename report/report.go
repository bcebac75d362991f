// Package report turns a simulation's statistics into what people and
// scripts read: the summary printed after a run, results.json (stable field
// names with units), a CSV row, and the Chrome trace-event timeline.
package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/engines"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads"
)

// SchemaVersion is the version of the results.json layout. It changes
// whenever a field is renamed or removed.
const SchemaVersion = 1

// Report is a run's results, as written to results.json.
type Report struct {
	SchemaVersion int    `json:"schema_version"`
	Trnsim        string `json:"trnsim_version"`
	ConfigHash    string `json:"config_hash"`
	Config        string `json:"config"`
	Hardware      string `json:"hardware"`
	Workload      string `json:"workload"`
	WorkloadKind  string `json:"workload_kind"`

	SimulatedTimeS      float64 `json:"simulated_time_s"`
	HostTimeS           float64 `json:"host_time_s"`
	Instructions        int64   `json:"instructions"`
	Events              int64   `json:"events"`
	InstructionsPerSec  float64 `json:"instructions_per_host_s"`
	EventsPerSec        float64 `json:"events_per_host_s"`
	FLOPs               float64 `json:"flops"`
	UsefulFLOPs         float64 `json:"useful_flops"`
	TFLOPS              float64 `json:"tflops"`
	PeakTFLOPS          float64 `json:"peak_tflops"`
	PeakPct             float64 `json:"peak_pct"`
	PeakFormula         string  `json:"peak_formula"`
	CoresUsed           int     `json:"cores_used"`
	DMAComputeOverlapPc float64 `json:"dma_compute_overlap_pct"`

	Engines map[string]EngineReport `json:"engines"`
	DMA     DMAReport               `json:"dma"`
	HBM     HBMReport               `json:"hbm"`
	SBUF    MemReport               `json:"sbuf"`
	PSUM    MemReport               `json:"psum"`
	Stalls  []StallReport           `json:"stalls"`
	Choices []ChoiceReport          `json:"lowering"`
	Notes   []string                `json:"lowering_notes"`
	Chips   []ChipReport            `json:"chips"`
}

// EngineReport are one engine's figures (averaged over cores at the top
// level, per core under chips).
type EngineReport struct {
	Instructions int64              `json:"instructions"`
	BusyS        float64            `json:"busy_s"`
	BusyPct      float64            `json:"busy_pct"`
	StallS       map[string]float64 `json:"stall_s"`
}

// DMAReport are the DMA figures.
type DMAReport struct {
	Transfers     int64   `json:"transfers"`
	Bytes         int64   `json:"bytes"`
	BandwidthGBps float64 `json:"bandwidth_gbps"`
	// ActivePct is the mean DMA engine's active time / simulated time.
	ActivePct float64 `json:"active_pct"`
}

// HBMReport are the HBM figures.
type HBMReport struct {
	ReadBytes  int64 `json:"read_bytes"`
	WriteBytes int64 `json:"write_bytes"`
}

// MemReport is the peak use of an on-chip memory per partition.
type MemReport struct {
	PeakBytesPerPartition int64   `json:"peak_bytes_per_partition"`
	CapacityBytes         int64   `json:"capacity_bytes_per_partition"`
	PeakPct               float64 `json:"peak_pct"`
}

// StallReport is one (engine, cause) pair of the top stalls.
type StallReport struct {
	Chip   int32   `json:"chip"`
	Core   int32   `json:"core"`
	Engine string  `json:"engine"`
	Cause  string  `json:"cause"`
	TimeS  float64 `json:"time_s"`
	Pct    float64 `json:"pct"`
}

// ChoiceReport is one lowering parameter as resolved.
type ChoiceReport struct {
	Path  string `json:"path"`
	Value int64  `json:"value"`
	Auto  bool   `json:"auto"`
}

// ChipReport and CoreReport nest the per-core figures.
type ChipReport struct {
	Chip          int32        `json:"chip"`
	HBMReadBytes  int64        `json:"hbm_read_bytes"`
	HBMWriteBytes int64        `json:"hbm_write_bytes"`
	Cores         []CoreReport `json:"cores"`
}

// CoreReport are one core's figures.
type CoreReport struct {
	Core    int32                   `json:"core"`
	Engines map[string]EngineReport `json:"engines"`
	DMA     CoreDMAReport           `json:"dma"`
	SBUF    MemReport               `json:"sbuf"`
	PSUM    MemReport               `json:"psum"`
}

// CoreDMAReport are one core's DMA figures, with per-engine active time.
type CoreDMAReport struct {
	Transfers       int64     `json:"transfers"`
	Bytes           int64     `json:"bytes"`
	EngineActiveS   []float64 `json:"engine_active_s"`
	EngineFirstByte []float64 `json:"engine_first_byte_s"`
	EngineLastByte  []float64 `json:"engine_last_byte_s"`
	QueueTransfers  []int64   `json:"queue_transfers"`
}

// ConfigHash returns a hash of the resolved config: the hardware (with its
// cost table) and the workload. Two runs with the same hash simulate the
// same thing.
func ConfigHash(cfg *configs.RunConfig) string {
	data, _ := json.Marshal(struct {
		H configs.Hardware
		C any
		W configs.Workload
	}{cfg.Hardware, cfg.Costs, cfg.Workload})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

func pct(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return 100 * a / b
}

// Build assembles the report of a run.
func Build(cfg *configs.RunConfig, info *workloads.Info, res *chip.Result, version string) *Report {
	h := &cfg.Hardware
	sim := res.SimTime.Seconds()
	r := &Report{SchemaVersion: SchemaVersion, Trnsim: version, ConfigHash: ConfigHash(cfg), Config: cfg.File,
		Hardware: h.Name, Workload: info.Name, WorkloadKind: info.Kind,
		SimulatedTimeS: sim, HostTimeS: res.HostTime.Seconds(), Instructions: res.Instructions, Events: res.Events,
		UsefulFLOPs: info.FLOPs, DMAComputeOverlapPc: res.DMAComputeOverlapPct,
		Engines: map[string]EngineReport{}}
	if r.HostTimeS > 0 {
		r.InstructionsPerSec = float64(res.Instructions) / r.HostTimeS
		r.EventsPerSec = float64(res.Events) / r.HostTimeS
	}
	if r.Config == "" {
		r.Config = configs.DefaultConfigName
	}
	sbufCap, psumCap := h.SBUFBytesPerPartition(), h.PSUMBytesPerPartition()
	cores := 0
	var stalls []StallReport
	sums := map[isa.Engine]*EngineReport{}
	var dmaActive float64
	var dmaEngines int
	for _, ch := range res.Chips {
		cr := ChipReport{Chip: ch.Chip, HBMReadBytes: ch.HBMReadBytes, HBMWriteBytes: ch.HBMWriteBytes}
		r.HBM.ReadBytes += ch.HBMReadBytes
		r.HBM.WriteBytes += ch.HBMWriteBytes
		for _, c := range ch.Cores {
			cores++
			core := CoreReport{Core: c.Core, Engines: map[string]EngineReport{}}
			for _, e := range c.Engines {
				r.FLOPs += e.FLOPs
				er := EngineReport{Instructions: e.Instructions, BusyS: e.Busy.Seconds(), BusyPct: pct(e.Busy.Seconds(), sim), StallS: map[string]float64{}}
				for cause := engines.StallCause(0); cause < engines.NumStallCauses; cause++ {
					if d := e.Stall[cause]; d > 0 {
						er.StallS[cause.String()] = d.Seconds()
						stalls = append(stalls, StallReport{Chip: ch.Chip, Core: c.Core, Engine: e.Engine.String(), Cause: cause.String(),
							TimeS: d.Seconds(), Pct: pct(d.Seconds(), sim)})
					}
				}
				core.Engines[e.Engine.String()] = er
				s := sums[e.Engine]
				if s == nil {
					s = &EngineReport{StallS: map[string]float64{}}
					sums[e.Engine] = s
				}
				s.Instructions += er.Instructions
				s.BusyS += er.BusyS
				for k, v := range er.StallS {
					s.StallS[k] += v
				}
			}
			d := c.DMA
			core.DMA = CoreDMAReport{Transfers: d.Transfers, Bytes: d.Bytes, QueueTransfers: d.QueueTransfers}
			for _, es := range d.Engines {
				core.DMA.EngineActiveS = append(core.DMA.EngineActiveS, es.Active.Seconds())
				first, last := 0.0, 0.0
				if es.Shares > 0 {
					first, last = es.FirstByte.Seconds(), es.LastByte.Seconds()
				}
				core.DMA.EngineFirstByte = append(core.DMA.EngineFirstByte, first)
				core.DMA.EngineLastByte = append(core.DMA.EngineLastByte, last)
				dmaActive += es.Active.Seconds()
				dmaEngines++
			}
			r.DMA.Transfers += d.Transfers
			r.DMA.Bytes += d.Bytes
			core.SBUF = MemReport{PeakBytesPerPartition: c.PeakSBUFBytes, CapacityBytes: sbufCap, PeakPct: pct(float64(c.PeakSBUFBytes), float64(sbufCap))}
			core.PSUM = MemReport{PeakBytesPerPartition: c.PeakPSUMBytes, CapacityBytes: psumCap, PeakPct: pct(float64(c.PeakPSUMBytes), float64(psumCap))}
			if c.PeakSBUFBytes > r.SBUF.PeakBytesPerPartition {
				r.SBUF = core.SBUF
			}
			if c.PeakPSUMBytes > r.PSUM.PeakBytesPerPartition {
				r.PSUM = core.PSUM
			}
			cr.Cores = append(cr.Cores, core)
		}
		r.Chips = append(r.Chips, cr)
	}
	if r.SBUF.CapacityBytes == 0 {
		r.SBUF.CapacityBytes, r.PSUM.CapacityBytes = sbufCap, psumCap
	}
	r.CoresUsed = max(cores, 1)
	for _, e := range isa.AllEngines() {
		s := sums[e]
		if s == nil {
			s = &EngineReport{StallS: map[string]float64{}}
		}
		n := float64(r.CoresUsed)
		for k := range s.StallS {
			s.StallS[k] /= n
		}
		s.BusyS /= n
		s.BusyPct = pct(s.BusyS, sim)
		r.Engines[e.String()] = *s
	}
	if sim > 0 {
		r.DMA.BandwidthGBps = float64(r.DMA.Bytes) / sim / 1e9
		r.TFLOPS = r.FLOPs / sim / 1e12
	}
	if dmaEngines > 0 {
		r.DMA.ActivePct = pct(dmaActive/float64(dmaEngines), sim)
	}
	peakCore := h.PeakFLOPSPerCore(info.DType)
	r.PeakTFLOPS = peakCore * float64(r.CoresUsed) / 1e12
	r.PeakPct = pct(r.TFLOPS, r.PeakTFLOPS)
	factor := peakCore / (float64(h.Core.Tensor.ArrayRows) * float64(h.Core.Tensor.ArrayCols) * 2 * h.Core.Tensor.ClockGHz * 1e9)
	r.PeakFormula = fmt.Sprintf("%dx%d PE x 2 FLOP x %g GHz x %g (%s) x %d core(s) = %.2f TFLOPS",
		h.Core.Tensor.ArrayRows, h.Core.Tensor.ArrayCols, h.Core.Tensor.ClockGHz, factor, info.DType, r.CoresUsed, r.PeakTFLOPS)
	sort.SliceStable(stalls, func(i, j int) bool { return stalls[i].TimeS > stalls[j].TimeS })
	if len(stalls) > 5 {
		stalls = stalls[:5]
	}
	r.Stalls = stalls
	for _, c := range info.Choices {
		r.Choices = append(r.Choices, ChoiceReport{Path: c.Path, Value: c.Value, Auto: c.Auto})
	}
	r.Notes = info.Notes
	return r
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// CSVHeader and CSVRow give one line of run totals.
func CSVHeader() string {
	return "config,hardware,workload,simulated_time_s,tflops,peak_pct,tensor_busy_pct,vector_busy_pct,scalar_busy_pct,gpsimd_busy_pct,sync_busy_pct,dma_bytes,dma_bandwidth_gbps,hbm_read_bytes,hbm_write_bytes,instructions,host_time_s,config_hash"
}

// CSVRow returns the report's totals in CSVHeader's order.
func (r *Report) CSVRow() string {
	q := func(s string) string {
		if strings.ContainsAny(s, ",\"\n") {
			return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
		}
		return s
	}
	e := r.Engines
	return fmt.Sprintf("%s,%s,%s,%.9g,%.6g,%.4g,%.4g,%.4g,%.4g,%.4g,%.4g,%d,%.6g,%d,%d,%d,%.4g,%s",
		q(r.Config), q(r.Hardware), q(r.Workload), r.SimulatedTimeS, r.TFLOPS, r.PeakPct,
		e["tensor"].BusyPct, e["vector"].BusyPct, e["scalar"].BusyPct, e["gpsimd"].BusyPct, e["sync"].BusyPct,
		r.DMA.Bytes, r.DMA.BandwidthGBps, r.HBM.ReadBytes, r.HBM.WriteBytes, r.Instructions, r.HostTimeS, r.ConfigHash)
}

func bytesStr(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

func si(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2f G", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2f M", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1f k", v/1e3)
	}
	return fmt.Sprintf("%.0f ", v)
}

// WriteSummary prints the summary a person reads first.
func (r *Report) WriteSummary(w io.Writer) {
	line := func(k, format string, args ...any) { fmt.Fprintf(w, "%-18s %s\n", k, fmt.Sprintf(format, args...)) }
	fmt.Fprintf(w, "trnsim %s: %s on %s (%d core(s))\n", r.Trnsim, r.Workload, r.Hardware, r.CoresUsed)
	line("simulated time", "%s", clock.Time(r.SimulatedTimeS*1e15+0.5))
	line("throughput", "%.2f TFLOPS, %.1f%% of peak (HFU)", r.TFLOPS, r.PeakPct)
	line("peak", "%s", r.PeakFormula)
	var busy []string
	for _, e := range isa.AllEngines() {
		busy = append(busy, fmt.Sprintf("%s %.1f%%", e, r.Engines[e.String()].BusyPct))
	}
	line("engine busy", "%s", strings.Join(busy, "  "))
	line("DMA", "%s in %d transfers, %.1f GB/s; engines active %.1f%%; DMA-compute overlap %.1f%%",
		bytesStr(r.DMA.Bytes), r.DMA.Transfers, r.DMA.BandwidthGBps, r.DMA.ActivePct, r.DMAComputeOverlapPc)
	line("HBM", "read %s, written %s", bytesStr(r.HBM.ReadBytes), bytesStr(r.HBM.WriteBytes))
	if len(r.Stalls) == 0 {
		line("top stalls", "none")
	}
	for i, s := range r.Stalls {
		k := ""
		if i == 0 {
			k = "top stalls"
		}
		line(k, "%-7s %-15s %s (%.1f%%)", s.Engine, s.Cause, clock.Time(s.TimeS*1e15+0.5), s.Pct)
	}
	line("SBUF peak", "%s of %s per partition (%.1f%%)", bytesStr(r.SBUF.PeakBytesPerPartition), bytesStr(r.SBUF.CapacityBytes), r.SBUF.PeakPct)
	line("PSUM peak", "%s of %s per partition (%.1f%%)", bytesStr(r.PSUM.PeakBytesPerPartition), bytesStr(r.PSUM.CapacityBytes), r.PSUM.PeakPct)
	if len(r.Choices) > 0 {
		var cs []string
		for _, c := range r.Choices {
			name := strings.TrimPrefix(c.Path, "workload.lowering.")
			cs = append(cs, fmt.Sprintf("%s=%d", name, c.Value))
		}
		cs = append(cs, r.Notes...)
		line("lowering", "%s", strings.Join(cs, " "))
	}
	line("host", "%.3f s, %sinstructions/s, %sevents/s (%d instructions, %d events)",
		r.HostTimeS, si(r.InstructionsPerSec), si(r.EventsPerSec), r.Instructions, r.Events)
}

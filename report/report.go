// Package report turns a simulation's statistics into what people and
// scripts read: the summary printed after a run, results.json (stable field
// names with units), a CSV row, and the Chrome trace-event timeline.
package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
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
	// WorkloadShape is the workload's shape in elements, named as in the
	// config (gemm: m, k, n; elementwise: rows, cols; null for assembly);
	// WorkloadDType its input dtype ("" for assembly, whose kernel declares
	// its own).
	WorkloadShape Shape  `json:"workload_shape"`
	WorkloadDType string `json:"workload_dtype"`

	SimulatedTimeS     float64 `json:"simulated_time_s"`
	HostTimeS          float64 `json:"host_time_s"`
	Instructions       int64   `json:"instructions"`
	Events             int64   `json:"events"`
	InstructionsPerSec float64 `json:"instructions_per_host_s"`
	EventsPerSec       float64 `json:"events_per_host_s"`
	FLOPs              float64 `json:"flops"`
	UsefulFLOPs        float64 `json:"useful_flops"`
	TFLOPS             float64 `json:"tflops"`
	PeakTFLOPS         float64 `json:"peak_tflops"`
	PeakPct            float64 `json:"peak_pct"`
	PeakFormula        string  `json:"peak_formula"`
	// PeakClasses are the matmul classes the run did, with their peaks:
	// PeakPct is their time at peak over the simulated time x cores.
	PeakClasses         []PeakClass `json:"peak_classes"`
	CoresUsed           int         `json:"cores_used"`
	DMAComputeOverlapPc float64     `json:"dma_compute_overlap_pct"`

	Engines map[string]EngineReport `json:"engines"`
	DMA     DMAReport               `json:"dma"`
	HBM     HBMReport               `json:"hbm"`
	SBUF    MemReport               `json:"sbuf"`
	PSUM    MemReport               `json:"psum"`
	Stalls  []StallReport           `json:"stalls"`
	// Ops are the figures per workload op, in order of id.
	Ops []OpReport `json:"ops"`
	// Model is a model run's figures (null for kernels); GPU the GPU
	// baselines' estimates of the same pass.
	Model   *ModelReport   `json:"model,omitempty"`
	GPU     []GPUReport    `json:"gpu,omitempty"`
	Choices []ChoiceReport `json:"lowering"`
	Notes   []string       `json:"lowering_notes"`
	Chips   []ChipReport   `json:"chips"`
	// Links are the links between chips that carried data (direction by
	// direction), busiest first.
	Links []LinkReport `json:"links,omitempty"`
	// Comm is the collectives' communication (null without collectives).
	Comm *CommReport `json:"communication,omitempty"`
	// Slowest is the core that finished last, when several ran.
	Slowest *SlowestCore `json:"slowest_core,omitempty"`
	// Roofline places the ops on the rooflines of the Trainium cores used
	// and of each GPU baseline (roofline.go); Timeline is a window of one
	// core's engine and DMA queue activity, kept only when figures were
	// asked for (timeline.go).
	Roofline []RooflineDevice `json:"roofline,omitempty"`
	Timeline *TimelineReport  `json:"timeline,omitempty"`
	// Cost is a model run's cost, energy and instance comparison
	// (cost.go); GPUCalibration the calibration file its GPU baselines
	// used, if any.
	Cost           *CostReport           `json:"cost,omitempty"`
	GPUCalibration *GPUCalibrationReport `json:"gpu_calibration,omitempty"`
}

// SlowestCore is the core that finished last: what it was busy with and
// what it waited for most.
type SlowestCore struct {
	Chip    int32              `json:"chip"`
	Core    int32              `json:"core"`
	EndS    float64            `json:"end_s"`
	BusyPct map[string]float64 `json:"busy_pct"`
	// TopStall is its engine and cause that waited longest.
	TopStall *StallReport `json:"top_stall,omitempty"`
}

// CommReport is the time collectives moved data, and how much of it no
// compute hid.
type CommReport struct {
	// TimeS is when some collective was in flight (from its first
	// trigger to its last completion) in the simulated run (with layer
	// reuse: the simulated layers'); ExposedS the part of it during which
	// no compute engine of any core was busy (the communication the run
	// waits for); ExposedPct that part of the simulated time.
	TimeS      float64 `json:"time_s"`
	ExposedS   float64 `json:"exposed_s"`
	ExposedPct float64 `json:"exposed_pct"`
}

// LinkReport is one direction of a link between chips (or between a chip
// and a switch or the network).
type LinkReport struct {
	Name  string  `json:"name"`
	GBps  float64 `json:"gbps"`
	Bytes int64   `json:"bytes"`
	// UtilPct is the bytes over what the link could carry in the
	// simulated time.
	UtilPct float64 `json:"util_pct"`
}

// EngineReport are one engine's figures (averaged over cores at the top
// level, per core under chips).
type EngineReport struct {
	Instructions int64 `json:"instructions"`
	// BusyS is the union of the engine's issue intervals: time waiting for
	// a semaphore is not busy (Neuron Explorer's "active time" is defined
	// the same way).
	BusyS   float64 `json:"busy_s"`
	BusyPct float64 `json:"busy_pct"`
	// IdleS is the time the engine had no instruction left: after its last
	// instruction completed, or the whole run for an engine without any
	// (over a decode's steps simulated one after another, after each
	// step's last, added up).
	IdleS   float64 `json:"idle_s"`
	IdlePct float64 `json:"idle_pct"`
	// StallS is the time the engine had an instruction it could not start,
	// by cause (a semaphore, a port, a full DMA queue, ...), including a
	// wait before its first instruction.
	StallS map[string]float64 `json:"stall_s"`
}

// PeakClass is one class of matmuls a run did (moving dtype and TensorE
// performance mode) with its peak rate.
type PeakClass struct {
	DType string `json:"dtype"`
	// PerfMode is 0 (normal), 2 (FP8 double row) or 4 (MX quad); Mode names
	// it: normal, double_row, mx_quad.
	PerfMode int     `json:"perf_mode"`
	Mode     string  `json:"mode"`
	FLOPs    float64 `json:"flops"`
	// Rate is the class's throughput relative to BF16, and
	// PeakTFLOPSPerCore one core's peak for it.
	Rate              float64 `json:"rate_x_bf16"`
	PeakTFLOPSPerCore float64 `json:"peak_tflops_per_core"`
	// TimeAtPeakS is the core-seconds these FLOPs take at that peak.
	TimeAtPeakS float64 `json:"time_at_peak_s"`
}

// Shape is a workload shape, written to JSON as an object whose keys keep
// the shape's order ({"m": 2048, "k": 4096, "n": 4096}).
type Shape []workloads.Dim

// MarshalJSON writes the shape as an ordered object (null when empty).
func (s Shape) MarshalJSON() ([]byte, error) {
	if len(s) == 0 {
		return []byte("null"), nil
	}
	var b []byte
	b = append(b, '{')
	for i, d := range s {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(d.Name)
		if err != nil {
			return nil, err
		}
		b = append(b, k...)
		b = append(b, ':')
		b = strconv.AppendInt(b, d.Size, 10)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads an object written by MarshalJSON, in its order.
func (s *Shape) UnmarshalJSON(data []byte) error {
	*s = nil
	if string(data) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("workload_shape: expected an object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string)
		var size int64
		if err := dec.Decode(&size); err != nil {
			return fmt.Errorf("workload_shape.%s: %v", name, err)
		}
		*s = append(*s, workloads.Dim{Name: name, Size: size})
	}
	return nil
}

// String prints the shape as "m=2048 k=4096 n=4096".
func (s Shape) String() string {
	var parts []string
	for _, d := range s {
		parts = append(parts, fmt.Sprintf("%s=%d", d.Name, d.Size))
	}
	return strings.Join(parts, " ")
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
	Core int32 `json:"core"`
	// EndS is when the core's last instruction or transfer completed.
	EndS    float64                 `json:"end_s"`
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
// (ConfigHasher computes the same hash, faster for a series of configs.)
func ConfigHash(cfg *configs.RunConfig) string {
	data, _ := json.Marshal(struct {
		H  configs.Hardware
		C  any
		W  configs.Workload
		P  *configs.Parallel  `json:",omitempty"`
		Pr map[string]float64 `json:",omitempty"`
	}{cfg.Hardware, cfg.Costs, cfg.Workload, hashedParallel(cfg), hashedPrices(cfg)})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// hashedParallel is the parallel plan ConfigHash hashes: it joins the
// hash only when it is not the default, so that configs without one keep
// the ids they always had (nil: left out).
func hashedParallel(cfg *configs.RunConfig) *configs.Parallel {
	if p := cfg.Parallel; p.Ranks() > 1 || (p.CollectiveAlgorithm != "" && p.CollectiveAlgorithm != "auto") {
		return &p
	}
	return nil
}

// hashedPrices are the user's prices ConfigHash hashes, likewise only
// when given (they change the cost figures; nil: left out).
func hashedPrices(cfg *configs.RunConfig) map[string]float64 {
	if len(cfg.Pricing.Prices.Values) > 0 {
		return cfg.Pricing.Prices.Values
	}
	return nil
}

func pct(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return 100 * a / b
}

// workloadName is the name the report gives the workload: the config's
// workload.name, else one made from the resolved shape (the lowering's
// Info.Name). A name the config file gives is kept when --set changes the
// workload's own fields, with those --set values after it ("bf16-gemm-4k
// with m=8192"), so the name never describes a shape that was not run.
func workloadName(cfg *configs.RunConfig, info *workloads.Info) string {
	name := info.Name
	if cfg.Workload.Name == "" || name != cfg.Workload.Name {
		return name
	}
	if src, ok := cfg.Sources["workload.name"]; ok && src.File == configs.SetFile {
		return name
	}
	if sets := cfg.SetArgs("workload." + cfg.Workload.Kind); len(sets) > 0 {
		name += " with " + strings.Join(sets, " ")
	}
	return name
}

// modeName names a TensorE performance mode.
func modeName(perf uint8) string {
	switch perf {
	case 0:
		return "normal"
	case 2:
		return "double_row"
	case 4:
		return "mx_quad"
	}
	return fmt.Sprintf("mode_%d", perf)
}

// className prints a matmul class for people: "bf16", "fp8e4 double row".
func className(dt isa.DType, perf uint8) string {
	if perf == 0 {
		return dt.String()
	}
	return dt.String() + " " + strings.ReplaceAll(modeName(perf), "_", " ") + fmt.Sprintf(" (perf=%d)", perf)
}

// Build assembles the report of a run. It fails, with an internal error
// naming what exceeded, if any utilisation it reports is above 100%: the
// simulator never does more than the hardware can, so such a figure is a
// bug (or a cost-table override that makes an instruction faster than the
// hardware's peak), and it is reported rather than clamped.
func Build(cfg *configs.RunConfig, info *workloads.Info, res *chip.Result, version string) (*Report, error) {
	h := &cfg.Hardware
	sim := res.SimTime.Seconds()
	r := &Report{SchemaVersion: SchemaVersion, Trnsim: version, ConfigHash: ConfigHash(cfg), Config: cfg.File,
		Hardware: h.Name, Workload: workloadName(cfg, info), WorkloadKind: info.Kind,
		SimulatedTimeS: sim, HostTimeS: res.HostTime.Seconds(), Instructions: res.Instructions, Events: res.Events,
		UsefulFLOPs: info.FLOPs, DMAComputeOverlapPc: res.DMAComputeOverlapPct,
		Engines: map[string]EngineReport{}}
	if info.Kind != "assembly" {
		r.WorkloadDType = info.DType.String()
		r.WorkloadShape = Shape(info.Shape)
	}
	if r.HostTimeS > 0 {
		r.InstructionsPerSec = float64(res.Instructions) / r.HostTimeS
		r.EventsPerSec = float64(res.Events) / r.HostTimeS
	}
	if r.Config == "" {
		r.Config = configs.DefaultConfigName
	}
	base := h.PeakBaseFLOPSPerCore()
	sbufCap, psumCap := h.SBUFBytesPerPartition(), h.PSUMBytesPerPartition()
	cores := 0
	var stalls []StallReport
	sums := map[isa.Engine]*EngineReport{}
	var dmaActive float64
	var dmaEngines int
	var classFLOPs [engines.NumMatmulClasses]float64
	var atPeak float64 // core-seconds TensorE needs for every matmul at its class's peak
	for _, ch := range res.Chips {
		cr := ChipReport{Chip: ch.Chip, HBMReadBytes: ch.HBMReadBytes, HBMWriteBytes: ch.HBMWriteBytes}
		r.HBM.ReadBytes += ch.HBMReadBytes
		r.HBM.WriteBytes += ch.HBMWriteBytes
		for _, c := range ch.Cores {
			cores++
			where := fmt.Sprintf("chip %d core %d", ch.Chip, c.Core)
			core := CoreReport{Core: c.Core, Engines: map[string]EngineReport{}}
			end := c.DMA.LastCompletion
			for _, e := range c.Engines {
				if e.Instructions > 0 {
					end = clock.Max(end, e.LastEnd)
				}
			}
			core.EndS = end.Seconds()
			if r.Slowest == nil || core.EndS > r.Slowest.EndS {
				r.Slowest = &SlowestCore{Chip: ch.Chip, Core: c.Core, EndS: core.EndS, BusyPct: map[string]float64{}}
				for _, e := range c.Engines {
					r.Slowest.BusyPct[e.Engine.String()] = pct(e.Busy.Seconds(), sim)
				}
			}
			for _, e := range c.Engines {
				if e.Busy > res.SimTime {
					return nil, fmt.Errorf("internal error: %s %s busy %s is %.1f%% of the simulated time %s, above 100%%",
						where, e.Engine, e.Busy, pct(e.Busy.Seconds(), sim), res.SimTime)
				}
				r.FLOPs += e.FLOPs
				// Idle: no instructions left, after the last one completed
				// (or all the time, for an engine with none). Waiting for a
				// semaphore with instructions left, even before the first
				// one, is a stall.
				idle := e.Idle
				if idle < 0 || idle > res.SimTime {
					return nil, fmt.Errorf("internal error: %s %s idle %s, outside the simulated time %s", where, e.Engine, idle, res.SimTime)
				}
				er := EngineReport{Instructions: e.Instructions, BusyS: e.Busy.Seconds(), BusyPct: pct(e.Busy.Seconds(), sim),
					IdleS: idle.Seconds(), IdlePct: pct(idle.Seconds(), sim), StallS: map[string]float64{}}
				for cause := engines.StallCause(0); cause < engines.NumStallCauses; cause++ {
					if d := e.Stall[cause]; d > 0 {
						er.StallS[cause.String()] = d.Seconds()
						stalls = append(stalls, StallReport{Chip: ch.Chip, Core: c.Core, Engine: e.Engine.String(), Cause: cause.String(),
							TimeS: d.Seconds(), Pct: pct(d.Seconds(), sim)})
					}
				}
				var coreAtPeak float64
				for cl, f := range e.MatmulFLOPs {
					if f == 0 {
						continue
					}
					class := engines.MatmulClass(cl)
					rate, ok := h.MatmulRate(class.DType(), class.PerfMode())
					if !ok {
						return nil, fmt.Errorf("internal error: %s TensorE ran %s matmuls, which have no peak rate on %s (the instruction checks should have rejected them)",
							where, className(class.DType(), class.PerfMode()), h.Name)
					}
					classFLOPs[cl] += f
					coreAtPeak += f / (base * rate)
				}
				// Matmuls only run while TensorE is busy, so at their peaks
				// they need at most its busy time.
				if coreAtPeak > e.Busy.Seconds()*(1+1e-9) {
					t := &h.Core.Tensor
					return nil, fmt.Errorf("internal error: %s TensorE did %s in %s busy, %.1f%% of what the peak %dx%d PE x 2 FLOP x %g GHz x %s allows: that mode costs less than its peak rate (a hardware.costs override can do this; otherwise it is a trnsim bug)",
						where, classList(h, e.MatmulFLOPs[:]), e.Busy, 100*coreAtPeak/e.Busy.Seconds(), t.ArrayRows, t.ArrayCols, t.ClockGHz, classFormula(h, e.MatmulFLOPs[:]))
				}
				atPeak += coreAtPeak
				core.Engines[e.Engine.String()] = er
				s := sums[e.Engine]
				if s == nil {
					s = &EngineReport{StallS: map[string]float64{}}
					sums[e.Engine] = s
				}
				s.Instructions += er.Instructions
				s.BusyS += er.BusyS
				s.IdleS += er.IdleS
				for k, v := range er.StallS {
					s.StallS[k] += v
				}
			}
			d := c.DMA
			core.DMA = CoreDMAReport{Transfers: d.Transfers, Bytes: d.Bytes, QueueTransfers: d.QueueTransfers}
			for i, es := range d.Engines {
				if es.Active > res.SimTime {
					return nil, fmt.Errorf("internal error: %s DMA engine %d active %s is %.1f%% of the simulated time %s, above 100%%",
						where, i, es.Active, pct(es.Active.Seconds(), sim), res.SimTime)
				}
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
			for _, m := range []struct {
				name string
				mr   MemReport
			}{{"SBUF", core.SBUF}, {"PSUM", core.PSUM}} {
				if m.mr.PeakBytesPerPartition > m.mr.CapacityBytes {
					return nil, fmt.Errorf("internal error: %s %s peak %d bytes per partition is %.1f%% of its %d, above 100%%",
						where, m.name, m.mr.PeakBytesPerPartition, m.mr.PeakPct, m.mr.CapacityBytes)
				}
			}
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
	for _, l := range res.Links {
		lr := LinkReport{Name: l.Name, GBps: l.GBps, Bytes: l.Bytes}
		if sim > 0 {
			lr.UtilPct = 100 * float64(l.Bytes) / (l.GBps * 1e9 * sim)
		}
		if lr.UtilPct > 100+1e-6 {
			return nil, fmt.Errorf("internal error: link %s carried %d bytes in %.3g s, %.1f%% of its %.0f GB/s", l.Name, l.Bytes, sim, lr.UtilPct, l.GBps)
		}
		r.Links = append(r.Links, lr)
	}
	sort.SliceStable(r.Links, func(i, j int) bool { return r.Links[i].Bytes > r.Links[j].Bytes })
	if res.CommTime > 0 {
		r.Comm = &CommReport{TimeS: res.CommTime.Seconds(), ExposedS: res.ExposedCommTime.Seconds()}
		if sim > 0 {
			r.Comm.ExposedPct = 100 * r.Comm.ExposedS / sim
		}
	}
	r.CoresUsed = max(cores, 1)
	n := float64(r.CoresUsed)
	for _, e := range isa.AllEngines() {
		s := sums[e]
		if s == nil {
			s = &EngineReport{StallS: map[string]float64{}, IdleS: sim * n}
		}
		for k := range s.StallS {
			s.StallS[k] /= n
		}
		s.BusyS /= n
		s.IdleS /= n
		s.BusyPct = pct(s.BusyS, sim)
		s.IdlePct = pct(s.IdleS, sim)
		r.Engines[e.String()] = *s
	}
	if sim > 0 {
		r.DMA.BandwidthGBps = float64(r.DMA.Bytes) / sim / 1e9
		r.TFLOPS = r.FLOPs / sim / 1e12
	}
	if dmaEngines > 0 {
		r.DMA.ActivePct = pct(dmaActive/float64(dmaEngines), sim)
	}

	// The peak follows each matmul's dtype and mode: the time TensorE needs
	// for all of them at their own peaks, against the time it had.
	t := &h.Core.Tensor
	arith := fmt.Sprintf("%dx%d PE x 2 FLOP x %g GHz", t.ArrayRows, t.ArrayCols, t.ClockGHz)
	for cl, f := range classFLOPs {
		if f == 0 {
			continue
		}
		class := engines.MatmulClass(cl)
		rate, _ := h.MatmulRate(class.DType(), class.PerfMode())
		r.PeakClasses = append(r.PeakClasses, PeakClass{DType: class.DType().String(), PerfMode: int(class.PerfMode()),
			Mode: modeName(class.PerfMode()), FLOPs: f, Rate: rate, PeakTFLOPSPerCore: base * rate / 1e12, TimeAtPeakS: f / (base * rate)})
	}
	if atPeak > 0 {
		r.PeakTFLOPS = r.FLOPs / atPeak * n / 1e12
		r.PeakPct = 100 * atPeak / (sim * n)
		r.PeakFormula = fmt.Sprintf("%s x %s x %d core(s) = %.2f TFLOPS", arith, classFormula(h, classFLOPs[:]), r.CoresUsed, r.PeakTFLOPS)
	} else {
		rate, _ := h.MatmulRate(info.DType, 0)
		r.PeakTFLOPS = base * rate * n / 1e12
		r.PeakFormula = fmt.Sprintf("%s x %g (%s) x %d core(s) = %.2f TFLOPS", arith, rate, info.DType, r.CoresUsed, r.PeakTFLOPS)
	}
	if r.PeakPct > 100*(1+1e-9) {
		return nil, fmt.Errorf("internal error: HFU %.1f%% is above 100%%: the matmuls (%s) did more than the peak %s allows in %s",
			r.PeakPct, classList(h, classFLOPs[:]), r.PeakFormula, res.SimTime)
	}
	if r.DMA.ActivePct > 100*(1+1e-9) {
		return nil, fmt.Errorf("internal error: DMA engines active %.1f%% of the simulated time, above 100%%", r.DMA.ActivePct)
	}

	sort.SliceStable(stalls, func(i, j int) bool { return stalls[i].TimeS > stalls[j].TimeS })
	if cores <= 1 {
		r.Slowest = nil
	} else if sl := r.Slowest; sl != nil {
		for i := range stalls {
			if stalls[i].Chip == sl.Chip && stalls[i].Core == sl.Core {
				st := stalls[i]
				sl.TopStall = &st
				break
			}
		}
	}
	if len(stalls) > 5 {
		stalls = stalls[:5]
	}
	r.Stalls = stalls
	for _, c := range info.Choices {
		r.Choices = append(r.Choices, ChoiceReport{Path: c.Path, Value: c.Value, Auto: c.Auto})
	}
	r.Notes = info.Notes
	ops, err := buildOps(res, info, r.CoresUsed)
	if err != nil {
		return nil, err
	}
	r.Ops = ops
	if err := buildModel(cfg, info, res, r); err != nil {
		return nil, err
	}
	if err := buildGPU(cfg, info, r); err != nil {
		return nil, err
	}
	r.compareOps(cfg)
	if err := buildCalibration(cfg, r); err != nil {
		return nil, err
	}
	if err := buildCost(cfg, r); err != nil {
		return nil, err
	}
	buildRoofline(cfg, info, r)
	return r, nil
}

// classFormula is the rate factor of the peak: "2 (fp8e4 double row
// (perf=2))" for one class, the FLOPs-weighted harmonic combination for
// several: "1.333 (FLOPs-weighted: 50.0% bf16 at x1, 50.0% fp8e4 double
// row (perf=2) at x2)".
func classFormula(h *configs.Hardware, flops []float64) string {
	var total, atRate1 float64
	var parts []string
	for cl, f := range flops {
		if f == 0 {
			continue
		}
		class := engines.MatmulClass(cl)
		rate, ok := h.MatmulRate(class.DType(), class.PerfMode())
		if !ok {
			continue
		}
		total += f
		atRate1 += f / rate
		parts = append(parts, fmt.Sprintf("%s at x%g", className(class.DType(), class.PerfMode()), rate))
	}
	if total == 0 {
		return "0"
	}
	if len(parts) == 1 {
		cl := 0
		for i, f := range flops {
			if f != 0 {
				cl = i
			}
		}
		class := engines.MatmulClass(cl)
		return fmt.Sprintf("%.4g (%s)", total/atRate1, className(class.DType(), class.PerfMode()))
	}
	i := 0
	for cl, f := range flops {
		if f == 0 {
			continue
		}
		if _, ok := h.MatmulRate(engines.MatmulClass(cl).DType(), engines.MatmulClass(cl).PerfMode()); !ok {
			continue
		}
		parts[i] = fmt.Sprintf("%.1f%% %s", 100*f/total, parts[i])
		i++
	}
	return fmt.Sprintf("%.4g (FLOPs-weighted: %s)", total/atRate1, strings.Join(parts, ", "))
}

// classList names the matmul classes that ran, with their FLOPs.
func classList(h *configs.Hardware, flops []float64) string {
	var parts []string
	for cl, f := range flops {
		if f == 0 {
			continue
		}
		class := engines.MatmulClass(cl)
		rate, _ := h.MatmulRate(class.DType(), class.PerfMode())
		parts = append(parts, fmt.Sprintf("%.4g FLOPs of %s at x%g", f, className(class.DType(), class.PerfMode()), rate))
	}
	return strings.Join(parts, ", ")
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// CSVHeader and CSVRow give one line of run totals; a model run's figures
// (for every layer and copy, where the simulated time is the simulated
// program's) close the line, empty for other runs.
func CSVHeader() string {
	return "config,hardware,workload,simulated_time_s,tflops,peak_pct,tensor_busy_pct,vector_busy_pct,scalar_busy_pct,gpsimd_busy_pct,sync_busy_pct,dma_bytes,dma_bandwidth_gbps,hbm_read_bytes,hbm_write_bytes,instructions,host_time_s,config_hash" +
		",model_time_s,ttft_s,tpot_s,tokens_per_s,mfu_pct,mbu_pct,usd_per_million_tokens"
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
		r.DMA.Bytes, r.DMA.BandwidthGBps, r.HBM.ReadBytes, r.HBM.WriteBytes, r.Instructions, r.HostTimeS, r.ConfigHash) + r.modelCSV()
}

// modelCSV is CSVRow's model columns: empty for a run of no model, and
// for a figure the run has none of (a prefill's time per output token).
func (r *Report) modelCSV() string {
	m := r.Model
	if m == nil {
		return strings.Repeat(",", 7) // CSVHeader's seven model columns, empty
	}
	g := func(v float64) string {
		if v == 0 {
			return ""
		}
		return strconv.FormatFloat(v, 'g', 9, 64)
	}
	return strings.Join([]string{"", g(m.TimeS), g(m.TTFTS), g(m.TPOTS), g(m.TokensPerS), g(m.MFUPct), g(m.MBUPct), g(m.USDPerMillionTokens)}, ",")
}

// HumanBytes prints a size in bytes with a binary unit: 812 B, 7.8 KiB,
// 15.9 MiB, 2.41 GiB.
func HumanBytes(b int64) string {
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
	cores := fmt.Sprintf("%d core(s)", r.CoresUsed)
	if all := r.ModelCores(); all > r.CoresUsed {
		// Replica or symmetric-core reuse simulated part of the plan.
		cores = fmt.Sprintf("%d of %d cores simulated", r.CoresUsed, all)
	}
	fmt.Fprintf(w, "trnsim %s: %s on %s (%s)\n", r.Trnsim, r.Workload, r.Hardware, cores)
	switch {
	case len(r.WorkloadShape) > 0:
		shape := r.WorkloadShape.String()
		if m := r.Model; m != nil && m.Steps > 1 {
			// Every decode step simulated: the cache lengths they ran at,
			// not only the mean step's the shape gives.
			first := m.Past - (m.Steps-1)/2
			shape = strings.Replace(shape, fmt.Sprintf("past=%d", m.Past), fmt.Sprintf("past=%d..%d", first, first+m.Steps-1), 1)
		}
		line("workload", "%s %s %s", r.WorkloadKind, shape, r.WorkloadDType)
	case r.WorkloadKind == "assembly":
		var classes []string
		for _, c := range r.PeakClasses {
			mode := ""
			if c.PerfMode != 0 {
				mode = " " + strings.ReplaceAll(c.Mode, "_", " ")
			}
			classes = append(classes, c.DType+mode)
		}
		matmuls := ""
		if len(classes) > 0 {
			matmuls = ", matmuls in " + strings.Join(classes, " and ")
		}
		line("workload", "assembly %s: %s%s", filepath.Base(r.Config), plural(r.Instructions, "instruction"), matmuls)
	}
	r.writeModel(line)
	r.writeGPU(line)
	r.writeWhy(line)
	r.writeCost(line)
	line("simulated time", "%s", clock.Time(r.SimulatedTimeS*1e15+0.5))
	line("throughput", "%.2f TFLOPS, %.1f%% of peak (HFU)", r.TFLOPS, r.PeakPct)
	line("peak", "%s", r.PeakFormula)
	var busy, idle []string
	for _, e := range isa.AllEngines() {
		er := r.Engines[e.String()]
		busy = append(busy, fmt.Sprintf("%s %.1f%%", e, er.BusyPct))
		idle = append(idle, fmt.Sprintf("%s %.1f%%", e, er.IdlePct))
	}
	line("engine busy", "%s", strings.Join(busy, "  "))
	line("", "(issuing instructions; semaphore waits are not busy, as in Neuron Explorer's active time)")
	line("engine idle", "%s", strings.Join(idle, "  "))
	if r.Model != nil && r.Model.Steps > 1 {
		line("", "(no instruction left: after its last one completed in each step, or none at all)")
	} else {
		line("", "(no instruction left: after its last one completed, or none at all)")
	}
	line("DMA", "%s in %d transfers, %.1f GB/s; engines active %.1f%%; DMA-compute overlap %.1f%%",
		HumanBytes(r.DMA.Bytes), r.DMA.Transfers, r.DMA.BandwidthGBps, r.DMA.ActivePct, r.DMAComputeOverlapPc)
	line("HBM", "read %s, written %s", HumanBytes(r.HBM.ReadBytes), HumanBytes(r.HBM.WriteBytes))
	if sl := r.Slowest; sl != nil {
		var busy []string
		for _, e := range isa.AllEngines() {
			if b, ok := sl.BusyPct[e.String()]; ok {
				busy = append(busy, fmt.Sprintf("%s %.1f%%", e, b))
			}
		}
		stall := ""
		if st := sl.TopStall; st != nil {
			stall = fmt.Sprintf("; waits most: %s %s %s", st.Engine, st.Cause, clock.Time(st.TimeS*1e15+0.5))
		}
		line("slowest core", "chip %d core %d, done at %s: busy %s%s", sl.Chip, sl.Core, clock.Time(sl.EndS*1e15+0.5), strings.Join(busy, "  "), stall)
	}
	if c := r.Comm; c != nil {
		line("communication", "collectives in flight %s of the simulated %s (first trigger to last completion), %s of it exposed (no compute engine busy): %.1f%%",
			clock.Time(c.TimeS*1e15+0.5), clock.Time(r.SimulatedTimeS*1e15+0.5), clock.Time(c.ExposedS*1e15+0.5), c.ExposedPct)
	}
	if len(r.Links) > 0 {
		var total int64
		for _, l := range r.Links {
			total += l.Bytes
		}
		b := r.Links[0]
		line("links", "%s over %d link directions; busiest %s: %s, %.1f%% of %.0f GB/s", HumanBytes(total), len(r.Links), b.Name, HumanBytes(b.Bytes), b.UtilPct, b.GBps)
	}
	if len(r.Stalls) == 0 {
		line("top stalls", "none")
	}
	// Rows alike but for the core (the ranks of a collective) are one
	// row naming the cores; the place column is as wide as its widest.
	type stallRow struct{ cores, engine, rest string }
	var rows []stallRow
	// text is a row's cause, time and its engine's figures.
	text := func(s StallReport) string {
		e := r.coreEngine(s.Chip, s.Core, s.Engine)
		return fmt.Sprintf("%-15s %s (%.1f%%)  [busy %.1f%%, %s]", s.Cause, clock.Time(s.TimeS*1e15+0.5), s.Pct, e.BusyPct, plural(e.Instructions, "instruction"))
	}
	for i := 0; i < len(r.Stalls); {
		s := r.Stalls[i]
		rest := text(s)
		j := i + 1
		for r.CoresUsed > 1 && j < len(r.Stalls) && r.Stalls[j].Engine == s.Engine && text(r.Stalls[j]) == rest {
			j++
		}
		cores := ""
		if r.CoresUsed > 1 {
			cores = fmt.Sprintf("%d.%d", s.Chip, s.Core)
			if last := r.Stalls[j-1]; j-i > 1 {
				cores = fmt.Sprintf("%d.%d-%d.%d", s.Chip, s.Core, last.Chip, last.Core)
				rest += fmt.Sprintf(" each of %d cores", j-i)
			}
		}
		rows = append(rows, stallRow{cores, s.Engine, rest})
		i = j
	}
	width := 0
	for _, row := range rows {
		width = max(width, len(row.cores))
	}
	for i, row := range rows {
		k := ""
		if i == 0 {
			k = "top stalls"
		}
		if width > 0 {
			line(k, "%-*s %-7s %s", width, row.cores, row.engine, row.rest)
		} else {
			line(k, "%-7s %s", row.engine, row.rest)
		}
	}
	if len(r.Stalls) > 0 {
		if r.CoresUsed > 1 {
			line("", "(CHIP.CORE and engine; waits with instructions left, before the first one too; idle time is not a stall)")
		} else {
			line("", "(waits with instructions left, before the first one too; idle time is not a stall)")
		}
	}
	r.writeOps(w, line)
	line("SBUF peak", "%s of %s per partition (%.1f%%)", HumanBytes(r.SBUF.PeakBytesPerPartition), HumanBytes(r.SBUF.CapacityBytes), r.SBUF.PeakPct)
	line("PSUM peak", "%s of %s per partition (%.1f%%)", HumanBytes(r.PSUM.PeakBytesPerPartition), HumanBytes(r.PSUM.CapacityBytes), r.PSUM.PeakPct)
	if len(r.Choices) > 0 {
		var cs []string
		for _, c := range r.Choices {
			name := strings.TrimPrefix(c.Path, "workload.lowering.")
			cs = append(cs, fmt.Sprintf("%s=%d", name, c.Value))
		}
		line("lowering", "%s", strings.Join(cs, " "))
	}
	for i, n := range r.Notes {
		k := ""
		if i == 0 {
			k = "notes"
		}
		line(k, "%s", n)
	}
	line("host", "%.3f s, %sinstructions/s, %sevents/s (%d instructions, %d events)",
		r.HostTimeS, si(r.InstructionsPerSec), si(r.EventsPerSec), r.Instructions, r.Events)
}

func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// coreEngine returns one core's figures for an engine.
func (r *Report) coreEngine(chip, core int32, engine string) EngineReport {
	for _, ch := range r.Chips {
		if ch.Chip != chip {
			continue
		}
		for _, c := range ch.Cores {
			if c.Core == core {
				return c.Engines[engine]
			}
		}
	}
	return EngineReport{}
}

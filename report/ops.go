package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/engines"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads"
)

// OpReport is one workload op's figures. Busy and stall times are averaged
// over the cores the run used, like the run's engines, so an engine's busy
// time over all ops adds up to the run's. time_s is the op's share of the
// simulated time (opstats.SplitTime): each instant goes to the ops whose
// window (its first compute instruction, or its first activity where it
// has none, to its last end: transfers triggered ahead of its compute do
// not stretch it) covers it, in equal parts, and an instant no window
// covers to the op that starts next; the shares add up to the simulated
// time.
type OpReport struct {
	ID   int32  `json:"id"`
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Instructions are the engine instructions of the op (DMA triggers
	// included).
	Instructions int64 `json:"instructions"`
	// FLOPs are what TensorE did for the op; UsefulFLOPs what the workload
	// needs (0 where the lowering does not say).
	FLOPs       float64 `json:"flops"`
	UsefulFLOPs float64 `json:"useful_flops"`
	// HBMBytes is what the op's transfers read from and wrote to HBM.
	HBMBytes      int64 `json:"hbm_bytes"`
	HBMReadBytes  int64 `json:"hbm_read_bytes"`
	HBMWriteBytes int64 `json:"hbm_write_bytes"`
	DMABytes      int64 `json:"dma_bytes"`
	// StartS and EndS bound the op's activity on any engine.
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	// SpanS is EndS - StartS, or, over a decode's steps simulated one
	// after another, the sum of the op's spans in each.
	SpanS float64 `json:"span_s"`
	// BusyS is per engine the union of the op's issue intervals, and for
	// "dma" the time some DMA engine moved the op's data.
	BusyS map[string]float64 `json:"busy_s"`
	// StallS is the stall time charged to the op's instructions, by cause
	// (summed over its engines).
	StallS   map[string]float64 `json:"stall_s"`
	TimeS    float64            `json:"time_s"`
	TimePct  float64            `json:"time_pct"`
	TopStall *OpStall           `json:"top_stall"`
	// Bound is the resource that decides the op's time (trainiumBound);
	// GPU each baseline's estimate of the same op (model runs).
	Bound string  `json:"bound"`
	GPU   []OpGPU `json:"gpu,omitempty"`
}

// OpStall is an op's largest stall: one engine and cause.
type OpStall struct {
	Engine string  `json:"engine"`
	Cause  string  `json:"cause"`
	TimeS  float64 `json:"time_s"`
}

// buildOps turns the run's per-op counters into the report's ops, checking
// that no op is busy longer than the run and that the shares add up.
func buildOps(res *chip.Result, info *workloads.Info, cores int) ([]OpReport, error) {
	names := map[int32]workloads.Op{}
	for _, o := range info.Ops {
		names[o.ID] = o
	}
	sim := res.SimTime.Seconds()
	n := float64(max(cores, 1))
	var ops []OpReport
	var shares clock.Time
	for _, o := range res.Ops {
		w, ok := names[o.ID]
		if !ok {
			w = workloads.Op{ID: o.ID, Name: fmt.Sprintf("op %d", o.ID)}
			if o.ID == 0 {
				w.Name = "(no op id)"
			}
		}
		or := OpReport{ID: o.ID, Name: w.Name, Kind: w.Kind, Instructions: o.Instructions, FLOPs: o.FLOPs, UsefulFLOPs: w.FLOPs,
			HBMBytes: o.HBMReadBytes + o.HBMWriteBytes, HBMReadBytes: o.HBMReadBytes, HBMWriteBytes: o.HBMWriteBytes, DMABytes: o.DMABytes,
			StartS: o.Start.Seconds(), EndS: o.End.Seconds(), SpanS: o.Span.Seconds(), BusyS: map[string]float64{}, StallS: map[string]float64{},
			TimeS: o.Time.Seconds(), TimePct: pct(o.Time.Seconds(), sim)}
		if o.Start == clock.Never {
			or.StartS, or.EndS = 0, 0
		}
		var top OpStall
		for _, e := range isa.AllEngines() {
			if b := o.Busy[e]; b > 0 {
				or.BusyS[e.String()] = b.Seconds() / n
				if b > res.SimTime*clock.Time(max(cores, 1)) {
					return nil, fmt.Errorf("internal error: op %d %s busy %s over %d core(s), above the simulated time %s", o.ID, e, b, cores, res.SimTime)
				}
			}
			for cause := engines.StallCause(0); cause < engines.NumStallCauses; cause++ {
				d := o.Stall[e][cause].Seconds() / n
				if d <= 0 {
					continue
				}
				or.StallS[cause.String()] += d
				if d > top.TimeS {
					top = OpStall{Engine: e.String(), Cause: cause.String(), TimeS: d}
				}
			}
		}
		if o.DMABusy > 0 {
			or.BusyS["dma"] = o.DMABusy.Seconds() / n
		}
		if top.TimeS > 0 {
			or.TopStall = &top
		}
		shares += o.Time
		ops = append(ops, or)
	}
	if len(ops) > 0 && shares != res.SimTime {
		return nil, fmt.Errorf("internal error: the ops' shares of time add up to %s, not the simulated time %s", shares, res.SimTime)
	}
	return ops, nil
}

// writeOps prints the ops that took the most time (up to five).
func (r *Report) writeOps(w io.Writer, line func(k, format string, args ...any)) {
	if len(r.Ops) == 0 {
		return
	}
	top := make([]OpReport, len(r.Ops))
	copy(top, r.Ops)
	sort.SliceStable(top, func(i, j int) bool { return top[i].TimeS > top[j].TimeS })
	shown := min(len(top), 5)
	for i, o := range top[:shown] {
		k := ""
		if i == 0 {
			k = "top ops"
			if len(top) > shown {
				k = fmt.Sprintf("top ops (%d of %d)", shown, len(top))
			}
		}
		var busy []string
		window := o.SpanS
		for _, e := range append(engineNames(), "dma") {
			if b, ok := o.BusyS[e]; ok && window > 0 {
				busy = append(busy, fmt.Sprintf("%s %.0f%%", e, pct(b, window)))
			}
		}
		stall := "no stall"
		if o.TopStall != nil {
			stall = fmt.Sprintf("top stall %s %s %s", o.TopStall.Engine, o.TopStall.Cause, clock.Time(o.TopStall.TimeS*1e15+0.5))
		}
		line(k, "%s: %s (%.1f%%), HBM %s; busy %s; %s", o.Name, clock.Time(o.TimeS*1e15+0.5), o.TimePct,
			HumanBytes(o.HBMBytes), strings.Join(busy, " "), stall)
	}
	run := "the run"
	if n := r.opSteps(); n > 1 {
		run = fmt.Sprintf("the run, all %d decode steps", int64(n))
	}
	line("", "(an op's time is its share of %s, time shared equally where ops overlap; busy is of the op's own span)", run)
}

func engineNames() []string {
	var out []string
	for _, e := range isa.AllEngines() {
		out = append(out, e.String())
	}
	return out
}

package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/gpu"
	"github.com/trnsim/trnsim/workloads"
	"github.com/trnsim/trnsim/workloads/graph"
)

// RooflineDevice is one device's roofline with the run's ops placed on it:
// the Trainium cores the run used, or a GPU baseline.
type RooflineDevice struct {
	// Key names the figure (roofline-KEY.png): "trainium" or the GPU.
	Key    string `json:"key"`
	Device string `json:"device"`
	// PeakFLOPS is the compute ceiling (FLOP/s), PeakSource what it is;
	// HBMBytesPerS the memory ceiling (bytes/s), HBMSource what it is.
	PeakFLOPS    float64 `json:"peak_flops"`
	PeakSource   string  `json:"peak_source"`
	HBMBytesPerS float64 `json:"hbm_bytes_per_s"`
	HBMSource    string  `json:"hbm_source"`
	// ByKind is set when the ops are aggregated by kind (too many to read
	// one by one): each point is then a kind's FLOPs, bytes and time.
	ByKind bool            `json:"by_kind"`
	Points []RooflinePoint `json:"points"`
	// LeftOut counts the ops that cannot be placed: no FLOPs (views,
	// collectives, copies), no bytes or no time.
	LeftOut int `json:"left_out"`
}

// RooflinePoint is an op (or a kind of op, Ops of them) on a roofline.
type RooflinePoint struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	Ops  int    `json:"ops"`
	// FLOPs is the op's useful work; Bytes the least HBM traffic it needs
	// on its own (every input read once, every output written once), or,
	// where the workload does not say, what it moved (BytesMoved set).
	FLOPs      float64 `json:"flops"`
	Bytes      float64 `json:"bytes"`
	BytesMoved bool    `json:"bytes_moved,omitempty"`
	// TimeS is its time on the device; Intensity FLOPs over Bytes
	// (FLOP/byte); FLOPS what it achieved (FLOPs over TimeS, FLOP/s);
	// AttainableFLOPS the roofline's rate at its intensity.
	TimeS           float64 `json:"time_s"`
	Intensity       float64 `json:"intensity"`
	FLOPS           float64 `json:"flops_per_s"`
	AttainableFLOPS float64 `json:"attainable_flops_per_s"`
}

// rooflineMaxPoints is the most ops a roofline shows one by one; beyond it
// they are aggregated by kind.
const rooflineMaxPoints = 12

// opWork is an op's useful FLOPs and least bytes, as placed on a roofline.
type opWork struct {
	name, kind   string
	flops, bytes float64
	moved        bool
	time         float64
}

// buildRoofline places the run's ops on the rooflines of the Trainium
// cores used and of each GPU baseline.
func buildRoofline(cfg *configs.RunConfig, info *workloads.Info, r *Report) {
	h := &cfg.Hardware
	graphOps := map[string]*graph.Op{}
	if mi := info.Model; mi != nil && mi.Graph != nil {
		for _, o := range mi.Graph.Ops {
			graphOps[o.Name] = o
		}
	}
	// Trainium: the ops the simulation ran, at their share of its time;
	// a kernel written by hand (assembly, tile IR), whose ops split its
	// transfers from its compute, as one point: its FLOPs over the HBM
	// bytes it moved, in the simulated time.
	var work []opWork
	if k := r.WorkloadKind; k == "assembly" || k == "tile" {
		flops := r.UsefulFLOPs
		if flops <= 0 {
			flops = r.FLOPs
		}
		work = append(work, opWork{name: r.Workload, kind: k, flops: flops, bytes: float64(r.HBM.ReadBytes + r.HBM.WriteBytes), moved: true, time: r.SimulatedTimeS})
	} else {
		for _, o := range r.Ops {
			w := opWork{name: o.Name, kind: o.Kind, time: o.TimeS}
			switch g := graphOps[o.Name]; {
			case g != nil:
				// (The graph's op is one pass's; the op's time may be all
				// the decode steps'.)
				w.flops, w.bytes, w.time = float64(g.FLOPs()), float64(g.MinHBMBytes()), o.TimeS/r.opSteps()
			case len(r.Ops) == 1 && info.FLOPs > 0 && info.MinHBMBytes > 0:
				w.flops, w.bytes = info.FLOPs, float64(info.MinHBMBytes)
			default:
				// (All the decode steps' work in all their time: per step,
				// as the graph's ops.)
				per := r.opSteps()
				w.flops, w.bytes, w.moved, w.time = o.UsefulFLOPs/per, float64(o.HBMBytes)/per, true, o.TimeS/per
				if w.flops == 0 {
					w.flops = o.FLOPs / per
				}
			}
			if w.kind == "" {
				w.kind = r.WorkloadKind
			}
			work = append(work, w)
		}
	}
	cores := float64(max(r.CoresUsed, 1))
	perChip := float64(max(h.Chip.Cores, 1))
	peakSrc := "TensorE " + r.PeakFormula
	if i := strings.LastIndex(r.PeakFormula, " = "); i >= 0 {
		peakSrc = "TensorE " + r.PeakFormula[:i]
	}
	trn := RooflineDevice{Key: "trainium", Device: r.trainiumName(), PeakFLOPS: r.PeakTFLOPS * 1e12, PeakSource: peakSrc,
		HBMBytesPerS: h.Chip.HBM.BandwidthGBps * 1e9 * cores / perChip,
		HBMSource:    fmt.Sprintf("HBM %.0f GB/s x %g of %g cores", h.Chip.HBM.BandwidthGBps, cores, perChip)}
	if cores == perChip {
		trn.HBMSource = fmt.Sprintf("HBM %.0f GB/s, the chip's", h.Chip.HBM.BandwidthGBps)
	}
	trn.place(work)
	r.Roofline = append(r.Roofline, trn)
	// Each GPU baseline: the same graph's ops at their estimated times.
	for _, g := range r.GPU {
		d, err := gpu.Lookup(g.GPU)
		if err != nil {
			continue
		}
		// The ops of one copy of the plan run split over its TP GPUs, each
		// op's time being a rank's: the ceilings are the TP GPUs'.
		dt := matmulDType(info.Model)
		tp := float64(max(g.TP, 1))
		dev := RooflineDevice{Key: g.GPU, Device: g.Title, PeakFLOPS: d.Peak(dt) * tp, PeakSource: fmt.Sprintf("dense %s tensor-core peak %.0f TFLOPS", dt, d.Peak(dt)/1e12),
			HBMBytesPerS: d.HBMGBps * 1e9 * tp, HBMSource: fmt.Sprintf("HBM %.0f GB/s", d.HBMGBps)}
		if tp > 1 {
			dev.Device = fmt.Sprintf("%s x %d (tp %d)", g.Title, int(tp), int(tp))
			dev.PeakSource += fmt.Sprintf(" x %d GPUs", int(tp))
			dev.HBMSource += fmt.Sprintf(" x %d GPUs", int(tp))
		}
		var gw []opWork
		for _, o := range g.Ops {
			w := opWork{name: o.Name, kind: o.Kind, time: o.TimeS}
			if op := graphOps[o.Name]; op != nil {
				w.flops, w.bytes = float64(op.FLOPs()), float64(op.MinHBMBytes())
			}
			gw = append(gw, w)
		}
		dev.place(gw)
		r.Roofline = append(r.Roofline, dev)
	}
}

// place puts the ops that have FLOPs, bytes and time on the roofline, one
// by one or, when there are more than rooflineMaxPoints, by kind.
func (d *RooflineDevice) place(work []opWork) {
	var ok []opWork
	for _, w := range work {
		if w.flops > 0 && w.bytes > 0 && w.time > 0 {
			ok = append(ok, w)
		} else {
			d.LeftOut++
		}
	}
	if len(ok) > rooflineMaxPoints {
		d.ByKind = true
		kinds := map[string]*RooflinePoint{}
		var order []string
		for _, w := range ok {
			p := kinds[w.kind]
			if p == nil {
				p = &RooflinePoint{Kind: w.kind}
				kinds[w.kind] = p
				order = append(order, w.kind)
			}
			p.Ops++
			p.FLOPs += w.flops
			p.Bytes += w.bytes
			p.TimeS += w.time
			p.BytesMoved = p.BytesMoved || w.moved
		}
		for _, k := range order {
			p := kinds[k]
			p.Name = fmt.Sprintf("%s (%d ops)", k, p.Ops)
			if p.Ops == 1 {
				p.Name = k
			}
			d.Points = append(d.Points, *p)
		}
	} else {
		for _, w := range ok {
			d.Points = append(d.Points, RooflinePoint{Name: w.name, Kind: w.kind, Ops: 1, FLOPs: w.flops, Bytes: w.bytes, BytesMoved: w.moved, TimeS: w.time})
		}
	}
	for i := range d.Points {
		p := &d.Points[i]
		p.Intensity = p.FLOPs / p.Bytes
		p.FLOPS = p.FLOPs / p.TimeS
		p.AttainableFLOPS = min(d.PeakFLOPS, p.Intensity*d.HBMBytesPerS)
	}
	sort.SliceStable(d.Points, func(i, j int) bool { return d.Points[i].Intensity < d.Points[j].Intensity })
}

// trainiumName names the Trainium side: "trn2 (8 NeuronCores)".
func (r *Report) trainiumName() string {
	n := max(r.CoresUsed, 1)
	if n == 1 {
		return fmt.Sprintf("%s (1 NeuronCore)", r.Hardware)
	}
	return fmt.Sprintf("%s (%d NeuronCores)", r.Hardware, n)
}

package workloads

import (
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/internal/memo"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/sched"
)

// Target returns the scheduler's typed view of a resolved hardware config.
func Target(cfg *configs.RunConfig) *sched.Target {
	h := &cfg.Hardware
	co := &h.Core
	t := &sched.Target{
		Name:            h.Name,
		Limits:          h.Limits(),
		Cost:            cfg.Cost,
		DMAEngineGBps:   co.DMA.EngineBandwidthGBps,
		DMAStartNs:      co.DMA.StartLatencyNs,
		DMACompletionNs: co.DMA.CompletionLatencyNs,
		HBMBytes:        h.HBMBytesPerChip(),
		DMAQoSClasses:   qosClasses(co),
		HBMGBps:         h.Chip.HBM.BandwidthGBps,

		DMATransposeEfficiency:   co.DMA.TransposeEfficiencyHBM,
		BackgroundLoadStationary: co.Tensor.BackgroundLoadStationary,
		VectorGpSimdShareSBUF:    co.Ports.VectorGpSimdShareSBUF,
		DMADescriptorNs:          co.DMA.DescriptorOverheadNs,
		DMADescriptorMaxBytes:    int64(co.DMA.DescriptorMaxKiB) * 1024,
		Memo:                     cfg.Memo,
	}
	t.ClockGHz[isa.EngineTensor] = co.Tensor.ClockGHz
	t.ClockGHz[isa.EngineVector] = co.Vector.ClockGHz
	t.ClockGHz[isa.EngineScalar] = co.Scalar.ClockGHz
	t.ClockGHz[isa.EngineGpSimd] = co.GpSimd.ClockGHz
	t.ClockGHz[isa.EngineSync] = co.Sync.ClockGHz
	t.ChipHops, t.ChipLatencyNs = chipRoutes(h)
	t.SymmetricLinks = h.Topology.Kind != "custom"
	t.CoresPerStack = h.Chip.Cores
	if st := h.Chip.HBM.Stacks; h.Chip.HBM.InterleaveBytes == 0 && st > 0 && h.Chip.Cores%st == 0 {
		t.CoresPerStack = h.Chip.Cores / st
	}
	return t
}

// graphTarget is Target for a graph lowering, with a memo of its own when
// cfg has none, so that its ops share the plan search's work (a Linear
// planned with and without its prefetch share, the same Linear in every
// layer).
func graphTarget(cfg *configs.RunConfig) *sched.Target {
	t := Target(cfg)
	if t.Memo == nil {
		t.Memo = memo.New()
	}
	return t
}

// chipRoutes returns the link hops and the latency (ns) of the route
// between every two chips, as package noc's Fabric.Route takes them
// (workloads may not import noc): dimension-order on a ring or torus, the
// shorter way round each axis; up to the switch and down; a shortest path
// of a custom topology; between nodes, the network (one hop, its latency).
// Nil for one chip, or when the topology links no chips.
func chipRoutes(h *configs.Hardware) ([][]int, [][]float64) {
	n, per := h.Chips, h.ChipsPerNode()
	t := &h.Topology
	if n < 2 || per < 1 || t.Kind == "none" {
		return nil, nil
	}
	hops := make([][]int, n)
	for a := range hops {
		hops[a] = make([]int, n)
	}
	var dims []int
	var adj [][]int
	switch t.Kind {
	case "ring", "2d_torus", "3d_torus":
		dims = t.Dims
		if len(dims) == 0 {
			dims = squareDims(per, map[string]int{"ring": 1, "2d_torus": 2, "3d_torus": 3}[t.Kind])
		}
	case "custom":
		adj = make([][]int, per)
		for _, l := range t.Links {
			if l.A < per && l.B < per {
				adj[l.A] = append(adj[l.A], l.B)
				adj[l.B] = append(adj[l.B], l.A)
			}
		}
	}
	for a := 0; a < per; a++ {
		dist := make([]int, per)
		switch {
		case dims != nil:
			for b := range dist {
				x, y := a, b
				for _, d := range dims {
					f := ((y%d-x%d)%d + d) % d
					dist[b] += min(f, d-f)
					x, y = x/d, y/d
				}
			}
		case adj != nil:
			for b := range dist {
				dist[b] = -1
			}
			dist[a] = 0
			for queue := []int{a}; len(queue) > 0; queue = queue[1:] {
				for _, b := range adj[queue[0]] {
					if dist[b] < 0 {
						dist[b] = dist[queue[0]] + 1
						queue = append(queue, b)
					}
				}
			}
		default: // switched
			for b := range dist {
				if b != a {
					dist[b] = 2
				}
			}
		}
		for node := 0; node < n/per; node++ {
			copy(hops[node*per+a][node*per:], dist)
		}
	}
	lat := make([][]float64, n)
	for a := range lat {
		lat[a] = make([]float64, n)
		for b := range lat[a] {
			switch {
			case a/per != b/per:
				hops[a][b], lat[a][b] = 1, h.EFA.LatencyNs
			case hops[a][b] < 0:
				lat[a][b] = -1
			default:
				lat[a][b] = float64(hops[a][b]) * h.Chip.Links.LatencyNs
			}
		}
	}
	return hops, lat
}

// squareDims is noc.SquareDims: n chips in axes sizes, as equal as
// possible, largest first.
func squareDims(n, axes int) []int {
	if axes <= 1 {
		return []int{n}
	}
	var best []int
	for a := 1; a <= n; a++ {
		if n%a != 0 {
			continue
		}
		rest := squareDims(n/a, axes-1)
		if rest[0] > a {
			continue
		}
		cand := append([]int{a}, rest...)
		if best == nil || spread(cand) < spread(best) {
			best = cand
		}
	}
	return best
}

func spread(d []int) int {
	lo, hi := d[0], d[0]
	for _, x := range d {
		lo, hi = min(lo, x), max(hi, x)
	}
	return hi - lo
}

// qosClasses returns the DMA QoS classes of a core (0: round robin).
func qosClasses(co *configs.CoreConfig) int {
	if co.DMA.Arbitration == "qos" {
		return co.DMA.QoSClasses
	}
	return 0
}

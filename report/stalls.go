package report

import (
	"sort"

	"github.com/trnsim/trnsim/isa"
)

// EngineShares is how an engine spent the run, in percent of the
// simulated time (averaged over the cores used, like Engines).
type EngineShares struct {
	Engine string
	// BusyPct is the engine's issue time; ThrottledPct the part of it that
	// TensorE's power ramp added (the power_throttle stall, which lies
	// within busy time).
	BusyPct, ThrottledPct float64
	// StallPct are the waits with instructions left, by cause (the causes
	// outside busy time).
	StallPct map[string]float64
	// IdlePct is the time with no instruction left; UnaccountedPct what
	// none of the others covers (gaps between instructions that no stall
	// explains), never below 0.
	IdlePct, UnaccountedPct float64
	// OverlapPct is how far busy, the stalls and idle as the simulator
	// counts them went past 100% (a stall charged while the instruction
	// before was still issuing); the stalls are then scaled down by that
	// much, in proportion, so the shares add up to 100%.
	OverlapPct float64
}

// withinBusy are the stall causes charged inside an instruction's issue
// interval rather than before it.
var withinBusy = map[string]bool{"power_throttle": true}

// Shares splits each engine's run into busy (and the part of it the power
// ramp added), stalls by cause, idle and the rest, from the report's
// engine figures, engines in their usual order; they add up to 100% (see
// OverlapPct).
func (r *Report) Shares() []EngineShares {
	var out []EngineShares
	sim := r.SimulatedTimeS
	for _, e := range isa.AllEngines() {
		er, ok := r.Engines[e.String()]
		if !ok {
			continue
		}
		s := EngineShares{Engine: e.String(), BusyPct: pct(er.BusyS, sim), IdlePct: pct(er.IdleS, sim), StallPct: map[string]float64{}}
		total := s.BusyPct + s.IdlePct
		for cause, t := range er.StallS {
			switch {
			case t <= 0:
			case withinBusy[cause]:
				s.ThrottledPct += pct(t, sim)
			default:
				s.StallPct[cause] = pct(t, sim)
				total += s.StallPct[cause]
			}
		}
		s.ThrottledPct = min(s.ThrottledPct, s.BusyPct)
		s.UnaccountedPct = max(0, 100-total)
		if total > 100 {
			s.OverlapPct = total - 100
			stalls := total - s.BusyPct - s.IdlePct
			scale := max(0, stalls-s.OverlapPct) / stalls
			for c := range s.StallPct {
				s.StallPct[c] *= scale
			}
		}
		out = append(out, s)
	}
	return out
}

// StallCauses are the causes outside busy time that any engine stalled
// on, the longest in total first.
func StallCauses(shares []EngineShares) []string {
	sum := map[string]float64{}
	for _, s := range shares {
		for c, v := range s.StallPct {
			sum[c] += v
		}
	}
	var out []string
	for c := range sum {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if sum[out[i]] != sum[out[j]] {
			return sum[out[i]] > sum[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}

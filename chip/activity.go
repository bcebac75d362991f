package chip

import (
	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/isa"
)

// maxActivityBins bounds the activity record; beyond it bins are merged
// pairwise and their width doubles.
// 2^16 bins keep the record (four arrays of 512 KiB) in cache: a 6 ms run
// keeps 100 ns bins, a 100 ms one coarsens to 1.6 us.
const maxActivityBins = 1 << 16

// activity records, in fixed-width time bins, how much of each bin some
// compute engine was busy and some DMA engine was moving data, to measure
// DMA-compute overlap without keeping every interval. Within a bin the
// union of several engines' intervals is approximated by their sum capped
// at the bin width, so the overlap is exact to within one bin width per
// bin (100 ns to start, doubling when a run outgrows the record).
type activity struct {
	width   clock.Time
	maxBins int
	compute bins
	dma     bins
	next    Tracer
	// Each engine's busy intervals arrive in start order and mostly touch
	// one another: they are merged into one open run per engine (and one
	// for the DMA engines together) and written to the bins when a gap
	// appears, so a run of back-to-back instructions costs one bin update.
	runs [isa.NumEngines + 1]run
}

// bins holds busy time per bin in two parts, so that adding an interval
// costs the same however many bins it spans: part has the time in the
// interval's first and last bins, and full is a difference array of how
// many intervals cover a bin whole (bin i is covered by the sum of
// full[0..i]).
type bins struct {
	part []clock.Time
	full []int32
}

// values returns the busy time of every bin.
func (b *bins) values(width clock.Time) []clock.Time {
	out := append([]clock.Time(nil), b.part...)
	var n int32
	for i := range out {
		n += b.full[i]
		out[i] += clock.Time(n) * width
	}
	return out
}

// materialise folds the whole-bin counts into part, in place.
func (b *bins) materialise(width clock.Time) {
	var n int32
	for i := range b.part {
		n += b.full[i]
		b.part[i] += clock.Time(n) * width
		b.full[i] = 0
	}
}

type run struct {
	start, end clock.Time
	open       bool
}

// dmaRun is the index of the DMA engines' run.
const dmaRun = int(isa.NumEngines)

// extend adds [start, end) to run i, writing the run to bins when the new
// interval does not touch it.
func (a *activity) extend(i int, b *bins, start, end clock.Time) {
	r := &a.runs[i]
	if r.open && start <= r.end && end >= r.start {
		r.start, r.end = clock.Min(r.start, start), clock.Max(r.end, end)
		return
	}
	if r.open {
		a.add(b, r.start, r.end)
	}
	*r = run{start: start, end: end, open: true}
}

// flush writes every open run to the bins.
func (a *activity) flush() {
	for i := range a.runs {
		r := &a.runs[i]
		if !r.open {
			continue
		}
		if i == dmaRun {
			a.add(&a.dma, r.start, r.end)
		} else {
			a.add(&a.compute, r.start, r.end)
		}
		r.open = false
	}
}

func newActivity(next Tracer) *activity {
	return &activity{width: 100 * clock.Nanosecond, maxBins: maxActivityBins, next: next}
}

// add records the busy interval [start, end).
func (a *activity) add(b *bins, start, end clock.Time) {
	if end <= start {
		return
	}
	for int((end-1)/a.width) >= a.maxBins {
		a.coarsen()
	}
	last := int((end - 1) / a.width)
	if last+1 >= len(b.part) {
		n := last + 2 // full[last+1] ends the run of whole bins
		if n > cap(b.part) {
			// Grow geometrically; coarsening then works in place.
			c := min(a.maxBins+1, max(1024, 2*n))
			part, full := make([]clock.Time, len(b.part), c), make([]int32, len(b.full), c)
			copy(part, b.part)
			copy(full, b.full)
			b.part, b.full = part, full
		}
		b.part, b.full = b.part[:n], b.full[:n]
	}
	first := int(start / a.width)
	if first == last {
		b.part[first] += end - start
		return
	}
	b.part[first] += clock.Time(first+1)*a.width - start
	b.part[last] += end - clock.Time(last)*a.width
	if last > first+1 {
		b.full[first+1]++
		b.full[last]--
	}
}

// coarsen doubles the bin width, merging bins pairwise in place.
func (a *activity) coarsen() {
	merge := func(b *bins) {
		b.materialise(a.width)
		v := b.part
		n := (len(v) + 1) / 2
		for i := 0; i < n; i++ {
			x := v[2*i]
			if 2*i+1 < len(v) {
				x += v[2*i+1]
			}
			b.part[i] = x
		}
		clear(b.part[n:])
		b.part, b.full = b.part[:n], b.full[:n]
	}
	merge(&a.compute)
	merge(&a.dma)
	a.width *= 2
}

// overlapPct returns the share of DMA-active time during which a compute
// engine was busy.
func (a *activity) overlapPct() float64 {
	a.flush()
	compute, dmaBins := a.compute.values(a.width), a.dma.values(a.width)
	var both, dma clock.Time
	for i, d := range dmaBins {
		d = clock.Min(d, a.width)
		var c clock.Time
		if i < len(compute) {
			c = clock.Min(compute[i], a.width)
		}
		dma += d
		both += clock.Min(c, d)
	}
	if dma == 0 {
		return 0
	}
	return 100 * float64(both) / float64(dma)
}

func (a *activity) Instruction(chip, core int32, eng isa.Engine, in *isa.Instruction, start, end clock.Time) {
	if eng != isa.EngineSync && !in.Op.IsDMA() && end > start {
		a.extend(int(eng), &a.compute, start, end)
	}
	if a.next != nil {
		a.next.Instruction(chip, core, eng, in, start, end)
	}
}

func (a *activity) Wait(chip, core int32, eng isa.Engine, in *isa.Instruction, sem isa.SemRef, start, end clock.Time) {
	if a.next != nil {
		a.next.Wait(chip, core, eng, in, sem, start, end)
	}
}

func (a *activity) DMA(chip, core int32, engine, engines int, queue int16, in *isa.Instruction, bytes int64, start, end clock.Time) {
	if end > start {
		a.extend(dmaRun, &a.dma, start, end)
	}
	if a.next != nil {
		a.next.DMA(chip, core, engine, engines, queue, in, bytes, start, end)
	}
}

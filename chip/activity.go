package chip

import (
	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/engines"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/opstats"
)

// maxActivityBins bounds the activity record; beyond it bins are merged
// pairwise and their width doubles.
// 2^16 bins keep the record (four arrays of 512 KiB) in cache: an 8 ms run
// keeps 134 ns bins, a 100 ms one coarsens to 2.1 us.
const maxActivityBins = 1 << 16

// initialBinShift sets the first bin width, 2^27 fs (134 ns). Widths are
// powers of two femtoseconds, so finding an interval's bins is a shift,
// not a division.
const initialBinShift = 27

// activity records, in fixed-width time bins, how much of each bin some
// compute engine was busy and some DMA engine was moving data, to measure
// DMA-compute overlap without keeping every interval. Within a bin the
// union of several engines' intervals is approximated by their sum capped
// at the bin width, so the overlap is exact to within one bin width per
// bin (134 ns to start, doubling when a run outgrows the record).
type activity struct {
	width   clock.Time
	shift   uint // width is 1 << shift
	maxBins int
	compute bins
	dma     bins
	// coll is the spans of collective ops (collOps), for the
	// communication that no compute hides.
	coll    bins
	collOps map[int32]bool
	// Each engine's busy intervals arrive in start order and mostly touch
	// one another: they are merged into one open run per engine (and one
	// for the DMA engines together, one for the collectives' traffic) and
	// written to the bins when a gap appears, so a run of back-to-back
	// instructions costs one bin update.
	runs [isa.NumEngines + 2]run
}

// bins holds busy time per bin in two parts, so that adding an interval
// costs the same however many bins it spans: part has the time in the
// interval's first and last bins, and full is a difference array of how
// many intervals cover a bin whole (bin i is covered by the sum of
// full[0..i]). Both are kept in chunks of binChunk bins, allocated together
// as the record grows and never copied.
type bins struct {
	part [][]clock.Time
	full [][]int32
	n    int // bins in use
}

// binChunk is the number of bins per chunk (a power of two): small enough
// that a chunk is an ordinary small allocation, not a fresh large span.
const binChunk = 1 << 10

// binsChunk is one chunk's storage (one allocation, holding no pointers).
type binsChunk struct {
	part [binChunk]clock.Time
	full [binChunk]int32
}

// grow makes room for n bins.
func (b *bins) grow(n int) {
	for len(b.part)*binChunk < n {
		c := new(binsChunk)
		b.part = append(b.part, c.part[:])
		b.full = append(b.full, c.full[:])
	}
	b.n = max(b.n, n)
}

func (b *bins) addPart(i int, t clock.Time) { b.part[i/binChunk][i%binChunk] += t }
func (b *bins) addFull(i int, d int32)      { b.full[i/binChunk][i%binChunk] += d }

// merge doubles the bins' width: bin i becomes the old bins 2i and 2i+1.
// It works in place: new bin i is written after old bins 2i and 2i+1 are
// read, and every old bin it overwrites has been read already.
func (b *bins) merge(width clock.Time) {
	var covered int32
	for c := 0; c*binChunk < b.n; c++ {
		part, full := b.part[c], b.full[c]
		m := min(binChunk, b.n-c*binChunk)
		for j := 0; j < m; j += 2 {
			covered += full[j]
			x := part[j] + clock.Time(covered)*width
			if j+1 < m {
				covered += full[j+1]
				x += part[j+1] + clock.Time(covered)*width
			}
			o := (c*binChunk + j) / 2
			b.part[o/binChunk][o%binChunk] = x
		}
	}
	n := (b.n + 1) / 2
	for c := range b.full {
		clear(b.full[c])
		if lo := n - c*binChunk; lo <= 0 {
			clear(b.part[c])
		} else if lo < binChunk {
			clear(b.part[c][lo:])
		}
	}
	b.n = n
}

type run struct {
	start, end clock.Time
	open       bool
}

// dmaRun is the index of the DMA engines' run, collRun the collectives'.
const (
	dmaRun  = int(isa.NumEngines)
	collRun = dmaRun + 1
)

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
		switch i {
		case dmaRun:
			a.add(&a.dma, r.start, r.end)
		case collRun:
			a.add(&a.coll, r.start, r.end)
		default:
			a.add(&a.compute, r.start, r.end)
		}
		r.open = false
	}
}

func newActivity() *activity {
	return &activity{width: 1 << initialBinShift, shift: initialBinShift, maxBins: maxActivityBins}
}

// add records the busy interval [start, end).
func (a *activity) add(b *bins, start, end clock.Time) {
	if end <= start {
		return
	}
	for int((end-1)>>a.shift) >= a.maxBins {
		a.coarsen()
	}
	last := int((end - 1) >> a.shift)
	if last+2 > b.n {
		b.grow(last + 2) // full[last+1] ends the run of whole bins
	}
	first := int(start >> a.shift)
	if first == last {
		b.addPart(first, end-start)
		return
	}
	b.addPart(first, clock.Time(first+1)*a.width-start)
	b.addPart(last, end-clock.Time(last)*a.width)
	if last > first+1 {
		b.addFull(first+1, 1)
		b.addFull(last, -1)
	}
}

// coarsen doubles the bin width, merging bins pairwise.
func (a *activity) coarsen() {
	a.compute.merge(a.width)
	a.dma.merge(a.width)
	a.coll.merge(a.width)
	a.width *= 2
	a.shift++
}

// overlap returns the DMA-active time and the part of it during which a
// compute engine was busy.
func (a *activity) overlap() (dma, both clock.Time) {
	a.withCompute(&a.dma, func(d, busy clock.Time) {
		dma += d
		both += clock.Min(busy, d)
	})
	return dma, both
}

// withCompute calls fn for every bin of b with b's busy time in the bin
// and the compute engines' (each capped at the bin width), after writing
// the open runs.
func (a *activity) withCompute(b *bins, fn func(x, busy clock.Time)) {
	a.flush()
	var nc, nb int32 // whole-bin coverage counts (prefix sums of full)
	for c := 0; c*binChunk < b.n; c++ {
		m := min(binChunk, b.n-c*binChunk)
		bp, bf := b.part[c][:m], b.full[c][:m]
		var cp []clock.Time
		var cf []int32
		if c < len(a.compute.part) {
			cp, cf = a.compute.part[c], a.compute.full[c]
		}
		for j := range bp {
			nb += bf[j]
			x := clock.Min(bp[j]+clock.Time(nb)*a.width, a.width)
			var busy clock.Time
			if cp != nil && c*binChunk+j < a.compute.n {
				nc += cf[j]
				busy = clock.Min(cp[j]+clock.Time(nc)*a.width, a.width)
			}
			fn(x, busy)
		}
	}
}

// Committed records a compute engine's busy interval (engines.Observer).
func (a *activity) Committed(c *engines.Commit) {
	if c.Engine != isa.EngineSync && !c.In.Op.IsDMA() && c.End > c.Start {
		a.extend(int(c.Engine), &a.compute, c.Start, c.End)
	}
}

// DMA records a DMA engine's share (dma.Tracer).
func (a *activity) DMA(chip, core int32, engine, n int, queue int16, in *isa.Instruction, bytes int64, start, end clock.Time) {
	if end > start {
		a.extend(dmaRun, &a.dma, start, end)
	}
}

// addCollectives records each collective op's span, from its first
// trigger to its last completion (latencies included: a small
// collective's time is mostly latency).
func (a *activity) addCollectives(ops []opstats.Op) {
	for _, o := range ops {
		if a.collOps[o.ID] && o.ID != 0 && o.End > o.Start {
			a.extend(collRun, &a.coll, o.Start, o.End)
		}
	}
}

// comm returns the time collectives were in flight and the part of it
// during which no compute engine was busy (to within a bin width per bin:
// within a bin the two are taken to overlap as much as they can).
func (a *activity) comm() (total, exposed clock.Time) {
	a.withCompute(&a.coll, func(l, busy clock.Time) {
		total += l
		if l > busy {
			exposed += l - busy
		}
	})
	return total, exposed
}

// overlapPct returns the share of DMA-active time during which a compute
// engine was busy.
func (a *activity) overlapPct() float64 {
	dma, both := a.overlap()
	if dma == 0 {
		return 0
	}
	return 100 * float64(both) / float64(dma)
}

package chip

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/engines"
	"github.com/trnsim/trnsim/isa"
)

// binSums is the reference: each bin's busy time, summed interval by
// interval.
func binSums(intervals [][2]clock.Time, width clock.Time) []clock.Time {
	var out []clock.Time
	for _, iv := range intervals {
		for t := iv[0] / width * width; t < iv[1]; t += width {
			i := int(t / width)
			for len(out) <= i {
				out = append(out, 0)
			}
			out[i] += clock.Min(iv[1], t+width) - clock.Max(iv[0], t)
		}
	}
	return out
}

// values returns the busy time of every bin (the reference the streaming
// overlap is checked against).
func (b *bins) values(width clock.Time) []clock.Time {
	out := make([]clock.Time, b.n)
	var n int32
	for i := range out {
		n += b.full[i/binChunk][i%binChunk]
		out[i] = b.part[i/binChunk][i%binChunk] + clock.Time(n)*width
	}
	return out
}

func TestActivityBinsMatchTheReference(t *testing.T) {
	for _, maxBins := range []int{maxActivityBins, 64, 7} {
		rng := rand.New(rand.NewSource(int64(maxBins)))
		a := newActivity()
		a.maxBins = maxBins
		var ivs [][2]clock.Time
		for i := 0; i < 400; i++ {
			start := clock.Time(rng.Int63n(int64(20 * clock.Microsecond)))
			end := start + clock.Time(rng.Int63n(int64(3*clock.Microsecond))) + 1
			ivs = append(ivs, [2]clock.Time{start, end})
			a.add(&a.compute, start, end)
		}
		want := binSums(ivs, a.width)
		got := a.compute.values(a.width)
		require.GreaterOrEqual(t, len(got), len(want))
		for i := range got {
			w := clock.Time(0)
			if i < len(want) {
				w = want[i]
			}
			require.Equal(t, w, got[i], "maxBins %d: bin %d of width %d", maxBins, i, a.width)
		}
		if maxBins < 100 {
			assert.Greater(t, a.width, clock.Time(1<<initialBinShift), "the record coarsened")
			assert.LessOrEqual(t, len(got), maxBins+1)
		}
	}
}

func TestActivityOverlap(t *testing.T) {
	ns := clock.Nanosecond
	mm := &isa.Instruction{Body: &isa.Body{Op: isa.OpMultiplyMoving, Engine: isa.EngineTensor}}
	dm := &isa.Instruction{Body: &isa.Body{Op: isa.OpDMACopy, Engine: isa.EngineSync}}
	a := newActivity()
	// TensorE busy [0, 1000) in two touching pieces; 16 DMA engines busy
	// [500, 1500) and then alone [3000, 3500).
	a.Committed(&engines.Commit{Engine: isa.EngineTensor, In: mm, Start: 0, End: 400 * ns})
	a.Committed(&engines.Commit{Engine: isa.EngineTensor, In: mm, Start: 400 * ns, End: 1000 * ns})
	a.DMA(0, 0, 0, 16, 0, dm, 4096, 500*ns, 1500*ns)
	a.DMA(0, 0, 0, 16, 0, dm, 4096, 3000*ns, 3500*ns)
	// 500 of the DMA's 1500 ns overlap compute.
	assert.InDelta(t, 100.0/3, a.overlapPct(), 1e-9)
}

// overlapPct streams through the bins; it must agree with the overlap
// computed from every bin's value, over many chunks and with compute
// ending before or after DMA.
func TestActivityOverlapMatchesBinValues(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewSource(seed))
		a := newActivity()
		span := int64(3000 * clock.Microsecond) // several chunks of bins
		for i := 0; i < 2000; i++ {
			s := clock.Time(rng.Int63n(span))
			e := s + clock.Time(rng.Int63n(int64(2*clock.Microsecond))) + 1
			if rng.Intn(2) == 0 {
				a.add(&a.compute, s, e)
			} else {
				a.add(&a.dma, s, e)
			}
		}
		if seed%2 == 0 {
			a.add(&a.dma, clock.Time(span), clock.Time(span)+clock.Millisecond) // DMA outlasts compute
		}
		compute, dma := a.compute.values(a.width), a.dma.values(a.width)
		var both, total clock.Time
		for i, d := range dma {
			d = clock.Min(d, a.width)
			var c clock.Time
			if i < len(compute) {
				c = clock.Min(compute[i], a.width)
			}
			total += d
			both += clock.Min(c, d)
		}
		require.Greater(t, total, clock.Time(0))
		assert.InDelta(t, 100*float64(both)/float64(total), a.overlapPct(), 1e-9, "seed %d", seed)
	}
}

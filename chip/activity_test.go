package chip

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/clock"
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

func TestActivityBinsMatchTheReference(t *testing.T) {
	for _, maxBins := range []int{maxActivityBins, 64, 7} {
		rng := rand.New(rand.NewSource(int64(maxBins)))
		a := newActivity(nil)
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
	mm := &isa.Instruction{Op: isa.OpMultiplyMoving, Engine: isa.EngineTensor}
	dm := &isa.Instruction{Op: isa.OpDMACopy, Engine: isa.EngineSync}
	a := newActivity(nil)
	// TensorE busy [0, 1000) in two touching pieces; 16 DMA engines busy
	// [500, 1500) and then alone [3000, 3500).
	a.Instruction(0, 0, isa.EngineTensor, mm, 0, 400*ns)
	a.Instruction(0, 0, isa.EngineTensor, mm, 400*ns, 1000*ns)
	a.DMA(0, 0, 0, 16, 0, dm, 4096, 500*ns, 1500*ns)
	a.DMA(0, 0, 0, 16, 0, dm, 4096, 3000*ns, 3500*ns)
	// 500 of the DMA's 1500 ns overlap compute.
	assert.InDelta(t, 100.0/3, a.overlapPct(), 1e-9)
}

package clock_test

import (
	"math/rand"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/clock"
)

// The engine clocks of the presets: TensorE on NC-v2, VectorE on NC-v2 and
// NC-v3, and a generic 1.4 GHz.
var freqs = []float64{2.8, 1.12, 0.96, 1.4}

func TestCyclesRoundsToTheFemtosecond(t *testing.T) {
	tests := []struct {
		ghz  float64
		n    int64
		want clock.Time
	}{
		{2.8, 0, 0},
		{2.8, 1, 357143},               // 357142.857...
		{2.8, 2, 714286},               // 714285.714...
		{2.8, 3, 1071429},              // 1071428.571...
		{2.8, 7, 2500000},              // exactly 2.5 ns
		{2.8, 1000000, 357142857143},   // 357142857142.857...
		{1.12, 1, 892857},              // 892857.142...
		{1.12, 28, 25000000},           // exactly 25 ns
		{1.12, 1000000, 892857142857},  // 892857142857.142...
		{0.96, 1, 1041667},             // 1041666.666...
		{0.96, 3, 3125000},             // exactly 3.125 ns
		{0.96, 1000000, 1041666666667}, // 1041666666666.666...
		{1.4, 1, 714286},               // 714285.714...
		{1.4, 7, 5000000},              // exactly 5 ns
		{1.4, 1000000, 714285714286},   // 714285714285.714...
	}
	for _, tc := range tests {
		c := clock.New(tc.ghz)
		assert.Equal(t, tc.want, c.Cycles(tc.n), "%v GHz, %d cycles", tc.ghz, tc.n)
		assert.Equal(t, tc.want, c.CyclesF(float64(tc.n)), "%v GHz, %d cycles (CyclesF)", tc.ghz, tc.n)
		assert.InDelta(t, float64(tc.n), c.ToCycles(tc.want), 1e-5, "%v GHz, ToCycles", tc.ghz)
	}
	// Fractional cycles.
	assert.Equal(t, clock.Time(178571), clock.New(2.8).CyclesF(0.5)) // 178571.428...
	assert.Equal(t, clock.Time(1250000), clock.New(1.4).CyclesF(1.75))
}

// cyclesAround returns cycle counts near zero and near 10^6.
func cyclesAround() []int64 {
	var ns []int64
	for n := int64(0); n < 300; n++ {
		ns = append(ns, n, 1_000_000-150+n)
	}
	return ns
}

func TestEdgeIsExactOnWholeCycles(t *testing.T) {
	for _, ghz := range freqs {
		c := clock.New(ghz)
		for _, n := range cyclesAround() {
			e := c.Cycles(n)
			require.Equal(t, e, c.Edge(e), "%v GHz: Edge(Cycles(%d)) must be Cycles(%d)", ghz, n, n)
			require.Equal(t, c.Cycles(n+1), c.Edge(e+1), "%v GHz: 1 fs after edge %d", ghz, n)
			if n > 0 {
				require.Equal(t, e, c.Edge(e-1), "%v GHz: 1 fs before edge %d", ghz, n)
				require.Equal(t, e, c.Edge(c.Cycles(n-1)+1), "%v GHz: just after edge %d", ghz, n-1)
			}
		}
	}
}

func TestEdgeIsTheFirstEdgeAtOrAfterT(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, ghz := range freqs {
		c := clock.New(ghz)
		ts := []clock.Time{0, 1, clock.Nanosecond, clock.Microsecond, clock.Millisecond}
		for i := 0; i < 2000; i++ {
			ts = append(ts, clock.Time(rng.Int63n(int64(10*clock.Millisecond))))
		}
		for _, tt := range ts {
			e := c.Edge(tt)
			require.GreaterOrEqual(t, e, tt, "%v GHz: Edge(%d) before t", ghz, tt)
			// e is a whole-cycle edge, and the edge before it is before t.
			n := int64(c.ToCycles(e) + 0.5)
			require.Equal(t, c.Cycles(n), e, "%v GHz: Edge(%d)=%d is not an edge", ghz, tt, e)
			if n > 0 {
				require.Less(t, c.Cycles(n-1), tt, "%v GHz: Edge(%d) skipped an edge", ghz, tt)
			}
			require.Equal(t, e, c.Edge(e), "%v GHz: Edge not idempotent at %d", ghz, tt)
		}
		// Monotonic.
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		prev := clock.Time(-1)
		for _, tt := range ts {
			e := c.Edge(tt)
			require.GreaterOrEqual(t, e, prev, "%v GHz: Edge not monotonic at %d", ghz, tt)
			prev = e
		}
	}
}

func TestEdgeTable(t *testing.T) {
	tests := []struct {
		ghz  float64
		t    clock.Time
		want clock.Time
	}{
		{2.8, 0, 0},
		{2.8, 1, 357143},
		{2.8, 357142, 357143},
		{2.8, 357143, 357143},
		{2.8, 357144, 714286},
		{1.12, 892857, 892857},
		{1.12, 892858, 1785714}, // 1785714.285...
		{0.96, 1041667, 1041667},
		{0.96, 1041666, 1041667},
		{1.4, 5000000, 5000000},
		{1.4, 5000001, 5714286},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, clock.New(tc.ghz).Edge(tc.t), "%v GHz, Edge(%d)", tc.ghz, tc.t)
	}
}

func TestFromNanoseconds(t *testing.T) {
	tests := []struct {
		ns   float64
		want clock.Time
	}{
		{0, 0},
		{1, clock.Nanosecond},
		{0.5, 500 * clock.Picosecond},
		{16, 16 * clock.Nanosecond},
		{1300, 1300 * clock.Nanosecond},
		{2.8, 2800000},
		{1e6, clock.Millisecond},
		{0.0000004, 0}, // 0.4 fs rounds down
		{0.0000006, 1}, // 0.6 fs rounds up
		{-1, -clock.Nanosecond},
	}
	for _, tc := range tests {
		got := clock.FromNanoseconds(tc.ns)
		assert.Equal(t, tc.want, got, "FromNanoseconds(%v)", tc.ns)
	}
	assert.InDelta(t, 1300.0, clock.FromNanoseconds(1300).Nanoseconds(), 1e-9)
	assert.InDelta(t, 1.3e-6, clock.FromNanoseconds(1300).Seconds(), 1e-18)
	assert.InDelta(t, 1.3e-6, float64(clock.FromNanoseconds(1300).VTime()), 1e-18)
}

func TestUnits(t *testing.T) {
	assert.Equal(t, clock.Time(1), clock.Femtosecond)
	assert.Equal(t, clock.Time(1e3), clock.Picosecond)
	assert.Equal(t, clock.Time(1e6), clock.Nanosecond)
	assert.Equal(t, clock.Time(1e9), clock.Microsecond)
	assert.Equal(t, clock.Time(1e12), clock.Millisecond)
	assert.Equal(t, clock.Time(1e15), clock.Second)
	assert.Greater(t, clock.Never, 1000*clock.Second)
}

func TestTimeString(t *testing.T) {
	tests := []struct {
		t    clock.Time
		want string
	}{
		{0, "0.0 ns"},
		{1, "0.0 ns"},
		{clock.Nanosecond, "1.0 ns"},
		{1500 * clock.Picosecond, "1.5 ns"},
		{999 * clock.Nanosecond, "999.0 ns"},
		{clock.Microsecond, "1.000 us"},
		{1500 * clock.Nanosecond, "1.500 us"},
		{999999 * clock.Nanosecond, "999.999 us"},
		{clock.Millisecond, "1.000 ms"},
		{2500 * clock.Microsecond, "2.500 ms"},
		{3 * clock.Second, "3000.000 ms"},
		{-2 * clock.Nanosecond, "-2.0 ns"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, tc.t.String(), "%d fs", int64(tc.t))
	}
}

func TestMaxMin(t *testing.T) {
	tests := []struct {
		a, b, max, min clock.Time
	}{
		{1, 2, 2, 1},
		{2, 1, 2, 1},
		{5, 5, 5, 5},
		{-3, 0, 0, -3},
		{0, clock.Never, clock.Never, 0},
		{clock.Never, clock.Never, clock.Never, clock.Never},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.max, clock.Max(tc.a, tc.b), "Max(%d, %d)", tc.a, tc.b)
		assert.Equal(t, tc.min, clock.Min(tc.a, tc.b), "Min(%d, %d)", tc.a, tc.b)
	}
}

func TestEdgeMemoMatchesClock(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for _, ghz := range []float64{1.4, 2.8, 0.96, 1.12} {
		c := clock.New(ghz)
		m := clock.NewEdgeMemo(c)
		var prev clock.Time
		for i := 0; i < 20000; i++ {
			var q clock.Time
			switch rng.Intn(4) {
			case 0:
				q = prev // repeated query
			case 1:
				q = clock.Time(rng.Int63n(int64(clock.Millisecond)))
			case 2:
				q = m.After(c.Edge(prev), rng.Int63n(5))
				require.Equal(t, c.After(c.Edge(prev), 0), c.Edge(prev))
			default:
				q = c.Edge(prev) // an edge
			}
			require.Equal(t, c.Edge(q), m.Edge(q), "%g GHz: Edge(%d)", ghz, q)
			n := rng.Int63n(8) * rng.Int63n(1000)
			require.Equal(t, c.Cycles(n), m.Cycles(n), "%g GHz: Cycles(%d)", ghz, n)
			prev = q
		}
	}
}

package opstats

import (
	"math/rand"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/engines"
	"github.com/trnsim/trnsim/isa"
)

func TestSplitTime(t *testing.T) {
	for _, tc := range []struct {
		name string
		ws   []Window
		sim  clock.Time
		want []clock.Time
	}{
		{"one op, the whole run", []Window{{1, 0, 100}}, 100, []clock.Time{100}},
		{"one op, gaps before and after go to it", []Window{{1, 10, 90}}, 100, []clock.Time{100}},
		{"back to back", []Window{{1, 0, 40}, {2, 40, 100}}, 100, []clock.Time{40, 60}},
		{"overlap split equally", []Window{{1, 0, 60}, {2, 40, 100}}, 100, []clock.Time{50, 50}},
		{"a gap goes to the op that starts next", []Window{{1, 0, 30}, {2, 50, 100}}, 100, []clock.Time{30, 70}},
		{"nested", []Window{{1, 0, 100}, {2, 20, 40}}, 100, []clock.Time{90, 10}},
		{"three at once", []Window{{1, 0, 30}, {2, 0, 30}, {3, 0, 30}}, 30, []clock.Time{10, 10, 10}},
		{"an empty window gets nothing", []Window{{1, 0, 100}, {2, 50, 50}}, 100, []clock.Time{100, 0}},
		{"no window at all: the first op", []Window{{1, 0, 0}, {2, 0, 0}}, 10, []clock.Time{10, 0}},
		{"a tail after every window goes to the last to end", []Window{{1, 0, 50}, {2, 10, 80}}, 100, []clock.Time{30, 70}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, SplitTime(tc.ws, tc.sim))
		})
	}
}

// Random windows: the shares always add up to the run, none is negative,
// and an op never gets more than its window plus the gaps it is given.
func TestSplitTimeAddsUp(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for trial := 0; trial < 200; trial++ {
		n := 1 + rng.Intn(12)
		var ws []Window
		var last clock.Time
		for i := 0; i < n; i++ {
			s := clock.Time(rng.Intn(1000))
			e := s + clock.Time(rng.Intn(300))
			ws = append(ws, Window{int32(i), s, e})
			last = max(last, e)
		}
		sim := last + clock.Time(rng.Intn(50))
		got := SplitTime(ws, sim)
		var sum clock.Time
		for _, v := range got {
			assert.GreaterOrEqual(t, v, clock.Time(0))
			sum += v
		}
		assert.Equal(t, sim, sum, "trial %d", trial)
	}
}

// The union of intervals arriving in order of end, against a sort-and-merge
// reference.
func TestUnionTail(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for trial := 0; trial < 300; trial++ {
		type iv struct{ lo, hi clock.Time }
		var ivs []iv
		for i := 0; i < 1+rng.Intn(40); i++ {
			lo := clock.Time(rng.Intn(2000))
			ivs = append(ivs, iv{lo, lo + clock.Time(rng.Intn(200))})
		}
		sort.Slice(ivs, func(i, j int) bool { return ivs[i].hi < ivs[j].hi })
		var u unionTail
		var got clock.Time
		for _, v := range ivs {
			got += u.add(v.lo, v.hi)
		}
		byLo := append([]iv(nil), ivs...)
		sort.Slice(byLo, func(i, j int) bool { return byLo[i].lo < byLo[j].lo })
		var want clock.Time
		cur := iv{-1, -1}
		for _, v := range byLo {
			if v.hi <= v.lo {
				continue
			}
			if v.lo > cur.hi {
				want += max(cur.hi-cur.lo, 0)
				cur = v
			} else {
				cur.hi = max(cur.hi, v.hi)
			}
		}
		want += max(cur.hi-cur.lo, 0)
		// Exact while no interval reaches back over more than unionRuns
		// closed gaps; the random intervals here are short enough.
		assert.Equal(t, want, got, "trial %d", trial)
	}
}

func TestWindowStartsAtTheFirstCompute(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   Op
		want Window
	}{
		{"a prefetch at the start does not stretch it", Op{ID: 1, Start: 0, ComputeStart: 900, End: 1000}, Window{1, 900, 1000}},
		{"a store after the compute stays in it", Op{ID: 2, Start: 100, ComputeStart: 100, End: 500}, Window{2, 100, 500}},
		{"an op with no compute (a gather): its whole activity", Op{ID: 3, Start: 40, ComputeStart: clock.Never, End: 90}, Window{3, 40, 90}},
		{"compute after the last transfer ended: the compute alone", Op{ID: 4, Start: 0, ComputeStart: 80, End: 60}, Window{4, 80, 80}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.op.window())
		})
	}
}

// commit is one instruction of an op on an engine, for opsOf.
type commit struct {
	op         int32
	opc        isa.Opcode
	start, end clock.Time
}

// opsOf is the per-op figures of one engine that committed cs, in start
// order, over a run of sim.
func opsOf(eng isa.Engine, sim clock.Time, cs []commit) []Op {
	c := New()
	st := engines.NewStats()
	for _, x := range cs {
		in := &isa.Instruction{Body: &isa.Body{Op: x.opc, OpID: x.op}}
		st.Committed(&engines.Commit{In: in, Dec: &isa.Decoded{}, Start: x.start, End: x.end, Completion: x.end})
	}
	c.AddEngine(0, 0, eng, &st)
	return c.Ops(sim)
}

func TestPrefetchedOpTakesOnlyItsComputeShare(t *testing.T) {
	// Op 2's weights are prefetched at the run's start; op 1 runs from 0
	// to 900 and op 2 computes from 900 to 1000. Before, op 2's window
	// covered the whole run and it took half of op 1's time.
	ops := opsOf(isa.EngineVector, 1000, []commit{{2, isa.OpDMACopy, 0, 10}, {1, isa.OpTensorTensor, 0, 900}, {2, isa.OpMultiplyMoving, 900, 1000}})
	require.Len(t, ops, 2)
	assert.Equal(t, clock.Time(900), ops[0].Time)
	assert.Equal(t, clock.Time(100), ops[1].Time)
	assert.Equal(t, clock.Time(1000), ops[1].Span, "the span is still the op's whole activity")
}

// Synchronisation is not compute: an op of transfers and a closing nop
// (a collective) keeps its whole activity as its window.
func TestSynchronisationDoesNotStartAWindow(t *testing.T) {
	ops := opsOf(isa.EngineGpSimd, 1000, []commit{{1, isa.OpDMACopy, 0, 10}, {1, isa.OpSemWait, 5, 6}, {2, isa.OpTensorTensor, 10, 600}, {1, isa.OpNop, 990, 1000}})
	require.Len(t, ops, 2)
	assert.Equal(t, clock.Never, ops[0].ComputeStart)
	assert.Equal(t, clock.Time(10+590/2+400), ops[0].Time, "the collective's window is its whole activity")
}

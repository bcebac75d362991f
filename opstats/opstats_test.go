package opstats

import (
	"math/rand"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/trnsim/trnsim/clock"
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

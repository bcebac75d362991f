package memory

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/clock"
)

type booking struct {
	start, d clock.Time
	owner    int
}

func portWith(bs ...booking) *Port {
	p := NewPort("test port")
	for _, b := range bs {
		p.Reserve(b.start, b.d, b.owner)
	}
	return p
}

func TestPortEarliest(t *testing.T) {
	const a, b, c = 1, 2, 3
	tests := []struct {
		name  string
		res   []booking
		t, d  clock.Time
		owner int
		want  clock.Time
	}{
		{"idle port", nil, 7, 5, b, 7},
		{"overlap moves past the reservation", []booking{{10, 10, a}}, 15, 5, b, 20},
		{"request starting inside moves to its end", []booking{{10, 10, a}}, 10, 1, b, 20},
		{"fits before the reservation", []booking{{10, 10, a}}, 0, 10, b, 0},
		{"one femtosecond too long to fit before", []booking{{10, 10, a}}, 0, 11, b, 20},
		{"starts exactly at the end", []booking{{10, 10, a}}, 20, 5, b, 20},
		{"owner never waits for itself", []booking{{10, 10, a}}, 15, 5, a, 15},
		{"owner skips its own, fits before another", []booking{{10, 10, a}, {20, 10, b}}, 12, 5, a, 12},
		{"owner skips its own and waits for others", []booking{{10, 10, a}, {20, 10, b}}, 12, 10, a, 30},
		{"gap that fits is used", []booking{{10, 10, a}, {30, 10, a}}, 15, 10, b, 20},
		{"gap too small is skipped", []booking{{10, 10, a}, {30, 10, a}}, 15, 11, b, 40},
		{"own reservation in a gap is ignored", []booking{{10, 10, a}, {20, 10, b}, {30, 10, a}}, 12, 5, b, 20},
		{"back-to-back owners", []booking{{0, 10, a}, {10, 10, c}}, 0, 5, b, 20},
		{"later gap after several", []booking{{0, 10, a}, {10, 5, c}, {20, 5, a}}, 0, 5, b, 15},
		{"booked out of time order", []booking{{30, 10, a}, {0, 10, c}}, 5, 10, b, 10},
		{"zero-length booking is ignored", []booking{{10, 0, a}}, 10, 5, b, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := portWith(tc.res...)
			got := p.Earliest(tc.t, tc.d, tc.owner)
			assert.Equal(t, tc.want, got)
			// The start found does not overlap another owner's booking.
			for _, r := range tc.res {
				if r.owner != tc.owner && r.d > 0 {
					assert.False(t, got < r.start+r.d && r.start < got+tc.d, "overlaps %+v", r)
				}
			}
		})
	}
}

func TestPortReserveSequence(t *testing.T) {
	p := NewPort("psum")
	assert.Equal(t, "psum", p.Name)
	// Three engines ask for the port at time 0 in event order.
	s := p.Earliest(0, 10, 1)
	require.Equal(t, clock.Time(0), s)
	p.Reserve(s, 10, 1)
	s = p.Earliest(0, 5, 2)
	require.Equal(t, clock.Time(10), s)
	p.Reserve(s, 5, 2)
	s = p.Earliest(0, 5, 3)
	require.Equal(t, clock.Time(15), s)
	p.Reserve(s, 5, 3)
	// Owner 1 again: its own [0,10) does not block it, the others do.
	assert.Equal(t, clock.Time(20), p.Earliest(12, 2, 1))
	assert.Equal(t, clock.Time(5), p.Earliest(5, 5, 1))
	assert.Equal(t, clock.Time(20), p.Earliest(5, 6, 1))
	// Reservations stay sorted by start.
	res, _ := live(p)
	for i := 1; i < len(res); i++ {
		assert.LessOrEqual(t, res[i-1].start, res[i].start)
	}
	assert.Len(t, res, 3)
	_, owners := live(p)
	assert.Equal(t, []int{1, 2, 3}, owners)
}

func TestPortPrune(t *testing.T) {
	tests := []struct {
		name  string
		res   []booking
		at    clock.Time
		left  int
		check clock.Time // Earliest(at, 1, other) after pruning
	}{
		{"nothing finished", []booking{{0, 10, 1}, {10, 10, 1}}, 5, 2, 20},
		{"finished exactly at t is forgotten", []booking{{0, 10, 1}, {10, 10, 1}}, 10, 1, 20},
		{"running reservation is kept", []booking{{0, 10, 1}, {10, 10, 1}, {20, 10, 1}}, 15, 2, 30},
		{"all finished", []booking{{0, 10, 1}, {10, 10, 1}}, 30, 0, 30},
		// Prune stops at the first reservation still running: a finished
		// one behind it is kept (harmless: it cannot block a request >= t).
		{"long reservation shields later finished ones", []booking{{0, 100, 1}, {10, 10, 2}}, 50, 2, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := portWith(tc.res...)
			p.Prune(tc.at)
			res, owners := live(p)
			assert.Len(t, res, tc.left)
			assert.Len(t, owners, tc.left)
			for _, r := range res[:min(1, len(res))] {
				assert.Greater(t, r.end, tc.at, "the first kept reservation is still running")
			}
			assert.Equal(t, tc.check, p.Earliest(tc.at, 1, 9))
		})
	}
	// Pruning keeps owners aligned with their reservations.
	p := portWith(booking{0, 10, 1}, booking{10, 10, 2}, booking{20, 10, 3})
	p.Prune(10)
	_, owners := live(p)
	assert.Equal(t, []int{2, 3}, owners)
	assert.Equal(t, clock.Time(10), p.Earliest(10, 5, 2), "owner 2 does not wait for itself")
	assert.Equal(t, clock.Time(30), p.Earliest(10, 5, 1))
}

// live returns the reservations a port still holds, and their owners.
func live(p *Port) (res []span, owners []int) {
	for _, r := range p.res[p.head:] {
		res, owners = append(res, r.span), append(owners, r.owner)
	}
	return res, owners
}

// refPort is the plain model Port must agree with: every reservation kept
// in a sorted list, pruned by removal.
type refPort struct {
	res    []span
	owners []int
}

func (p *refPort) earliest(t, d clock.Time, owner int) clock.Time {
	s := t
	for i, r := range p.res {
		if p.owners[i] == owner || r.end <= s {
			continue
		}
		if r.start >= s+d {
			break
		}
		s = r.end
	}
	return s
}

func (p *refPort) reserve(s, d clock.Time, owner int) {
	i := len(p.res)
	for i > 0 && p.res[i-1].start > s {
		i--
	}
	p.res = append(p.res[:i], append([]span{{s, s + d}}, p.res[i:]...)...)
	p.owners = append(p.owners[:i], append([]int{owner}, p.owners[i:]...)...)
}

func (p *refPort) prune(t clock.Time) {
	n := 0
	for n < len(p.res) && p.res[n].end <= t {
		n++
	}
	p.res, p.owners = p.res[n:], p.owners[n:]
}

// Random bookings and prunes, long enough to reclaim the spent prefix many
// times: Port answers as the plain model does.
func TestPortMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	p, ref := NewPort("x"), &refPort{}
	now := clock.Time(0)
	for i := 0; i < 20000; i++ {
		now += clock.Time(rng.Intn(4))
		p.Prune(now)
		ref.prune(now)
		owner := rng.Intn(3)
		d := clock.Time(1 + rng.Intn(6))
		at := now + clock.Time(rng.Intn(10))
		s := p.Earliest(at, d, owner)
		require.Equal(t, ref.earliest(at, d, owner), s, "step %d", i)
		p.Reserve(s, d, owner)
		ref.reserve(s, d, owner)
		res, owners := live(p)
		require.Equal(t, ref.res, res, "step %d", i)
		require.Equal(t, ref.owners, owners, "step %d", i)
	}
}

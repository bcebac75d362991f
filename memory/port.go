package memory

import "github.com/trnsim/trnsim/clock"

// Port is a shared resource that one engine at a time may hold: the SBUF
// port VectorE and GpSimd share on NC-v2, the PSUM port VectorE and ScalarE
// share, or one PSUM bank. Engines reserve it for an instruction's issue
// interval; a request that overlaps an existing reservation moves to the
// first gap that fits. Reservations are made in event order, so they may lie
// in the future (an engine commits its next instruction before it starts).
type Port struct {
	// Name says what the port is, for stall reports.
	Name string
	// res holds disjoint reservations sorted by start, from index head on
	// (the prefix is spent space, reclaimed when the list must grow).
	res []span
	// owner of each reservation, so an engine never waits for itself.
	owners []int
	head   int
}

type span struct{ start, end clock.Time }

// NewPort returns an idle port.
func NewPort(name string) *Port { return &Port{Name: name} }

// Earliest returns the first start >= t at which owner can hold the port
// for d without overlapping another owner's reservation.
func (p *Port) Earliest(t, d clock.Time, owner int) clock.Time {
	s := t
	for i := p.head; i < len(p.res); i++ {
		r := p.res[i]
		if p.owners[i] == owner {
			continue
		}
		if r.end <= s {
			continue
		}
		if r.start >= s+d {
			break
		}
		s = r.end
	}
	return s
}

// Reserve books [s, s+d) for owner. s should come from Earliest.
func (p *Port) Reserve(s, d clock.Time, owner int) {
	if d <= 0 {
		return
	}
	if p.head > 0 && len(p.res) == cap(p.res) {
		// Reclaim the spent prefix rather than grow.
		n := copy(p.res, p.res[p.head:])
		copy(p.owners, p.owners[p.head:])
		p.res, p.owners, p.head = p.res[:n], p.owners[:n], 0
	}
	i := len(p.res)
	for i > p.head && p.res[i-1].start > s {
		i--
	}
	p.res = append(p.res, span{s, s + d})
	p.owners = append(p.owners, owner)
	if i < len(p.res)-1 {
		copy(p.res[i+1:], p.res[i:])
		copy(p.owners[i+1:], p.owners[i:])
		p.res[i] = span{s, s + d}
		p.owners[i] = owner
	}
}

// live returns the reservations still held, with their owners.
func (p *Port) live() ([]span, []int) { return p.res[p.head:], p.owners[p.head:] }

// Prune forgets reservations that ended before t (no request can start
// earlier than the current simulated time).
func (p *Port) Prune(t clock.Time) {
	for p.head < len(p.res) && p.res[p.head].end <= t {
		p.head++
	}
	if p.head == len(p.res) {
		p.res, p.owners, p.head = p.res[:0], p.owners[:0], 0
	}
}

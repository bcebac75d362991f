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
	res  []reservation
	head int
}

type span struct{ start, end clock.Time }

// reservation is a booked span and its owner (an engine never waits for
// itself).
type reservation struct {
	span
	owner int
}

// NewPort returns an idle port.
func NewPort(name string) *Port { return &Port{Name: name} }

// Earliest returns the first start >= t at which owner can hold the port
// for d without overlapping another owner's reservation.
func (p *Port) Earliest(t, d clock.Time, owner int) clock.Time {
	s := t
	for _, r := range p.res[p.head:] {
		if r.owner == owner || r.end <= s {
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
		p.res, p.head = p.res[:n], 0
	}
	i := len(p.res)
	for i > p.head && p.res[i-1].start > s {
		i--
	}
	r := reservation{span{s, s + d}, owner}
	p.res = append(p.res, r)
	if i < len(p.res)-1 {
		copy(p.res[i+1:], p.res[i:])
		p.res[i] = r
	}
}

// Prune forgets reservations that ended before t (no request can start
// earlier than the current simulated time).
func (p *Port) Prune(t clock.Time) {
	for p.head < len(p.res) && p.res[p.head].end <= t {
		p.head++
	}
	if p.head == len(p.res) {
		p.res, p.head = p.res[:0], 0
	}
}

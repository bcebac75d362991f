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
	// res holds disjoint reservations sorted by start.
	res []span
	// owner of each reservation, so an engine never waits for itself.
	owners []int
}

type span struct{ start, end clock.Time }

// NewPort returns an idle port.
func NewPort(name string) *Port { return &Port{Name: name} }

// Earliest returns the first start >= t at which owner can hold the port
// for d without overlapping another owner's reservation.
func (p *Port) Earliest(t, d clock.Time, owner int) clock.Time {
	s := t
	for i, r := range p.res {
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
	i := len(p.res)
	for i > 0 && p.res[i-1].start > s {
		i--
	}
	p.res = append(p.res, span{})
	p.owners = append(p.owners, 0)
	copy(p.res[i+1:], p.res[i:])
	copy(p.owners[i+1:], p.owners[i:])
	p.res[i] = span{s, s + d}
	p.owners[i] = owner
}

// Prune forgets reservations that ended before t (no request can start
// earlier than the current simulated time).
func (p *Port) Prune(t clock.Time) {
	n := 0
	for n < len(p.res) && p.res[n].end <= t {
		n++
	}
	if n > 0 {
		p.res = append(p.res[:0], p.res[n:]...)
		p.owners = append(p.owners[:0], p.owners[n:]...)
	}
}

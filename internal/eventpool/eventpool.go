// Package eventpool gives a component recycled Akita wake-up events. A
// component that schedules many wake-ups (a sequencer, a DMA subsystem)
// schedules them through a Pool and passes each event it handles back; an
// event is reused only once the next one has been handled, because Akita's
// after-event hooks still see an event after its handler returns.
package eventpool

import (
	"github.com/sarchlab/akita/v3/sim"

	"github.com/trnsim/trnsim/clock"
)

// Event is a wake-up of one handler at a femtosecond time, tagged with the
// handler's generation so that a superseded wake-up can be ignored.
type Event struct {
	// At is the wake-up time; Gen the generation it was scheduled in.
	At    clock.Time
	Gen   uint64
	vt    sim.VTimeInSec
	h     sim.Handler
	order uint64
}

// Time returns the event's time in Akita's units.
func (e *Event) Time() sim.VTimeInSec { return e.vt }

// Handler returns the component the event wakes.
func (e *Event) Handler() sim.Handler { return e.h }

// IsSecondary reports false: wake-ups are primary events.
func (e *Event) IsSecondary() bool { return false }

// Pool schedules recycled events for one handler. Set Handler before use.
// Not safe for concurrent use (one per component, on a serial engine).
type Pool struct {
	Handler sim.Handler
	// Order ranks the handler's wake-ups among others at one time on an
	// Engine (lower first): the component's place in the system.
	Order   uint64
	spare   []*Event
	handled *Event
}

// Schedule schedules a wake-up of the pool's handler at time at, tagged gen.
func (p *Pool) Schedule(engine sim.Engine, at clock.Time, gen uint64) {
	var e *Event
	if n := len(p.spare); n > 0 {
		e = p.spare[n-1]
		p.spare = p.spare[:n-1]
	} else {
		e = &Event{h: p.Handler}
	}
	e.At, e.Gen, e.vt, e.order = at, gen, at.VTime(), p.Order
	engine.Schedule(e)
}

// Handled is called with every event the handler receives. It returns the
// event as a wake-up (false for any other kind), and makes the wake-up
// handled before it spare.
func (p *Pool) Handled(ev sim.Event) (*Event, bool) {
	e, ok := ev.(*Event)
	if !ok {
		return nil, false
	}
	if p.handled != nil {
		p.spare = append(p.spare, p.handled)
	}
	p.handled = e
	return e, true
}

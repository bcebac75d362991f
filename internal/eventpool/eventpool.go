// Package eventpool recycles a component's Akita events. A component that
// schedules many events of one type takes them from a Pool and hands each
// back when it is handled; the pool reuses an event only once the next one
// has been handled, because Akita's after-event hooks still see an event
// after its handler returns.
package eventpool

// Pool holds spare events of type E. The zero Pool is ready to use. Not
// safe for concurrent use (one per component, on a serial engine).
type Pool[E any] struct {
	spare   []*E
	handled *E
}

// Get returns a spare event, or a new one from fresh.
func (p *Pool[E]) Get(fresh func() *E) *E {
	if n := len(p.spare); n > 0 {
		e := p.spare[n-1]
		p.spare = p.spare[:n-1]
		return e
	}
	return fresh()
}

// Handled marks e as being handled: the event handled before it becomes
// spare.
func (p *Pool[E]) Handled(e *E) {
	if p.handled != nil {
		p.spare = append(p.spare, p.handled)
	}
	p.handled = e
}

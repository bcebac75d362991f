package eventpool

import (
	"fmt"
	"math"
	"sync"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/trnsim/trnsim/clock"
)

// Engine is an Akita engine that runs events one after another in a total
// order fixed by the events themselves: by time, then, among events at
// one time, by their handlers' Order (a pool's: the component's place in
// the system, such as chip, core and engine), then in the order they were
// scheduled. Akita's serial engine keeps its events in a heap ordered by
// time alone, so which of two events at one time runs first depends on
// every other event in the heap: a core's engines could take their turns
// at one instant in another order when another core is simulated beside
// it. Here they never do, which symmetric-core reuse needs (a unit of
// cores simulated alone runs as it does among the others) and which keeps
// a run's result from moving when an unrelated component is added.
//
// Events that are not the pools' wake-ups (a test's) run at their time,
// after the wake-ups of that time, in the order scheduled. Secondary
// events run after the primary ones of their time, as in Akita.
type Engine struct {
	sim.HookableBase
	mu     sync.Mutex
	now    clock.Time
	nowV   sim.VTimeInSec
	heap   []entry
	seq    uint64
	ends   []sim.SimulationEndHandler
	paused sync.Mutex
}

type entry struct {
	at  clock.Time
	ord uint64
	seq uint64
	ev  sim.Event
}

func (a *entry) less(b *entry) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.ord != b.ord {
		return a.ord < b.ord
	}
	return a.seq < b.seq
}

// NewEngine returns an empty engine.
func NewEngine() *Engine { return &Engine{} }

// orderOther is the order of events that are not wake-ups (after every
// wake-up); secondary events come after those.
const (
	orderOther     = math.MaxUint64 - 1
	orderSecondary = math.MaxUint64
)

// Schedule adds an event; one earlier than the current time panics, as in
// Akita's engines.
func (e *Engine) Schedule(ev sim.Event) {
	en := entry{ev: ev, ord: orderOther}
	if w, ok := ev.(*Event); ok {
		en.at, en.ord = w.At, w.order
	} else if c, ok := ev.(*Call); ok {
		en.at = c.at
	} else {
		en.at = clock.Time(math.Round(float64(ev.Time()) * 1e15))
		if ev.IsSecondary() {
			en.ord = orderSecondary
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if en.at < e.now {
		panic(fmt.Sprintf("eventpool: an event at %v scheduled at %v, in the past", en.at, e.now))
	}
	en.seq = e.seq
	e.seq++
	e.heap = append(e.heap, en)
	// Sift up.
	h := e.heap
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].less(&h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (e *Engine) pop() (entry, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	h := e.heap
	n := len(h)
	if n == 0 {
		return entry{}, false
	}
	top := h[0]
	h[0] = h[n-1]
	h[n-1] = entry{}
	h = h[:n-1]
	e.heap = h
	// Sift down.
	i := 0
	for {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		m := l
		if r := l + 1; r < len(h) && h[r].less(&h[l]) {
			m = r
		}
		if !h[m].less(&h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	e.now, e.nowV = top.at, top.ev.Time()
	return top, true
}

// Run handles every event, in order, until none is left.
func (e *Engine) Run() error {
	for {
		e.paused.Lock()
		en, ok := e.pop()
		if !ok {
			e.paused.Unlock()
			return nil
		}
		ctx := sim.HookCtx{Domain: e, Pos: sim.HookPosBeforeEvent, Item: en.ev}
		e.InvokeHook(ctx)
		_ = en.ev.Handler().Handle(en.ev)
		ctx.Pos = sim.HookPosAfterEvent
		e.InvokeHook(ctx)
		e.paused.Unlock()
	}
}

// CurrentTime is the time of the event being handled (or last handled).
func (e *Engine) CurrentTime() sim.VTimeInSec {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.nowV
}

// Pause stops Run before its next event until Continue.
func (e *Engine) Pause() { e.paused.Lock() }

// Continue lets a paused Run go on.
func (e *Engine) Continue() { e.paused.Unlock() }

// RegisterSimulationEndHandler registers what Finished calls.
func (e *Engine) RegisterSimulationEndHandler(h sim.SimulationEndHandler) {
	e.ends = append(e.ends, h)
}

// Finished calls every registered end handler.
func (e *Engine) Finished() {
	for _, h := range e.ends {
		h.Handle(e.nowV)
	}
}

// Call is an event that calls a function when handled: after every
// wake-up of its time (Engine's order for other events).
type Call struct {
	at clock.Time
	fn func()
}

// NewCall returns an event at time at that calls fn.
func NewCall(at clock.Time, fn func()) *Call { return &Call{at: at, fn: fn} }

// Time returns the event's time in Akita's units.
func (c *Call) Time() sim.VTimeInSec { return c.at.VTime() }

// Handler returns the event itself, which calls its function.
func (c *Call) Handler() sim.Handler { return c }

// IsSecondary reports false.
func (c *Call) IsSecondary() bool { return false }

// Handle calls the function.
func (c *Call) Handle(sim.Event) error {
	c.fn()
	return nil
}

package eventpool

import (
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/clock"
)

// recorder handles wake-ups and remembers the events it saw.
type recorder struct {
	pool *Pool
	seen []*Event
	at   []clock.Time
}

func (r *recorder) Handle(ev sim.Event) error {
	e, ok := r.pool.Handled(ev)
	if ok {
		r.seen = append(r.seen, e)
		r.at = append(r.at, e.At)
	}
	return nil
}

func TestPoolReusesAnEventOnlyAfterTheNextIsHandled(t *testing.T) {
	engine := sim.NewSerialEngine()
	r := &recorder{pool: &Pool{}}
	r.pool.Handler = r
	r.pool.Schedule(engine, 10*clock.Nanosecond, 1)
	r.pool.Schedule(engine, 20*clock.Nanosecond, 2)
	require.NoError(t, engine.Run())
	require.Len(t, r.seen, 2)
	assert.Equal(t, []clock.Time{10 * clock.Nanosecond, 20 * clock.Nanosecond}, r.at)
	assert.Equal(t, uint64(2), r.seen[1].Gen)
	assert.Same(t, r, r.seen[0].Handler())
	assert.False(t, r.seen[0].IsSecondary())

	// The first event is spare now (the second was handled after it); the
	// second is not, until another is handled.
	r.pool.Schedule(engine, 30*clock.Nanosecond, 3)
	require.NoError(t, engine.Run())
	require.Len(t, r.seen, 3)
	assert.Same(t, r.seen[0], r.seen[2], "the first event was reused")
	assert.Equal(t, clock.Time(30*clock.Nanosecond), r.seen[2].At)

	_, ok := r.pool.Handled(nil)
	assert.False(t, ok, "not a wake-up")
}

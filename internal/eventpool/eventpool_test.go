package eventpool

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

type ev struct{ id int }

func TestPoolReusesAnEventOnlyAfterTheNextIsHandled(t *testing.T) {
	var p Pool[ev]
	n := 0
	fresh := func() *ev { n++; return &ev{id: n} }
	a := p.Get(fresh)
	b := p.Get(fresh)
	assert.Equal(t, 2, n, "nothing spare yet")
	p.Handled(a)
	assert.NotSame(t, a, p.Get(fresh), "a is still being handled")
	p.Handled(b)
	assert.Same(t, a, p.Get(fresh), "a is spare once b is handled")
}

package memo

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// A nil memo keeps nothing; a memo keeps one value per key, for callers
// racing on it too, and starts again empty past its limit.
func TestMemoKeepsOneValuePerKey(t *testing.T) {
	var none *Memo
	n := 0
	build := func() any { n++; return n }
	require.Equal(t, 1, none.Get("k", build))
	require.Equal(t, 2, none.Get("k", build))
	require.Equal(t, 0, none.Len())
	m := New()
	require.Equal(t, 3, m.Get("k", build))
	require.Equal(t, 3, m.Get("k", build))
	require.Equal(t, 4, m.Get("j", build))
	require.Equal(t, 2, m.Len())

	var wg sync.WaitGroup
	got := make([]any, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = m.Get("racy", func() any { return new(int) })
		}()
	}
	wg.Wait()
	for _, g := range got {
		require.Same(t, got[0].(*int), g.(*int))
	}

	small := &Memo{entries: map[any]any{}, limit: 2}
	small.Get(1, build)
	small.Get(2, build)
	small.Get(3, build)
	require.Equal(t, 1, small.Len())
}

type keyed struct {
	A int
	B string
	c bool
	D [2]float64
}

// MissedFields names the fields a key leaves out, and only those.
func TestMissedFields(t *testing.T) {
	s := keyed{A: 1}
	require.Equal(t, []string{"B", "D"}, MissedFields(&s, func() any { return [2]any{s.A, s.c} }))
	require.Equal(t, []string{"D"}, MissedFields(&s, func() any { return [2]any{s.A, s.c} }, "B"))
	require.Equal(t, keyed{A: 1}, s, "put back as it was")
}

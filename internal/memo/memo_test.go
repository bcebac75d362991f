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

	var zero Memo
	require.Equal(t, 5, zero.Get("k", build), "the zero Memo is an empty one")
	require.Equal(t, 5, zero.Get("k", build))

	// Two generations of two: what was asked for again stays, the rest
	// goes once two newer generations have filled.
	small := &Memo{limit: 4}
	for _, k := range []int{1, 2, 3, 4} {
		small.Get(k, build)
	}
	require.Equal(t, 4, small.Len())
	one := small.Get(1, build) // from the older generation: kept
	small.Get(5, build)
	require.Equal(t, 4, small.Len(), "1 and 5 new, 3 and 4 older; 2 gone")
	require.Equal(t, one, small.Get(1, build))
	n0 := n
	small.Get(2, build)
	require.Equal(t, n0+1, n, "2 was made again")
}

package memotest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

type keyed struct {
	A int
	B string
	c bool
	D [2]float64
}

type empty struct{}

// MissedFields names the fields a key leaves out, and only those; empty
// fields are missed, not a panic.
func TestMissedFields(t *testing.T) {
	s := keyed{A: 1}
	require.Equal(t, []string{"B", "D"}, MissedFields(&s, func() any { return [2]any{s.A, s.c} }))
	require.Equal(t, []string{"D"}, MissedFields(&s, func() any { return [2]any{s.A, s.c} }, "B"))
	require.Equal(t, keyed{A: 1}, s, "put back as it was")
	e := struct {
		E empty
		Z [0]int
		N int
	}{}
	require.Equal(t, []string{"E", "Z"}, MissedFields(&e, func() any { return e.N }))
}

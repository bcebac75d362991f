package workloads

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/isa"
)

// A lowering step that panics ends its stream with one error naming the
// step, not a crash.
func TestBatchStreamTurnsAPanicIntoAnError(t *testing.T) {
	in := &isa.Instruction{Body: &isa.Body{Op: isa.OpNop}}
	src := batchStream(isa.StreamKey{}, 5, func(i int64, _ *stepBuf) ([]*isa.Instruction, error) {
		if i == 2 {
			var m map[string]int
			m["boom"]++ // a nil map write: a lowering bug
		}
		return []*isa.Instruction{in, in}, nil
	})
	st := src.Open()
	for k := 0; k < 4; k++ {
		got, err := st.Next()
		require.NoError(t, err)
		require.Same(t, in, got)
	}
	got, err := st.Next()
	assert.Nil(t, got)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "internal lowering error at step 2")
}

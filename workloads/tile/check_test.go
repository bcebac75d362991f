package tile

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkErr parses src as k.tile and returns the error it must give.
func checkErr(t *testing.T, src string) string {
	t.Helper()
	_, err := Parse(src, "k.tile")
	require.Error(t, err)
	return err.Error()
}

const rearrangeHead = "kernel x\ntile A hbm bf16 [256, 4]\ntile a sbuf bf16 [128, 2, 4]\n"

// Every malformed rearrangement is an error located at its '<'.
func TestRearrangeErrorsAreLocated(t *testing.T) {
	tests := []struct {
		name, line, want string
	}{
		{"factor twice in the output, one missing", "sync dma_copy a, A<(t p:128) f -> p p t>",
			"k.tile:4:19: dma_copy: A: output factor p appears twice"},
		{"factor missing from the output", "sync dma_copy a, A<(t p:128) f -> p t>",
			"k.tile:4:19: dma_copy: A: the output names 2 factors, the input 3"},
		{"factor twice in the input", "sync dma_copy a, A<(t t:128) f -> t f>",
			"k.tile:4:19: dma_copy: A: factor t appears twice"},
		{"unknown output factor", "sync dma_copy a, A<(t p:128) f -> p t g>",
			"k.tile:4:19: dma_copy: A: output factor g is not in the input"},
		{"two sizes missing", "sync dma_copy a, A<(t p) f -> p t f>",
			"k.tile:4:19: dma_copy: A: each group needs the sizes of all its factors but one: (t p)"},
		{"second operand", "sync dma_copy A<(t p:128) f -> p t t>, a",
			"k.tile:4:16: dma_copy: A: output factor t appears twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, checkErr(t, rearrangeHead+tc.line+"\n"))
		})
	}
}

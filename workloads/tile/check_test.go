package tile

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/isa"
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

// Name clashes are located at the later declaration and name the earlier.
func TestNameErrorsAreLocated(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"two sibling loops use i",
			"kernel x\ntile a sbuf bf16 [128, 4]\nfor i in range(2):\n    vector memset a\nfor i in range(2):\n    vector memset a\n",
			"k.tile:5:5: loop variable i is used by two loops (the other at 3:5); give each loop its own"},
		{"loop variable named like an earlier tile",
			"kernel x\nfor i in range(2):\n    tile t sbuf bf16 [128, 4]\n    vector memset t\nfor t in range(2):\n    pass\n",
			"k.tile:5:5: loop variable t has the name of a tile at 3:10; names are unique in the whole kernel"},
		{"tile named like an earlier loop variable",
			"kernel x\nfor t in range(2):\n    pass\nfor i in range(2):\n    tile t sbuf bf16 [128, 4]\n    vector memset t\n",
			"k.tile:5:10: tile t has the name of a loop variable at 2:5; names are unique in the whole kernel"},
		{"parameter named like an earlier loop variable",
			"kernel x\nfor n in range(2):\n    pass\nparam n = 3\n",
			"k.tile:4:7: parameter n has the name of a loop variable at 2:5; names are unique in the whole kernel"},
		{"parameter named like an earlier loop tile",
			"kernel x\nfor i in range(2):\n    tile s sbuf bf16 [128, 4]\n    vector memset s\nparam s = 3\n",
			"k.tile:5:7: parameter s has the name of a tile at 3:10; names are unique in the whole kernel"},
		{"tiles of two sibling loops",
			"kernel x\nfor i in range(2):\n    tile s sbuf bf16 [128, 4]\n    vector memset s\nfor j in range(2):\n    tile s sbuf bf16 [128, 4]\n    vector memset s\n",
			"k.tile:6:10: tile s is declared twice (first at 3:10)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, checkErr(t, tc.src))
		})
	}
}

// Core numbers are checked against the chip where they are written.
func TestCheckCoresIsLocated(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"tile on a core the chip lacks", "kernel x\ntile a sbuf bf16 [128, 4] core=9\nvector memset a\n",
			"k.tile:2:32: tile a: core 9 does not exist (the chip has 8)"},
		{"unused tile on a core the chip lacks", "kernel x\ntile a psum fp32 [128, 4] bufs=1 core=8\n",
			"k.tile:2:39: tile a: core 8 does not exist (the chip has 8)"},
		{"cores loop past the chip", "kernel x\nfor c in range(0, 9) cores:\n    tile s sbuf bf16 [128, 4]\n    vector memset s\n",
			"k.tile:2:1: for c cores: a cores loop needs constant bounds within the chip's 8 cores"},
		{"cores loop with a variable bound", "kernel x\nfor i in range(2):\n    for c in range(i, 2) cores:\n        pass\n",
			"k.tile:3:5: for c cores: a cores loop needs constant bounds within the chip's 8 cores"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, err := Parse(tc.src, "k.tile")
			require.NoError(t, err)
			err = k.CheckCores(8)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
	k, err := Parse("kernel x\ntile a sbuf bf16 [128, 4] core=7\nfor c in range(0, 8) cores:\n    tile s sbuf bf16 [128, 4] core=12\n    vector memset s\n", "k.tile")
	require.NoError(t, err)
	assert.NoError(t, k.CheckCores(8), "core= inside a cores loop is not the tile's core")
}

// An error without a file still gives its position.
func TestErrorWithoutFileKeepsItsPosition(t *testing.T) {
	tests := []struct {
		err  Error
		want string
	}{
		{Error{File: "k.tile", Pos: Pos{3, 4}, Msg: "m"}, "k.tile:3:4: m"},
		{Error{File: "k.tile", Msg: "m"}, "k.tile: m"},
		{Error{Kernel: "x", Pos: Pos{3, 4}, Msg: "m"}, "kernel x: 3:4: m"},
		{Error{Pos: Pos{3, 4}, Msg: "m"}, "3:4: m"},
		{Error{Kernel: "x", Msg: "m"}, "kernel x: m"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, tc.err.Error())
	}
}

// A collective's kind is one the IR defines.
func TestCollectiveKinds(t *testing.T) {
	head := "kernel x\ntile a hbm fp32 [128, 4] input\ntile b hbm fp32 [128, 4] output\n"
	tests := []struct {
		line, want string // want "": it parses
	}{
		{"collective foo b, a group=[0, 1]", `k.tile:4:12: unknown collective kind "foo" (kinds: all_reduce, all_gather, reduce_scatter, all_to_all, send, recv, broadcast)`},
		{"collective allreduce b, a", `k.tile:4:12: unknown collective kind "allreduce" (kinds: all_reduce, all_gather, reduce_scatter, all_to_all, send, recv, broadcast)`},
		{"collective 3 b, a", `k.tile:4:12: expected a collective kind (all_reduce, all_gather, reduce_scatter, all_to_all, send, recv, broadcast), got "3"`},
	}
	for _, kind := range CollectiveKinds {
		tests = append(tests, struct{ line, want string }{"collective " + kind + " b, a group=[0, 1]", ""})
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			k, err := Parse(head+tc.line+"\n", "k.tile")
			if tc.want == "" {
				require.NoError(t, err)
				assert.Equal(t, head+tc.line+"\n", String(k))
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
	// A kernel built in Go is checked too, at the statement.
	k := New("x")
	a := k.Tensor("a", isa.FP32, Input, 4)
	k.Body = append(k.Body, &Collective{Kind: "gather_all", Outs: []Access{a.All()}, Ins: []Access{a.All()}})
	assert.EqualError(t, k.Finish(), `kernel x: unknown collective kind "gather_all" (kinds: all_reduce, all_gather, reduce_scatter, all_to_all, send, recv, broadcast)`)
}

// An any op is one the scheduler can place: an opcode that only TensorE
// runs names its engine.
func TestAnyNeedsAnEngineTheSchedulerChooses(t *testing.T) {
	head := "kernel x\ntile a sbuf bf16 [128, 128]\ntile ps psum fp32 [128, 128]\n"
	tests := []struct {
		line, want string // want "": it parses
	}{
		{"any load_stationary a", "k.tile:4:1: load_stationary runs only on TensorE; name the engine (tensor load_stationary)"},
		{"any multiply_moving ps, a start stop", "k.tile:4:1: multiply_moving runs only on TensorE; name the engine (tensor multiply_moving)"},
		{"@ls any load_stationary a", "k.tile:4:5: @ls load_stationary runs only on TensorE; name the engine (tensor load_stationary)"},
		{"@m tensor tensor_copy a, a", "k.tile:4:4: @m tensor_copy cannot run on tensor (it runs on vector, scalar, gpsimd)"},
		{"tensor load_stationary a", ""},
		{"any transpose ps, a", ""},
		{"any tensor_copy a, ps", ""},
		{"any dma_copy a, a", ""},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			_, err := Parse(head+tc.line+"\n", "k.tile")
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

// A kernel without ops or collectives has nothing to run.
func TestCheckRunnable(t *testing.T) {
	tests := []struct {
		name, src, want string // want "": runnable
	}{
		{"no ops", "kernel x\ntile a sbuf bf16 [128, 4]\n",
			"k.tile:1:8: kernel x has no instructions to run: it has no ops"},
		{"only collectives", "kernel x\ntile a hbm fp32 [4] input\ntile b hbm fp32 [4] output\nfor i in range(2):\n    collective all_reduce b, a group=[0, 1]\ncollective all_gather b, a group=[0, 1]\n", ""},
		{"an op", "kernel x\ntile a sbuf bf16 [128, 4]\nvector memset a\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, err := Parse(tc.src, "k.tile")
			require.NoError(t, err, "it parses and checks")
			err = k.CheckRunnable()
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

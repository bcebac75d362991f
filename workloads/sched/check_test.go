package sched_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/workloads"
	"github.com/trnsim/trnsim/workloads/sched"
	"github.com/trnsim/trnsim/workloads/tile"
)

// Check fails exactly where Compile fails, with the same error, and
// otherwise names the ranks Compile's program uses: on the shipped and
// test kernels, and on kernels that break each rule Compile checks (the
// semaphores a core needs, a collective's expansion, the tiles' placement
// in SBUF, PSUM and HBM, the accesses an op may make).
func TestCheckFailsWhereCompileFails(t *testing.T) {
	read := func(path string) string {
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		return string(src)
	}
	loop := func(n int, body string) string {
		return fmt.Sprintf("kernel k\nfor c in range(0, %d) cores:\n    tile x hbm fp32 [64, 32] input\n    tile y hbm fp32 [64, 32] output\n    tile s sbuf fp32 [64, 32]\n%s", n, body)
	}
	tests := []struct {
		name, preset, src string
		sets              []string
		fails             bool
	}{
		{"matmul", "trn2", read("testdata/matmul.tile"), nil, false},
		{"split over two cores", "trn2", read("testdata/split2.tile"), nil, false},
		{"the example matmul on trn1", "trn1", read("../../examples/matmul.tile"), nil, false},
		{"the example all-reduce over two chips", "trn2", read("../../examples/allreduce.tile"), []string{"hardware.chips=2"}, false},
		{"too few semaphores", "trn2", read("testdata/matmul.tile"), []string{"hardware.core.semaphores=4"}, true},
		{"SBUF too small", "trn2", "kernel k\ntile a sbuf fp32 [128, 100000]\nvector memset a\n", nil, true},
		{"PSUM too small", "trn2", "kernel k\ntile a psum fp32 [128, 100000]\nvector memset a\n", nil, true},
		{"HBM too small", "trn2", "kernel k\ntile a hbm fp32 [1048576, 32768] input\ntile b sbuf fp32 [128, 4]\nany dma_copy b, a[0:128, 0:4]\n", nil, true},
		{"a compute op on HBM", "trn2", "kernel k\ntile a hbm fp32 [128, 4] output\nvector memset a\n", nil, true},
		{"a remote DMA read", "trn2", loop(2, "    any dma_copy s, x@(1 - c)\n"), nil, false},
		{"a collective over more ranks than the chip has", "trn2", loop(4, "    collective all_reduce y, x group=[0, 16]\n"), nil, true},
		{"a collective", "trn2", loop(4, "    collective all_reduce y, x\n"), nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := preset(t, tc.preset, tc.sets...)
			opts := sched.Options{DGEAuto: true}
			compile := func() (*sched.Program, error) {
				k, err := tile.Parse(tc.src, "k.tile")
				require.NoError(t, err)
				return sched.Compile(k, workloads.Target(cfg), opts)
			}
			k, err := tile.Parse(tc.src, "k.tile")
			require.NoError(t, err)
			cores, cerr := sched.Check(k, workloads.Target(cfg), opts)
			p, err := compile()
			if tc.fails {
				require.Error(t, err)
				require.Error(t, cerr)
				assert.Equal(t, err.Error(), cerr.Error())
				return
			}
			require.NoError(t, err)
			require.NoError(t, cerr)
			assert.Equal(t, p.Cores, cores)
		})
	}
}

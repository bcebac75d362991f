package workloads

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/configs"
)

// opsKernel is a small matmul whose loads, matmuls and stores are three
// workload ops.
const opsKernel = `kernel three_ops
tile AT hbm bf16 [384, 256] input
tile B hbm bf16 [384, 1024] input
tile C hbm bf16 [256, 1024] output
for n in range(0, 2) parallel:
    tile b sbuf bf16 [128, 3, 512] bufs=2
    any dma_copy b, B[0:384, n * 512:n * 512 + 512]<(t p:128) f -> p t f> op=1
    for m in range(0, 2) parallel:
        tile at sbuf bf16 [128, 3, 128] bufs=2
        tile ps psum fp32 [128, 512] bufs=2
        tile c sbuf bf16 [128, 512] bufs=2
        any dma_copy at, AT[0:384, m * 128:m * 128 + 128]<(t p:128) f -> p t f> op=1
        for k in range(0, 3) sequential:
            tensor load_stationary at[0:128, k, 0:128] op=2
            tensor multiply_moving ps, b[0:128, k, 0:512] start=(k == 0) stop=(k == 2) op=2
        any tensor_copy c, ps op=2
        any dma_copy C[m * 128:m * 128 + 128, n * 512:n * 512 + 512], c op=3
`

// Per-op statistics on every preset: each op gets its own traffic and
// arithmetic, and the ops together account for the run exactly.
func TestOpStatisticsSplitTheRun(t *testing.T) {
	for _, preset := range configs.PresetNames() {
		t.Run(preset, func(t *testing.T) {
			yaml := "hardware:\n  preset: " + preset + "\nworkload:\n  kind: tile\n  tile:\n    source: |\n"
			for _, l := range splitLines(opsKernel) {
				yaml += "      " + l + "\n"
			}
			cfg, err := configs.LoadBytes([]byte(yaml), "ops.yaml", configs.LoadOptions{})
			require.NoError(t, err)
			prog, info, err := Lower(cfg)
			require.NoError(t, err)
			res, err := chip.Run(cfg, prog, chip.Options{})
			require.NoError(t, err)
			checkOps(t, res)
			require.Len(t, res.Ops, 3)
			assert.Len(t, info.Ops, 3)
			load, mm, store := res.Ops[0], res.Ops[1], res.Ops[2]
			assert.Equal(t, []int32{1, 2, 3}, []int32{load.ID, mm.ID, store.ID})
			assert.Equal(t, int64((2*384*256+384*1024)*2), load.HBMReadBytes, "op 1 reads AT once per n block and B once")
			assert.Zero(t, load.HBMWriteBytes)
			assert.Zero(t, mm.HBMReadBytes+mm.HBMWriteBytes, "the matmuls touch no HBM")
			assert.InDelta(t, 2*256*1024*384.0, mm.FLOPs, 1)
			assert.Equal(t, int64(256*1024*2), store.HBMWriteBytes)
			assert.Zero(t, store.FLOPs)
			assert.LessOrEqual(t, load.Start, mm.Start, "loads start first")
			assert.LessOrEqual(t, mm.Start, store.Start, "stores start last")
			assert.Positive(t, mm.Busy[0], "TensorE busy for op 2")
			assert.Positive(t, load.DMABusy)
			for _, o := range res.Ops {
				assert.Positive(t, o.Time, "op %d has a share", o.ID)
			}
		})
	}
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

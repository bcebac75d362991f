package workloads

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/configs"
)

// A collective shares the DMA engines, queues and HBM with compute
// traffic: an all-reduce running beside a DMA-bound copy slows it.
func TestAllReduceSlowsAConcurrentCopy(t *testing.T) {
	kernel := func(withAllReduce bool) string {
		k := `kernel overlap
for r in range(0, 2) cores:
    tile a hbm bf16 [1024, 4096] input
    tile b hbm bf16 [1024, 4096] output
    tile x hbm bf16 [512, 4096] input
    tile y hbm bf16 [512, 4096] output
    for i in range(0, 8):
        tile s sbuf bf16 [128, 4096] bufs=3
        any dma_copy s, a[i * 128:i * 128 + 128, 0:4096] op=2
        any dma_copy b[i * 128:i * 128 + 128, 0:4096], s op=2
`
		if withAllReduce {
			k += "    collective all_reduce y, x algo=ring op=1\n"
		}
		return k
	}
	copyTime := func(withAllReduce bool) clock.Time {
		src := kernel(withAllReduce)
		text := "hardware: {preset: trn2, runtime: {collective_overhead_us: 0}}\nworkload:\n  kind: tile\n  tile:\n    source: |\n      " + strings.ReplaceAll(strings.TrimRight(src, "\n"), "\n", "\n      ") + "\n"
		cfg, err := configs.LoadBytes([]byte(text), "overlap.yaml", configs.LoadOptions{})
		require.NoError(t, err)
		prog, _, err := Lower(cfg)
		require.NoError(t, err)
		res, err := chip.Run(cfg, prog, chip.Options{})
		require.NoError(t, err)
		for _, o := range res.Ops {
			if o.ID == 2 {
				return o.End - o.Start
			}
		}
		t.Fatal("no copy op")
		return 0
	}
	alone, shared := copyTime(false), copyTime(true)
	t.Logf("copy alone %v, beside a 4 MiB ring all-reduce %v", alone, shared)
	assert.Greater(t, float64(shared), 1.1*float64(alone), "the all-reduce takes DMA bandwidth from the copy")
}

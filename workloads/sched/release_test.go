package sched_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/workloads"
	"github.com/trnsim/trnsim/workloads/sched"
)

// layersKernel is a small model's shape: three "layers" in one cores loop,
// each loading its own weights, computing, and all-reducing over the ranks,
// so that the lockstep walk's phases end op after op.
const layersKernel = `kernel layers
param R = 4
tile inp hbm bf16 [R * 256, 512] input
tile res hbm bf16 [R * 256, 512] output
for c in range(0, R) cores:
    tile w0 hbm bf16 [256, 512] input
    tile w1 hbm bf16 [256, 512] input
    tile w2 hbm bf16 [256, 512] input
    tile a hbm bf16 [256, 512]
    tile b hbm bf16 [256, 512]
    tile s sbuf bf16 [128, 512] bufs=2
    tile v sbuf bf16 [128, 512] bufs=2
    for i in range(0, 2) parallel:
        any dma_copy s, inp[c * 256 + i * 128:c * 256 + i * 128 + 128, :]
        any dma_copy v, w0[i * 128:i * 128 + 128, :]
        vector tensor_tensor s, s, v alu=multiply op=1
        any dma_copy a[i * 128:i * 128 + 128], s
    collective all_reduce b, a algo=ring op=2
    for j in range(0, 2) parallel:
        any dma_copy s, b[j * 128:j * 128 + 128]
        any dma_copy v, w1[j * 128:j * 128 + 128, :]
        vector tensor_tensor s, s, v alu=add op=3
        any dma_copy a[j * 128:j * 128 + 128], s
    collective all_reduce b, a algo=rdh op=4
    for k in range(0, 2) parallel:
        any dma_copy s, b[k * 128:k * 128 + 128]
        any dma_copy v, w2[k * 128:k * 128 + 128, :]
        scalar activation s, s func=relu op=5
        any dma_copy res[c * 256 + k * 128:c * 256 + k * 128 + 128, :], s
`

// Releasing the bodies of finished ops changes no instruction: with
// every body released as soon as every walk is done with its op, the
// shared walk, walks of one stream each and walks whose streams detach at
// once make what they make when nothing is released, and so does a
// session opened after a run released them; the program runs race-free,
// and the layered kernel's run does release bodies.
func TestReleasingBodiesChangesNothing(t *testing.T) {
	md, err := os.ReadFile("../../docs/tile.md")
	require.NoError(t, err)
	kernels := map[string]string{"layers": layersKernel}
	for i, b := range strings.Split(string(md), "```tile\n")[1:] {
		kernels["docs/tile.md block "+string(rune('a'+i))] = b[:strings.Index(b, "```")]
	}
	cfg := preset(t, "trn2", "hardware.chips=2")
	for name, src := range kernels {
		t.Run(name, func(t *testing.T) {
			base, err := sched.Compile(mustParse(t, src), workloads.Target(cfg), sched.Options{DGEAuto: true})
			require.NoError(t, err)
			want := streamTexts(t, base, true)
			assert.Zero(t, base.BodiesReleased(), "below the default threshold nothing is released")
			for _, opts := range []sched.Options{{DGEAuto: true, ReleaseAbove: -1}, {DGEAuto: true, ReleaseAbove: -1, SoloBuffer: 1}} {
				p, err := sched.Compile(mustParse(t, src), workloads.Target(cfg), opts)
				require.NoError(t, err)
				assert.Equal(t, want, streamTexts(t, p, true), "shared walk, %+v", opts)
				assert.Equal(t, want, streamTexts(t, p, false), "a walk per stream, %+v", opts)
				_, err = chip.Run(cfg, p.Program, chip.Options{})
				require.NoError(t, err, "%+v", opts)
				if name == "layers" {
					assert.Positive(t, p.BodiesReleased(), "%+v", opts)
				}
				// A session after the release makes the bodies again.
				assert.Equal(t, want, streamTexts(t, p, true), "after a run, %+v", opts)
			}
		})
	}
}

// Release goes on run after run, also when streams detach from the shared
// walk (their held instructions dropped) and after a walk is done: each
// run of the layered kernel releases as many bodies as the first.
func TestReleaseGoesOnAcrossRuns(t *testing.T) {
	cfg := preset(t, "trn2", "hardware.chips=2")
	for _, opts := range []sched.Options{{DGEAuto: true, ReleaseAbove: -1}, {DGEAuto: true, ReleaseAbove: -1, SoloBuffer: 16}, {DGEAuto: true, ReleaseAbove: -1, SoloBuffer: 64}} {
		p, err := sched.Compile(mustParse(t, layersKernel), workloads.Target(cfg), opts)
		require.NoError(t, err)
		var counts []int64
		for range 3 {
			_, err = chip.Run(cfg, p.Program, chip.Options{})
			require.NoError(t, err, "%+v", opts)
			counts = append(counts, p.BodiesReleased())
		}
		require.Positive(t, counts[0], "%+v", opts)
		assert.Equal(t, 2*counts[0], counts[1], "the second run releases what the first did, %+v", opts)
		assert.Equal(t, 3*counts[0], counts[2], "and the third, %+v", opts)
	}
}

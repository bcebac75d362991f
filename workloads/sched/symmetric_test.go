package sched_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/workloads"
	"github.com/trnsim/trnsim/workloads/sched"
	"github.com/trnsim/trnsim/workloads/tile"
)

// symKernel is a cores loop over n ranks whose every rank streams a
// tensor through SBUF while a collective runs: the collective shares the
// DMA engines, queues, HBM stacks and links with the copy. extra adds
// work on rank 0 alone.
func symKernel(n int, kind, algo string, rows int, extra bool) string {
	out, in := fmt.Sprintf("[%d, 256]", rows), fmt.Sprintf("[%d, 256]", rows)
	switch kind {
	case tile.AllGather:
		in = fmt.Sprintf("[%d, 256]", rows/n)
	case tile.ReduceScatter:
		out = fmt.Sprintf("[%d, 256]", rows/n)
	}
	src := fmt.Sprintf(`kernel sym
for r in range(0, %d) cores:
    tile x hbm fp32 %s input
    tile y hbm fp32 %s output
    tile a hbm fp32 [512, 1024] input
    tile b hbm fp32 [512, 1024] output
    collective %s y, x algo=%s op=1
    for i in range(0, 4):
        tile s sbuf fp32 [128, 1024] bufs=3
        any dma_copy s, a[i * 128:i * 128 + 128, 0:1024] op=2
        any dma_copy b[i * 128:i * 128 + 128, 0:1024], s op=2
`, n, in, out, kind, algo)
	if extra {
		src += `    if r == 0:
        tile e sbuf fp32 [128, 1024]
        any dma_copy e, a[0:128, 0:1024] op=3
        any dma_copy b[0:128, 0:1024], e op=3
`
	}
	return src
}

// schedule compiles src for sys with symmetric-core reuse on or off.
func symSchedule(t *testing.T, sys system, src string, symmetric bool) (*sched.Program, *chip.Result) {
	t.Helper()
	cfg := sys.config(t)
	k, err := tile.Parse(src, "sym.tile")
	require.NoError(t, err, src)
	tg := workloads.Target(cfg)
	p, err := sched.Compile(k, tg, sched.Options{DGEAuto: true, SymmetricRanks: symmetric})
	require.NoError(t, err, src)
	res, err := chip.Run(cfg, p.Program, chip.Options{})
	require.NoError(t, err, "race check on:\n%s", src)
	return p, res
}

// Symmetric-core reuse simulates a unit of the ranks (an HBM stack's cores
// in one chip, a chip across chips) and takes the time of simulating every
// rank, on one chip and over links every rank of a chip shares; where the
// collective is not symmetric under the unit's shifts (a ring
// reduce-scatter: each rank's own piece sits elsewhere) it simulates every
// rank.
func TestSymmetricReuseMatchesEveryRank(t *testing.T) {
	for _, c := range []struct {
		sys   system
		n     int
		units []int // a stack's cores, or (a ring's shifts cross chips) a chip
	}{
		{system{"trn2", 1}, 8, []int{2}},     // 8 cores, 4 stacks: a stack's 2 cores
		{system{"trn1", 2}, 4, []int{1, 2}},  // 2 chips of 2 cores, a stack each
		{system{"trn2", 2}, 16, []int{2, 8}}, // 2 chips of 8 cores over their links
	} {
		for _, kind := range []string{tile.AllReduce, tile.AllGather, tile.ReduceScatter, tile.AllToAll} {
			for _, algo := range tile.CollectiveAlgorithms {
				name := fmt.Sprintf("%s/%d_ranks/%s/%s", c.sys, c.n, kind, algo)
				t.Run(name, func(t *testing.T) {
					src := symKernel(c.n, kind, algo, 64*c.n, false)
					_, exact := symSchedule(t, c.sys, src, false)
					p, reuse := symSchedule(t, c.sys, src, true)
					if p.SimulatedRanks == 0 {
						assert.Equal(t, exact.SimTime, reuse.SimTime, "no reuse: the same program")
						t.Logf("no reuse")
						return
					}
					assert.Contains(t, c.units, p.SimulatedRanks)
					assert.Equal(t, c.n, p.SymmetricRanks)
					assert.Len(t, p.Cores, p.SimulatedRanks)
					assert.InEpsilon(t, exact.SimTime.Seconds(), reuse.SimTime.Seconds(), 0.01)
					t.Logf("%d of %d ranks: %v, every rank %v (%+.3f%%)", p.SimulatedRanks, c.n, reuse.SimTime, exact.SimTime,
						100*(reuse.SimTime.Seconds()/exact.SimTime.Seconds()-1))
				})
			}
		}
	}
}

// Reuse never applies where the ranks may differ: a rank with extra work,
// pieces of unequal sizes, or the option off.
func TestSymmetricReuseOnlyForIdenticalRanks(t *testing.T) {
	sys := system{"trn2", 1}
	for _, c := range []struct {
		name string
		src  string
	}{
		{"rank 0 has extra work", symKernel(8, tile.AllReduce, tile.AlgoMesh, 512, true)},
		{"unequal pieces", symKernel(8, tile.AllReduce, tile.AlgoRing, 130, false)},
		// A collective per group of four: no rank's transfers may change.
		{"groups of four", strings.Replace(symKernel(8, tile.AllReduce, tile.AlgoMesh, 512, false), "algo=mesh", "algo=mesh group_size=4", 1)},
		{"a group of some of the ranks", strings.Replace(symKernel(8, tile.AllReduce, tile.AlgoMesh, 512, false), "algo=mesh", "algo=mesh group=[0, 1, 2, 3]", 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			pe, exact := symSchedule(t, sys, c.src, false)
			p, reuse := symSchedule(t, sys, c.src, true)
			assert.Zero(t, p.SimulatedRanks)
			assert.Len(t, p.Cores, 8)
			assert.Equal(t, exact.SimTime, reuse.SimTime)
			assert.Equal(t, exact.Instructions, reuse.Instructions)
			assert.Equal(t, programText(t, pe), programText(t, p), "the same program")
		})
	}
	p, _ := symSchedule(t, sys, symKernel(8, tile.AllReduce, tile.AlgoMesh, 512, false), true)
	assert.Equal(t, 2, p.SimulatedRanks, "the same kernel without the extra work")
}

package lowergraph_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads"
	"github.com/trnsim/trnsim/workloads/kernels"
	"github.com/trnsim/trnsim/workloads/sched"
	"github.com/trnsim/trnsim/workloads/tile"
)

// A kernel that writes an HBM tensor a row block per iteration (one body
// shared by the iterations, moved by each one's offset) and a transfer
// between two HBM tensors that reads it are ordered by their data: the
// scheduler's HBM records put each iteration's write where it is.
func TestHBMDependenciesAcrossKernels(t *testing.T) {
	cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: []string{"hardware.preset=trn2"}})
	require.NoError(t, err)
	tg := workloads.Target(cfg)
	k := tile.New("m")
	x := k.Tensor("x", isa.BF16, tile.Input, 256, 512)
	cos := k.Tensor("cos", isa.BF16, tile.Input, 256, 64)
	sin := k.Tensor("sin", isa.BF16, tile.Input, 256, 64)
	r := k.Tensor("r", isa.BF16, tile.Temp, 256, 512)
	cache := k.Tensor("cache", isa.BF16, tile.Output, 256, 512)
	rp, err := kernels.PlanRoPE(kernels.RoPE{Rows: 256, Heads: 8, HeadDim: 64, DType: isa.BF16}, kernels.RoPEOptions{OpID: 1}, tg)
	require.NoError(t, err)
	rk, _ := rp.Kernel()
	require.NoError(t, k.Root().Inline(rk, "a_", map[string]*tile.Tile{"X": x, "COS": cos, "SIN": sin, "OUT": r}))
	ap, err := kernels.PlanKVAppend(kernels.KVAppend{Batch: 1, Seq: 256, Past: 0, Heads: 8, HeadDim: 64, DType: isa.BF16}, kernels.KVAppendOptions{OpID: 2}, tg)
	require.NoError(t, err)
	ak, _ := ap.Kernel()
	require.NoError(t, k.Root().Inline(ak, "b_", map[string]*tile.Tile{"NEW": r, "CACHE": cache}))
	require.NoError(t, k.Finish())

	p, err := sched.Compile(k, tg, sched.Options{DGEAuto: true})
	require.NoError(t, err)
	_, err = chip.Run(cfg, p.Program, chip.Options{})
	require.NoError(t, err)
}

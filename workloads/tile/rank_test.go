package tile

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/isa"
)

const rankSample = `kernel exchange
param N = 8
tile inp hbm fp32 [N * 128, 512] input
tile far hbm fp32 [128, 512] chip=1
for c in range(0, N) cores:
    tile x hbm fp32 [128, 512]
    tile y hbm fp32 [128, 512] output
    tile s sbuf fp32 [128, 512]
    any dma_copy s, inp[c * 128:c * 128 + 128, :]
    any dma_copy x@((c + 1) % N)[0:64], s[0:64]
    any dma_copy x@c[64:128], s[64:128]
    sync dma_copy x@(-1), s
    any dma_copy x@min(c, 2), s
    any dma_copy x@3, s
    any dma_copy x@N, s
    any dma_copy s, x
    collective all_reduce y, x algo=ring op=3
    collective send y, x group=[0, 1]
    collective reduce_scatter y[0:16], x group=[7, 0, 3, 2, 1, 4, 5, 6] algo=rdh
    collective all_reduce y, x group_size=4 algo=mesh op=5
    collective send y, x group_size=2
collective broadcast far, inp[0:128] group=[2, 9] algo=mesh op=4
`

// Remote accesses, chip=, algo= and groups print and parse back the same.
func TestRankSyntaxRoundTrips(t *testing.T) {
	k, err := Parse(rankSample, "r.tile")
	require.NoError(t, err)
	text := String(k)
	k2, err := Parse(text, "printed.tile")
	require.NoError(t, err, text)
	assert.Equal(t, text, String(k2))
	for _, want := range []string{
		"tile far hbm fp32 [128, 512] chip=1",
		"any dma_copy x@((c + 1) % N)[0:64], s[0:64]",
		"any dma_copy x@c[64:128], s[64:128]",
		"sync dma_copy x@(-1), s",
		"any dma_copy x@min(c, 2), s",
		"any dma_copy x@3, s",
		"any dma_copy x@N, s",
		"collective all_reduce y, x algo=ring op=3",
		"collective send y, x group=[0, 1]",
		"collective reduce_scatter y[0:16], x group=[7, 0, 3, 2, 1, 4, 5, 6] algo=rdh",
		"collective broadcast far, inp[0:128] group=[2, 9] algo=mesh op=4",
		"collective all_reduce y, x group_size=4 algo=mesh op=5",
		"collective send y, x group_size=2\n",
	} {
		assert.Contains(t, text, want)
	}
	x := k.Tiles[2]
	assert.Equal(t, "x", x.Name)
	assert.True(t, x.PerRank())
	assert.False(t, k.Tiles[0].PerRank())
	assert.Equal(t, 1, k.Tiles[1].Chip)
	assert.Equal(t, Pos{10, 19}, k.Ops[1].Outs[0].RankPos())
	colls := k.Collectives()
	require.Len(t, colls, 6)
	assert.Equal(t, 4, colls[3].GroupSize)
	assert.Equal(t, Pos{20, 43}, colls[3].GroupSizePos())
	assert.Equal(t, 2, colls[4].GroupSize)
	assert.Equal(t, AlgoRing, colls[0].Algo)
	assert.Equal(t, []int{7, 0, 3, 2, 1, 4, 5, 6}, colls[2].Group)
	assert.Equal(t, Pos{19, 55}, colls[2].GroupPos(2))
}

// The Go builder's t.On(rank).At(...) is the text form's x@RANK[...].
func TestRemoteAccessInGo(t *testing.T) {
	k := New("exchange")
	root := k.Root()
	root.For("c", C(0), C(4), Cores, func(b *Block, c Expr) {
		x := b.Tile("x", isa.MemHBM, isa.FP32, []int64{128, 512}, 1)
		s := b.Tile("s", isa.MemSBUF, isa.FP32, []int64{128, 512}, 1)
		b.Add(&Op{Opcode: isa.OpMemset, Engine: isa.EngineVector, Outs: []Access{s.All()}})
		b.Add(&Op{Opcode: isa.OpDMACopy, Any: true, Outs: []Access{x.On(c.AddC(1).Mod(C(4))).At(R(C(0), C(64)))}, Ins: []Access{s.At(R(C(0), C(64)))}})
		b.Add(&Op{Opcode: isa.OpDMACopy, Any: true, Outs: []Access{s.All()}, Ins: []Access{x.All()}})
		y := b.Tile("y", isa.MemHBM, isa.FP32, []int64{128, 512}, 1)
		b.AddCollective(&Collective{Kind: AllReduce, Outs: []Access{y.All()}, Ins: []Access{x.All()}, Algo: AlgoRDH, OpID: 2})
		b.AddCollective(&Collective{Kind: AllGather, Outs: []Access{y.All()}, Ins: []Access{x.At(R(C(0), C(64)))}, GroupSize: 2, OpID: 3})
	})
	require.NoError(t, k.Finish())
	text := String(k)
	assert.Contains(t, text, "any dma_copy x@((c + 1) % 4)[0:64], s[0:64]")
	assert.Contains(t, text, "collective all_reduce y, x algo=rdh op=2")
	assert.Contains(t, text, "collective all_gather y, x[0:64] group_size=2 op=3")
	assert.True(t, k.Tiles[2].PerRank(), "an HBM tile of a cores loop's block")
	k2, err := Parse(text, "go.tile")
	require.NoError(t, err, text)
	assert.Equal(t, text, String(k2))
}

// Every misuse of ranks, remote accesses and collectives is one error
// located where it is written.
func TestRankErrorsAreLocated(t *testing.T) {
	head := "kernel x\ntile a hbm fp32 [128, 4] input\ntile b hbm fp32 [128, 4] output\n"
	loop := "for c in range(0, 4) cores:\n    tile h hbm fp32 [128, 4]\n    tile s sbuf fp32 [128, 4]\n"
	tests := []struct {
		name, src, want string
	}{
		{"remote access to an SBUF tile", head + loop + "    any dma_copy h, s@1\n",
			"k.tile:7:22: dma_copy: s@...: only per-rank HBM tiles (declared in a cores loop) have an instance on another rank; s is in sbuf"},
		{"remote access to a kernel-level tensor", head + loop + "    any dma_copy a@1, s\n",
			"k.tile:7:19: dma_copy: a@...: only per-rank HBM tiles (declared in a cores loop) have an instance on another rank; a is a kernel-level HBM tensor, one for every rank"},
		{"remote access by a compute op", head + loop + "    vector tensor_copy s, h@1\n",
			"k.tile:7:28: tensor_copy: h@...: only DMA ops access another rank's tile"},
		{"a rank outside its loop", head + "for i in range(2):\n    pass\n" + loop + "    any dma_copy h@i, s\n",
			`k.tile:9:20: unknown name "i" (not a parameter or a loop variable in scope)`},
		{"no rank after @", head + loop + "    any dma_copy h@, s\n",
			`k.tile:7:20: expected a number, a name or '(', got ","`},
		{"collective outside a cores loop without group", head + "collective all_reduce b, a\n",
			"k.tile:4:1: collective all_reduce: outside a cores loop a collective needs group=[RANKS]"},
		{"collective in a loop inside a cores loop", head + loop + "    for i in range(2):\n        collective all_reduce h, h\n",
			"k.tile:8:9: collective all_reduce: inside a cores loop, a collective is a statement of the loop's body itself (not inside another loop or an if)"},
		{"collective on an SBUF tile", head + loop + "    collective all_gather h, s\n",
			"k.tile:7:30: collective all_gather: s is in sbuf; collectives move HBM tiles (per-rank HBM tiles declared in the cores loop)"},
		{"collective on a remote tile", head + loop + "    collective all_gather h, h@2\n",
			"k.tile:7:31: collective all_gather: its operands are each rank's own tiles; the group says which ranks take part (no @RANK)"},
		{"collective with two inputs", head + loop + "    collective all_reduce h, h, h\n",
			"k.tile:7:5: collective all_reduce takes one output and one input, got 1 and 2"},
		{"unknown algorithm", head + "collective all_reduce b, a group=[0, 1] algo=tree\n",
			`k.tile:4:46: algo is mesh, rdh, ring, got "tree"`},
		{"send to three ranks", head + "collective send b, a group=[0, 1, 2]\n",
			"k.tile:4:29: collective send moves a tile between two ranks: group=[FROM, TO], not 3 ranks"},
		{"a rank twice in a group", head + "collective all_gather b, a group=[0, 1, 0]\n",
			"k.tile:4:41: rank 0 is in the group twice (the other at 4:35)"},
		{"group given twice", head + "collective all_gather b, a group=[0, 1] group=[0]\n",
			"k.tile:4:41: group given twice"},
		{"group_size zero", head + loop + "    collective all_reduce h, h group_size=0\n",
			`k.tile:7:43: expected a group size (a positive number of ranks), got "0"`},
		{"group_size not a number", head + loop + "    collective all_reduce h, h group_size=c\n",
			`k.tile:7:43: expected a group size (a positive number of ranks), got "c"`},
		{"group_size with group", head + loop + "    collective all_reduce h, h group=[0, 1] group_size=2\n",
			"k.tile:7:56: collective all_reduce: group= names the group, group_size= cuts the cores loop's ranks into groups; give one of them"},
		{"group_size outside a cores loop", head + "collective all_reduce b, a group_size=2\n",
			"k.tile:4:39: collective all_reduce: group_size= cuts a cores loop's ranks into groups; outside one a collective needs group=[RANKS]"},
		{"send over groups of four", head + loop + "    collective send h, h group_size=4\n",
			"k.tile:7:37: collective send moves a tile between two ranks: group_size=2 (each group's first to its second), not 4"},
		{"HBM tile in another loop", head + "for i in range(2):\n    tile h hbm fp32 [4]\n    any dma_copy h, a[0, :]\n",
			"k.tile:5:10: tile h: HBM tensors are declared at kernel level or directly in a cores loop (one per rank), not inside another loop"},
		{"rotating per-rank HBM tile", head + "for c in range(0, 2) cores:\n    tile h hbm fp32 [4] bufs=2\n    any dma_copy h, a[0, :]\n",
			"k.tile:5:10: tile h: a per-rank HBM tile has one slot (bufs=1), not 2"},
		{"chip= on an SBUF tile", head + "tile s sbuf fp32 [128, 4] chip=1\nvector memset s\n",
			"k.tile:4:32: tile s: chip= places kernel-level HBM tensors; an on-chip tile is on its rank's chip (core=)"},
		{"chip= on a per-rank tile", head + "for c in range(0, 2) cores:\n    tile h hbm fp32 [4] chip=1\n    any dma_copy h, a[0, :]\n",
			"k.tile:5:30: tile h: chip= places kernel-level HBM tensors; a per-rank tile is on its rank's chip"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, checkErr(t, tc.src))
		})
	}
}

// Ranks are checked against the system, chips times cores per chip, where
// they are written; on one chip the messages speak of cores.
func TestCheckRanksIsLocated(t *testing.T) {
	tests := []struct {
		name, src    string
		chips, cores int
		want         string
	}{
		{"group rank past the chip", "kernel x\ntile a hbm fp32 [4] input\ntile b hbm fp32 [4] output\ncollective all_reduce b, a group=[0, 8]\n",
			1, 8, "k.tile:4:38: collective all_reduce: group names core 8, which does not exist (the chip has 8)"},
		{"group rank past the system", "kernel x\nfor c in range(0, 4) cores:\n    tile h hbm fp32 [4]\n    collective all_reduce h, h group=[0, 32]\n",
			4, 8, "k.tile:4:42: collective all_reduce: group names rank 32, which does not exist (the system has 32: 4 chips of 8 cores)"},
		{"cores loop past the system", "kernel x\nfor c in range(0, 33) cores:\n    tile s sbuf bf16 [128, 4]\n    vector memset s\n",
			4, 8, "k.tile:2:1: for c cores: a cores loop needs constant bounds within the system's 32 ranks (4 chips of 8 cores)"},
		{"tile on a rank past the system", "kernel x\ntile a sbuf bf16 [128, 4] core=40\nvector memset a\n",
			4, 8, "k.tile:2:32: tile a: rank 40 does not exist (the system has 32: 4 chips of 8 cores)"},
		{"tensor on a chip past the system", "kernel x\ntile a hbm bf16 [128, 4] chip=2\ntile s sbuf bf16 [128, 4]\nany dma_copy s, a\n",
			2, 8, "k.tile:2:31: tile a: chip 2 does not exist (the system has 2)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, err := Parse(tc.src, "k.tile")
			require.NoError(t, err)
			err = k.CheckRanks(tc.chips, tc.cores)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
	k, err := Parse("kernel x\nfor c in range(0, 32) cores:\n    tile s sbuf bf16 [128, 4]\n    vector memset s\n", "k.tile")
	require.NoError(t, err)
	assert.NoError(t, k.CheckRanks(4, 8), "32 ranks on 4 chips")
	assert.Error(t, k.CheckRanks(1, 8))
}

func TestSubstAndFolded(t *testing.T) {
	k := New("x")
	c, l := k.Var("c"), k.Var("l")
	e := c.E().MulC(128).Add(l.E().MulC(4))
	env := []int64{0, 3}
	assert.Equal(t, int64(5*128+12), e.Subst(c, 5).Eval(env))
	v, ok := e.Subst(c, 5).Subst(l, 3).Const()
	assert.True(t, ok)
	assert.Equal(t, int64(5*128+12), v)
	size, ok := e.AddC(128).Sub(e).Folded()
	assert.True(t, ok, "(x + 128) - x is 128 whatever x")
	assert.Equal(t, int64(128), size)
	_, ok = e.Sub(C(1)).Folded()
	assert.False(t, ok)
}

package sched_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/isa/asm"
	"github.com/trnsim/trnsim/memory"
	"github.com/trnsim/trnsim/noc"
	"github.com/trnsim/trnsim/workloads"
	"github.com/trnsim/trnsim/workloads/sched"
	"github.com/trnsim/trnsim/workloads/tile"
)

// collOp is the op id the collectives of these tests carry.
const collOp = 9

// system is a simulated system of ranks: a preset and a chip count.
type system struct {
	preset string
	chips  int
}

func (s system) String() string { return fmt.Sprintf("%s_x%d", s.preset, s.chips) }

func (s system) config(t testing.TB) *configs.RunConfig {
	return preset(t, s.preset, fmt.Sprintf("hardware.chips=%d", s.chips))
}

// runKernel parses, schedules and simulates a kernel (race check on) and
// returns the result and the DMA bytes of every rank.
func runKernel(t *testing.T, sys system, src string, opts sched.Options) (*chip.Result, map[int]int64) {
	t.Helper()
	cfg := sys.config(t)
	k, err := tile.Parse(src, "coll.tile")
	require.NoError(t, err, src)
	tg := workloads.Target(cfg)
	require.NoError(t, k.CheckRanks(tg.Limits.Chips, tg.Limits.CoresPerChip))
	opts.DGEAuto = true
	p, err := sched.Compile(k, tg, opts)
	require.NoError(t, err, src)
	res, err := chip.Run(cfg, p.Program, chip.Options{})
	require.NoError(t, err, "the simulation, race check on:\n%s", src)
	bytes := map[int]int64{}
	per := cfg.Hardware.Chip.Cores
	for _, ch := range res.Chips {
		for _, c := range ch.Cores {
			bytes[int(c.Chip)*per+int(c.Core)] += c.DMA.Bytes
		}
	}
	return res, bytes
}

// pieceBytes cuts a message of shape (dtype of eb bytes) into n pieces as
// docs/tile.md says: along its first dimension of at least n elements
// (else its largest), piece k holding elements k*len/n to (k+1)*len/n.
func pieceBytes(shape []int64, eb int64, n int) []int64 {
	d := -1
	for i, s := range shape {
		if s >= int64(n) {
			d = i
			break
		}
	}
	if d < 0 {
		d = 0
		for i, s := range shape {
			if s > shape[d] {
				d = i
			}
		}
	}
	other := eb
	for i, s := range shape {
		if i != d {
			other *= s
		}
	}
	out := make([]int64, n)
	for k := range out {
		out[k] = (int64(k+1)*shape[d]/int64(n) - int64(k)*shape[d]/int64(n)) * other
	}
	return out
}

func sum(p []int64, lo, hi int) int64 {
	var s int64
	for k := lo; k < hi; k++ {
		s += p[k]
	}
	return s
}

// expectedBytes is what group member i's DMA engines write for a
// collective of kind over n ranks with algorithm algo, whose message (the
// input; the output for all_gather) cuts into pieces p: the local copies
// plus what it sends, by the formulas of docs/tile.md.
func expectedBytes(kind, algo string, n, i int, p []int64) int64 {
	if algo == tile.AlgoRDH && n&(n-1) != 0 {
		algo = tile.AlgoRing
	}
	m := sum(p, 0, n)
	mod := func(a int) int { return ((a % n) + n) % n }
	var half, doubling int64
	if algo == tile.AlgoRDH {
		half = sum(p, i&(n/2), i&(n/2)+n/2) // the half a member first keeps
		for d := 1; d < n; d *= 2 {         // what recursive doubling sends
			lo := i &^ (d - 1)
			doubling += sum(p, lo, lo+d)
		}
	}
	switch kind {
	case tile.AllReduce:
		switch algo {
		case tile.AlgoMesh:
			// Its own piece into its output, the others to their members'
			// slots, its n-1 slots added into its piece, the piece to
			// every other member.
			return m + 2*int64(n-1)*p[i]
		case tile.AlgoRDH:
			return half + (m - p[i]) + doubling
		}
		// Its whole input into its output, then the ring's reduce-scatter
		// and all-gather.
		return m + (m - p[i]) + (m - p[mod(i+1)])
	case tile.ReduceScatter:
		switch algo {
		case tile.AlgoMesh:
			return m + int64(n-1)*p[i]
		case tile.AlgoRDH:
			return half + (m - p[i])
		}
		return (m - p[mod(i-1)]) + (m - p[i])
	case tile.AllGather:
		switch algo {
		case tile.AlgoMesh:
			return int64(n) * p[i]
		case tile.AlgoRDH:
			return p[i] + doubling
		}
		return p[i] + m - p[mod(i+1)]
	case tile.AllToAll:
		return m
	case tile.Broadcast:
		switch algo {
		case tile.AlgoMesh:
			if i == 0 {
				return int64(n) * m
			}
			return 0
		case tile.AlgoRDH:
			var b int64
			if i == 0 {
				b = m
			}
			for d := 1; d < n; d *= 2 {
				if i < d && i+d < n {
					b += m
				}
			}
			return b
		}
		switch {
		case i == 0:
			return 2 * m
		case i < n-1:
			return m
		}
		return 0
	}
	panic(kind)
}

// collCase is one collective kernel: the tiles x and y of every rank and
// the collective over them.
type collCase struct {
	name, kind string
	// decl declares x and y in the cores loop over n ranks; y and x the
	// collective's operands; shape the message the pieces are cut from
	// (the input, the output for all_gather).
	decl   func(n int) string
	y, x   func(n int) string
	shape  func(n int) []int64
	eb     int64
	onlyAt []int // the group sizes the case runs at (nil: every one)
}

func whole(string) func(int) string { return func(int) string { return "" } }

var collCases = []collCase{
	{name: "all_reduce 300x40 fp32", kind: tile.AllReduce, eb: 4,
		decl:  func(int) string { return "tile x hbm fp32 [300, 40] input\n    tile y hbm fp32 [300, 40] output" },
		shape: func(int) []int64 { return []int64{300, 40} }},
	{name: "all_reduce 3x100 bf16", kind: tile.AllReduce, eb: 2,
		decl:  func(int) string { return "tile x hbm bf16 [3, 100] input\n    tile y hbm bf16 [3, 100] output" },
		shape: func(int) []int64 { return []int64{3, 100} }},
	{name: "all_reduce slices", kind: tile.AllReduce, eb: 4,
		decl: func(int) string { return "tile x hbm fp32 [200, 64] input\n    tile y hbm fp32 [5, 160, 64] output" },
		y:    func(int) string { return "y[c % 5, 10:160, :]" }, x: func(int) string { return "x[50:200]" },
		shape: func(int) []int64 { return []int64{150, 64} }},
	{name: "broadcast 300x40 fp32", kind: tile.Broadcast, eb: 4,
		decl:  func(int) string { return "tile x hbm fp32 [300, 40] input\n    tile y hbm fp32 [300, 40] output" },
		shape: func(int) []int64 { return []int64{300, 40} }},
	{name: "broadcast 5 bf16", kind: tile.Broadcast, eb: 2,
		decl:  func(int) string { return "tile x hbm bf16 [5] input\n    tile y hbm bf16 [5] output" },
		shape: func(int) []int64 { return []int64{5} }},
	{name: "reduce_scatter 37 rows a rank", kind: tile.ReduceScatter, eb: 4,
		decl: func(n int) string {
			return fmt.Sprintf("tile x hbm fp32 [%d, 24] input\n    tile y hbm fp32 [37, 24] output", 37*n)
		},
		shape: func(n int) []int64 { return []int64{int64(37 * n), 24} }},
	{name: "reduce_scatter 300 rows in uneven pieces", kind: tile.ReduceScatter, eb: 4, onlyAt: []int{3, 8, 16},
		decl: func(n int) string {
			return fmt.Sprintf("tile x hbm fp32 [300, 8] input\n    tile y hbm fp32 [%d, 8] output", (300+n-1)/n)
		},
		y:     func(n int) string { return fmt.Sprintf("y[0:(c + 1) * 300 // %d - c * 300 // %d]", n, n) },
		shape: func(int) []int64 { return []int64{300, 8} }},
	{name: "all_gather 37 rows a rank", kind: tile.AllGather, eb: 2,
		decl: func(n int) string {
			return fmt.Sprintf("tile x hbm bf16 [37, 24] input\n    tile y hbm bf16 [%d, 24] output", 37*n)
		},
		shape: func(n int) []int64 { return []int64{int64(37 * n), 24} }},
	{name: "all_gather 300 rows in uneven pieces", kind: tile.AllGather, eb: 4, onlyAt: []int{3, 8, 16},
		decl: func(n int) string {
			return fmt.Sprintf("tile x hbm fp32 [%d, 8] input\n    tile y hbm fp32 [300, 8] output", (300+n-1)/n)
		},
		x:     func(n int) string { return fmt.Sprintf("x[0:(c + 1) * 300 // %d - c * 300 // %d]", n, n) },
		shape: func(int) []int64 { return []int64{300, 8} }},
	{name: "all_to_all 5 rows a piece", kind: tile.AllToAll, eb: 4,
		decl: func(n int) string {
			return fmt.Sprintf("tile x hbm fp32 [%d, 24] input\n    tile y hbm fp32 [%d, 24] output", 5*n, 5*n)
		},
		shape: func(n int) []int64 { return []int64{int64(5 * n), 24} }},
}

// collSystems are the systems and group sizes of the matrix: one trn2
// chip (8 cores) for groups of 2 to 8, two trn2 chips for 16, sixteen trn1
// chips (2 cores each) and four trn2 chips for 32.
var collSystems = []struct {
	sys system
	ns  []int
}{
	{system{"trn2", 1}, []int{2, 3, 4, 8}},
	{system{"trn2", 2}, []int{16}},
	{system{"trn1", 16}, []int{32}},
	{system{"trn2", 4}, []int{32}},
}

// Every kind of collective, over groups of 2 to 32 ranks on one chip and
// across chips, with every algorithm, at awkward sizes: it schedules,
// simulates to completion race-free, and each rank's DMA engines move what
// the algorithm's formula says; every instruction carries the collective's
// op id.
func TestCollectivesMoveTheirBytes(t *testing.T) {
	for _, ss := range collSystems {
		for _, n := range ss.ns {
			for _, tc := range collCases {
				if tc.onlyAt != nil && !containsInt(tc.onlyAt, n) {
					continue
				}
				for _, algo := range tile.CollectiveAlgorithms {
					name := fmt.Sprintf("%s/n=%d/%s/%s", ss.sys, n, tc.name, algo)
					t.Run(name, func(t *testing.T) {
						y, x := "y", "x"
						if tc.y != nil {
							y = tc.y(n)
						}
						if tc.x != nil {
							x = tc.x(n)
						}
						stmt, opts := " algo="+algo, sched.Options{}
						if algo == tile.AlgoRDH && n&(n-1) != 0 {
							// The statement's algo=rdh is an error on this
							// group; the kernel-wide option runs ring.
							stmt, opts.CollectiveAlgorithm = "", algo
						}
						src := fmt.Sprintf("kernel coll\nfor c in range(0, %d) cores:\n    %s\n    collective %s %s, %s%s op=%d\n",
							n, tc.decl(n), tc.kind, y, x, stmt, collOp)
						res, bytes := runKernel(t, ss.sys, src, opts)
						p := pieceBytes(tc.shape(n), tc.eb, n)
						var total int64
						for r, want := range expectedByRank(t, ss.sys, tc.kind, algo, seq(0, n), p) {
							assert.Equal(t, want, bytes[r], "rank %d", r)
						}
						for i := 0; i < n; i++ {
							total += bytes[i]
						}
						require.Len(t, res.Ops, 1, "every instruction is the collective's")
						assert.Equal(t, int32(collOp), res.Ops[0].ID)
						assert.Equal(t, total, res.Ops[0].DMABytes)
					})
				}
			}
		}
	}
}

// expectedByRank is what each rank of group moves for a collective whose
// message cuts into pieces p, the algorithm run in the scheduler's order
// of the group along the fabric (sched.CollectiveOrder): a position's
// bytes by the formulas, with the pieces of a reduce-scatter or an
// all-gather following their members.
func expectedByRank(t *testing.T, sys system, kind, algo string, group []int, p []int64) map[int]int64 {
	t.Helper()
	n := len(group)
	run := sched.Algorithm(algo, "", n, 0)
	order := sched.CollectiveOrder(workloads.Target(sys.config(t)), kind, run, group)
	member := map[int]int{}
	for i, r := range group {
		member[r] = i
	}
	pq := p
	if kind == tile.ReduceScatter || kind == tile.AllGather {
		pq = make([]int64, n)
		for q, r := range order {
			pq[q] = p[member[r]]
		}
	}
	out := map[int]int64{}
	for q, r := range order {
		out[r] = expectedBytes(kind, run, n, q, pq)
	}
	return out
}

func seq(lo, hi int) []int {
	var s []int
	for i := lo; i < hi; i++ {
		s = append(s, i)
	}
	return s
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// A group that is part of the cores loop, in an order of its own: member
// i is the group's i-th rank, the ranks outside it move nothing.
func TestCollectiveOverAGroupInItsOrder(t *testing.T) {
	group := []int{6, 1, 3, 4}
	for _, algo := range tile.CollectiveAlgorithms {
		t.Run(algo, func(t *testing.T) {
			src := fmt.Sprintf("kernel coll\nfor c in range(0, 8) cores:\n    tile x hbm fp32 [130, 16] input\n    tile y hbm fp32 [130, 16] output\n"+
				"    collective all_reduce y, x group=[6, 1, 3, 4] algo=%s op=%d\n", algo, collOp)
			_, bytes := runKernel(t, system{"trn2", 1}, src, sched.Options{})
			p := pieceBytes([]int64{130, 16}, 4, 4)
			for i, r := range group {
				assert.Equal(t, expectedBytes(tile.AllReduce, algo, 4, i, p), bytes[r], "rank %d (member %d)", r, i)
			}
			for _, r := range []int{0, 2, 5, 7} {
				assert.Zero(t, bytes[r], "rank %d is not in the group", r)
			}
		})
	}
}

// Send is triggered by the sender, recv by the receiver; across chips too.
func TestSendAndRecv(t *testing.T) {
	src := "kernel pair\nfor c in range(0, 16) cores:\n    tile x hbm fp32 [100, 64] input\n    tile y hbm fp32 [100, 64] output\n" +
		"    tile z hbm fp32 [100, 64] output\n" +
		"    collective send y, x group=[3, 12] op=9\n" +
		"    collective recv z, y group=[12, 5] op=9\n"
	res, bytes := runKernel(t, system{"trn2", 2}, src, sched.Options{})
	const m = 100 * 64 * 4
	assert.Equal(t, int64(m), bytes[3], "the sender of the send")
	assert.Equal(t, int64(m), bytes[5], "the receiver of the recv")
	assert.Zero(t, bytes[12], "the receiver of the send, the sender of the recv")
	require.Len(t, res.Ops, 1)
	assert.Equal(t, int64(2), res.Ops[0].Instructions)
}

// Without algo= the message size chooses (mesh below 1 MiB, rdh up to
// 56 MiB, ring above; rdh needs a power-of-two group), and the kernel-wide
// option overrides the size but not the statement.
func TestAlgorithmBySize(t *testing.T) {
	tests := []struct {
		stmt, opt string
		n         int
		bytes     int64
		want      string
	}{
		{"", "", 8, 1<<20 - 1, tile.AlgoMesh},
		{"", "", 8, 1 << 20, tile.AlgoRDH},
		{"", "", 8, 56 << 20, tile.AlgoRDH},
		{"", "", 8, 56<<20 + 1, tile.AlgoRing},
		{"", "", 6, 8 << 20, tile.AlgoRing},
		{"", tile.AlgoMesh, 8, 100 << 20, tile.AlgoMesh},
		{tile.AlgoRing, tile.AlgoMesh, 8, 1, tile.AlgoRing},
		{tile.AlgoRDH, "", 12, 1, tile.AlgoRing},
		{"", tile.AlgoRDH, 12, 1, tile.AlgoRing},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, sched.Algorithm(tc.stmt, tc.opt, tc.n, tc.bytes), "%+v", tc)
	}
	// In a kernel: a 1.5 MiB all-reduce over 8 ranks by size is rdh, with
	// the option ring.
	src := fmt.Sprintf("kernel coll\nfor c in range(0, 8) cores:\n    tile x hbm fp32 [768, 512] input\n    tile y hbm fp32 [768, 512] output\n"+
		"    collective all_reduce y, x op=%d\n", collOp)
	p := pieceBytes([]int64{768, 512}, 4, 8)
	for _, opt := range []string{"", tile.AlgoRing} {
		_, bytes := runKernel(t, system{"trn2", 1}, src, sched.Options{CollectiveAlgorithm: opt})
		algo := tile.AlgoRDH
		if opt != "" {
			algo = opt
		}
		for i := 0; i < 8; i++ {
			assert.Equal(t, expectedBytes(tile.AllReduce, algo, 8, i, p), bytes[i], "option %q, rank %d", opt, i)
		}
	}
	_, err := sched.Compile(mustParse(t, src), workloads.Target(preset(t, "trn2")), sched.Options{CollectiveAlgorithm: "tree"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `collective algorithm "tree": the algorithms are mesh, rdh, ring`)
}

func mustParse(t *testing.T, src string) *tile.Kernel {
	t.Helper()
	k, err := tile.Parse(src, "coll.tile")
	require.NoError(t, err)
	return k
}

// A collective outside the cores loops runs over its group, with the
// kernel-level tensors it names shared by every rank.
func TestCollectiveOutsideCoresLoops(t *testing.T) {
	src := "kernel pair\ntile part hbm fp32 [128, 512] input\ntile total hbm fp32 [128, 512] output\n" +
		"collective all_reduce total, part group=[0, 9] algo=ring op=9\n"
	res, bytes := runKernel(t, system{"trn2", 2}, src, sched.Options{})
	p := pieceBytes([]int64{128, 512}, 4, 2)
	assert.Equal(t, expectedBytes(tile.AllReduce, tile.AlgoRing, 2, 0, p), bytes[0])
	assert.Equal(t, expectedBytes(tile.AllReduce, tile.AlgoRing, 2, 1, p), bytes[9])
	assert.Len(t, res.Chips, 2)
}

// Collectives between compute: the ranks compute, reduce, and compute
// with the result, the transfers on GpSimd on queues of their own.
func TestCollectiveBetweenCompute(t *testing.T) {
	src := `kernel tp
param R = 4
tile inp hbm bf16 [R * 256, 512] input
tile res hbm bf16 [R * 256, 512] output
for c in range(0, R) cores:
    tile part hbm bf16 [256, 512]
    tile sum hbm bf16 [256, 512]
    tile s sbuf bf16 [128, 512]
    for i in range(0, 2) parallel:
        any dma_copy s, inp[c * 256 + i * 128:c * 256 + i * 128 + 128, :] op=1
        vector tensor_tensor s, s, s alu=add op=1
        any dma_copy part[i * 128:i * 128 + 128], s op=1
    collective all_reduce sum, part op=2
    for j in range(0, 2) parallel:
        any dma_copy s, sum[j * 128:j * 128 + 128] op=3
        scalar activation s, s func=relu op=3
        any dma_copy res[c * 256 + j * 128:c * 256 + j * 128 + 128, :], s op=3
`
	for _, algo := range tile.CollectiveAlgorithms {
		t.Run(algo, func(t *testing.T) {
			cfg := preset(t, "trn2")
			k := mustParse(t, src)
			p, err := sched.Compile(k, workloads.Target(cfg), sched.Options{DGEAuto: true, CollectiveAlgorithm: algo})
			require.NoError(t, err)
			res, err := chip.Run(cfg, p.Program, chip.Options{})
			require.NoError(t, err)
			ids := map[int32]bool{}
			for _, o := range res.Ops {
				ids[o.ID] = true
			}
			assert.Equal(t, map[int32]bool{1: true, 2: true, 3: true}, ids)
			text := programText(t, p)
			for _, line := range strings.Split(text, "\n") {
				if strings.Contains(line, " op=2") {
					// The collective's transfers, and each rank's nop at its
					// end (what reads the result waits for it).
					if strings.HasPrefix(line, "gpsimd nop ") {
						continue
					}
					assert.True(t, strings.HasPrefix(line, "gpsimd dma_copy "), line)
					assert.Regexp(t, `queue=1[45] dge=none`, line)
				}
			}
		})
	}
}

func programText(t *testing.T, p *sched.Program) string {
	t.Helper()
	text, err := asm.String(p.Program)
	require.NoError(t, err)
	return text
}

// Bad collectives, remote accesses and per-rank tiles are one error each,
// located at what is wrong, and never a panic.
func TestCollectiveErrorsAreLocated(t *testing.T) {
	loop := func(n int, body string) string {
		return fmt.Sprintf("kernel bad\nfor c in range(0, %d) cores:\n    tile x hbm fp32 [64, 32] input\n    tile y hbm fp32 [64, 32] output\n    tile s sbuf fp32 [64, 32]\n%s", n, body)
	}
	tests := []struct {
		name string
		sys  system
		src  string
		want string
	}{
		{"a group rank past the system", system{"trn2", 2}, loop(16, "    collective all_reduce y, x group=[0, 16]\n"),
			"coll.tile:6:42: collective all_reduce y, x group=[0, 16]: group names rank 16, which does not exist (the system has 16: 2 chips of 8 cores)"},
		{"a group rank past the chip", system{"trn2", 1}, "kernel bad\ntile a hbm fp32 [4] input\ntile b hbm fp32 [4] output\ncollective all_gather b, a group=[1, 8]\n",
			"coll.tile:4:38: collective all_gather b, a group=[1, 8]: group names core 8, which does not exist (the chip has 8)"},
		{"a group size that does not divide the loop's ranks", system{"trn2", 1}, loop(6, "    collective all_reduce y, x group_size=4\n"),
			"coll.tile:6:43: collective all_reduce y, x group_size=4: group_size=4 does not divide the 6 ranks of the cores loop over c (ranks 0 to 5)"},
		{"algo=rdh over a group that is not a power of two", system{"trn2", 1}, loop(6, "    collective all_reduce y, x algo=rdh\n"),
			"coll.tile:6:37: collective all_reduce y, x algo=rdh: algo=rdh pairs ranks whose indices differ in one bit, so it needs a group of a power-of-two size; this one has 6 ranks: use algo=ring or algo=mesh, or leave algo= out"},
		{"a group rank the loop does not run", system{"trn2", 1}, loop(4, "    collective all_reduce y, x group=[0, 5]\n"),
			"coll.tile:6:42: collective all_reduce y, x group=[0, 5]: group names rank 5, which the cores loop over c does not run (ranks 0 to 3)"},
		{"all_reduce output and input differ", system{"trn2", 1}, loop(4, "    collective all_reduce y[0:32], x\n"),
			"coll.tile:6:5: collective all_reduce y[0:32], x: mismatched sizes: rank 0's output is [32, 32] and its input [64, 32]; an all_reduce needs one shape"},
		{"inputs differ between ranks", system{"trn2", 1}, loop(4, "    collective all_reduce y[0:c + 1], x[0:c + 1]\n"),
			"coll.tile:6:5: collective all_reduce y[0:c + 1], x[0:c + 1]: mismatched sizes: rank 1's input is [2, 32], rank 0's [1, 32]; every rank's must be the same"},
		{"reduce_scatter output not a piece", system{"trn2", 1}, loop(4, "    collective reduce_scatter y, x\n"),
			"coll.tile:6:5: collective reduce_scatter y, x: mismatched sizes: rank 0's output has 2048 elements, but piece 0 of 4 of the input ([16, 32]) has 512"},
		{"all_gather input not a piece", system{"trn2", 1}, loop(3, "    collective all_gather y, x[0:21]\n"),
			"coll.tile:6:5: collective all_gather y, x[0:21]: mismatched sizes: rank 2's input has 672 elements, but piece 2 of 3 of the output ([22, 32]) has 704"},
		{"all_to_all pieces that do not match", system{"trn2", 1}, loop(3, "    collective all_to_all y, x\n"),
			"coll.tile:6:5: collective all_to_all y, x: mismatched sizes: piece 2 of rank 0's input has 704 elements, piece 0 of rank 2's output 672"},
		{"dtypes differ", system{"trn2", 1}, "kernel bad\nfor c in range(0, 2) cores:\n    tile x hbm fp32 [64, 32] input\n    tile y hbm bf16 [64, 32] output\n    collective all_reduce y, x\n",
			"coll.tile:5:5: collective all_reduce y, x: the output is bf16 and the input fp32; a collective moves one dtype"},
		{"send over four ranks", system{"trn2", 1}, loop(4, "    collective send y, x\n"),
			"coll.tile:6:5: collective send y, x: send moves a tile between two ranks: group=[FROM, TO], not 4 ranks"},
		{"operand sizes that depend on a loop", system{"trn2", 1},
			"kernel bad\ntile x hbm fp32 [64, 32] input\ntile y hbm fp32 [64, 32] output\nfor i in range(1, 3):\n    collective all_reduce y[0:i], x[0:i] group=[0, 1]\n",
			"coll.tile:5:27: collective all_reduce y[0:i], x[0:i] group=[0, 1]: dimension 0 of y: a collective's operand sizes must be constant (they may not depend on a loop)"},
		{"a remote rank without an instance", system{"trn2", 1}, loop(4, "    any dma_copy x@(c + 1), s\n"),
			"coll.tile:6:5: any dma_copy x@(c + 1), s: rank 4 has no instance of x (its cores loop runs ranks 0 to 3)"},
		{"a remote rank past the system", system{"trn2", 1}, loop(4, "    any dma_copy x@(c + 8), s\n"),
			"coll.tile:6:5: any dma_copy x@(c + 8), s: rank 8 has no instance of x: core 8 does not exist (the chip has 8)"},
		{"a collective in place", system{"trn2", 1}, loop(2, "    collective all_reduce x, x\n"),
			"coll.tile:6:5: collective all_reduce x, x: rank 0's output and input overlap; a collective is not done in place"},
		{"an operand outside its tile", system{"trn2", 1}, loop(2, "    collective all_reduce y[32:96], x[0:64]\n"),
			"coll.tile:6:5: collective all_reduce y[32:96], x[0:64]: dimension 0 of y: 32:96 is outside 0:64 or empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.sys.config(t)
			k, err := tile.Parse(tc.src, "coll.tile")
			require.NoError(t, err)
			p, err := sched.Compile(k, workloads.Target(cfg), sched.Options{DGEAuto: true})
			if err == nil {
				_, err = chip.Run(cfg, p.Program, chip.Options{})
			}
			require.Error(t, err)
			assert.Equal(t, tc.want, strings.TrimPrefix(err.Error(), streamPrefix(err.Error())))
		})
	}
}

// streamPrefix is the "chip C core K ENGINE stream: " a simulation puts
// before a stream's error.
func streamPrefix(msg string) string {
	if i := strings.Index(msg, " stream: "); i >= 0 && strings.HasPrefix(msg, "chip ") {
		return msg[:i+len(" stream: ")]
	}
	return ""
}

// A per-rank HBM tile lives in its rank's share of the chip's HBM (core c
// from c x share); one that does not fit the share names the rank.
func TestPerRankTilesInTheirShare(t *testing.T) {
	cfg := preset(t, "trn2", "hardware.chips=2")
	src := "kernel big\ntile t hbm fp32 [1024] input\nfor c in range(6, 10) cores:\n    tile x hbm fp32 [1024, 1024]\n    tile s sbuf fp32 [128, 1024]\n" +
		"    any dma_copy s, x[0:128]\n    any dma_copy x[128:256], s\n"
	p, err := sched.Compile(mustParse(t, src), workloads.Target(cfg), sched.Options{DGEAuto: true})
	require.NoError(t, err)
	share := cfg.Hardware.HBMBytesPerChip() / 8
	assert.Equal(t, int64(12<<30), share, "trn2: 96 GiB over 8 cores")
	found := 0
	for _, b := range p.Buffers {
		r := map[string]int{"x_c6": 6, "x_c7": 7, "x_c8": 8, "x_c9": 9}
		if rank, ok := r[b.Name]; ok {
			found++
			assert.Equal(t, int32(rank/8), b.Chip, b.Name)
			assert.Equal(t, int64(rank%8)*share, b.Offset, b.Name)
		}
	}
	assert.Equal(t, 4, found)
	_, err = chip.Run(cfg, p.Program, chip.Options{})
	require.NoError(t, err)

	big := "kernel big\nfor c in range(0, 16) cores:\n    tile x hbm fp32 [4, 1024, 1024, 1024]\n    tile s sbuf fp32 [128, 1024]\n    any dma_copy s, x[0, 0, 0:128]\n"
	_, err = sched.Compile(mustParse(t, big), workloads.Target(cfg), sched.Options{DGEAuto: true})
	var fe *sched.FitError
	require.ErrorAs(t, err, &fe)
	assert.True(t, fe.PerRank)
	assert.Equal(t, 0, fe.Rank)
	assert.Equal(t, "kernel big: tile x does not fit rank 0's share of chip 0's hbm: the rank's tiles need 17179869184 bytes, the share has 12884901888", err.Error())
}

// ringShift is docs/tile.md's hand-written exchange: every rank writes
// its block into the next rank's tile, and then reads what the previous
// rank wrote into its own.
const ringShift = `kernel ring_shift
param N = %d
tile inp hbm fp32 [N * 128, 512] input
tile res hbm fp32 [N * 128, 512] output
for c in range(0, N) cores:
    tile x hbm fp32 [128, 512]
    tile s sbuf fp32 [128, 512]
    any dma_copy s, inp[c * 128:c * 128 + 128, :]
    any dma_copy x@((c + 1) %% N), s
    any dma_copy s, x
    any dma_copy res[c * 128:c * 128 + 128, :], s
`

// A remote access is ordered like any other HBM access: each rank's read
// of its tile waits on the semaphore of the queue that the previous rank
// (on another chip, for the ranks at a chip's edge) wrote it on, and
// removing that wait makes the race check fire.
func TestRemoteAccessWaitsForTheWriter(t *testing.T) {
	for _, sys := range []system{{"trn2", 1}, {"trn2", 2}, {"trn1", 4}} {
		t.Run(sys.String(), func(t *testing.T) {
			cfg := sys.config(t)
			n := cfg.Hardware.Chips * cfg.Hardware.Chip.Cores
			per := cfg.Hardware.Chip.Cores
			p, err := sched.Compile(mustParse(t, fmt.Sprintf(ringShift, n)), workloads.Target(cfg), sched.Options{DGEAuto: true})
			require.NoError(t, err)
			res, err := chip.Run(cfg, p.Program, chip.Options{})
			require.NoError(t, err)
			assert.Len(t, res.Chips, cfg.Hardware.Chips)
			text := programText(t, p)
			lines := strings.Split(text, "\n")
			// Rank 0 reads x_c0, written by rank n-1 (chip n/per-1, core
			// per-1): its wait names that core's semaphore.
			prev := fmt.Sprintf("@%d>=", per-1)
			if sys.chips > 1 {
				prev = fmt.Sprintf("@%d.%d>=", (n-1)/per, (n-1)%per)
			}
			found := -1
			for i, line := range lines {
				if strings.Contains(line, "dma_copy s_c0[0:128, 0:512], x_c0[") && strings.Contains(line, prev) {
					found = i
				}
				if strings.HasPrefix(line, ".core") && line != ".core 0 0" && found < 0 {
					break
				}
			}
			require.GreaterOrEqual(t, found, 0, "rank 0's read waits on rank %d (%s):\n%s", n-1, prev, text)
			run := func(src string) error {
				prog, err := asm.Parse(src, "variant.asm", asm.Options{PSUMBankBytes: cfg.Hardware.Limits().PSUMBankBytes()})
				require.NoError(t, err)
				_, err = chip.Run(cfg, prog, chip.Options{})
				return err
			}
			require.NoError(t, run(text), "the program as printed")
			var kept []string
			for _, f := range strings.Fields(lines[found]) {
				if !(strings.HasPrefix(f, "wait=") && strings.Contains(f, prev)) {
					kept = append(kept, f)
				}
			}
			mod := append(append([]string{}, lines[:found]...), strings.Join(kept, " "))
			mod = append(mod, lines[found+1:]...)
			err = run(strings.Join(mod, "\n"))
			var re *memory.RaceError
			require.ErrorAs(t, err, &re, "without the wait")
			assert.Contains(t, err.Error(), "data race on hbm (chip 0) x_c0")
		})
	}
}

// streamTexts returns every stream's instructions, as printed, from the
// program's shared walk (OpenAll, what the simulator uses) or from a walk
// per stream (Open).
func streamTexts(t *testing.T, p *sched.Program, shared bool) []string {
	t.Helper()
	var streams []isa.Stream
	if shared {
		for _, s := range p.OpenAll() {
			streams = append(streams, s)
		}
	} else {
		for _, src := range p.Streams {
			streams = append(streams, src.Open())
		}
	}
	out := make([]string, len(streams))
	for i, s := range streams {
		var sb strings.Builder
		for {
			in, err := s.Next()
			require.NoError(t, err)
			if in == nil {
				break
			}
			sb.WriteString(asm.FormatInstruction(p.Program, in))
			fmt.Fprintf(&sb, " %v\n", in.Waits)
		}
		out[i] = sb.String()
	}
	return out
}

// Lockstep walks are deterministic: the shared walk, walks of one stream
// each, and a shared walk whose streams detach at once (SoloBuffer 1) make
// the same instructions, across chips.
func TestLockstepWalksAgree(t *testing.T) {
	cfg := preset(t, "trn2", "hardware.chips=2")
	src := `kernel tp
param R = 16
tile inp hbm bf16 [R * 256, 512] input
tile res hbm bf16 [R * 256, 512] output
for c in range(0, R) cores:
    tile part hbm bf16 [256, 512]
    tile sum hbm bf16 [256, 512]
    tile s sbuf bf16 [128, 512] bufs=2
    for i in range(0, 2) parallel:
        any dma_copy s, inp[c * 256 + i * 128:c * 256 + i * 128 + 128, :]
        vector tensor_tensor s, s, s alu=add op=1
        any dma_copy part[i * 128:i * 128 + 128], s
    collective all_reduce sum, part algo=ring op=2
    any dma_copy part@((c + 1) % R), sum
    for j in range(0, 2) parallel:
        any dma_copy s, part[j * 128:j * 128 + 128]
        scalar activation s, s func=relu op=3
        any dma_copy res[c * 256 + j * 128:c * 256 + j * 128 + 128, :], s
`
	var want []string
	for _, opts := range []sched.Options{{DGEAuto: true}, {DGEAuto: true, SoloBuffer: 1}, {DGEAuto: true, FinalizeDistance: 3}} {
		p, err := sched.Compile(mustParse(t, src), workloads.Target(cfg), opts)
		require.NoError(t, err)
		shared, solo := streamTexts(t, p, true), streamTexts(t, p, false)
		assert.Equal(t, shared, solo, "%+v", opts)
		if opts.FinalizeDistance == 0 {
			if want == nil {
				want = shared
			} else {
				assert.Equal(t, want, shared, "SoloBuffer changes nothing")
			}
		}
		_, err = chip.Run(cfg, p.Program, chip.Options{})
		require.NoError(t, err, "%+v", opts)
	}
}

// Compute that does not need a collective's result does not wait for it:
// the collective's transfers are on GpSimd and on queues of their own, so
// VectorE's work after it names none of their semaphores.
func TestComputeOverlapsACollective(t *testing.T) {
	src := `kernel overlap
for c in range(0, 8) cores:
    tile x hbm fp32 [1024, 512] input
    tile y hbm fp32 [1024, 512] output
    tile a sbuf fp32 [128, 512]
    tile b sbuf fp32 [128, 512]
    collective all_reduce y, x algo=ring op=2
    vector memset a value=1 op=3
    for i in range(0, 16) sequential:
        vector tensor_tensor b, a, a alu=add op=3
        vector tensor_tensor a, b, b alu=multiply op=3
`
	cfg := preset(t, "trn2")
	p, err := sched.Compile(mustParse(t, src), workloads.Target(cfg), sched.Options{DGEAuto: true})
	require.NoError(t, err)
	_, err = chip.Run(cfg, p.Program, chip.Options{})
	require.NoError(t, err)
	vector := 0
	for _, line := range strings.Split(programText(t, p), "\n") {
		if strings.HasPrefix(line, "vector ") {
			vector++
			assert.NotRegexp(t, `wait=s(14|15|22|23)`, line, "VectorE waits for the collective")
		}
	}
	assert.Equal(t, 8*33, vector)
}

// Every kernel of docs/tile.md schedules and runs race-free on two trn2
// chips, collectives and remote accesses among them.
func TestDocKernelsRun(t *testing.T) {
	md, err := os.ReadFile("../../docs/tile.md")
	require.NoError(t, err)
	cfg := preset(t, "trn2", "hardware.chips=2")
	blocks := strings.Split(string(md), "```tile\n")[1:]
	require.GreaterOrEqual(t, len(blocks), 9)
	for i, b := range blocks {
		src := b[:strings.Index(b, "```")]
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			k := mustParse(t, src)
			p, err := sched.Compile(k, workloads.Target(cfg), sched.Options{DGEAuto: true})
			require.NoError(t, err, src)
			_, err = chip.Run(cfg, p.Program, chip.Options{})
			require.NoError(t, err, src)
		})
	}
}

// Mesh is the hardware's one-step algorithm: over 16 trn2 chips of one
// rank each, a 32 KiB all-reduce by mesh beats rdh, which beats ring; each
// member's additions are on one queue, each waiting only for its slot
// (written on another chip), and its all-gather's transfers wait for
// nothing.
func TestMeshIsOneStep(t *testing.T) {
	cfg := preset(t, "trn2", "hardware.chips=16", "hardware.chip.lnc=1", "hardware.chip.cores=1")
	src := fmt.Sprintf("kernel coll\nfor c in range(0, 16) cores:\n    tile x hbm bf16 [16, 1024] input\n    tile y hbm bf16 [16, 1024] output\n"+
		"    collective all_reduce y, x op=%d\n", collOp)
	times := map[string]float64{}
	for _, algo := range tile.CollectiveAlgorithms {
		p, err := sched.Compile(mustParse(t, src), workloads.Target(cfg), sched.Options{DGEAuto: true, CollectiveAlgorithm: algo})
		require.NoError(t, err)
		res, err := chip.Run(cfg, p.Program, chip.Options{})
		require.NoError(t, err)
		times[algo] = res.SimTime.Nanoseconds() / 1000
		if algo != tile.AlgoMesh {
			continue
		}
		adds, gathers := 0, 0
		queues := map[string]bool{}
		for _, line := range strings.Split(programText(t, p), "\n") {
			switch {
			case strings.Contains(line, "acc=add"):
				adds++
				queues[regexp.MustCompile(`^\S+ \S+ (y_c\d+)\[.* (queue=\d+)`).FindStringSubmatch(line)[1]+" "+
					regexp.MustCompile(`queue=\d+`).FindString(line)] = true
				assert.Len(t, regexp.MustCompile(`wait=`).FindAllString(line, -1), 1, line)
				assert.Regexp(t, `wait=s\d+@\d+\.0>=`, line, "the slot's writer, on another chip")
			case regexp.MustCompile(`^gpsimd dma_copy y_c\d+\[.*\], y_c\d+\[`).MatchString(line):
				gathers++
				assert.NotContains(t, line, "wait=", line)
			}
		}
		assert.Equal(t, 16*15, adds)
		assert.Equal(t, 16*15, gathers)
		assert.Len(t, queues, 16, "one queue for each member's additions")
	}
	assert.Less(t, times[tile.AlgoMesh], times[tile.AlgoRDH], "%v", times)
	assert.Less(t, times[tile.AlgoRDH], times[tile.AlgoRing], "%v", times)
}

// group_size= cuts a cores loop's ranks into consecutive groups, one
// collective per group: 2 and 4 groups on one chip and across chips, every
// algorithm; each rank moves what its group's collective moves, and no
// transfer joins two groups.
func TestGroupsPerReplica(t *testing.T) {
	rankRe := regexp.MustCompile(`_c(\d+)\[`)
	for _, tc := range []struct {
		sys       system
		ranks, gs int
	}{
		{system{"trn2", 1}, 8, 4},
		{system{"trn2", 1}, 8, 2},
		{system{"trn2", 2}, 16, 8},
		{system{"trn2", 2}, 16, 4},
		{system{"trn2", 4}, 32, 16},
		{system{"trn1", 8}, 16, 4},
	} {
		for _, kind := range []string{tile.AllReduce, tile.ReduceScatter, tile.AllGather} {
			for _, algo := range tile.CollectiveAlgorithms {
				name := fmt.Sprintf("%s/%d_ranks/group_size=%d/%s/%s", tc.sys, tc.ranks, tc.gs, kind, algo)
				t.Run(name, func(t *testing.T) {
					g := tc.gs
					decl := "tile x hbm fp32 [96, 40] input\n    tile y hbm fp32 [96, 40] output"
					shape := []int64{96, 40}
					switch kind {
					case tile.ReduceScatter:
						decl = fmt.Sprintf("tile x hbm fp32 [%d, 40] input\n    tile y hbm fp32 [24, 40] output", 24*g)
						shape = []int64{int64(24 * g), 40}
					case tile.AllGather:
						decl = fmt.Sprintf("tile x hbm fp32 [24, 40] input\n    tile y hbm fp32 [%d, 40] output", 24*g)
						shape = []int64{int64(24 * g), 40}
					}
					src := fmt.Sprintf("kernel groups\nfor c in range(0, %d) cores:\n    %s\n    collective %s y, x group_size=%d algo=%s op=%d\n",
						tc.ranks, decl, kind, g, algo, collOp)
					res, bytes := runKernel(t, tc.sys, src, sched.Options{})
					p := pieceBytes(shape, 4, g)
					for lo := 0; lo < tc.ranks; lo += g {
						for r, want := range expectedByRank(t, tc.sys, kind, algo, seq(lo, lo+g), p) {
							assert.Equal(t, want, bytes[r], "rank %d (group %d)", r, r/g)
						}
					}
					require.Len(t, res.Ops, 1)
					k := mustParse(t, src)
					prog, err := sched.Compile(k, workloads.Target(tc.sys.config(t)), sched.Options{DGEAuto: true})
					require.NoError(t, err)
					n := 0
					for _, line := range strings.Split(programText(t, prog), "\n") {
						if !strings.Contains(line, "dma_copy") {
							continue
						}
						n++
						group := -1
						for _, m := range rankRe.FindAllStringSubmatch(line, -1) {
							var r int
							fmt.Sscan(m[1], &r)
							if group < 0 {
								group = r / g
							}
							assert.Equal(t, group, r/g, "a transfer within one group: %s", line)
						}
					}
					assert.Positive(t, n)
				})
			}
		}
	}
}

// The target's chip routes are the fabric's: workloads.Target's hops and
// latencies between every two chips are noc's routes, on every topology.
func TestTargetRoutesAreTheFabrics(t *testing.T) {
	for _, sets := range [][]string{
		{"hardware.preset=trn2", "hardware.chips=16"},
		{"hardware.preset=trn2", "hardware.chips=8"},
		{"hardware.preset=trn1", "hardware.chips=16"},
		{"hardware.preset=trn2", "hardware.chips=6", "hardware.topology.kind=ring"},
		{"hardware.preset=trn2", "hardware.chips=27", "hardware.topology.kind=3d_torus"},
		{"hardware.preset=trn2", "hardware.chips=12", "hardware.topology.kind=2d_torus", "hardware.topology.dims=[2,6]"},
		{"hardware.preset=trn2", "hardware.chips=5", "hardware.topology.kind=switched"},
		{"hardware.preset=trn2", "hardware.chips=32", "hardware.nodes=2"},
		{"hardware.preset=trn2", "hardware.chips=4", "hardware.topology.kind=custom",
			"hardware.topology.links=[{a: 0, b: 1}, {a: 1, b: 2}, {a: 2, b: 3}, {a: 0, b: 2}]"},
	} {
		t.Run(strings.Join(sets, " "), func(t *testing.T) {
			cfg := preset(t, strings.TrimPrefix(sets[0], "hardware.preset="), sets[1:]...)
			tg := workloads.Target(cfg)
			f, err := noc.New(chip.FabricConfig(&cfg.Hardware))
			require.NoError(t, err)
			n := cfg.Hardware.Chips
			require.Len(t, tg.ChipHops, n)
			for a := 0; a < n; a++ {
				for b := 0; b < n; b++ {
					r, err := f.Route(a, b)
					require.NoError(t, err)
					hops, lat := 0, 0.0
					if r != nil {
						hops, lat = r.Hops, r.Latency.Nanoseconds()
					}
					assert.Equal(t, hops, tg.ChipHops[a][b], "hops %d -> %d", a, b)
					assert.InDelta(t, lat, tg.ChipLatencyNs[a][b], 1e-6, "latency %d -> %d", a, b)
				}
			}
		})
	}
	assert.Nil(t, workloads.Target(preset(t, "trn2")).ChipHops, "one chip")
}

// Ring and rdh run along the topology: eight ranks on chips 0-7 of a 4x4
// torus go round a snake (every step one hop, where the group's own order
// has two steps of two hops); rdh's partners over sixteen chips are one
// hop apart at every distance; ranks of one chip keep their order.
func TestRingAlongTheTorus(t *testing.T) {
	cfg := preset(t, "trn2", "hardware.chips=16", "hardware.chip.lnc=1", "hardware.chip.cores=1")
	tg := workloads.Target(cfg)
	ring := sched.CollectiveOrder(tg, tile.AllReduce, tile.AlgoRing, seq(0, 8))
	assert.ElementsMatch(t, seq(0, 8), ring)
	for i := range ring {
		assert.Equal(t, 1, tg.ChipHops[ring[i]][ring[(i+1)%8]], "ring %v: %d -> %d", ring, ring[i], ring[(i+1)%8])
	}
	assert.Equal(t, 2, tg.ChipHops[3][4], "the group's own order has a step of two hops")
	rdh := sched.CollectiveOrder(tg, tile.ReduceScatter, tile.AlgoRDH, seq(0, 16))
	assert.ElementsMatch(t, seq(0, 16), rdh)
	for i := range rdh {
		for d := 1; d < 16; d *= 2 {
			assert.Equal(t, 1, tg.ChipHops[rdh[i]][rdh[i^d]], "rdh %v: %d <-> %d", rdh, rdh[i], rdh[i^d])
		}
	}
	bc := sched.CollectiveOrder(tg, tile.Broadcast, tile.AlgoRing, []int{5, 0, 1, 2, 3, 4, 6, 7})
	assert.Equal(t, 5, bc[0], "a broadcast's root stays first")
	one := workloads.Target(preset(t, "trn2"))
	for _, algo := range []string{tile.AlgoRing, tile.AlgoRDH} {
		assert.Equal(t, seq(0, 8), sched.CollectiveOrder(one, tile.AllReduce, algo, seq(0, 8)), "one chip: the group's order")
	}
	// The ring all-reduce of C1-RING crosses one hop a step: eight links
	// each way round carry its data, none of them two hops.
	src := fmt.Sprintf("kernel coll\nfor c in range(0, 8) cores:\n    tile x hbm bf16 [64, 512] input\n    tile y hbm bf16 [64, 512] output\n"+
		"    collective all_reduce y, x algo=ring op=%d\n", collOp)
	p, err := sched.Compile(mustParse(t, src), tg, sched.Options{DGEAuto: true})
	require.NoError(t, err)
	res, err := chip.Run(cfg, p.Program, chip.Options{})
	require.NoError(t, err)
	assert.Len(t, res.Links, 8)
}

// The kernel-wide option rdh on a group that is not a power of two runs
// ring, and the program's notes say so, once per collective; on a
// power-of-two group there is no note.
func TestRDHOptionOnOtherGroupsIsNoted(t *testing.T) {
	src := "kernel coll\nfor c in range(0, 6) cores:\n    tile x hbm fp32 [96, 40] input\n    tile y hbm fp32 [96, 40] output\n" +
		"    collective all_reduce y, x group_size=3 op=9\n    collective all_reduce x, y group=[0, 1, 2, 3] op=9\n"
	p, err := sched.Compile(mustParse(t, src), workloads.Target(preset(t, "trn2")), sched.Options{DGEAuto: true, CollectiveAlgorithm: tile.AlgoRDH})
	require.NoError(t, err)
	assert.Equal(t, []string{"coll.tile:5:5: collective all_reduce y, x group_size=3 op=9: the collective algorithm rdh needs a power-of-two group; this one has 3 ranks and runs ring"}, p.Notes)
	p, err = sched.Compile(mustParse(t, src), workloads.Target(preset(t, "trn2")), sched.Options{DGEAuto: true})
	require.NoError(t, err)
	assert.Empty(t, p.Notes, "chosen by size")
}

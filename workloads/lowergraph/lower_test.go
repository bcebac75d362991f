package lowergraph_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/isa/asm"
	"github.com/trnsim/trnsim/workloads"
	"github.com/trnsim/trnsim/workloads/graph"
	"github.com/trnsim/trnsim/workloads/kernels"
	"github.com/trnsim/trnsim/workloads/lowergraph"
	"github.com/trnsim/trnsim/workloads/nn"
	"github.com/trnsim/trnsim/workloads/sched"
	"github.com/trnsim/trnsim/workloads/tile"
)

// run lowers g, schedules it and simulates it with the race check on.
func run(t *testing.T, g *graph.Graph, preset string) (*chip.Result, *lowergraph.Result) {
	t.Helper()
	return lowerAndRun(t, g, preset, lowergraph.Options{})
}

// An MLP block with a bias, a residual and the last position's head
// lowers into one program whose matmuls do exactly the graph's FLOPs.
func TestMLPBlockLowers(t *testing.T) {
	for _, preset := range []string{"trn1", "inf2", "trn2", "trn3"} {
		for _, shape := range [][3]int64{{1, 300, 256}, {2, 1, 512}} {
			t.Run(preset, func(t *testing.T) {
				b := graph.NewBuilder()
				batch, seq, hid := shape[0], shape[1], shape[2]
				x := b.Input("x", []int64{batch, seq, hid}, isa.BF16)
				mlp := nn.NewMLP(b, nn.MLPConfig{Hidden: hid, Intermediate: 3 * hid, Gated: true, Act: nn.ActSiLU, GateName: "gate", UpName: "up", DownName: "down"}, isa.BF16, isa.BF16)
				h := mlp.Forward(b, x)
				y := b.Add(graph.AddOp, "residual", graph.Attrs{}, x, h)
				if seq > 1 {
					y = b.AddMulti(graph.Split, "last", graph.Attrs{Axis: 1, Shape: []int64{seq - 1, 1}}, y)[1]
				}
				head := nn.NewLinear(b, "head", hid, 1000, true, isa.BF16, isa.BF16)
				b.Output(head.Forward(b, y))
				g, err := b.Graph()
				require.NoError(t, err)
				res, low := run(t, g, preset)
				var linearFLOPs, biasFLOPs int64
				for _, o := range g.Ops {
					if o.Kind == graph.Linear {
						w := o.Inputs[1]
						rows := o.Inputs[0].Elements() / w.Shape[1]
						linearFLOPs += 2 * rows * w.Shape[0] * w.Shape[1]
						if len(o.Inputs) > 2 && o.Inputs[2] != nil {
							biasFLOPs += 2 * rows * w.Shape[0] // a bias added by a matmul with a row of ones
						}
					}
				}
				tensor := res.Chips[0].Cores[0].Engines[isa.EngineTensor].FLOPs
				assert.GreaterOrEqual(t, tensor, float64(linearFLOPs)-1, "the matmuls cover every Linear once")
				assert.LessOrEqual(t, tensor, float64(linearFLOPs+biasFLOPs)+1, "and once only (the biases' rows of ones aside)")
				assert.Len(t, low.Ops, len(g.Ops))
			})
		}
	}
}

// An op the lowering does not have yet is one error naming it.
func TestUnloweredOpIsNamed(t *testing.T) {
	b := graph.NewBuilder()
	x := b.Input("x", []int64{4, 8}, isa.BF16)
	b.Output(b.Add(graph.GELU, "act", graph.Attrs{}, x))
	b.Output(b.Add(graph.MatMul, "scores.bmm", graph.Attrs{}, b.Input("p", []int64{2, 4, 8}, isa.BF16), b.Input("q", []int64{2, 8, 16}, isa.FP32)))
	g, err := b.Graph()
	require.NoError(t, err)
	cfg, err := configs.LoadDefault(configs.LoadOptions{})
	require.NoError(t, err)
	_, err = lowergraph.Lower(g, workloads.Target(cfg), "t", lowergraph.Options{})
	assert.ErrorContains(t, err, "scores.bmm (matmul): operands in bf16 and fp32 are not lowered yet")
}

// A batched matmul lowers as the GEMM's batch and does its FLOPs once.
func TestBMMLowers(t *testing.T) {
	b := graph.NewBuilder()
	x := b.Input("x", []int64{3, 200, 64}, isa.BF16)
	y := b.Input("y", []int64{3, 64, 700}, isa.BF16)
	b.Output(b.Add(graph.MatMul, "bmm", graph.Attrs{}, x, y))
	g, err := b.Graph()
	require.NoError(t, err)
	res, _ := run(t, g, "trn2")
	assert.InDelta(t, float64(g.FLOPs()), res.Chips[0].Cores[0].Engines[isa.EngineTensor].FLOPs, 1)
}

// lowerAndRun lowers g on preset with o, schedules it and runs it, race
// check on.
func lowerAndRun(t *testing.T, g *graph.Graph, preset string, o lowergraph.Options) (*chip.Result, *lowergraph.Result) {
	t.Helper()
	cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: []string{"hardware.preset=" + preset}})
	require.NoError(t, err)
	tg := workloads.Target(cfg)
	res, err := lowergraph.Lower(g, tg, "test", o)
	require.NoError(t, err)
	p, err := sched.Compile(res.Kernel, tg, sched.Options{DGEAuto: true})
	require.NoError(t, err)
	out, err := chip.Run(cfg, p.Program, chip.Options{})
	require.NoError(t, err)
	return out, res
}

// A gated MLP with a residual (Llama's) fuses its SiLU, gating and
// residual add into the GEMMs: the same matmul FLOPs, fewer HBM bytes and
// less time than every op through HBM, on every preset.
func TestFusionSavesHBMTraffic(t *testing.T) {
	for _, preset := range []string{"trn1", "inf2", "trn2", "trn3"} {
		t.Run(preset, func(t *testing.T) {
			b := graph.NewBuilder()
			x := b.Input("x", []int64{1, 300, 512}, isa.BF16)
			mlp := nn.NewMLP(b, nn.MLPConfig{Hidden: 512, Intermediate: 1536, Gated: true, Act: nn.ActSiLU, GateName: "gate", UpName: "up", DownName: "down"}, isa.BF16, isa.BF16)
			b.Output(b.Add(graph.AddOp, "residual", graph.Attrs{}, x, mlp.Forward(b, x)))
			g, err := b.Graph()
			require.NoError(t, err)
			fused, fr := lowerAndRun(t, g, preset, lowergraph.Options{})
			plain, _ := lowerAndRun(t, g, preset, lowergraph.Options{NoFusion: true})
			assert.Contains(t, fr.Notes, "2 ops fused into the GEMMs' epilogues (activations, SwiGLU, residual adds, post-norms)")
			fc, pc := fused.Chips[0].Cores[0], plain.Chips[0].Cores[0]
			assert.InDelta(t, pc.Engines[isa.EngineTensor].FLOPs, fc.Engines[isa.EngineTensor].FLOPs, 1)
			fb, pb := fused.Chips[0].HBMReadBytes+fused.Chips[0].HBMWriteBytes, plain.Chips[0].HBMReadBytes+plain.Chips[0].HBMWriteBytes
			assert.Less(t, fb, pb)
			assert.Less(t, fused.SimTime, plain.SimTime)
			t.Logf("%s: fused %s, %d HBM bytes; unfused %s, %d", preset, fused.SimTime, fb, plain.SimTime, pb)
		})
	}
}

// A post-norm block (BERT's: Linear, residual add, LayerNorm) normalises
// each row in the GEMM's epilogue where a plan holds whole rows in one N
// block: the same matmul FLOPs, fewer HBM bytes and less time than every
// op through HBM, race-free on every preset; where no plan does (a row
// wider than the PSUM banks' groups), or the plan that does is estimated
// slower than the GEMM's own followed by the norm kernel, the norm runs
// by itself. (trn2 at 1,024 columns fuses by estimate, and by itself, its
// B all in the head, is slower fused than with the norm apart: the
// scheduler finds the K loop's waits once for the whole loop, so its
// first multiplies wait for all of B; docs/performance.md.)
func TestPostNormFusesIntoTheGEMM(t *testing.T) {
	block := func(hidden int64, rms bool) *graph.Graph {
		b := graph.NewBuilder()
		x := b.Input("x", []int64{1, 200, hidden}, isa.BF16)
		h := nn.NewLinear(b, "dense", hidden, hidden, false, isa.BF16, isa.BF16).Forward(b, x)
		h = b.Add(graph.AddOp, "residual", graph.Attrs{}, x, h)
		norm := nn.NewLayerNorm(b, "ln", hidden, true, 1e-12, isa.BF16)
		if rms {
			norm = nn.NewRMSNorm(b, "ln", hidden, 1e-6, isa.BF16)
		}
		b.Output(norm.Forward(b, h))
		g, err := b.Graph()
		require.NoError(t, err)
		return g
	}
	for _, tc := range []struct {
		preset string
		hidden int64
		rms    bool
		fuses  bool
	}{
		{"trn1", 768, false, true},
		{"trn2", 768, false, true},
		{"trn2", 1024, false, true},
		{"trn3", 768, true, true},
		{"inf2", 640, false, true},
		{"trn2", 8192, false, false},
	} {
		t.Run(fmt.Sprintf("%s/%d/rms=%v", tc.preset, tc.hidden, tc.rms), func(t *testing.T) {
			g := block(tc.hidden, tc.rms)
			fused, fr := lowerAndRun(t, g, tc.preset, lowergraph.Options{})
			plain, _ := lowerAndRun(t, g, tc.preset, lowergraph.Options{NoFusion: true})
			fc, pc := fused.Chips[0].Cores[0], plain.Chips[0].Cores[0]
			assert.InDelta(t, pc.Engines[isa.EngineTensor].FLOPs, fc.Engines[isa.EngineTensor].FLOPs, 1)
			fb, pb := fused.Chips[0].HBMReadBytes+fused.Chips[0].HBMWriteBytes, plain.Chips[0].HBMReadBytes+plain.Chips[0].HBMWriteBytes
			t.Logf("fused %s, %d HBM bytes; unfused %s, %d; notes %v", fused.SimTime, fb, plain.SimTime, pb, fr.Notes)
			if !tc.fuses {
				assert.Contains(t, fr.Notes, "1 ops fused into the GEMMs' epilogues (activations, SwiGLU, residual adds, post-norms)", "the residual, not the norm")
				return
			}
			assert.Contains(t, fr.Notes, "2 ops fused into the GEMMs' epilogues (activations, SwiGLU, residual adds, post-norms)")
			assert.Less(t, fb, pb)
			assert.Less(t, fused.SimTime, plain.SimTime)
		})
	}
}

// A fused norm's SBUF (its weight and bias in every partition, its
// statistics) is counted when the GEMM's blocks are sized: blocks that
// fill SBUF still place (a review found 4096 tokens of a 4096 -> 1024
// Linear with a post-norm over SBUF by 3 KiB on trn1).
func TestPostNormFitsSBUF(t *testing.T) {
	for _, tc := range []struct {
		preset       string
		rows, in, hd int64
	}{
		{"trn1", 4096, 4096, 1024},
		{"inf2", 8192, 4096, 1024},
		{"trn2", 4096, 4096, 768},
	} {
		b := graph.NewBuilder()
		x := b.Input("x", []int64{1, tc.rows, tc.in}, isa.BF16)
		r := b.Input("r", []int64{1, tc.rows, tc.hd}, isa.BF16)
		h := nn.NewLinear(b, "dense", tc.in, tc.hd, false, isa.BF16, isa.BF16).Forward(b, x)
		h = b.Add(graph.AddOp, "residual", graph.Attrs{}, r, h)
		b.Output(nn.NewLayerNorm(b, "ln", tc.hd, true, 1e-12, isa.BF16).Forward(b, h))
		g, err := b.Graph()
		require.NoError(t, err)
		cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: []string{"hardware.preset=" + tc.preset}})
		require.NoError(t, err)
		tg := workloads.Target(cfg)
		res, err := lowergraph.Lower(g, tg, "block", lowergraph.Options{})
		require.NoError(t, err)
		_, err = sched.Compile(res.Kernel, tg, sched.Options{DGEAuto: true})
		assert.NoError(t, err, "%s %dx%d -> %d", tc.preset, tc.rows, tc.in, tc.hd)
	}
}

// lowerAsm lowers g for preset and returns the scheduled program as
// assembly, one instruction a line.
func lowerAsm(t *testing.T, g *graph.Graph, preset string) []string {
	t.Helper()
	cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: []string{"hardware.preset=" + preset}})
	require.NoError(t, err)
	tg := workloads.Target(cfg)
	res, err := lowergraph.Lower(g, tg, "test", lowergraph.Options{})
	require.NoError(t, err)
	p, err := sched.Compile(res.Kernel, tg, sched.Options{DGEAuto: true})
	require.NoError(t, err)
	s, err := asm.String(p.Program)
	require.NoError(t, err)
	// (A GEMM's on-chip A or kept result left unbound would be a tile of
	// its own that nothing writes, or that nobody reads: handOff binds
	// both to the one tile they hand over.)
	require.NotContains(t, s, "_"+kernels.AOnChipTileName+"[")
	require.NotContains(t, s, "_"+kernels.ResultTileName+"[")
	return strings.Split(s, "\n")
}

// A residual add after a Linear of a few tokens (K accumulated in PSUM)
// is combined with each result tile as VectorE evacuates it, one
// tensor_tensor of the PSUM tile and the residual (S9: the copy's cost),
// with no pass over the finished block; a post-norm after it normalises
// in two lanes, VectorE's columns and ScalarE's (then VectorE's multiplies
// on trn1, where GpSimd shares its SBUF port; GpSimd's elsewhere).
// Race-free on every preset, ragged rows included.
func TestResidualFoldsIntoTheEvacuation(t *testing.T) {
	for _, tc := range []struct {
		preset     string
		tokens, hd int64
		norm       bool
		gpsimdMuls bool
	}{
		{"trn1", 128, 1024, false, false},
		{"trn1", 200, 768, true, false},
		{"inf2", 128, 768, true, false},
		{"trn2", 128, 1024, true, true},
		{"trn3", 100, 768, true, true},
	} {
		t.Run(fmt.Sprintf("%s/%dx%d/norm=%v", tc.preset, tc.tokens, tc.hd, tc.norm), func(t *testing.T) {
			b := graph.NewBuilder()
			x := b.Input("x", []int64{1, tc.tokens, tc.hd}, isa.BF16)
			h := nn.NewLinear(b, "dense", tc.hd, tc.hd, true, isa.BF16, isa.BF16).Forward(b, x)
			h = b.Add(graph.AddOp, "residual", graph.Attrs{}, x, h)
			if tc.norm {
				h = nn.NewLayerNorm(b, "ln", tc.hd, true, 1e-12, isa.BF16).Forward(b, h)
			}
			b.Output(h)
			g, err := b.Graph()
			require.NoError(t, err)
			run(t, g, tc.preset) // (race check on)
			var folds, rLoads, sbufAdds, scalarNorms, gpsimdMuls int
			for _, line := range lowerAsm(t, g, tc.preset) {
				switch {
				case strings.Contains(line, "dma_copy") && strings.Contains(line, "_r_0[") && (strings.Contains(line, ", x[") || strings.Contains(line, ", x{")):
					rLoads++
				case strings.HasPrefix(line, "vector tensor_tensor") && strings.Contains(line, "_ps_") && strings.Contains(line, "_r_") && strings.Contains(line, "alu=add"):
					folds++
				case strings.HasPrefix(line, "vector tensor_tensor") && strings.Contains(line, "_r_"):
					sbufAdds++
				case strings.HasPrefix(line, "scalar tensor_scalar") && strings.Contains(line, "nrstd"):
					scalarNorms++
				case strings.HasPrefix(line, "gpsimd tensor_tensor") && strings.Contains(line, "norm_"):
					gpsimdMuls++
				}
			}
			assert.Positive(t, folds, "residual adds as the tiles leave PSUM")
			assert.Equal(t, (tc.tokens+127)/128, int64(rLoads), "the residual's rows loaded, a transfer per M tile")
			assert.Zero(t, sbufAdds, "no residual pass over the finished block")
			if tc.norm {
				assert.Positive(t, scalarNorms, "ScalarE normalises a lane")
				assert.Equal(t, tc.gpsimdMuls, gpsimdMuls > 0, "GpSimd's multiplies where it has an SBUF port of its own")
			}
		})
	}
}

// A post-norm block's output read by the two Linears after it (BERT's
// queries and keys) stays in SBUF: its GEMM evacuates into a tile the
// next GEMMs transpose A out of, with no load of it from HBM, for less
// time and fewer HBM bytes than storing it for them to load, the same
// FLOPs, race-free on every preset, ragged rows included; where the plans
// cannot (K not in PSUM, A not resident), the program is the one without
// the hand-off.
func TestActivationsStayInSBUFBetweenLinears(t *testing.T) {
	for _, tc := range []struct {
		preset     string
		tokens, hd int64
		hands      bool
	}{
		{"trn1", 128, 768, true},
		{"trn1", 200, 768, false},
		{"inf2", 100, 768, true},
		{"trn2", 128, 1024, true},
		{"trn2", 200, 512, true},
		{"trn2", 256, 768, false},
		{"trn3", 200, 768, false},
		{"trn3", 64, 384, false},
	} {
		t.Run(fmt.Sprintf("%s/%dx%d", tc.preset, tc.tokens, tc.hd), func(t *testing.T) {
			b := graph.NewBuilder()
			x := b.Input("x", []int64{1, tc.tokens, tc.hd}, isa.BF16)
			h := nn.NewLinear(b, "dense", tc.hd, tc.hd, true, isa.BF16, isa.BF16).Forward(b, x)
			h = b.Add(graph.AddOp, "residual", graph.Attrs{}, x, h)
			h = nn.NewLayerNorm(b, "ln", tc.hd, true, 1e-12, isa.BF16).Forward(b, h)
			b.Output(nn.NewLinear(b, "query", tc.hd, tc.hd, true, isa.BF16, isa.BF16).Forward(b, h))
			b.Output(nn.NewLinear(b, "key", tc.hd, tc.hd, true, isa.BF16, isa.BF16).Forward(b, h))
			g, err := b.Graph()
			require.NoError(t, err)
			kept, _ := lowerAndRun(t, g, tc.preset, lowergraph.Options{})
			stored, _ := lowerAndRun(t, g, tc.preset, lowergraph.Options{NoSBUFHandOff: true})
			var reads, loads int
			for _, line := range lowerAsm(t, g, tc.preset) {
				switch {
				case strings.HasPrefix(line, "tensor transpose") && strings.Contains(line, "ln_sbuf["):
					reads++
				case strings.Contains(line, "dma_copy") && (strings.Contains(line, ", ln[") || strings.Contains(line, ", ln{")):
					loads++
				}
			}
			// (Without a hand-off the norm runs by itself, or the next
			// plans transpose A by DMA or keep no A resident.)
			if assertHandOff(t, kept, stored, tc.hands, reads) {
				assert.Zero(t, loads, "and load none of it from HBM")
			}
		})
	}
}

// A Linear whose bias is too wide to fuse (it is added by a kernel of its
// own after the GEMM) still reads its input where the Linear before left
// it, bound to that tile (a review found the on-chip A of that branch left
// unbound: a tile nobody wrote, read without a wait).
func TestHandOffToAnUnfusedBias(t *testing.T) {
	b := graph.NewBuilder()
	x := b.Input("x", []int64{1, 128, 768}, isa.BF16)
	h := nn.NewLinear(b, "first", 768, 768, false, isa.BF16, isa.BF16).Forward(b, x)
	b.Output(nn.NewLinear(b, "second", 768, 20000, true, isa.BF16, isa.BF16).Forward(b, h))
	g, err := b.Graph()
	require.NoError(t, err)
	run(t, g, "trn1")
	reads := 0
	for _, line := range lowerAsm(t, g, "trn1") {
		if strings.HasPrefix(line, "tensor transpose") && strings.Contains(line, "first_sbuf[") {
			reads++
		}
	}
	assert.Positive(t, reads)
}

// Nothing is kept for readers that would not read it in place: FP8
// weights read a cast copy of their input (trn2), and with ranks (tensor
// parallelism) no result is kept (docs/models.md, "SBUF hand-off").
func TestHandOffOnlyWhereItIsRead(t *testing.T) {
	block := func(wdt isa.DType) *graph.Graph {
		b := graph.NewBuilder()
		x := b.Input("x", []int64{1, 128, 768}, isa.BF16)
		h := nn.NewLinear(b, "first", 768, 768, false, isa.BF16, isa.BF16).Forward(b, x)
		b.Output(nn.NewLinear(b, "second", 768, 768, false, wdt, isa.BF16).Forward(b, h))
		g, err := b.Graph()
		require.NoError(t, err)
		return g
	}
	cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: []string{"hardware.preset=trn2"}})
	require.NoError(t, err)
	tg := workloads.Target(cfg)
	for _, tc := range []struct {
		name string
		wdt  isa.DType
		o    lowergraph.Options
		kept bool
	}{
		{"bf16", isa.BF16, lowergraph.Options{}, true},
		{"fp8 reader", isa.FP8E4, lowergraph.Options{}, false},
		{"two ranks", isa.BF16, lowergraph.Options{Ranks: 2}, false},
	} {
		res, err := lowergraph.Lower(block(tc.wdt), tg, "test", tc.o)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.kept, strings.Contains(tile.String(res.Kernel), "first_sbuf"), tc.name)
	}
}

// A result of several N blocks (an MLP's up projection, its GELU fused)
// is kept whole for the down projection after it, where the up
// projection's plan with SBUF left for it is estimated no slower: less
// time and fewer HBM bytes than storing it for the next to load, the same
// FLOPs, race-free; a result wider than an eighth of SBUF per partition
// (keptShare), or of more than two M tiles (keptMTiles), is not kept.
func TestHandOffAcrossNBlocks(t *testing.T) {
	for _, tc := range []struct {
		preset            string
		tokens, hd, inner int64
		hands             bool
	}{
		{"trn1", 128, 768, 3072, true},
		{"trn2", 128, 1024, 4096, true},
		{"inf2", 100, 768, 3072, true},
		{"trn1", 128, 768, 13312, false}, // (26 KiB a partition: keptShare)
		{"trn2", 200, 768, 3072, false},  // (two M tiles: keptMTiles)
	} {
		t.Run(fmt.Sprintf("%s/%dx%dx%d", tc.preset, tc.tokens, tc.hd, tc.inner), func(t *testing.T) {
			b := graph.NewBuilder()
			x := b.Input("x", []int64{1, tc.tokens, tc.hd}, isa.BF16)
			h := nn.NewLinear(b, "up", tc.hd, tc.inner, true, isa.BF16, isa.BF16).Forward(b, x)
			h = b.Add(graph.GELU, "act", graph.Attrs{}, h)
			b.Output(nn.NewLinear(b, "down", tc.inner, tc.hd, true, isa.BF16, isa.BF16).Forward(b, h))
			g, err := b.Graph()
			require.NoError(t, err)
			kept, _ := lowerAndRun(t, g, tc.preset, lowergraph.Options{})
			stored, _ := lowerAndRun(t, g, tc.preset, lowergraph.Options{NoSBUFHandOff: true})
			reads := 0
			written := make([]bool, tc.inner) // (columns of the kept tile its writer writes)
			for _, line := range lowerAsm(t, g, tc.preset) {
				if strings.HasPrefix(line, "tensor transpose") && strings.Contains(line, "act_sbuf[") {
					reads++
				}
				f := strings.Fields(line)
				if len(f) > 2 && f[0] != "tensor" && strings.HasPrefix(f[2], "act_sbuf[") {
					// (the output, the instruction's first operand)
					out := strings.SplitN(strings.SplitN(line, "act_sbuf[", 2)[1], "]", 2)[0]
					dims := strings.Split(out, ", ")
					var lo, hi int
					_, err := fmt.Sscanf(dims[len(dims)-1], "%d:%d", &lo, &hi)
					require.NoError(t, err, line)
					for c := lo; c < hi; c++ {
						written[c] = true
					}
				}
			}
			if assertHandOff(t, kept, stored, tc.hands, reads) {
				assert.NotContains(t, written, false, "every N block writes its own columns of the kept result")
			}
		})
	}
}

// assertHandOff compares a run with the SBUF hand-off (kept) and one
// without (stored): where hands, the readers read the kept tile (reads
// transposes of it) for the same FLOPs, fewer HBM bytes and less time;
// elsewhere nothing is read from it and the times agree. It reports hands.
func assertHandOff(t *testing.T, kept, stored *chip.Result, hands bool, reads int) bool {
	t.Helper()
	t.Logf("kept %s, %d HBM bytes read; stored %s, %d", kept.SimTime, kept.Chips[0].HBMReadBytes, stored.SimTime, stored.Chips[0].HBMReadBytes)
	if !hands {
		assert.Zero(t, reads)
		assert.Equal(t, stored.SimTime, kept.SimTime)
		return false
	}
	assert.Positive(t, reads, "the readers transpose A out of the kept tile")
	assert.InDelta(t, stored.Chips[0].Cores[0].Engines[isa.EngineTensor].FLOPs, kept.Chips[0].Cores[0].Engines[isa.EngineTensor].FLOPs, 1)
	assert.Less(t, kept.Chips[0].HBMReadBytes, stored.Chips[0].HBMReadBytes)
	assert.Less(t, kept.SimTime, stored.SimTime)
	return true
}

package workloads

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/kernels"
	"github.com/trnsim/trnsim/workloads/sched"
	"github.com/trnsim/trnsim/workloads/tile"
)

// The small transformer-inference kernels (embedding, RoPE, KV append)
// run on every preset, in BF16 and FP32, at awkward sizes, with the race
// check on. Each must take at least the time its bytes need at the core's
// DMA bandwidth.

var smallPresets = []string{"trn1", "inf2", "trn2", "trn3"}

var smallDTypes = []isa.DType{isa.BF16, isa.FP32}

// smallRun is one simulated kernel's figures.
type smallRun struct {
	res *chip.Result
	// floorNs is the least time the bytes the DMA engines moved need at
	// the core's DMA bandwidth (every engine streaming).
	floorNs  float64
	dmaBytes int64
}

// runSmall schedules and simulates k on preset.
func runSmall(t *testing.T, preset string, plan func(tg *sched.Target) (*tile.Kernel, error)) smallRun {
	t.Helper()
	cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: []string{"hardware.preset=" + preset}})
	require.NoError(t, err)
	tg := Target(cfg)
	k, err := plan(tg)
	require.NoError(t, err)
	p, err := sched.Compile(k, tg, sched.Options{DGEAuto: true})
	require.NoError(t, err)
	res, err := chip.Run(cfg, p.Program, chip.Options{})
	require.NoError(t, err, "the simulation (race check on)")
	core := res.Chips[0].Cores[0]
	dmaCfg := cfg.Hardware.Core.DMA
	gbps := float64(dmaCfg.Engines) * dmaCfg.EngineBandwidthGBps // bytes per ns
	r := smallRun{res: res, dmaBytes: core.DMA.Bytes, floorNs: float64(core.DMA.Bytes) / gbps}
	assert.GreaterOrEqual(t, res.SimTime.Nanoseconds(), r.floorNs, "no faster than the core's DMA bandwidth allows")
	return r
}

func TestEmbeddingGathersOnlyItsRows(t *testing.T) {
	shapes := []struct{ tokens, vocab, dim int64 }{
		{1, 32000, 768},
		{300, 32000, 4096},
		{2048, 50257, 2050},
		{300, 128256, 768},
	}
	for _, preset := range smallPresets {
		for _, dt := range smallDTypes {
			for _, s := range shapes {
				name := fmt.Sprintf("%s/%s/tokens=%d,vocab=%d,dim=%d", preset, dt, s.tokens, s.vocab, s.dim)
				t.Run(name, func(t *testing.T) {
					e := kernels.Embedding{Tokens: s.tokens, Vocab: s.vocab, Dim: s.dim, DType: dt}
					var plan *kernels.EmbeddingPlan
					r := runSmall(t, preset, func(tg *sched.Target) (*tile.Kernel, error) {
						var err error
						if plan, err = kernels.PlanEmbedding(e, kernels.EmbeddingOptions{OpID: 3}, tg); err != nil {
							return nil, err
						}
						return plan.Kernel()
					})
					eb := int64(dt.Bytes())
					rowBytes := s.tokens * s.dim * eb
					chipRes := r.res.Chips[0]
					// Read: the ids and the rows gathered, never the table.
					assert.Equal(t, rowBytes+4*s.tokens, chipRes.HBMReadBytes)
					assert.Less(t, chipRes.HBMReadBytes, s.vocab*s.dim*eb)
					assert.Equal(t, rowBytes, chipRes.HBMWriteBytes)
					t.Logf("%s: free=%d dge=%s: %.2f us (DMA floor %.2f us), read %d B, wrote %d B, %d instructions",
						name, plan.Free, plan.DGE, r.res.SimTime.Nanoseconds()/1e3, r.floorNs/1e3,
						chipRes.HBMReadBytes, chipRes.HBMWriteBytes, r.res.Instructions)
				})
			}
		}
	}
}

func TestRoPERotatesEveryHead(t *testing.T) {
	shapes := []struct{ rows, heads, headDim int64 }{
		{1, 32, 128},
		{300, 32, 128},
		{2048, 32, 128},
		{1, 12, 64},
		{300, 12, 64},
		{2048, 12, 64},
	}
	for _, preset := range smallPresets {
		for _, dt := range smallDTypes {
			for _, s := range shapes {
				name := fmt.Sprintf("%s/%s/rows=%d,heads=%dx%d", preset, dt, s.rows, s.heads, s.headDim)
				t.Run(name, func(t *testing.T) {
					rp := kernels.RoPE{Rows: s.rows, Heads: s.heads, HeadDim: s.headDim, DType: dt}
					var plan *kernels.RoPEPlan
					r := runSmall(t, preset, func(tg *sched.Target) (*tile.Kernel, error) {
						var err error
						if plan, err = kernels.PlanRoPE(rp, kernels.RoPEOptions{OpID: 5}, tg); err != nil {
							return nil, err
						}
						return plan.Kernel()
					})
					eb := int64(dt.Bytes())
					xBytes := s.rows * s.heads * s.headDim * eb
					tabBytes := 2 * s.rows * s.headDim * eb
					chipRes := r.res.Chips[0]
					// X and the tables read once, OUT written once.
					assert.Equal(t, xBytes+tabBytes, chipRes.HBMReadBytes)
					assert.Equal(t, xBytes, chipRes.HBMWriteBytes)
					// Three tensor_tensor multiplies for every Rep heads of a
					// group and one add a group, every row tile.
					rowTiles := (s.rows + 127) / 128
					var blocks, groups int64
					for h0 := int64(0); h0 < s.heads; h0 += plan.Group {
						blocks += (min(plan.Group, s.heads-h0) + plan.Rep - 1) / plan.Rep
						groups++
					}
					vec := chipRes.Cores[0].Engines[isa.EngineVector]
					assert.Equal(t, rowTiles*(3*blocks+groups), vec.OpCounts[isa.OpTensorTensor])
					t.Logf("%s: group=%d rep=%d: %.2f us (DMA floor %.2f us), VectorE busy %.2f us, read %d B, wrote %d B, %d instructions",
						name, plan.Group, plan.Rep, r.res.SimTime.Nanoseconds()/1e3, r.floorNs/1e3, vec.Busy.Nanoseconds()/1e3,
						chipRes.HBMReadBytes, chipRes.HBMWriteBytes, r.res.Instructions)
				})
			}
		}
	}
}

func TestKVAppendCopiesOnlyTheNewRows(t *testing.T) {
	shapes := []struct{ batch, seq, past, heads, headDim int64 }{
		{1, 1, 0, 32, 128},
		{1, 1, 2047, 32, 128},
		{4, 1, 2047, 32, 128},
		{1, 300, 0, 32, 128},
		{4, 300, 2047, 32, 128},
		{4, 1, 0, 12, 64},
		{1, 300, 2047, 12, 64},
		{4, 300, 2047, 12, 64},
	}
	for _, preset := range smallPresets {
		for _, dt := range smallDTypes {
			for i, s := range shapes {
				// Token-major and head by head (the models' caches), on
				// alternate shapes.
				headMajor := i%2 == 1
				name := fmt.Sprintf("%s/%s/batch=%d,seq=%d,past=%d,heads=%dx%d,head_major=%v", preset, dt, s.batch, s.seq, s.past, s.heads, s.headDim, headMajor)
				t.Run(name, func(t *testing.T) {
					a := kernels.KVAppend{Batch: s.batch, Seq: s.seq, Past: s.past, Heads: s.heads, HeadDim: s.headDim, DType: dt, HeadMajor: headMajor}
					var plan *kernels.KVAppendPlan
					r := runSmall(t, preset, func(tg *sched.Target) (*tile.Kernel, error) {
						var err error
						if plan, err = kernels.PlanKVAppend(a, kernels.KVAppendOptions{OpID: 7}, tg); err != nil {
							return nil, err
						}
						return plan.Kernel()
					})
					newBytes := s.batch * s.seq * s.heads * s.headDim * int64(dt.Bytes())
					chipRes := r.res.Chips[0]
					// NEW read once and its rows of CACHE written once, nothing
					// else. (The DMA model charges an HBM-to-HBM transfer to
					// its source's HBM only, so the writes are not counted
					// in HBMWriteBytes today; the bytes the engines wrote are.)
					assert.Equal(t, newBytes, chipRes.HBMReadBytes)
					assert.LessOrEqual(t, chipRes.HBMWriteBytes, newBytes)
					assert.Equal(t, newBytes, r.dmaBytes)
					var compute int64
					for _, e := range []isa.Engine{isa.EngineTensor, isa.EngineVector} {
						compute += chipRes.Cores[0].Engines[e].Instructions
					}
					assert.Zero(t, compute, "DMA only")
					t.Logf("%s: block=%d split=%d: %.2f us (DMA floor %.2f us), moved %d B, %d transfers",
						name, plan.Block, plan.Split, r.res.SimTime.Nanoseconds()/1e3, r.floorNs/1e3, r.dmaBytes, chipRes.Cores[0].DMA.Transfers)
				})
			}
		}
	}
}

func TestEmbeddingRoPEKVAppendReportWhatDoesNotFit(t *testing.T) {
	cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: []string{"hardware.preset=trn2"}})
	require.NoError(t, err)
	tg := Target(cfg)
	var fit *sched.FitError
	// Rows of a 64 KiB head: cos, sin and X per buffer exceed SBUF.
	_, err = kernels.PlanRoPE(kernels.RoPE{Rows: 128, Heads: 2, HeadDim: 16384, DType: isa.FP32}, kernels.RoPEOptions{}, tg)
	require.ErrorAs(t, err, &fit)
	assert.Equal(t, isa.MemSBUF, fit.Mem)
	// So many buffers that not even 64 columns of a row fit each.
	_, err = kernels.PlanEmbedding(kernels.Embedding{Tokens: 300, Vocab: 1000, Dim: 4096, DType: isa.BF16}, kernels.EmbeddingOptions{Buffers: 4096}, tg)
	require.ErrorAs(t, err, &fit)
	assert.Equal(t, isa.MemSBUF, fit.Mem)
	// A wide embedding chunks its columns instead.
	p, err := kernels.PlanEmbedding(kernels.Embedding{Tokens: 300, Vocab: 1000, Dim: 1 << 20, DType: isa.FP32}, kernels.EmbeddingOptions{}, tg)
	require.NoError(t, err)
	assert.Less(t, p.Free, int64(1<<20))
	// A cache bigger than HBM.
	_, err = kernels.PlanKVAppend(kernels.KVAppend{Batch: 1 << 20, Seq: 1, Past: 1 << 20, Heads: 32, HeadDim: 128, DType: isa.BF16}, kernels.KVAppendOptions{}, tg)
	require.ErrorAs(t, err, &fit)
	assert.Equal(t, isa.MemHBM, fit.Mem)
	// An odd head dimension has no halves to rotate.
	_, err = kernels.PlanRoPE(kernels.RoPE{Rows: 1, Heads: 1, HeadDim: 63, DType: isa.BF16}, kernels.RoPEOptions{}, tg)
	var shape *kernels.ShapeError
	require.ErrorAs(t, err, &shape)
}

// The KV append and attention agree on where a head-major cache keeps
// each row: composed as a decode step composes them (batch 2, GQA), the
// append writes exactly the new rows (b*H+h)*T+Past, and attention's K
// and V transfers each read rows of one (sequence, head) block, all of
// them between them, the new row included.
func TestHeadMajorCacheRowsAgree(t *testing.T) {
	cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: []string{"hardware.preset=trn2"}})
	require.NoError(t, err)
	tg := Target(cfg)
	const batch, qh, kvh, d, past = 2, 4, 2, 64, 300
	tk := int64(past + 1)
	k := tile.New("step")
	newK := k.Tensor("new_k", isa.BF16, tile.Input, batch, kvh*d)
	newV := k.Tensor("new_v", isa.BF16, tile.Input, batch, kvh*d)
	q := k.Tensor("q", isa.BF16, tile.Input, batch, qh*d)
	o := k.Tensor("o", isa.BF16, tile.Output, batch, qh*d)
	kc := k.Tensor("k_cache", isa.BF16, tile.Output, batch*kvh*tk, d)
	vc := k.Tensor("v_cache", isa.BF16, tile.Output, batch*kvh*tk, d)
	for i, nw := range []struct {
		src, cache *tile.Tile
	}{{newK, kc}, {newV, vc}} {
		ap, err := kernels.PlanKVAppend(kernels.KVAppend{Batch: batch, Seq: 1, Past: past, Heads: kvh, HeadDim: d, DType: isa.BF16, HeadMajor: true}, kernels.KVAppendOptions{OpID: 1}, tg)
		require.NoError(t, err)
		ak, err := ap.Kernel()
		require.NoError(t, err)
		require.NoError(t, k.Root().Inline(ak, fmt.Sprintf("a%d_", i), map[string]*tile.Tile{"NEW": nw.src, "CACHE": nw.cache}))
	}
	at, err := kernels.PlanAttention(attnDecode(batch, 1, past, qh, kvh, d), kernels.AttentionOptions{OpID: 2}, tg)
	require.NoError(t, err)
	atk, err := at.Kernel()
	require.NoError(t, err)
	require.NoError(t, k.Root().Inline(atk, "s_", map[string]*tile.Tile{"Q": q, "K": kc, "V": vc, "O": o}))
	require.NoError(t, k.Finish())
	p, err := sched.Compile(k, tg, sched.Options{DGEAuto: true})
	require.NoError(t, err)

	rowBytes := int64(d * isa.BF16.Bytes())
	bufOf := map[string]int32{}
	for i, b := range p.Program.Buffers {
		bufOf[b.Name] = int32(i)
	}
	written := map[string]map[int64]bool{"k_cache": {}, "v_cache": {}}
	read := map[string]map[int64]bool{"k_cache": {}, "v_cache": {}}
	for _, st := range p.Program.Open() {
		for {
			in, err := st.Next()
			require.NoError(t, err)
			if in == nil {
				break
			}
			in.Operands(func(op *isa.Operand, role isa.OperandRole) {
				for name, buf := range bufOf {
					if op.Buffer != buf || (name != "k_cache" && name != "v_cache") {
						continue
					}
					base := p.Program.Buffers[buf].Offset
					lo, hi := op.AP.ByteSpan()
					r0, r1 := (lo+in.HBMOffset-base)/rowBytes, (hi+in.HBMOffset-base-1)/rowBytes
					if role == isa.RoleWrite {
						require.Equal(t, int32(1), in.OpID, "only the append writes the cache")
						for r := r0; r <= r1; r++ {
							written[name][r] = true
						}
						continue
					}
					require.Equal(t, r0/tk, r1/tk, "a transfer of %s reads rows %d..%d, across two (sequence, head) blocks of %d", name, r0, r1, tk)
					for r := r0; r <= r1; r++ {
						read[name][r] = true
					}
				}
			})
		}
	}
	for _, name := range []string{"k_cache", "v_cache"} {
		want := map[int64]bool{}
		for b := int64(0); b < batch; b++ {
			for h := int64(0); h < kvh; h++ {
				want[(b*kvh+h)*tk+past] = true
			}
		}
		assert.Equal(t, want, written[name], "%s: the append writes the new row of each sequence and head", name)
		assert.Len(t, read[name], int(batch*kvh*tk), "%s: attention reads every row", name)
	}
}

// A model's KV cache is stored head by head: Llama-3.2-1B's (8 KV heads of
// 64) at batch 2 after 100 positions is [2*8*101, 64] per layer, K and V.
func TestModelsStoreTheKVCacheHeadMajor(t *testing.T) {
	cfg, err := configs.LoadBytes([]byte("hardware: {preset: trn2}\nworkload:\n  kind: model\n  model: {name: llama-3.2-1b, mode: decode, batch: 2, context: 100, tokens: 1, layers: 1}\n"), "m.yaml", configs.LoadOptions{})
	require.NoError(t, err)
	prog, _, err := Lower(cfg)
	require.NoError(t, err)
	n := 0
	for _, b := range prog.Buffers {
		if strings.Contains(b.Name, "_cache") {
			assert.Equal(t, []int64{2 * 8 * 101, 64}, b.Shape, b.Name)
			n++
		}
	}
	assert.Equal(t, 2, n, "a K and a V cache")
}

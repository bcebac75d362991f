package workloads

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
)

func modelConfig(t *testing.T, preset, model, pass string, layers int) *configs.RunConfig {
	t.Helper()
	text := fmt.Sprintf("hardware: {preset: %s}\nworkload:\n  kind: model\n  model: {name: %s, %s, layers: %d}\n", preset, model, pass, layers)
	cfg, err := configs.LoadBytes([]byte(text), "model.yaml", configs.LoadOptions{})
	require.NoError(t, err)
	return cfg
}

// One layer of every lowered family, prefill at a ragged length and
// decode at batch 2 and at a long context at batch 8, on every preset, with the race check on: the program
// runs, its matmuls do the graph's Linear FLOPs, and the time is at least
// both physical bounds (the matmuls at peak, the least HBM bytes at the
// core's DMA bandwidth).
func TestModelsLowerAndRun(t *testing.T) {
	models := []string{"llama-3.2-1b", "mistral-7b", "qwen2-7b", "gpt2", "bert-base", "mixtral-8x7b"}
	// (The long context at batch 8: a head group's K and V no longer
	// stay in SBUF whole, or only just, and stream through the key loop;
	// GPT-2 has 1,024 positions.)
	passes := []string{"mode: prefill, seq: 130", "mode: decode, context: 257, batch: 2", "mode: decode, context: 8191, batch: 8"}
	for _, preset := range []string{"trn1", "inf2", "trn2", "trn3"} {
		for _, model := range models {
			for _, pass := range passes {
				if model == "bert-base" && pass != passes[0] || model == "gpt2" && pass == passes[2] {
					continue // an encoder has no decode; GPT-2 no 8,192 positions
				}
				t.Run(preset+"/"+model+"/"+pass, func(t *testing.T) {
					cfg := modelConfig(t, preset, model, pass, 1)
					prog, info, err := Lower(cfg)
					require.NoError(t, err)
					res, err := chip.Run(cfg, prog, chip.Options{})
					require.NoError(t, err)
					mi := info.Model
					require.NotNil(t, mi)
					core := res.Chips[0].Cores[0]
					assert.GreaterOrEqual(t, core.Engines[isa.EngineTensor].FLOPs, float64(mi.MatmulFLOPs)*(1-1e-9), "the matmuls cover every Linear")
					h := &cfg.Hardware
					rate, _ := h.MatmulRate(isa.BF16, 0)
					computeBound := float64(mi.MatmulFLOPs) / (h.PeakBaseFLOPSPerCore() * rate)
					dmaBound := float64(info.MinHBMBytes) / (float64(h.Core.DMA.Engines) * h.Core.DMA.EngineBandwidthGBps * 1e9)
					sim := res.SimTime.Seconds()
					assert.GreaterOrEqual(t, sim, computeBound)
					assert.GreaterOrEqual(t, sim, dmaBound)
					t.Logf("%s: %.1f us, %.2fx the compute bound, %.2fx the DMA bound", info.Name, sim*1e6, sim/computeBound, sim/dmaBound)
				})
			}
		}
	}
}

// A model whose weights do not fit one core is an error saying by how
// much; with layers it runs, warning about the whole model.
func TestModelFitsOneCore(t *testing.T) {
	_, _, err := Lower(modelConfig(t, "trn2", "llama-3-8b", "mode: decode, context: 128", 0))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the model does not fit one NeuronCore's HBM")
	assert.Contains(t, err.Error(), "GiB over")
	_, info, err := Lower(modelConfig(t, "trn2", "llama-3-8b", "mode: decode, context: 128", 1))
	require.NoError(t, err)
	assert.Contains(t, info.Notes, "warning: the whole model does not fit one NeuronCore's HBM (15.0 GiB against 12.0 GiB)")
}

// Errors name the field: a zoo name that is not there, more positions
// (a prompt, or a decode's context and tokens) or layers than the model
// has.
func TestModelErrors(t *testing.T) {
	for _, tc := range []struct{ model, pass, want string }{
		{"llama-9", "mode: prefill, seq: 8", `workload.model.name: unknown model "llama-9"`},
		{"gpt2", "mode: prefill, seq: 2000", "2000 positions (0 past + 2000 new) are more than max_position_embeddings 1024"},
		// A decode's last step, not its mean one, must fit the positions.
		{"gpt2", "mode: decode, context: 1000, tokens: 100", "workload.model.tokens: context 1000 + 100 tokens = 1100 positions, more than gpt2's max_position_embeddings 1024"},
		{"gpt2", "mode: decode, context: 1024", "workload.model.context: context 1024 + 1 token = 1025 positions, more than gpt2's max_position_embeddings 1024"},
	} {
		_, _, err := Lower(modelConfig(t, "trn2", tc.model, tc.pass, 1))
		require.Error(t, err, tc.model)
		assert.Contains(t, err.Error(), tc.want)
	}
	_, _, err := Lower(modelConfig(t, "trn2", "gpt2", "mode: prefill, seq: 8", 13))
	assert.ErrorContains(t, err, "workload.model.layers: 13 is more than the model's 12 layers")
}

// The shipped model examples lower as they are (the run's own check).
func TestModelExamplesLower(t *testing.T) {
	files, err := filepath.Glob("../examples/*.yaml")
	require.NoError(t, err)
	n := 0
	for _, f := range files {
		cfg, err := configs.Load(f, configs.LoadOptions{})
		if err != nil || cfg.Workload.Kind != "model" {
			continue // sweep files, other kinds
		}
		n++
		_, info, err := Lower(cfg)
		require.NoError(t, err, f)
		assert.NotNil(t, info.Model, f)
	}
	assert.GreaterOrEqual(t, n, 3)
}

// FuzzModel lowers and simulates one layer of a zoo model over preset,
// mode, batch and length, race check on: a config is refused only with a
// configuration error naming a field, and one that runs is no faster than
// its matmuls at peak or its least bytes at the core's DMA bandwidth.
//
//	go test ./workloads -run '^$' -fuzz FuzzModel -fuzztime 5m -parallel 1
func FuzzModel(f *testing.F) {
	f.Add(uint8(2), uint8(0), false, uint8(1), uint16(130))
	f.Add(uint8(3), uint8(3), true, uint8(3), uint16(257))
	f.Add(uint8(0), uint8(4), false, uint8(2), uint16(1))
	f.Fuzz(func(t *testing.T, preset, model uint8, decode bool, batch uint8, length uint16) {
		models := []string{"llama-3.2-1b", "mistral-7b", "qwen2-7b", "gpt2", "bert-base", "mixtral-8x7b"}
		pass := fmt.Sprintf("mode: prefill, seq: %d", length%3000)
		if decode {
			pass = fmt.Sprintf("mode: decode, context: %d", length%3000)
		}
		text := fmt.Sprintf("hardware: {preset: %s}\nworkload:\n  kind: model\n  model: {name: %s, %s, batch: %d, layers: 1}\n",
			pick(configs.PresetNames(), preset), pick(models, model), pass, batch%5)
		cfg, err := configs.LoadBytes([]byte(text), "fuzz.yaml", configs.LoadOptions{})
		if err != nil {
			requireUserError(t, []string{text}, err)
			return
		}
		prog, info, err := Lower(cfg)
		if err != nil {
			requireUserError(t, []string{text}, err)
			return
		}
		res, err := chip.Run(cfg, prog, chip.Options{})
		if err != nil {
			t.Fatalf("%s: the run failed: %v", text, err)
		}
		h := &cfg.Hardware
		rate, _ := h.MatmulRate(isa.BF16, 0)
		sim := res.SimTime.Seconds()
		if b := float64(info.Model.MatmulFLOPs) / (h.PeakBaseFLOPSPerCore() * rate); sim < b*0.999 {
			t.Fatalf("%s: %.3f us beats the matmuls at peak (%.3f us)", text, sim*1e6, b*1e6)
		}
		if b := float64(info.MinHBMBytes) / (float64(h.Core.DMA.Engines) * h.Core.DMA.EngineBandwidthGBps * 1e9); sim < b*0.999 {
			t.Fatalf("%s: %.3f us beats its least bytes at the DMA bandwidth (%.3f us)", text, sim*1e6, b*1e6)
		}
	})
}

// Lowering quality (issue 11): inside a simulated Llama-3-8B layer at 4096
// tokens on trn2, each Linear keeps TensorE busy for at most 1.11x the
// TensorE busy time of the automatic GEMM plan on the same shape run on
// its own.
func TestLinearInLayerMatchesItsGEMM(t *testing.T) {
	cfg := modelConfig(t, "trn2", "llama-3-8b", "mode: prefill, seq: 4096", 1)
	prog, info, err := Lower(cfg)
	require.NoError(t, err)
	res, err := chip.Run(cfg, prog, chip.Options{})
	require.NoError(t, err)
	busy := map[int32]float64{}
	for _, o := range res.Ops {
		busy[o.ID] = o.Busy[isa.EngineTensor].Seconds()
	}
	g, err := ModelConfig(cfg)
	require.NoError(t, err)
	shapes := map[string][2]int64{ // in, out
		"q_proj": {g.Hidden, g.Heads * g.HeadDim}, "k_proj": {g.Hidden, g.KVHeads * g.HeadDim}, "v_proj": {g.Hidden, g.KVHeads * g.HeadDim},
		"o_proj": {g.Heads * g.HeadDim, g.Hidden}, "gate_proj": {g.Hidden, g.Intermediate}, "up_proj": {g.Hidden, g.Intermediate}, "down_proj": {g.Intermediate, g.Hidden},
	}
	standalone := map[[2]int64]float64{}
	for _, o := range info.Ops {
		if o.Kind != "linear" || o.Name == "lm_head" {
			continue
		}
		var kn [2]int64
		for suffix, s := range shapes {
			if strings.HasSuffix(o.Name, suffix) {
				kn = s
			}
		}
		require.NotZero(t, kn[0], o.Name)
		if _, ok := standalone[kn]; !ok {
			gcfg := gemmConfig(t, "hardware.preset=trn2", "workload.gemm.m=4096", fmt.Sprintf("workload.gemm.k=%d", kn[0]), fmt.Sprintf("workload.gemm.n=%d", kn[1]), "workload.gemm.a_layout=mk")
			r, _ := simulate(t, gcfg)
			standalone[kn] = r.Chips[0].Cores[0].Engines[isa.EngineTensor].Busy.Seconds()
		}
		ratio := busy[o.ID] / standalone[kn]
		t.Logf("%s [4096 x %d x %d]: TensorE busy %.1f us in the layer, %.1f us alone: %.3fx", o.Name, kn[0], kn[1], busy[o.ID]*1e6, standalone[kn]*1e6, ratio)
		assert.LessOrEqual(t, ratio, 1.11, o.Name)
	}
}

// FP8 weights run as FP8 double-row matmuls where the hardware has them
// (the activations cast by a DMA pass), with fewer weight bytes; elsewhere
// they, and int8 weights, are dequantised on chip (quant_test.go). A dtype
// the lowering does not take is an error naming the field.
func TestFP8Weights(t *testing.T) {
	for _, preset := range []string{"trn2"} { // the presets with double row (trn3's is not sourced)
		bf := modelConfig(t, preset, "llama-3.2-1b", "mode: decode, context: 300", 1)
		cfg := modelConfig(t, preset, "llama-3.2-1b", "mode: decode, context: 300, weights_dtype: fp8e4", 1)
		prog, info, err := Lower(cfg)
		require.NoError(t, err)
		res, err := chip.Run(cfg, prog, chip.Options{})
		require.NoError(t, err)
		_, binfo, err := Lower(bf)
		require.NoError(t, err)
		assert.Less(t, info.Model.WeightBytes, binfo.Model.WeightBytes, preset)
		assert.Greater(t, res.Chips[0].Cores[0].Engines[isa.EngineTensor].FLOPs, 0.0)
	}
	cfg := modelConfig(t, "trn2", "llama-3.2-1b", "mode: decode, context: 300", 1)
	cfg.Workload.Model.WeightsDType = "fp16" // past the config's own check
	_, _, err := Lower(cfg)
	assert.ErrorContains(t, err, "workload.model.weights_dtype: fp16 weights are not lowered (bf16, int8 and fp8e4 are)")
}

// Kernels that pin DMA queues (the elementwise kernel's loads and stores)
// compose with those that do not, whatever the queues per engine.
func TestModelWithManyQueues(t *testing.T) {
	for _, q := range []int{1, 5, 16} {
		cfg := modelConfig(t, "trn2", "bert-base", "mode: prefill, seq: 64", 1)
		cfg.Workload.Lowering.DMAQueues = q
		prog, _, err := Lower(cfg)
		require.NoError(t, err, "dma_queues=%d", q)
		_, err = chip.Run(cfg, prog, chip.Options{})
		require.NoError(t, err, "dma_queues=%d", q)
	}
}

// Behind a sliding window a decode reads only the window's keys of its
// cache: Mistral-7B (window 4,096, 8 KV heads of 128) at 30,000 keys
// reads 4,095 of each sequence's past keys per layer, K and V; without a
// window (Qwen2-7B, 4 KV heads of 128) all of them.
func TestKVReadBytesFollowTheWindow(t *testing.T) {
	for _, tc := range []struct {
		model         string
		kvHeads, keys int64
	}{{"mistral-7b", 8, 4095}, {"qwen2-7b", 4, 30000}} {
		cfg := modelConfig(t, "trn2", tc.model, "mode: decode, context: 30000, batch: 2", 1)
		_, info, err := Lower(cfg)
		require.NoError(t, err)
		// batch x K and V x heads x keys x head dim x BF16
		assert.Equal(t, 2*2*tc.kvHeads*tc.keys*128*2, info.Model.KVReadBytes, tc.model)
	}
}

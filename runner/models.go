package runner

import (
	"fmt"

	"github.com/trnsim/trnsim/gpu"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/nn"
	"github.com/trnsim/trnsim/workloads/zoo"
)

// ModelInfo is a model's row in `trnsim models`: its architecture, its
// parameter count from the graph, and the published count (0 when the
// config has none) with its source.
type ModelInfo struct {
	Name, Family                   string
	Layers, Hidden, Heads, KVHeads int64
	Params, ActiveParams           int64
	Published                      float64
	PublishedSource                string
}

// Models describes the zoo's models, or the Hugging Face config.json files
// at paths when any are given.
func Models(paths []string) ([]ModelInfo, error) {
	var cfgs []*zoo.Config
	if len(paths) == 0 {
		for _, n := range zoo.Names() {
			c, err := zoo.Get(n)
			if err != nil {
				return nil, err
			}
			cfgs = append(cfgs, c)
		}
	}
	for _, p := range paths {
		c, err := zoo.Load(p)
		if err != nil {
			return nil, err
		}
		cfgs = append(cfgs, c)
	}
	var out []ModelInfo
	for _, c := range cfgs {
		total, active, err := c.Params()
		if err != nil {
			return nil, err
		}
		m := ModelInfo{Name: c.Name, Family: c.Family, Layers: c.Layers, Hidden: c.Hidden, Heads: c.Heads, KVHeads: c.KVHeads, Params: total, ActiveParams: active}
		if a := c.Annotation; a != nil {
			m.Published, m.PublishedSource = a.Params, a.ParamsSource
		}
		out = append(out, m)
	}
	return out, nil
}

// GPUDecode is the GPU baseline's estimate of one decode step of a zoo
// model (batch sequences, past positions in the cache, BF16) on a GPU
// preset, for the validation rows.
func GPUDecode(model, device string, batch, past int64) (*gpu.Estimate, error) {
	return GPUDecodeTP(model, device, isa.BF16, 1, batch, past)
}

// GPUDecodeTP is GPUDecode on one rank of a copy split tp ways over
// NVLink (zoo's Megatron shards, their all-reduces timed as NCCL's),
// with weights in wdt; the plan is checked (tp within one node, the
// rank's weights and KV cache within the GPU's HBM).
func GPUDecodeTP(model, device string, wdt isa.DType, tp int, batch, past int64) (*gpu.Estimate, error) {
	m, err := zoo.Get(model)
	if err != nil {
		return nil, err
	}
	d, err := gpu.Lookup(device)
	if err != nil {
		return nil, err
	}
	g, err := m.Build(zoo.BuildOptions{Pass: nn.Pass{Batch: batch, Seq: 1, Past: past, ActDType: isa.BF16, KVCache: true}, WeightDType: wdt, TP: int64(tp)})
	if err != nil {
		return nil, err
	}
	w, kv := gpu.RankMemory(g)
	if err := gpu.CheckPlan(d, gpu.Plan{TP: tp, Replicas: 1}, w+kv); err != nil {
		return nil, fmt.Errorf("%s on %s: %w", model, device, err)
	}
	return gpu.Default.Estimate(g, d)
}

package zoo

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/graph"
	"github.com/trnsim/trnsim/workloads/nn"
)

// One tensor-parallel rank holds 1/tp of every split weight: the ranks
// together hold the model, plus the replicated norms (and KV heads when
// there are fewer than the ranks) and the vocabulary's padding; each
// layer sums twice over the ranks, and the head gathers once.
func TestShardedBuild(t *testing.T) {
	for _, c := range []struct {
		model string
		tp    int64
	}{{"llama-3-8b", 8}, {"llama-3-8b", 32}, {"gpt2", 4}, {"bert-base", 2}, {"mixtral-8x7b", 8}, {"qwen2-7b", 4}} {
		t.Run(c.model, func(t *testing.T) {
			m, err := Get(c.model)
			require.NoError(t, err)
			opts := BuildOptions{Pass: nn.Pass{Batch: 2, Seq: 4, ActDType: isa.BF16, KVCache: true}, WeightDType: isa.BF16, Layers: 2}
			full, err := m.Build(opts)
			require.NoError(t, err)
			opts.TP = c.tp
			rank, err := m.Build(opts)
			require.NoError(t, err)
			kinds := map[graph.Kind]int{}
			for _, o := range rank.Ops {
				kinds[o.Kind]++
				if o.Kind == graph.AllReduce || o.Kind == graph.AllGather {
					assert.Equal(t, c.tp, o.Attrs.Ranks, o.Name)
				}
			}
			wantReduce := 2*2 + 1 // two per layer, the embedding
			assert.Equal(t, wantReduce, kinds[graph.AllReduce])
			if m.Family != "bert" {
				assert.Equal(t, 1, kinds[graph.AllGather], "the LM head's logits")
			}
			// The output has the full model's shape.
			outs := func(g *graph.Graph) []*graph.Tensor {
				var o []*graph.Tensor
				for _, t := range g.Tensors {
					if t.Role == graph.Output {
						o = append(o, t)
					}
				}
				return o
			}
			fo, ro := outs(full), outs(rank)
			require.Len(t, ro, len(fo))
			for i := range fo {
				want := append([]int64(nil), fo[i].Shape...)
				got := ro[i].Shape
				if m.Family != "bert" {
					// The vocabulary is padded to a multiple of the ranks.
					want[len(want)-1] = (want[len(want)-1] + c.tp - 1) / c.tp * c.tp
				}
				assert.Equal(t, want, got)
			}
			// The ranks together hold at least the model and not much more.
			total := c.tp * rank.ParamCount()
			assert.GreaterOrEqual(t, total, full.ParamCount())
			assert.Less(t, float64(total), 1.12*float64(full.ParamCount()), "replication should be small: %d vs %d", total, full.ParamCount())
			// And the matmul work splits evenly (up to the padding).
			assert.InEpsilon(t, float64(full.FLOPs()), float64(c.tp*rank.FLOPs()), 0.12)
		})
	}
}

func TestShardErrors(t *testing.T) {
	for _, c := range []struct {
		model                string
		heads, kv, inter, tp int64 // 0: the model's own
		err                  string
	}{
		{"llama-3-8b", 0, 0, 0, 3, "llama-3-8b: num_attention_heads 32 does not divide by tp 3 (attention heads are split across the ranks; the nearest that divide it: 2 and 4)"},
		{"qwen2-7b", 24, 0, 0, 6, "qwen2-7b: tp 6 is not a multiple of num_key_value_heads 4 (with fewer KV heads than ranks, each KV head is replicated on tp / 4 ranks)"},
		{"llama-3-8b", 0, 12, 0, 8, "llama-3-8b: num_key_value_heads 12 does not divide by tp 8"},
		{"bert-base", 0, 0, 3070, 12, "bert-base: intermediate_size 3070 does not divide by tp 12 (the MLP's columns are split across the ranks)"},
	} {
		m, err := Get(c.model)
		require.NoError(t, err)
		r := *m
		if c.heads > 0 {
			r.Heads = c.heads
		}
		if c.kv > 0 {
			r.KVHeads = c.kv
		}
		if c.inter > 0 {
			r.Intermediate = c.inter
		}
		_, err = r.Shard(c.tp)
		require.EqualError(t, err, c.err, "%s %+v", c.model, c)
	}
}

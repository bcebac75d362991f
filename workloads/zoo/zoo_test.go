package zoo

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/graph"
	"github.com/trnsim/trnsim/workloads/nn"
)

// tolerance is how far a count may be from a published figure: 0.5%, or
// the figure's own rounding when it is coarser (340M means 335M-345M).
func tolerance(published float64) float64 {
	s := strconv.FormatFloat(published, 'g', -1, 64)
	mant := strings.TrimLeft(strings.SplitN(s, "e", 2)[0], "0.")
	digits := len(strings.ReplaceAll(mant, ".", ""))
	unit := math.Pow(10, math.Floor(math.Log10(published))-float64(digits-1))
	return math.Max(0.005*published, unit/2)
}

// Every zoo model's parameter count, computed from its architecture,
// matches its published figure.
func TestZooParamsMatchPublished(t *testing.T) {
	names := Names()
	require.Len(t, names, 11)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			c, err := Get(name)
			require.NoError(t, err)
			require.NotNil(t, c.Annotation, "a zoo model cites its source")
			assert.NotEmpty(t, c.Annotation.Source)
			assert.NotEmpty(t, c.Annotation.ParamsSource)
			total, active, err := c.Params()
			require.NoError(t, err)
			pub := c.Annotation.Params
			assert.InDelta(t, pub, float64(total), tolerance(pub), "%s: %d parameters, published %g", name, total, pub)
			if c.Annotation.ActiveParams > 0 {
				assert.InDelta(t, c.Annotation.ActiveParams, float64(active), tolerance(c.Annotation.ActiveParams))
			}
			t.Logf("%s: %d parameters (published %g, %+.2f%%)", name, total, pub, 100*(float64(total)/pub-1))
		})
	}
}

// The exact counts transformers gives for these architectures.
func TestExactParamCounts(t *testing.T) {
	for name, want := range map[string]int64{
		"gpt2": 124439808, "bert-base": 109482240, "llama-2-7b": 6738415616, "llama-3.2-1b": 1235814400,
		"llama-3-8b": 8030261248, "mistral-7b": 7241732096, "mixtral-8x7b": 46702792704, "qwen2-7b": 7615616512,
	} {
		c, err := Get(name)
		require.NoError(t, err)
		got, _, err := c.Params()
		require.NoError(t, err)
		assert.Equal(t, want, got, name)
	}
}

// One real config.json per family builds, as given, into a layer of
// prefill and of decode whose shapes, FLOPs and bytes hold together.
func TestFixturesBuild(t *testing.T) {
	files, err := filepath.Glob("testdata/hf/*.json")
	require.NoError(t, err)
	families := map[string]bool{}
	for _, f := range files {
		c, err := Load(f)
		require.NoError(t, err, f)
		families[c.Family] = true
		for _, p := range []nn.Pass{
			{Batch: 2, Seq: 128, ActDType: isa.BF16, KVCache: true},
			{Batch: 4, Seq: 1, Past: 256, ActDType: isa.BF16, KVCache: true},
		} {
			g, err := c.Build(BuildOptions{Pass: p, Layers: 1, WeightDType: isa.BF16})
			require.NoError(t, err, f)
			assert.Greater(t, g.FLOPs(), int64(0))
			// The least traffic reads every weight of the layer at least.
			var weights int64
			for _, tn := range g.Tensors {
				if tn.Role == graph.Parameter && !strings.Contains(tn.Name, "embed") && !strings.Contains(tn.Name, "wte") && !strings.Contains(tn.Name, "wpe") && !strings.Contains(tn.Name, "_embeddings") {
					weights += tn.Bytes()
				}
			}
			assert.GreaterOrEqual(t, g.MinHBMBytes(), weights, f)
		}
	}
	for _, fam := range []string{"llama", "mistral", "qwen2", "mixtral", "gpt2", "bert"} {
		assert.True(t, families[fam], "a fixture of %s", fam)
	}
}

// A config.json written by another transformers version, with a BOM and
// Windows line endings, reads as the original.
func TestHFVariants(t *testing.T) {
	data, err := os.ReadFile("testdata/hf/llama-3.2-1b.json")
	require.NoError(t, err)
	want, err := ParseHF(data, "a.json")
	require.NoError(t, err)
	crlf := append([]byte("\xef\xbb\xbf"), []byte(strings.ReplaceAll(string(data), "\n", "\r\n"))...)
	got, err := ParseHF(crlf, "a.json")
	require.NoError(t, err)
	assert.Equal(t, want, got)
	// transformers v5: dtype for torch_dtype, rope_parameters for
	// rope_theta and rope_scaling, layer_types.
	v5 := strings.Replace(string(data), `"torch_dtype"`, `"dtype"`, 1)
	v5 = strings.Replace(v5, `"rope_theta": 500000.0,`, ``, 1)
	v5 = strings.Replace(v5, `"rope_scaling": {`, `"layer_types": ["full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention"], "rope_parameters": {"rope_theta": 500000.0,`, 1)
	got, err = ParseHF([]byte(v5), "a.json")
	require.NoError(t, err)
	assert.Equal(t, want.RoPETheta, got.RoPETheta)
	assert.Equal(t, "llama3", got.RoPEScaling)
	assert.Equal(t, want.Windows, got.Windows)
}

// Bad config files name the file, the line and the field.
func TestHFErrors(t *testing.T) {
	base := `{
  "architectures": ["LlamaForCausalLM"],
  "hidden_size": 2048,
  "intermediate_size": 8192,
  "num_hidden_layers": 2,
  "num_attention_heads": 32,
  "num_key_value_heads": 8,
  "vocab_size": 1000%s
}`
	for _, tc := range []struct{ name, extra, full, want string }{
		{"unknown architecture", "", `{"architectures": ["T5ForConditionalGeneration"]}`, `c.json:1: architectures: T5ForConditionalGeneration is not a supported architecture`},
		{"field that changes the graph", ",\n  \"cross_attention_layers\": [3, 8]", "", `c.json:9: cross_attention_layers: not supported for LlamaForCausalLM`},
		{"kv heads", "", strings.Replace(base, `"num_key_value_heads": 8`, `"num_key_value_heads": 5`, 1), `c.json:7: num_key_value_heads: 5 does not divide num_attention_heads 32`},
		{"negative size", "", strings.Replace(base, `"hidden_size": 2048`, `"hidden_size": -3`, 1), `c.json:3: hidden_size: must be a positive integer, got -3`},
		{"wrong type", "", strings.Replace(base, `"hidden_size": 2048`, `"hidden_size": "big"`, 1), `c.json:3: hidden_size: "big" is not what the field takes`},
		{"missing field", "", strings.Replace(base, `"vocab_size": 1000`, `"use_cache": true`, 1), `c.json: vocab_size: required`},
		{"rope type", ",\n  \"rope_scaling\": {\"rope_type\": \"wavy\"}", "", `c.json:9: rope_scaling: rope type "wavy" is not supported`},
		{"activation", ",\n  \"hidden_act\": \"mish\"", "", `c.json:9: hidden_act: "mish" is not a supported activation`},
		{"quantised", ",\n  \"quantization_config\": {\"bits\": 4}", "", `quantization_config: {"bits": 4} is not supported`},
		{"syntax", "", "{\n  \"hidden_size\": 2048,\n  oops\n}", `c.json:3: not valid JSON: invalid character 'o'`},
		{"truncated", "", "{\n  \"hidden_size\": 2048,\n", `c.json:3: not valid JSON: unexpected end of JSON input (the file ends before its object does)`},
		{"an array", "", "[1, 2]", `c.json: not a JSON object`},
		{"bert decoder", "", `{"architectures": ["BertModel"], "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 2, "vocab_size": 10, "max_position_embeddings": 16, "is_decoder": true}`, `is_decoder: true is not supported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := tc.full
			if text == "" {
				text = strings.Replace(base, "%s", tc.extra, 1)
			} else {
				text = strings.Replace(text, "%s", "", 1)
			}
			_, err := ParseHF([]byte(text), "c.json")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

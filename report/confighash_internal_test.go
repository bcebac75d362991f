package report

import (
	"encoding/json"
	"math"
	"reflect"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
)

// hashConfigs are configs of every kind the hash covers: each preset and
// instance (their cost tables), cost overrides from the file and --set
// (-0 among them), parallel plans, prices, tile parameters, strings that
// JSON escapes, and hand-made ones (no cost table, a value JSON cannot
// encode).
func hashConfigs(t *testing.T) []*configs.RunConfig {
	t.Helper()
	type load struct {
		text string
		sets []string
	}
	var loads []load
	for _, p := range configs.PresetNames() {
		loads = append(loads,
			load{"hardware: {preset: " + p + "}\nworkload: {kind: gemm, gemm: {m: 64, k: 64, n: 64}}\n", nil},
			load{"hardware: {preset: " + p + "}\nworkload: {kind: gemm, gemm: {m: 64, k: 64, n: 64}}\n", []string{"hardware.core.sbuf.partition_kib=128"}})
	}
	for _, i := range configs.InstanceNames() {
		loads = append(loads, load{"hardware: {instance: " + i + "}\nworkload: {kind: model, model: {name: llama-3-8b, mode: prefill, batch: 1, seq: 128}}\nparallel: {tp: 2}\n", nil})
	}
	costs := "hardware:\n  preset: trn2\n  costs:\n    constants:\n      MIN_II: {value: 32}\n    vector:\n      tensor_copy:\n        turbo: {when: [half], interval: \"N/8\", tag: I, source: \"what <if> & then\"}\nworkload:\n  kind: gemm\n  name: \"<b>&amp;\\u2028</b>\"\n  gemm: {m: 256, k: 256, n: 256}\ncost:\n  prices: {p5.48xlarge: 40, trn2.48xlarge: 24.5}\n"
	loads = append(loads,
		load{costs, nil},
		load{costs, []string{"hardware.costs.constants.MIN_II.value=-0"}},
		load{costs, []string{"hardware.costs.constants.MIN_II.value=0"}},
		load{costs, []string{"hardware.costs.constants.STRIDE_PENALTY.value=3", "parallel.collective_algorithm=ring"}},
		load{costs, []string{"hardware.costs.vector.tensor_copy.turbo.when=[]"}},
		load{"hardware: {preset: trn2}\nworkload:\n  kind: tile\n  tile:\n    source: |\n      param N = 128\n    params: {N: 256, M: 2}\n", nil},
		load{"hardware: {preset: trn2}\nworkload:\n  kind: op\n  op: {name: softmax, m: 128, n: 512}\n", nil},
	)
	var out []*configs.RunConfig
	for _, l := range loads {
		cfg, err := configs.LoadBytes([]byte(l.text), "test.yaml", configs.LoadOptions{Sets: l.sets})
		require.NoError(t, err, "%s %v", l.text, l.sets)
		out = append(out, cfg)
	}
	nan := *out[0]
	nan.Costs = cloneCostTable(nan.Costs)
	nan.Costs.Constants[0].Value = math.NaN()
	nanPrice := *out[0]
	nanPrice.Pricing.Prices.Values = map[string]float64{"x": math.Inf(1)}
	return append(out, &configs.RunConfig{}, &nan, &nanPrice, out[0])
}

func TestConfigHasherMatchesConfigHash(t *testing.T) {
	cfgs := hashConfigs(t)
	want := make([]string, len(cfgs))
	for i, cfg := range cfgs {
		want[i] = ConfigHash(cfg)
	}
	assert.Equal(t, want[len(want)-1], want[0])
	assert.NotEqual(t, want[0], want[1])
	// What JSON cannot encode hashes no data.
	assert.Equal(t, "e3b0c44298fc1c14", want[len(want)-3])
	assert.Equal(t, "e3b0c44298fc1c14", want[len(want)-2])
	for _, tc := range []struct {
		name  string
		order func(n, i int) int
	}{
		{"in order", func(n, i int) int { return i % n }},
		{"backwards", func(n, i int) int { return n - 1 - i%n }},
		{"strided", func(n, i int) int { return (i * 7) % n }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h ConfigHasher
			n := len(cfgs)
			for i := 0; i < 3*n; i++ {
				j := tc.order(n, i)
				assert.Equal(t, want[j], h.Hash(cfgs[j]), "config %d", j)
			}
		})
	}
	t.Run("at once", func(t *testing.T) {
		var h ConfigHasher
		var wg sync.WaitGroup
		got := make([]string, 8*len(cfgs))
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i] = h.Hash(cfgs[i%len(cfgs)])
			}()
		}
		wg.Wait()
		for i := range got {
			assert.Equal(t, want[i%len(cfgs)], got[i], "config %d", i%len(cfgs))
		}
	})
	t.Run("a table changed after it was hashed", func(t *testing.T) {
		var h ConfigHasher
		cfg := *cfgs[0]
		cfg.Costs = cloneCostTable(cfg.Costs)
		assert.Equal(t, ConfigHash(&cfg), h.Hash(&cfg))
		cfg.Costs.Constants[0].Value++
		cfg.Costs.Rules[0].Variants[0].Interval += "+1"
		assert.Equal(t, ConfigHash(&cfg), h.Hash(&cfg))
		assert.Equal(t, want[0], h.Hash(cfgs[0]))
	})
}

func TestEqualCostTablesKnowsEveryField(t *testing.T) {
	// equalCostTables compares these fields one by one: a new one must be
	// added to it (and to cloneCostTable).
	for _, tc := range []struct {
		v    any
		want int
	}{
		{isa.CostTable{}, 2},
		{isa.CostConstant{}, 4},
		{isa.CostRule{}, 3},
		{isa.CostVariant{}, 6},
	} {
		assert.Equal(t, tc.want, reflect.TypeOf(tc.v).NumField(), "%T", tc.v)
	}
}

func TestEqualCostTables(t *testing.T) {
	base, err := configs.LoadCostTable("nc-v3")
	require.NoError(t, err)
	require.NotEmpty(t, base.Constants)
	require.NotEmpty(t, base.Rules)
	require.NotEmpty(t, base.Rules[0].Variants)
	for _, tc := range []struct {
		name   string
		change func(t *isa.CostTable)
	}{
		{"constant name", func(t *isa.CostTable) { t.Constants[0].Name += "X" }},
		{"constant value", func(t *isa.CostTable) { t.Constants[0].Value++ }},
		{"constant -0", func(t *isa.CostTable) { t.Constants[0].Value = math.Copysign(0, -1) }},
		{"constant source", func(t *isa.CostTable) { t.Constants[0].Source += "." }},
		{"constant tag", func(t *isa.CostTable) { t.Constants[0].Tag = "Z" }},
		{"a constant more", func(t *isa.CostTable) { t.Constants = append(t.Constants, isa.CostConstant{Name: "X"}) }},
		{"no constants", func(t *isa.CostTable) { t.Constants = nil }},
		{"empty constants", func(t *isa.CostTable) { t.Constants = []isa.CostConstant{} }},
		{"rule engine", func(t *isa.CostTable) { t.Rules[0].Engine += "X" }},
		{"rule op", func(t *isa.CostTable) { t.Rules[0].Op += "X" }},
		{"a rule less", func(t *isa.CostTable) { t.Rules = t.Rules[1:] }},
		{"no rules", func(t *isa.CostTable) { t.Rules = nil }},
		{"no variants", func(t *isa.CostTable) { t.Rules[0].Variants = nil }},
		{"empty variants", func(t *isa.CostTable) { t.Rules[0].Variants = []isa.CostVariant{} }},
		{"variant name", func(t *isa.CostTable) { t.Rules[0].Variants[0].Name += "x" }},
		{"variant when", func(t *isa.CostTable) { t.Rules[0].Variants[0].When = append(t.Rules[0].Variants[0].When, "half") }},
		{"variant when nil", func(t *isa.CostTable) { t.Rules[0].Variants[0].When = nil }},
		{"variant when empty", func(t *isa.CostTable) { t.Rules[0].Variants[0].When = []string{} }},
		{"variant when changed", func(t *isa.CostTable) { t.Rules[0].Variants[0].When = []string{"!half"} }},
		{"variant interval", func(t *isa.CostTable) { t.Rules[0].Variants[0].Interval += "+1" }},
		{"variant latency", func(t *isa.CostTable) { t.Rules[0].Variants[0].Latency += "+1" }},
		{"variant source", func(t *isa.CostTable) { t.Rules[0].Variants[0].Source += "." }},
		{"variant tag", func(t *isa.CostTable) { t.Rules[0].Variants[0].Tag = "Z" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := cloneCostTable(base), cloneCostTable(base)
			require.True(t, equalCostTables(a, b))
			aj, err := json.Marshal(a)
			require.NoError(t, err)
			tc.change(b)
			bj, err := json.Marshal(b)
			require.NoError(t, err)
			if string(aj) == string(bj) {
				// (A change JSON does not see, such as nil When to nil.)
				return
			}
			assert.False(t, equalCostTables(a, b), "the tables encode differently")
			assert.False(t, equalCostTables(b, a))
			c := cloneCostTable(b)
			assert.True(t, equalCostTables(b, c), "a clone is equal")
			cj, _ := json.Marshal(c)
			assert.Equal(t, string(bj), string(cj), "a clone encodes the same")
		})
	}
}

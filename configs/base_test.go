package configs_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/configs"
)

// loaded is what a load gives, in a form that compares across loads: the
// hardware less its cost overrides (which hold the parsed nodes, that a
// shared base shares), and everything else resolved.
type loaded struct {
	Err      string
	Hardware configs.Hardware
	Workload configs.Workload
	Parallel configs.Parallel
	Outputs  configs.Outputs
	Pricing  configs.Pricing
	File     string
	Fields   []configs.Field
	Sources  map[string]configs.Source
	Costs    any
}

func snapshot(cfg *configs.RunConfig, err error) loaded {
	if err != nil {
		return loaded{Err: err.Error()}
	}
	l := loaded{Hardware: cfg.Hardware, Workload: cfg.Workload, Parallel: cfg.Parallel, Outputs: cfg.Outputs,
		Pricing: cfg.Pricing, File: cfg.File, Fields: configs.Fields(cfg), Sources: cfg.Sources, Costs: cfg.Costs}
	l.Hardware.Costs = configs.CostOverrides{}
	return l
}

// baseCases are run configs of every kind, each with --set lists that
// change it (numbers, strings, flow mappings, cost overrides merged with
// the file's, prices, one value given twice) or break it.
var baseCases = []struct {
	name string
	text string
	sets [][]string
}{
	{"gemm with cost overrides", y(
		"hardware:",
		"  preset: trn2",
		"  core: {sbuf: {partition_kib: 192}}",
		"  costs:",
		"    constants:",
		"      MIN_II: {value: 32}",
		"    vector:",
		"      tensor_copy:",
		"        turbo: {when: [half], interval: \"N/8\", tag: I, source: \"what if\"}",
		"workload:",
		"  kind: gemm",
		"  name: a <gemm> & more",
		"  gemm: {m: 256, k: 256, n: 256}",
		"cost:",
		"  prices: {p5.48xlarge: 40}",
	), [][]string{
		nil,
		{"hardware.core.sbuf.partition_kib=128", "workload.gemm.m=1024"},
		{"hardware.core.sbuf.partition_kib=0x100", "workload.gemm={m: 64, k: 64, n: 64}"},
		{"hardware.costs.constants.STRIDE_PENALTY.value=3", "hardware.costs.constants.MIN_II.value=-0"},
		{"hardware.costs.vector.tensor_copy.turbo.interval=N/4"},
		{"workload.gemm.m=512", "workload.gemm.n=512", "workload.gemm.k=512"},
		{"cost.prices.p5.48xlarge=41", "cost.prices.trn2.48xlarge=20"},
		{"hardware.preset=trn1"},
		{"hardware.preset=trn3", "workload.name=other"},
		{"hardware.core.sbuf.partition_kib=-1"},
		{"hardware.core.sbuf.partition_kib=big"},
		{"hardware.costs.constants.MIN_II.value=-3"},
		{"hardware.costs.vector.tensor_copy.turbo.interval=N/"},
		{"workload.gemm={m: 1, q: 2}"},
		{"workload.gemm.m"},
		{"colour.red=1"},
		{"hardware.preset=trn9"},
		{"workload.kind=model"},
	}},
	{"an instance with a topology", y(
		"hardware:",
		"  instance: trn2.48xlarge",
		"  runtime: {collective_overhead_us: 0}",
		"workload:",
		"  kind: gemm",
		"  gemm: {m: 128, k: 128, n: 128}",
	), [][]string{
		nil,
		{"hardware.nodes=2"},
		{"hardware.topology.kind=ring"},
		{"hardware.topology.kind=2d_torus", "hardware.topology.dims=[4, 4]"},
		{"hardware.topology.kind=2d_torus", "hardware.topology.dims=[3, 3]"},
		{"hardware.preset=trn1"},
	}},
	{"a custom topology", y(
		"hardware:",
		"  preset: trn2",
		"  chips: 3",
		"  topology: {kind: custom, links: [{a: 0, b: 1}, {a: 1, b: 2, bandwidth_gbps: 50}]}",
		"workload:",
		"  kind: gemm",
		"  gemm: {m: 128, k: 128, n: 128}",
	), [][]string{
		nil,
		{"hardware.chips=4"},
		{"hardware.topology.links=[{a: 0, b: 1}, {a: 1, b: 2}, {a: 0, b: 2}]"},
	}},
	{"a model", y(
		"hardware:",
		"  preset: trn2",
		"  chip: {lnc: 1}",
		"workload:",
		"  kind: model",
		"  model: {name: llama-3-8b, mode: prefill, batch: 1, seq: 2048}",
		"parallel:",
		"  tp: 8",
	), [][]string{
		nil,
		{"parallel.tp=4", "workload.model.seq=1024"},
		{"parallel.tp=3"},
		{"workload.model.mode=decode", "workload.model.context=512", "workload.model.tokens=4"},
		{"workload.model.gpus=[none]"},
	}},
	{"a tile kernel", y(
		"hardware: {preset: trn2}",
		"workload:",
		"  kind: tile",
		"  tile:",
		"    source: |",
		"      param N = 128",
		"    params: {N: 256}",
	), [][]string{
		nil,
		{"workload.tile.params.N=512", "workload.tile.params.M=4"},
		{"workload.tile.params.N=x"},
	}},
	{"a bad value in the file", y(
		"hardware: {preset: trn2}",
		"workload:",
		"  kind: gemm",
		"  gemm: {m: 64, k: -2, n: 64}",
	), [][]string{nil, {"workload.gemm.k=64"}, {"workload.gemm.m=1"}}},
	{"not a config", y(
		"hardware: [trn2]",
	), [][]string{nil, {"hardware.preset=trn2"}}},
	{"not YAML", y(
		"hardware: {preset: trn2",
	), [][]string{nil, {"hardware.preset=trn2"}}},
	{"empty", "", [][]string{nil, {"hardware.preset=trn2", "workload.kind=gemm", "workload.gemm={m: 8, k: 8, n: 8}"}}},
}

func TestBaseLoadIsLoadBytes(t *testing.T) {
	for _, tc := range baseCases {
		t.Run(tc.name, func(t *testing.T) {
			base := configs.ParseBase([]byte(tc.text), "test.yaml")
			want := make([]loaded, len(tc.sets))
			for i, sets := range tc.sets {
				want[i] = snapshot(configs.LoadBytes([]byte(tc.text), "test.yaml", configs.LoadOptions{Sets: sets}))
			}
			// In order, twice (the second time with the set values the
			// base has seen), then all at once.
			for round := 0; round < 2; round++ {
				for i, sets := range tc.sets {
					assert.Equal(t, want[i], snapshot(base.Load(configs.LoadOptions{Sets: sets})), "round %d: %v", round, sets)
				}
			}
			got := make([]loaded, 4*len(tc.sets))
			var wg sync.WaitGroup
			for i := range got {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got[i] = snapshot(base.Load(configs.LoadOptions{Sets: tc.sets[i%len(tc.sets)]}))
				}()
			}
			wg.Wait()
			for i := range got {
				assert.Equal(t, want[i%len(tc.sets)], got[i], "at once: %v", tc.sets[i%len(tc.sets)])
			}
		})
	}
}

func TestReadBaseIsLoad(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, path string
	}{
		{"missing", dir + "/missing.yaml"},
		{"a folder", dir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, want := configs.Load(tc.path, configs.LoadOptions{})
			require.Error(t, want)
			base := configs.ReadBase(tc.path)
			for i := 0; i < 2; i++ {
				_, got := base.Load(configs.LoadOptions{Sets: []string{fmt.Sprintf("workload.gemm.m=%d", i)}})
				require.Error(t, got)
				assert.Equal(t, want.Error(), got.Error())
			}
		})
	}
}

func TestBaseErrorsAreTheCallers(t *testing.T) {
	// A parse error is returned to every Load as a copy of its own.
	base := configs.ParseBase([]byte("hardware: {preset: trn2\n"), "test.yaml")
	_, e1 := base.Load(configs.LoadOptions{})
	_, e2 := base.Load(configs.LoadOptions{})
	require.Error(t, e1)
	assert.Equal(t, e1.Error(), e2.Error())
	assert.NotSame(t, e1, e2)
}

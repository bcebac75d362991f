package configs_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/configs"
)

// y joins lines into a YAML document, so a case's line numbers can be read
// off its position in the list (the first line is line 1).
func y(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

// gemm is a valid workload section (three lines).
var gemm = []string{
	"workload:",
	"  kind: gemm",
	"  gemm: {m: 128, k: 128, n: 128}",
}

// withGEMM appends the gemm workload to hardware lines.
func withGEMM(lines ...string) string { return y(append(lines, gemm...)...) }

type errCase struct {
	name string
	yaml string
	sets []string
	want string
}

// runErrCases loads each case as "test.yaml" and asserts the exact message.
func runErrCases(t *testing.T, cases []errCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := configs.LoadBytes([]byte(tc.yaml), "test.yaml", configs.LoadOptions{Sets: tc.sets})
			require.Error(t, err, "config loaded: %+v", cfg)
			assert.Nil(t, cfg)
			assert.Equal(t, tc.want, err.Error())
			var ce *configs.Error
			assert.True(t, errors.As(err, &ce), "error is %T, not *configs.Error", err)
		})
	}
}

func TestLoadErrorsMalformedYAML(t *testing.T) {
	runErrCases(t, []errCase{
		{"unclosed flow mapping", y(
			"hardware: {preset: trn2",
			"workload:",
		), nil, "test.yaml:1: invalid YAML: did not find expected ',' or '}'"},
		{"bad indentation", y(
			"hardware:",
			"  preset: trn2",
			" workload: x",
		), nil, "test.yaml:2: invalid YAML: did not find expected key"},
		{"tab indentation", y(
			"hardware:",
			"\tpreset: trn2",
		), nil, "test.yaml:2: invalid YAML: found character that cannot start any token"},
		{"unterminated quote", y(
			"hardware:",
			"  preset: \"trn2",
		), nil, "test.yaml:2: invalid YAML: found unexpected end of stream"},
		{"top level is a list", y(
			"- hardware",
			"- workload",
		), nil, "test.yaml:1:1: the top level must be a mapping of sections"},
		{"top level is a scalar", y(
			"just text",
		), nil, "test.yaml:1:1: the top level must be a mapping of sections"},
		{"section is a scalar", y(
			"hardware: trn2",
		), nil, "test.yaml:1:11: hardware: expected a mapping, got \"trn2\""},
		{"alias", y(
			"hardware: &hw",
			"  preset: trn2",
			"workload: *hw",
		), nil, "test.yaml:3:11: workload: YAML aliases are not supported"},
		{"merge key", y(
			"hardware:",
			"  <<: {preset: trn2}",
		), nil, "test.yaml:2:3: hardware: YAML merge keys are not supported"},
		{"non-scalar key", y(
			"hardware:",
			"  ? [a, b]",
			"  : 1",
		), nil, "test.yaml:2:5: hardware: keys must be plain names"},
	})
}

func TestLoadErrorsUnknownSection(t *testing.T) {
	runErrCases(t, []errCase{
		{"misspelt hardware", y(
			"hardwre:",
			"  preset: trn2",
		), nil, "test.yaml:1:1: hardwre: unknown section (sections: hardware, workload, parallel, outputs, cost)"},
		{"after valid sections", withGEMM(
			"hardware:",
			"  preset: trn2",
			"output:",
			"  json: out.json",
		), nil, "test.yaml:3:1: output: unknown section (sections: hardware, workload, parallel, outputs, cost)"},
		{"numeric key", y(
			"1: x",
		), nil, "test.yaml:1:1: 1: unknown section (sections: hardware, workload, parallel, outputs, cost)"},
		{"a sweep file", y(
			"base: gemm.yaml",
			"axes:",
			"  workload.gemm.m: [128, 256]",
		), nil, "test.yaml:1:1: base: unknown section: this is a sweep file (it has axes:); run it with trnsim sweep test.yaml"},
	})
}

func TestLoadErrorsUnknownField(t *testing.T) {
	runErrCases(t, []errCase{
		{"hardware top level", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  clock_ghz: 2",
		), nil, "test.yaml:3:3: hardware.clock_ghz: unknown field (known fields of hardware: chip, chips, core, cost_table, costs, description, efa, generation, instance, name, nodes, preset, runtime, topology)"},
		{"core sbuf", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    sbuf:",
			"      partition_kb: 256",
		), nil, "test.yaml:5:7: hardware.core.sbuf.partition_kb: unknown field (known fields of hardware.core.sbuf: partition_kib, partitions)"},
		{"chip hbm", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  chip:",
			"    hbm: {bandwith_gbps: 3000}",
		), nil, "test.yaml:4:11: hardware.chip.hbm.bandwith_gbps: unknown field (known fields of hardware.chip.hbm: bandwidth_gbps, interleave_bytes, latency_ns, stack_gib, stacks)"},
		{"workload gemm", y(
			"hardware: {preset: trn2}",
			"workload:",
			"  kind: gemm",
			"  gemm: {m: 128, k: 128, n: 128, batches: 2}",
		), nil, "test.yaml:4:34: workload.gemm.batches: unknown field (known fields of workload.gemm: a_layout, batch, dtype, k, m, n, out_dtype, weights_dtype)"},
		{"workload lowering", y(
			"hardware: {preset: trn2}",
			"workload:",
			"  kind: gemm",
			"  gemm: {m: 128, k: 128, n: 128}",
			"  lowering:",
			"    tile_m: 128",
		), nil, "test.yaml:6:5: workload.lowering.tile_m: unknown field (known fields of workload.lowering: accumulate_dtype, block_k, block_m, block_n, buffers, dequantize, dge, dma_queues, elementwise_free, evacuate, loop_order, matmul_mode, psum_banks, result_buffers, tile_n, transpose)"},
		{"outputs", withGEMM(
			"hardware: {preset: trn2}",
			"outputs: {png: x.png}",
		), nil, "test.yaml:2:11: outputs.png: unknown field (known fields of outputs: asm, csv, json, trace)"},
	})
}

func TestLoadErrorsWrongType(t *testing.T) {
	runErrCases(t, []errCase{
		{"string where int", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    sbuf: {partition_kib: lots}",
		), nil, "test.yaml:4:27: hardware.core.sbuf.partition_kib: expected an integer, got \"lots\""},
		{"float where int", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    sbuf: {partition_kib: 1.5}",
		), nil, "test.yaml:4:27: hardware.core.sbuf.partition_kib: expected an integer, got \"1.5\""},
		{"nothing where int", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    sbuf:",
			"      partition_kib:",
		), nil, "test.yaml:5:21: hardware.core.sbuf.partition_kib: expected an integer, got nothing"},
		{"int out of range", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core: {semaphores: 99999999999999999999}",
		), nil, "test.yaml:3:22: hardware.core.semaphores: integer \"99999999999999999999\" is out of range"},
		{"string where float", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    tensor: {clock_ghz: fast}",
		), nil, "test.yaml:4:25: hardware.core.tensor.clock_ghz: expected a number, got \"fast\""},
		{"infinite float", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    tensor: {clock_ghz: .inf}",
		), nil, "test.yaml:4:25: hardware.core.tensor.clock_ghz: expected a finite number, got \".inf\""},
		{"bool where string", y(
			"hardware: {preset: trn2}",
			"workload:",
			"  kind: true",
		), nil, "test.yaml:3:9: workload.kind: expected a string, got \"true\" (quote it)"},
		{"int where string", y(
			"hardware: {preset: trn2}",
			"workload:",
			"  kind: gemm",
			"  gemm: {m: 128, k: 128, n: 128, dtype: 16}",
		), nil, "test.yaml:4:41: workload.gemm.dtype: expected a string, got \"16\" (quote it)"},
		{"string where bool", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    power: {enabled: yes}",
		), nil, "test.yaml:4:22: hardware.core.power.enabled: expected true or false, got \"yes\""},
		{"list where mapping", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core: [1, 2]",
		), nil, "test.yaml:3:9: hardware.core: expected a mapping, got a list"},
		{"mapping where int", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  chips: {count: 2}",
		), nil, "test.yaml:3:10: hardware.chips: expected an integer, got a mapping"},
		{"list where string", y(
			"hardware: {preset: trn2}",
			"workload:",
			"  kind: [gemm]",
		), nil, "test.yaml:3:9: workload.kind: expected a string, got a list"},
		{"workload is a list", y(
			"hardware: {preset: trn2}",
			"workload: [gemm]",
		), nil, "test.yaml:2:11: workload: expected a mapping, got a list"},
	})
}

func TestLoadErrorsCheckTags(t *testing.T) {
	runErrCases(t, []errCase{
		{"pos zero", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    sbuf: {partition_kib: 0}",
		), nil, "test.yaml:4:27: hardware.core.sbuf.partition_kib: must be greater than 0, got 0"},
		{"pos negative", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  chips: -2",
		), nil, "test.yaml:3:10: hardware.chips: must be greater than 0, got -2"},
		{"pos float zero", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    tensor: {clock_ghz: 0.0}",
		), nil, "test.yaml:4:25: hardware.core.tensor.clock_ghz: must be greater than 0, got 0"},
		{"nonneg negative int", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  chip:",
			"    hbm: {interleave_bytes: -64}",
		), nil, "test.yaml:4:29: hardware.chip.hbm.interleave_bytes: must not be negative, got -64"},
		{"nonneg negative float", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    dma: {start_latency_ns: -1.5}",
		), nil, "test.yaml:4:29: hardware.core.dma.start_latency_ns: must not be negative, got -1.5"},
		{"frac above one", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    dma: {transpose_efficiency_hbm: 1.5}",
		), nil, "test.yaml:4:37: hardware.core.dma.transpose_efficiency_hbm: must be in (0, 1], got 1.5"},
		{"frac zero", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    power: {low_util_fraction: 0}",
		), nil, "test.yaml:4:32: hardware.core.power.low_util_fraction: must be in (0, 1], got 0"},
		{"workload pos", y(
			"hardware: {preset: trn2}",
			"workload:",
			"  kind: gemm",
			"  gemm: {m: -128, k: 128, n: 128}",
		), nil, "test.yaml:4:13: workload.gemm.m: must be greater than 0, got -128"},
		{"lowering nonneg", y(
			"hardware: {preset: trn2}",
			"workload:",
			"  kind: gemm",
			"  gemm: {m: 128, k: 128, n: 128}",
			"  lowering: {buffers: -1}",
		), nil, "test.yaml:5:23: workload.lowering.buffers: must not be negative, got -1"},
		{"elementwise pos", y(
			"hardware: {preset: trn2}",
			"workload:",
			"  kind: elementwise",
			"  elementwise: {op: exp, rows: 128, cols: 0}",
		), nil, "test.yaml:4:43: workload.elementwise.cols: must be greater than 0, got 0"},
	})
}

func TestLoadErrorsMissingPreset(t *testing.T) {
	runErrCases(t, []errCase{
		{"empty document", "", nil, "test.yaml:1:1: hardware.preset: required (presets: inf2, trn1, trn2, trn3)"},
		{"comment only", y("# nothing here"), nil, "test.yaml:1:1: hardware.preset: required (presets: inf2, trn1, trn2, trn3)"},
		{"no hardware section", y(gemm...), nil, "test.yaml:1:1: hardware.preset: required (presets: inf2, trn1, trn2, trn3)"},
		{"hardware without preset", withGEMM(
			"hardware:",
			"  chips: 2",
		), nil, "test.yaml:2:3: hardware.preset: required (presets: inf2, trn1, trn2, trn3)"},
		{"empty hardware", withGEMM(
			"hardware:",
		), nil, "test.yaml:1:10: hardware.preset: required (presets: inf2, trn1, trn2, trn3)"},
		{"empty preset", withGEMM(
			"hardware:",
			"  preset: \"\"",
		), nil, "test.yaml:2:3: hardware.preset: required (presets: inf2, trn1, trn2, trn3)"},
	})
}

func TestLoadErrorsUnknownPreset(t *testing.T) {
	runErrCases(t, []errCase{
		{"misspelt", withGEMM(
			"hardware:",
			"  preset: trn4",
		), nil, "test.yaml:2:11: hardware.preset: unknown preset \"trn4\" (presets: inf2, trn1, trn2, trn3)"},
		{"path", withGEMM(
			"hardware:",
			"  preset: costs/nc-v2",
		), nil, "test.yaml:2:11: hardware.preset: unknown preset \"costs/nc-v2\" (presets: inf2, trn1, trn2, trn3)"},
		{"not a string", withGEMM(
			"hardware:",
			"  preset: 2",
		), nil, "test.yaml:2:11: hardware.preset: expected a preset name, got \"2\""},
		{"a list", withGEMM(
			"hardware:",
			"  preset: [trn2]",
		), nil, "test.yaml:2:11: hardware.preset: expected a preset name, got a list"},
		{"by --set", withGEMM(
			"hardware:",
			"  preset: trn2",
		), []string{"hardware.preset=trn9"}, "--set hardware.preset=trn9: unknown preset \"trn9\" (presets: inf2, trn1, trn2, trn3)"},
		{"by --set without file preset", y(gemm...), []string{"hardware.preset=trn9"}, "--set hardware.preset=trn9: unknown preset \"trn9\" (presets: inf2, trn1, trn2, trn3)"},
		{"non-string by --set", withGEMM(
			"hardware:",
			"  preset: trn2",
		), []string{"hardware.preset=2"}, "--set hardware.preset=2: expected a preset name, got \"2\""},
		{"unknown cost table", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  cost_table: nc-v9",
		), nil, "test.yaml:3:15: hardware.cost_table: unknown cost table \"nc-v9\" (tables: nc-v2, nc-v3, nc-v4)"},
	})
}

func TestLoadErrorsCrossField(t *testing.T) {
	runErrCases(t, []errCase{
		{"psum banks do not divide", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    psum: {banks: 3}",
		), nil, "test.yaml:4:19: hardware.core.psum.banks: 3 banks do not divide 16 KiB evenly"},
		{"dma engines do not divide partitions", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    dma: {engines: 12}",
		), nil, "test.yaml:4:20: hardware.core.dma.engines: 12 engines must divide the 128 partitions evenly (each engine serves a block of partitions)"},
		{"more dma engines than partitions", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    dma: {engines: 256}",
		), nil, "test.yaml:4:20: hardware.core.dma.engines: 256 engines must divide the 128 partitions evenly (each engine serves a block of partitions)"},
		{"moving_free_max exceeds a psum bank", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    tensor: {moving_free_max: 1024}",
		), nil, "test.yaml:4:31: hardware.core.tensor.moving_free_max: 1024 FP32 results do not fit one 2048-byte PSUM bank (psum.partition_kib 16 / psum.banks 8; set matmul_may_cross_banks to allow it)"},
		{"fewer psum banks make moving_free_max too large", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    psum: {banks: 16}",
		), nil, "preset trn2: hardware.core.tensor.moving_free_max: 512 FP32 results do not fit one 1024-byte PSUM bank (psum.partition_kib 16 / psum.banks 16; set matmul_may_cross_banks to allow it)"},
		{"arbitration", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    dma: {arbitration: fifo}",
		), nil, "test.yaml:4:24: hardware.core.dma.arbitration: must be round_robin or qos, got \"fifo\""},
		{"qos without classes", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    dma: {arbitration: qos}",
		), nil, "preset trn2: hardware.core.dma.qos_classes: qos arbitration needs at least one class"},
		{"array rows exceed partitions", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    tensor: {array_rows: 256}",
		), nil, "test.yaml:4:26: hardware.core.tensor.array_rows: 256 rows exceed the 128 SBUF partitions the contraction runs over"},
		{"array cols exceed partitions", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    tensor: {array_cols: 256}",
		), nil, "test.yaml:4:26: hardware.core.tensor.array_cols: 256 columns exceed the 128 PSUM partitions the output lands in"},
		{"generation", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  generation: 7",
		), nil, "test.yaml:3:15: hardware.generation: must be 2 (NeuronCore-v2), 3 or 4, got 7"},
		{"hardware dge without time", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    dma: {hardware_dge_ns: 0}",
		), nil, "test.yaml:4:28: hardware.core.dma.hardware_dge_ns: must be greater than 0 when hardware_dge_blocks is set"},
		{"positive stride_min", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    access_pattern: {stride_min: 4}",
		), nil, "test.yaml:4:34: hardware.core.access_pattern.stride_min: must not be positive, got 4"},
		{"topology moved", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  chip:",
			"    links: {topology: mesh}",
		), nil, "test.yaml:4:13: hardware.chip.links.topology: unknown field: moved: the chips' arrangement is hardware.topology.kind (none, ring, 2d_torus, 3d_torus, switched, custom), set by instances"},
		{"topology kind", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  topology: {kind: mesh}",
		), nil, "test.yaml:3:20: hardware.topology.kind: must be one of none, ring, 2d_torus, 3d_torus, switched, custom, got \"mesh\""},
		{"torus dims do not make the chips", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  chips: 8",
			"  topology: {kind: 2d_torus, dims: [3, 3]}",
		), nil, "test.yaml:4:36: hardware.topology.dims: dims [3 3] make 9 chips, but a node has 8 (hardware.chips 8 / hardware.nodes 1)"},
		{"dims of a switch", withGEMM(
			"hardware:",
			"  preset: trn3",
			"  chips: 4",
			"  topology: {kind: switched, dims: [4]}",
		), nil, "test.yaml:4:36: hardware.topology.dims: only ring, 2d_torus and 3d_torus take dims, not switched"},
		{"custom link outside the node", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  chips: 2",
			"  topology: {kind: custom, links: [{a: 0, b: 2}]}",
		), nil, "test.yaml:4:35: hardware.topology.links: link 0 joins chips 0 and 2; a node has chips 0 to 1 and a link joins two different chips"},
		{"custom topology not connected", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  chips: 3",
			"  topology: {kind: custom, links: [{a: 0, b: 1}]}",
		), nil, "test.yaml:4:35: hardware.topology.links: chip 2 is not connected to chip 0 by the custom topology's links (every chip of a node must reach every other)"},
		{"instance and preset disagree", withGEMM(
			"hardware:",
			"  preset: trn1",
			"  instance: trn2.48xlarge",
		), nil, "test.yaml:2:11: hardware.preset: trn1 does not match hardware.instance trn2.48xlarge, whose chips are trn2 (leave hardware.preset out: the instance implies it)"},
		{"instance and chips disagree", withGEMM(
			"hardware:",
			"  instance: trn2.48xlarge",
			"  nodes: 2",
			"  chips: 16",
		), nil, "test.yaml:4:10: hardware.chips: 16 chips do not match hardware.instance trn2.48xlarge x hardware.nodes 2 = 32 chips (leave hardware.chips out: the instance implies it)"},
		{"unknown instance", withGEMM(
			"hardware:",
			"  instance: trn2.96xlarge",
		), nil, "test.yaml:2:13: hardware.instance: unknown instance \"trn2.96xlarge\" (instances: inf2.24xlarge, inf2.48xlarge, inf2.8xlarge, inf2.xlarge, trn1.2xlarge, trn1.32xlarge, trn1n.32xlarge, trn2-ultraserver, trn2.48xlarge, trn2u.48xlarge, trn3-ultraserver)"},
		{"nodes without a network", withGEMM(
			"hardware:",
			"  instance: inf2.48xlarge",
			"  nodes: 2",
		), nil, "test.yaml:3:10: hardware.nodes: 2 nodes need an EFA network between them, but hardware.efa.chip_bandwidth_gbps is 0 (inf2.48xlarge has none)"},
		{"lnc on NeuronCore-v2", withGEMM(
			"hardware:",
			"  preset: trn1",
			"  chip: {lnc: 2}",
		), nil, "test.yaml:3:15: hardware.chip.lnc: logical cores of 2 physical cores exist on Trainium2 and later (NeuronCore-v3+), not on NeuronCore-v2"},
		{"nodes do not divide the chips", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  chips: 3",
			"  nodes: 2",
		), nil, "test.yaml:3:10: hardware.chips: 2 nodes do not divide hardware.chips 3 evenly"},
		{"empty name", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  name: \"\"",
		), nil, "test.yaml:3:9: hardware.name: must not be empty"},
		{"core count overflows", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  chips: 4611686018427387904",
			"  chip: {cores: 4}",
		), nil, "test.yaml:3:10: hardware.chips: more than 1024 chips is not supported (routes between every pair of chips are kept), got 4611686018427387904"},
		{"too many cores", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  chips: 100000",
		), nil, "test.yaml:3:10: hardware.chips: more than 1024 chips is not supported (routes between every pair of chips are kept), got 100000"},
	})
}

func TestLoadErrorsDuplicateKey(t *testing.T) {
	runErrCases(t, []errCase{
		{"top-level section", y(
			"hardware: {preset: trn2}",
			"hardware: {preset: trn1}",
		), nil, "test.yaml:2:1: hardware: given twice"},
		{"nested field", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  core:",
			"    sbuf:",
			"      partition_kib: 192",
			"      partition_kib: 256",
		), nil, "test.yaml:6:7: hardware.core.sbuf.partition_kib: given twice"},
		{"flow mapping", withGEMM(
			"hardware: {preset: trn2, preset: trn1}",
		), nil, "test.yaml:1:26: hardware.preset: given twice"},
		{"workload field", y(
			"hardware: {preset: trn2}",
			"workload:",
			"  kind: gemm",
			"  gemm: {m: 128, k: 128, n: 128, m: 256}",
		), nil, "test.yaml:4:34: workload.gemm.m: given twice"},
		{"--set given twice", withGEMM(
			"hardware: {preset: trn2}",
		), []string{"hardware.chips=2", "hardware.chips=3"}, "--set hardware.chips=3: given twice"},
	})
}

func TestLoadErrorsParallel(t *testing.T) {
	model := func(hw string, lines ...string) string {
		return y(append([]string{hw, "workload: {kind: model, model: {name: llama-3-8b, mode: decode, context: 128, layers: 1}}"}, lines...)...)
	}
	runErrCases(t, []errCase{
		{"unknown field", model("hardware: {preset: trn2}",
			"parallel:",
			"  data: 2",
		), nil, "test.yaml:4:3: parallel.data: unknown field (known fields of parallel: collective_algorithm, replicas, tp)"},
		{"scalar", model("hardware: {preset: trn2}",
			"parallel: data",
		), nil, "test.yaml:3:11: parallel: expected a mapping, got \"data\""},
		{"zero tp", model("hardware: {preset: trn2}",
			"parallel: {tp: 0}",
		), nil, "test.yaml:3:16: parallel.tp: must be greater than 0, got 0"},
		{"more ranks than cores", model("hardware: {instance: trn1.32xlarge}",
			"parallel: {tp: 32, replicas: 2}",
		), nil, "test.yaml:3:30: parallel.replicas: tp 32 x replicas 2 = 64 logical cores, but the hardware has 32 (hardware.chips 16 x 2 cores / lnc 1): 32 short"},
		{"logical cores at lnc 2", model("hardware: {preset: trn2}",
			"parallel: {tp: 8}",
		), nil, "test.yaml:3:16: parallel.tp: tp 8 x replicas 1 = 8 logical cores, but the hardware has 4 (hardware.chips 1 x 8 cores / lnc 2): 4 short"},
		{"unknown algorithm", model("hardware: {preset: trn2}",
			"parallel: {collective_algorithm: tree}",
		), nil, "test.yaml:3:34: parallel.collective_algorithm: must be one of auto, ring, rdh, mesh, got \"tree\""},
		{"a kernel workload", withGEMM(
			"hardware: {preset: trn2}",
			"parallel: {tp: 2}",
		), nil, "test.yaml:2:16: parallel.tp: tensor parallelism and replicas apply to model workloads; workload.kind is gemm (kernels name their cores themselves)"},
		{"by --set", model("hardware: {preset: trn2}"), []string{"parallel.tp=16"}, "--set parallel.tp=16: tp 16 x replicas 1 = 16 logical cores, but the hardware has 4 (hardware.chips 1 x 8 cores / lnc 2): 12 short"},
	})
}

func TestLoadErrorsWorkload(t *testing.T) {
	hw := "hardware: {preset: trn2}"
	runErrCases(t, []errCase{
		{"no workload section", y(hw), nil, "test.yaml: workload.kind: required (kinds: gemm, elementwise, assembly, tile, model, op)"},
		{"missing kind", y(hw,
			"workload:",
			"  gemm: {m: 128, k: 128, n: 128}",
		), nil, "test.yaml:3:3: workload.kind: required (kinds: gemm, elementwise, assembly, tile, model, op)"},
		{"unknown kind", y(hw,
			"workload:",
			"  kind: conv2d",
		), nil, "test.yaml:3:9: workload.kind: unsupported workload kind \"conv2d\" (kinds: gemm, elementwise, assembly, tile, model, op)"},
		{"section mismatch", y(hw,
			"workload:",
			"  kind: gemm",
			"  gemm: {m: 128, k: 128, n: 128}",
			"  elementwise: {op: exp, rows: 128, cols: 128}",
		), nil, "test.yaml:3:9: workload.kind: workload.elementwise is given but kind is \"gemm\""},
		{"kind without its section", y(hw,
			"workload:",
			"  kind: elementwise",
		), nil, "test.yaml:3:9: workload.kind: kind \"elementwise\" needs a workload.elementwise section"},
		{"missing m", y(hw,
			"workload:",
			"  kind: gemm",
			"  gemm: {k: 128, n: 128}",
		), nil, "test.yaml:4:9: workload.gemm.m: required"},
		{"missing k", y(hw,
			"workload:",
			"  kind: gemm",
			"  gemm:",
			"    m: 128",
			"    n: 128",
		), nil, "test.yaml:5:5: workload.gemm.k: required"},
		{"missing n", y(hw,
			"workload:",
			"  kind: gemm",
			"  gemm: {m: 128, k: 128}",
		), nil, "test.yaml:4:9: workload.gemm.n: required"},
		{"unknown dtype", y(hw,
			"workload:",
			"  kind: gemm",
			"  gemm: {m: 128, k: 128, n: 128, dtype: bf17}",
		), nil, "test.yaml:4:41: workload.gemm.dtype: unknown dtype \"bf17\" (dtypes: fp32, bf16, fp16, tf32, fp8e4, fp8e5, fp8e3, int32, uint32, int16, uint16, int8, uint8)"},
		{"integer dtype", y(hw,
			"workload:",
			"  kind: gemm",
			"  gemm: {m: 128, k: 128, n: 128, dtype: int8}",
		), nil, "test.yaml:4:41: workload.gemm.dtype: must be a floating-point dtype, got int8"},
		{"unknown out_dtype", y(hw,
			"workload:",
			"  kind: gemm",
			"  gemm: {m: 128, k: 128, n: 128, out_dtype: fp64}",
		), nil, "test.yaml:4:45: workload.gemm.out_dtype: unknown dtype \"fp64\" (dtypes: fp32, bf16, fp16, tf32, fp8e4, fp8e5, fp8e3, int32, uint32, int16, uint16, int8, uint8)"},
		{"bad a_layout", y(hw,
			"workload:",
			"  kind: gemm",
			"  gemm: {m: 128, k: 128, n: 128, a_layout: nm}",
		), nil, "test.yaml:4:44: workload.gemm.a_layout: must be km (A stored as [K, M]) or mk (A stored as [M, K]), got \"nm\""},
		{"unknown elementwise op", y(hw,
			"workload:",
			"  kind: elementwise",
			"  elementwise: {op: softmax, rows: 128, cols: 128}",
		), nil, "test.yaml:4:21: workload.elementwise.op: unsupported op \"softmax\" (ops: exp, gelu, silu, relu, tanh, sigmoid, copy, square, sqrt, rsqrt, add, subtract, multiply, max)"},
		{"missing elementwise op", y(hw,
			"workload:",
			"  kind: elementwise",
			"  elementwise: {rows: 128, cols: 128}",
		), nil, "test.yaml:4:16: workload.elementwise.op: required (ops: exp, gelu, silu, relu, tanh, sigmoid, copy, square, sqrt, rsqrt, add, subtract, multiply, max)"},
		{"missing rows", y(hw,
			"workload:",
			"  kind: elementwise",
			"  elementwise: {op: exp, cols: 128}",
		), nil, "test.yaml:4:16: workload.elementwise.rows: required"},
		{"unknown elementwise dtype", y(hw,
			"workload:",
			"  kind: elementwise",
			"  elementwise: {op: exp, rows: 128, cols: 128, dtype: half}",
		), nil, "test.yaml:4:55: workload.elementwise.dtype: unknown dtype \"half\" (dtypes: fp32, bf16, fp16, tf32, fp8e4, fp8e5, fp8e3, int32, uint32, int16, uint16, int8, uint8)"},
		{"unknown engine", y(hw,
			"workload:",
			"  kind: elementwise",
			"  elementwise: {op: exp, rows: 128, cols: 128, engine: tensor}",
		), nil, "test.yaml:4:56: workload.elementwise.engine: must be scalar, vector or gpsimd, got \"tensor\""},
		{"binary op on scalar", y(hw,
			"workload:",
			"  kind: elementwise",
			"  elementwise: {op: add, rows: 128, cols: 128, engine: scalar}",
		), nil, "test.yaml:4:56: workload.elementwise.engine: ScalarE reads one input tensor; add needs vector or gpsimd"},
		{"activation on vector", y(hw,
			"workload:",
			"  kind: elementwise",
			"  elementwise: {op: gelu, rows: 128, cols: 128, engine: vector}",
		), nil, "test.yaml:4:57: workload.elementwise.engine: activation functions run on scalar, not vector"},
		{"missing assembly file", y(hw,
			"workload:",
			"  kind: assembly",
			"  assembly: {file: no-such-kernel.s}",
		), nil, "test.yaml:4:20: workload.assembly.file: no-such-kernel.s: no such file"},
		{"assembly without file", y(hw,
			"workload:",
			"  kind: assembly",
			"  assembly: {}",
		), nil, "test.yaml:4:13: workload.assembly.file: required (or give the text in workload.assembly.source)"},
		{"assembly file and source", y(hw,
			"workload:",
			"  kind: assembly",
			"  assembly: {file: k.s, source: \".version 1\"}",
		), nil, "test.yaml:4:33: workload.assembly.source: give the assembly in file or in source, not both"},
		{"bad dge", y(hw,
			"workload:",
			"  kind: gemm",
			"  gemm: {m: 128, k: 128, n: 128}",
			"  lowering: {dge: sw}",
		), nil, "test.yaml:5:19: workload.lowering.dge: must be none, hw or auto, got \"sw\""},
		{"hardware dge on trn1", y(
			"hardware: {preset: trn1}",
			"workload:",
			"  kind: gemm",
			"  gemm: {m: 128, k: 128, n: 128}",
			"  lowering: {dge: hw}",
		), nil, "test.yaml:5:19: workload.lowering.dge: hardware DGE needs NeuronCore-v3 or later (this hardware has no DGE blocks)"},
		{"bad evacuate", y(hw,
			"workload:",
			"  kind: gemm",
			"  gemm: {m: 128, k: 128, n: 128}",
			"  lowering: {evacuate: gpsimd}",
		), nil, "test.yaml:5:24: workload.lowering.evacuate: must be vector, scalar, alternate or auto, got \"gpsimd\""},
		{"bad dequantize", y(hw,
			"workload:",
			"  kind: gemm",
			"  gemm: {m: 128, k: 128, n: 128, weights_dtype: int8}",
			"  lowering: {dequantize: tensor}",
		), nil, "test.yaml:5:26: workload.lowering.dequantize: must be vector, scalar, gpsimd, alternate, alternate_scalar, auto, got \"tensor\""},
		{"dequantize without quantised weights", y(hw,
			"workload:",
			"  kind: gemm",
			"  gemm: {m: 128, k: 128, n: 128}",
			"  lowering: {dequantize: scalar}",
		), nil, "test.yaml:5:26: workload.lowering.dequantize: converts quantised weights; set workload.gemm.weights_dtype (int8, fp8e4, ...) too"},
		{"bad weights dtype", y(hw,
			"workload:",
			"  kind: gemm",
			"  gemm: {m: 128, k: 128, n: 128, weights_dtype: int16}",
		), nil, "test.yaml:4:49: workload.gemm.weights_dtype: quantised weights are int8, fp8e4, fp8e5, fp8e3 (or dtype, bf16, for none), got \"int16\""},
		{"quantised weights of fp8 matmuls", y(hw,
			"workload:",
			"  kind: gemm",
			"  gemm: {m: 128, k: 128, n: 128, dtype: fp8e5, weights_dtype: int8}",
		), nil, "test.yaml:4:63: workload.gemm.weights_dtype: quantised weights are dequantised to bf16, fp16 or fp32, not dtype fp8e5"},
		{"quantised weights in a batch", y(hw,
			"workload:",
			"  kind: gemm",
			"  gemm: {m: 128, k: 128, n: 128, batch: 2, weights_dtype: int8}",
		), nil, "test.yaml:4:59: workload.gemm.weights_dtype: quantised weights (and their scales) take one GEMM, not a batch of 2"},
		{"dequantize for a model", y(hw,
			"workload:",
			"  kind: model",
			"  model: {name: gpt2, mode: prefill, seq: 8, weights_dtype: int8}",
			"  lowering: {dequantize: scalar}",
		), nil, "test.yaml:5:26: workload.lowering.dequantize: model workloads do not read it (it reads dge, dma_queues)"},
	})
}

func TestLoadErrorsCostOverrides(t *testing.T) {
	costs := func(lines ...string) string {
		return withGEMM(append([]string{"hardware:", "  preset: trn2", "  costs:"}, lines...)...)
	}
	runErrCases(t, []errCase{
		{"unknown opcode", costs(
			"    vector:",
			"      tensor_frobnicate:",
			"        default: {interval: \"N\"}",
		), nil, "test.yaml:5:7: hardware.costs.vector.tensor_frobnicate: unknown opcode \"tensor_frobnicate\""},
		{"opcode on the wrong engine", costs(
			"    scalar:",
			"      multiply_moving:",
			"        default: {interval: \"N\"}",
		), nil, "test.yaml:5:7: hardware.costs.scalar.multiply_moving: multiply_moving does not run on scalar"},
		{"unknown engine", costs(
			"    dma:",
			"      dma_copy:",
			"        default: {interval: \"N\"}",
		), nil, "test.yaml:4:5: hardware.costs.dma: unknown field (known: constants, tensor, vector, scalar, gpsimd, sync, any)"},
		{"unknown condition", costs(
			"    vector:",
			"      tensor_copy:",
			"        turbo: {when: [bf16], interval: \"N/8\"}",
		), nil, "test.yaml:6:16: hardware.costs.vector.tensor_copy.turbo.when[0]: unknown condition \"bf16\" (conditions: accumulate, add_max, fp32, fp8, half, hbm, int8, large_stride, mixed_in, n_even, perf2, perf4, psum_in, psum_out, sbuf_only, simple_alu, sub_mul, unit_stride, zero)"},
		{"bad expression", costs(
			"    vector:",
			"      tensor_copy:",
			"        default: {interval: \"max(MIN_II, N\"}",
		), nil, "test.yaml:6:29: hardware.costs.vector.tensor_copy.default.interval: expression \"max(MIN_II, N\", column 14: expected \",\" or \")\" in call to max, got \"end of expression\""},
		{"unknown name in expression", costs(
			"    vector:",
			"      tensor_copy:",
			"        default:",
			"          interval: \"max(MIN_II, M)\"",
		), nil, "test.yaml:7:21: hardware.costs.vector.tensor_copy.default.interval: expression \"max(MIN_II, M)\", column 13: unknown name \"M\" (variables: N, P, NS, NOUT, K, BYTES, I; or a constant of the cost table)"},
		{"bad latency", costs(
			"    scalar:",
			"      activation:",
			"        default: {latency: \"I +\"}",
		), nil, "test.yaml:6:28: hardware.costs.scalar.activation.default.latency: expression \"I +\", column 4: expression ends early"},
		{"interval uses I", costs(
			"    vector:",
			"      tensor_copy:",
			"        default: {interval: \"I\"}",
		), nil, "test.yaml:6:29: hardware.costs.vector.tensor_copy.default.interval: I (the interval) can only be used in a latency"},
		{"new variant without interval", costs(
			"    vector:",
			"      tensor_copy:",
			"        turbo: {when: [half], latency: \"I\"}",
		), nil, "test.yaml:6:16: hardware.costs.vector.tensor_copy.turbo.interval: required for a new variant"},
		{"last variant with a condition", costs(
			"    vector:",
			"      tensor_copy:",
			"        default: {when: [half]}",
		), nil, "test.yaml:5:7: hardware.costs.vector.tensor_copy: the last variant (default) must have no conditions, so every instruction is costed"},
		{"bad variant name", costs(
			"    vector:",
			"      tensor_copy:",
			"        Turbo: {interval: \"N\"}",
		), nil, "test.yaml:6:9: hardware.costs.vector.tensor_copy.Turbo: variant names are lower_case letters, digits and underscores"},
		{"unknown variant field", costs(
			"    vector:",
			"      tensor_copy:",
			"        default: {cycles: \"N\"}",
		), nil, "test.yaml:6:19: hardware.costs.vector.tensor_copy.default.cycles: unknown field (known fields of hardware.costs.vector.tensor_copy.default: interval, latency, source, tag, when)"},
		{"bad variant tag", costs(
			"    vector:",
			"      tensor_copy:",
			"        default: {interval: \"N\", tag: X}",
		), nil, "test.yaml:6:18: hardware.costs.vector.tensor_copy.default.tag: \"X\" is not one of C, I, 3P, R, U, F"},
		{"bad constant name", costs(
			"    constants:",
			"      min_ii: {value: 32}",
		), nil, "test.yaml:5:7: hardware.costs.constants.min_ii: constant names are UPPER_CASE letters, digits and underscores"},
		{"new constant without value", costs(
			"    constants:",
			"      MY_CONST: {source: \"guess\"}",
		), nil, "test.yaml:5:17: hardware.costs.constants.MY_CONST.value: required for a new constant"},
		{"negative constant", costs(
			"    constants:",
			"      MIN_II: {value: -1}",
		), nil, "test.yaml:5:15: hardware.costs.constants.MIN_II.value: must not be negative, got -1"},
		{"bad constant tag", costs(
			"    constants:",
			"      MIN_II: {value: 32, tag: maybe}",
		), nil, "test.yaml:5:15: hardware.costs.constants.MIN_II.tag: \"maybe\" is not one of C, I, 3P, R, U, F"},
		{"constant reserved for a variable", costs(
			"    constants:",
			"      NS: {value: 32}",
		), nil, "test.yaml:5:7: hardware.costs.constants.NS: name is reserved for a variable"},
		{"stride penalty below one", costs(
			"    constants:",
			"      STRIDE_PENALTY:",
			"        value: 0.5",
		), nil, "test.yaml:5:7: hardware.costs.constants.STRIDE_PENALTY: must be >= 1, got 0.5"},
		{"constant value not a number", costs(
			"    constants:",
			"      MIN_II: {value: lots}",
		), nil, "test.yaml:5:23: hardware.costs.constants.MIN_II.value: expected a number, got \"lots\""},
		{"unknown costs section", costs(
			"    rules: {}",
		), nil, "test.yaml:4:5: hardware.costs.rules: unknown field (known: constants, tensor, vector, scalar, gpsimd, sync, any)"},
		{"base in a run config", costs(
			"    base: nc-v2",
		), nil, "test.yaml:4:5: hardware.costs.base: unknown field; a run config cannot change a cost table's base (set hardware.cost_table instead)"},
		{"costs not a mapping", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  costs: [1]",
		), nil, "test.yaml:3:10: hardware.costs: expected a mapping, got a list"},
		{"bad expression by --set", withGEMM(
			"hardware: {preset: trn2}",
		), []string{"hardware.costs.vector.tensor_copy.default.interval=N+"}, "--set hardware.costs.vector.tensor_copy.default.interval=N+: expression \"N+\", column 3: expression ends early"},
		{"bad --set expression next to file overrides", costs(
			"    constants:",
			"      MIN_II: {value: 32}",
		), []string{"hardware.costs.vector.tensor_copy.default.interval=N+"}, "--set hardware.costs.vector.tensor_copy.default.interval=N+: expression \"N+\", column 3: expression ends early"},
		{"bad file expression next to --set overrides", costs(
			"    vector:",
			"      tensor_copy:",
			"        default: {interval: \"N+\"}",
		), []string{"hardware.costs.constants.MIN_II.value=32"}, "test.yaml:6:29: hardware.costs.vector.tensor_copy.default.interval: expression \"N+\", column 3: expression ends early"},
	})
}

func TestLoadErrorsSets(t *testing.T) {
	ok := withGEMM("hardware: {preset: trn2}")
	runErrCases(t, []errCase{
		{"no equals sign", ok, []string{"hardware.chips"}, "--set hardware.chips: expected dotted.path=value"},
		{"empty path", ok, []string{"=3"}, "--set =3: expected dotted.path=value"},
		{"unknown section", ok, []string{"hw.chips=2"}, "--set hw.chips=2: unknown section \"hw\" (sections: hardware, workload, parallel, outputs, cost)"},
		{"empty path element", ok, []string{"hardware..chips=2"}, "--set hardware..chips=2: empty path element"},
		{"conflicting paths", ok, []string{"hardware.chip=2", "hardware.chip.cores=2"}, "--set hardware.chip.cores=2: conflicts with another --set"},
		{"unknown field", ok, []string{"hardware.core.sbuf.partition_kb=256"}, "--set hardware.core.sbuf.partition_kb=256: unknown field (known fields of hardware.core.sbuf: partition_kib, partitions)"},
		{"wrong type", ok, []string{"hardware.core.sbuf.partition_kib=big"}, "--set hardware.core.sbuf.partition_kib=big: expected an integer, got \"big\""},
		{"check tag", ok, []string{"hardware.core.sbuf.partition_kib=-1"}, "--set hardware.core.sbuf.partition_kib=-1: must be greater than 0, got -1"},
		{"cross-field rule", ok, []string{"hardware.core.psum.banks=3"}, "--set hardware.core.psum.banks=3: 3 banks do not divide 16 KiB evenly"},
		{"workload kind", ok, []string{"workload.kind=conv"}, "--set workload.kind=conv: unsupported workload kind \"conv\" (kinds: gemm, elementwise, assembly, tile, model, op)"},
		{"section given a value", ok, []string{"hardware=trn2"}, "--set hardware=trn2: expected a mapping, got \"trn2\""},
		{"workload field", ok, []string{"workload.gemm.m=lots"}, "--set workload.gemm.m=lots: expected an integer, got \"lots\""},
		// The rule names the field the --set changed, not hardware.chips
		// from the preset.
		{"cores per chip", ok, []string{"hardware.chip.cores=100000"}, "--set hardware.chip.cores=100000: more than 65536 cores per chip is not supported, got 100000"},
		{"cores in total, cores set", ok, []string{"hardware.chip.cores=40000", "hardware.chips=2"}, "--set hardware.chip.cores=40000: 2 chips x 40000 cores = 80000 cores in total; more than 65536 is not supported"},
		{"cores in total, chips set", ok, []string{"hardware.chips=1000", "hardware.chip.cores=100"}, "--set hardware.chip.cores=100: 1000 chips x 100 cores = 100000 cores in total; more than 65536 is not supported"},
		{"spaces around the value", ok, []string{" hardware.chip.cores = 0 "}, "--set hardware.chip.cores=0: must be greater than 0, got 0"},
		{"value given as a mapping", ok, []string{"hardware.core.sbuf={partitions: 0}"}, "--set hardware.core.sbuf={partitions: 0}: hardware.core.sbuf.partitions: must be greater than 0, got 0"},
		{"kind conflict blames the --set section", ok, []string{"workload.elementwise.op=exp"}, "--set workload.elementwise.op=exp: workload.elementwise is given but kind is \"gemm\""},
	})
}

func TestLoadErrorsRemovedFields(t *testing.T) {
	ok := withGEMM("hardware: {preset: trn2}")
	runErrCases(t, []errCase{
		{"dma bandwidth in the file", withGEMM(
			"hardware:",
			"  preset: trn2",
			"  chip: {dma_bandwidth_gbps: 100}",
		), nil, "test.yaml:3:10: hardware.chip.dma_bandwidth_gbps: unknown field: removed: nothing read it; the simulated DMA bandwidth is hardware.core.dma.engines x engine_bandwidth_gbps per core, bounded by hardware.chip.hbm.bandwidth_gbps"},
		{"chip peak by --set", ok, []string{"hardware.chip.peak_bf16_tflops=1000"}, "--set hardware.chip.peak_bf16_tflops=1000: unknown field: removed: nothing read it; the peak is the array arithmetic, hardware.core.tensor.array_rows x array_cols x 2 FLOP x clock_ghz per core"},
		{"fp8 rate by --set", ok, []string{"hardware.core.tensor.fp8_rate=2"}, "--set hardware.core.tensor.fp8_rate=2: unknown field: removed: an FP8 matmul's rate follows its mode, the BF16 rate normally and 2x in double-row mode (perf=2, where hardware.core.tensor.fp8_double_row is true)"},
	})
}

// A later stage's error about a field set by --set quotes the --set.
func TestFieldErrorNamesTheSet(t *testing.T) {
	cfg, err := configs.LoadBytes([]byte(withGEMM("hardware: {preset: trn2}")), "test.yaml",
		configs.LoadOptions{Sets: []string{"workload.lowering.tile_n=4096", "hardware.core.sbuf.partition_kib=1"}})
	require.NoError(t, err)
	assert.Equal(t, "--set workload.lowering.tile_n=4096: 4096 exceeds 512",
		cfg.FieldError("workload.lowering.tile_n", "4096 exceeds 512").Error())
	assert.Equal(t, "--set hardware.core.sbuf.partition_kib=1: too small",
		cfg.FieldError("hardware.core.sbuf.partition_kib", "too small").Error())
	assert.Equal(t, "test.yaml:4:13: workload.gemm.m: odd", cfg.FieldError("workload.gemm.m", "odd").Error())
	assert.Equal(t, "preset trn2: hardware.chips: odd", cfg.FieldError("hardware.chips", "odd").Error())
}

func TestLoadErrorsMissingFile(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.yaml")
	_, err := configs.Load(missing, configs.LoadOptions{})
	require.Error(t, err)
	assert.Equal(t, missing+": no such file", err.Error())

	_, err = configs.Load(dir, configs.LoadOptions{})
	require.Error(t, err)
	assert.Equal(t, dir+": cannot read: is a directory", err.Error())

	// A file that loads gives its own path in errors.
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte(y("hardware: {preset: trn9}")), 0o644))
	_, err = configs.Load(bad, configs.LoadOptions{})
	require.Error(t, err)
	assert.Equal(t, bad+":1:20: hardware.preset: unknown preset \"trn9\" (presets: inf2, trn1, trn2, trn3)", err.Error())
}

func TestModelWorkloadErrors(t *testing.T) {
	model := func(fields string) string {
		return "hardware: {preset: trn2}\nworkload:\n  kind: model\n  model: {" + fields + "}\n"
	}
	runErrCases(t, []errCase{
		{"no model", model("mode: prefill, seq: 8"), nil, "test.yaml:4:10: workload.model.name: required (a zoo model, see trnsim models; or give hf_config: a config.json)"},
		{"both", model("name: gpt2, hf_config: c.json, mode: prefill, seq: 8"), nil, "test.yaml:4:34: workload.model.hf_config: give name or hf_config, not both"},
		{"missing config.json", model("hf_config: nope.json, mode: prefill, seq: 8"), nil, "test.yaml:4:22: workload.model.hf_config: nope.json: no such file"},
		{"no mode", model("name: gpt2"), nil, "test.yaml:4:10: workload.model.mode: required (prefill or decode)"},
		{"bad mode", model("name: gpt2, mode: generate"), nil, "test.yaml:4:29: workload.model.mode: must be prefill or decode, got \"generate\""},
		{"train", model("name: gpt2, mode: train"), nil, "test.yaml:4:29: workload.model.mode: train comes with the training issue; modes: prefill, decode"},
		{"prefill without seq", model("name: gpt2, mode: prefill"), nil, "test.yaml:4:10: workload.model.seq: required (the prompt length)"},
		{"prefill with context", model("name: gpt2, mode: prefill, seq: 8, context: 4"), nil, "test.yaml:4:55: workload.model.context: is for decode; prefill reads seq"},
		{"decode without context", model("name: gpt2, mode: decode"), nil, "test.yaml:4:10: workload.model.context: required (the KV-cache length when decoding starts)"},
		{"decode with context 0", model("name: gpt2, mode: decode, context: 0"), nil, "test.yaml:4:46: workload.model.context: must be greater than 0 (the KV-cache length when decoding starts), got 0"},
		{"decode with context 0 by --set", model("name: gpt2, mode: decode, context: 8"), []string{"workload.model.context=0"}, "--set workload.model.context=0: must be greater than 0 (the KV-cache length when decoding starts), got 0"},
		{"batch 0", model("name: gpt2, mode: decode, context: 8, batch: 0"), nil, "test.yaml:4:56: workload.model.batch: must be greater than 0, got 0 (leave it out for 1)"},
		{"tokens 0", model("name: gpt2, mode: decode, context: 8, tokens: 0"), nil, "test.yaml:4:57: workload.model.tokens: must be greater than 0, got 0 (leave it out for 1)"},
		{"decode with seq", model("name: gpt2, mode: decode, context: 8, seq: 4"), nil, "test.yaml:4:54: workload.model.seq: is for prefill; decode reads context and tokens"},
		{"negative batch", model("name: gpt2, mode: decode, context: 8, batch: -1"), nil, "test.yaml:4:56: workload.model.batch: must not be negative, got -1"},
		{"weights dtype", model("name: gpt2, mode: decode, context: 8, weights_dtype: fp4"), nil, "test.yaml:4:64: workload.model.weights_dtype: must be bf16, fp8e4 or int8, got \"fp4\""},
		{"unknown field", model("name: gpt2, mode: decode, context: 8, heads: 4"), nil, "test.yaml:4:49: workload.model.heads: unknown field (known fields of workload.model: batch, context, exact, gpu_calibration, gpu_plan, gpus, hf_config, layers, mode, name, routing_skew, seq, tokens, weights_dtype)"},
		{"lowering field not read", "hardware: {preset: trn2}\nworkload:\n  kind: model\n  model: {name: gpt2, mode: decode, context: 8}\n  lowering: {block_m: 256}\n", nil, "test.yaml:5:23: workload.lowering.block_m: model workloads do not read it (it reads dge, dma_queues)"},
	})
}

func TestOpWorkloadErrors(t *testing.T) {
	op := func(fields string) string {
		return "hardware: {preset: trn2}\nworkload:\n  kind: op\n  op: {" + fields + "}\n"
	}
	runErrCases(t, []errCase{
		{"no name", op("m: 4"), nil, "test.yaml:4:7: workload.op.name: required (ops: layer_norm, rms_norm, silu, gelu, softmax, swiglu, matmul_add_rms_norm, attention)"},
		{"unknown op", op("name: conv, m: 4"), nil, "test.yaml:4:14: workload.op.name: unknown op \"conv\" (ops: layer_norm, rms_norm, silu, gelu, softmax, swiglu, matmul_add_rms_norm, attention)"},
		{"missing size", op("name: swiglu, m: 4, n: 8"), nil, "test.yaml:4:7: workload.op.k: required (for swiglu)"},
		{"field not read", op("name: silu, m: 4, n: 8, heads: 2"), nil, "test.yaml:4:39: workload.op.heads: silu does not read it (it reads m, n)"},
		{"causal", op("name: silu, m: 4, n: 8, causal: true"), nil, "test.yaml:4:40: workload.op.causal: is for attention"},
	})
}

// A topology kind set over an instance replaces its arrangement: the
// instance's dims go with it unless given too.
func TestTopologyKindOverInstance(t *testing.T) {
	cfg, err := configs.LoadBytes([]byte(withGEMM("hardware:", "  instance: trn2.48xlarge", "  topology: {kind: 3d_torus}")), "test.yaml", configs.LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, "3d_torus", cfg.Hardware.Topology.Kind)
	assert.Empty(t, cfg.Hardware.Topology.Dims)
	cfg, err = configs.LoadBytes([]byte(withGEMM("hardware:", "  instance: trn2.48xlarge", "  topology: {kind: 3d_torus, dims: [4, 2, 2]}")), "test.yaml", configs.LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, []int{4, 2, 2}, cfg.Hardware.Topology.Dims)
}

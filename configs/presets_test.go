package configs_test

import (
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
)

// hardwareLeaves lists the dotted path of every leaf field of Hardware, from
// the yaml tags, in declaration order. hardware.preset (meaningful only in a
// run config) and hardware.costs (cost-table overrides, not a field of the
// preset) are left out.
func hardwareLeaves() []string {
	var out []string
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			out = append(out, path)
			return
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if tag == "" || tag == "-" || !f.IsExported() {
				continue
			}
			walk(f.Type, path+"."+tag)
		}
	}
	walk(reflect.TypeOf(configs.Hardware{}), "hardware")
	var leaves []string
	for _, p := range out {
		if p != "hardware.preset" && p != "hardware.costs" {
			leaves = append(leaves, p)
		}
	}
	return leaves
}

// labelFields name the preset rather than state a figure, so their source
// needs no confidence tag.
var labelFields = map[string]bool{"hardware.name": true, "hardware.description": true}

var confidenceTag = regexp.MustCompile(`\[(C|I|U|3P|R|F)\]`)

func TestHardwareLeavesCoverTheStruct(t *testing.T) {
	leaves := hardwareLeaves()
	assert.Contains(t, leaves, "hardware.core.sbuf.partition_kib")
	assert.Contains(t, leaves, "hardware.chip.hbm.bandwidth_gbps")
	assert.NotContains(t, leaves, "hardware.costs")
	assert.Greater(t, len(leaves), 60)
}

func TestPresetNames(t *testing.T) {
	assert.Equal(t, []string{"inf2", "trn1", "trn2", "trn3"}, configs.PresetNames())
	infos, err := configs.Presets()
	require.NoError(t, err)
	require.Len(t, infos, 4)
	for _, p := range infos {
		assert.Equal(t, p.Name, p.Hardware.Name)
		assert.NotEmpty(t, p.Description)
	}
}

func TestEveryPresetLoads(t *testing.T) {
	wantGen := map[string]int{"trn1": 2, "inf2": 2, "trn2": 3, "trn3": 4}
	wantTable := map[string]string{"trn1": "nc-v2", "inf2": "nc-v2", "trn2": "nc-v3", "trn3": "nc-v4"}
	for _, name := range configs.PresetNames() {
		t.Run(name, func(t *testing.T) {
			hw, _, err := configs.Preset(name)
			require.NoError(t, err)
			assert.Equal(t, name, hw.Name)
			assert.Equal(t, wantGen[name], hw.Generation)
			assert.Equal(t, wantTable[name], hw.CostTable)

			// As a run config: the preset passes every validation rule.
			cfg, err := configs.LoadBytes([]byte(y("hardware: {preset: "+name+"}", "workload:", "  kind: gemm",
				"  gemm: {m: 256, k: 256, n: 256}")), "test.yaml", configs.LoadOptions{})
			require.NoError(t, err)
			assert.Equal(t, name, cfg.Hardware.Preset)
			assert.Equal(t, name, cfg.Hardware.Name)
			require.NotNil(t, cfg.Cost)
			lim := cfg.Hardware.Limits()
			assert.Equal(t, hw.Core.SBUF.Partitions, lim.Partitions)
			assert.Equal(t, int64(hw.Core.PSUM.PartitionKiB)*1024/int64(hw.Core.PSUM.Banks), lim.PSUMBankBytes())
			assert.Greater(t, cfg.Hardware.PeakFLOPSPerCore(0), 0.0)
		})
	}
}

func TestPresetSourcesCoverEveryField(t *testing.T) {
	leaves := hardwareLeaves()
	isLeaf := map[string]bool{}
	for _, l := range leaves {
		isLeaf[l] = true
	}
	for _, name := range configs.PresetNames() {
		t.Run(name, func(t *testing.T) {
			_, sources, err := configs.Preset(name)
			require.NoError(t, err)
			for _, path := range leaves {
				src, ok := sources[path]
				if !assert.True(t, ok, "%s has no source", path) {
					continue
				}
				assert.True(t, strings.HasPrefix(src.File, "preset "), "%s: source file %q", path, src.File)
				assert.NotEmpty(t, src.Note, path)
				if !labelFields[path] {
					assert.Regexp(t, confidenceTag, src.Note, "%s: the source note needs a confidence tag", path)
				}
			}
			var extra []string
			for path := range sources {
				if !isLeaf[path] {
					extra = append(extra, path)
				}
			}
			sort.Strings(extra)
			assert.Empty(t, extra, "source keys that name no field")
		})
	}
}

// presetFile is the raw text of a preset: the hardware leaves it sets and
// the source keys it gives itself.
type presetFile struct {
	base    string
	sets    []string
	sources map[string]string
}

func readPresetFile(t *testing.T, name string) presetFile {
	t.Helper()
	data, err := os.ReadFile("presets/" + name + ".yaml")
	require.NoError(t, err)
	var raw struct {
		Base     string            `yaml:"base"`
		Hardware yaml.Node         `yaml:"hardware"`
		Sources  map[string]string `yaml:"sources"`
	}
	require.NoError(t, yaml.Unmarshal(data, &raw))
	pf := presetFile{base: raw.Base, sources: raw.Sources}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		if n.Kind != yaml.MappingNode {
			pf.sets = append(pf.sets, path)
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			walk(n.Content[i+1], path+"."+n.Content[i].Value)
		}
	}
	walk(&raw.Hardware, "hardware")
	return pf
}

func TestPresetFilesCiteWhatTheySet(t *testing.T) {
	leaves := hardwareLeaves()
	isLeaf := map[string]bool{}
	for _, l := range leaves {
		isLeaf[l] = true
	}
	for _, name := range configs.PresetNames() {
		t.Run(name, func(t *testing.T) {
			pf := readPresetFile(t, name)
			for path := range pf.sources {
				assert.True(t, isLeaf[path], "source key %s names no field", path)
			}
			for _, path := range pf.sets {
				assert.True(t, isLeaf[path], "%s sets %s, which is no field", name, path)
				// A value a preset sets carries its own citation, never one
				// inherited silently from its base.
				assert.Contains(t, pf.sources, path, "%s sets %s without its own source", name, path)
			}
			for path, note := range pf.sources {
				assert.NotContains(t, strings.ToLower(note), "inherited", "%s: %s", path, note)
			}
			if pf.base == "" {
				// A preset without a base sets, and cites, every field.
				assert.ElementsMatch(t, leaves, pf.sets, "fields set by %s", name)
			}
			_, sources, err := configs.Preset(name)
			require.NoError(t, err)
			for path := range pf.sources {
				assert.Equal(t, "preset "+name, sources[path].File, path)
				assert.Equal(t, pf.sources[path], sources[path].Note, path)
			}
		})
	}
}

func TestTrn3HasItsOwnSourceForEveryField(t *testing.T) {
	pf := readPresetFile(t, "trn3")
	assert.Empty(t, pf.base, "trn3 must not inherit from another preset")
	_, sources, err := configs.Preset("trn3")
	require.NoError(t, err)
	for _, path := range hardwareLeaves() {
		src, ok := sources[path]
		require.True(t, ok, path)
		assert.Equal(t, "preset trn3", src.File, path)
		assert.Contains(t, pf.sources, path, "trn3 does not cite %s itself", path)
		assert.NotContains(t, strings.ToLower(src.Note), "inherit", path)
	}
}

func TestDerivedPresetInheritsWithAttribution(t *testing.T) {
	pf := readPresetFile(t, "inf2")
	require.Equal(t, "trn1", pf.base)
	inf2, sources, err := configs.Preset("inf2")
	require.NoError(t, err)
	trn1, _, err := configs.Preset("trn1")
	require.NoError(t, err)
	assert.Equal(t, trn1.Core, inf2.Core, "inf2 has the trn1 NeuronCore")
	assert.Equal(t, 2, inf2.Chip.Links.Count)
	assert.Equal(t, "ring", inf2.Topology.Kind)
	assert.Equal(t, "preset inf2", sources["hardware.chip.links.count"].File)
	assert.Equal(t, "preset trn1", sources["hardware.core.sbuf.partition_kib"].File)
}

func TestCostTablesCompile(t *testing.T) {
	assert.Equal(t, []string{"nc-v2", "nc-v3", "nc-v4"}, configs.CostTableNames())
	for _, name := range configs.CostTableNames() {
		t.Run(name, func(t *testing.T) {
			table, err := configs.LoadCostTable(name)
			require.NoError(t, err)
			model, err := table.Compile()
			require.NoError(t, err)
			v, ok := model.Constant("MIN_II")
			assert.True(t, ok)
			assert.Equal(t, 64.0, v)
			for _, c := range table.Constants {
				assert.NotEmpty(t, c.Source, c.Name)
			}
			for _, r := range table.Rules {
				for _, v := range r.Variants {
					assert.NotEmpty(t, v.Source, "%s.%s.%s", r.Engine, r.Op, v.Name)
					if name != "nc-v2" && strings.HasPrefix(v.Source, "inherited from ") {
						assert.NotEqual(t, "C", v.Tag, "%s.%s.%s: an inherited row is at best [I]", r.Engine, r.Op, v.Name)
					}
				}
			}
		})
	}
	_, err := configs.LoadCostTable("nc-v9")
	require.Error(t, err)
	assert.Equal(t, `unknown cost table "nc-v9" (tables: nc-v2, nc-v3, nc-v4)`, err.Error())
}

func TestCostTablesDoNotShareState(t *testing.T) {
	// Loading a derived table must not modify its base.
	v3, err := configs.LoadCostTable("nc-v3")
	require.NoError(t, err)
	v3.Constants[0].Value = 1
	v2, err := configs.LoadCostTable("nc-v2")
	require.NoError(t, err)
	assert.Equal(t, 64.0, v2.Constants[0].Value)
	v3again, err := configs.LoadCostTable("nc-v3")
	require.NoError(t, err)
	assert.Equal(t, 64.0, v3again.Constants[0].Value)
}

func TestSetOverrideChangesValueAndSource(t *testing.T) {
	const path = "hardware.core.sbuf.partition_kib"
	doc := []byte(y("hardware: {preset: trn2}", "workload:", "  kind: gemm", "  gemm: {m: 256, k: 256, n: 256}"))

	base, err := configs.LoadBytes(doc, "test.yaml", configs.LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, 224, base.Hardware.Core.SBUF.PartitionKiB)
	assert.Equal(t, "preset trn2", base.Sources[path].File)
	assert.Regexp(t, confidenceTag, base.Sources[path].Note)

	cfg, err := configs.LoadBytes(doc, "test.yaml", configs.LoadOptions{Sets: []string{path + "=384"}})
	require.NoError(t, err)
	assert.Equal(t, 384, cfg.Hardware.Core.SBUF.PartitionKiB)
	assert.Equal(t, int64(384*1024), cfg.Hardware.SBUFBytesPerPartition())
	assert.Equal(t, int64(384*1024), cfg.Hardware.Limits().SBUFPartitionBytes)
	assert.Equal(t, configs.Source{File: "--set", Note: "override"}, cfg.Sources[path])
	assert.Equal(t, "--set — override", cfg.Sources[path].String())
	// Other fields keep their preset source.
	assert.Equal(t, base.Sources["hardware.core.psum.banks"], cfg.Sources["hardware.core.psum.banks"])
}

func TestFileOverrideSourceAndSetPrecedence(t *testing.T) {
	doc := []byte(y(
		"hardware:",
		"  preset: trn2",
		"  core:",
		"    sbuf: {partition_kib: 256}",
		"workload:",
		"  kind: gemm",
		"  gemm: {m: 256, k: 256, n: 256}",
	))
	cfg, err := configs.LoadBytes(doc, "test.yaml", configs.LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, 256, cfg.Hardware.Core.SBUF.PartitionKiB)
	src := cfg.Sources["hardware.core.sbuf.partition_kib"]
	assert.Equal(t, configs.Source{File: "test.yaml", Line: 4, Col: 27, Note: "override"}, src)
	assert.Equal(t, "test.yaml:4 — override", src.String())
	assert.Equal(t, configs.Source{File: "test.yaml", Line: 7, Col: 13}, cfg.Sources["workload.gemm.m"])

	// --set wins over the file.
	cfg, err = configs.LoadBytes(doc, "test.yaml", configs.LoadOptions{Sets: []string{
		"hardware.core.sbuf.partition_kib=384", "workload.gemm.m=512", "hardware.preset=trn3"}})
	require.NoError(t, err)
	assert.Equal(t, 384, cfg.Hardware.Core.SBUF.PartitionKiB)
	assert.Equal(t, int64(512), cfg.Workload.GEMM.M)
	assert.Equal(t, "trn3", cfg.Hardware.Name)
	assert.Equal(t, "--set", cfg.Sources["workload.gemm.m"].File)
}

func TestCostOverrideByFileAndSet(t *testing.T) {
	doc := []byte(y(
		"hardware:",
		"  preset: trn2",
		"  costs:",
		"    constants:",
		"      MIN_II: {value: 32}",
		"    vector:",
		"      tensor_copy:",
		"        turbo: {when: [half], interval: \"N/8\", tag: I, source: \"what if\"}",
		"workload:",
		"  kind: gemm",
		"  gemm: {m: 256, k: 256, n: 256}",
	))
	cfg, err := configs.LoadBytes(doc, "test.yaml", configs.LoadOptions{
		Sets: []string{"hardware.costs.constants.STRIDE_PENALTY.value=3"}})
	require.NoError(t, err)
	v, _ := cfg.Cost.Constant("MIN_II")
	assert.Equal(t, 32.0, v)
	v, _ = cfg.Cost.Constant("STRIDE_PENALTY")
	assert.Equal(t, 3.0, v)
	for _, c := range cfg.Costs.Constants {
		switch c.Name {
		case "MIN_II":
			assert.Equal(t, "set by test.yaml:5", c.Source)
			assert.Equal(t, "U", c.Tag)
		case "STRIDE_PENALTY":
			assert.Equal(t, "set by --set", c.Source)
		}
	}
	vs := cfg.Cost.Lookup(isa.EngineVector, isa.OpTensorCopy)
	require.NotEmpty(t, vs)
	assert.Equal(t, "turbo", vs[0].Name)
	assert.Equal(t, "what if", vs[0].Source)
	assert.Equal(t, "I", vs[0].Tag)

	// The embedded table is untouched by the override.
	fresh, err := configs.LoadCostTable("nc-v3")
	require.NoError(t, err)
	m, err := fresh.Compile()
	require.NoError(t, err)
	v, _ = m.Constant("MIN_II")
	assert.Equal(t, 64.0, v)
}

func TestDefaultConfig(t *testing.T) {
	cfg, err := configs.LoadDefault(configs.LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, "", cfg.File)
	assert.Equal(t, "trn2", cfg.Hardware.Name)
	assert.Equal(t, "gemm", cfg.Workload.Kind)
	require.NotNil(t, cfg.Workload.GEMM)
	assert.Equal(t, "bf16", cfg.Workload.GEMM.OutDType, "out_dtype defaults to dtype")
	assert.Contains(t, configs.DefaultConfigYAML(), "preset: trn2")

	_, err = configs.LoadDefault(configs.LoadOptions{Sets: []string{"workload.gemm.m=-1"}})
	require.Error(t, err)
	assert.Equal(t, "--set workload.gemm.m=-1: must be greater than 0, got -1", err.Error())
}

func TestLoadFromFile(t *testing.T) {
	dir := t.TempDir()
	kernel := dir + "/k.s"
	require.NoError(t, os.WriteFile(kernel, []byte(".version 1\n"), 0o644))
	path := dir + "/run.yaml"
	require.NoError(t, os.WriteFile(path, []byte(y(
		"hardware: {preset: trn1}",
		"workload:",
		"  kind: assembly",
		"  assembly: {file: k.s}",
		"parallel: {}",
		"outputs: {json: out.json}",
	)), 0o644))
	cfg, err := configs.Load(path, configs.LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, path, cfg.File)
	assert.Equal(t, kernel, cfg.Workload.Assembly.File, "the assembly path is relative to the config")
	assert.Equal(t, "out.json", cfg.Outputs.JSON)
	assert.Equal(t, "/abs/x", cfg.ResolvePath("/abs/x"))
	err = cfg.FieldError("workload.assembly.file", "too big")
	assert.Equal(t, path+":4:20: workload.assembly.file: too big", err.Error())
	err = cfg.FieldError("hardware.core.sbuf.partition_kib", "too small")
	assert.Equal(t, "preset trn1: hardware.core.sbuf.partition_kib: too small", err.Error())
}

package configs

import (
	"embed"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/trnsim/trnsim/isa"
)

//go:embed presets/*.yaml presets/costs/*.yaml defaults/*.yaml instances/*.yaml
var presetFS embed.FS

// DefaultConfigName is what the embedded default run config is called in
// messages.
const DefaultConfigName = "<embedded default>"

// LoadOptions adjust loading.
type LoadOptions struct {
	// Sets are "dotted.path=value" overrides applied after the file, the way
	// sweeps address fields (hardware.core.sbuf.partition_kib=384).
	Sets []string
	// Generated, when not empty, says the document was written by a
	// program, not a person (the run config trnsim builds around a bare
	// assembly file): errors name the file without a line, and the fields
	// it sets have Generated as their source note.
	Generated string
}

// Load reads, resolves and validates a run config file.
func Load(path string, opts LoadOptions) (*RunConfig, error) {
	return ReadBase(path).Load(opts)
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// LoadDefault returns the embedded default run config (a BF16 GEMM on trn2).
func LoadDefault(opts LoadOptions) (*RunConfig, error) {
	data, err := presetFS.ReadFile("defaults/default.yaml")
	if err != nil {
		return nil, err
	}
	cfg, err := LoadBytes(data, DefaultConfigName, opts)
	if err != nil {
		return nil, err
	}
	cfg.File = ""
	return cfg, nil
}

// DefaultConfigYAML returns the text of the embedded default run config.
func DefaultConfigYAML() string {
	data, _ := presetFS.ReadFile("defaults/default.yaml")
	return string(data)
}

var sectionNames = []string{"hardware", "workload", "parallel", "outputs", "cost"}

// LoadBytes resolves a run config given as bytes; file names it in errors.
func LoadBytes(data []byte, file string, opts LoadOptions) (*RunConfig, error) {
	return ParseBase(data, file).Load(opts)
}

// Base is a run config's text parsed once, to be resolved any number of
// times with different overrides (a sweep's points, each the same base
// with its own --set values): Load gives what LoadBytes of the same text
// gives, the config, its sources and its errors alike, without parsing the
// text again. Its Load may be called from several goroutines at once: the
// parsed text is only read, and the memo of --set values is a sync.Map.
type Base struct {
	file string
	root *yaml.Node // nil: an empty document
	err  error      // the text's parse error, returned by every Load
	// values memoises parseSets' parse of each --set value (a string to
	// its *yaml.Node, which nothing writes to): a sweep's points repeat
	// the few values of each axis.
	values sync.Map
}

// ParseBase parses a run config's text; file names it in errors. A text
// that does not parse gives a Base whose Load returns the error.
func ParseBase(data []byte, file string) *Base {
	b := &Base{file: file}
	func() {
		// The YAML library is not ours: turn any panic into an error rather
		// than a stack trace.
		defer func() {
			if r := recover(); r != nil {
				b.root, b.err = nil, &Error{File: file, Msg: fmt.Sprintf("cannot parse: %v", r)}
			}
		}()
		b.root, b.err = parseYAML(data, file)
	}()
	return b
}

// ReadBase reads and parses a run config file; a file that cannot be read
// gives a Base whose Load returns Load's error for it.
func ReadBase(path string) *Base {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return &Base{file: path, err: fmt.Errorf("%s: no such file", path)}
		}
		return &Base{file: path, err: fmt.Errorf("%s: cannot read: %v", path, unwrapPathError(err))}
	}
	return ParseBase(data, path)
}

// Load resolves and validates the base with opts applied, as LoadBytes
// does.
func (b *Base) Load(opts LoadOptions) (cfg *RunConfig, err error) {
	file := b.file
	defer func() {
		// The YAML library is not ours: turn any panic into an error rather
		// than a stack trace.
		if r := recover(); r != nil {
			cfg, err = nil, &Error{File: file, Msg: fmt.Sprintf("cannot parse: %v", r)}
		}
		// An error about a --set value quotes the argument.
		var ce *Error
		if errors.As(err, &ce) && ce.File == SetFile && ce.Set == "" {
			ce.Set = findSet(opts.Sets, ce.Path)
		}
	}()
	if b.err != nil {
		// Each caller gets its own copy (the deferred call above may
		// write to it).
		if ce, ok := b.err.(*Error); ok {
			c := *ce
			return nil, &c
		}
		return nil, b.err
	}
	root := b.root
	if root == nil {
		root = &yaml.Node{Kind: yaml.MappingNode, Line: 1, Column: 1}
	}
	d := newDecoder(file)
	d.generated = opts.Generated
	sections := map[string]*yaml.Node{}
	pairs, err := d.mappingPairs(root, "")
	if err != nil {
		return nil, err
	}
	for _, kv := range pairs {
		if !contains(sectionNames, kv[0].Value) {
			for _, p := range pairs {
				if p[0].Value == "axes" {
					// A sweep file given where a run config goes.
					return nil, d.errAt(kv[0], kv[0].Value, "unknown section: this is a sweep file (it has axes:); run it with trnsim sweep %s", file)
				}
			}
			return nil, d.errAt(kv[0], kv[0].Value, "unknown section (sections: %s)", strings.Join(sectionNames, ", "))
		}
		sections[kv[0].Value] = kv[1]
	}
	setLayer, err := parseSets(opts.Sets, b.setValue)
	if err != nil {
		return nil, err
	}
	cfg = &RunConfig{File: file, Sources: map[string]Source{}, sets: opts.Sets}

	// Hardware: the preset, then the file, then --set overrides.
	hwNode := sections["hardware"]
	setDec := newDecoder(SetFile)
	preset, instance := "", ""
	var presetNode, instanceNode *yaml.Node // where the preset and the instance were named
	var presetDec, instanceDec *decoder     // and by which layer
	for _, layer := range []struct {
		dec  *decoder
		node *yaml.Node
	}{{d, hwNode}, {setDec, childOf(setLayer, "hardware")}} {
		if layer.node == nil || (layer.node.Kind == yaml.ScalarNode && layer.node.Tag == "!!null") {
			continue
		}
		// Reject a malformed section here, before the preset is looked up,
		// so the message names the real problem rather than a missing preset.
		if _, err := layer.dec.mappingPairs(layer.node, "hardware"); err != nil {
			return nil, err
		}
		if p := childOf(layer.node, "preset"); p != nil {
			if p.Kind != yaml.ScalarNode || p.Tag != "!!str" {
				return nil, layer.dec.errAt(p, "hardware.preset", "expected a preset name, got %s", describe(p))
			}
			preset, presetNode, presetDec = p.Value, p, layer.dec
		}
		if p := childOf(layer.node, "instance"); p != nil {
			if p.Kind != yaml.ScalarNode || p.Tag != "!!str" {
				return nil, layer.dec.errAt(p, "hardware.instance", "expected an instance name, got %s", describe(p))
			}
			instance, instanceNode, instanceDec = p.Value, p, layer.dec
		}
	}
	var hw *Hardware
	var hwSources map[string]Source
	if instance != "" {
		var base string
		hw, hwSources, base, err = loadInstance(instance)
		if err != nil {
			return nil, instanceDec.errAt(instanceNode, "hardware.instance", "%v", err)
		}
		if preset != "" && preset != base {
			return nil, presetDec.errAt(presetNode, "hardware.preset", "%s does not match hardware.instance %s, whose chips are %s (leave hardware.preset out: the instance implies it)", preset, instance, base)
		}
		preset = base
	}
	if preset == "" {
		at := hwNode
		if at == nil {
			at = root
		}
		return nil, d.errAt(at, "hardware.preset", "required (presets: %s)", strings.Join(PresetNames(), ", "))
	}
	if hw == nil {
		hw, hwSources, err = loadPreset(preset, 0)
		if err != nil {
			return nil, presetDec.errAt(presetNode, "hardware.preset", "%v", err)
		}
	}
	cfg.Hardware = *hw
	chipsPerNode := hw.Chips
	if len(hwSources) > 0 {
		cfg.Sources = maps.Clone(hwSources)
	}
	decodeLayer := func(dec *decoder, n *yaml.Node, name string, into any) error {
		if n == nil {
			return nil
		}
		return dec.decode(n, reflect.ValueOf(into).Elem(), name)
	}
	layers := []struct {
		dec  *decoder
		root *yaml.Node
	}{{d, root}, {setDec, setLayer}}
	for _, l := range layers {
		if l.root == nil {
			continue
		}
		if err := decodeLayer(l.dec, childOf(l.root, "hardware"), "hardware", &cfg.Hardware); err != nil {
			return nil, err
		}
	}
	cfg.Hardware.Preset = preset
	for _, l := range layers {
		if p := childOf(childOf(l.root, "hardware"), "preset"); p != nil {
			src := l.dec.source(p)
			if src.Note == "" {
				src.Note = "run config"
			}
			cfg.Sources["hardware.preset"] = src
		}
	}
	for _, l := range layers {
		for k, v := range l.dec.set {
			if strings.HasPrefix(k, "hardware.") && k != "hardware.preset" {
				if v.Note == "" {
					v.Note = "override"
				}
				cfg.Sources[k] = v
			}
		}
	}
	if err := cfg.deriveChips(instance, chipsPerNode); err != nil {
		return nil, err
	}

	// Costs: the named table, then overrides from the file and --set.
	table, err := LoadCostTable(cfg.Hardware.CostTable)
	if err != nil {
		return nil, cfg.errAtPath("hardware.cost_table", "%v", err)
	}
	ca := &costApplier{d: d, table: table, nodes: map[string]*yaml.Node{}, override: true}
	if !cfg.Hardware.Costs.Empty() {
		ca.d = newDecoder(cfg.Hardware.Costs.file)
		ca.d.origin = cfg.Hardware.Costs.origin
		if err := ca.apply(cfg.Hardware.Costs.node, "hardware.costs", false); err != nil {
			return nil, err
		}
	}
	var model *isa.CostModel
	if cfg.Hardware.Costs.Empty() {
		model, err = cachedCostModel(cfg.Hardware.CostTable)
	} else {
		model, err = table.Compile()
	}
	if err != nil {
		return nil, costCompileError(err, ca)
	}
	cfg.Costs, cfg.Cost = table, model

	if err := cfg.validateHardware(); err != nil {
		return nil, err
	}

	// Workload, parallel, outputs.
	for _, l := range layers {
		if l.root == nil {
			continue
		}
		if err := decodeLayer(l.dec, childOf(l.root, "workload"), "workload", &cfg.Workload); err != nil {
			return nil, err
		}
		if err := decodeLayer(l.dec, childOf(l.root, "parallel"), "parallel", &cfg.Parallel); err != nil {
			return nil, err
		}
		if err := decodeLayer(l.dec, childOf(l.root, "outputs"), "outputs", &cfg.Outputs); err != nil {
			return nil, err
		}
		if err := decodeLayer(l.dec, childOf(l.root, "cost"), "cost", &cfg.Pricing); err != nil {
			return nil, err
		}
		for k, v := range l.dec.set {
			if !strings.HasPrefix(k, "hardware.") {
				cfg.Sources[k] = v
			}
		}
	}
	if err := cfg.validateWorkload(sections["workload"], d); err != nil {
		return nil, err
	}
	if err := cfg.validateParallel(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func costCompileError(err error, ca *costApplier) error {
	msg := err.Error()
	// Compile errors start with the path ("costs.vector.x.y.interval: ...").
	for path, n := range ca.nodes {
		short := strings.TrimPrefix(path, "hardware.")
		if strings.HasPrefix(msg, short+":") && n != nil {
			return &Error{File: ca.d.fileOf(n), Line: n.Line, Col: n.Column, Path: path, Msg: strings.TrimSpace(strings.TrimPrefix(msg, short+":"))}
		}
	}
	return &Error{File: ca.d.file, Path: "hardware", Msg: msg}
}

// childOf returns the value node of key in a mapping, or nil.
func childOf(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// setValue parses a --set value as YAML (a string when it does not
// parse), once per Base: the node it returns is shared, read only.
func (b *Base) setValue(val string) *yaml.Node {
	if n, ok := b.values.Load(val); ok {
		return n.(*yaml.Node)
	}
	var vn yaml.Node
	if err := yaml.Unmarshal([]byte(val), &vn); err != nil || len(vn.Content) == 0 {
		vn = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: val}}}
	}
	leaf := vn.Content[0]
	leaf.Line, leaf.Column = 0, 0
	n, _ := b.values.LoadOrStore(val, leaf)
	return n.(*yaml.Node)
}

// parseSets turns "a.b.c=value" strings into a YAML mapping tree, each
// value parsed by value.
func parseSets(sets []string, value func(string) *yaml.Node) (*yaml.Node, error) {
	if len(sets) == 0 {
		return nil, nil
	}
	root := &yaml.Node{Kind: yaml.MappingNode}
	for _, s := range sets {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return nil, &Error{File: SetFile, Set: s, Msg: "expected dotted.path=value"}
		}
		path, val := strings.TrimSpace(s[:eq]), strings.TrimSpace(s[eq+1:])
		keys := strings.Split(path, ".")
		if !contains(sectionNames, keys[0]) {
			return nil, &Error{File: SetFile, Set: s, Path: path, Msg: fmt.Sprintf("unknown section %q (sections: %s)", keys[0], strings.Join(sectionNames, ", "))}
		}
		leaf := value(val)
		cur := root
		for i, k := range keys {
			if k == "" {
				return nil, &Error{File: SetFile, Set: s, Path: path, Msg: "empty path element"}
			}
			next := childOf(cur, k)
			if i == len(keys)-1 {
				if next != nil {
					return nil, &Error{File: SetFile, Set: s, Path: path, Msg: "given twice"}
				}
				cur.Content = append(cur.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, leaf)
				break
			}
			if next == nil {
				next = &yaml.Node{Kind: yaml.MappingNode}
				cur.Content = append(cur.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, next)
			}
			if next.Kind != yaml.MappingNode {
				return nil, &Error{File: SetFile, Set: s, Path: path, Msg: "conflicts with another --set"}
			}
			cur = next
		}
	}
	return root, nil
}

// findSet returns the --set argument that set path: the one naming path
// itself, else one naming a section that holds path, else one inside path
// (trimmed, as "dotted.path=value"), or "".
func findSet(sets []string, path string) string {
	type set struct{ path, text string }
	var all []set
	for _, s := range sets {
		if eq := strings.IndexByte(s, '='); eq > 0 {
			p := strings.TrimSpace(s[:eq])
			all = append(all, set{p, p + "=" + strings.TrimSpace(s[eq+1:])})
		}
	}
	for _, match := range []func(p string) bool{
		func(p string) bool { return p == path },
		func(p string) bool { return strings.HasPrefix(path, p+".") },
		func(p string) bool { return strings.HasPrefix(p, path+".") },
	} {
		for _, s := range all {
			if match(s.path) {
				return s.text
			}
		}
	}
	return ""
}

// errAtPath builds an Error for a resolved field, pointing at the file and
// line that set it, at the --set that set it, or at the preset.
func (c *RunConfig) errAtPath(path, format string, args ...any) error {
	e := &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
	if s, ok := c.Sources[path]; ok {
		e.File, e.Line, e.Col = s.File, s.Line, s.Col
		if s.File == SetFile {
			e.Set = findSet(c.sets, path)
		}
	} else {
		e.File = c.File
		if e.File == "" {
			e.File = DefaultConfigName
		}
	}
	return e
}

// PresetInfo summarises a preset for `trnsim presets`.
type PresetInfo struct {
	Name        string
	Description string
	Hardware    *Hardware
}

// PresetNames lists the embedded hardware presets.
func PresetNames() []string {
	entries, _ := presetFS.ReadDir("presets")
	var out []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".yaml") {
			out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
		}
	}
	sort.Strings(out)
	return out
}

// IsPreset reports whether name is an embedded hardware preset.
func IsPreset(name string) bool {
	for _, p := range PresetNames() {
		if p == name {
			return true
		}
	}
	return false
}

// Preset returns a preset's hardware and the source of every field.
func Preset(name string) (*Hardware, map[string]Source, error) {
	hw, src, err := loadPreset(name, 0)
	if err != nil {
		return nil, nil, err
	}
	own := make(map[string]Source, len(src))
	for k, v := range src {
		own[k] = v
	}
	return hw, own, nil
}

// Presets returns every preset.
func Presets() ([]PresetInfo, error) {
	var out []PresetInfo
	for _, n := range PresetNames() {
		h, _, err := Preset(n)
		if err != nil {
			return nil, err
		}
		out = append(out, PresetInfo{Name: n, Description: h.Description, Hardware: h})
	}
	return out, nil
}

// InstanceNames lists the embedded instance presets.
func InstanceNames() []string {
	entries, _ := presetFS.ReadDir("instances")
	var out []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".yaml") {
			out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
		}
	}
	sort.Strings(out)
	return out
}

// Instance returns an instance preset's hardware (one node), the source
// of every field and the chip preset it is built on.
func Instance(name string) (*Hardware, map[string]Source, string, error) {
	return loadInstance(name)
}

// loadInstance reads instances/NAME.yaml: a preset file whose base is a
// chip preset.
func loadInstance(name string) (*Hardware, map[string]Source, string, error) {
	file := "instances/" + name + ".yaml"
	data, err := presetFS.ReadFile(file)
	if err != nil || strings.Contains(name, "/") {
		return nil, nil, "", fmt.Errorf("unknown instance %q (instances: %s)", name, strings.Join(InstanceNames(), ", "))
	}
	root, err := parseEmbedded(file, data)
	if err != nil {
		return nil, nil, "", err
	}
	b := childOf(root, "base")
	if b == nil || !IsPreset(b.Value) {
		return nil, nil, "", fmt.Errorf("%s: base must name a chip preset", file)
	}
	hw, src, err := loadPresetFile(file, "instance "+name, root, 0)
	return hw, src, b.Value, err
}

// The sources it returns are shared (callers copy them, never write); the
// hardware is the caller's own.
func loadPreset(name string, depth int) (*Hardware, map[string]Source, error) {
	if p, ok := decodedPresets.Load(name); ok {
		d := p.(decodedPreset)
		return d.hw.clone(), d.sources, nil
	}
	if depth > 4 {
		return nil, nil, fmt.Errorf("preset %s: base chain too deep", name)
	}
	file := "presets/" + name + ".yaml"
	data, err := presetFS.ReadFile(file)
	if err != nil || strings.Contains(name, "/") {
		return nil, nil, fmt.Errorf("unknown preset %q (presets: %s)", name, strings.Join(PresetNames(), ", "))
	}
	root, err := parseEmbedded(file, data)
	if err != nil {
		return nil, nil, err
	}
	hw, sources, err := loadPresetFile(file, "preset "+name, root, depth)
	if err != nil {
		return nil, nil, err
	}
	decodedPresets.Store(name, decodedPreset{hw.clone(), sources})
	return hw, sources, nil
}

// decodedPresets memoises loadPreset's decode of an embedded preset (a
// constant of the binary) for the process.
var decodedPresets sync.Map // name -> decodedPreset

type decodedPreset struct {
	hw      *Hardware
	sources map[string]Source
}

// clone returns a copy of h that shares no list with it.
func (h *Hardware) clone() *Hardware {
	c := *h
	c.Topology.Dims = slices.Clone(h.Topology.Dims)
	c.Topology.AxisBandwidthGBps = slices.Clone(h.Topology.AxisBandwidthGBps)
	c.Topology.Links = slices.Clone(h.Topology.Links)
	if h.Costs.origin != nil {
		c.Costs.origin = maps.Clone(h.Costs.origin)
	}
	return &c
}

// loadPresetFile decodes a parsed preset file (its base first).
func loadPresetFile(file, srcName string, root *yaml.Node, depth int) (*Hardware, map[string]Source, error) {
	hw := &Hardware{}
	sources := map[string]Source{}
	if b := childOf(root, "base"); b != nil {
		base, bs, err := loadPreset(b.Value, depth+1)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: base: %w", file, err)
		}
		*hw = *base
		for k, v := range bs {
			sources[k] = v
		}
	}
	d := newDecoder(file)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "base":
		case "hardware":
			if err := d.decode(v, reflect.ValueOf(hw).Elem(), "hardware"); err != nil {
				return nil, nil, err
			}
		case "sources":
			var m map[string]string
			if err := v.Decode(&m); err != nil {
				return nil, nil, fmt.Errorf("%s: sources: %v", file, err)
			}
			for path, note := range m {
				sources[path] = Source{File: srcName, Note: note}
			}
		default:
			return nil, nil, d.errAt(k, k.Value, "unknown preset section")
		}
	}
	// Fields the derived preset sets keep their inherited citation unless it
	// gives its own; attribute them to this preset.
	for path := range d.set {
		if s, ok := sources[path]; ok {
			s.File = srcName
			sources[path] = s
		}
	}
	return hw, sources, nil
}

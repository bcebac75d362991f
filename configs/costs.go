package configs

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/trnsim/trnsim/isa"
)

// CostOverrides holds a run config's hardware.costs section: entries that
// replace or add rows of the embedded cost table, addressed by dotted path
// (hardware.costs.constants.MIN_II.value,
// hardware.costs.vector.tensor_tensor.half_sbuf.interval). It is applied when
// the config is resolved.
type CostOverrides struct {
	node *yaml.Node
	file string
	// origin names the file of every node when layers were merged.
	origin map[*yaml.Node]string
}

func (c *CostOverrides) decodeNode(d *decoder, n *yaml.Node, path string) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return d.errAt(n, path, "expected a mapping, got %s", describe(n))
	}
	if c.origin == nil {
		c.origin = map[*yaml.Node]string{}
	}
	markOrigin(c.origin, n, d.file)
	if c.node != nil {
		// A later layer (--set) merges into the earlier one; the mappings
		// the merge creates keep the earlier layer's positions.
		first := c.origin[c.node]
		c.node = mergeMappings(c.node, n)
		markOrigin(c.origin, c.node, first)
	} else {
		c.node = n
	}
	c.file = d.file
	return nil
}

// markOrigin records file as the origin of n and its descendants that have
// none yet.
func markOrigin(m map[*yaml.Node]string, n *yaml.Node, file string) {
	if _, ok := m[n]; !ok {
		m[n] = file
	}
	for _, c := range n.Content {
		markOrigin(m, c, file)
	}
}

// Empty reports whether no cost overrides were given.
func (c *CostOverrides) Empty() bool { return c.node == nil }

var costEngineKeys = []string{"tensor", "vector", "scalar", "gpsimd", "sync", "any"}

// costApplier applies cost YAML (a table or overrides) to a CostTable.
type costApplier struct {
	d     *decoder
	table *isa.CostTable
	// nodes records the YAML node of every expression so compile errors can
	// point at a line.
	nodes map[string]*yaml.Node
	// override is true for run-config overrides: new entries are marked as
	// such and tagged [U] unless the config gives a tag.
	override bool
}

func (a *costApplier) apply(n *yaml.Node, path string, allowBase bool) error {
	pairs, err := a.d.mappingPairs(n, path)
	if err != nil {
		return err
	}
	for _, kv := range pairs {
		k, v := kv[0], kv[1]
		kp := joinPath(path, k.Value)
		switch {
		case k.Value == "base":
			if !allowBase {
				return a.d.errAt(k, kp, "unknown field; a run config cannot change a cost table's base (set hardware.cost_table instead)")
			}
		case k.Value == "constants":
			if err := a.constants(v, kp); err != nil {
				return err
			}
		case contains(costEngineKeys, k.Value):
			if err := a.engine(k.Value, v, kp); err != nil {
				return err
			}
		default:
			return a.d.errAt(k, kp, "unknown field (known: constants, %s)", strings.Join(costEngineKeys, ", "))
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (a *costApplier) constants(n *yaml.Node, path string) error {
	pairs, err := a.d.mappingPairs(n, path)
	if err != nil {
		return err
	}
	for _, kv := range pairs {
		k, v := kv[0], kv[1]
		cp := joinPath(path, k.Value)
		if !isConstName(k.Value) {
			return a.d.errAt(k, cp, "constant names are UPPER_CASE letters, digits and underscores")
		}
		a.nodes[cp] = k
		idx := -1
		for i := range a.table.Constants {
			if a.table.Constants[i].Name == k.Value {
				idx = i
			}
		}
		var c isa.CostConstant
		if idx >= 0 {
			c = a.table.Constants[idx]
		} else {
			c = isa.CostConstant{Name: k.Value}
		}
		var fields struct {
			Value  *float64 `yaml:"value"`
			Source *string  `yaml:"source"`
			Tag    *string  `yaml:"tag"`
		}
		if err := a.d.decode(v, reflectValue(&fields), cp); err != nil {
			return err
		}
		if fields.Value == nil && idx < 0 {
			return a.d.errAt(v, cp+".value", "required for a new constant")
		}
		if fields.Value != nil {
			if *fields.Value < 0 {
				return a.d.errAt(v, cp+".value", "must not be negative, got %v", *fields.Value)
			}
			c.Value = *fields.Value
			a.markOverride(&c.Source, &c.Tag, v, cp)
		}
		if fields.Source != nil {
			c.Source = *fields.Source
		}
		if fields.Tag != nil {
			if !validTag(*fields.Tag) {
				return a.d.errAt(v, cp+".tag", "%q is not one of %s", *fields.Tag, strings.Join(isa.ConfidenceTags, ", "))
			}
			c.Tag = *fields.Tag
		}
		if idx >= 0 {
			a.table.Constants[idx] = c
		} else {
			a.table.Constants = append(a.table.Constants, c)
		}
	}
	return nil
}

func (a *costApplier) markOverride(source, tag *string, n *yaml.Node, path string) {
	if !a.override {
		return
	}
	loc := a.d.fileOf(n)
	if n.Line > 0 {
		loc += fmt.Sprintf(":%d", n.Line)
	}
	*source = "set by " + loc
	*tag = "U"
}

func isConstName(s string) bool {
	if s == "" || !(s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') {
			return false
		}
	}
	return true
}

func isVariantName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') {
			return false
		}
	}
	return true
}

func validTag(t string) bool { return contains(isa.ConfidenceTags, t) }

func (a *costApplier) engine(eng string, n *yaml.Node, path string) error {
	pairs, err := a.d.mappingPairs(n, path)
	if err != nil {
		return err
	}
	for _, kv := range pairs {
		k, v := kv[0], kv[1]
		op, ok := isa.ParseOpcode(k.Value)
		opPath := joinPath(path, k.Value)
		if !ok {
			return a.d.errAt(k, opPath, "unknown opcode %q", k.Value)
		}
		if e, ok := isa.ParseEngine(eng); ok && !op.RunsOn(e) {
			return a.d.errAt(k, opPath, "%s does not run on %s", op, eng)
		}
		a.nodes[opPath] = k
		ri := -1
		for i := range a.table.Rules {
			if a.table.Rules[i].Engine == eng && a.table.Rules[i].Op == k.Value {
				ri = i
			}
		}
		if ri < 0 {
			a.table.Rules = append(a.table.Rules, isa.CostRule{Engine: eng, Op: k.Value})
			ri = len(a.table.Rules) - 1
		}
		if err := a.variants(&a.table.Rules[ri], v, opPath); err != nil {
			return err
		}
	}
	return nil
}

func (a *costApplier) variants(rule *isa.CostRule, n *yaml.Node, path string) error {
	pairs, err := a.d.mappingPairs(n, path)
	if err != nil {
		return err
	}
	var fresh []isa.CostVariant
	for _, kv := range pairs {
		k, v := kv[0], kv[1]
		vp := joinPath(path, k.Value)
		if !isVariantName(k.Value) {
			return a.d.errAt(k, vp, "variant names are lower_case letters, digits and underscores")
		}
		var fields struct {
			When     *[]string `yaml:"when"`
			Interval *string   `yaml:"interval"`
			Latency  *string   `yaml:"latency"`
			Source   *string   `yaml:"source"`
			Tag      *string   `yaml:"tag"`
		}
		if err := a.d.decode(v, reflectValue(&fields), vp); err != nil {
			return err
		}
		var cv *isa.CostVariant
		for i := range rule.Variants {
			if rule.Variants[i].Name == k.Value {
				cv = &rule.Variants[i]
			}
		}
		isNew := cv == nil
		if isNew {
			if fields.Interval == nil {
				return a.d.errAt(v, vp+".interval", "required for a new variant")
			}
			fresh = append(fresh, isa.CostVariant{Name: k.Value, Tag: "U"})
			cv = &fresh[len(fresh)-1]
		}
		if fields.When != nil {
			for i, f := range *fields.When {
				if _, ok := flagBit(f); !ok {
					return a.d.errAt(v, fmt.Sprintf("%s.when[%d]", vp, i), "unknown condition %q (conditions: %s)", f, strings.Join(isa.FlagNames(), ", "))
				}
			}
			cv.When = append([]string(nil), (*fields.When)...)
		}
		if fields.Interval != nil {
			cv.Interval = *fields.Interval
			a.nodes[vp+".interval"] = findChild(v, "interval")
		}
		if fields.Latency != nil {
			cv.Latency = *fields.Latency
			a.nodes[vp+".latency"] = findChild(v, "latency")
		}
		if fields.Interval != nil || fields.Latency != nil || fields.When != nil {
			a.markOverride(&cv.Source, &cv.Tag, v, vp)
		}
		if fields.Source != nil {
			cv.Source = *fields.Source
		}
		if fields.Tag != nil {
			if !validTag(*fields.Tag) {
				return a.d.errAt(v, vp+".tag", "%q is not one of %s", *fields.Tag, strings.Join(isa.ConfidenceTags, ", "))
			}
			cv.Tag = *fields.Tag
		}
	}
	// New variants are tried before the existing ones, in the order written.
	rule.Variants = append(fresh, rule.Variants...)
	return nil
}

func flagBit(f string) (uint32, bool) {
	name := strings.TrimPrefix(f, "!")
	for _, n := range isa.FlagNames() {
		if n == name {
			return 1, true
		}
	}
	return 0, false
}

func findChild(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return n
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return n
}

// mergeMappings returns a mapping with b's keys laid over a's (recursively).
func mergeMappings(a, b *yaml.Node) *yaml.Node {
	if a == nil || a.Kind != yaml.MappingNode || b.Kind != yaml.MappingNode {
		return b
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: a.Tag, Line: a.Line, Column: a.Column}
	out.Content = append(out.Content, a.Content...)
	for i := 0; i+1 < len(b.Content); i += 2 {
		k, v := b.Content[i], b.Content[i+1]
		found := false
		for j := 0; j+1 < len(out.Content); j += 2 {
			if out.Content[j].Value == k.Value {
				out.Content[j+1] = mergeMappings(out.Content[j+1], v)
				found = true
				break
			}
		}
		if !found {
			out.Content = append(out.Content, k, v)
		}
	}
	return out
}

// inherit marks every entry of a base table as inherited by a derived one:
// its source says so and a confirmed tag becomes an inference.
func inherit(t *isa.CostTable, baseName string) {
	mark := func(src, tag *string) {
		if !strings.HasPrefix(*src, "inherited from ") {
			*src = "inherited from " + baseName + ": " + *src
		}
		if *tag == "C" {
			*tag = "I"
		}
	}
	for i := range t.Constants {
		mark(&t.Constants[i].Source, &t.Constants[i].Tag)
	}
	for i := range t.Rules {
		for j := range t.Rules[i].Variants {
			v := &t.Rules[i].Variants[j]
			mark(&v.Source, &v.Tag)
		}
	}
}

// cloneCostTable deep-copies a table so overrides never touch the embedded
// one.
// (Every sweep point copies its table: the variants and their
// conditions go into one backing array each, every slice capped at its
// length so that an override's append never reaches a neighbour.)
func cloneCostTable(t *isa.CostTable) *isa.CostTable {
	out := &isa.CostTable{Constants: append([]isa.CostConstant(nil), t.Constants...)}
	nv, nw := 0, 0
	for _, r := range t.Rules {
		nv += len(r.Variants)
		for _, v := range r.Variants {
			nw += len(v.When)
		}
	}
	if len(t.Rules) > 0 {
		out.Rules = make([]isa.CostRule, 0, len(t.Rules))
	}
	variants := make([]isa.CostVariant, 0, nv)
	whens := make([]string, 0, nw)
	for _, r := range t.Rules {
		nr := isa.CostRule{Engine: r.Engine, Op: r.Op}
		if len(r.Variants) > 0 {
			at := len(variants)
			for _, v := range r.Variants {
				if len(v.When) > 0 {
					w := len(whens)
					whens = append(whens, v.When...)
					v.When = whens[w:len(whens):len(whens)]
				} else {
					v.When = nil
				}
				variants = append(variants, v)
			}
			nr.Variants = variants[at:len(variants):len(variants)]
		}
		out.Rules = append(out.Rules, nr)
	}
	return out
}

// LoadCostTable reads an embedded cost table (nc-v2, nc-v3, nc-v4),
// following its base chain.
func LoadCostTable(name string) (*isa.CostTable, error) {
	return cachedCostTable(name)
}

func loadCostTable(name string, depth int) (*isa.CostTable, error) {
	if depth > 4 {
		return nil, fmt.Errorf("cost table %s: base chain too deep", name)
	}
	file := "presets/costs/" + name + ".yaml"
	data, err := presetFS.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("unknown cost table %q (tables: %s)", name, strings.Join(CostTableNames(), ", "))
	}
	root, err := parseEmbedded(file, data)
	if err != nil {
		return nil, err
	}
	table := &isa.CostTable{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "base" {
			base, err := loadCostTable(root.Content[i+1].Value, depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: base: %w", file, err)
			}
			table = cloneCostTable(base)
			inherit(table, root.Content[i+1].Value)
		}
	}
	a := &costApplier{d: newDecoder(file), table: table, nodes: map[string]*yaml.Node{}}
	if err := a.apply(root, "", true); err != nil {
		return nil, err
	}
	return table, nil
}

// CostTableNames lists the embedded cost tables.
func CostTableNames() []string {
	entries, _ := presetFS.ReadDir("presets/costs")
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".yaml") {
			out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
		}
	}
	return out
}

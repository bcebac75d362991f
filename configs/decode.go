package configs

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// SetFile is the File of an Error or Source whose value came from a --set
// override rather than a file.
const SetFile = "--set"

// Error is a config error that names where it is: file, line, column and
// the dotted path of the field.
type Error struct {
	File string
	Line int
	Col  int
	Path string
	Msg  string
	// Set is the --set argument ("dotted.path=value", as given) the error is
	// about, when File is SetFile; the message then starts with it.
	Set string
}

func (e *Error) Error() string {
	if e.File == SetFile && e.Set != "" {
		// "--set hardware.chip.cores=100000: ...": the argument names the
		// field, unless the error is about another (deeper) path.
		loc := "--set " + e.Set
		if e.Path != "" && !strings.HasPrefix(e.Set, e.Path+"=") {
			return loc + ": " + e.Path + ": " + e.Msg
		}
		return loc + ": " + e.Msg
	}
	loc := e.File
	if e.Line > 0 {
		loc += fmt.Sprintf(":%d", e.Line)
		if e.Col > 0 {
			loc += fmt.Sprintf(":%d", e.Col)
		}
	}
	if e.Path != "" {
		return loc + ": " + e.Path + ": " + e.Msg
	}
	return loc + ": " + e.Msg
}

// Source says where a resolved value came from.
type Source struct {
	// File is the config file or "preset NAME"; Line/Col locate the value in
	// a file (0 for presets).
	File string
	Line int
	Col  int
	// Note is the preset's citation (source key and confidence tag), or
	// "override" for a value set by a run config.
	Note string
}

// String prints the source for `trnsim check`.
func (s Source) String() string {
	loc := s.File
	if s.Line > 0 {
		loc += fmt.Sprintf(":%d", s.Line)
	}
	if s.Note != "" {
		return loc + " — " + s.Note
	}
	return loc
}

// nodeDecoder is implemented by types that decode themselves from a YAML
// node (polymorphic or ordered sections).
type nodeDecoder interface {
	decodeNode(d *decoder, n *yaml.Node, path string) error
}

// decoder decodes YAML nodes into Go structs strictly: unknown fields, wrong
// types and duplicate keys are errors with line and column, and every leaf
// it sets is recorded with its position.
type decoder struct {
	file string
	// set records the position of every leaf path decoded.
	set map[string]Source
	// origin names the file of nodes merged from several layers (cost
	// overrides given both in the config file and by --set); nodes not in it
	// belong to file.
	origin map[*yaml.Node]string
	// generated, when set, marks a document that a program wrote (the run
	// config around a bare assembly file): its lines mean nothing to the
	// user, so errors and sources name the file without a position, and
	// sources carry generated as their note.
	generated string
}

// fileOf returns the file a node was read from.
func (d *decoder) fileOf(n *yaml.Node) string {
	if f, ok := d.origin[n]; ok {
		return f
	}
	return d.file
}

func newDecoder(file string) *decoder { return &decoder{file: file, set: map[string]Source{}} }

func (d *decoder) errAt(n *yaml.Node, path, format string, args ...any) error {
	e := &Error{File: d.fileOf(n), Path: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil && d.generated == "" {
		e.Line, e.Col = n.Line, n.Column
	}
	return e
}

// source is where node n (decoded by d) came from.
func (d *decoder) source(n *yaml.Node) Source {
	if d.generated != "" {
		return Source{File: d.file, Note: d.generated}
	}
	return Source{File: d.file, Line: n.Line, Col: n.Column}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// parseYAML parses a document into its root mapping node (nil for an empty
// document).
func parseYAML(data []byte, file string) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlError(file, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: root.Line, Col: root.Column, Msg: "the top level must be a mapping of sections"}
	}
	return root, nil
}

// yamlError turns a yaml.v3 syntax error ("yaml: line 3: ...") into an Error.
func yamlError(file string, err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	line := 0
	if strings.HasPrefix(msg, "line ") {
		rest := msg[5:]
		if i := strings.IndexByte(rest, ':'); i > 0 {
			if v, e := strconv.Atoi(rest[:i]); e == nil {
				line = v
				msg = strings.TrimSpace(rest[i+1:])
			}
		}
	}
	// The YAML library reports no column.
	return &Error{File: file, Line: line, Msg: "invalid YAML: " + msg}
}

// mappingPairs returns a mapping's key/value pairs, rejecting duplicate and
// non-scalar keys.
func (d *decoder) mappingPairs(n *yaml.Node, path string) ([][2]*yaml.Node, error) {
	if n.Kind == yaml.AliasNode {
		return nil, d.errAt(n, path, "YAML aliases are not supported")
	}
	if n.Kind != yaml.MappingNode {
		return nil, d.errAt(n, path, "expected a mapping, got %s", describe(n))
	}
	seen := map[string]bool{}
	var out [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, d.errAt(k, path, "keys must be plain names")
		}
		if k.Value == "<<" {
			return nil, d.errAt(k, path, "YAML merge keys are not supported")
		}
		if seen[k.Value] {
			return nil, d.errAt(k, joinPath(path, k.Value), "given twice")
		}
		seen[k.Value] = true
		out = append(out, [2]*yaml.Node{k, v})
	}
	return out, nil
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "something else"
}

var nodeDecoderType = reflect.TypeOf((*nodeDecoder)(nil)).Elem()

// decode fills v from n. v must be addressable.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind == yaml.AliasNode {
		return d.errAt(n, path, "YAML aliases are not supported")
	}
	if v.CanAddr() && v.Addr().Type().Implements(nodeDecoderType) {
		return v.Addr().Interface().(nodeDecoder).decodeNode(d, n, path)
	}
	switch v.Kind() {
	case reflect.Struct:
		pairs, err := d.mappingPairs(n, path)
		if err != nil {
			return err
		}
		fields := structFields(v.Type())
		for _, kv := range pairs {
			k, val := kv[0], kv[1]
			fi, ok := fields[k.Value]
			if !ok {
				kp := joinPath(path, k.Value)
				if why, gone := removedFields[kp]; gone {
					return d.errAt(k, kp, "unknown field: %s", why)
				}
				return d.errAt(k, kp, "unknown field (known fields of %s: %s)", orRoot(path), knownFields(v.Type()))
			}
			fv := v.Field(fi.index)
			if err := d.decode(val, fv, joinPath(path, k.Value)); err != nil {
				return err
			}
			if err := checkTag(fi.check, fv); err != nil {
				return d.errAt(val, joinPath(path, k.Value), "%s", err)
			}
		}
		return nil
	case reflect.Pointer:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			v.Set(reflect.Zero(v.Type()))
			return nil
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return d.decode(n, v.Elem(), path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.errAt(n, path, "expected a list, got %s", describe(n))
		}
		out := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			if err := d.decode(item, out.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(out)
		d.set[path] = d.source(n)
		return nil
	}
	// Scalars.
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return d.errAt(n, path, "expected %s, got %s", kindName(v.Kind()), describe(n))
	}
	s := n.Value
	switch v.Kind() {
	case reflect.String:
		if n.Tag != "!!str" {
			return d.errAt(n, path, "expected a string, got %s (quote it)", describe(n))
		}
		v.SetString(s)
	case reflect.Bool:
		if n.Tag != "!!bool" {
			return d.errAt(n, path, "expected true or false, got %q", s)
		}
		b, _ := strconv.ParseBool(strings.ToLower(s))
		v.SetBool(b)
	case reflect.Int, reflect.Int32, reflect.Int64:
		if n.Tag != "!!int" {
			if n.Tag == "!!float" {
				// YAML reads an integer too large for 64 bits as a float.
				if strings.Trim(strings.TrimLeft(s, "+-"), "0123456789_") == "" {
					return d.errAt(n, path, "integer %q is out of range", s)
				}
				return d.errAt(n, path, "expected an integer, got %q", s)
			}
			return d.errAt(n, path, "expected an integer, got %s", describe(n))
		}
		i, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 0, 64)
		if err != nil || v.OverflowInt(i) {
			return d.errAt(n, path, "integer %q is out of range", s)
		}
		v.SetInt(i)
	case reflect.Float64:
		if n.Tag != "!!int" && n.Tag != "!!float" {
			return d.errAt(n, path, "expected a number, got %s", describe(n))
		}
		f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
		if err != nil {
			if i, ierr := strconv.ParseInt(s, 0, 64); ierr == nil {
				f, err = float64(i), nil
			}
		}
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return d.errAt(n, path, "expected a finite number, got %q", s)
		}
		v.SetFloat(f)
	default:
		return d.errAt(n, path, "unsupported field type %s", v.Type())
	}
	d.set[path] = d.source(n)
	return nil
}

func orRoot(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}

func kindName(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Float64:
		return "a number"
	}
	return "a value"
}

type fieldInfo struct {
	index int
	check string
}

func structFields(t reflect.Type) map[string]fieldInfo {
	if f, ok := fieldsByType.Load(t); ok {
		return f.(map[string]fieldInfo)
	}
	out := map[string]fieldInfo{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		out[strings.Split(tag, ",")[0]] = fieldInfo{index: i, check: f.Tag.Get("check")}
	}
	fieldsByType.Store(t, out)
	return out
}

// fieldsByType memoises structFields: a type's fields never change, and
// the maps are only read.
var fieldsByType sync.Map

func knownFields(t reflect.Type) string {
	var names []string
	for n := range structFields(t) {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// checkTag applies a `check` rule to a decoded value.
func checkTag(rule string, v reflect.Value) error {
	if rule == "" {
		return nil
	}
	var f float64
	switch v.Kind() {
	case reflect.Int, reflect.Int32, reflect.Int64:
		f = float64(v.Int())
	case reflect.Float64:
		f = v.Float()
	default:
		return nil
	}
	switch rule {
	case "pos":
		if f <= 0 {
			return fmt.Errorf("must be greater than 0, got %v", fmtNum(v))
		}
	case "nonneg":
		if f < 0 {
			return fmt.Errorf("must not be negative, got %v", fmtNum(v))
		}
	case "frac":
		if f <= 0 || f > 1 {
			return fmt.Errorf("must be in (0, 1], got %v", fmtNum(v))
		}
	}
	return nil
}

func fmtNum(v reflect.Value) string {
	if v.Kind() == reflect.Float64 {
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	}
	return strconv.FormatInt(v.Int(), 10)
}

// walkLeaves calls fn for every leaf field of a value with its dotted path
// and its `check` rule, in declaration order: the yaml-tagged exported
// fields of structs, followed through pointers that are not nil, except
// structs that decode themselves.
func walkLeaves(v reflect.Value, path, rule string, fn func(path string, v reflect.Value, rule string)) {
	leafPlanOf(v.Type(), path, rule).walk(v, fn)
}

// leafPlan is walkLeaves' walk of one type at one path, worked out once:
// the paths and rules of a type's fields never change, and a config's
// hardware alone has a few hundred leaves, checked at every load.
type leafPlan struct {
	path, rule string
	// ptr: the type is a pointer, followed (when not nil) to the plan of
	// what it points to, looked up when first reached (a type may hold
	// pointers to itself).
	ptr bool
	// fields are a struct's (nil with leaf false: one that decodes
	// itself, or has no fields).
	fields []leafField
	leaf   bool
}

type leafField struct {
	index int
	plan  *leafPlan
}

type leafPlanKey struct {
	t          reflect.Type
	path, rule string
}

// leafPlans memoises leafPlanOf, as fieldsByType does structFields.
var leafPlans sync.Map // leafPlanKey -> *leafPlan

func leafPlanOf(t reflect.Type, path, rule string) *leafPlan {
	key := leafPlanKey{t, path, rule}
	if p, ok := leafPlans.Load(key); ok {
		return p.(*leafPlan)
	}
	p := &leafPlan{path: path, rule: rule}
	switch t.Kind() {
	case reflect.Pointer:
		p.ptr = true
	case reflect.Struct:
		if reflect.PointerTo(t).Implements(nodeDecoderType) {
			break
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("yaml")
			if tag == "" || tag == "-" || !f.IsExported() {
				continue
			}
			p.fields = append(p.fields, leafField{i, leafPlanOf(f.Type, joinPath(path, strings.Split(tag, ",")[0]), f.Tag.Get("check"))})
		}
	default:
		p.leaf = true
	}
	q, _ := leafPlans.LoadOrStore(key, p)
	return q.(*leafPlan)
}

func (p *leafPlan) walk(v reflect.Value, fn func(path string, v reflect.Value, rule string)) {
	switch {
	case p.leaf:
		fn(p.path, v, p.rule)
	case p.ptr:
		if !v.IsNil() {
			leafPlanOf(v.Type().Elem(), p.path, p.rule).walk(v.Elem(), fn)
		}
	default:
		for _, f := range p.fields {
			f.plan.walk(v.Field(f.index), fn)
		}
	}
}

// Package sweep runs a run config over a grid of parameter values: the sweep
// file (a base config and axes over its dotted paths), the points it
// expands to (a full grid, zipped lists or a seeded random sample), their
// validation before anything runs, and the runs themselves, each a trnsim
// process, with results appended as they finish so that a sweep resumes
// where it stopped and shards split it deterministically.
package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
)

// Spec is a parsed sweep file.
type Spec struct {
	// File is the sweep file's path as given; Base the run config's path,
	// resolved against the sweep file's folder (the sweep file itself when
	// the base is inline).
	File string
	Base string
	// BaseInline is an inline base: the sweep file's text with every line
	// outside base: blanked, so the config's errors name the sweep file's
	// own lines and columns and its relative paths resolve from its folder.
	BaseInline []byte
	// Mode is grid, zip or random; Samples and Seed are random's.
	Mode    string
	Samples int
	Seed    int64
	Axes    []Axis
	// Where, if set, keeps only the points where it is true (non-zero): an
	// expression over the axes' paths in the cost tables' language
	// (parallel.tp * parallel.replicas <= 64).
	Where     string
	whereLine int
	// baseLine is the line of base: in the sweep file.
	baseLine int
	// Dropped is how many points Where removed (set by Points).
	Dropped int
}

// Axis is one swept config field and its values, in the file's order.
type Axis struct {
	Path   string
	Values []string
	Line   int
}

// Error is a bad sweep file, located at the line it is about.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Load reads and checks a sweep file.
func Load(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, &Error{File: path, Msg: "no such file"}
		}
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read: %v", err)}
	}
	return Parse(data, path)
}

// Parse checks a sweep file's text; file names it in errors and locates
// the base config.
func Parse(data []byte, file string) (*Spec, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		return nil, &Error{File: file, Msg: fmt.Sprintf("cannot parse: %v", err)}
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: root.Line, Msg: "a sweep file is a mapping with base:, mode: and axes:"}
	}
	s := &Spec{File: file, Mode: "grid"}
	m := root.Content[0]
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if seen[k.Value] {
			return nil, &Error{File: file, Line: k.Line, Msg: fmt.Sprintf("%s: given twice", k.Value)}
		}
		seen[k.Value] = true
		switch k.Value {
		case "base":
			s.baseLine = k.Line
			switch {
			case v.Kind == yaml.MappingNode:
				end := 0 // the last line of the base: the line before the next key
				if i+2 < len(m.Content) {
					end = m.Content[i+2].Line - 1
				}
				s.Base, s.BaseInline = file, inlineText(data, v.Line, v.Column, end)
			case v.Kind != yaml.ScalarNode || v.Value == "":
				return nil, &Error{File: file, Line: v.Line, Msg: "base: the path of a run config, relative to this file, or the run config itself (a mapping)"}
			default:
				s.Base = v.Value
				if !filepath.IsAbs(s.Base) {
					s.Base = filepath.Join(filepath.Dir(file), s.Base)
				}
			}
		case "mode":
			if v.Value != "grid" && v.Value != "zip" && v.Value != "random" {
				return nil, &Error{File: file, Line: v.Line, Msg: fmt.Sprintf("mode: must be grid, zip or random, got %q", v.Value)}
			}
			s.Mode = v.Value
		case "samples":
			if err := v.Decode(&s.Samples); err != nil || s.Samples <= 0 {
				return nil, &Error{File: file, Line: v.Line, Msg: fmt.Sprintf("samples: a positive count, got %q", v.Value)}
			}
		case "seed":
			if err := v.Decode(&s.Seed); err != nil {
				return nil, &Error{File: file, Line: v.Line, Msg: fmt.Sprintf("seed: an integer, got %q", v.Value)}
			}
		case "where":
			if v.Kind != yaml.ScalarNode || v.Value == "" {
				return nil, &Error{File: file, Line: v.Line, Msg: "where: an expression over the axes (parallel.tp * parallel.replicas <= 64)"}
			}
			s.Where, s.whereLine = v.Value, v.Line
		case "axes":
			if v.Kind != yaml.MappingNode || len(v.Content) == 0 {
				return nil, &Error{File: file, Line: v.Line, Msg: "axes: must be a mapping of config paths to lists of values"}
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				p, vals := v.Content[j], v.Content[j+1]
				if vals.Kind != yaml.SequenceNode || len(vals.Content) == 0 {
					return nil, &Error{File: file, Line: p.Line, Msg: fmt.Sprintf("axis %s: must be a non-empty list of values", p.Value)}
				}
				ax := Axis{Path: p.Value, Line: p.Line}
				for _, x := range vals.Content {
					if x.Kind != yaml.ScalarNode {
						return nil, &Error{File: file, Line: x.Line, Msg: fmt.Sprintf("axis %s: values must be scalars", p.Value)}
					}
					ax.Values = append(ax.Values, x.Value)
				}
				for _, a := range s.Axes {
					if a.Path == ax.Path {
						return nil, &Error{File: file, Line: p.Line, Msg: fmt.Sprintf("axis %s: given twice", p.Value)}
					}
				}
				s.Axes = append(s.Axes, ax)
			}
		default:
			return nil, &Error{File: file, Line: k.Line, Msg: fmt.Sprintf("%s: unknown field (known: base, mode, samples, seed, axes, where)", k.Value)}
		}
	}
	switch {
	case s.Base == "":
		return nil, &Error{File: file, Line: m.Line, Msg: "base: required (the run config the axes change)"}
	case len(s.Axes) == 0:
		return nil, &Error{File: file, Line: m.Line, Msg: "axes: required"}
	case s.Mode == "random" && s.Samples == 0:
		return nil, &Error{File: file, Line: m.Line, Msg: "samples: required with mode: random"}
	case s.Mode != "random" && seen["samples"]:
		return nil, &Error{File: file, Line: m.Line, Msg: "samples: only with mode: random"}
	}
	if s.Mode == "zip" {
		for _, a := range s.Axes[1:] {
			if len(a.Values) != len(s.Axes[0].Values) {
				return nil, &Error{File: file, Line: a.Line, Msg: fmt.Sprintf("axis %s: %d values; mode zip needs as many as %s has (%d)",
					a.Path, len(a.Values), s.Axes[0].Path, len(s.Axes[0].Values))}
			}
		}
	}
	if s.Where != "" {
		// Compile once with the first values, to report a bad expression
		// or a name that is not a numeric axis before anything runs.
		if _, err := s.keep(Point{Values: s.firstValues()}); err != nil {
			return nil, &Error{File: file, Line: s.whereLine, Msg: "where: " + err.Error()}
		}
	}
	if s.Mode == "random" {
		if n := s.gridSize(); int64(s.Samples) > n {
			return nil, &Error{File: file, Line: m.Line, Msg: fmt.Sprintf("samples: %d is more than the %d points of the grid", s.Samples, n)}
		}
	}
	return s, nil
}

// gridSize is the number of points of the full grid (saturating).
func (s *Spec) gridSize() int64 {
	n := int64(1)
	for _, a := range s.Axes {
		n *= int64(len(a.Values))
		if n > 1<<40 {
			return 1 << 40
		}
	}
	return n
}

// Point is one combination of axis values, numbered in the sweep's order.
type Point struct {
	Index  int
	Values []string // one per axis, in the axes' order
}

// Sets returns the point's config overrides, as --set takes them.
func (s *Spec) Sets(p Point) []string {
	out := make([]string, len(s.Axes))
	for i, a := range s.Axes {
		out[i] = a.Path + "=" + p.Values[i]
	}
	return out
}

// Label prints the point's values for messages: "m=1024 partition_kib=384".
func (s *Spec) Label(p Point) string {
	parts := make([]string, len(s.Axes))
	for i, a := range s.Axes {
		parts[i] = a.Path + "=" + p.Values[i]
	}
	return strings.Join(parts, " ")
}

// Points expands the axes: the full grid (the last axis fastest), the
// zipped lists, or a random sample of the grid drawn with the seed (the
// same seed gives the same points, in grid order).
func (s *Spec) Points() []Point {
	var pts []Point
	switch s.Mode {
	case "zip":
		for i := range s.Axes[0].Values {
			v := make([]string, len(s.Axes))
			for j, a := range s.Axes {
				v[j] = a.Values[i]
			}
			pts = append(pts, Point{Index: i, Values: v})
		}
		return s.filter(pts)
	case "random":
		n := s.gridSize()
		r := rand.New(rand.NewSource(s.Seed))
		chosen := map[int64]bool{}
		for len(chosen) < s.Samples {
			chosen[r.Int63n(n)] = true
		}
		idx := 0
		for k := int64(0); k < n && idx < s.Samples; k++ {
			if chosen[k] {
				pts = append(pts, Point{Index: idx, Values: s.gridValues(k)})
				idx++
			}
		}
		return s.filter(pts)
	}
	n := s.gridSize()
	for k := int64(0); k < n; k++ {
		pts = append(pts, Point{Index: int(k), Values: s.gridValues(k)})
	}
	return s.filter(pts)
}

// gridValues returns the values of grid point k (the last axis fastest).
func (s *Spec) gridValues(k int64) []string {
	v := make([]string, len(s.Axes))
	for j := len(s.Axes) - 1; j >= 0; j-- {
		n := int64(len(s.Axes[j].Values))
		v[j] = s.Axes[j].Values[k%n]
		k /= n
	}
	return v
}

func (s *Spec) firstValues() []string {
	v := make([]string, len(s.Axes))
	for i, a := range s.Axes {
		v[i] = a.Values[0]
	}
	return v
}

// keep evaluates Where at point p: the axes with numeric values are its
// names (an axis whose value is not a number cannot be used in it).
func (s *Spec) keep(p Point) (bool, error) {
	if s.Where == "" {
		return true, nil
	}
	consts := map[string]float64{}
	for i, a := range s.Axes {
		if v, err := strconv.ParseFloat(p.Values[i], 64); err == nil {
			consts[a.Path] = v
		}
	}
	e, err := isa.CompileExpr(s.Where, consts)
	if err != nil {
		return false, err
	}
	return e.Eval(&isa.CostEnv{}) != 0, nil
}

// filter drops the points Where rejects and numbers the rest in order.
func (s *Spec) filter(pts []Point) []Point {
	s.Dropped = 0
	if s.Where == "" {
		return pts
	}
	out := pts[:0]
	for _, p := range pts {
		if ok, err := s.keep(p); err == nil && ok {
			p.Index = len(out)
			out = append(out, p)
		} else {
			s.Dropped++
		}
	}
	return out
}

// inlineText is the run config given inline as base:, cut from the sweep
// file's text so that it keeps its lines and columns: the lines from the
// mapping's first (line, column) through end (0: the file's end) are kept,
// the part of the first line before the mapping and every other line
// blanked. YAML takes an indented top-level mapping as it is.
func inlineText(data []byte, line, column, end int) []byte {
	lines := strings.SplitAfter(string(data), "\n")
	var out strings.Builder
	for i, l := range lines {
		n := i + 1
		switch {
		case n < line || (end > 0 && n > end):
			if strings.HasSuffix(l, "\n") {
				out.WriteString("\n")
			}
		case n == line:
			cut := min(max(column-1, 0), len(l))
			out.WriteString(strings.Repeat(" ", cut) + l[cut:])
		default:
			out.WriteString(l)
		}
	}
	return []byte(out.String())
}

// LoadPoint loads the base config with the point's values set.
func (s *Spec) LoadPoint(p Point) (*configs.RunConfig, error) {
	return s.loadPoint(s.parseBase(), p)
}

// parseBase reads and parses the base config, once for all the points
// that loadPoint derives from it.
func (s *Spec) parseBase() *configs.Base {
	if s.BaseInline != nil {
		return configs.ParseBase(s.BaseInline, s.File)
	}
	return configs.ReadBase(s.Base)
}

// pointError locates the error of point p: at the line of the axis whose
// value the error is about (a point's values reach its config as --set
// arguments), at base: where the base cannot be read, else at the file
// with the point's values.
func (s *Spec) pointError(p Point, err error) error {
	var ce *configs.Error
	if errors.As(err, &ce) && ce.File == configs.SetFile && ce.Set != "" {
		path, value, _ := strings.Cut(ce.Set, "=")
		for _, a := range s.Axes {
			if a.Path != path {
				continue
			}
			msg := ce.Msg
			if ce.Path != "" && ce.Path != path {
				msg = ce.Path + ": " + msg
			}
			return &Error{File: s.File, Line: a.Line, Msg: fmt.Sprintf("axis %s, value %s (point %d: %s): %s", path, value, p.Index, s.Label(p), msg)}
		}
	}
	if s.BaseInline == nil && s.baseLine > 0 {
		if _, serr := os.Stat(s.Base); serr != nil {
			return &Error{File: s.File, Line: s.baseLine, Msg: "base: " + err.Error()}
		}
	}
	return fmt.Errorf("%s: point %d (%s): %w", s.File, p.Index, s.Label(p), err)
}

// loadPoint resolves base (parseBase's) with the point's values set: the
// config, sources and errors that loading the base's file afresh with them
// gives.
func (s *Spec) loadPoint(base *configs.Base, p Point) (*configs.RunConfig, error) {
	return base.Load(configs.LoadOptions{Sets: s.Sets(p)})
}

// LoadInlineBase loads the base: given inline in the sweep file at path,
// with the sets applied: what a point's trnsim run reads (run
// --sweep-base).
func LoadInlineBase(path string, sets []string) (*configs.RunConfig, error) {
	s, err := Load(path)
	if err != nil {
		return nil, err
	}
	if s.BaseInline == nil {
		return nil, fmt.Errorf("%s: base: is a path, not an inline run config", path)
	}
	return configs.LoadBytes(s.BaseInline, path, configs.LoadOptions{Sets: sets})
}

package archtest

import (
	"bufio"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The import rules of docs/architecture.md ("What each package must not
// import"). They cover the packages' non-test files: tests may import more
// (the scheduler's tests run the chip, for example). Change a rule here and
// there together.
//
// A pattern names a package of this module by its path in the repository
// ("isa/asm"), or a tree ("workloads/..." is workloads and everything
// under it); a path whose first element has a dot is another module's
// ("github.com/sarchlab/akita/...").

// onlyRules: the module packages each subject may depend on, directly or
// through others. Every package of the module is the subject of one.
var onlyRules = []struct {
	pkgs []string
	only []string
}{
	// The bottom: simulated time, and the contract between the software
	// and the hardware side.
	{[]string{"clock", "isa"}, nil},
	{[]string{"isa/asm"}, []string{"isa"}},
	{[]string{"internal/hostcpu", "internal/archtest", "internal/memo", "internal/memo/memotest", "plots"}, nil},
	// The fabric between cores and chips: routes, links, latencies.
	{[]string{"noc"}, []string{"clock"}},
	{[]string{"internal/eventpool"}, []string{"clock"}},
	// The hardware models take typed configs from chip: no YAML, no
	// workloads, no assembly text; engines and dma do not know each other.
	{[]string{"memory"}, []string{"clock", "isa"}},
	{[]string{"engines", "dma"}, []string{"clock", "isa", "memory", "noc", "internal/eventpool"}},
	// Statistics per workload op watch the engines; they simulate nothing.
	{[]string{"opstats"}, []string{"clock", "isa", "memory", "noc", "engines", "internal/eventpool"}},
	// The config layer knows the hardware only through isa's types.
	{[]string{"configs"}, []string{"isa", "internal/memo"}},
	// The software side: the tile IR, the scheduler and the kernels never
	// see the YAML config, the chip or a hardware model.
	{[]string{"workloads/tile"}, []string{"isa", "isa/asm"}},
	{[]string{"workloads/sched"}, []string{"isa", "isa/asm", "workloads/tile", "internal/memo"}},
	{[]string{"workloads/kernels"}, []string{"isa", "isa/asm", "workloads/tile", "workloads/sched", "internal/memo"}},
	// The op graph and the models built on it know no hardware and no
	// lowering.
	{[]string{"workloads/graph"}, []string{"isa"}},
	{[]string{"workloads/nn"}, []string{"isa", "workloads/graph"}},
	{[]string{"workloads/zoo"}, []string{"isa", "workloads/graph", "workloads/nn"}},
	// The graph lowering plans each op with its kernel and composes them.
	{[]string{"workloads/lowergraph"}, []string{"isa", "isa/asm", "workloads/tile", "workloads/sched", "workloads/kernels", "workloads/graph", "internal/memo"}},
	{[]string{"workloads"}, []string{"isa", "isa/asm", "configs", "workloads/...", "internal/memo"}},
	// The simulated system knows no workload and no report.
	{[]string{"chip"}, []string{"clock", "isa", "isa/asm", "configs", "memory", "noc", "engines", "dma", "opstats", "internal/..."}},
	// The GPU baseline reads the op graph, never the Trainium program.
	{[]string{"gpu"}, []string{"isa", "workloads/graph"}},
	{[]string{"cost"}, nil},
	// Above the simulation.
	{[]string{"report"}, []string{"clock", "isa", "isa/asm", "configs", "memory", "noc", "engines", "dma", "opstats", "internal/...", "chip", "workloads/...", "gpu", "cost", "plots"}},
	{[]string{"runner"}, []string{"clock", "isa", "isa/asm", "configs", "memory", "noc", "engines", "dma", "opstats", "internal/...", "chip", "workloads/...", "gpu", "cost", "plots", "report"}},
	{[]string{"sweep"}, []string{"clock", "isa", "isa/asm", "configs", "memory", "noc", "engines", "dma", "opstats", "internal/...", "chip", "workloads/...", "gpu", "cost", "plots", "report", "runner"}},
	{[]string{"validate", "cmd/trnsim"}, []string{"..."}},
}

// notRules: what a subject must not depend on; direct counts only its own
// imports, otherwise imports through other module packages count too.
var notRules = []struct {
	pkgs   []string
	not    []string
	direct bool
}{
	// Simulated time and events are the hardware side's: the software side
	// runs without Akita.
	{[]string{"isa", "isa/asm", "configs", "workloads/..."}, []string{"github.com/sarchlab/akita/..."}, false},
	// The CLI and the validation go through runner: they call no chip and
	// no lowering themselves.
	{[]string{"cmd/trnsim", "validate"}, []string{"chip", "workloads/...", "engines", "memory", "dma"}, true},
}

// importedOnlyBy: the only packages that import a package directly.
var importedOnlyBy = []struct {
	pkg string
	by  []string
}{
	{"github.com/sarchlab/akita/...", []string{"clock", "internal/eventpool", "engines", "dma", "chip"}},
	{"gopkg.in/yaml.v3", []string{"configs", "validate", "sweep"}},
	{"github.com/spf13/cobra/...", []string{"cmd/trnsim"}},
	{"runner", []string{"cmd/trnsim", "validate", "sweep"}},
	{"validate", []string{"cmd/trnsim"}},
}

type pkg struct {
	rel     string // path in the repository ("isa/asm")
	name    string
	doc     string
	imports []string // import paths, this module's made relative
	deps    map[string]bool
}

type module struct {
	root, path string
	pkgs       map[string]*pkg
}

func loadModule(t *testing.T) *module {
	t.Helper()
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(root)
		if up == root {
			t.Fatal("no go.mod above the test's folder")
		}
		root = up
	}
	m := &module{root: root, path: modulePath(t, filepath.Join(root, "go.mod")), pkgs: map[string]*pkg{}}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root {
			if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
		}
		bp, err := build.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(root, path)
		p := &pkg{rel: filepath.ToSlash(rel), name: bp.Name, doc: bp.Doc}
		for _, imp := range bp.Imports {
			if imp == m.path || strings.HasPrefix(imp, m.path+"/") {
				imp = strings.TrimPrefix(strings.TrimPrefix(imp, m.path), "/")
			} else if !strings.Contains(strings.Split(imp, "/")[0], ".") {
				continue // the standard library
			}
			p.imports = append(p.imports, imp)
		}
		m.pkgs[p.rel] = p
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Dependencies: the imports of the module's packages, followed through
	// the module (another module's own imports are not followed).
	var visit func(p *pkg, into map[string]bool)
	visit = func(p *pkg, into map[string]bool) {
		for _, imp := range p.imports {
			if into[imp] {
				continue
			}
			into[imp] = true
			if q := m.pkgs[imp]; q != nil {
				visit(q, into)
			}
		}
	}
	for _, p := range m.pkgs {
		p.deps = map[string]bool{}
		visit(p, p.deps)
	}
	return m
}

func modulePath(t *testing.T, gomod string) string {
	f, err := os.Open(gomod)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	t.Fatalf("%s: no module line", gomod)
	return ""
}

// isExternal reports whether a path is another module's.
func isExternal(path string) bool { return strings.Contains(strings.Split(path, "/")[0], ".") }

// match reports whether path is pattern's package, or in its tree.
func match(pattern, path string) bool {
	if pattern == "..." {
		return !isExternal(path)
	}
	if tree, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == tree || strings.HasPrefix(path, tree+"/")
	}
	return path == pattern
}

func matchAny(patterns []string, path string) bool {
	for _, p := range patterns {
		if match(p, path) {
			return true
		}
	}
	return false
}

// subjects returns the packages a rule's patterns name; a pattern that
// names none is an error (the rule went stale).
func (m *module) subjects(t *testing.T, patterns []string) []*pkg {
	t.Helper()
	var out []*pkg
	for _, pat := range patterns {
		n := 0
		for _, rel := range m.sorted() {
			if match(pat, rel) {
				out = append(out, m.pkgs[rel])
				n++
			}
		}
		if n == 0 && !strings.HasSuffix(pat, "/...") {
			t.Errorf("a rule names package %s, which does not exist", pat)
		}
	}
	return out
}

func (m *module) sorted() []string {
	var rels []string
	for rel := range m.pkgs {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	return rels
}

func sortedKeys(set map[string]bool) []string {
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestImportRules(t *testing.T) {
	m := loadModule(t)
	ruled := map[string]bool{}
	for _, r := range onlyRules {
		for _, p := range m.subjects(t, r.pkgs) {
			ruled[p.rel] = true
			for _, d := range sortedKeys(p.deps) {
				if isExternal(d) || d == p.rel || matchAny(r.only, d) {
					continue
				}
				t.Errorf("%s depends on %s (%s); docs/architecture.md allows it only %v", p.rel, d, via(m, p, d), r.only)
			}
		}
	}
	for _, rel := range m.sorted() {
		if !ruled[rel] {
			t.Errorf("package %s has no import rule: add one here and in docs/architecture.md", rel)
		}
	}
	for _, r := range notRules {
		for _, p := range m.subjects(t, r.pkgs) {
			deps := p.deps
			if r.direct {
				deps = map[string]bool{}
				for _, imp := range p.imports {
					deps[imp] = true
				}
			}
			for _, d := range sortedKeys(deps) {
				if matchAny(r.not, d) {
					t.Errorf("%s must not import %s (%s; docs/architecture.md)", p.rel, d, via(m, p, d))
				}
			}
		}
	}
	for _, r := range importedOnlyBy {
		for _, rel := range m.sorted() {
			p := m.pkgs[rel]
			if matchAny(r.by, rel) || rel == r.pkg {
				continue
			}
			for _, imp := range p.imports {
				if match(r.pkg, imp) {
					t.Errorf("%s imports %s, which only %v may import (docs/architecture.md)", rel, imp, r.by)
				}
			}
		}
	}
}

// via says how p comes to depend on d: directly, or through which import.
func via(m *module, p *pkg, d string) string {
	for _, imp := range p.imports {
		if imp == d {
			return "a direct import"
		}
	}
	for _, imp := range p.imports {
		if q := m.pkgs[imp]; q != nil && q.deps[d] {
			return "through " + imp
		}
	}
	return "indirectly"
}

// TestPackageDocs checks every package says its job in a doc comment, and
// has a row in the README's layout table and a mention in
// docs/architecture.md.
func TestPackageDocs(t *testing.T) {
	m := loadModule(t)
	readme := readFile(t, filepath.Join(m.root, "README.md"))
	layout := readme
	if i := strings.Index(readme, "\n## Layout\n"); i >= 0 {
		layout = readme[i+1:]
		if j := strings.Index(layout[1:], "\n## "); j >= 0 {
			layout = layout[:j+1]
		}
	} else {
		t.Error("README.md has no \"## Layout\" section")
	}
	arch := readFile(t, filepath.Join(m.root, "docs", "architecture.md"))
	for _, rel := range m.sorted() {
		p := m.pkgs[rel]
		want := "Package " + p.name + " "
		if p.name == "main" {
			want = "Command " + filepath.Base(rel) + " "
		}
		if !strings.HasPrefix(p.doc, want) {
			t.Errorf("package %s: its doc comment should start %q and say its job; it is %q", rel, want, p.doc)
		}
		if !strings.Contains(layout, "`"+rel+"`") {
			t.Errorf("package %s has no row in the README's layout table", rel)
		}
		if !strings.Contains(arch, "`"+rel+"`") {
			t.Errorf("package %s is not in docs/architecture.md", rel)
		}
	}
	if !strings.Contains(readme, "docs/architecture.md") {
		t.Error("README.md does not link docs/architecture.md")
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

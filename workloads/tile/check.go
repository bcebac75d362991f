package tile

import (
	"fmt"
	"sort"
	"strings"

	"github.com/trnsim/trnsim/isa"
)

// Error is a kernel error, located in the text form when the kernel came
// from one.
type Error struct {
	File   string
	Kernel string
	Pos    Pos
	Msg    string
}

func (e *Error) Error() string {
	switch {
	case e.File != "" && e.Pos.Line > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Pos.Line, e.Pos.Col, e.Msg)
	case e.File != "":
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	case e.Pos.Line > 0 && e.Kernel != "":
		return fmt.Sprintf("kernel %s: %d:%d: %s", e.Kernel, e.Pos.Line, e.Pos.Col, e.Msg)
	case e.Pos.Line > 0:
		return fmt.Sprintf("%d:%d: %s", e.Pos.Line, e.Pos.Col, e.Msg)
	}
	return fmt.Sprintf("kernel %s: %s", e.Kernel, e.Msg)
}

func (k *Kernel) errAt(pos Pos, format string, args ...any) error {
	return &Error{File: k.File, Kernel: k.Name, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// MaxTileDims bounds a tile's dimensions.
const MaxTileDims = 5

// Check validates the kernel's structure: unique names, tiles and
// variables used in their scope, accesses that fit their tiles' ranks,
// operand counts and engines that can run each opcode. Sizes that depend on
// loop variables are checked when the scheduler executes the op.
func (k *Kernel) Check() error {
	if err := k.checkNames(); err != nil {
		return err
	}
	for _, t := range k.Tiles {
		if len(t.Shape) == 0 || len(t.Shape) > MaxTileDims {
			return k.errAt(t.Pos, "tile %s has %d dimensions; tiles have 1 to %d", t.Name, len(t.Shape), MaxTileDims)
		}
		for i, s := range t.Shape {
			if s <= 0 {
				return k.errAt(t.Pos, "tile %s: dimension %d is %d; sizes must be positive", t.Name, i, s)
			}
		}
		if t.DType.Bytes() == 0 {
			return k.errAt(t.Pos, "tile %s: unknown dtype", t.Name)
		}
		if t.Bufs < 1 {
			return k.errAt(t.Pos, "tile %s: bufs must be at least 1, got %d", t.Name, t.Bufs)
		}
		if t.Mem == isa.MemHBM && t.Scope != nil {
			if t.Scope.Kind != Cores {
				return k.errAt(t.Pos, "tile %s: HBM tensors are declared at kernel level or directly in a cores loop (one per rank), not inside another loop", t.Name)
			}
			if t.Bufs != 1 {
				return k.errAt(t.Pos, "tile %s: a per-rank HBM tile has one slot (bufs=1), not %d", t.Name, t.Bufs)
			}
		}
		if t.Chip != 0 && (t.Mem != isa.MemHBM || t.Scope != nil) {
			pos := t.chipPos
			if pos.Line == 0 {
				pos = t.Pos
			}
			if t.Mem != isa.MemHBM {
				return k.errAt(pos, "tile %s: chip= places kernel-level HBM tensors; an on-chip tile is on its rank's chip (core=)", t.Name)
			}
			return k.errAt(pos, "tile %s: chip= places kernel-level HBM tensors; a per-rank tile is on its rank's chip", t.Name)
		}
		if t.Mem != isa.MemHBM && t.Role != Temp {
			return k.errAt(t.Pos, "tile %s: only HBM tensors are kernel inputs or outputs", t.Name)
		}
		if t.Bank >= 0 && t.Mem != isa.MemPSUM {
			return k.errAt(t.Pos, "tile %s: bank= pins PSUM tiles only", t.Name)
		}
		if t.PartStart < 0 || (t.Mem.OnChip() && t.PartStart > 0 && int64(t.PartStart)+t.Shape[0] > 1<<16) {
			return k.errAt(t.Pos, "tile %s: part=%d out of range", t.Name, t.PartStart)
		}
	}
	c := checker{k: k, inScope: map[*Var]bool{}, tiles: map[*Tile]bool{}, ops: map[*Op]bool{}}
	for _, op := range k.Ops {
		c.ops[op] = true
	}
	for _, t := range k.Tiles {
		if t.Scope == nil {
			c.tiles[t] = true
		}
	}
	return c.stmts(k.Body, false, false)
}

// named is a parameter, tile or loop variable, for the name checks.
type named struct {
	what string // "parameter", "tile" or "loop variable"
	name string
	pos  Pos
}

// checkNames checks that the names of parameters, tiles and loop
// variables are valid and unique in the whole kernel (the text form prints
// parameters and tiles before the loops, so a name reused in another scope
// would not parse back). A clash is reported at the later declaration.
func (k *Kernel) checkNames() error {
	var all []named
	for _, p := range k.Params {
		all = append(all, named{"parameter", p.Name, p.Pos})
	}
	for _, t := range k.Tiles {
		if !validName(t.Name) {
			return k.errAt(t.Pos, "tile name %q: use letters, digits and _ (not starting with a digit)", t.Name)
		}
		all = append(all, named{"tile", t.Name, t.Pos})
	}
	for _, v := range k.Vars {
		if !validName(v.Name) {
			return k.errAt(v.Pos, "loop variable name %q: use letters, digits and _ (not starting with a digit)", v.Name)
		}
		all = append(all, named{"loop variable", v.Name, v.Pos})
	}
	// In text order; a kernel built in Go has no positions and keeps the
	// order above.
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i].pos, all[j].pos
		return a.Line < b.Line || (a.Line == b.Line && a.Col < b.Col)
	})
	first := map[string]named{}
	for _, n := range all {
		f, dup := first[n.name]
		if !dup {
			first[n.name] = n
			continue
		}
		at := ""
		if f.pos.Line > 0 {
			at = " at " + f.pos.String()
		}
		switch {
		case n.what == "tile" && f.what == "tile":
			return k.errAt(n.pos, "tile %s is declared twice (first%s)", n.name, at)
		case n.what == "loop variable" && f.what == "loop variable":
			return k.errAt(n.pos, "loop variable %s is used by two loops (the other%s); give each loop its own", n.name, at)
		}
		return k.errAt(n.pos, "%s %s has the name of a %s%s; names are unique in the whole kernel", n.what, n.name, f.what, at)
	}
	return nil
}

// CheckCores checks the kernel's core numbers against one chip of n
// NeuronCores (CheckRanks with one chip).
func (k *Kernel) CheckCores(n int) error { return k.CheckRanks(1, n) }

// CheckRanks checks the kernel's rank numbers against a system of chips
// chips of coresPerChip NeuronCores each (ranks 0 to chips * coresPerChip
// - 1; rank r is core r % coresPerChip of chip r / coresPerChip): the
// core= of every SBUF/PSUM tile declared outside the cores loops, the
// chip= of HBM tensors, the bounds of each cores loop, which must be
// constants within the ranks, and the ranks of every collective's group.
func (k *Kernel) CheckRanks(chips, coresPerChip int) error {
	n := chips * coresPerChip
	what := fmt.Sprintf("the chip's %d cores", n)
	has := fmt.Sprintf("the chip has %d", n)
	if chips > 1 {
		what = fmt.Sprintf("the system's %d ranks (%d chips of %d cores)", n, chips, coresPerChip)
		has = fmt.Sprintf("the system has %d: %d chips of %d cores", n, chips, coresPerChip)
	}
	inCores := map[*Tile]bool{}
	var walk func(stmts []Stmt, cores bool) error
	walk = func(stmts []Stmt, cores bool) error {
		for _, s := range stmts {
			switch s := s.(type) {
			case *Loop:
				in := cores || s.Kind == Cores
				if s.Kind == Cores {
					lo, ok1 := s.Start.Static()
					hi, ok2 := s.Stop.Static()
					if !ok1 || !ok2 || lo < 0 || hi > int64(n) {
						return k.errAt(s.Pos, "for %s cores: a cores loop needs constant bounds within %s", s.Var.Name, what)
					}
				}
				for _, t := range s.Tiles {
					inCores[t] = in
				}
				if err := walk(s.Body, in); err != nil {
					return err
				}
			case *If:
				if err := walk(s.Then, cores); err != nil {
					return err
				}
				if err := walk(s.Else, cores); err != nil {
					return err
				}
			case *Collective:
				for i, r := range s.Group {
					if r < 0 || r >= n {
						word := "core"
						if chips > 1 {
							word = "rank"
						}
						return k.errAt(s.GroupPos(i), "collective %s: group names %s %d, which does not exist (%s)", s.Kind, word, r, has)
					}
				}
			}
		}
		return nil
	}
	if err := walk(k.Body, false); err != nil {
		return err
	}
	for _, t := range k.Tiles {
		if t.Mem == isa.MemHBM && t.Scope == nil && (t.Chip < 0 || t.Chip >= chips) {
			pos := t.chipPos
			if pos.Line == 0 {
				pos = t.Pos
			}
			return k.errAt(pos, "tile %s: chip %d does not exist (the system has %d)", t.Name, t.Chip, chips)
		}
		if !t.Mem.OnChip() || inCores[t] || (t.Core >= 0 && t.Core < n) {
			continue
		}
		pos := t.corePos
		if pos.Line == 0 {
			pos = t.Pos
		}
		if chips > 1 {
			return k.errAt(pos, "tile %s: rank %d does not exist (%s)", t.Name, t.Core, has)
		}
		return k.errAt(pos, "tile %s: core %d does not exist (the chip has %d)", t.Name, t.Core, n)
	}
	return nil
}

type checker struct {
	k       *Kernel
	inScope map[*Var]bool
	tiles   map[*Tile]bool
	ops     map[*Op]bool
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return !keywords[s]
}

// keywords cannot name tiles or variables.
var keywords = map[string]bool{"kernel": true, "param": true, "tile": true, "for": true, "in": true, "range": true,
	"if": true, "else": true, "and": true, "or": true, "not": true, "min": true, "max": true, "cdiv": true,
	"any": true, "collective": true, "pass": true, "parallel": true, "sequential": true, "cores": true, "start": true, "stop": true}

func (c *checker) expr(e Expr, pos Pos, what string) error {
	return c.exprf(e, pos, "%s", what)
}

// exprf is expr with the expression's description made from a format
// only when there is an error to report.
func (c *checker) exprf(e Expr, pos Pos, format string, args ...any) error {
	if e.IsZero() {
		return c.k.errAt(pos, "%s is missing", fmt.Sprintf(format, args...))
	}
	var bad *Var
	e.Vars(func(v *Var) {
		if bad == nil && !c.inScope[v] {
			bad = v
		}
	})
	if bad != nil {
		return c.k.errAt(pos, "%s uses %s outside its loop", fmt.Sprintf(format, args...), bad.Name)
	}
	return nil
}

// stmts checks a statement list; inCores says it is inside a cores loop,
// coresBody that it is a cores loop's body itself.
func (c *checker) stmts(stmts []Stmt, inCores, coresBody bool) error {
	for _, s := range stmts {
		switch s := s.(type) {
		case *Loop:
			if err := c.loop(s, inCores); err != nil {
				return err
			}
		case *If:
			if err := c.expr(s.Cond, s.Pos, "the condition"); err != nil {
				return err
			}
			if err := c.stmts(s.Then, inCores, false); err != nil {
				return err
			}
			if err := c.stmts(s.Else, inCores, false); err != nil {
				return err
			}
		case *Op:
			if err := c.op(s); err != nil {
				return err
			}
		case *Collective:
			if err := c.collective(s, inCores, coresBody); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *checker) collective(s *Collective, inCores, coresBody bool) error {
	if !IsCollectiveKind(s.Kind) {
		pos := s.kindPos
		if pos.Line == 0 {
			pos = s.Pos
		}
		return c.k.errAt(pos, "unknown collective kind %q (kinds: %s)", s.Kind, strings.Join(CollectiveKinds, ", "))
	}
	where := "collective " + s.Kind
	if s.Algo != "" && !IsCollectiveAlgorithm(s.Algo) {
		return c.k.errAt(s.AlgoPos(), "%s: algo is %s, got %q", where, strings.Join(CollectiveAlgorithms, ", "), s.Algo)
	}
	if len(s.Outs) != 1 || len(s.Ins) != 1 {
		return c.k.errAt(s.Pos, "%s takes one output and one input, got %d and %d", where, len(s.Outs), len(s.Ins))
	}
	switch {
	case s.GroupSize < 0:
		return c.k.errAt(s.GroupSizePos(), "%s: group_size is a positive number of ranks, got %d", where, s.GroupSize)
	case s.GroupSize > 0 && len(s.Group) > 0:
		return c.k.errAt(s.GroupSizePos(), "%s: group= names the group, group_size= cuts the cores loop's ranks into groups; give one of them", where)
	case inCores && !coresBody:
		return c.k.errAt(s.Pos, "%s: inside a cores loop, a collective is a statement of the loop's body itself (not inside another loop or an if)", where)
	case !inCores && s.GroupSize > 0:
		return c.k.errAt(s.GroupSizePos(), "%s: group_size= cuts a cores loop's ranks into groups; outside one a collective needs group=[RANKS]", where)
	case !inCores && len(s.Group) == 0:
		return c.k.errAt(s.Pos, "%s: outside a cores loop a collective needs group=[RANKS]", where)
	}
	if (s.Kind == Send || s.Kind == Recv) && len(s.Group) != 0 && len(s.Group) != 2 {
		return c.k.errAt(s.GroupPos(0), "%s moves a tile between two ranks: group=[FROM, TO], not %d ranks", where, len(s.Group))
	}
	if (s.Kind == Send || s.Kind == Recv) && s.GroupSize != 0 && s.GroupSize != 2 {
		return c.k.errAt(s.GroupSizePos(), "%s moves a tile between two ranks: group_size=2 (each group's first to its second), not %d", where, s.GroupSize)
	}
	for i := range s.Outs {
		if err := c.collectiveAccess(&s.Outs[i], s.Pos, where); err != nil {
			return err
		}
	}
	for i := range s.Ins {
		if err := c.collectiveAccess(&s.Ins[i], s.Pos, where); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) collectiveAccess(a *Access, pos Pos, where string) error {
	if err := c.access(a, pos, where); err != nil {
		return err
	}
	if a.Pos.Line > 0 {
		pos = a.Pos
	}
	switch {
	case a.Tile.Mem != isa.MemHBM:
		return c.k.errAt(pos, "%s: %s is in %s; collectives move HBM tiles (per-rank HBM tiles declared in the cores loop)", where, a.Tile.Name, a.Tile.Mem)
	case !a.Rank.IsZero():
		if p := a.rankPos; p.Line > 0 {
			pos = p
		}
		return c.k.errAt(pos, "%s: its operands are each rank's own tiles; the group says which ranks take part (no @RANK)", where)
	case a.Rearrange != nil:
		return c.k.errAt(pos, "%s: %s: collective operands are not rearranged", where, a.Tile.Name)
	}
	return nil
}

func (c *checker) loop(l *Loop, inCores bool) error {
	for _, e := range []struct {
		e    Expr
		what string
	}{{l.Start, "the loop start"}, {l.Stop, "the loop stop"}, {l.Step, "the loop step"}} {
		if err := c.expr(e.e, l.Pos, e.what+" of "+l.Var.Name); err != nil {
			return err
		}
	}
	if st, ok := l.Step.Const(); !ok || st <= 0 {
		return c.k.errAt(l.Pos, "loop %s: the step must be a positive constant", l.Var.Name)
	}
	if l.Kind == Cores && inCores {
		return c.k.errAt(l.Pos, "loop %s: cores loops do not nest", l.Var.Name)
	}
	c.inScope[l.Var] = true
	for _, t := range l.Tiles {
		c.tiles[t] = true
	}
	err := c.stmts(l.Body, inCores || l.Kind == Cores, l.Kind == Cores)
	delete(c.inScope, l.Var)
	for _, t := range l.Tiles {
		delete(c.tiles, t)
	}
	return err
}

func (c *checker) op(op *Op) error {
	where := op.Opcode.String()
	if op.Label != "" {
		where = "@" + op.Label + " " + where
	}
	info := op.Opcode.Info()
	if int(op.Opcode) >= isa.NumOpcodes || op.Opcode == isa.OpBarrier || op.Opcode == isa.OpSemWait || op.Opcode == isa.OpSemInc {
		return c.k.errAt(op.Pos, "%s: not an op a kernel writes (the scheduler synchronises)", where)
	}
	if len(op.Outs) != info.NumOut {
		return c.k.errAt(op.Pos, "%s takes %d output(s), got %d", where, info.NumOut, len(op.Outs))
	}
	if len(op.Ins) < info.MinIn || len(op.Ins) > info.NumIn {
		return c.k.errAt(op.Pos, "%s takes %d to %d input(s), got %d", where, info.MinIn, info.NumIn, len(op.Ins))
	}
	epos := op.enginePos
	if epos.Line == 0 {
		epos = op.Pos
	}
	if !op.Any && !op.Opcode.RunsOn(op.Engine) {
		return c.k.errAt(epos, "%s cannot run on %s (it runs on %s)", where, op.Engine, engineList(op.Opcode))
	}
	if op.Any && !info.IsDMA && !anyCanRun(op.Opcode) {
		// The scheduler gives an any compute op to VectorE, ScalarE or
		// GpSimd: one that runs on none of them would be left out.
		if engs := op.Opcode.EnginesOf(); len(engs) == 1 && engs[0] == isa.EngineTensor {
			return c.k.errAt(epos, "%s runs only on TensorE; name the engine (tensor %s)", where, op.Opcode)
		}
		return c.k.errAt(epos, "%s runs on %s, which any does not choose; name the engine", where, engineList(op.Opcode))
	}
	for _, as := range [][]Access{op.Outs, op.Ins} {
		for i := range as {
			a := &as[i]
			if err := c.access(a, op.Pos, where); err != nil {
				return err
			}
			if a.Rank.IsZero() {
				continue
			}
			pos := a.rankPos
			if pos.Line == 0 {
				pos = op.Pos
			}
			switch {
			case a.Tile.Mem != isa.MemHBM || !a.Tile.PerRank():
				mem := "a kernel-level HBM tensor, one for every rank"
				if a.Tile.Mem != isa.MemHBM {
					mem = "in " + a.Tile.Mem.String()
				}
				return c.k.errAt(pos, "%s: %s@...: only per-rank HBM tiles (declared in a cores loop) have an instance on another rank; %s is %s", where, a.Tile.Name, a.Tile.Name, mem)
			case !info.IsDMA:
				return c.k.errAt(pos, "%s: %s@...: only DMA ops access another rank's tile", where, a.Tile.Name)
			}
		}
	}
	if !op.Start.IsZero() {
		if err := c.expr(op.Start, op.Pos, where+" start="); err != nil {
			return err
		}
	}
	if !op.Stop.IsZero() {
		if err := c.expr(op.Stop, op.Pos, where+" stop="); err != nil {
			return err
		}
	}
	for _, a := range op.After {
		if !c.ops[a] {
			return c.k.errAt(op.Pos, "%s: after= names an op that is not in the kernel", where)
		}
	}
	return nil
}

func (c *checker) access(a *Access, pos Pos, where string) error {
	if a.Pos.Line > 0 {
		pos = a.Pos
	}
	t := a.Tile
	if t == nil {
		return c.k.errAt(pos, "%s: an operand names no tile", where)
	}
	if !c.tiles[t] {
		return c.k.errAt(pos, "%s: tile %s is used outside the loop that declares it", where, t.Name)
	}
	if !a.Rank.IsZero() {
		rp := pos
		if a.rankPos.Line > 0 {
			rp = a.rankPos
		}
		if err := c.exprf(a.Rank, rp, "%s: the rank of %s", where, t.Name); err != nil {
			return err
		}
	}
	if len(a.Ranges) > len(t.Shape) {
		return c.k.errAt(pos, "%s: tile %s has %d dimensions, the access gives %d", where, t.Name, len(t.Shape), len(a.Ranges))
	}
	for d, r := range a.Ranges {
		if err := c.exprf(r.Start, pos, "%s: the start of dimension %d of %s", where, d, t.Name); err != nil {
			return err
		}
		if r.Index {
			continue
		}
		if err := c.exprf(r.Stop, pos, "%s: the stop of dimension %d of %s", where, d, t.Name); err != nil {
			return err
		}
		if r.Step < 1 {
			return c.k.errAt(pos, "%s: dimension %d of %s: the step must be positive, got %d", where, d, t.Name, r.Step)
		}
		if d == 0 && t.Mem.OnChip() && r.Step != 1 {
			return c.k.errAt(pos, "%s: the partition dimension of %s cannot be strided", where, t.Name)
		}
	}
	if a.Rearrange != nil {
		if t.Mem != isa.MemHBM {
			return c.k.errAt(pos, "%s: only HBM accesses are rearranged (%s is in %s)", where, t.Name, t.Mem)
		}
		if err := a.Rearrange.check(); err != nil {
			if a.Rearrange.Pos.Line > 0 {
				pos = a.Rearrange.Pos
			}
			return c.k.errAt(pos, "%s: %s: %v", where, t.Name, err)
		}
	}
	return nil
}

// check validates a rearrangement's names.
func (r *Rearrange) check() error {
	seen := map[string]bool{}
	for _, g := range r.In {
		unknown := 0
		for _, n := range g {
			if seen[n] {
				return fmt.Errorf("factor %s appears twice", n)
			}
			seen[n] = true
			if _, ok := r.Sizes[n]; !ok {
				unknown++
			}
		}
		if len(g) == 0 || unknown > 1 {
			return fmt.Errorf("each group needs the sizes of all its factors but one: %s", groupText(g))
		}
	}
	out := map[string]bool{}
	for _, n := range r.Out {
		if !seen[n] {
			return fmt.Errorf("output factor %s is not in the input", n)
		}
		if out[n] {
			return fmt.Errorf("output factor %s appears twice", n)
		}
		out[n] = true
	}
	if len(r.Out) != len(seen) {
		return fmt.Errorf("the output names %d factors, the input %d", len(r.Out), len(seen))
	}
	for n, v := range r.Sizes {
		if !seen[n] {
			return fmt.Errorf("size given for %s, which is not a factor", n)
		}
		if v <= 0 {
			return fmt.Errorf("factor %s has size %d", n, v)
		}
	}
	return nil
}

func groupText(g []string) string {
	if len(g) == 1 {
		return g[0]
	}
	return "(" + strings.Join(g, " ") + ")"
}

// anyEngines are the engines the scheduler chooses among for an any
// compute op.
var anyEngines = []isa.Engine{isa.EngineVector, isa.EngineScalar, isa.EngineGpSimd}

// anyCanRun reports whether one of anyEngines runs op.
func anyCanRun(op isa.Opcode) bool {
	for _, e := range anyEngines {
		if op.RunsOn(e) {
			return true
		}
	}
	return false
}

// CheckRunnable reports a kernel that would schedule to no instructions
// because it has neither ops nor collectives.
func (k *Kernel) CheckRunnable() error {
	if len(k.Ops) > 0 || len(k.Collectives()) > 0 {
		return nil
	}
	return k.errAt(k.Pos, "kernel %s has no instructions to run: it has no ops", k.Name)
}

func engineList(op isa.Opcode) string {
	var names []string
	for _, e := range op.EnginesOf() {
		names = append(names, e.String())
	}
	return strings.Join(names, ", ")
}

// Dims applies the rearrangement to a slice with dimension sizes sizes
// and element strides strides (outermost first): it returns the sizes and
// strides of the output dimensions, in output order.
func (r *Rearrange) Dims(sizes, strides []int64) (outSizes, outStrides []int64, err error) {
	if len(sizes) != len(r.In) {
		return nil, nil, fmt.Errorf("the rearrangement has %d input dimensions; the slice has %d", len(r.In), len(sizes))
	}
	fs := map[string][2]int64{}
	for d, g := range r.In {
		known := int64(1)
		missing := ""
		for _, n := range g {
			if v, ok := r.Sizes[n]; ok {
				known *= v
			} else {
				missing = n
			}
		}
		switch {
		case missing != "" && sizes[d]%known != 0:
			return nil, nil, fmt.Errorf("dimension %d has size %d, not a multiple of %d (%s)", d, sizes[d], known, groupText(g))
		case missing == "" && known != sizes[d]:
			return nil, nil, fmt.Errorf("dimension %d has size %d, not %d (%s)", d, sizes[d], known, groupText(g))
		}
		stride := strides[d]
		for i := len(g) - 1; i >= 0; i-- {
			n := g[i]
			sz := r.Sizes[n]
			if n == missing {
				sz = sizes[d] / known
			}
			fs[n] = [2]int64{sz, stride}
			stride *= sz
		}
	}
	for _, n := range r.Out {
		outSizes = append(outSizes, fs[n][0])
		outStrides = append(outStrides, fs[n][1])
	}
	return outSizes, outStrides, nil
}

// String prints the rearrangement in the text form.
func (r *Rearrange) String() string {
	var in []string
	for _, g := range r.In {
		var parts []string
		for _, n := range g {
			if v, ok := r.Sizes[n]; ok {
				parts = append(parts, fmt.Sprintf("%s:%d", n, v))
			} else {
				parts = append(parts, n)
			}
		}
		if len(g) == 1 {
			in = append(in, parts[0])
		} else {
			in = append(in, "("+strings.Join(parts, " ")+")")
		}
	}
	return strings.Join(in, " ") + " -> " + strings.Join(r.Out, " ")
}

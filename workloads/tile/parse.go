package tile

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/isa/asm"
)

// Parse reads a kernel in the text form (see docs/tile.md); file names the
// source in error messages, which give file:line:col.
func Parse(src, file string) (*Kernel, error) {
	p := &parser{file: file, params: map[string]Expr{}, vars: map[string]*Var{}, tiles: map[string]*Tile{},
		labels: map[string]*Op{}}
	for i, raw := range strings.Split(src, "\n") {
		if strings.IndexByte(raw, 0) >= 0 {
			return nil, &Error{File: file, Pos: Pos{i + 1, 1}, Msg: "NUL byte in source"}
		}
		text := stripComment(raw)
		if strings.TrimSpace(text) == "" {
			continue
		}
		indent := 0
		for indent < len(text) && text[indent] == ' ' {
			indent++
		}
		if indent < len(text) && text[indent] == '\t' {
			return nil, &Error{File: file, Pos: Pos{i + 1, indent + 1}, Msg: "indent with spaces, not tabs"}
		}
		toks, err := lexLine(text)
		if err != nil {
			err.File, err.Pos.Line = file, i+1
			return nil, err
		}
		p.lines = append(p.lines, srcLine{num: i + 1, indent: indent, toks: toks})
	}
	if len(p.lines) == 0 || len(p.lines[0].toks) == 0 || p.lines[0].toks[0].text != "kernel" {
		line := 1
		if len(p.lines) > 0 {
			line = p.lines[0].num
		}
		return nil, &Error{File: file, Pos: Pos{line, 1}, Msg: "a kernel starts with \"kernel NAME\""}
	}
	p.start(0)
	p.take()
	nt := p.take()
	if nt.kind != tIdent {
		return nil, p.errAt(nt, "expected the kernel's name, got %q", nt.text)
	}
	p.k = New(nt.text)
	p.k.File, p.k.Pos = file, Pos{p.line, nt.col}
	if err := p.endOfLine(); err != nil {
		return nil, err
	}
	if p.lines[0].indent != 0 {
		return nil, p.errAt(nt, "the kernel line is not indented")
	}
	p.li = 1
	if err := p.block(0, nil, &p.k.Body); err != nil {
		return nil, err
	}
	if p.li < len(p.lines) {
		l := p.lines[p.li]
		return nil, &Error{File: file, Pos: Pos{l.num, l.indent + 1}, Msg: "unexpected indent"}
	}
	for _, pa := range p.afters {
		target, ok := p.labels[pa.label]
		if !ok {
			return nil, &Error{File: file, Pos: pa.pos, Msg: fmt.Sprintf("after=%s: no op has label @%s", pa.label, pa.label)}
		}
		pa.op.After = append(pa.op.After, target)
	}
	if err := p.k.Finish(); err != nil {
		return nil, err
	}
	return p.k, nil
}

type srcLine struct {
	num    int
	indent int
	toks   []token
}

type pendingAfter struct {
	op    *Op
	label string
	pos   Pos
}

type parser struct {
	file   string
	k      *Kernel
	lines  []srcLine
	li     int // next line
	toks   []token
	pos    int
	line   int
	params map[string]Expr
	vars   map[string]*Var
	tiles  map[string]*Tile
	labels map[string]*Op
	afters []pendingAfter
}

func (p *parser) start(i int) {
	p.toks, p.pos, p.line = p.lines[i].toks, 0, p.lines[i].num
}

func (p *parser) errAt(t token, format string, args ...any) error {
	return &Error{File: p.file, Pos: Pos{p.line, t.col}, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) peek() token {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	end := 1
	if n := len(p.toks); n > 0 {
		end = p.toks[n-1].col + len(p.toks[n-1].text)
	}
	return token{kind: tEOL, text: "end of line", col: end}
}

func (p *parser) take() token {
	t := p.peek()
	if p.pos < len(p.toks) {
		p.pos++
	}
	return t
}

func (p *parser) is(text string) bool {
	t := p.peek()
	return t.kind != tEOL && t.text == text
}

func (p *parser) expect(text string) error {
	t := p.take()
	if t.kind == tEOL || t.text != text {
		return p.errAt(t, "expected %q, got %q", text, t.text)
	}
	return nil
}

func (p *parser) endOfLine() error {
	if t := p.peek(); t.kind != tEOL {
		return p.errAt(t, "unexpected %q", t.text)
	}
	return nil
}

func (p *parser) pos0() Pos { return Pos{p.line, p.toks[0].col} }

// block parses the statements at one indentation.
func (p *parser) block(indent int, loop *Loop, stmts *[]Stmt) error {
	for p.li < len(p.lines) {
		l := p.lines[p.li]
		if l.indent < indent {
			return nil
		}
		if l.indent > indent {
			return &Error{File: p.file, Pos: Pos{l.num, l.indent + 1}, Msg: "unexpected indent"}
		}
		p.start(p.li)
		p.li++
		if err := p.statement(indent, loop, stmts); err != nil {
			return err
		}
	}
	return nil
}

// body parses the indented block after a line ending in ':'.
func (p *parser) body(indent int, loop *Loop, stmts *[]Stmt, at token) error {
	if p.li >= len(p.lines) || p.lines[p.li].indent <= indent {
		return p.errAt(at, "expected an indented block after ':'")
	}
	return p.block(p.lines[p.li].indent, loop, stmts)
}

func (p *parser) statement(indent int, loop *Loop, stmts *[]Stmt) error {
	first := p.peek()
	switch first.text {
	case "kernel":
		return p.errAt(first, "a file holds one kernel")
	case "param":
		return p.param(loop)
	case "tile":
		return p.tile(loop)
	case "for":
		return p.forLoop(indent, loop, stmts)
	case "if":
		return p.ifStmt(indent, loop, stmts)
	case "else":
		return p.errAt(first, "else without if")
	case "collective":
		return p.collective(stmts)
	case "pass":
		p.take()
		return p.endOfLine()
	}
	return p.op(stmts)
}

func (p *parser) param(loop *Loop) error {
	p.take()
	nt := p.take()
	if nt.kind != tIdent || !validName(nt.text) {
		return p.errAt(nt, "expected a parameter name, got %q", nt.text)
	}
	if loop != nil {
		return p.errAt(nt, "parameters are declared at kernel level")
	}
	if p.taken(nt.text) {
		return p.errAt(nt, "%s is already defined", nt.text)
	}
	if err := p.expect("="); err != nil {
		return err
	}
	vt := p.peek()
	e, err := p.expr()
	if err != nil {
		return err
	}
	v, ok := e.Static()
	if !ok {
		return p.errAt(vt, "a parameter's value must be constant")
	}
	p.params[nt.text] = P(nt.text, v)
	p.k.Params = append(p.k.Params, Param{Name: nt.text, Value: v, Pos: Pos{p.line, nt.col}})
	return p.endOfLine()
}

func (p *parser) taken(name string) bool {
	_, a := p.params[name]
	_, b := p.vars[name]
	_, c := p.tiles[name]
	return a || b || c
}

func (p *parser) tile(loop *Loop) error {
	p.take()
	nt := p.take()
	if nt.kind != tIdent || !validName(nt.text) {
		return p.errAt(nt, "expected a tile name, got %q", nt.text)
	}
	if p.taken(nt.text) {
		return p.errAt(nt, "%s is already defined", nt.text)
	}
	mt := p.take()
	mem, ok := isa.ParseMemory(mt.text)
	if !ok {
		return p.errAt(mt, "expected hbm, sbuf or psum, got %q", mt.text)
	}
	dt := p.take()
	dtype, ok := isa.ParseDType(dt.text)
	if !ok {
		return p.errAt(dt, "unknown dtype %q (dtypes: %s)", dt.text, strings.Join(isa.DTypeNames(), ", "))
	}
	if err := p.expect("["); err != nil {
		return err
	}
	var shape []int64
	var shapeExprs []Expr
	for {
		st := p.peek()
		e, err := p.expr()
		if err != nil {
			return err
		}
		v, ok := e.Static()
		if !ok {
			return p.errAt(st, "tile sizes must be constant")
		}
		shape = append(shape, v)
		shapeExprs = append(shapeExprs, e)
		if p.is(",") {
			p.take()
			continue
		}
		if err := p.expect("]"); err != nil {
			return err
		}
		break
	}
	b := &Block{k: p.k, loop: loop}
	t := b.Tile(nt.text, mem, dtype, shape, 1)
	t.Pos = Pos{p.line, nt.col}
	t.shapeExprs = shapeExprs
	seen := map[string]bool{}
	for p.peek().kind != tEOL {
		kt := p.take()
		if seen[kt.text] {
			return p.errAt(kt, "%s given twice", kt.text)
		}
		seen[kt.text] = true
		switch kt.text {
		case "input":
			t.Role = Input
			continue
		case "output":
			t.Role = Output
			continue
		case "temp":
			t.Role = Temp
			continue
		}
		if kt.kind != tIdent {
			return p.errAt(kt, "expected a tile option, got %q", kt.text)
		}
		if err := p.expect("="); err != nil {
			return err
		}
		vt := p.peek()
		e, err := p.expr()
		if err != nil {
			return err
		}
		v, ok := e.Static()
		if !ok {
			return p.errAt(vt, "%s must be constant", kt.text)
		}
		switch kt.text {
		case "bufs":
			if v < 1 || v > 1<<16 {
				return p.errAt(vt, "bufs must be 1 to 65536, got %d", v)
			}
			t.Bufs = int(v)
		case "core":
			if v < 0 || v > 1<<16 {
				return p.errAt(vt, "core %d out of range", v)
			}
			t.Core, t.corePos = int(v), Pos{p.line, vt.col}
		case "chip":
			if v < 0 || v > 1<<16 {
				return p.errAt(vt, "chip %d out of range", v)
			}
			t.Chip, t.chipPos = int(v), Pos{p.line, vt.col}
		case "at":
			if v < 0 {
				return p.errAt(vt, "at must not be negative")
			}
			t.Offset = v
		case "bank":
			if v < 0 || v > 1<<10 {
				return p.errAt(vt, "bank %d out of range", v)
			}
			t.Bank = int(v)
		case "part":
			if v < 0 || v > 1<<12 {
				return p.errAt(vt, "part %d out of range", v)
			}
			t.PartStart = int(v)
		default:
			return p.errAt(kt, "unknown tile option %q (options: bufs, core, chip, at, bank, part, input, output, temp)", kt.text)
		}
	}
	p.tiles[t.Name] = t
	return nil
}

func (p *parser) forLoop(indent int, outer *Loop, stmts *[]Stmt) error {
	ft := p.take()
	vt := p.take()
	if vt.kind != tIdent || !validName(vt.text) {
		return p.errAt(vt, "expected a loop variable, got %q", vt.text)
	}
	if p.taken(vt.text) {
		return p.errAt(vt, "%s is already defined", vt.text)
	}
	if err := p.expect("in"); err != nil {
		return err
	}
	if err := p.expect("range"); err != nil {
		return err
	}
	if err := p.expect("("); err != nil {
		return err
	}
	var args []Expr
	for {
		e, err := p.expr()
		if err != nil {
			return err
		}
		args = append(args, e)
		if p.is(",") {
			p.take()
			continue
		}
		if err := p.expect(")"); err != nil {
			return err
		}
		break
	}
	l := &Loop{Var: p.k.Var(vt.text), Step: C(1), Pos: Pos{p.line, ft.col}}
	l.Var.Pos = Pos{p.line, vt.col}
	switch len(args) {
	case 1:
		l.Start, l.Stop = C(0), args[0]
	case 2:
		l.Start, l.Stop = args[0], args[1]
	case 3:
		l.Start, l.Stop, l.Step = args[0], args[1], args[2]
	default:
		return p.errAt(ft, "range takes 1 to 3 arguments")
	}
	kt := p.peek()
	switch kt.text {
	case "parallel":
		l.Kind = Parallel
		p.take()
	case "sequential":
		l.Kind = Sequential
		p.take()
	case "cores":
		l.Kind = Cores
		p.take()
	case ":":
	default:
		return p.errAt(kt, "expected parallel, sequential, cores or ':', got %q", kt.text)
	}
	colon := p.peek()
	if err := p.expect(":"); err != nil {
		return err
	}
	if err := p.endOfLine(); err != nil {
		return err
	}
	*stmts = append(*stmts, l)
	p.vars[vt.text] = l.Var
	saved := p.scopeTiles()
	err := p.body(indent, l, &l.Body, colon)
	delete(p.vars, vt.text)
	p.restoreTiles(saved)
	return err
}

// scopeTiles returns the tiles visible now; restoreTiles forgets those
// declared since (a loop's tiles are visible inside it only).
func (p *parser) scopeTiles() map[string]bool {
	m := map[string]bool{}
	for n := range p.tiles {
		m[n] = true
	}
	return m
}

func (p *parser) restoreTiles(saved map[string]bool) {
	for n := range p.tiles {
		if !saved[n] {
			delete(p.tiles, n)
		}
	}
}

func (p *parser) ifStmt(indent int, loop *Loop, stmts *[]Stmt) error {
	it := p.take()
	cond, err := p.expr()
	if err != nil {
		return err
	}
	colon := p.peek()
	if err := p.expect(":"); err != nil {
		return err
	}
	if err := p.endOfLine(); err != nil {
		return err
	}
	s := &If{Cond: cond, Pos: Pos{p.line, it.col}}
	*stmts = append(*stmts, s)
	if err := p.body(indent, loop, &s.Then, colon); err != nil {
		return err
	}
	if p.li < len(p.lines) && p.lines[p.li].indent == indent && len(p.lines[p.li].toks) > 0 && p.lines[p.li].toks[0].text == "else" {
		p.start(p.li)
		p.li++
		p.take()
		colon := p.peek()
		if err := p.expect(":"); err != nil {
			return err
		}
		if err := p.endOfLine(); err != nil {
			return err
		}
		return p.body(indent, loop, &s.Else, colon)
	}
	return nil
}

func (p *parser) collective(stmts *[]Stmt) error {
	ct := p.take()
	kt := p.take()
	if kt.kind != tIdent {
		return p.errAt(kt, "expected a collective kind (%s), got %q", strings.Join(CollectiveKinds, ", "), kt.text)
	}
	ops, err := p.operands()
	if err != nil {
		return err
	}
	if len(ops) < 2 {
		return p.errAt(kt, "collective %s takes an output and at least one input", kt.text)
	}
	c := &Collective{Kind: kt.text, Outs: ops[:1], Ins: ops[1:], Pos: Pos{p.line, ct.col}, kindPos: Pos{p.line, kt.col}}
	seen := map[string]bool{}
	for p.peek().kind != tEOL {
		at := p.take()
		if seen[at.text] {
			return p.errAt(at, "%s given twice", at.text)
		}
		seen[at.text] = true
		if err := p.expect("="); err != nil {
			return err
		}
		switch at.text {
		case "group":
			if err := p.expect("["); err != nil {
				return err
			}
			for {
				t := p.take()
				v, err := strconv.Atoi(t.text)
				if t.kind != tInt || err != nil || v > 1<<16 {
					return p.errAt(t, "expected a rank number, got %q", t.text)
				}
				for i, g := range c.Group {
					if g == v {
						return p.errAt(t, "rank %d is in the group twice (the other at %s)", v, c.groupPos[i])
					}
				}
				c.Group = append(c.Group, v)
				c.groupPos = append(c.groupPos, Pos{p.line, t.col})
				if p.is(",") {
					p.take()
					continue
				}
				if err := p.expect("]"); err != nil {
					return err
				}
				break
			}
		case "op":
			t := p.take()
			v, err := strconv.ParseInt(t.text, 10, 32)
			if t.kind != tInt || err != nil {
				return p.errAt(t, "expected an op id, got %q", t.text)
			}
			c.OpID = int32(v)
		case "algo":
			t := p.take()
			if t.kind != tIdent || !IsCollectiveAlgorithm(t.text) {
				return p.errAt(t, "algo is %s, got %q", strings.Join(CollectiveAlgorithms, ", "), t.text)
			}
			c.Algo, c.algoPos = t.text, Pos{p.line, t.col}
		case "group_size":
			t := p.take()
			v, err := strconv.Atoi(t.text)
			if t.kind != tInt || err != nil || v < 1 || v > 1<<16 {
				return p.errAt(t, "expected a group size (a positive number of ranks), got %q", t.text)
			}
			c.GroupSize, c.groupSizePos = v, Pos{p.line, t.col}
		default:
			return p.errAt(at, "collective takes group=, group_size=, algo= and op=, not %q", at.text)
		}
	}
	*stmts = append(*stmts, c)
	return nil
}

func (p *parser) op(stmts *[]Stmt) error {
	op := &Op{Pos: p.pos0()}
	if p.is("@") {
		p.take()
		lt := p.take()
		if lt.kind != tIdent {
			return p.errAt(lt, "expected a label after @, got %q", lt.text)
		}
		if _, dup := p.labels[lt.text]; dup {
			return p.errAt(lt, "label @%s is used twice", lt.text)
		}
		op.Label = lt.text
		p.labels[lt.text] = op
	}
	et := p.take()
	op.enginePos = Pos{p.line, et.col}
	if et.text == "any" {
		op.Any = true
	} else if e, ok := isa.ParseEngine(et.text); ok {
		op.Engine = e
	} else {
		return p.errAt(et, "expected an engine (tensor, vector, scalar, gpsimd, sync or any), got %q", et.text)
	}
	ot := p.take()
	code, ok := isa.ParseOpcode(ot.text)
	if !ok || ot.kind != tIdent {
		return p.errAt(ot, "unknown opcode %q", ot.text)
	}
	op.Opcode = code
	if code == isa.OpActivation {
		op.Attrs.Scale = 1
	}
	ops, err := p.operands()
	if err != nil {
		return err
	}
	info := code.Info()
	if len(ops) < info.NumOut+info.MinIn || len(ops) > info.NumOut+info.NumIn {
		want := strconv.Itoa(info.NumOut + info.MinIn)
		if info.NumIn != info.MinIn {
			want = fmt.Sprintf("%d to %d", info.NumOut+info.MinIn, info.NumOut+info.NumIn)
		}
		return p.errAt(ot, "%s takes %s operand(s), got %d", code, want, len(ops))
	}
	op.Outs, op.Ins = ops[:info.NumOut], ops[info.NumOut:]
	if len(op.Outs) == 0 {
		op.Outs = nil
	}
	if len(op.Ins) == 0 {
		op.Ins = nil
	}
	if err := p.attrs(op); err != nil {
		return err
	}
	*stmts = append(*stmts, op)
	return nil
}

// operands parses a comma-separated list of accesses; it stops at the
// first attribute (an identifier followed by "=", or start/stop).
func (p *parser) operands() ([]Access, error) {
	var out []Access
	for {
		t := p.peek()
		if t.kind != tIdent || t.text == "start" || t.text == "stop" {
			return out, nil
		}
		if p.pos+1 < len(p.toks) && p.toks[p.pos+1].text == "=" {
			return out, nil
		}
		a, err := p.access()
		if err != nil {
			return nil, err
		}
		out = append(out, a)
		if !p.is(",") {
			return out, nil
		}
		p.take()
	}
}

func (p *parser) access() (Access, error) {
	nt := p.take()
	t, ok := p.tiles[nt.text]
	if !ok {
		return Access{}, p.errAt(nt, "unknown tile %q (declare it with tile before use)", nt.text)
	}
	a := Access{Tile: t, Pos: Pos{p.line, nt.col}}
	if p.is("@") {
		// x@RANK: another rank's instance; the rank is an atom (a number,
		// a name or a parenthesised expression).
		at := p.take()
		a.rankPos = Pos{p.line, at.col}
		if p.peek().kind == tEOL {
			return a, p.errAt(p.peek(), "expected a rank after @ (a number, a name or an expression in parentheses)")
		}
		r, err := p.atom()
		if err != nil {
			return a, err
		}
		a.Rank = r
	}
	if p.is("[") {
		p.take()
		for {
			var r Range
			if p.is(":") {
				// ':' alone: the whole dimension.
				p.take()
				d := len(a.Ranges)
				if d >= len(t.Shape) {
					return a, p.errAt(nt, "tile %s has %d dimensions", t.Name, len(t.Shape))
				}
				r = Range{Start: C(0), Stop: C(t.Shape[d]), Step: 1}
			} else {
				start, err := p.expr()
				if err != nil {
					return a, err
				}
				if p.is(":") {
					p.take()
					stop, err := p.expr()
					if err != nil {
						return a, err
					}
					r = Range{Start: start, Stop: stop, Step: 1}
					if p.is(":") {
						p.take()
						st := p.take()
						v, err := strconv.ParseInt(st.text, 10, 64)
						if st.kind != tInt || err != nil || v < 1 {
							return a, p.errAt(st, "a step is a positive integer, got %q", st.text)
						}
						r.Step = v
					}
				} else {
					r = Range{Start: start, Index: true}
				}
			}
			a.Ranges = append(a.Ranges, r)
			if p.is(",") {
				p.take()
				continue
			}
			if err := p.expect("]"); err != nil {
				return a, err
			}
			break
		}
	}
	if p.is("<") {
		r, err := p.rearrange()
		if err != nil {
			return a, err
		}
		a.Rearrange = r
	}
	return a, nil
}

// rearrange parses <(t p:128) m -> p t m>.
func (p *parser) rearrange() (*Rearrange, error) {
	lt := p.take()
	r := &Rearrange{Sizes: map[string]int64{}, Pos: Pos{p.line, lt.col}}
	factor := func() (string, error) {
		t := p.take()
		if t.kind != tIdent {
			return "", p.errAt(t, "expected a factor name, got %q", t.text)
		}
		if p.is(":") {
			p.take()
			st := p.take()
			v, err := strconv.ParseInt(st.text, 10, 64)
			if st.kind != tInt || err != nil || v < 1 {
				return "", p.errAt(st, "a factor size is a positive integer, got %q", st.text)
			}
			r.Sizes[t.text] = v
		}
		return t.text, nil
	}
	for !p.is("->") {
		if p.peek().kind == tEOL {
			return nil, p.errAt(p.peek(), "expected -> in the rearrangement")
		}
		if p.is("(") {
			p.take()
			var g []string
			for !p.is(")") {
				n, err := factor()
				if err != nil {
					return nil, err
				}
				g = append(g, n)
			}
			p.take()
			r.In = append(r.In, g)
			continue
		}
		n, err := factor()
		if err != nil {
			return nil, err
		}
		r.In = append(r.In, []string{n})
	}
	p.take()
	for !p.is(">") {
		t := p.take()
		if t.kind != tIdent {
			return nil, p.errAt(t, "expected a factor name or '>', got %q", t.text)
		}
		r.Out = append(r.Out, t.text)
	}
	p.take()
	return r, nil
}

func (p *parser) attrs(op *Op) error {
	seen := map[string]bool{}
	keys := asm.AttrKeys(op.Opcode)
	allowed := func(k string) bool {
		if k == "op" || k == "after" {
			return true
		}
		for _, x := range keys {
			if x == k {
				return true
			}
		}
		return false
	}
	a := &op.Attrs
	for p.peek().kind != tEOL {
		kt := p.take()
		if kt.kind != tIdent {
			return p.errAt(kt, "expected an attribute, got %q", kt.text)
		}
		key := kt.text
		if !allowed(key) {
			return p.errAt(kt, "%s does not take %s (it takes: %s)", op.Opcode, key, strings.Join(append(keys, "op", "after"), ", "))
		}
		if key != "after" && seen[key] {
			return p.errAt(kt, "%s given twice", key)
		}
		seen[key] = true
		if (key == "start" || key == "stop") && !p.is("=") {
			if key == "start" {
				op.Start = C(1)
			} else {
				op.Stop = C(1)
			}
			continue
		}
		if err := p.expect("="); err != nil {
			return err
		}
		vt := p.peek()
		switch key {
		case "start", "stop":
			e, err := p.expr()
			if err != nil {
				return err
			}
			if key == "start" {
				op.Start = e
			} else {
				op.Stop = e
			}
		case "alu", "alu0", "alu1", "acc":
			t := p.take()
			v, ok := isa.ParseALUOp(t.text)
			if !ok {
				return p.errAt(t, "unknown operator %q", t.text)
			}
			switch key {
			case "alu", "alu0":
				a.ALU0 = v
			case "alu1":
				a.ALU1 = v
			case "acc":
				a.Accumulate = v
			}
		case "func":
			t := p.take()
			v, ok := isa.ParseActFunc(t.text)
			if !ok {
				return p.errAt(t, "unknown activation function %q", t.text)
			}
			a.Func = v
		case "imm0", "imm1", "scale", "value", "base", "step":
			v, err := p.float()
			if err != nil {
				return err
			}
			switch key {
			case "imm0":
				a.Imm0 = v
			case "imm1":
				a.Imm1 = v
			case "scale":
				a.Scale = v
			case "value", "base":
				a.Value = v
			case "step":
				a.Step = v
			}
		case "perf", "axis", "queue", "op":
			t := p.take()
			v, err := strconv.ParseInt(t.text, 10, 32)
			if t.kind != tInt || err != nil || v < 0 {
				return p.errAt(t, "%s takes a non-negative integer, got %q", key, t.text)
			}
			switch key {
			case "perf":
				if v != 0 && v != 2 && v != 4 {
					return p.errAt(t, "perf is 0, 2 (FP8 double-row) or 4 (MX quad), got %d", v)
				}
				a.PerfMode = uint8(v)
			case "axis":
				a.Axis = uint8(v)
			case "queue":
				a.Queue, op.QueuePinned = int16(v), true
			case "op":
				op.OpID = int32(v)
			}
		case "dge":
			t := p.take()
			v, ok := isa.ParseDGEKind(t.text)
			if !ok {
				return p.errAt(t, "dge is none, sw or hw, got %q", t.text)
			}
			a.DGE, op.DGESet = v, true
		case "after":
			t := p.take()
			if t.kind != tIdent {
				return p.errAt(t, "after= takes an op label, got %q", t.text)
			}
			p.afters = append(p.afters, pendingAfter{op: op, label: t.text, pos: Pos{p.line, t.col}})
		default:
			return p.errAt(vt, "attribute %s is not supported in kernels", key)
		}
	}
	return nil
}

func (p *parser) float() (float64, error) {
	neg := false
	if p.is("-") {
		p.take()
		neg = true
	}
	t := p.take()
	if t.kind != tInt && t.kind != tFloat {
		return 0, p.errAt(t, "expected a number, got %q", t.text)
	}
	v, err := strconv.ParseFloat(t.text, 64)
	if err != nil {
		return 0, p.errAt(t, "bad number %q", t.text)
	}
	if neg {
		v = -v
	}
	return v, nil
}

// Expressions: or < and < not < comparisons < + - < * // % < unary -.
// The parser keeps the tree as written (no folding), so printing it gives
// the text back.

func (p *parser) expr() (Expr, error) { return p.orExpr() }

// leftAssoc parses next (op next)* for the operators of one precedence
// level, left-associative.
func (p *parser) leftAssoc(next func() (Expr, error), ops map[string]opKind) (Expr, error) {
	a, err := next()
	for err == nil {
		k, ok := ops[p.peek().text]
		if !ok || p.peek().kind == tEOL {
			break
		}
		p.take()
		var b Expr
		if b, err = next(); err == nil {
			a = Expr{&node{kind: k, a: a.n, b: b.n}}
		}
	}
	return a, err
}

var (
	orOps  = map[string]opKind{"or": kOr}
	andOps = map[string]opKind{"and": kAnd}
	addOps = map[string]opKind{"+": kAdd, "-": kSub}
	mulOps = map[string]opKind{"*": kMul, "//": kDiv, "%": kMod}
)

func (p *parser) orExpr() (Expr, error)  { return p.leftAssoc(p.andExpr, orOps) }
func (p *parser) andExpr() (Expr, error) { return p.leftAssoc(p.notExpr, andOps) }

func (p *parser) notExpr() (Expr, error) {
	if p.is("not") {
		p.take()
		e, err := p.notExpr()
		if err != nil {
			return e, err
		}
		return Expr{&node{kind: kNot, a: e.n}}, nil
	}
	return p.cmpExpr()
}

var cmpOps = map[string]opKind{"==": kEq, "!=": kNe, "<": kLt, "<=": kLe, ">": kGt, ">=": kGe}

func (p *parser) cmpExpr() (Expr, error) {
	a, err := p.addExpr()
	if err != nil {
		return a, err
	}
	if k, ok := cmpOps[p.peek().text]; ok && p.peek().kind == tPunct {
		p.take()
		b, err := p.addExpr()
		if err != nil {
			return a, err
		}
		return Expr{&node{kind: k, a: a.n, b: b.n}}, nil
	}
	return a, nil
}

func (p *parser) addExpr() (Expr, error) { return p.leftAssoc(p.mulExpr, addOps) }
func (p *parser) mulExpr() (Expr, error) { return p.leftAssoc(p.unary, mulOps) }

func (p *parser) unary() (Expr, error) {
	if p.is("-") {
		p.take()
		if n := p.peek(); n.kind == tInt {
			p.take()
			// Parsed with its sign, so the smallest integer is a literal.
			v, err := strconv.ParseInt("-"+n.text, 10, 64)
			if err != nil {
				return Expr{}, p.errAt(n, "integer -%s out of range", n.text)
			}
			return C(v), nil
		}
		e, err := p.unary()
		if err != nil {
			return e, err
		}
		return Expr{&node{kind: kNeg, a: e.n}}, nil
	}
	return p.atom()
}

func (p *parser) atom() (Expr, error) {
	t := p.take()
	switch t.kind {
	case tInt:
		v, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil {
			return Expr{}, p.errAt(t, "integer %s out of range", t.text)
		}
		return C(v), nil
	case tIdent:
		switch t.text {
		case "min", "max", "cdiv":
			if err := p.expect("("); err != nil {
				return Expr{}, err
			}
			a, err := p.expr()
			if err != nil {
				return a, err
			}
			if err := p.expect(","); err != nil {
				return Expr{}, err
			}
			b, err := p.expr()
			if err != nil {
				return b, err
			}
			if err := p.expect(")"); err != nil {
				return Expr{}, err
			}
			k := map[string]opKind{"min": kMin, "max": kMax, "cdiv": kCDiv}[t.text]
			return Expr{&node{kind: k, a: a.n, b: b.n}}, nil
		}
		if e, ok := p.params[t.text]; ok {
			return e, nil
		}
		if v, ok := p.vars[t.text]; ok {
			return v.E(), nil
		}
		if _, ok := p.tiles[t.text]; ok {
			return Expr{}, p.errAt(t, "%s is a tile, not a number", t.text)
		}
		return Expr{}, p.errAt(t, "unknown name %q (not a parameter or a loop variable in scope)", t.text)
	case tPunct:
		if t.text == "(" {
			e, err := p.expr()
			if err != nil {
				return e, err
			}
			return e, p.expect(")")
		}
	}
	return Expr{}, p.errAt(t, "expected a number, a name or '(', got %q", t.text)
}

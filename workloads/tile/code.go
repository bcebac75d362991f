package tile

// Code is an expression compiled for fast evaluation. Most index
// expressions are affine (c0 + sum of c_i * v_i), or an affine base plus
// the min (or max) of affine terms (every nesting of min, +, - and
// multiplication by a positive constant is), possibly divided by a
// constant and rounded up; or a comparison of affine terms. Those run
// directly; anything else runs as a short stack program in which every
// affine subtree is one instruction.
type Code struct {
	form  uint8
	base  affine
	list  []affine // min or max operands
	div   int64
	cmp   opKind
	prog  []cinstr
	// Vars are the variable indexes the expression uses.
	Vars []int
}

type term struct {
	v int
	c int64
}

type affine struct {
	c0    int64
	terms []term
}

func (a *affine) eval(env []int64) int64 {
	v := a.c0
	for _, t := range a.terms {
		v += t.c * env[t.v]
	}
	return v
}

func (a affine) add(b affine, k int64) affine {
	out := affine{c0: a.c0 + k*b.c0, terms: append([]term(nil), a.terms...)}
	for _, t := range b.terms {
		merged := false
		for i := range out.terms {
			if out.terms[i].v == t.v {
				out.terms[i].c += k * t.c
				merged = true
				break
			}
		}
		if !merged {
			out.terms = append(out.terms, term{t.v, k * t.c})
		}
	}
	kept := out.terms[:0]
	for _, t := range out.terms {
		if t.c != 0 {
			kept = append(kept, t)
		}
	}
	out.terms = kept
	return out
}

func (a affine) scale(k int64) affine { return affine{}.add(a, k) }

// Forms.
const (
	formAffine uint8 = iota
	formMin          // base + min(list)
	formMax          // base + max(list)
	formCDivMin      // cdiv(base + min(list), div)
	formCmp          // base <cmp> 0
	formStack
)

type cinstr struct {
	op opKind // kConst: push an affine value; others combine the top two
	a  affine
}

// piece is an expression in normal form: base + min(list) or base +
// max(list) (kind kMin/kMax), or base alone (kind kConst).
type piece struct {
	kind opKind
	base affine
	list []affine
}

// normal returns n in normal form, if it has one.
func normal(n *node) (piece, bool) {
	switch n.kind {
	case kConst:
		return piece{kind: kConst, base: affine{c0: n.val}}, true
	case kVar:
		return piece{kind: kConst, base: affine{terms: []term{{n.v.Index, 1}}}}, true
	case kNeg:
		p, ok := normal(n.a)
		if !ok {
			return p, false
		}
		return p.scale(-1)
	case kAdd, kSub:
		a, ok1 := normal(n.a)
		b, ok2 := normal(n.b)
		if !ok1 || !ok2 {
			return piece{}, false
		}
		k := int64(1)
		if n.kind == kSub {
			var ok bool
			if b, ok = b.scale(-1); !ok {
				return piece{}, false
			}
		}
		switch {
		case a.kind == kConst:
			b.base = b.base.add(a.base, k)
			return b, true
		case b.kind == kConst:
			a.base = a.base.add(b.base, k)
			return a, true
		}
	case kMul:
		a, ok1 := normal(n.a)
		b, ok2 := normal(n.b)
		if !ok1 || !ok2 {
			return piece{}, false
		}
		switch {
		case a.kind == kConst && len(a.base.terms) == 0:
			return b.scale(a.base.c0)
		case b.kind == kConst && len(b.base.terms) == 0:
			return a.scale(b.base.c0)
		}
	case kMin, kMax:
		a, ok1 := normal(n.a)
		b, ok2 := normal(n.b)
		if !ok1 || !ok2 {
			return piece{}, false
		}
		var list []affine
		for _, p := range []piece{a, b} {
			switch p.kind {
			case kConst:
				list = append(list, p.base)
			case n.kind:
				for _, x := range p.list {
					list = append(list, x.add(p.base, 1))
				}
			default:
				return piece{}, false
			}
		}
		return piece{kind: n.kind, list: list}, true
	}
	return piece{}, false
}

// scale multiplies by k; a negative k turns a min into a max.
func (p piece) scale(k int64) (piece, bool) {
	out := piece{kind: p.kind, base: p.base.scale(k)}
	for _, x := range p.list {
		out.list = append(out.list, x.scale(k))
	}
	if k < 0 {
		switch p.kind {
		case kMin:
			out.kind = kMax
		case kMax:
			out.kind = kMin
		}
	}
	if k == 0 {
		return piece{kind: kConst}, true
	}
	return out, true
}

// Compile returns e's compiled form.
func (e Expr) Compile() *Code {
	c := &Code{}
	seen := map[int]bool{}
	e.Vars(func(v *Var) {
		if !seen[v.Index] {
			seen[v.Index] = true
			c.Vars = append(c.Vars, v.Index)
		}
	})
	n := e.n
	if p, ok := normal(n); ok {
		c.base, c.list = p.base, p.list
		switch p.kind {
		case kConst:
			c.form = formAffine
		case kMin:
			c.form = formMin
		default:
			c.form = formMax
		}
		return c
	}
	if n.kind == kCDiv {
		if p, ok := normal(n.a); ok && p.kind == kMin {
			if d, ok := normal(n.b); ok && d.kind == kConst && len(d.base.terms) == 0 && d.base.c0 > 0 {
				c.form, c.base, c.list, c.div = formCDivMin, p.base, p.list, d.base.c0
				return c
			}
		}
	}
	switch n.kind {
	case kEq, kNe, kLt, kLe, kGt, kGe:
		a, ok1 := normal(n.a)
		b, ok2 := normal(n.b)
		if ok1 && ok2 && a.kind == kConst && b.kind == kConst {
			c.form, c.cmp, c.base = formCmp, n.kind, a.base.add(b.base, -1)
			return c
		}
	}
	c.form = formStack
	c.emit(n)
	return c
}

func (c *Code) emit(n *node) {
	if p, ok := normal(n); ok && p.kind == kConst {
		c.prog = append(c.prog, cinstr{op: kConst, a: p.base})
		return
	}
	switch n.kind {
	case kNot, kNeg:
		c.emit(n.a)
		c.prog = append(c.prog, cinstr{op: n.kind})
		return
	}
	c.emit(n.a)
	c.emit(n.b)
	c.prog = append(c.prog, cinstr{op: n.kind})
}

func minOf(list []affine, env []int64) int64 {
	v := list[0].eval(env)
	for i := 1; i < len(list); i++ {
		v = min(v, list[i].eval(env))
	}
	return v
}

func maxOf(list []affine, env []int64) int64 {
	v := list[0].eval(env)
	for i := 1; i < len(list); i++ {
		v = max(v, list[i].eval(env))
	}
	return v
}

// Eval evaluates the compiled expression with variable i at env[i].
func (c *Code) Eval(env []int64) int64 {
	switch c.form {
	case formAffine:
		return c.base.eval(env)
	case formMin:
		return c.base.eval(env) + minOf(c.list, env)
	case formMax:
		return c.base.eval(env) + maxOf(c.list, env)
	case formCDivMin:
		return -floorDiv(-(c.base.eval(env) + minOf(c.list, env)), c.div)
	case formCmp:
		return apply(c.cmp, c.base.eval(env), 0)
	}
	return c.evalStack(env)
}

// evalStack runs the stack program.
func (c *Code) evalStack(env []int64) int64 {
	var stack [16]int64
	sp := 0
	for i := range c.prog {
		in := &c.prog[i]
		switch in.op {
		case kConst:
			if sp == len(stack) {
				return c.slow(env)
			}
			stack[sp] = in.a.eval(env)
			sp++
		case kNot:
			stack[sp-1] = b2i(stack[sp-1] == 0)
		case kNeg:
			stack[sp-1] = -stack[sp-1]
		default:
			stack[sp-2] = apply(in.op, stack[sp-2], stack[sp-1])
			sp--
		}
	}
	return stack[0]
}

// slow evaluates a program too deep for the fixed stack.
func (c *Code) slow(env []int64) int64 {
	var stack []int64
	for i := range c.prog {
		in := &c.prog[i]
		switch in.op {
		case kConst:
			stack = append(stack, in.a.eval(env))
		case kNot:
			stack[len(stack)-1] = b2i(stack[len(stack)-1] == 0)
		case kNeg:
			stack[len(stack)-1] = -stack[len(stack)-1]
		default:
			n := len(stack)
			stack[n-2] = apply(in.op, stack[n-2], stack[n-1])
			stack = stack[:n-1]
		}
	}
	return stack[0]
}

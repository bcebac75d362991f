package tile

import "slices"

// Code is an expression compiled for fast evaluation. Most index
// expressions are affine (c0 + sum of c_i * v_i), or an affine base plus
// the min (or max) of affine terms (every nesting of min, +, - and
// multiplication by a positive constant is), possibly divided by a
// constant and rounded up; or a comparison of affine terms. Those run
// directly; anything else is an operator of compiled operands.
type Code struct {
	form uint8
	base affine
	list []affine // min or max operands
	div  int64
	cmp  opKind
	// formNode: the operator (cmp) and its operands (y nil for not, -).
	x, y *Code
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
	// (Terms are never changed once made: a result may share its
	// operand's.)
	switch {
	case len(b.terms) == 0:
		return affine{c0: a.c0 + k*b.c0, terms: a.terms}
	case len(a.terms) == 0 && k == 1:
		return affine{c0: a.c0 + b.c0, terms: b.terms}
	}
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
	formAffine  uint8 = iota
	formMin           // base + min(list)
	formMax           // base + max(list)
	formCDivMin       // cdiv(base + min(list), div)
	formCmp           // base <cmp> 0
	formNode          // an operator of compiled operands
)

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

// Compiler compiles expressions, giving the same Code to the same
// expression (one built once and used by several accesses).
type Compiler struct {
	done map[*node]*Code
}

// Compile returns e's compiled form, shared with earlier compilations of e.
func (k *Compiler) Compile(e Expr) *Code {
	if k.done == nil {
		k.done = map[*node]*Code{}
	}
	if c, ok := k.done[e.n]; ok {
		return c
	}
	c := e.Compile()
	k.done[e.n] = c
	return c
}

// Compile returns e's compiled form.
func (e Expr) Compile() *Code {
	c := &Code{}
	e.Vars(func(v *Var) {
		// (An expression has few variables: a linear search beats a set.)
		if !slices.Contains(c.Vars, v.Index) {
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
	c.form, c.cmp = formNode, n.kind
	c.x = Expr{n.a}.Compile()
	if n.b != nil {
		c.y = Expr{n.b}.Compile()
	}
	return c
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
	return c.evalNode(env)
}

func (c *Code) evalNode(env []int64) int64 {
	switch c.cmp {
	case kNot:
		return b2i(c.x.Eval(env) == 0)
	case kNeg:
		return -c.x.Eval(env)
	}
	return apply(c.cmp, c.x.Eval(env), c.y.Eval(env))
}

// Signature appends to out what e's values over a loop nest depend on, so
// that two entries into the nest with equal signatures give e equal values
// at every point of the nest. nest reports the variables of the nest;
// lo and hi bound each of them over the nest (the nest's iteration box);
// env holds the values of the variables outside it. It reports false when
// e has no such signature (a stack program over nest variables).
//
// An affine expression's signature is its value with the nest variables at
// zero. A min (max) of affine terms is, when one term is the least
// (greatest) over the whole box, that term's index and value at zero;
// otherwise every term's.
func (c *Code) Signature(out []int64, env []int64, nest func(v int) bool, lo, hi []int64) ([]int64, bool) {
	ctx := func(a *affine) int64 {
		v := a.c0
		for _, t := range a.terms {
			if !nest(t.v) {
				v += t.c * env[t.v]
			}
		}
		return v
	}
	usesNest := false
	for _, v := range c.Vars {
		if nest(v) {
			usesNest = true
			break
		}
	}
	if !usesNest {
		return append(out, c.Eval(env)), true
	}
	switch c.form {
	case formAffine, formCmp:
		return append(out, ctx(&c.base)), true
	case formMin, formMax, formCDivMin:
		out = append(out, ctx(&c.base))
		// The term that wins everywhere over the box, if one does.
		for k := range c.list {
			wins := true
			for j := range c.list {
				if j == k {
					continue
				}
				// d = list[j] - list[k]; min wins when d >= 0 over the box.
				d := ctx(&c.list[j]) - ctx(&c.list[k])
				sign := int64(1)
				if c.form == formMax {
					d, sign = -d, -1
				}
				for _, t := range c.list[j].terms {
					if !nest(t.v) {
						continue
					}
					cf := t.c
					for _, u := range c.list[k].terms {
						if u.v == t.v {
							cf -= u.c
						}
					}
					cf *= sign
					d += min(cf*lo[t.v], cf*hi[t.v])
				}
				for _, u := range c.list[k].terms {
					if !nest(u.v) {
						continue
					}
					shared := false
					for _, t := range c.list[j].terms {
						shared = shared || t.v == u.v
					}
					if !shared {
						cf := -u.c * sign
						d += min(cf*lo[u.v], cf*hi[u.v])
					}
				}
				if d < 0 {
					wins = false
					break
				}
			}
			if wins {
				return append(out, int64(-1-k), ctx(&c.list[k])), true
			}
		}
		out = append(out, int64(len(c.list)))
		for i := range c.list {
			out = append(out, ctx(&c.list[i]))
		}
		return out, true
	}
	// An operator: its operands' signatures.
	out = append(out, int64(c.cmp)<<8)
	var ok bool
	if out, ok = c.x.Signature(out, env, nest, lo, hi); !ok || c.y == nil {
		return out, ok
	}
	return c.y.Signature(out, env, nest, lo, hi)
}

// SigPlan is Signature prepared for one nest: which terms are the nest's
// and, for a min or max, the nest coefficients of every difference of two
// terms.
type SigPlan struct {
	c        *Code
	static   bool // no nest variable: the value itself
	base     sigAffine
	list     []sigAffine
	diffs    [][]term // diffs[j*len(list)+k]: nest terms of list[j]-list[k] (times -1 for max)
	x, y     *SigPlan
	isMinMax bool
}

type sigAffine struct {
	c0  int64
	ctx []term // terms of variables outside the nest
}

func (a *sigAffine) value(env []int64) int64 {
	v := a.c0
	for _, t := range a.ctx {
		v += t.c * env[t.v]
	}
	return v
}

// Plan prepares Signature for the nest whose variables nest reports.
func (c *Code) Plan(nest func(v int) bool) *SigPlan {
	p := &SigPlan{c: c, static: true}
	for _, v := range c.Vars {
		if nest(v) {
			p.static = false
		}
	}
	if p.static {
		return p
	}
	split := func(a *affine) sigAffine {
		s := sigAffine{c0: a.c0}
		for _, t := range a.terms {
			if !nest(t.v) {
				s.ctx = append(s.ctx, t)
			}
		}
		return s
	}
	switch c.form {
	case formAffine, formCmp:
		p.base = split(&c.base)
	case formMin, formMax, formCDivMin:
		p.isMinMax = true
		p.base = split(&c.base)
		n := len(c.list)
		for i := range c.list {
			p.list = append(p.list, split(&c.list[i]))
		}
		sign := int64(1)
		if c.form == formMax {
			sign = -1
		}
		p.diffs = make([][]term, n*n)
		for j := 0; j < n; j++ {
			for k := 0; k < n; k++ {
				d := c.list[j].add(c.list[k], -1)
				var nt []term
				for _, t := range d.terms {
					if nest(t.v) {
						nt = append(nt, term{t.v, t.c * sign})
					}
				}
				p.diffs[j*n+k] = nt
			}
		}
	case formNode:
		p.x = c.x.Plan(nest)
		if c.y != nil {
			p.y = c.y.Plan(nest)
		}
	}
	return p
}

// Append appends the signature (see Code.Signature) for the nest entered
// with env outside it and its variables within [lo, hi].
func (p *SigPlan) Append(out []int64, env, lo, hi []int64) []int64 {
	c := p.c
	if p.static {
		return append(out, c.Eval(env))
	}
	if c.form == formNode {
		out = append(out, int64(c.cmp)<<8)
		out = p.x.Append(out, env, lo, hi)
		if p.y != nil {
			out = p.y.Append(out, env, lo, hi)
		}
		return out
	}
	out = append(out, p.base.value(env))
	if !p.isMinMax {
		return out
	}
	n := len(p.list)
	sign := int64(1)
	if c.form == formMax {
		sign = -1
	}
	for k := 0; k < n; k++ {
		wins := true
		ck := p.list[k].value(env)
		for j := 0; j < n && wins; j++ {
			if j == k {
				continue
			}
			d := sign * (p.list[j].value(env) - ck)
			for _, t := range p.diffs[j*n+k] {
				d += min(t.c*lo[t.v], t.c*hi[t.v])
			}
			wins = d >= 0
		}
		if wins {
			return append(out, int64(-1-k), ck)
		}
	}
	out = append(out, int64(n))
	for i := range p.list {
		out = append(out, p.list[i].value(env))
	}
	return out
}

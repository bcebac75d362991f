package tile

// Code is an expression compiled for fast evaluation: an affine
// expression (c0 + sum of c_i * v_i, the common case for indices) is
// evaluated directly; anything else runs as a short stack program in
// which every affine subtree is one instruction.
type Code struct {
	affine bool
	c0     int64
	terms  []term
	prog   []cinstr
	// Vars are the variable indexes the expression uses.
	Vars []int
}

type term struct {
	v int
	c int64
}

type cinstr struct {
	op    opKind // kConst: push an affine value; others combine the top two
	c0    int64
	terms []term
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
	if c0, ts, ok := affineOf(e.n); ok {
		c.affine, c.c0, c.terms = true, c0, ts
		return c
	}
	c.emit(e.n)
	return c
}

// affineOf returns n as c0 + sum c_i v_i when it is affine.
func affineOf(n *node) (int64, []term, bool) {
	switch n.kind {
	case kConst:
		return n.val, nil, true
	case kVar:
		return 0, []term{{n.v.Index, 1}}, true
	case kNeg:
		c, ts, ok := affineOf(n.a)
		if !ok {
			return 0, nil, false
		}
		return -c, scaleTerms(ts, -1), true
	case kAdd, kSub:
		ca, ta, ok1 := affineOf(n.a)
		cb, tb, ok2 := affineOf(n.b)
		if !ok1 || !ok2 {
			return 0, nil, false
		}
		if n.kind == kSub {
			cb, tb = -cb, scaleTerms(tb, -1)
		}
		return ca + cb, addTerms(ta, tb), true
	case kMul:
		ca, ta, ok1 := affineOf(n.a)
		cb, tb, ok2 := affineOf(n.b)
		if !ok1 || !ok2 {
			return 0, nil, false
		}
		switch {
		case len(ta) == 0:
			return ca * cb, scaleTerms(tb, ca), true
		case len(tb) == 0:
			return ca * cb, scaleTerms(ta, cb), true
		}
	}
	return 0, nil, false
}

func scaleTerms(ts []term, k int64) []term {
	out := make([]term, 0, len(ts))
	for _, t := range ts {
		if t.c*k != 0 {
			out = append(out, term{t.v, t.c * k})
		}
	}
	return out
}

func addTerms(a, b []term) []term {
	out := append([]term(nil), a...)
	for _, t := range b {
		merged := false
		for i := range out {
			if out[i].v == t.v {
				out[i].c += t.c
				merged = true
				break
			}
		}
		if !merged {
			out = append(out, t)
		}
	}
	kept := out[:0]
	for _, t := range out {
		if t.c != 0 {
			kept = append(kept, t)
		}
	}
	return kept
}

func (c *Code) emit(n *node) {
	if c0, ts, ok := affineOf(n); ok {
		c.prog = append(c.prog, cinstr{op: kConst, c0: c0, terms: ts})
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

func evalAffine(c0 int64, ts []term, env []int64) int64 {
	v := c0
	for _, t := range ts {
		v += t.c * env[t.v]
	}
	return v
}

// Eval evaluates the compiled expression with variable i at env[i].
func (c *Code) Eval(env []int64) int64 {
	if c.affine {
		return evalAffine(c.c0, c.terms, env)
	}
	var stack [16]int64
	sp := 0
	for i := range c.prog {
		in := &c.prog[i]
		switch in.op {
		case kConst:
			if sp == len(stack) {
				return c.slow(env)
			}
			stack[sp] = evalAffine(in.c0, in.terms, env)
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
			stack = append(stack, evalAffine(in.c0, in.terms, env))
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

package tile

import (
	"fmt"
	"strconv"
	"strings"
)

// Expr is an integer expression over loop variables and constants: index
// bounds, loop bounds, conditions and attribute values. Expressions are
// values; build them with C, V and the methods below, or parse them from
// the text form. Comparisons and logic yield 0 or 1.
type Expr struct {
	n *node
}

type opKind uint8

const (
	kConst opKind = iota
	kVar
	kAdd
	kSub
	kMul
	kDiv // floor division
	kMod
	kMin
	kMax
	kCDiv // ceiling division
	kEq
	kNe
	kLt
	kLe
	kGt
	kGe
	kAnd
	kOr
	kNot
	kNeg
)

type node struct {
	kind opKind
	val  int64  // constant
	name string // a constant that is a named parameter (printed by name)
	v    *Var   // variable
	a, b *node
}

// Var is a loop variable.
type Var struct {
	Name string
	// Index is the variable's slot in an evaluation environment, assigned
	// by the kernel.
	Index int
	// Pos is the variable's name in its loop's line (0 when built in Go).
	Pos Pos
}

// C returns a constant.
func C(v int64) Expr { return Expr{&node{kind: kConst, val: v}} }

// E returns the variable as an expression.
func (v *Var) E() Expr { return Expr{&node{kind: kVar, v: v}} }

// P returns the named parameter name with its value: a constant that
// prints by name.
func P(name string, v int64) Expr { return Expr{&node{kind: kConst, val: v, name: name}} }

func bin(k opKind, a, b Expr) Expr {
	// Fold constants (but not named parameters) as expressions are built.
	if a.IsConst() && b.IsConst() && a.n.name == "" && b.n.name == "" {
		return C(apply(k, a.n.val, b.n.val))
	}
	return Expr{&node{kind: k, a: a.n, b: b.n}}
}

// Add returns e + o.
func (e Expr) Add(o Expr) Expr {
	if o.IsConst() && o.n.val == 0 {
		return e
	}
	if e.IsConst() && e.n.val == 0 {
		return o
	}
	return bin(kAdd, e, o)
}

// AddC returns e + c.
func (e Expr) AddC(c int64) Expr { return e.Add(C(c)) }

// Sub returns e - o.
func (e Expr) Sub(o Expr) Expr {
	if o.IsConst() && o.n.val == 0 {
		return e
	}
	return bin(kSub, e, o)
}

// Mul returns e * o.
func (e Expr) Mul(o Expr) Expr {
	switch {
	case o.IsConst() && o.n.val == 1:
		return e
	case e.IsConst() && e.n.val == 1:
		return o
	case (o.IsConst() && o.n.val == 0) || (e.IsConst() && e.n.val == 0):
		return C(0)
	}
	return bin(kMul, e, o)
}

// MulC returns e * c.
func (e Expr) MulC(c int64) Expr { return e.Mul(C(c)) }

// Div returns e // o (floor division).
func (e Expr) Div(o Expr) Expr { return bin(kDiv, e, o) }

// Mod returns e % o (the remainder of floor division).
func (e Expr) Mod(o Expr) Expr { return bin(kMod, e, o) }

// CDiv returns ceil(e / o).
func (e Expr) CDiv(o Expr) Expr { return bin(kCDiv, e, o) }

// Min returns min(a, b).
func Min(a, b Expr) Expr { return bin(kMin, a, b) }

// Max returns max(a, b).
func Max(a, b Expr) Expr { return bin(kMax, a, b) }

// Eq returns e == o.
func (e Expr) Eq(o Expr) Expr { return bin(kEq, e, o) }

// Ne returns e != o.
func (e Expr) Ne(o Expr) Expr { return bin(kNe, e, o) }

// Lt returns e < o.
func (e Expr) Lt(o Expr) Expr { return bin(kLt, e, o) }

// Le returns e <= o.
func (e Expr) Le(o Expr) Expr { return bin(kLe, e, o) }

// Gt returns e > o.
func (e Expr) Gt(o Expr) Expr { return bin(kGt, e, o) }

// Ge returns e >= o.
func (e Expr) Ge(o Expr) Expr { return bin(kGe, e, o) }

// And returns e and o.
func (e Expr) And(o Expr) Expr { return bin(kAnd, e, o) }

// Or returns e or o.
func (e Expr) Or(o Expr) Expr { return bin(kOr, e, o) }

// Not returns not e.
func (e Expr) Not() Expr {
	if e.IsConst() {
		return C(b2i(e.n.val == 0))
	}
	return Expr{&node{kind: kNot, a: e.n}}
}

// Static returns e's value when e uses no loop variable.
func (e Expr) Static() (int64, bool) {
	if e.n == nil {
		return 0, false
	}
	static := true
	e.Vars(func(*Var) { static = false })
	if !static {
		return 0, false
	}
	return e.n.eval(nil), true
}

// IsZero reports whether the expression is unset.
func (e Expr) IsZero() bool { return e.n == nil }

// IsConst reports whether e is a constant.
func (e Expr) IsConst() bool { return e.n != nil && e.n.kind == kConst }

// Const returns the value of a constant expression.
func (e Expr) Const() (int64, bool) {
	if e.IsConst() {
		return e.n.val, true
	}
	return 0, false
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func floorDiv(a, b int64) int64 {
	if b == 0 {
		return 0
	}
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func apply(k opKind, a, b int64) int64 {
	switch k {
	case kAdd:
		return a + b
	case kSub:
		return a - b
	case kMul:
		return a * b
	case kDiv:
		return floorDiv(a, b)
	case kMod:
		if b == 0 {
			return 0
		}
		return a - floorDiv(a, b)*b
	case kCDiv:
		if b == 0 {
			return 0
		}
		return -floorDiv(-a, b)
	case kMin:
		return min(a, b)
	case kMax:
		return max(a, b)
	case kEq:
		return b2i(a == b)
	case kNe:
		return b2i(a != b)
	case kLt:
		return b2i(a < b)
	case kLe:
		return b2i(a <= b)
	case kGt:
		return b2i(a > b)
	case kGe:
		return b2i(a >= b)
	case kAnd:
		return b2i(a != 0 && b != 0)
	case kOr:
		return b2i(a != 0 || b != 0)
	}
	return 0
}

// Eval evaluates e with each variable's value at env[v.Index].
func (e Expr) Eval(env []int64) int64 { return e.n.eval(env) }

func (n *node) eval(env []int64) int64 {
	switch n.kind {
	case kConst:
		return n.val
	case kVar:
		return env[n.v.Index]
	case kNot:
		return b2i(n.a.eval(env) == 0)
	case kNeg:
		return -n.a.eval(env)
	}
	return apply(n.kind, n.a.eval(env), n.b.eval(env))
}

// Vars calls fn for every variable e uses.
func (e Expr) Vars(fn func(*Var)) { walkVars(e.n, fn) }

// walkVars calls fn for each variable of n, node before operands, a
// before b.
func walkVars(n *node, fn func(*Var)) {
	for n != nil {
		if n.kind == kVar {
			fn(n.v)
		}
		walkVars(n.a, fn)
		n = n.b
	}
}

var opText = map[opKind]string{kAdd: "+", kSub: "-", kMul: "*", kDiv: "//", kMod: "%",
	kEq: "==", kNe: "!=", kLt: "<", kLe: "<=", kGt: ">", kGe: ">=", kAnd: "and", kOr: "or"}

// Precedence levels as the parser reads them (higher binds tighter): or,
// and, the prefix not, comparisons (which do not chain), + -, * // %, the
// prefix -, and atoms (numbers, names, min/max/cdiv calls, parentheses).
const (
	precOr = 1 + iota
	precAnd
	precNot
	precCmp
	precSum
	precProduct
	precUnary
	precAtom
)

var opPrec = map[opKind]int{kOr: precOr, kAnd: precAnd, kNot: precNot,
	kEq: precCmp, kNe: precCmp, kLt: precCmp, kLe: precCmp, kGt: precCmp, kGe: precCmp,
	kAdd: precSum, kSub: precSum, kMul: precProduct, kDiv: precProduct, kMod: precProduct, kNeg: precUnary}

// String prints e in the text form, with the parentheses it needs and no
// more: parsing the text gives an expression that prints the same.
func (e Expr) String() string {
	if e.n == nil {
		return "<unset>"
	}
	var sb strings.Builder
	e.n.write(&sb, 0)
	return sb.String()
}

// atomString prints e as an atom: a number, a name or a call as it is,
// anything else in parentheses (a remote access's rank: x@(c + 1)).
func (e Expr) atomString() string {
	var sb strings.Builder
	e.n.write(&sb, precAtom)
	return sb.String()
}

// write prints n where the grammar needs an expression of precedence at
// least outer, in parentheses when n's own is lower.
func (n *node) write(sb *strings.Builder, outer int) {
	switch n.kind {
	case kConst:
		if n.name != "" {
			sb.WriteString(n.name)
			return
		}
		// A negative literal is parenthesised except at the top: the
		// canonical form writes (-3) + a, not -3 + a.
		if n.val < 0 && outer > 0 {
			fmt.Fprintf(sb, "(%d)", n.val)
			return
		}
		sb.WriteString(strconv.FormatInt(n.val, 10))
		return
	case kVar:
		sb.WriteString(n.v.Name)
		return
	case kMin, kMax, kCDiv:
		name := map[opKind]string{kMin: "min", kMax: "max", kCDiv: "cdiv"}[n.kind]
		sb.WriteString(name + "(")
		n.a.write(sb, 0)
		sb.WriteString(", ")
		n.b.write(sb, 0)
		sb.WriteString(")")
		return
	}
	p := opPrec[n.kind]
	if p < outer {
		sb.WriteString("(")
	}
	switch n.kind {
	case kNot:
		// not takes a comparison or another not.
		sb.WriteString("not ")
		n.a.write(sb, precNot)
	case kNeg:
		// The parser reads - followed by a literal as a negative literal:
		// the negation of a literal keeps its parentheses.
		sb.WriteString("-")
		if n.a.kind == kConst && n.a.name == "" {
			fmt.Fprintf(sb, "(%d)", n.a.val)
		} else {
			n.a.write(sb, precUnary)
		}
	case kEq, kNe, kLt, kLe, kGt, kGe:
		// Comparisons do not chain: both operands are sums.
		n.a.write(sb, p+1)
		sb.WriteString(" " + opText[n.kind] + " ")
		n.b.write(sb, p+1)
	default:
		// Left-associative: the right operand needs parentheses at equal
		// precedence (a - (b - c)).
		n.a.write(sb, p)
		sb.WriteString(" " + opText[n.kind] + " ")
		n.b.write(sb, p+1)
	}
	if p < outer {
		sb.WriteString(")")
	}
}

// Subst returns e with variable v replaced by the constant val, constants
// folded where both operands of an operator become constant (named
// parameters keep their names).
func (e Expr) Subst(v *Var, val int64) Expr {
	if e.n == nil {
		return e
	}
	var sub func(n *node) *node
	sub = func(n *node) *node {
		switch n.kind {
		case kConst:
			return n
		case kVar:
			if n.v == v {
				return &node{kind: kConst, val: val}
			}
			return n
		case kNot, kNeg:
			a := sub(n.a)
			if a == n.a {
				return n
			}
			if a.kind == kConst && a.name == "" {
				if n.kind == kNot {
					return &node{kind: kConst, val: b2i(a.val == 0)}
				}
				return &node{kind: kConst, val: -a.val}
			}
			return &node{kind: n.kind, a: a}
		}
		a, b := sub(n.a), sub(n.b)
		if a == n.a && b == n.b {
			return n
		}
		return bin(n.kind, Expr{a}, Expr{b}).n
	}
	return Expr{sub(e.n)}
}

// Folded returns e's value when it is the same whatever its variables'
// values as far as its affine normal form tells: (i * 128 + 128) - i * 128
// is 128.
func (e Expr) Folded() (int64, bool) {
	if e.n == nil {
		return 0, false
	}
	if v, ok := e.Static(); ok {
		return v, true
	}
	p, ok := normal(e.n)
	if !ok || p.kind != kConst || len(p.base.terms) > 0 {
		return 0, false
	}
	return p.base.c0, true
}

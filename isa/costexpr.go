package isa

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Cost formulas are small arithmetic expressions over per-instruction
// variables and the table's named constants, for example
// "max(MIN_II, N)" or "150 + N". They are parsed once, when a table is
// built, into a tree of closures.

// Variables an expression may use.
const (
	VarN     = iota // free size of the main input (elements per partition)
	VarP            // partition count of the main input
	VarNS           // stationary free size (TensorE; columns of the loaded stationary)
	VarNOut         // free size of the output
	VarK            // elements per index (gather)
	VarBytes        // bytes per partition of the main input
	VarI            // the interval just computed (latency expressions only)
	numVars
)

var varNames = map[string]int{"N": VarN, "F": VarN, "P": VarP, "NS": VarNS, "NOUT": VarNOut,
	"K": VarK, "BYTES": VarBytes, "I": VarI}

// CostEnv holds the values of an instruction's variables.
type CostEnv [numVars]float64

type exprFn func(env *CostEnv) float64

// Expr is a compiled cost expression.
type Expr struct {
	src string
	fn  exprFn
	// usesI is true when the expression refers to the interval I.
	usesI bool
}

// String returns the expression as written.
func (e *Expr) String() string { return e.src }

// Eval computes the expression.
func (e *Expr) Eval(env *CostEnv) float64 { return e.fn(env) }

// CompileExpr parses src. Names not in the variable list are looked up in
// consts; an unknown name is an error that lists what is allowed.
func CompileExpr(src string, consts map[string]float64) (*Expr, error) {
	p := &exprParser{src: src, consts: consts}
	p.next()
	fn, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if p.tok != tokEOF {
		return nil, p.errf("unexpected %q", p.text)
	}
	return &Expr{src: src, fn: fn, usesI: p.usesI}, nil
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokNum
	tokIdent
	tokOp
)

type exprParser struct {
	src    string
	pos    int
	tok    tokKind
	text   string
	num    float64
	start  int
	consts map[string]float64
	usesI  bool
	err    error
}

func (p *exprParser) errf(format string, args ...any) error {
	return p.errAt(p.start, format, args...)
}

// errAt reports an error at byte offset pos of the expression.
func (p *exprParser) errAt(pos int, format string, args ...any) error {
	return fmt.Errorf("expression %q, column %d: %s", p.src, pos+1, fmt.Sprintf(format, args...))
}

func (p *exprParser) next() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
	p.start = p.pos
	if p.pos >= len(p.src) {
		p.tok, p.text = tokEOF, "end of expression"
		return
	}
	c, size := utf8.DecodeRuneInString(p.src[p.pos:])
	switch {
	case (c >= '0' && c <= '9') || c == '.':
		j := p.pos
		for j < len(p.src) && (unicode.IsDigit(rune(p.src[j])) || p.src[j] == '.' || p.src[j] == 'e') {
			j++
		}
		p.text = p.src[p.pos:j]
		v, err := strconv.ParseFloat(p.text, 64)
		if err != nil && p.err == nil {
			p.err = p.errf("bad number %q", p.text)
		}
		p.tok, p.num, p.pos = tokNum, v, j
	case unicode.IsLetter(c) || c == '_':
		j := p.pos
		for j < len(p.src) {
			r, n := utf8.DecodeRuneInString(p.src[j:])
			// A dot inside a name joins dotted paths (a sweep's
			// where: names config fields as parallel.tp).
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '.' {
				break
			}
			j += n
		}
		p.tok, p.text, p.pos = tokIdent, p.src[p.pos:j], j
	default:
		p.tok, p.text = tokOp, string(c)
		p.pos += size
		if p.pos < len(p.src) {
			switch two := p.text + p.src[p.pos:p.pos+1]; two {
			case "<=", ">=", "==", "!=", "&&", "||":
				p.text = two
				p.pos++
			}
		}
	}
}

// parseOr, parseAnd and parseCompare give the comparisons (1 true, 0
// false) and the logical operators, below arithmetic in precedence.
func (p *exprParser) parseOr() (exprFn, error) {
	left, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for p.tok == tokOp && p.text == "||" {
		p.next()
		right, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		l, r := left, right
		left = func(e *CostEnv) float64 { return b2f(l(e) != 0 || r(e) != 0) }
	}
	return left, nil
}

func (p *exprParser) parseAnd() (exprFn, error) {
	left, err := p.parseCompare()
	if err != nil {
		return nil, err
	}
	for p.tok == tokOp && p.text == "&&" {
		p.next()
		right, err := p.parseCompare()
		if err != nil {
			return nil, err
		}
		l, r := left, right
		left = func(e *CostEnv) float64 { return b2f(l(e) != 0 && r(e) != 0) }
	}
	return left, nil
}

func (p *exprParser) parseCompare() (exprFn, error) {
	left, err := p.parseSum()
	if err != nil {
		return nil, err
	}
	if p.tok != tokOp {
		return left, nil
	}
	var cmp func(a, b float64) bool
	switch p.text {
	case "<":
		cmp = func(a, b float64) bool { return a < b }
	case "<=":
		cmp = func(a, b float64) bool { return a <= b }
	case ">":
		cmp = func(a, b float64) bool { return a > b }
	case ">=":
		cmp = func(a, b float64) bool { return a >= b }
	case "==":
		cmp = func(a, b float64) bool { return a == b }
	case "!=":
		cmp = func(a, b float64) bool { return a != b }
	default:
		return left, nil
	}
	p.next()
	right, err := p.parseSum()
	if err != nil {
		return nil, err
	}
	l, r := left, right
	return func(e *CostEnv) float64 { return b2f(cmp(l(e), r(e))) }, nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (p *exprParser) parseSum() (exprFn, error) {
	left, err := p.parseProduct()
	if err != nil {
		return nil, err
	}
	for p.tok == tokOp && (p.text == "+" || p.text == "-") {
		op := p.text
		p.next()
		right, err := p.parseProduct()
		if err != nil {
			return nil, err
		}
		l, r := left, right
		if op == "+" {
			left = func(e *CostEnv) float64 { return l(e) + r(e) }
		} else {
			left = func(e *CostEnv) float64 { return l(e) - r(e) }
		}
	}
	return left, nil
}

func (p *exprParser) parseProduct() (exprFn, error) {
	left, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for p.tok == tokOp && (p.text == "*" || p.text == "/") {
		op := p.text
		p.next()
		right, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		l, r := left, right
		if op == "*" {
			left = func(e *CostEnv) float64 { return l(e) * r(e) }
		} else {
			left = func(e *CostEnv) float64 {
				d := r(e)
				if d == 0 {
					return math.Inf(1)
				}
				return l(e) / d
			}
		}
	}
	return left, nil
}

func (p *exprParser) parseUnary() (exprFn, error) {
	if p.tok == tokOp && p.text == "-" {
		p.next()
		inner, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		return func(e *CostEnv) float64 { return -inner(e) }, nil
	}
	return p.parsePrimary()
}

func (p *exprParser) parsePrimary() (exprFn, error) {
	if p.err != nil {
		return nil, p.err
	}
	switch p.tok {
	case tokNum:
		v := p.num
		p.next()
		return func(*CostEnv) float64 { return v }, nil
	case tokOp:
		if p.text == "(" {
			p.next()
			inner, err := p.parseOr()
			if err != nil {
				return nil, err
			}
			if p.tok != tokOp || p.text != ")" {
				return nil, p.errf("expected \")\", got %q", p.text)
			}
			p.next()
			return inner, nil
		}
		return nil, p.errf("unexpected %q", p.text)
	case tokIdent:
		name, at := p.text, p.start
		p.next()
		if p.tok == tokOp && p.text == "(" {
			return p.parseCall(name, at)
		}
		if idx, ok := varNames[name]; ok {
			if idx == VarI {
				p.usesI = true
			}
			return func(e *CostEnv) float64 { return e[idx] }, nil
		}
		if v, ok := p.consts[name]; ok {
			return func(*CostEnv) float64 { return v }, nil
		}
		return nil, p.errAt(at, "unknown name %q (variables: N, P, NS, NOUT, K, BYTES, I; or a constant of the cost table)", name)
	}
	return nil, p.errf("expression ends early")
}

// parseCall parses the arguments of a call to name, which starts at byte
// offset at.
func (p *exprParser) parseCall(name string, at int) (exprFn, error) {
	p.next() // (
	var args []exprFn
	for {
		a, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		args = append(args, a)
		if p.tok == tokOp && p.text == "," {
			p.next()
			continue
		}
		if p.tok == tokOp && p.text == ")" {
			p.next()
			break
		}
		return nil, p.errf("expected \",\" or \")\" in call to %s, got %q", name, p.text)
	}
	switch strings.ToLower(name) {
	case "max", "min":
		isMax := strings.ToLower(name) == "max"
		return func(e *CostEnv) float64 {
			v := args[0](e)
			for _, a := range args[1:] {
				x := a(e)
				if (isMax && x > v) || (!isMax && x < v) {
					v = x
				}
			}
			return v
		}, nil
	case "ceil", "floor":
		if len(args) != 1 {
			return nil, p.errAt(at, "%s takes one argument, got %d", name, len(args))
		}
		a := args[0]
		if strings.ToLower(name) == "ceil" {
			return func(e *CostEnv) float64 { return math.Ceil(a(e)) }, nil
		}
		return func(e *CostEnv) float64 { return math.Floor(a(e)) }, nil
	}
	return nil, p.errAt(at, "unknown function %q (functions: max, min, ceil, floor)", name)
}

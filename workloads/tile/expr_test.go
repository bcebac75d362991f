package tile

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseExprText parses one expression over the variables vars and the
// parameters params, the way a kernel line would, and requires that it use
// every token.
func parseExprText(t *testing.T, src string, params []Expr, vars ...*Var) (Expr, error) {
	t.Helper()
	toks, lerr := lexLine(src)
	if lerr != nil {
		return Expr{}, lerr
	}
	p := &parser{file: "e.tile", params: map[string]Expr{}, vars: map[string]*Var{}, tiles: map[string]*Tile{},
		labels: map[string]*Op{}, toks: toks, line: 1}
	for _, v := range vars {
		p.vars[v.Name] = v
	}
	for _, e := range params {
		p.params[e.n.name] = e
	}
	e, err := p.expr()
	if err != nil {
		return e, err
	}
	return e, p.endOfLine()
}

func raw(k opKind, a, b Expr) Expr { return Expr{&node{kind: k, a: a.n, b: b.n}} }

// Expressions that need parentheses the precedence alone does not give.
func TestExprPrintParenthesisesByPrecedence(t *testing.T) {
	k := New("x")
	i, j := k.Var("i"), k.Var("j")
	I, J := i.E(), j.E()
	tests := []struct {
		name string
		e    Expr
		want string
	}{
		{"comparison in comparison", raw(kEq, raw(kEq, I, C(1)), C(0)), "(i == 1) == 0"},
		{"comparison on the right", raw(kLt, I, raw(kNe, J, C(2))), "i < (j != 2)"},
		{"not in comparison", raw(kEq, raw(kNot, I, Expr{}), C(0)), "(not i) == 0"},
		{"comparison under not", raw(kNot, raw(kEq, I, C(0)), Expr{}), "not i == 0"},
		{"and under not", raw(kNot, raw(kAnd, I, J), Expr{}), "not (i and j)"},
		{"not not", raw(kNot, raw(kNot, I, Expr{}), Expr{}), "not not i"},
		{"not in and", raw(kAnd, raw(kNot, I, Expr{}), raw(kNot, J, Expr{})), "not i and not j"},
		{"not in sum", raw(kAdd, raw(kNot, I, Expr{}), C(1)), "(not i) + 1"},
		{"or in and", raw(kAnd, raw(kOr, I, J), I), "(i or j) and i"},
		{"and in or", raw(kOr, I, raw(kAnd, J, I)), "i or j and i"},
		{"or on the right of or", raw(kOr, I, raw(kOr, J, I)), "i or (j or i)"},
		{"comparison in sum", raw(kAdd, raw(kGe, I, J), C(1)), "(i >= j) + 1"},
		{"negated sum", raw(kNeg, raw(kAdd, I, J), Expr{}), "-(i + j)"},
		{"negated literal", raw(kNeg, C(5), Expr{}), "-(5)"},
		{"negated negative literal", raw(kNeg, C(-5), Expr{}), "-(-5)"},
		{"negation in product", raw(kMul, I, raw(kNeg, J, Expr{})), "i * -j"},
		{"double negation", raw(kNeg, raw(kNeg, I, Expr{}), Expr{}), "--i"},
		{"negative literal in product", raw(kMul, I, C(-3)), "i * (-3)"},
		{"comparison in min", raw(kMin, raw(kEq, I, C(1)), raw(kOr, I, J)), "min(i == 1, i or j)"},
		{"smallest integer", C(math.MinInt64), "-9223372036854775808"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.e.String())
			back, err := parseExprText(t, tc.e.String(), nil, i, j)
			require.NoError(t, err, tc.e.String())
			assert.Equal(t, tc.want, back.String())
			for _, env := range [][]int64{{0, 0}, {1, 0}, {0, 2}, {3, -4}} {
				assert.Equal(t, tc.e.Eval(env), back.Eval(env), "%s at %v", tc.want, env)
			}
		})
	}
}

// randomExpr builds a tree of depth at most depth over every operator,
// without the builder's folding (the parser does not fold either).
func randomExpr(r *rand.Rand, depth int, vars []*Var, params []Expr) Expr {
	if depth == 0 || r.Intn(4) == 0 {
		switch r.Intn(4) {
		case 0:
			return vars[r.Intn(len(vars))].E()
		case 1:
			return params[r.Intn(len(params))]
		default:
			return C(int64(r.Intn(21) - 10))
		}
	}
	kinds := []opKind{kAdd, kSub, kMul, kDiv, kMod, kMin, kMax, kCDiv, kEq, kNe, kLt, kLe, kGt, kGe, kAnd, kOr, kNot, kNeg}
	switch kd := kinds[r.Intn(len(kinds))]; kd {
	case kNot, kNeg:
		return raw(kd, randomExpr(r, depth-1, vars, params), Expr{})
	default:
		return raw(kd, randomExpr(r, depth-1, vars, params), randomExpr(r, depth-1, vars, params))
	}
}

// Printing any expression and parsing the text gives an expression that
// prints the same and has the same value.
func TestExprPrintParseRoundTripProperty(t *testing.T) {
	k := New("x")
	vars := []*Var{k.Var("a"), k.Var("b"), k.Var("c")}
	params := []Expr{P("N", 7), P("M", -2)}
	r := rand.New(rand.NewSource(1))
	envs := [][]int64{{0, 0, 0}, {1, -1, 2}, {5, 3, -7}, {-2, 0, 9}}
	for n := 0; n < 4000; n++ {
		e := randomExpr(r, 1+n%6, vars, params)
		text := e.String()
		back, err := parseExprText(t, text, params, vars...)
		if !assert.NoError(t, err, "printed %q does not parse", text) {
			continue
		}
		assert.Equal(t, text, back.String(), "tree %d", n)
		for _, env := range envs {
			if !assert.Equal(t, e.Eval(env), back.Eval(env), "%s at %v", text, env) {
				break
			}
		}
	}
}

package isa

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testConsts = map[string]float64{"MIN_II": 64, "PIPE": 100, "X2": 2}

func testEnv() *CostEnv {
	var env CostEnv
	env[VarN] = 10
	env[VarP] = 128
	env[VarNS] = 32
	env[VarNOut] = 5
	env[VarK] = 3
	env[VarBytes] = 20
	env[VarI] = 7
	return &env
}

func TestCompileExprValues(t *testing.T) {
	cases := []struct {
		src  string
		want float64
	}{
		// Precedence and associativity.
		{"1 + 2 * 3", 7},
		{"(1 + 2) * 3", 9},
		{"2 * 3 + 1", 7},
		{"10 - 2 - 3", 5},
		{"8 / 2 / 2", 2},
		{"8 / (2 / 2)", 8},
		{"1 + 6 / 3 * 2", 5},
		{"-3 + 5", 2},
		{"--3", 3},
		{"2 * -3", -6},
		{"-(2 + 3) * 2", -10},
		{"((((4))))", 4},
		// Numbers.
		{"0", 0},
		{"1e3", 1000},
		{".5 * 4", 2},
		{"2.25", 2.25},
		// Variables (F is N).
		{"N", 10},
		{"F", 10},
		{"P", 128},
		{"NS", 32},
		{"NOUT", 5},
		{"K", 3},
		{"BYTES", 20},
		{"I", 7},
		// Constants.
		{"MIN_II", 64},
		{"MIN_II + PIPE", 164},
		{"X2*N", 20},
		// Functions.
		{"max(MIN_II, N)", 64},
		{"max(1, 2, 3)", 3},
		{"max(7)", 7},
		{"min(4, N)", 4},
		{"min(64, NS, N)", 10},
		{"max(min(MIN_II, NS), N)", 32},
		{"4*max(P, min(MIN_II, N))", 512},
		{"ceil(N/4)", 3},
		{"floor(N/4)", 2},
		{"ceil(-2.5)", -2},
		{"MAX(1, 2)", 2},
		{"Floor(2.5)", 2},
		{"max(MIN_II, 13*N/3)", 64},
		// Whitespace.
		{"  N+1  ", 11},
		{"N\t+\t1", 11},
	}
	for _, tc := range cases {
		t.Run(tc.src, func(t *testing.T) {
			e, err := CompileExpr(tc.src, testConsts)
			require.NoError(t, err)
			assert.Equal(t, tc.want, e.Eval(testEnv()))
			assert.Equal(t, tc.src, e.String())
		})
	}
}

func TestCompileExprDivisionByZero(t *testing.T) {
	e, err := CompileExpr("N / (P - P)", nil)
	require.NoError(t, err)
	assert.True(t, math.IsInf(e.Eval(testEnv()), 1))
}

func TestCompileExprUsesI(t *testing.T) {
	for src, want := range map[string]bool{"I + PIPE": true, "max(I, N)": true, "N": false, "MIN_II": false} {
		e, err := CompileExpr(src, testConsts)
		require.NoError(t, err)
		assert.Equal(t, want, e.usesI, src)
	}
}

func TestCompileExprConstantsAreCapturedAtCompileTime(t *testing.T) {
	consts := map[string]float64{"C": 1}
	e, err := CompileExpr("C + N", consts)
	require.NoError(t, err)
	consts["C"] = 100
	assert.Equal(t, 11.0, e.Eval(testEnv()))
}

func TestCompileExprErrors(t *testing.T) {
	cases := []struct {
		src  string
		want string
	}{
		{"", `expression "", column 1: expression ends early`},
		{"1 +", `expression "1 +", column 4: expression ends early`},
		{"N +* 2", `expression "N +* 2", column 4: unexpected "*"`},
		{"* 3", `expression "* 3", column 1: unexpected "*"`},
		{")", `expression ")", column 1: unexpected ")"`},
		{"1 2", `expression "1 2", column 3: unexpected "2"`},
		{"N $", `expression "N $", column 3: unexpected "$"`},
		{"(1", `expression "(1", column 3: expected ")", got "end of expression"`},
		{"(1 + 2))", `expression "(1 + 2))", column 8: unexpected ")"`},
		{"max(1", `expression "max(1", column 6: expected "," or ")" in call to max, got "end of expression"`},
		{"max(1 2)", `expression "max(1 2)", column 7: expected "," or ")" in call to max, got "2"`},
		{"max()", `expression "max()", column 5: unexpected ")"`},
		{"max(,1)", `expression "max(,1)", column 5: unexpected ","`},
		{"1..2", `expression "1..2", column 1: bad number "1..2"`},
		{"2e", `expression "2e", column 1: bad number "2e"`},
		{".", `expression ".", column 1: bad number "."`},
		{"FOO", `expression "FOO", column 1: unknown name "FOO" (variables: N, P, NS, NOUT, K, BYTES, I; or a constant of the cost table)`},
		{"N + größe", `expression "N + größe", column 5: unknown name "größe" (variables: N, P, NS, NOUT, K, BYTES, I; or a constant of the cost table)`},
		{"N + 名前", `expression "N + 名前", column 5: unknown name "名前" (variables: N, P, NS, NOUT, K, BYTES, I; or a constant of the cost table)`},
		{"N + ٣", `expression "N + ٣", column 5: unexpected "٣"`},
		{"N + min_ii", `expression "N + min_ii", column 5: unknown name "min_ii" (variables: N, P, NS, NOUT, K, BYTES, I; or a constant of the cost table)`},
		{"2 * foo(1)", `expression "2 * foo(1)", column 5: unknown function "foo" (functions: max, min, ceil, floor)`},
		{"ceil(1, 2)", `expression "ceil(1, 2)", column 1: ceil takes one argument, got 2`},
		{"N + floor(1, 2, 3)", `expression "N + floor(1, 2, 3)", column 5: floor takes one argument, got 3`},
		{"floor()", `expression "floor()", column 7: unexpected ")"`},
	}
	for _, tc := range cases {
		t.Run(tc.src, func(t *testing.T) {
			_, err := CompileExpr(tc.src, testConsts)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

// Comparisons and logic, below arithmetic, and dotted names (a sweep's
// where: over config paths).
func TestExprComparisons(t *testing.T) {
	consts := map[string]float64{"parallel.tp": 8, "parallel.replicas": 4}
	for _, tc := range []struct {
		src  string
		want float64
	}{
		{"parallel.tp * parallel.replicas <= 64", 1},
		{"parallel.tp * parallel.replicas < 32", 0},
		{"parallel.tp == 8 && parallel.replicas != 4", 0},
		{"parallel.tp == 8 || parallel.replicas != 4", 1},
		{"max(parallel.tp >= 8, 0) + 1", 2},
		{"(1 < 2) * 5", 5},
		{"2 + 3 > 4", 1},
	} {
		e, err := CompileExpr(tc.src, consts)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		if got := e.Eval(&CostEnv{}); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.src, got, tc.want)
		}
	}
}

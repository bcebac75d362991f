package asm

import (
	"errors"
	"strings"

	"github.com/trnsim/trnsim/isa"
)

// Locating errors found after parsing
//
// The limits are checked on the parsed program (isa.Limits.Check and
// CheckBuffer), which no longer holds columns: ErrorColumn lexes the source
// line again and finds the token a *isa.LimitError or *isa.BufferError is
// about.

// ErrorColumn returns the column, from 1, of what err is about in line, the
// source line that err's instruction or buffer was read from: the operand
// or attribute of a *isa.LimitError, the field of a *isa.BufferError, else
// the line's first token (1 for a line that does not lex).
func ErrorColumn(line string, err error) int {
	toks, lerr := lexLine(stripComment(line))
	if lerr != nil || len(toks) == 0 {
		return 1
	}
	var le *isa.LimitError
	var be *isa.BufferError
	switch {
	case errors.As(err, &le) && toks[0].kind != tDirective:
		if c := instructionColumn(toks, le); c > 0 {
			return c
		}
	case errors.As(err, &be) && toks[0].text == ".buffer":
		if c := bufferColumn(toks, be); c > 0 {
			return c
		}
	}
	return toks[0].col
}

// attr is one attribute of a line: the columns of its key and of its value.
type attr struct{ key, value int }

// skipGroup returns the index after the bracketed group that opens at
// toks[i] ("[" or "{"), or i when none opens there.
func skipGroup(toks []token, i int) int {
	if i >= len(toks) || toks[i].kind != tPunct || (toks[i].text != "[" && toks[i].text != "{") {
		return i
	}
	depth := 0
	for ; i < len(toks); i++ {
		if toks[i].kind != tPunct {
			continue
		}
		switch toks[i].text {
		case "[", "{":
			depth++
		case "]", "}":
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return i
}

// isKey reports whether toks[i] starts an attribute: a name followed by "="
// or a bare flag.
func isKey(toks []token, i int) bool {
	t := toks[i]
	if t.kind != tIdent {
		return false
	}
	return reserved[t.text] || (i+1 < len(toks) && toks[i+1].kind == tPunct && toks[i+1].text == "=")
}

// attrsFrom collects the attributes from toks[i] on, by key, in order.
func attrsFrom(toks []token, i int) map[string][]attr {
	out := map[string][]attr{}
	for i < len(toks) {
		if !isKey(toks, i) {
			i = max(skipGroup(toks, i), i+1)
			continue
		}
		a := attr{key: toks[i].col, value: toks[i].col}
		key := toks[i].text
		i++
		if !reserved[key] && i < len(toks) {
			i++ // "="
			if i < len(toks) {
				a.value = toks[i].col
			}
		}
		out[key] = append(out[key], a)
	}
	return out
}

// instructionColumn finds the token a limit error is about in an
// instruction line: ENGINE OPCODE OPERAND, ... ATTRIBUTES.
func instructionColumn(toks []token, le *isa.LimitError) int {
	if len(toks) < 2 {
		return 0
	}
	opcode := toks[1]
	var operands []int
	i := 2
	for i < len(toks) && toks[i].kind == tIdent && !isKey(toks, i) {
		operands = append(operands, toks[i].col)
		i = skipGroup(toks, i+1)
		if i < len(toks) && toks[i].kind == tPunct && toks[i].text == "," {
			i++
			continue
		}
		break
	}
	switch {
	case le.Attr == "opcode":
		return opcode.col
	case le.Attr != "":
		if as := attrsFrom(toks, i)[le.Attr]; le.AttrIndex < len(as) {
			return as[le.AttrIndex].value
		}
		return opcode.col // an attribute left at its default
	case le.Operand > 0:
		n := le.Operand
		if opcode.text == "matmul" && le.Inst != nil {
			// matmul DST, STATIONARY, MOVING is load_stationary STATIONARY
			// and multiply_moving DST, MOVING.
			switch {
			case le.Inst.Op == isa.OpLoadStationary:
				n = 2
			case n == 2:
				n = 3
			}
		}
		if n <= len(operands) {
			return operands[n-1]
		}
		return opcode.col
	}
	return 0
}

// bufferColumn finds the token a buffer error is about in a .buffer line:
// .buffer NAME MEM DTYPE [DIMS] ATTRIBUTES.
func bufferColumn(toks []token, be *isa.BufferError) int {
	if len(toks) < 5 {
		return 0
	}
	name, dtype, shape := toks[1].col, toks[3].col, toks[4].col
	firstDim := shape
	if len(toks) > 5 {
		firstDim = toks[5].col
	}
	as := attrsFrom(toks, skipGroup(toks, 4))
	given := func(keys ...string) int {
		for _, k := range keys {
			if a := as[k]; len(a) > 0 {
				return a[0].value
			}
		}
		return 0
	}
	switch be.Field {
	case "dtype":
		return dtype
	case "shape":
		return shape
	case "chip", "core":
		if c := given(be.Field); c > 0 {
			return c
		}
	case "part":
		if c := given("part"); c > 0 {
			return c
		}
		return firstDim
	case "place":
		if c := given("offset", "addr"); c > 0 {
			return c
		}
		return shape
	case "offset":
		if c := given("offset", "addr"); c > 0 {
			return c
		}
	}
	return name
}

// Directive returns the first argument of the first d directive in src
// (".target"), with its line and column from 1; "" when there is none.
func Directive(src, d string) (arg string, line, col int) {
	for i, raw := range strings.Split(src, "\n") {
		toks, err := lexLine(stripComment(raw))
		if err != nil || len(toks) < 2 || toks[0].kind != tDirective || toks[0].text != d {
			continue
		}
		return toks[1].text, i + 1, toks[1].col
	}
	return "", 0, 0
}

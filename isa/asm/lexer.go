// Package asm reads and writes trnsim's text assembly: a header naming the
// format version and target, named buffers, and one instruction a line. See
// docs/assembly.md for the grammar. Parse errors carry the line and column.
package asm

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

type tokKind uint8

const (
	tEOL tokKind = iota
	tIdent
	tNum
	tPunct
	tDirective
)

type token struct {
	kind tokKind
	text string
	col  int // 1-based
}

// Error is a parse error at a position in the source.
type Error struct {
	File string
	Line int
	Col  int
	Msg  string
}

func (e *Error) Error() string {
	if e.Col > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// lexLine splits one line (comment already removed) into tokens.
func lexLine(line string) ([]token, *Error) {
	var toks []token
	i := 0
	for i < len(line) {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '.' && i+1 < len(line) && isIdentStart(line[i+1]) && (len(toks) == 0):
			j := i + 1
			for j < len(line) && isIdentChar(line[j]) {
				j++
			}
			toks = append(toks, token{tDirective, line[i:j], i + 1})
			i = j
		case isIdentStart(c):
			j := i
			for j < len(line) && isIdentChar(line[j]) {
				j++
			}
			toks = append(toks, token{tIdent, line[i:j], i + 1})
			i = j
		case isDigit(c) || ((c == '-' || c == '+' || c == '.') && i+1 < len(line) && (isDigit(line[i+1]) || line[i+1] == '.') && numberMayStart(toks)):
			j := i + 1
			for j < len(line) {
				d := line[j]
				if isDigit(d) || d == '.' || d == 'x' || d == 'X' || (d >= 'a' && d <= 'f') || (d >= 'A' && d <= 'F') {
					j++
					continue
				}
				if (d == '+' || d == '-') && (line[j-1] == 'e' || line[j-1] == 'E') && !strings.HasPrefix(strings.ToLower(line[i:j]), "0x") {
					j++
					continue
				}
				if d == 'n' || d == 'i' { // inf, nan are not numbers here
					break
				}
				break
			}
			toks = append(toks, token{tNum, line[i:j], i + 1})
			i = j
		case c == '>' && i+1 < len(line) && line[i+1] == '=':
			toks = append(toks, token{tPunct, ">=", i + 1})
			i += 2
		case strings.IndexByte(",[]{}:=()@+", c) >= 0:
			toks = append(toks, token{tPunct, string(c), i + 1})
			i++
		default:
			// Print the character as written, not its first byte.
			r, _ := utf8.DecodeRuneInString(line[i:])
			return nil, &Error{Col: i + 1, Msg: fmt.Sprintf("unexpected character %q", r)}
		}
	}
	return toks, nil
}

// numberMayStart reports whether a sign or dot may begin a number here: after
// "=", ",", "[", ":" or at the start, not after an identifier (s5+2).
func numberMayStart(toks []token) bool {
	if len(toks) == 0 {
		return true
	}
	last := toks[len(toks)-1]
	return last.kind == tPunct && last.text != ")" && last.text != "]" && last.text != "}" && last.text != "+"
}

// stripComment removes a ';' or '//' comment.
func stripComment(line string) string {
	if i := strings.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	if i := strings.Index(line, "//"); i >= 0 {
		line = line[:i]
	}
	return line
}

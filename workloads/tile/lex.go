package tile

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

type tokKind uint8

const (
	tIdent tokKind = iota
	tInt
	tFloat
	tPunct
	tEOL
)

type token struct {
	kind tokKind
	text string
	col  int // 1-based, in runes
}

// puncts, longest first.
var puncts = []string{"->", "//", "==", "!=", "<=", ">=", "[", "]", "(", ")", "{", "}", "<", ">", ",", ":", "=", "@", "+", "-", "*", "%"}

// lexLine splits one line (comment removed) into tokens.
func lexLine(line string) ([]token, *Error) {
	var toks []token
	i := 0
	col := func(i int) int { return utf8.RuneCountInString(line[:i]) + 1 }
	for i < len(line) {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
			j := i
			for j < len(line) && (line[j] == '_' || (line[j] >= 'a' && line[j] <= 'z') || (line[j] >= 'A' && line[j] <= 'Z') || (line[j] >= '0' && line[j] <= '9')) {
				j++
			}
			toks = append(toks, token{tIdent, line[i:j], col(i)})
			i = j
		case c >= '0' && c <= '9' || (c == '.' && i+1 < len(line) && line[i+1] >= '0' && line[i+1] <= '9'):
			j := i
			kind := tInt
			for j < len(line) && line[j] >= '0' && line[j] <= '9' {
				j++
			}
			if j < len(line) && line[j] == '.' {
				kind = tFloat
				j++
				for j < len(line) && line[j] >= '0' && line[j] <= '9' {
					j++
				}
			}
			if j < len(line) && (line[j] == 'e' || line[j] == 'E') {
				k := j + 1
				if k < len(line) && (line[k] == '+' || line[k] == '-') {
					k++
				}
				if k < len(line) && line[k] >= '0' && line[k] <= '9' {
					kind = tFloat
					j = k
					for j < len(line) && line[j] >= '0' && line[j] <= '9' {
						j++
					}
				}
			}
			toks = append(toks, token{kind, line[i:j], col(i)})
			i = j
		default:
			matched := false
			for _, p := range puncts {
				if strings.HasPrefix(line[i:], p) {
					toks = append(toks, token{tPunct, p, col(i)})
					i += len(p)
					matched = true
					break
				}
			}
			if !matched {
				r, _ := utf8.DecodeRuneInString(line[i:])
				return nil, &Error{Pos: Pos{Col: col(i)}, Msg: fmt.Sprintf("unexpected character %q", r)}
			}
		}
	}
	return toks, nil
}

// stripComment removes a # or ; comment.
func stripComment(line string) string {
	if i := strings.IndexAny(line, "#;"); i >= 0 {
		return line[:i]
	}
	return line
}

package configs

import (
	"fmt"
	"os"
	"strings"
)

// TextPos maps a line and a column (from 1) of the text of a string field,
// such as workload.tile.source, to the config file: "run.yaml:12:7". It
// does so for a literal block (`source: |`), whose lines are lines of the
// file, indented; for a value written otherwise (quoted, or given by --set)
// it returns false.
func (c *RunConfig) TextPos(path string, line, col int) (string, bool) {
	s, ok := c.Sources[path]
	if !ok || s.Line <= 0 || s.Col <= 0 || s.File == SetFile || line <= 0 || col <= 0 {
		return "", false
	}
	data, err := os.ReadFile(s.File)
	if err != nil {
		return "", false
	}
	lines := strings.Split(string(data), "\n")
	if s.Line > len(lines) {
		return "", false
	}
	head := strings.TrimRight(lines[s.Line-1], " \t\r")
	if s.Col > len(head) || head[s.Col-1] != '|' {
		return "", false
	}
	// Only | with an optional chomping indicator: an indentation
	// indicator (|2) moves the text's columns.
	if ind := head[s.Col:]; ind != "" && ind != "-" && ind != "+" && !strings.HasPrefix(strings.TrimLeft(ind, "-+ \t"), "#") {
		return "", false
	}
	// The block's indentation is that of its first line that is not blank.
	indent := -1
	for _, l := range lines[s.Line:] {
		if strings.TrimSpace(l) != "" {
			indent = len(l) - len(strings.TrimLeft(l, " "))
			break
		}
	}
	at := s.Line + line
	if indent <= 0 || at > len(lines) {
		return "", false
	}
	return fmt.Sprintf("%s:%d:%d", s.File, at, indent+col), true
}

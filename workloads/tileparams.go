package workloads

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/trnsim/trnsim/configs"
)

// paramLine matches a tile kernel's `param NAME = expr` line.
var paramLine = regexp.MustCompile(`^(\s*param\s+)([A-Za-z_][A-Za-z0-9_]*)(\s*=\s*)(.*?)(\s*(#.*)?)$`)

// applyTileParams sets the kernel's parameters that the config names
// (workload.tile.params): each replaces the value of the kernel's `param`
// line of that name, so lines and columns of everything else stay as
// written. A name the kernel does not declare is an error naming the
// field and the kernel's parameters.
func applyTileParams(cfg *configs.RunConfig, src string) (string, error) {
	ps := cfg.Workload.Tile.Params
	if len(ps.Values) == 0 {
		return src, nil
	}
	lines := strings.Split(src, "\n")
	found := map[string]bool{}
	var declared []string
	for i, l := range lines {
		m := paramLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		declared = append(declared, m[2])
		if v, ok := ps.Values[m[2]]; ok {
			lines[i] = m[1] + m[2] + m[3] + fmt.Sprint(v) + m[5]
			found[m[2]] = true
		}
	}
	for _, name := range ps.Order {
		if !found[name] {
			known := "none"
			if len(declared) > 0 {
				known = strings.Join(declared, ", ")
			}
			return "", cfg.FieldError("workload.tile.params."+name, "the kernel has no parameter %s (its parameters: %s)", name, known)
		}
	}
	return strings.Join(lines, "\n"), nil
}

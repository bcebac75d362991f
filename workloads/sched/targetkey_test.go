package sched

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/internal/memo/memotest"
	"github.com/trnsim/trnsim/isa"
)

// A target's key covers every field but the chip routes and the memo.
func TestTargetKeyCoversEveryField(t *testing.T) {
	tg := &Target{Limits: &isa.Limits{}}
	key := func() any { return tg.Key() }
	require.Empty(t, memotest.MissedFields(tg, key, "Limits", "ChipHops", "ChipLatencyNs", "Memo"))
	require.Empty(t, memotest.MissedFields(tg.Limits, key))
	require.Equal(t, []string{"HBMGBps"}, memotest.MissedFields(tg, func() any { return tg.Key().WithoutHBMBandwidth() }, "Limits", "ChipHops", "ChipLatencyNs", "Memo"))
}

// The scheduler never reads the HBM bandwidth (only the kernels'
// estimates do), so a kernel's schedule may be shared between targets
// that differ in it alone (TargetKey.WithoutHBMBandwidth).
func TestCompileNeverReadsHBMBandwidth(t *testing.T) {
	files, err := os.ReadDir(".")
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, f := range files {
		if !strings.HasSuffix(f.Name(), ".go") || strings.HasSuffix(f.Name(), "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f.Name(), nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "HBMGBps" {
				pos := fset.Position(sel.Pos())
				if !(f.Name() == "target.go" && strings.Contains(lineAt(t, f.Name(), pos.Line), "hbmGBps: t.HBMGBps")) {
					t.Errorf("%s reads HBMGBps: a schedule shared across HBM bandwidths would be wrong", pos)
				}
			}
			return true
		})
	}
}

func lineAt(t *testing.T, path string, line int) string {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Split(string(data), "\n")[line-1]
}

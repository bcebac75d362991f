package kernels

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/internal/memo/memotest"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/sched"
)

// A plan's key, what the memo keys estimates and schedules on, covers
// every field an estimate or the kernel may read: a field added to
// GEMMPlan and left out of planState fails here.
func TestPlanKeyCoversEveryField(t *testing.T) {
	var p GEMMPlan
	require.Empty(t, memotest.MissedFields(&p, func() any { return p.Key() }, "auto")) // (auto: the report's, never an estimate's)
	require.Empty(t, memotest.MissedFields(&p.G, func() any { return p.Key() }))
}

// The searches that share estimates differ in SBUF size alone.
func TestSearchKeyLeavesOutOnlySBUF(t *testing.T) {
	tg := &sched.Target{Limits: &isa.Limits{}}
	key := func() any { return tg.Key().WithoutSBUF() }
	require.Equal(t, []string{"SBUFPartitionBytes"}, memotest.MissedFields(tg.Limits, key))
	require.Empty(t, memotest.MissedFields(tg, key, "Limits", "ChipHops", "ChipLatencyNs", "Memo"))
}

// An estimator is made once for the searches that share a key, which
// leaves out the SBUF size: making it must not read the SBUF size (nor
// must anything the estimates read, which they take from the search's own
// target, but the key covers the rest of).
func TestEstimatesNeverReadTheSBUFSize(t *testing.T) {
	fset := token.NewFileSet()
	for _, f := range []string{"estimate.go", "dequant.go"} {
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "SBUFPartitionBytes" {
				t.Errorf("%s reads the SBUF size: estimates shared across SBUF sizes would be wrong", fset.Position(sel.Pos()))
			}
			return true
		})
	}
}

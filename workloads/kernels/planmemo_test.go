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
	require.Empty(t, memotest.MissedFields(&p, func() any { return p.Key() }, "auto", "normFree", "normVector", "normShareVG")) // (auto: the report's, never an estimate's; normFree, normVector, normShareVG: the target's bn_stats size, cost table and port rule, with G)
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

// Packed candidate keys are exact: every field changed on its own gives
// another key, and a field beyond its bits is not packed at all.
func TestCandKeyPackIsExact(t *testing.T) {
	base := candKey{acc: isa.FP32, tr: TransposeTensor, order: OrderNMK, nbuf: 3, nres: 2, gb: 7, bn: 1024, bm: 512, bk: 2048}
	p0, ok := base.pack()
	require.True(t, ok)
	seen := map[packedCandKey]string{p0: "base"}
	for name, change := range map[string]func(*candKey){
		"acc": func(k *candKey) { k.acc = isa.BF16 }, "tr": func(k *candKey) { k.tr = TransposeDMA },
		"order": func(k *candKey) { k.order = OrderNKM }, "ares": func(k *candKey) { k.ares = true },
		"psumK": func(k *candKey) { k.psumK = true }, "nbuf": func(k *candKey) { k.nbuf = 1<<16 - 1 },
		"nres": func(k *candKey) { k.nres = 255 }, "gb": func(k *candKey) { k.gb = 1<<14 - 1 },
		"bn": func(k *candKey) { k.bn = 512 }, "bm": func(k *candKey) { k.bm = 1024 }, "bk": func(k *candKey) { k.bk = 1 << 40 },
	} {
		k := base
		change(&k)
		p, ok := k.pack()
		require.True(t, ok, name)
		require.NotContains(t, seen, p, "%s gives the key of %s", name, seen[p])
		seen[p] = name
	}
	for _, k := range []candKey{{nbuf: 1 << 16}, {nres: 256}, {gb: 1 << 14}, {nbuf: -1}} {
		_, ok := k.pack()
		require.False(t, ok, "%+v", k)
	}
}

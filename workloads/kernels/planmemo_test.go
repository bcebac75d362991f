package kernels

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/internal/memo"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/sched"
)

// A plan's key, what the memo keys estimates and schedules on, covers
// every field an estimate or the kernel may read: a field added to
// GEMMPlan and left out of planState fails here.
func TestPlanKeyCoversEveryField(t *testing.T) {
	var p GEMMPlan
	require.Empty(t, memo.MissedFields(&p, func() any { return p.Key() }, "auto")) // (auto: the report's, never an estimate's)
	require.Empty(t, memo.MissedFields(&p.G, func() any { return p.Key() }))
}

// The searches that share estimates differ in SBUF size alone.
func TestSearchKeyLeavesOutOnlySBUF(t *testing.T) {
	tg := &sched.Target{Limits: &isa.Limits{}}
	key := func() any { return tg.Key().WithoutSBUF() }
	require.Equal(t, []string{"SBUFPartitionBytes"}, memo.MissedFields(tg.Limits, key))
	require.Empty(t, memo.MissedFields(tg, key, "Limits", "ChipHops", "ChipLatencyNs", "Memo"))
}

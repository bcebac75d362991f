package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/sweep"
)

func TestShardOptions(t *testing.T) {
	none := func(string) string { return "" }
	k8s := func(k string) string {
		if k == "JOB_COMPLETION_INDEX" {
			return "5"
		}
		return ""
	}
	slurm := func(k string) string {
		return map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_COUNT": "4"}[k]
	}
	for _, tc := range []struct {
		name, flag   string
		getenv       func(string) string
		shard, count int
		err          string
	}{
		{"none", "", none, 0, 0, ""},
		{"explicit", "2/7", none, 2, 7, ""},
		{"explicit wins over slurm", "1/2", slurm, 1, 2, ""},
		{"slurm", "", slurm, 3, 4, ""},
		{"indexed job", "8", k8s, 5, 8, ""},
		{"count without an index", "8", none, 0, 0, "needs JOB_COMPLETION_INDEX"},
		{"out of range", "7/7", none, 0, 0, "0 <= i < N"},
		{"not a number", "a/b", none, 0, 0, "i/N with"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o sweep.Options
			err := shardOptions(&o, tc.flag, tc.getenv)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []int{tc.shard, tc.count}, []int{o.Shard, o.Shards})
		})
	}
}

// A bad sweep file is one clear error with its line, and a non-zero exit.
func TestSweepBadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.yaml")
	require.NoError(t, os.WriteFile(path, []byte("base: nope.yaml\naxes:\n  workload.gemm.m: []\n"), 0o644))
	code, stdout, stderr := trnsim(t, "sweep", path, "--out", filepath.Join(dir, "out"))
	assert.NotEqual(t, 0, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "s.yaml:3: axis workload.gemm.m: must be a non-empty list of values")
	_, err := os.Stat(filepath.Join(dir, "out"))
	assert.True(t, os.IsNotExist(err), "nothing written")
}

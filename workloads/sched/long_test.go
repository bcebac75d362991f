package sched_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// The scheduler's buffering bounds, outside CI (TRNSIM_LONG=1): each
// kernel of testdata/long runs through the trnsim binary under
// /usr/bin/time -v. A 10M-instruction kernel in which one engine has work
// only at the end peaks at no more than 1.5x the RSS of the same kernel
// without it, and 10M transfers from all-distinct HBM offsets stay under
// the RSS of a 16384^3 GEMM. docs/performance.md records the figures.
func TestLongMemoryBounds(t *testing.T) {
	if os.Getenv("TRNSIM_LONG") == "" {
		t.Skip("set TRNSIM_LONG=1 to run the 10M-instruction kernels")
	}
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		t.Skip("needs /usr/bin/time")
	}
	bin := filepath.Join(t.TempDir(), "trnsim")
	build := exec.Command("go", "build", "-o", bin, "github.com/trnsim/trnsim/cmd/trnsim")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	rss := func(args ...string) int64 {
		cmd := exec.Command("/usr/bin/time", append([]string{"-v", bin, "run", "-q"}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		m := regexp.MustCompile(`Maximum resident set size \(kbytes\): (\d+)`).FindSubmatch(out)
		require.NotNil(t, m, string(out))
		kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
		t.Logf("%v: peak RSS %d KB", args, kb)
		return kb
	}
	nolag := rss("testdata/long/nolag.tile")
	lag := rss("testdata/long/lag.tile")
	require.LessOrEqual(t, float64(lag), 1.5*float64(nolag), "the late engine's lag costs at most 1.5x")
	gemm := rss("--set", "workload.gemm.m=16384", "--set", "workload.gemm.k=16384", "--set", "workload.gemm.n=16384")
	dma := rss("testdata/long/dma10m.tile")
	require.Less(t, dma, gemm, "10M distinct transfers stay under a 16384^3 GEMM")
}

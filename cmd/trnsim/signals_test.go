//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// buildTrnsim builds the trnsim command into a temporary folder.
func buildTrnsim(t *testing.T) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "trnsim")
	out, err := exec.Command(goCmd, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// longRun is a traced GEMM that takes seconds, long enough to be
// interrupted.
var longRun = []string{"run", "-q", "--set", "workload.gemm.m=16384", "--set", "workload.gemm.n=16384", "--set", "workload.gemm.k=16384"}

// startTraced starts bin on longRun with --trace and --json in dir/out and
// returns once the trace's temporary file is being written (the simulation
// is running), with the channel that Wait's result arrives on.
func startTraced(t *testing.T, bin, dir string) (*exec.Cmd, *bytes.Buffer, <-chan error) {
	t.Helper()
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bin, append(longRun, "--trace", filepath.Join(out, "trace.json"), "--json", filepath.Join(out, "results.json"))...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(60 * time.Second)
	for {
		matches, _ := filepath.Glob(filepath.Join(out, ".trace.json.trnsim-partial-*"))
		if len(matches) == 1 {
			if fi, err := os.Stat(matches[0]); err == nil && fi.Size() > 0 {
				return cmd, &stderr, done
			}
		}
		select {
		case <-deadline:
			cmd.Process.Kill()
			<-done
			t.Fatalf("the run wrote no trace within a minute; stderr:\n%s", stderr.String())
		case err := <-done:
			t.Fatalf("the run ended (%v) before it could be interrupted; stderr:\n%s", err, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestInterruptedRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds trnsim and runs it")
	}
	bin := buildTrnsim(t)
	for _, tc := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{
		{syscall.SIGINT, "SIGINT", 130},
		{syscall.SIGTERM, "SIGTERM", 143},
	} {
		t.Run(tc.name+" removes the temporary files", func(t *testing.T) {
			dir := t.TempDir()
			cmd, stderr, done := startTraced(t, bin, dir)
			require.NoError(t, cmd.Process.Signal(tc.sig))
			err := <-done
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "stderr:\n%s", stderr.String())
			assert.Equal(t, tc.code, ee.ExitCode())
			assert.Equal(t, "trnsim: interrupted by "+tc.name+"; its temporary files are removed and no output was written\n", stderr.String())
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, entries, "no temporary file, no target, and not the folder the run made")
		})
	}

	t.Run("the next run sweeps what kill -9 left", func(t *testing.T) {
		dir := t.TempDir()
		cmd, _, done := startTraced(t, bin, dir)
		require.NoError(t, cmd.Process.Kill())
		<-done
		out := filepath.Join(dir, "out")
		left, err := filepath.Glob(filepath.Join(out, ".*"))
		require.NoError(t, err)
		require.Len(t, left, 2, "kill -9 leaves the trace's and the JSON's temporary files")
		for _, l := range left {
			assert.Contains(t, filepath.Base(l), ".trnsim-partial-")
		}

		// A run that writes the same trace sweeps its temporary file; the
		// JSON's stays until a run writes that target.
		small := exec.Command(bin, "run", "-q", "--set", "workload.gemm.m=256", "--trace", filepath.Join(out, "trace.json"))
		msg, err := small.CombinedOutput()
		require.NoError(t, err, "%s", msg)
		rest, err := filepath.Glob(filepath.Join(out, ".*"))
		require.NoError(t, err)
		require.Len(t, rest, 1)
		assert.True(t, strings.HasPrefix(filepath.Base(rest[0]), ".results.json.trnsim-partial-"), rest[0])
		_, err = os.Stat(filepath.Join(out, "trace.json"))
		assert.NoError(t, err)
	})
}

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --cpuprofile and --memprofile write their profiles; an unwritable path
// is one error naming the flag.
func TestProfileFlags(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	code, _, stderr := trnsim(t, "run", "-q", "--cpuprofile", cpu, "--memprofile", mem)
	require.Equal(t, 0, code, stderr)
	for _, p := range []string{cpu, mem} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		assert.Positive(t, fi.Size(), p)
	}
	code, _, stderr = trnsim(t, "run", "-q", "--cpuprofile", filepath.Join(dir, "no", "such", "cpu.prof"))
	assert.NotEqual(t, 0, code)
	assert.Contains(t, stderr, "trnsim: --cpuprofile: ")
}

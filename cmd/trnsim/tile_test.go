package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const twoCores = `kernel two_cores
tile x hbm bf16 [256, 512] input
tile y hbm bf16 [256, 512] output
for c in range(0, 2) cores:
    tile s sbuf bf16 [128, 512]
    any dma_copy s, x[c * 128:c * 128 + 128, 0:512]
    any dma_copy y[c * 128:c * 128 + 128, 0:512], s
`

// tileDir is a temporary folder of kernels, named relative to the working
// directory (as a user types them).
func tileDir(t *testing.T, files map[string]string) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	dir, err := os.MkdirTemp(wd, "tiletest-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	for name, text := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	rel, err := filepath.Rel(wd, dir)
	require.NoError(t, err)
	return rel
}

// trnsim check of a tile kernel, bare or in a run config, says what each
// core's engines run, and no comment line of it ends in a colon.
func TestCheckTileSaysWhichCore(t *testing.T) {
	dir := tileDir(t, map[string]string{
		"two.tile": twoCores,
		"two.yaml": "hardware:\n  preset: trn2\nworkload:\n  kind: tile\n  tile:\n    file: two.tile\n",
	})
	tests := []struct {
		name, arg string
		want      []string
	}{
		{"bare kernel", filepath.Join(dir, "two.tile"), []string{
			"# scheduled for trn2: core 0: scalar 1 sync 1; core 1: scalar 1 sync 1 (4 instructions)\n",
			"#   .buffer s_c1 sbuf bf16 [128, 512] core=1 part=0 offset=0\n"}},
		{"run config", filepath.Join(dir, "two.yaml"), []string{
			"\n# the workload lowers and fits trn2\n# scheduled for trn2: core 0: scalar 1 sync 1; core 1: scalar 1 sync 1 (4 instructions)\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := trnsim(t, "check", tc.arg)
			require.Equal(t, 0, code, errOut)
			for _, w := range tc.want {
				assert.Contains(t, out, w)
			}
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(line, "#") {
					assert.False(t, strings.HasSuffix(line, ":"), "a dangling colon: %q", line)
				}
			}
		})
	}
}

// A kernel that would run no instruction is an error in check and run, and
// run prints no result; the kernel's path is named as typed, in located
// errors as in the others.
func TestTileKernelErrors(t *testing.T) {
	dir := tileDir(t, map[string]string{
		"empty.tile": "kernel k\ntile a sbuf bf16 [128, 4]\n",
		"zero.tile":  "kernel k\ntile a sbuf bf16 [128, 4]\nfor i in range(0):\n    vector memset a\n",
		"ls.tile":    "kernel k\ntile a sbuf bf16 [128, 4]\nany load_stationary a\n",
		"core.tile":  "kernel k\ntile a sbuf bf16 [128, 4] core=9\nvector memset a\n",
		"fit.tile":   "kernel k\ntile a sbuf bf16 [128, 200000]\nvector memset a\n",
		"kind.tile":  "kernel k\ntile a hbm fp32 [4] input\ncollective foo a, a\n",
	})
	p := func(name string) string { return filepath.Join(dir, name) }
	tests := []struct {
		file, want string
	}{
		{"empty.tile", p("empty.tile") + ":1:8: kernel k has no instructions to run: it has no ops"},
		{"zero.tile", p("zero.tile") + ": kernel k has no instructions to run: none of its ops executes"},
		{"ls.tile", p("ls.tile") + ":3:1: load_stationary runs only on TensorE; name the engine (tensor load_stationary)"},
		{"core.tile", p("core.tile") + ":2:32: tile a: core 9 does not exist (the chip has 8)"},
		{"fit.tile", p("fit.tile") + ":2:6: tile a: the k kernel's working set does not fit SBUF"},
		{"kind.tile", p("kind.tile") + `:3:12: unknown collective kind "foo"`},
	}
	for _, tc := range tests {
		for _, cmd := range []string{"check", "run"} {
			t.Run(cmd+" "+tc.file, func(t *testing.T) {
				args := []string{cmd, p(tc.file)}
				if cmd == "run" {
					args = append(args, "-q")
				}
				code, stdout, stderr := trnsim(t, args...)
				assert.Equal(t, 1, code)
				assert.Empty(t, stdout, "no result")
				assert.True(t, strings.HasPrefix(stderr, "trnsim: "+tc.want), stderr)
			})
		}
	}
}

// The ranks of a collective that stall alike are one row of the top
// stalls, naming the cores (CHIP.CORE) and how many.
func TestTopStallsFoldAlikeCores(t *testing.T) {
	code, out, stderr := trnsim(t, "run", "-q", "../../examples/allreduce.tile")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `top stalls +0\.0-0\.4 gpsimd  semaphore +[0-9.]+ us \([0-9.]+%\)  \[busy [0-9.]+%, [0-9]+ instructions\] each of 5 cores\n`, out)
	assert.Contains(t, out, "(CHIP.CORE and engine;")
}

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// assertOneError runs trnsim and checks that it fails with exactly one
// line on stderr, "trnsim: " and want, prints nothing on stdout, and
// leaves no output (the --json target) and no temp file in dir.
func assertOneError(t *testing.T, dir string, args []string, want string) {
	t.Helper()
	out := filepath.Join(dir, "out.json")
	if args[0] == "run" {
		args = append(args, "-q", "--json", out)
	}
	code, stdout, stderr := trnsim(t, args...)
	assert.NotEqual(t, 0, code)
	assert.NotEqual(t, 3, code, "an internal error: %s", stderr)
	assert.Empty(t, stdout)
	assert.Equal(t, "trnsim: "+want+"\n", stderr)
	_, err := os.Stat(out)
	assert.True(t, os.IsNotExist(err), "no partial output")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		assert.NotContains(t, e.Name(), ".partial-")
	}
}

func TestHugeLoweringValuesNameTheField(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	gemmYAML := write("gemm.yaml", "hardware:\n  preset: trn2\nworkload:\n  kind: gemm\n  gemm: {m: 2048, k: 4096, n: 4096, dtype: bf16}\n  lowering:\n    buffers: 1000000\n")
	tileN := write("tilen.yaml", "hardware: {preset: trn2}\nworkload:\n  kind: gemm\n  gemm: {m: 2048, k: 4096, n: 4096}\n  lowering: {tile_n: 100000}\n")
	banks := write("banks.yaml", "hardware: {preset: trn2}\nworkload:\n  kind: gemm\n  gemm: {m: 2048, k: 4096, n: 4096}\n  lowering:\n    psum_banks: 1000\n")
	ew := write("ew.yaml", "hardware: {preset: trn2}\nworkload:\n  kind: elementwise\n  elementwise: {op: exp, rows: 1024, cols: 4096, dtype: bf16}\n")
	sbuf := func(needs string) string {
		return "the gemm kernel's working set does not fit SBUF: it needs " + needs + " per partition (placing the smallest input and result blocks), more than SBUF's 224.0 KiB"
	}
	const maxInt, big = "9223372036854775807", "4611686018427387904" // 2^63-1, 2^62
	cases := []struct {
		name string
		args []string // after the command and before the output flags
		want string
	}{
		{"buffers", []string{"--set", "workload.lowering.buffers=1000000"}, "--set workload.lowering.buffers=1000000: " + sbuf("1.2 GiB")},
		// Sizes that overflow an int64 saturate: they never fit (they
		// used to wrap around, fit, and hang or fail inside the scheduler).
		{"buffers max int", []string{"--set", "workload.lowering.buffers=" + maxInt}, "--set workload.lowering.buffers=" + maxInt + ": " + sbuf("more than 8 EiB")},
		{"buffers 2^62", []string{"--set", "workload.lowering.buffers=" + big}, "--set workload.lowering.buffers=" + big + ": " + sbuf("more than 8 EiB")},
		{"block_m", []string{"--set", "workload.lowering.block_m=100000000"}, "--set workload.lowering.block_m=100000000: " + sbuf("1.9 GiB")},
		{"block_m not a multiple", []string{"--set", "workload.lowering.block_m=100000001"}, "--set workload.lowering.block_m=100000001: 100000001 is not a multiple of 128"},
		{"block_m 2^62", []string{"--set", "workload.lowering.block_m=" + big}, "--set workload.lowering.block_m=" + big + ": " + sbuf("more than 8 EiB")},
		{"block_k 2^62", []string{"--set", "workload.lowering.block_k=" + big}, "--set workload.lowering.block_k=" + big + ": " + sbuf("more than 8 EiB")},
		{"block_n 2^62", []string{"--set", "workload.lowering.block_n=" + big}, "--set workload.lowering.block_n=" + big + ": " + big + " columns need 9007199254740992 PSUM banks per accumulation group; only 8 are available"},
		{"tile_n", []string{"--set", "workload.lowering.tile_n=100000"}, "--set workload.lowering.tile_n=100000: 100000 exceeds the moving free size limit of 512"},
		{"psum_banks", []string{"--set", "workload.lowering.psum_banks=1000"}, "--set workload.lowering.psum_banks=1000: 1000 exceeds the 8 PSUM banks"},
		{"result_buffers", []string{"--set", "workload.lowering.result_buffers=1000"}, "--set workload.lowering.result_buffers=1000: " + sbuf("2.0 MiB")},
		{"result_buffers 2^62", []string{"--set", "workload.lowering.result_buffers=" + big}, "--set workload.lowering.result_buffers=" + big + ": " + sbuf("more than 8 EiB")},
		{"dma_queues", []string{"--set", "workload.lowering.dma_queues=1000"}, "--set workload.lowering.dma_queues=1000: 1000 exceeds the 16 DMA queues"},
		{"m max int", []string{"--set", "workload.gemm.m=" + maxInt}, "--set workload.gemm.m=" + maxInt + ": the gemm kernel's tensors do not fit one chip's HBM: they need more than 8 EiB, the chip has 96.0 GiB (at tensor AT)"},
		{"in a file", []string{gemmYAML}, gemmYAML + ":7:14: workload.lowering.buffers: " + sbuf("1.2 GiB")},
		{"tile_n in a file", []string{tileN}, tileN + ":5:22: workload.lowering.tile_n: 100000 exceeds the moving free size limit of 512"},
		{"psum_banks in a file", []string{banks}, banks + ":6:17: workload.lowering.psum_banks: 1000 exceeds the 8 PSUM banks"},
		{"elementwise buffers", []string{ew, "--set", "workload.lowering.buffers=" + big}, "--set workload.lowering.buffers=" + big +
			": the elementwise kernel's working set does not fit SBUF: it needs more than 8 EiB per partition (placing the input and output tiles), more than SBUF's 224.0 KiB"},
		// The --set is blamed, not the file's rows.
		{"elementwise cols", []string{ew, "--set", "workload.elementwise.cols=" + maxInt}, "--set workload.elementwise.cols=" + maxInt +
			": the elementwise kernel's tensors do not fit one chip's HBM: they need more than 8 EiB, the chip has 96.0 GiB (at tensor X)"},
	}
	for _, tc := range cases {
		for _, cmd := range []string{"run", "check"} {
			t.Run(cmd+" "+tc.name, func(t *testing.T) {
				assertOneError(t, dir, append([]string{cmd}, tc.args...), tc.want)
			})
		}
	}
}

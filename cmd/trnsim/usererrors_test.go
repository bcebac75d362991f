package main

import (
	"os"
	"path/filepath"
	"strings"
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

// Every assembly error a user can cause, found by the parser or by the
// limits check that check and run share, is located FILE:LINE:COL at the
// token it is about, the file named as the user named it.
func TestAssemblyErrorsAreLocated(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	const hdr = ".version 1\n.target trn2\n.buffer a sbuf fp32 [128, 64]\n.buffer h hbm fp32 [128, 64]\n.buffer p psum fp32 [128, 512]\n.buffer b sbuf bf16 [128, 128]\n"
	cases := []struct {
		name, src string
		preset    string
		want      string // after "trnsim: k.asm:"
	}{
		// The parser.
		{"empty file", "", "", `1:1: missing ".version 1" header`},
		{"no header", ".buffer a sbuf fp32 [128, 64]\n", "", `1:1: missing ".version 1" header before .buffer`},
		{"bad character", ".version 1\nvector memset a $\n", "", `2:17: unexpected character '$'`},
		{"unknown directive", ".version 1\n.tgt trn2\n", "", `2:1: unknown directive ".tgt"`},
		{"unknown engine", hdr + "matrix memset a\n", "", `7:1: unknown engine "matrix"`},
		{"unknown opcode", hdr + "vector frobnicate a\n", "", `7:8: unknown opcode "frobnicate"`},
		{"unknown buffer", hdr + "vector memset zz value=1\n", "", `7:15: unknown buffer "zz"`},
		{"slice out of range", hdr + "vector memset a[0:128, 0:100] value=1\n", "", `7:15: slice 0:100 out of range for dimension 1 of a (size 64)`},
		{"unknown dtype", hdr + ".buffer c sbuf fp99 [128, 64]\n", "", `7:16: unknown dtype "fp99"`},
		{"attribute not taken", hdr + "vector memset a value=1 queue=3\n", "", `7:25: memset does not take attribute "queue"`},
		{"operand count", hdr + "vector tensor_copy a\n", "", `7:8: tensor_copy takes 2 operand(s), got 1`},
		{"wait value too big", hdr + "vector memset a value=1 wait=s1>=99999999999999999999\n", "", `7:34: wait value: "99999999999999999999" is not an integer`},
		{"non-ASCII name", hdr + "vector memset ä value=1\n", "", `7:15: unexpected character 'ä'`},
		// The preset.
		{"unknown .target", ".version 1\n.target trn9\n", "", `2:9: .target trn9: unknown preset "trn9"`},
		{".target not the hardware", ".version 1\n.target trn1\n", "trn2", `2:9: the program targets trn1 but the hardware is trn2`},
		// The limits: buffers.
		{"tile over the partitions", hdr + ".buffer c sbuf fp32 [256, 64]\n", "", `7:22: buffer c: partitions 0:256 outside 0:128`},
		{"part= past the partitions", hdr + ".buffer c sbuf fp32 [64, 64] part=100\n", "", `7:35: buffer c: partitions 100:164 outside 0:128`},
		{"too big for SBUF", hdr + ".buffer c sbuf fp32 [128, 100000]\n", "", `7:21: buffer c: bytes 512:400512 per partition do not fit sbuf`},
		{"offset past SBUF", hdr + ".buffer c sbuf fp32 [128, 64] offset=229300\n", "", `7:38: buffer c: bytes 229300:229556 per partition do not fit sbuf`},
		{"too big for HBM", hdr + ".buffer g hbm fp32 [100000000000, 1024]\n", "", `7:20: buffer g: bytes 32768:409600000032768 do not fit the chip's 103079215104 bytes of HBM`},
		{"core that does not exist", hdr + ".core 0 9\n.buffer c sbuf fp32 [128, 64]\n", "", `8:9: buffer c: core 9 does not exist (config has 8 per chip)`},
		// The limits: instructions.
		{"unknown semaphore", hdr + "vector memset a value=1 signal=s9999999\n", "", `7:32: vector memset a value=1 signal=s9999999: semaphore s9999999 out of range (config has 256 per core)`},
		{"second wait", hdr + "vector memset a value=1 wait=s1>=1 wait=s300>=2\n", "", `7:41: vector memset a value=1 wait=s1>=1 wait=s300>=2: semaphore s300 out of range`},
		{"remote core", hdr + "vector memset a value=1 signal=s1@0.99\n", "", `7:32: vector memset a value=1 signal=s1@99: semaphore s1 names chip 0 core 99, which does not exist`},
		{"indented, after a comment", hdr + "; signal=s999\n   vector memset a value=1 signal=s999 ; s1\n", "", `8:35: vector memset a value=1 signal=s999: semaphore s999 out of range`},
		{"engine reads HBM", hdr + "vector memset h value=1\n", "", `7:15: vector memset h value=1: vector cannot access HBM directly`},
		{"GpSimd reads PSUM", hdr + "gpsimd memset p value=1\n", "", `7:15: gpsimd memset p value=1: GpSimd cannot access PSUM`},
		{"stationary too wide", hdr + ".buffer w sbuf fp32 [128, 50000]\ntensor matmul p, w, b start stop\n", "", `8:18: tensor load_stationary w: stationary free size 50000 exceeds 128`},
		{"moving too wide", hdr + ".buffer w sbuf bf16 [128, 1024]\ntensor matmul p, b, w start stop\n", "", `8:21: tensor multiply_moving p, w start stop: moving free size 1024 exceeds the limit of 512`},
		{"matmul output", hdr + "tensor matmul p, b, b[0:128, 0:64] start stop\n", "", `7:15: tensor multiply_moving p, b[0:128, 0:64] start stop: multiply_moving output free size 512 differs from moving free size 64`},
		{"perf mode", hdr + "tensor matmul p, b, b start stop perf=2\n", "", `7:39: tensor load_stationary b perf=2: FP8 double-row mode (perf=2) takes fp8e4 or fp8e5 tiles, not bf16`},
		{"DMA queue", hdr + "sync dma_copy a, h queue=99\n", "", `7:26: sync dma_copy a, h queue=99 dge=none: DMA queue 99 out of range (0..15)`},
		{"DMA sizes", hdr + "sync dma_copy a[0:128, 0:32], h\n", "", `7:15: sync dma_copy a[0:128, 0:32], h queue=0 dge=none: dma_copy moves 8192 elements into 4096`},
		{"hardware DGE on vector", hdr + "vector dma_copy a, h dge=hw\n", "", `7:26: vector dma_copy a, h queue=0 dge=hw: hardware DGE is triggered from the sync or scalar sequencer, not vector`},
		{"hardware DGE on trn1", ".version 1\n.target trn1\n.buffer a sbuf fp32 [128, 64]\n.buffer h hbm fp32 [128, 64]\nsync dma_copy a, h dge=hw\n", "", `5:24: sync dma_copy a, h queue=0 dge=hw: hardware DGE (dge=hw) needs NeuronCore-v3 or later`},
	}
	for _, tc := range cases {
		require.NoError(t, os.WriteFile("k.asm", []byte(tc.src), 0o644))
		for _, cmd := range []string{"check", "run"} {
			t.Run(cmd+" "+tc.name, func(t *testing.T) {
				args := []string{cmd, "k.asm"}
				if tc.preset != "" {
					args = append(args, "--preset", tc.preset)
				}
				out := filepath.Join(dir, "out.json")
				if cmd == "run" {
					args = append(args, "-q", "--json", out)
				}
				code, stdout, stderr := trnsim(t, args...)
				assert.Equal(t, 1, code, stderr)
				assert.Empty(t, stdout)
				assert.True(t, strings.HasPrefix(stderr, "trnsim: k.asm:"+tc.want), "want the prefix trnsim: k.asm:%s\ngot %s", tc.want, stderr)
				assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %s", stderr)
				_, err := os.Stat(out)
				assert.True(t, os.IsNotExist(err), "no partial output")
			})
		}
	}
}

// A new user's mistakes with tile kernels, in a .tile file or in a run
// config of kind tile: each is one error, located, with exit status 1 and
// no output, from check as from run.
func TestTileInputErrors(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	files := map[string]string{
		"empty.tile":   "",
		"comment.tile": "# a kernel, one day\n\n",
		"syntax.tile":  "kernel k\ntile A hbm bf16 [128 input\n",
		"engine.tile":  "kernel k\nfrobnicate\n",
		"unknown.tile": "kernel k\ntile A hbm bf16 [128, 64] input\ntile B hbm bf16 [128, 64] output\ntile a sbuf bf16 [128, 64]\nany dma_copy a, A\nany dma_copy B, q\n",
		"sizes.tile":   "kernel k\ntile A hbm bf16 [128, 64] input\ntile B hbm bf16 [128, 64] output\ntile a sbuf bf16 [128, 100000]\nany dma_copy a, A\nany dma_copy B, a\n",
		"parts.tile":   "kernel k\ntile A hbm bf16 [128, 64] input\ntile a sbuf bf16 [256, 64]\nany dma_copy a[0:128], A\n",
		"sbuf.tile":    "kernel k\ntile A hbm bf16 [128, 64] input\ntile a sbuf bf16 [128, 120000]\nany dma_copy a[0:128, 0:64], A\n",
		"hbm.tile":     "kernel k\ntile A hbm bf16 [100000000000, 100000] input\n",
		// Sizes past an int64 used to wrap around and pass.
		"hbm-wraps.tile":  "kernel k\ntile A hbm bf16 [4611686018427387904, 4611686018427387904] input\n",
		"sbuf-wraps.tile": "kernel k\ntile A hbm bf16 [128, 64] input\ntile a sbuf bf16 [128, 4611686018427387904, 4]\nany dma_copy a[0:128, 0, 0:4], A[0:128, 0:4]\n",
		"good.tile":       "kernel k\ntile A hbm bf16 [128, 64] input\ntile B hbm bf16 [128, 64] output\ntile a sbuf bf16 [128, 64]\nany dma_copy a, A\nany dma_copy B, a\n",
		"both.yaml":       "hardware: {preset: trn2}\nworkload:\n  kind: tile\n  tile:\n    file: good.tile\n    source: \"kernel k\\n\"\n",
		"neither.yaml":    "hardware: {preset: trn2}\nworkload:\n  kind: tile\n  tile: {}\n",
		"nosection.yaml":  "hardware: {preset: trn2}\nworkload:\n  kind: tile\n",
		"missing.yaml":    "hardware: {preset: trn2}\nworkload:\n  kind: tile\n  tile:\n    file: nope.tile\n",
		"folder.yaml":     "hardware: {preset: trn2}\nworkload:\n  kind: tile\n  tile:\n    file: dir.tile\n",
		"block.yaml":      "hardware: {preset: trn2}\nworkload:\n  kind: tile\n  tile:\n    source: |\n      kernel k\n      tile A hbm bf16 [128 input\n",
		"block-op.yaml":   "hardware: {preset: trn2}\nworkload:\n  kind: tile\n  tile:\n    source: |\n      kernel k\n      tile A hbm bf16 [128, 64] input\n      tile B hbm bf16 [128, 64] output\n      tile a sbuf bf16 [128, 100000]\n      any dma_copy a, A\n      any dma_copy B, a\n",
		"quoted.yaml":     "hardware: {preset: trn2}\nworkload:\n  kind: tile\n  tile:\n    source: \"kernel k\\ntile A hbm bf16 [128 input\\n\"\n",
		"asm-block.yaml":  "hardware: {preset: trn2}\nworkload:\n  kind: assembly\n  assembly:\n    source: |\n        .version 1\n        .buffer a sbuf fp32 [128, 64]\n\n        vector memset a value=1 signal=s999\n",
		"uses-good.yaml":  "hardware: {preset: trn2}\nworkload:\n  kind: tile\n  tile:\n    file: good.tile\n",
	}
	for name, text := range files {
		require.NoError(t, os.WriteFile(name, []byte(text), 0o644))
	}
	require.NoError(t, os.Mkdir("dir.tile", 0o755))
	sbuf := func(needs string) string {
		return "the k kernel's working set does not fit SBUF: it needs " + needs + " per partition (placing tile a), more than SBUF's 224.0 KiB"
	}
	cases := []struct {
		args []string
		want string // after "trnsim: "
	}{
		{[]string{"missing.tile"}, "missing.tile: no such file"},
		{[]string{"dir.tile"}, "dir.tile: is a folder, not a tile kernel"},
		{[]string{"empty.tile"}, `empty.tile:1:1: a kernel starts with "kernel NAME"`},
		{[]string{"comment.tile"}, `comment.tile:1:1: a kernel starts with "kernel NAME"`},
		{[]string{"syntax.tile"}, `syntax.tile:2:22: expected "]", got "input"`},
		{[]string{"engine.tile"}, `engine.tile:2:1: expected an engine (tensor, vector, scalar, gpsimd, sync or any), got "frobnicate"`},
		{[]string{"unknown.tile"}, `unknown.tile:6:17: unknown tile "q" (declare it with tile before use)`},
		// Found while the streams are made: run names the op, not the stream.
		{[]string{"sizes.tile"}, "sizes.tile:5:1: any dma_copy a, A: dma_copy moves 8192 elements into 12800000"},
		{[]string{"parts.tile"}, "parts.tile:3:6: tile a: partitions 0:256 outside the 128 partitions"},
		{[]string{"sbuf.tile"}, "sbuf.tile:3:6: tile a: " + sbuf("234.4 KiB")},
		{[]string{"sbuf-wraps.tile"}, "sbuf-wraps.tile:3:6: tile a: " + sbuf("more than 8 EiB")},
		{[]string{"hbm.tile"}, "hbm.tile:2:6: tile A: the k kernel's tensors do not fit one chip's HBM: they need 18626451.5 GiB, the chip has 96.0 GiB (at tensor A)"},
		{[]string{"hbm-wraps.tile"}, "hbm-wraps.tile:2:6: tile A: the k kernel's tensors do not fit one chip's HBM: they need more than 8 EiB, the chip has 96.0 GiB (at tensor A)"},
		{[]string{"sbuf.tile", "--set", "hardware.core.sbuf.partition_kib=100"}, "--set hardware.core.sbuf.partition_kib=100: " + strings.Replace(sbuf("234.4 KiB"), "224.0", "100.0", 1)},
		{[]string{"both.yaml"}, "both.yaml:6:13: workload.tile.source: give the kernel in file or in source, not both"},
		{[]string{"good.tile", "--set", "workload.tile.source=x"}, "--set workload.tile.source=x: give the kernel in file or in source, not both"},
		{[]string{"neither.yaml"}, "neither.yaml:4:9: workload.tile.file: required (or give the kernel in workload.tile.source)"},
		{[]string{"nosection.yaml"}, `nosection.yaml:3:9: workload.kind: kind "tile" needs a workload.tile section`},
		{[]string{"missing.yaml"}, "missing.yaml:5:11: workload.tile.file: nope.tile: no such file"},
		{[]string{"folder.yaml"}, "folder.yaml:5:11: workload.tile.file: dir.tile: is a folder, not a file"},
		// An inline kernel's errors are located in the config file.
		{[]string{"block.yaml"}, `block.yaml:7:28: workload.tile.source: expected "]", got "input"`},
		{[]string{"block-op.yaml"}, "block-op.yaml:10:7: workload.tile.source: any dma_copy a, A: dma_copy moves 8192 elements into 12800000"},
		{[]string{"asm-block.yaml"}, "asm-block.yaml:9:40: workload.assembly.source: vector memset a value=1 signal=s999: semaphore s999 out of range (config has 256 per core)"},
		// A quoted value's lines are not the file's.
		{[]string{"quoted.yaml"}, `workload.tile.source:2:22: expected "]", got "input"`},
	}
	for _, tc := range cases {
		for _, cmd := range []string{"check", "run"} {
			t.Run(cmd+" "+strings.Join(tc.args, " "), func(t *testing.T) {
				assertOneError(t, dir, append([]string{cmd}, tc.args...), tc.want)
			})
		}
	}
	// The kernel a run reads is never an output.
	for _, args := range [][]string{
		{"run", "good.tile", "--json", "good.tile"},
		{"run", "uses-good.yaml", "--trace", "good.tile"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := trnsim(t, args...)
			assert.Equal(t, 1, code)
			assert.Empty(t, stdout)
			assert.Equal(t, "trnsim: "+args[2]+": cannot write good.tile: it is the tile kernel the run reads\n", stderr)
			data, err := os.ReadFile("good.tile")
			require.NoError(t, err)
			assert.Equal(t, files["good.tile"], string(data))
		})
	}
}

// A lowering field that the workload's kind does not read is an error, not
// silently ignored; its automatic zero is fine.
func TestLoweringFieldsAKindDoesNotRead(t *testing.T) {
	dir := t.TempDir()
	ew := filepath.Join(dir, "ew.yaml")
	require.NoError(t, os.WriteFile(ew, []byte("hardware: {preset: trn2}\nworkload:\n  kind: elementwise\n  elementwise: {op: exp, rows: 256, cols: 512}\n  lowering:\n    loop_order: nkm\n"), 0o644))
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"../../examples/matmul.tile", "--set", "workload.lowering.block_m=256"}, "--set workload.lowering.block_m=256: tile workloads do not read it (the kernel's tiles and loops are its own; it reads dge, dma_queues)"},
		{[]string{"../../examples/kernel-matmul.asm", "--set", "workload.lowering.buffers=2"}, "--set workload.lowering.buffers=2: assembly workloads do not read it (the program runs as written)"},
		{[]string{ew}, ew + ":6:17: workload.lowering.loop_order: elementwise workloads do not read it (it reads buffers, dge, dma_queues, elementwise_free)"},
		{[]string{"--set", "workload.lowering.elementwise_free=256"}, "--set workload.lowering.elementwise_free=256: gemm workloads do not read it (it is for elementwise workloads)"},
	}
	for _, tc := range cases {
		for _, cmd := range []string{"check", "run"} {
			t.Run(cmd+" "+strings.Join(tc.args, " "), func(t *testing.T) {
				assertOneError(t, dir, append([]string{cmd}, tc.args...), tc.want)
			})
		}
	}
	for _, args := range [][]string{
		{"check", "../../examples/matmul.tile", "--set", "workload.lowering.dma_queues=2", "--set", "workload.lowering.block_m=0"},
		{"check", "--set", "workload.lowering.elementwise_free=0"},
	} {
		code, _, stderr := trnsim(t, args...)
		assert.Equal(t, 0, code, stderr)
	}
}

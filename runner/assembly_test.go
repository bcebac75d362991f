package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The run config built around a bare assembly file is not the user's: an
// error about a --set names the --set and the field, never a line of the
// assembly file (whose line 4 is a comment in kernel-matmul.asm).
func TestConfigForAssemblyErrorsNameTheSet(t *testing.T) {
	kernel := "../examples/kernel-matmul.asm"
	dir := t.TempDir()
	badTarget := filepath.Join(dir, "t.asm")
	require.NoError(t, os.WriteFile(badTarget, []byte("; a kernel\n.version 1\n.target trn9\n"), 0o644))
	cases := []struct {
		name   string
		path   string
		preset string
		sets   []string
		want   string
	}{
		{"section of another kind", kernel, "", []string{"workload.gemm.m=5"}, `--set workload.gemm.m=5: workload.gemm is given but kind is "assembly"`},
		{"kind changed", kernel, "", []string{"workload.kind=gemm"}, `--set workload.kind=gemm: workload.assembly is given but kind is "gemm"`},
		{"hardware rule", kernel, "", []string{"hardware.chip.cores=100000"}, "--set hardware.chip.cores=100000: more than 65536 cores per chip is not supported, got 100000"},
		{"cross-field rule", kernel, "", []string{"hardware.core.psum.banks=3"}, "--set hardware.core.psum.banks=3: 3 banks do not divide 16 KiB evenly"},
		{"unknown --preset", kernel, "trn9", nil, `--preset trn9: unknown preset "trn9" (presets: inf2, trn1, trn2, trn3)`},
		{"unknown .target", badTarget, "", nil, badTarget + `:3:9: .target trn9: unknown preset "trn9" (presets: inf2, trn1, trn2, trn3)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ConfigForAssembly(tc.path, tc.preset, tc.sets)
			require.Error(t, err, "loaded %+v", cfg)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

func TestConfigForAssemblySources(t *testing.T) {
	cfg, err := ConfigForAssembly("../examples/kernel-matmul.asm", "", []string{"hardware.core.sbuf.partition_kib=256"})
	require.NoError(t, err)
	assert.Equal(t, "trn2", cfg.Hardware.Preset)
	src := cfg.Sources["hardware.preset"]
	assert.Zero(t, src.Line, "the generated config has no lines to point at")
	assert.Equal(t, "implied by running an assembly file", src.Note)
	assert.Equal(t, "--set", cfg.Sources["hardware.core.sbuf.partition_kib"].File)
}

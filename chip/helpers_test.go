package chip

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa/asm"
)

// loadPreset returns a resolved run config for a preset with optional
// --set overrides.
func loadPreset(t testing.TB, preset string, sets ...string) *configs.RunConfig {
	t.Helper()
	sets = append([]string{"hardware.preset=" + preset}, sets...)
	cfg, err := configs.LoadBytes([]byte("workload: {kind: gemm, gemm: {m: 128, k: 128, n: 128}}\n"), "test.yaml", configs.LoadOptions{Sets: sets})
	require.NoError(t, err)
	return cfg
}

// runAsm parses src and simulates it on a preset.
func runAsm(t testing.TB, preset, src string, sets ...string) (*Result, error) {
	t.Helper()
	cfg := loadPreset(t, preset, sets...)
	prog, err := asm.Parse(src, "test.asm", asm.Options{PSUMBankBytes: cfg.Hardware.Limits().PSUMBankBytes()})
	require.NoError(t, err)
	return Run(cfg, prog, Options{})
}

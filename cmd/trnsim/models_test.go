package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestModelsCommand(t *testing.T) {
	code, stdout, stderr := trnsim(t, "models")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `llama-3-8b\s+llama\s+32\s+4096\s+32/8\s+8\.03B\s+8\.03B \(\+0\.00%\)`, stdout)
	assert.Regexp(t, `mixtral-8x7b .* 46\.7B \(12\.9B active\)`, stdout)

	code, stdout, _ = trnsim(t, "models", "../../workloads/zoo/testdata/hf/gpt2.json")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "124.4M")

	bad := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(bad, []byte("{\n  \"architectures\": [\"T5Model\"]\n}\n"), 0o644))
	code, _, stderr = trnsim(t, "models", bad)
	assert.NotEqual(t, 0, code)
	assert.Contains(t, stderr, bad+":2: architectures: T5Model is not a supported architecture")
}

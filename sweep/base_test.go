package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/report"
)

// sharedBaseConfig is a run config with a cost override and a price of
// its own, so that a point layers --set values over every kind of layer.
const sharedBaseConfig = `hardware:
  preset: trn2
  core:
    sbuf: {partition_kib: 192}
  costs:
    constants:
      STRIDE_PENALTY: {value: 3}
workload:
  kind: gemm
  name: <a&b> gemm
  gemm: {m: 512, k: 512, n: 512}
cost:
  prices: {p5.48xlarge: 40}
`

// sharedBaseAxes are --set style values of every kind: numbers written
// several ways, a flow mapping, strings, another preset (another cost
// table), a cost constant, a parallel plan, and values that fail (a
// negative size, a string for a number, an unknown field, a bad preset).
const sharedBaseAxes = `axes:
  hardware.preset: [trn2, trn1, trn9]
  hardware.core.sbuf.partition_kib: [128, 0x100, -1, big]
  workload.gemm: ["{m: 1024, k: 512, n: 256}", "{m: 256, k: 256, n: 256, dtype: fp32}", "{m: 1, q: 2}"]
  hardware.costs.constants.MIN_II.value: [64, -0, 1e1]
  parallel.tp: [1, 2]
`

// writeSharedBaseSweeps writes the same sweep with its base config by
// path and inline, and returns the two sweep files.
func writeSharedBaseSweeps(t *testing.T, config, axes string) (byPath, inline string) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "base.yaml"), []byte(config), 0o644))
	byPath = filepath.Join(dir, "by-path.yaml")
	require.NoError(t, os.WriteFile(byPath, []byte("base: base.yaml\n"+axes), 0o644))
	indented := ""
	for _, l := range strings.Split(strings.TrimSuffix(config, "\n"), "\n") {
		indented += "  " + l + "\n"
	}
	inline = filepath.Join(dir, "inline.yaml")
	require.NoError(t, os.WriteFile(inline, []byte("# The base given inline.\nbase:\n"+indented+axes), 0o644))
	return byPath, inline
}

// loadFresh loads point p on its own, the base's text read and parsed
// afresh for it (configs.Load and LoadBytes): what a point derived from
// the sweep's shared Base must equal. (Both now parse through a Base; the
// figures of configs' own tests, written before it, hold the loader to
// what it gave before.)
func loadFresh(s *Spec, p Point) (*configs.RunConfig, error) {
	opts := configs.LoadOptions{Sets: s.Sets(p)}
	if s.BaseInline != nil {
		return configs.LoadBytes(s.BaseInline, s.File, opts)
	}
	return configs.Load(s.Base, opts)
}

func TestPointsFromASharedBaseAreFreshLoads(t *testing.T) {
	byPath, inline := writeSharedBaseSweeps(t, sharedBaseConfig, sharedBaseAxes)
	// Bases whose own text fails: every point fails at the base's line.
	badPath, badInline := writeSharedBaseSweeps(t, "hardware: {preset: trn2}\nworkload:\n  kind: gemm\n  gemm: {m: 64, k: -2, n: 64}\n", sharedBaseAxes)
	brokenPath, _ := writeSharedBaseSweeps(t, "hardware: {preset: trn2}\nworkload:\n  kind: [gemm\n", sharedBaseAxes)
	listPath, listInline := writeSharedBaseSweeps(t, "hardware: [trn2]\nworkload: {kind: gemm}\n", sharedBaseAxes)
	for _, tc := range []struct {
		name, file string
		loads      bool // some points load
	}{
		{"base by path", byPath, true},
		{"inline base", inline, true},
		{"bad value in the base by path", badPath, false},
		{"bad value in the inline base", badInline, false},
		{"base by path not YAML", brokenPath, false},
		{"base by path not a config", listPath, false},
		{"inline base not a config", listInline, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Load(tc.file)
			require.NoError(t, err)
			base := s.parseBase()
			var hasher report.ConfigHasher
			loaded, failed := 0, 0
			for _, p := range s.Points() {
				want, wantErr := loadFresh(s, p)
				got, gotErr := s.loadPoint(base, p)
				if wantErr != nil {
					failed++
					require.Error(t, gotErr, s.Label(p))
					assert.Equal(t, wantErr.Error(), gotErr.Error(), s.Label(p))
					continue
				}
				loaded++
				require.NoError(t, gotErr, s.Label(p))
				assert.Equal(t, report.ConfigHash(want), report.ConfigHash(got), s.Label(p))
				assert.Equal(t, want.Sources, got.Sources, s.Label(p))
				assert.Equal(t, configs.Fields(want), configs.Fields(got), s.Label(p))
				assert.Equal(t, want.Costs, got.Costs, s.Label(p))
				// The point's id as it was computed before (ConfigHash of
				// the fresh load) and as it is now.
				c := *want
				h, err := pointHash(got, &hasher)
				require.NoError(t, err)
				assert.Equal(t, report.ConfigHash(&c), h, s.Label(p))
			}
			assert.Equal(t, tc.loads, loaded > 0)
			assert.Positive(t, failed)
		})
	}
}

func TestResolveKeepsThePointIDs(t *testing.T) {
	byPath, inline := writeSharedBaseSweeps(t, sharedBaseConfig, `axes:
  hardware.preset: [trn2, trn1]
  hardware.core.sbuf.partition_kib: [128, 0x100]
  workload.gemm: ["{m: 1024, k: 512, n: 256}", "{m: 256, k: 256, n: 256, dtype: fp32}"]
  hardware.costs.constants.MIN_II.value: [64, -0]
`)
	for _, tc := range []struct {
		name, file string
	}{
		{"base by path", byPath},
		{"inline base", inline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Load(tc.file)
			require.NoError(t, err)
			got, err := s.Resolve("rev", 4)
			require.NoError(t, err)
			require.Len(t, got, 16)
			for i, p := range s.Points() {
				cfg, err := loadFresh(s, p)
				require.NoError(t, err)
				sum := sha256.Sum256([]byte(report.ConfigHash(cfg) + "\x00rev"))
				assert.Equal(t, hex.EncodeToString(sum[:8]), got[i].ID, s.Label(p))
			}
		})
	}
}

func TestSharedBaseKeepsReadErrors(t *testing.T) {
	s, err := Parse([]byte("base: missing.yaml\naxes:\n  workload.gemm.m: [1, 2]\n"), filepath.Join(t.TempDir(), "s.yaml"))
	require.NoError(t, err)
	p := s.Points()[0]
	_, want := loadFresh(s, p)
	require.Error(t, want)
	_, got := s.loadPoint(s.parseBase(), p)
	require.Error(t, got)
	assert.Equal(t, want.Error(), got.Error())
	_, err = s.Resolve("rev", 2)
	require.Error(t, err)
	assert.Contains(t, err.Error(), want.Error())
}

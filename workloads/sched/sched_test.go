package sched_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa/asm"
	"github.com/trnsim/trnsim/memory"
	"github.com/trnsim/trnsim/workloads"
	"github.com/trnsim/trnsim/workloads/sched"
	"github.com/trnsim/trnsim/workloads/tile"
)

func preset(t testing.TB, name string, sets ...string) *configs.RunConfig {
	t.Helper()
	sets = append([]string{"hardware.preset=" + name}, sets...)
	cfg, err := configs.LoadBytes([]byte("workload: {kind: gemm, gemm: {m: 128, k: 128, n: 128}}\n"), "test.yaml", configs.LoadOptions{Sets: sets})
	require.NoError(t, err)
	return cfg
}

func compileFile(t testing.TB, cfg *configs.RunConfig, path string, opts sched.Options) *sched.Program {
	t.Helper()
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	k, err := tile.Parse(string(src), path)
	require.NoError(t, err)
	if opts == (sched.Options{}) {
		opts.DGEAuto = true
	}
	p, err := sched.Compile(k, workloads.Target(cfg), opts)
	require.NoError(t, err)
	return p
}

func TestSmallMatmulRunsRaceFree(t *testing.T) {
	for _, name := range []string{"trn1", "inf2", "trn2", "trn3"} {
		t.Run(name, func(t *testing.T) {
			cfg := preset(t, name)
			p := compileFile(t, cfg, "testdata/matmul.tile", sched.Options{})
			res, err := chip.Run(cfg, p.Program, chip.Options{})
			if err != nil {
				text, _ := asm.String(p.Program)
				t.Log(text)
			}
			require.NoError(t, err)
			assert.Greater(t, res.SimTime, int64(0))
		})
	}
}

func TestDumpSmallMatmul(t *testing.T) {
	if os.Getenv("TRNSIM_DUMP") == "" {
		t.Skip("set TRNSIM_DUMP=1 to print the program")
	}
	cfg := preset(t, "trn2")
	p := compileFile(t, cfg, "testdata/matmul.tile", sched.Options{})
	text, err := asm.String(p.Program)
	require.NoError(t, err)
	t.Log("\n" + text)
	res, err := chip.Run(cfg, p.Program, chip.Options{})
	require.NoError(t, err)
	t.Logf("sim time %v, instructions %d", res.SimTime, res.Instructions)
}

// Every wait the scheduler inserts is needed: removing any one of them
// (from the program printed as assembly) makes the race check fire.
func TestEveryInsertedWaitIsNeeded(t *testing.T) {
	for _, name := range []string{"trn1", "trn2"} {
		t.Run(name, func(t *testing.T) {
			cfg := preset(t, name)
			p := compileFile(t, cfg, "testdata/matmul.tile", sched.Options{})
			text, err := asm.String(p.Program)
			require.NoError(t, err)
			run := func(src string) error {
				prog, err := asm.Parse(src, "variant.asm", asm.Options{PSUMBankBytes: cfg.Hardware.Limits().PSUMBankBytes()})
				require.NoError(t, err)
				_, err = chip.Run(cfg, prog, chip.Options{})
				return err
			}
			require.NoError(t, run(text), "the program as scheduled")
			lines := strings.Split(text, "\n")
			waits := 0
			for i, line := range lines {
				fields := strings.Fields(line)
				for j, f := range fields {
					if !strings.HasPrefix(f, "wait=") {
						continue
					}
					waits++
					variant := append(append([]string{}, fields[:j]...), fields[j+1:]...)
					mod := append(append([]string{}, lines[:i]...), strings.Join(variant, " "))
					mod = append(mod, lines[i+1:]...)
					err := run(strings.Join(mod, "\n"))
					var re *memory.RaceError
					assert.ErrorAs(t, err, &re, "removing %s from line %d (%s) leaves no race", f, i+1, line)
				}
			}
			assert.GreaterOrEqual(t, waits, 10)
		})
	}
}

// BenchmarkSchedule measures the scheduler alone: it lowers a GEMM and
// drains every stream of the program without simulating, in one walk.
func BenchmarkSchedule(b *testing.B) {
	k1 := []string{"hardware.preset=trn1", "workload.gemm.m=4096", "workload.gemm.k=8192", "workload.gemm.n=8192",
		"workload.lowering.block_m=2048", "workload.lowering.block_n=1024", "workload.lowering.block_k=1024",
		"workload.lowering.loop_order=nkm", "workload.lowering.accumulate_dtype=bf16"}
	g16 := []string{"workload.gemm.m=16384", "workload.gemm.k=16384", "workload.gemm.n=16384"}
	// 32768^3's automatic blocks (K blocks of one tile) on an 8192^3 GEMM.
	kt1 := []string{"workload.gemm.m=8192", "workload.gemm.k=8192", "workload.gemm.n=8192", "workload.lowering.block_m=3200",
		"workload.lowering.block_n=2048", "workload.lowering.block_k=128", "workload.lowering.loop_order=nmk"}
	for _, tc := range []struct {
		name string
		sets []string
	}{{"K1", k1}, {"16384", g16}, {"kt1", kt1}} {
		b.Run(tc.name, func(b *testing.B) {
			cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: tc.sets})
			require.NoError(b, err)
			var n int64
			for i := 0; i < b.N; i++ {
				prog, _, err := workloads.Lower(cfg)
				require.NoError(b, err)
				n = sched.Drain(prog)
			}
			b.ReportMetric(float64(n), "instructions")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n)/float64(b.N), "ns/instr")
		})
	}
}

// Two cores: a GEMM split on N, then core 1 reads core 0's half of C from
// HBM. The scheduler orders that read after core 0's store with a wait on
// core 0's semaphore; removing the wait makes the (HBM, cross-core) race
// check fire.
func TestCrossCoreReadWaitsForTheOtherCore(t *testing.T) {
	cfg := preset(t, "trn2")
	p := compileFile(t, cfg, "testdata/split2.tile", sched.Options{})
	assert.Equal(t, []int{0, 1}, p.Cores)
	res, err := chip.Run(cfg, p.Program, chip.Options{})
	require.NoError(t, err)
	require.Len(t, res.Chips[0].Cores, 2)
	text, err := asm.String(p.Program)
	require.NoError(t, err)
	// The transfer on core 1 that reads C waits for core 0 (s..@0).
	lines := strings.Split(text, "\n")
	core, found := "", -1
	for i, line := range lines {
		if strings.HasPrefix(line, ".core ") {
			core = line
		}
		if core == ".core 0 1" && strings.Contains(line, "dma_copy t_c1") && strings.Contains(line, "@0>=") {
			found = i
		}
	}
	require.GreaterOrEqual(t, found, 0, "a wait on core 0 in:\n%s", text)
	run := func(src string) error {
		prog, err := asm.Parse(src, "variant.asm", asm.Options{PSUMBankBytes: cfg.Hardware.Limits().PSUMBankBytes()})
		require.NoError(t, err)
		_, err = chip.Run(cfg, prog, chip.Options{})
		return err
	}
	require.NoError(t, run(text))
	var kept []string
	for _, f := range strings.Fields(lines[found]) {
		if !(strings.HasPrefix(f, "wait=") && strings.Contains(f, "@0>=")) {
			kept = append(kept, f)
		}
	}
	mod := append(append([]string{}, lines[:found]...), strings.Join(kept, " "))
	mod = append(mod, lines[found+1:]...)
	err = run(strings.Join(mod, "\n"))
	var re *memory.RaceError
	require.ErrorAs(t, err, &re)
	assert.Contains(t, err.Error(), "data race on hbm (chip 0) C[0:128, 0:512]")
}

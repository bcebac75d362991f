package chip

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/isa/asm"
)

// launchSrc loads a tile, works on it on two engines and stores it: DMA,
// compute, semaphores and an op id.
const launchSrc = `.version 1
.buffer H hbm bf16 [128, 2048]
.buffer s sbuf bf16 [128, 2048]
.buffer t sbuf bf16 [128, 2048]
sync dma_copy s, H queue=0 dge=hw signal=s1 op=1
vector tensor_copy t, s wait=s1>=16 signal=s2 op=2
scalar activation s, t func=exp wait=s2>=1 signal=s3 op=2
sync dma_copy H, s queue=1 dge=hw wait=s3>=1 op=3
`

func TestLaunchesRunBackToBackAndAddUp(t *testing.T) {
	cfg := loadPreset(t, "trn2")
	prog, err := asm.Parse(launchSrc, "test.asm", asm.Options{PSUMBankBytes: cfg.Hardware.Limits().PSUMBankBytes()})
	require.NoError(t, err)
	oneTr := &recTracer{}
	one, err := Run(cfg, prog, Options{Tracer: oneTr})
	require.NoError(t, err)
	require.Greater(t, one.SimTime, clock.Time(0))

	const n = 3
	tr := &recTracer{}
	var seen []int
	l := Launches{N: n, First: prog, Next: func(i int) (*isa.Program, error) { return prog, nil },
		OnLaunch: func(i int, _ *isa.Program) { seen = append(seen, i) }}
	all, err := RunLaunches(cfg, l, Options{Tracer: tr})
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1, 2}, seen)
	assert.Equal(t, n*one.SimTime, all.SimTime, "identical launches back to back")
	assert.Equal(t, []clock.Time{one.SimTime, one.SimTime, one.SimTime}, all.LaunchTimes)
	assert.Equal(t, n*one.Instructions, all.Instructions)
	assert.InDelta(t, one.DMAComputeOverlapPct, all.DMAComputeOverlapPct, 1e-9)

	c1, cn := one.Chips[0].Cores[0], all.Chips[0].Cores[0]
	assert.Equal(t, n*c1.DMA.Bytes, cn.DMA.Bytes)
	assert.Equal(t, n*c1.DMA.Transfers, cn.DMA.Transfers)
	assert.Equal(t, (n-1)*one.SimTime+c1.DMA.LastCompletion, cn.DMA.LastCompletion)
	for e := range c1.Engines {
		e1, en := c1.Engines[e], cn.Engines[e]
		assert.Equal(t, n*e1.Instructions, en.Instructions, isa.Engine(e).String())
		assert.Equal(t, n*e1.Busy, en.Busy, isa.Engine(e).String())
		assert.Equal(t, n*e1.Idle, en.Idle, "%s: idle after each launch's last instruction", isa.Engine(e))
		if e1.Instructions > 0 {
			assert.Equal(t, e1.FirstStart, en.FirstStart)
			assert.Equal(t, (n-1)*one.SimTime+e1.LastEnd, en.LastEnd)
		}
	}
	assert.Equal(t, n*one.Chips[0].HBMReadBytes, all.Chips[0].HBMReadBytes)

	require.Len(t, one.Ops, 3)
	require.Equal(t, len(one.Ops), len(all.Ops))
	for i, o := range one.Ops {
		a := all.Ops[i]
		assert.Equal(t, o.ID, a.ID)
		assert.Equal(t, n*o.Time, a.Time, "op %d", o.ID)
		assert.Equal(t, n*o.Span, a.Span, "op %d", o.ID)
		assert.Equal(t, n*o.Instructions, a.Instructions, "op %d", o.ID)
		assert.Equal(t, o.Start, a.Start, "op %d", o.ID)
		assert.Equal(t, (n-1)*one.SimTime+o.End, a.End, "op %d", o.ID)
	}

	// The tracer sees each launch after the one before.
	require.Len(t, tr.insts, n*len(oneTr.insts))
	for k := 0; k < n; k++ {
		for i, in := range oneTr.insts {
			got := tr.insts[k*len(oneTr.insts)+i]
			assert.Equal(t, in.start+clock.Time(k)*one.SimTime, got.start)
		}
	}
	require.Len(t, tr.dmas, n*len(oneTr.dmas))
	last := tr.dmas[len(tr.dmas)-1]
	assert.Equal(t, oneTr.dmas[len(oneTr.dmas)-1].end+(n-1)*one.SimTime, last.end)
}

func TestLaunchErrorNamesTheLaunch(t *testing.T) {
	cfg := loadPreset(t, "trn2")
	opts := asm.Options{PSUMBankBytes: cfg.Hardware.Limits().PSUMBankBytes()}
	good, err := asm.Parse(launchSrc, "test.asm", opts)
	require.NoError(t, err)
	stuck, err := asm.Parse(".version 1\n.buffer a sbuf fp32 [128, 64]\nvector memset a wait=s1>=1\n", "stuck.asm", opts)
	require.NoError(t, err)
	_, err = RunLaunches(cfg, Launches{N: 3, First: good, Next: func(i int) (*isa.Program, error) {
		if i == 2 {
			return stuck, nil
		}
		return good, nil
	}}, Options{})
	var de *DeadlockError
	require.ErrorAs(t, err, &de)
	assert.Contains(t, err.Error(), "launch 3 of 3: deadlock")
}

// Progress counts over all the launches, each shorter than its interval,
// with the simulated time running on.
func TestLaunchProgressCountsAcrossLaunches(t *testing.T) {
	cfg := loadPreset(t, "trn2")
	prog, err := asm.Parse(launchSrc, "test.asm", asm.Options{PSUMBankBytes: cfg.Hardware.Limits().PSUMBankBytes()})
	require.NoError(t, err)
	var counts []int64
	var times []clock.Time
	opts := Options{ProgressEvery: 5, Progress: func(n int64, now clock.Time) { counts = append(counts, n); times = append(times, now) }}
	res, err := RunLaunches(cfg, Launches{N: 3, First: prog, Next: func(int) (*isa.Program, error) { return prog, nil }}, opts)
	require.NoError(t, err)
	require.EqualValues(t, 12, res.Instructions)
	assert.Equal(t, []int64{5, 10}, counts)
	require.Len(t, times, 2)
	assert.GreaterOrEqual(t, times[0], res.LaunchTimes[0], "the fifth instruction is the second launch's")
	assert.Greater(t, times[1], res.LaunchTimes[0]+res.LaunchTimes[1], "the tenth the third's")
}

// A core that a later launch does not run is idle all of it; one that
// only a later launch runs was idle all of the launches before.
func TestLaunchIdleOfCoresALaunchDoesNotRun(t *testing.T) {
	cfg := loadPreset(t, "trn2")
	opts := asm.Options{PSUMBankBytes: cfg.Hardware.Limits().PSUMBankBytes()}
	two, err := asm.Parse(".version 1\n.buffer a sbuf fp32 [128, 512]\nvector memset a\n.core 0 1\n.buffer b sbuf fp32 [128, 64]\nvector memset b\n", "two.asm", opts)
	require.NoError(t, err)
	one, err := asm.Parse(".version 1\n.buffer a sbuf fp32 [128, 512]\nvector memset a\nvector memset a\n", "one.asm", opts)
	require.NoError(t, err)
	rTwo, err := Run(cfg, two, Options{})
	require.NoError(t, err)
	rOne, err := Run(cfg, one, Options{})
	require.NoError(t, err)
	idleOf := func(r *Result, core int32) clock.Time {
		for _, c := range r.Chips[0].Cores {
			if c.Core == core {
				return c.Engines[isa.EngineVector].Idle
			}
		}
		t.Fatalf("no core %d", core)
		return 0
	}
	for _, tc := range []struct {
		name        string
		first, then *isa.Program
		want1       clock.Time
	}{
		{"core 1 only first", two, one, idleOf(rTwo, 1) + rOne.SimTime},
		{"core 1 only then", one, two, rOne.SimTime + idleOf(rTwo, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := RunLaunches(cfg, Launches{N: 2, First: tc.first, Next: func(int) (*isa.Program, error) { return tc.then, nil }}, Options{})
			require.NoError(t, err)
			assert.Equal(t, tc.want1, idleOf(res, 1))
			assert.Equal(t, idleOf(rTwo, 0)+idleOf(rOne, 0), idleOf(res, 0))
			for _, c := range res.Chips[0].Cores {
				for _, e := range c.Engines {
					assert.LessOrEqual(t, e.Idle, res.SimTime, "core %d %s", c.Core, e.Engine)
				}
			}
		})
	}
}

package chip

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa/asm"
)

// A barrier between cores of two chips costs the link's latency: the
// updates travel the same path as data would.
func TestBarrierAcrossChipsCostsTime(t *testing.T) {
	const src = `.version 1
.core 0 0
sync barrier sem=s4 cores=[0.0, 1.0] target=2
.core 1 0
sync barrier sem=s4 cores=[0.0, 1.0] target=2
`
	times := map[float64]clock.Time{}
	for _, hopNs := range []float64{300, 3000} {
		res, err := runAsm(t, "trn2", src, "hardware.chips=2", fmt.Sprintf("hardware.chip.links.latency_ns=%g", hopNs))
		require.NoError(t, err)
		times[hopNs] = res.SimTime
		// One hop, then the far chip's fabric to its core.
		assert.GreaterOrEqual(t, res.SimTime, clock.FromNanoseconds(hopNs+200), "hop %g ns", hopNs)
	}
	assert.Equal(t, clock.FromNanoseconds(2700), times[3000]-times[300], "the barrier moves with the hop latency, one for one")

	// Between two cores of one chip it costs the on-chip fabric's latency.
	one := `.version 1
.core 0 0
sync barrier sem=s4 cores=[0.0, 0.1] target=2
.core 0 1
sync barrier sem=s4 cores=[0.0, 0.1] target=2
`
	res, err := runAsm(t, "trn2", one)
	require.NoError(t, err)
	slow, err := runAsm(t, "trn2", one, "hardware.chip.noc.latency_ns=1200")
	require.NoError(t, err)
	assert.Equal(t, clock.FromNanoseconds(1000), slow.SimTime-res.SimTime)
}

// A transfer to another chip's HBM runs at the slowest link on its route
// and adds each hop's latency; two engines' worth of traffic on one link
// share it.
func TestRemoteTransferUsesTheLinks(t *testing.T) {
	const bytes = 128 * 32768 * 2 // 8 MiB
	xfer := func(dstChip int) string {
		return fmt.Sprintf(`.version 1
.buffer X hbm bf16 [128, 32768] chip=0
.buffer Y hbm bf16 [128, 32768] chip=%d
.core 0 0
sync dma_copy Y, X queue=0
`, dstChip)
	}
	run := func(src string, sets ...string) *Result {
		res, err := runAsm(t, "trn2", src, append([]string{"hardware.chips=4", "hardware.topology.kind=ring"}, sets...)...)
		require.NoError(t, err)
		return res
	}
	local := run(xfer(0))
	oneHop := run(xfer(1), "hardware.chip.links.link_bandwidth_gbps=50")
	twoHops := run(xfer(2), "hardware.chip.links.link_bandwidth_gbps=50")
	wide := run(xfer(1), "hardware.chip.links.link_bandwidth_gbps=5000")

	// Locally the 16 engines (368 GB/s) bind; over a 50 GB/s link the link does.
	linkTime := clock.FromNanoseconds(bytes / 50.0)
	assert.InEpsilon(t, float64(linkTime), float64(oneHop.SimTime), 0.05, "one hop at the link's rate: %v", oneHop.SimTime)
	assert.Less(t, local.SimTime, oneHop.SimTime/5)
	// A second hop adds its latency, not its bandwidth.
	assert.InDelta(t, float64(clock.FromNanoseconds(300)), float64(twoHops.SimTime-oneHop.SimTime), float64(clock.FromNanoseconds(20)))
	// A link wider than the engines leaves the engines' rate and the hop
	// (the local copy reads and writes one stack, 2% over its rate).
	assert.InEpsilon(t, float64(local.SimTime+clock.FromNanoseconds(300)), float64(wide.SimTime), 0.03)
	// The bytes land on the far chip's HBM, which has no core running;
	// the near one only reads.
	assert.Equal(t, int64(bytes), oneHop.Chips[0].HBMReadBytes)
	assert.Equal(t, int64(0), oneHop.Chips[0].HBMWriteBytes)
	require.Len(t, oneHop.Chips, 2)
	assert.Equal(t, int32(1), oneHop.Chips[1].Chip)
	assert.Equal(t, int64(bytes), oneHop.Chips[1].HBMWriteBytes)
	assert.Empty(t, oneHop.Chips[1].Cores)

	// Two cores sending over the same link share it.
	both := `.version 1
.buffer X hbm bf16 [128, 32768] chip=0
.buffer Y hbm bf16 [128, 32768] chip=1
.buffer Z hbm bf16 [128, 32768] chip=1
.core 0 0
sync dma_copy Y, X queue=0
.core 0 1
sync dma_copy Z, X queue=0
`
	shared := run(both, "hardware.chip.links.link_bandwidth_gbps=50")
	assert.InEpsilon(t, float64(2*linkTime), float64(shared.SimTime), 0.05, "two transfers over one link: %v", shared.SimTime)
}

func TestTransferBetweenUnlinkedChipsFails(t *testing.T) {
	_, err := runAsm(t, "trn2", `.version 1
.buffer X hbm bf16 [128, 512] chip=0
.buffer Y hbm bf16 [128, 512] chip=1
.core 0 0
sync dma_copy Y, X queue=0
`, "hardware.chips=2", "hardware.topology.kind=none")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "chips 0 and 1 are not linked (hardware.topology.kind is none)")
}

// A DMA read-modify-write (acc=add) reads its HBM destination too.
func TestAccumulatingTransferReadsItsDestination(t *testing.T) {
	res, err := runAsm(t, "trn2", `.version 1
.buffer X hbm fp32 [128, 512]
.buffer Y hbm fp32 [128, 512]
.core 0 0
sync dma_copy Y, X queue=0 acc=add
`)
	require.NoError(t, err)
	const b = 128 * 512 * 4
	assert.Equal(t, int64(2*b), res.Chips[0].HBMReadBytes)
	assert.Equal(t, int64(b), res.Chips[0].HBMWriteBytes)
}

// Between nodes a transfer runs at the chips' EFA bandwidth and pays its
// latency; a custom topology routes over its own links.
func TestEFAAndCustomTopologies(t *testing.T) {
	const bytes = 128 * 32768 * 2 // 8 MiB
	xfer := func(dstChip int) string {
		return fmt.Sprintf(`.version 1
.buffer X hbm bf16 [128, 32768] chip=0
.buffer Y hbm bf16 [128, 32768] chip=%d
.core 0 0
sync dma_copy Y, X queue=0
`, dstChip)
	}
	run := func(src string, sets ...string) *Result {
		cfg, err := configs.LoadBytes([]byte("hardware: {instance: trn2.48xlarge, nodes: 2}\nworkload: {kind: gemm, gemm: {m: 128, k: 128, n: 128}}\n"), "test.yaml", configs.LoadOptions{Sets: sets})
		require.NoError(t, err)
		require.Equal(t, 32, cfg.Hardware.Chips)
		prog, err := asm.Parse(src, "test.asm", asm.Options{PSUMBankBytes: cfg.Hardware.Limits().PSUMBankBytes()})
		require.NoError(t, err)
		res, err := Run(cfg, prog, Options{})
		require.NoError(t, err)
		return res
	}
	inNode := run(xfer(1))
	across := run(xfer(16))
	efa := clock.FromNanoseconds(bytes / 25.0)
	assert.InEpsilon(t, float64(efa), float64(across.SimTime), 0.05, "one chip's EFA at 25 GB/s: %v", across.SimTime)
	assert.Less(t, inNode.SimTime, across.SimTime/5)
	slowNet := run(xfer(16), "hardware.efa.latency_ns=50000")
	assert.InDelta(t, float64(clock.FromNanoseconds(40000)), float64(slowNet.SimTime-across.SimTime), float64(clock.FromNanoseconds(50)))

	// A line of three chips: 0 to 2 takes both links.
	line, err := runAsm(t, "trn2", xfer(2), "hardware.chips=3", "hardware.topology.kind=custom",
		"hardware.topology.links=[{a: 0, b: 1}, {a: 1, b: 2, bandwidth_gbps: 40}]", "hardware.chip.links.link_bandwidth_gbps=80")
	require.NoError(t, err)
	require.Len(t, line.Links, 2)
	assert.InEpsilon(t, float64(clock.FromNanoseconds(bytes/40.0)), float64(line.SimTime), 0.05, "the slower link binds")
}

// A copy from HBM to HBM on one stack passes every byte through it twice:
// two cores copying within stack 0 take at least twice their bytes at the
// stack's rate.
func TestHBMToHBMOnOneStackCountsBothSides(t *testing.T) {
	const bytes = 128 * 65536 * 2 // 16 MiB per core
	res, err := runAsm(t, "trn2", `.version 1
.buffer X0 hbm bf16 [128, 65536]
.buffer Y0 hbm bf16 [128, 65536]
.buffer X1 hbm bf16 [128, 65536]
.buffer Y1 hbm bf16 [128, 65536]
.core 0 0
sync dma_copy Y0, X0 queue=0
.core 0 1
sync dma_copy Y1, X1 queue=0
`)
	require.NoError(t, err)
	stackGBps := 2900.0 / 4
	bound := clock.FromNanoseconds(2 * 2 * bytes / stackGBps)
	assert.GreaterOrEqual(t, res.SimTime, bound, "read and write of both cores through one stack")
	assert.Less(t, float64(res.SimTime), 1.1*float64(bound))
}

// A link never carries more than its bandwidth, however its transfers
// start and overlap: a long transfer and a stream of short ones from
// another core over the same link.
func TestLinkNeverExceedsItsRate(t *testing.T) {
	src := `.version 1
.buffer X hbm bf16 [128, 81920] chip=0
.buffer Y hbm bf16 [128, 81920] chip=1
.buffer A hbm bf16 [128, 8192] chip=0
.buffer B hbm bf16 [128, 8192] chip=1
.core 0 0
sync dma_copy Y, X queue=0
.core 0 1
`
	for i := 0; i < 8; i++ {
		src += fmt.Sprintf("sync dma_copy B[0:128, %d:%d], A[0:128, %d:%d] queue=%d\n", i*1024, i*1024+1024, i*1024, i*1024+1024, i%4)
	}
	res, err := runAsm(t, "trn1", src, "hardware.chips=2", "hardware.topology.kind=ring")
	require.NoError(t, err)
	require.NotEmpty(t, res.Links)
	for _, l := range res.Links {
		util := float64(l.Bytes) / (l.GBps * 1e9 * res.SimTime.Seconds())
		assert.LessOrEqual(t, util, 1.0, "%s: %.1f%%", l.Name, 100*util)
		assert.LessOrEqual(t, l.Busy, res.SimTime)
	}
	total := int64(128*81920*2 + 128*8192*2)
	assert.GreaterOrEqual(t, res.SimTime, clock.FromNanoseconds(float64(total)/96))
}

package workloads

import (
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/sched"
)

// Target returns the scheduler's typed view of a resolved hardware config.
func Target(cfg *configs.RunConfig) *sched.Target {
	h := &cfg.Hardware
	co := &h.Core
	t := &sched.Target{
		Name:            h.Name,
		Limits:          h.Limits(),
		Cost:            cfg.Cost,
		DMAEngineGBps:   co.DMA.EngineBandwidthGBps,
		DMAStartNs:      co.DMA.StartLatencyNs,
		DMACompletionNs: co.DMA.CompletionLatencyNs,
		HBMBytes:        h.HBMBytesPerChip(),
		DMAQoSClasses:   qosClasses(co),
		HBMGBps:         h.Chip.HBM.BandwidthGBps,

		DMATransposeEfficiency:   co.DMA.TransposeEfficiencyHBM,
		BackgroundLoadStationary: co.Tensor.BackgroundLoadStationary,
		DMADescriptorNs:          co.DMA.DescriptorOverheadNs,
		DMADescriptorMaxBytes:    int64(co.DMA.DescriptorMaxKiB) * 1024,
	}
	t.ClockGHz[isa.EngineTensor] = co.Tensor.ClockGHz
	t.ClockGHz[isa.EngineVector] = co.Vector.ClockGHz
	t.ClockGHz[isa.EngineScalar] = co.Scalar.ClockGHz
	t.ClockGHz[isa.EngineGpSimd] = co.GpSimd.ClockGHz
	t.ClockGHz[isa.EngineSync] = co.Sync.ClockGHz
	return t
}

// qosClasses returns the DMA QoS classes of a core (0: round robin).
func qosClasses(co *configs.CoreConfig) int {
	if co.DMA.Arbitration == "qos" {
		return co.DMA.QoSClasses
	}
	return 0
}

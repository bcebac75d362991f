package configs

import (
	"github.com/trnsim/trnsim/isa"
)

// Hardware describes the simulated system: one or more chips of identical
// NeuronCores. Every field has a stable dotted path (hardware.core.sbuf.
// partition_kib) that overrides and sweeps address; units are in the names
// (_ghz, _gbps = 1e9 bytes/s, _kib, _ns, _us).
//
// Field tags: `check` names a validation rule applied to the value (pos: > 0,
// nonneg: >= 0, frac: in (0, 1]).
type Hardware struct {
	// Preset names the preset the config starts from (trn1, inf2, trn2,
	// trn3). Only meaningful in a run config.
	Preset string `yaml:"preset"`
	// Name is the resolved hardware's name.
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Generation is the NeuronCore version: 2 (trn1, inf2), 3 (trn2), 4 (trn3).
	Generation int `yaml:"generation" check:"pos"`
	// Chips is how many chips the simulated system has. With an instance
	// it is derived (nodes x the instance's chips) and need not be set.
	Chips int `yaml:"chips" check:"pos"`
	// Instance names an instance preset (trn1.32xlarge, trn2.48xlarge,
	// ...; `trnsim presets` lists them). It implies the chip preset, the
	// chips of one node, the topology and the EFA network, so
	// hardware.preset may be left out.
	Instance string `yaml:"instance"`
	// Nodes is how many instances the system has, joined by EFA.
	Nodes int `yaml:"nodes" check:"pos"`
	// Topology is how the chips of one node are linked.
	Topology TopologyConfig `yaml:"topology"`
	// EFA joins the nodes.
	EFA EFAConfig `yaml:"efa"`
	// CostTable names the embedded per-instruction cost table (nc-v2, nc-v3,
	// nc-v4) the costs start from.
	CostTable string     `yaml:"cost_table"`
	Chip      ChipConfig `yaml:"chip"`
	Core      CoreConfig `yaml:"core"`
	// Runtime is what the Neuron runtime adds around the hardware.
	Runtime RuntimeConfig `yaml:"runtime"`
	// Costs overrides entries of the cost table by dotted path, for example
	// hardware.costs.constants.MIN_II.value or
	// hardware.costs.vector.tensor_tensor.fast.interval.
	Costs CostOverrides `yaml:"costs"`
}

// ChipConfig holds what is shared by the cores of one chip.
type ChipConfig struct {
	// Cores is the number of physical NeuronCores per chip.
	Cores int `yaml:"cores" check:"pos"`
	// LNC is the logical NeuronCore size: how many physical cores act as
	// one logical core (1 or 2; the Neuron runtime's default is 2 on trn2
	// and trn3). Kernels address physical cores; parallel plans count
	// ranks in logical cores.
	LNC   int        `yaml:"lnc" check:"pos"`
	HBM   HBMConfig  `yaml:"hbm"`
	NoC   NoCConfig  `yaml:"noc"`
	Links LinkConfig `yaml:"links"`
}

// RuntimeConfig holds the Neuron runtime's overheads, which nobody
// publishes: they are named so that validate shows them beside the rows
// they move.
type RuntimeConfig struct {
	// ExecutionOverheadUs is added to every model execution (a prefill,
	// or one decode step): the runtime's launch and completion of the
	// compiled program.
	ExecutionOverheadUs float64 `yaml:"execution_overhead_us" check:"nonneg"`
	// CollectiveOverheadUs delays each collective's first transfer on
	// every rank: the collective-communication cores' and the runtime's
	// orchestration of one collective.
	CollectiveOverheadUs float64 `yaml:"collective_overhead_us" check:"nonneg"`
}

// NoCConfig describes the on-chip fabric between a chip's cores, DMA
// engines and HBM stacks.
type NoCConfig struct {
	// LatencyNs is what a semaphore update or a DMA's data takes to reach
	// another core of the chip, or an HBM stack that is not the core's own.
	LatencyNs float64 `yaml:"latency_ns" check:"nonneg"`
}

// TopologyConfig is how the chips of one node are linked.
type TopologyConfig struct {
	// Kind is none (chips without links: only one chip may be used at a
	// time), ring, 2d_torus, 3d_torus, switched (every chip one hop from
	// every other through a switch) or custom (Links).
	Kind string `yaml:"kind"`
	// Dims are a torus's (or ring's) sizes per axis; their product is the
	// chips of one node. Empty: derived from the chips, as square as
	// possible.
	Dims []int `yaml:"dims"`
	// AxisBandwidthGBps, if set, is a link's bandwidth per direction along
	// each axis (a Trn2 UltraServer's Z links are slower); else every
	// link has hardware.chip.links.link_bandwidth_gbps.
	AxisBandwidthGBps []float64 `yaml:"axis_bandwidth_gbps"`
	// Links are a custom topology's links.
	Links []CustomLink `yaml:"links"`
}

// CustomLink is one bidirectional link of a custom topology.
type CustomLink struct {
	A int `yaml:"a" check:"nonneg"`
	B int `yaml:"b" check:"nonneg"`
	// BandwidthGBps per direction; 0: hardware.chip.links.link_bandwidth_gbps.
	BandwidthGBps float64 `yaml:"bandwidth_gbps" check:"nonneg"`
}

// EFAConfig describes the network between nodes: one EFA interface per
// chip.
type EFAConfig struct {
	// ChipBandwidthGBps is one chip's EFA bandwidth per direction (bytes,
	// not bits).
	ChipBandwidthGBps float64 `yaml:"chip_bandwidth_gbps" check:"nonneg"`
	// LatencyNs is what a transfer or a semaphore update takes from one
	// node to another.
	LatencyNs float64 `yaml:"latency_ns" check:"nonneg"`
}

// removedFields are fields that earlier versions had and nothing read:
// setting one is an unknown-field error that says why it went.
var removedFields = map[string]string{
	"hardware.chip.dma_bandwidth_gbps": "removed: nothing read it; the simulated DMA bandwidth is hardware.core.dma.engines x engine_bandwidth_gbps per core, bounded by hardware.chip.hbm.bandwidth_gbps",
	"hardware.chip.peak_bf16_tflops":   "removed: nothing read it; the peak is the array arithmetic, hardware.core.tensor.array_rows x array_cols x 2 FLOP x clock_ghz per core",
	"hardware.chip.links.topology":     "moved: the chips' arrangement is hardware.topology.kind (none, ring, 2d_torus, 3d_torus, switched, custom), set by instances",
	"hardware.core.tensor.fp8_rate":    "removed: an FP8 matmul's rate follows its mode, the BF16 rate normally and 2x in double-row mode (perf=2, where hardware.core.tensor.fp8_double_row is true)",
}

// HBMConfig describes a chip's HBM.
type HBMConfig struct {
	Stacks   int     `yaml:"stacks" check:"pos"`
	StackGiB float64 `yaml:"stack_gib" check:"pos"`
	// BandwidthGBps is the chip's total HBM bandwidth, shared evenly by the
	// stacks.
	BandwidthGBps float64 `yaml:"bandwidth_gbps" check:"pos"`
	// LatencyNs is the access latency added to a DMA engine transfer that
	// touches HBM.
	LatencyNs float64 `yaml:"latency_ns" check:"nonneg"`
	// InterleaveBytes: addresses rotate over the stacks in blocks of this
	// size; 0 places each stack's address range contiguously.
	InterleaveBytes int64 `yaml:"interleave_bytes" check:"nonneg"`
}

// LinkConfig describes a chip's chip-to-chip links (NeuronLink).
type LinkConfig struct {
	// Count is the chip's links; ChipBandwidthGBps their total, as
	// published (recorded, not simulated: the links simulate at
	// LinkBandwidthGBps).
	Count             int     `yaml:"count" check:"nonneg"`
	ChipBandwidthGBps float64 `yaml:"chip_bandwidth_gbps" check:"nonneg"`
	// LinkBandwidthGBps is one link's bandwidth per direction.
	LinkBandwidthGBps float64 `yaml:"link_bandwidth_gbps" check:"nonneg"`
	// LatencyNs is what a link hop adds to a transfer or a semaphore
	// update.
	LatencyNs float64 `yaml:"latency_ns" check:"nonneg"`
}

// CoreConfig describes one physical NeuronCore.
type CoreConfig struct {
	// Semaphores per core.
	Semaphores int                 `yaml:"semaphores" check:"pos"`
	Tensor     TensorConfig        `yaml:"tensor"`
	Vector     VectorConfig        `yaml:"vector"`
	Scalar     EngineConfig        `yaml:"scalar"`
	GpSimd     GpSimdConfig        `yaml:"gpsimd"`
	Sync       EngineConfig        `yaml:"sync"`
	SBUF       SBUFConfig          `yaml:"sbuf"`
	PSUM       PSUMConfig          `yaml:"psum"`
	DMA        DMAConfig           `yaml:"dma"`
	Power      PowerConfig         `yaml:"power"`
	Ports      PortConfig          `yaml:"ports"`
	AP         AccessPatternLimits `yaml:"access_pattern"`
}

// EngineConfig is an engine's clock.
type EngineConfig struct {
	ClockGHz float64 `yaml:"clock_ghz" check:"pos"`
}

// TensorConfig describes TensorE.
type TensorConfig struct {
	ClockGHz  float64 `yaml:"clock_ghz" check:"pos"`
	ArrayRows int     `yaml:"array_rows" check:"pos"`
	ArrayCols int     `yaml:"array_cols" check:"pos"`
	// MovingFreeMax is the largest moving free size with an FP32 PSUM
	// destination; MovingFreeMaxHalfDst with a BF16/FP16 destination.
	MovingFreeMax        int  `yaml:"moving_free_max" check:"pos"`
	MovingFreeMaxHalfDst int  `yaml:"moving_free_max_half_dst" check:"pos"`
	MatmulMayCrossBanks  bool `yaml:"matmul_may_cross_banks"`
	// BackgroundLoadStationary lets LoadStationary overlap the running
	// MultiplyMoving (double-buffered weights).
	BackgroundLoadStationary bool `yaml:"background_load_stationary"`
	// FP8DoubleRow: FP8 double-row mode (perf=2, fp8e4/fp8e5 tiles at twice
	// the BF16 rate) exists; MXQuad: MX quad mode (perf=4) exists.
	FP8DoubleRow bool `yaml:"fp8_double_row"`
	MXQuad       bool `yaml:"mx_quad"`
	// FP32Rate is the FP32 matmul throughput relative to BF16, for the peak
	// (the cost table charges the cycles).
	FP32Rate float64 `yaml:"fp32_rate" check:"pos"`
}

// VectorConfig describes VectorE.
type VectorConfig struct {
	ClockGHz       float64 `yaml:"clock_ghz" check:"pos"`
	FreeMaxSBUF    int64   `yaml:"free_max_sbuf" check:"pos"`
	FreeMaxPSUM    int64   `yaml:"free_max_psum" check:"pos"`
	BNStatsFreeMax int64   `yaml:"bn_stats_free_max" check:"pos"`
	TransposeMax   int     `yaml:"transpose_max" check:"pos"`
}

// GpSimdConfig describes GpSimdE.
type GpSimdConfig struct {
	ClockGHz   float64 `yaml:"clock_ghz" check:"pos"`
	PSUMAccess bool    `yaml:"psum_access"`
}

// SBUFConfig describes the state buffer.
type SBUFConfig struct {
	Partitions   int `yaml:"partitions" check:"pos"`
	PartitionKiB int `yaml:"partition_kib" check:"pos"`
}

// PSUMConfig describes the partial-sum buffer (same partitions as SBUF).
type PSUMConfig struct {
	PartitionKiB int `yaml:"partition_kib" check:"pos"`
	Banks        int `yaml:"banks" check:"pos"`
}

// DMAConfig describes a core's DMA engines and queues.
type DMAConfig struct {
	Engines         int `yaml:"engines" check:"pos"`
	QueuesPerEngine int `yaml:"queues_per_engine" check:"pos"`
	// QueueDepth is how many transfers a queue holds before the issuing
	// engine stalls (DMA queue stall).
	QueueDepth int `yaml:"queue_depth" check:"pos"`
	// EngineBandwidthGBps is one engine's streaming rate.
	EngineBandwidthGBps float64 `yaml:"engine_bandwidth_gbps" check:"pos"`
	// DescriptorMaxKiB caps one descriptor; DescriptorOverheadNs is an
	// engine's fixed cost per descriptor.
	DescriptorMaxKiB     int     `yaml:"descriptor_max_kib" check:"pos"`
	DescriptorOverheadNs float64 `yaml:"descriptor_overhead_ns" check:"nonneg"`
	// StartLatencyNs (trigger to first byte) and CompletionLatencyNs (last
	// byte to semaphore) make up the fixed per-transfer latency; they
	// overlap across outstanding transfers and do not occupy the engines.
	StartLatencyNs      float64 `yaml:"start_latency_ns" check:"nonneg"`
	CompletionLatencyNs float64 `yaml:"completion_latency_ns" check:"nonneg"`
	// Arbitration across queues: round_robin (v2/v3) or qos (v4).
	Arbitration string `yaml:"arbitration"`
	QoSClasses  int    `yaml:"qos_classes" check:"nonneg"`
	// HardwareDGEBlocks per core (0: no hardware DGE) and the time each takes
	// per DMA instruction.
	HardwareDGEBlocks int     `yaml:"hardware_dge_blocks" check:"nonneg"`
	HardwareDGENs     float64 `yaml:"hardware_dge_ns" check:"nonneg"`
	// SoftwareDGECyclesPerDescriptor is GpSimd's cost per generated descriptor.
	SoftwareDGECyclesPerDescriptor float64 `yaml:"software_dge_cycles_per_descriptor" check:"nonneg"`
	// Transpose efficiencies relative to a copy (HBM to SBUF, SBUF to SBUF).
	TransposeEfficiencyHBM  float64 `yaml:"transpose_efficiency_hbm" check:"frac"`
	TransposeEfficiencySBUF float64 `yaml:"transpose_efficiency_sbuf" check:"frac"`
	// IndirectHardwareDGE allows gather/scatter through hardware DGE.
	IndirectHardwareDGE bool `yaml:"indirect_hardware_dge"`
}

// PowerConfig is TensorE's dI/dt throttle (Trn2/Trn3): it starts at
// StartFraction of peak and ramps to full over RampUs of sustained work; if
// utilisation over WindowUs drops below LowUtilFraction it re-engages.
type PowerConfig struct {
	Enabled         bool    `yaml:"enabled"`
	StartFraction   float64 `yaml:"start_fraction" check:"frac"`
	RampUs          float64 `yaml:"ramp_us" check:"pos"`
	WindowUs        float64 `yaml:"window_us" check:"pos"`
	LowUtilFraction float64 `yaml:"low_util_fraction" check:"frac"`
}

// PortConfig holds the SBUF/PSUM port-sharing rules.
type PortConfig struct {
	// VectorGpSimdShareSBUF: VectorE and GpSimd cannot use SBUF at the same
	// time (NC-v2).
	VectorGpSimdShareSBUF bool `yaml:"vector_gpsimd_share_sbuf"`
	// VectorScalarSharePSUM: VectorE and ScalarE cannot use PSUM at the same
	// time (NC-v2).
	VectorScalarSharePSUM bool `yaml:"vector_scalar_share_psum"`
	// SamePSUMBankExclusive: two engines cannot access the same PSUM bank at
	// the same time (NC-v3 keeps only this restriction).
	SamePSUMBankExclusive bool `yaml:"same_psum_bank_exclusive"`
}

// AccessPatternLimits are the hardware access-pattern field widths.
type AccessPatternLimits struct {
	SizeMax   int64 `yaml:"size_max" check:"pos"`
	StrideMin int64 `yaml:"stride_min"`
	StrideMax int64 `yaml:"stride_max" check:"pos"`
}

// LogicalCoresPerChip returns the chip's logical cores (cores / lnc).
func (h *Hardware) LogicalCoresPerChip() int { return h.Chip.Cores / max(h.Chip.LNC, 1) }

// ChipsPerNode returns the chips of one node.
func (h *Hardware) ChipsPerNode() int { return h.Chips / max(h.Nodes, 1) }

// HBMBytesPerChip returns one chip's HBM capacity in bytes.
func (h *Hardware) HBMBytesPerChip() int64 {
	return int64(float64(h.Chip.HBM.Stacks) * h.Chip.HBM.StackGiB * (1 << 30))
}

// SBUFBytesPerPartition returns the SBUF bytes in one partition.
func (h *Hardware) SBUFBytesPerPartition() int64 { return int64(h.Core.SBUF.PartitionKiB) * 1024 }

// PSUMBytesPerPartition returns the PSUM bytes in one partition.
func (h *Hardware) PSUMBytesPerPartition() int64 { return int64(h.Core.PSUM.PartitionKiB) * 1024 }

// Limits derives the instruction tile limits.
func (h *Hardware) Limits() *isa.Limits {
	c := &h.Core
	return &isa.Limits{
		Generation:          h.Generation,
		Chips:               h.Chips,
		CoresPerChip:        h.Chip.Cores,
		Semaphores:          c.Semaphores,
		Partitions:          c.SBUF.Partitions,
		SBUFPartitionBytes:  h.SBUFBytesPerPartition(),
		PSUMPartitionBytes:  h.PSUMBytesPerPartition(),
		PSUMBanks:           c.PSUM.Banks,
		ArrayRows:           c.Tensor.ArrayRows,
		ArrayCols:           c.Tensor.ArrayCols,
		MovingFreeMax:       c.Tensor.MovingFreeMax,
		MovingFreeMaxHalf:   c.Tensor.MovingFreeMaxHalfDst,
		MatmulMayCrossBanks: c.Tensor.MatmulMayCrossBanks,
		FP8DoubleRow:        c.Tensor.FP8DoubleRow,
		MXQuad:              c.Tensor.MXQuad,
		VectorFreeMaxSBUF:   c.Vector.FreeMaxSBUF,
		VectorFreeMaxPSUM:   c.Vector.FreeMaxPSUM,
		BNStatsFreeMax:      c.Vector.BNStatsFreeMax,
		VectorTransposeMax:  c.Vector.TransposeMax,
		GpSimdPSUMAccess:    c.GpSimd.PSUMAccess,
		APSizeMax:           c.AP.SizeMax,
		APStrideMin:         c.AP.StrideMin,
		APStrideMax:         c.AP.StrideMax,
		DMAEngines:          c.DMA.Engines,
		DMAQueues:           c.DMA.QueuesPerEngine,
		HardwareDGE:         c.DMA.HardwareDGEBlocks > 0,
		DMAIndirectHWDGE:    c.DMA.IndirectHardwareDGE,
		HBMBytes:            h.HBMBytesPerChip(),
	}
}

// MatmulRate returns the TensorE throughput of matmuls with input dtype dt
// in performance mode perf (0 normal, 2 FP8 double-row, 4 MX quad),
// relative to BF16 (reference §2.1, §2.2): FP32 at FP32Rate; BF16, FP16,
// TF32 and FP8 at 1 (FP8 without a fast mode runs at the BF16 rate: cFP8
// on NC-v2, FP8_E3 on NC-v3, non-MX FP8 on NC-v4); double-row fp8e4/fp8e5
// at 2 (NC-v3: a 256x128 logical array in the time of a BF16 pair); MX
// quad at 4 for MX dtypes only. ok is false for a mode the hardware or the
// dtype does not have (the ISA has no MX dtypes, so perf=4 never
// qualifies).
func (h *Hardware) MatmulRate(dt isa.DType, perf uint8) (rate float64, ok bool) {
	t := &h.Core.Tensor
	switch perf {
	case 0:
		if dt == isa.FP32 {
			return t.FP32Rate, true
		}
		return 1, true
	case 2:
		if t.FP8DoubleRow && (dt == isa.FP8E4 || dt == isa.FP8E5) {
			return float64(isa.PerfModeRows(2)), true
		}
	}
	return 0, false
}

// PeakBaseFLOPSPerCore is one core's TensorE arithmetic at rate 1:
// rows x cols x 2 FLOP x clock.
func (h *Hardware) PeakBaseFLOPSPerCore() float64 {
	t := &h.Core.Tensor
	return float64(t.ArrayRows) * float64(t.ArrayCols) * 2 * t.ClockGHz * 1e9
}

// PeakFLOPSPerCore returns one core's TensorE peak for matmuls with input
// dtype dt in normal mode: PeakBaseFLOPSPerCore x MatmulRate(dt, 0).
func (h *Hardware) PeakFLOPSPerCore(dt isa.DType) float64 {
	rate, _ := h.MatmulRate(dt, 0)
	return h.PeakBaseFLOPSPerCore() * rate
}

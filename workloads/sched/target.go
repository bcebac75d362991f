// Package sched is trnsim's one scheduler: it turns a tile-IR kernel
// (package tile) into an isa.Program for a target, and is the only place
// where these are decided:
//
//   - the order between accesses: read-after-write, write-after-read and
//     write-after-write on the same bytes — in SBUF, PSUM and HBM, across
//     engines, DMA queues and cores — become semaphore waits and
//     increments (engine semaphores count completed instructions, DMA
//     queue semaphores count completed transfers, an engine's own program
//     order needs none), with no wait that another already implies;
//   - the engine of an op the kernel leaves open (by estimated finish
//     time), the engine that triggers each transfer and its DMA queue;
//   - SBUF, PSUM and HBM placement with lifetimes: tiles are freed after
//     their last use and their memory reused, loop tiles rotate over their
//     slots, PSUM tiles get banks, and a working set that cannot fit is one
//     typed error (FitError);
//   - instruction bodies, shared by construction (one per op, engine,
//     buffer slot and shape), so the simulator decodes each once;
//   - ranks across chips (rank r is core r % cores of chip r / cores),
//     per-rank HBM tiles in their core's share of the chip's HBM, and
//     collectives expanded into DMA transfers between the ranks' tiles
//     (mesh, recursive halving/doubling or ring), walked in lockstep with
//     the cores loops that hold them (collective.go), ring and rdh in an
//     order along the fabric's links (topo.go).
//
// It runs once per simulation, generating every stream in one pass over
// the loop tree as the simulator asks for instructions, and keeps its
// buffering bounded (an engine whose next instruction lies far ahead gets
// its own pass). docs/architecture.md says which parts of the policy are
// ours: the Neuron compiler's is not published.
package sched

import (
	"fmt"

	"github.com/trnsim/trnsim/internal/memo"
	"github.com/trnsim/trnsim/isa"
)

// Target is what the scheduler knows of the hardware: typed values, never
// the YAML config.
type Target struct {
	// Name is the hardware the program is for (isa.Program.Target).
	Name   string
	Limits *isa.Limits
	Cost   *isa.CostModel
	// ClockGHz is each engine's clock, for time estimates.
	ClockGHz [isa.NumEngines]float64
	// DMAEngineGBps is one DMA engine's bandwidth; DMAStartNs and
	// DMACompletionNs its fixed latencies (estimates only).
	DMAEngineGBps   float64
	DMAStartNs      float64
	DMACompletionNs float64
	// HBMBytes is one chip's HBM capacity (0: unchecked).
	HBMBytes int64
	// DMAQoSClasses > 0 says the DMA engines serve queues by strict
	// priority of class (queue id mod DMAQoSClasses, lower first); the
	// scheduler then gives each engine queues of one class, so that a
	// later prefetch is never served ahead of a load needed now.
	DMAQoSClasses int
	// HBMGBps is one chip's HBM bandwidth; DMATransposeEfficiency the
	// throughput of an HBM-to-SBUF dma_transpose relative to a copy;
	// BackgroundLoadStationary says TensorE loads the next stationary tile
	// while a multiply runs (estimates only).
	HBMGBps                  float64
	DMATransposeEfficiency   float64
	BackgroundLoadStationary bool
	// VectorGpSimdShareSBUF says VectorE and GpSimd cannot use SBUF at
	// the same time (NC-v2's port rule; estimates only).
	VectorGpSimdShareSBUF bool
	// DMADescriptorNs is what each descriptor costs a DMA engine, and
	// DMADescriptorMaxBytes the most one moves (estimates only).
	DMADescriptorNs       float64
	DMADescriptorMaxBytes int64
	// ChipHops[a][b] and ChipLatencyNs[a][b] are the link hops and the
	// latency of the fabric's route from chip a to chip b (the network
	// between nodes counts one hop; -1: not linked); nil when unknown.
	// The scheduler orders the members of ring and rdh collectives by
	// them (collective.go, topo.go).
	ChipHops      [][]int
	ChipLatencyNs [][]float64
	// SymmetricLinks says a route's links are alike wherever a shift of
	// the chips takes it (a ring, torus or switch, whose axes have one
	// bandwidth each), so that symmetric-core reuse may compare routes by
	// their hops and latency; false for a custom topology.
	SymmetricLinks bool
	// CoresPerStack is how many of a chip's cores share an HBM stack (the
	// chip's cores where the stacks are interleaved; 0: unknown):
	// symmetric-core reuse simulates whole stacks (Options.SymmetricRanks).
	CoresPerStack int
	// Memo, if set, keeps work that lowerings sharing it repeat (a
	// sweep's points, a model's layers): the GEMM plan search's estimates,
	// for one. What it keeps never changes a result.
	Memo *memo.Memo
}

// TargetKey is a target's every field but the chip routes and the memo,
// as one comparable value: what work shared through the memo is keyed on
// (a plan, the schedule of a kernel), less the fields that work does not
// read.
type TargetKey struct {
	name                                 string
	limits                               isa.Limits
	cost                                 *isa.CostModel
	clockGHz                             [isa.NumEngines]float64
	dmaEngineGBps, dmaStartNs, dmaDoneNs float64
	hbmBytes                             int64
	qosClasses                           int
	hbmGBps, transposeEff                float64
	backgroundLS, vgShareSBUF            bool
	descNs                               float64
	descMaxBytes                         int64
	coresPerStack                        int
	symmetricLinks                       bool
}

// Key returns the target's key.
func (t *Target) Key() TargetKey {
	return TargetKey{name: t.Name, limits: *t.Limits, cost: t.Cost, clockGHz: t.ClockGHz,
		dmaEngineGBps: t.DMAEngineGBps, dmaStartNs: t.DMAStartNs, dmaDoneNs: t.DMACompletionNs,
		hbmBytes: t.HBMBytes, qosClasses: t.DMAQoSClasses, hbmGBps: t.HBMGBps, transposeEff: t.DMATransposeEfficiency,
		backgroundLS: t.BackgroundLoadStationary, vgShareSBUF: t.VectorGpSimdShareSBUF, descNs: t.DMADescriptorNs, descMaxBytes: t.DMADescriptorMaxBytes,
		coresPerStack: t.CoresPerStack, symmetricLinks: t.SymmetricLinks}
}

// WithoutSBUF is the key with the SBUF size left out.
func (k TargetKey) WithoutSBUF() TargetKey {
	k.limits.SBUFPartitionBytes = 0
	return k
}

// WithoutHBMBandwidth is the key with the HBM bandwidth left out: the
// scheduler never reads it (TestCompileNeverReadsHBMBandwidth); only the
// kernels' estimates do.
func (k TargetKey) WithoutHBMBandwidth() TargetKey {
	k.hbmGBps = 0
	return k
}

// Options are the scheduler's own choices that a config may set.
type Options struct {
	// QueuesPerEngine is how many DMA queues each triggering engine
	// spreads its transfers over (0: 3).
	QueuesPerEngine int
	// DGE is the descriptor generation of transfers the kernel leaves
	// open; DGEAuto picks hardware DGE where the target has it.
	DGE     isa.DGEKind
	DGEAuto bool
	// FinalizeDistance and SoloBuffer tune streaming (0: defaults): an
	// instruction's signal is decided once the walk is FinalizeDistance
	// instructions past it, and a stream whose demand would make the walk
	// buffer more than SoloBuffer instructions for the others gets a walk
	// of its own.
	FinalizeDistance int
	SoloBuffer       int
	// ReleaseAbove is how many bodies (distinct instructions, about
	// 0.7 KiB each) the walks may hold before those of ops every walk is
	// done with are released (0: 2^17; negative: release at once);
	// release.go.
	ReleaseAbove int
	// CollectiveAlgorithm is the algorithm of every collective that does
	// not name one (algo=): "mesh", "rdh" or "ring"; "" chooses by message
	// size (mesh below 1 MiB, rdh up to 56 MiB, ring above; rdh needs a
	// power-of-two group: other groups use ring, and with this option
	// set to rdh the program's notes say so).
	CollectiveAlgorithm string
	// SymmetricRanks says the ranks of a cores loop run identical programs
	// (a model's tensor-parallel ranks): where the loop's collectives are
	// symmetric under shifting the ranks by a unit (the cores of an HBM
	// stack within a chip, a chip across chips) and the unit's transfers
	// mirror those it receives, only the unit is scheduled (symmetric-core
	// reuse, symmetric.go); Program.SimulatedRanks says whether it was.
	SymmetricRanks bool
}

// Semaphore layout of every core the scheduler uses: engine e counts on
// semaphore e; DMA queue q on semaphore QueueSemBase + q.
const QueueSemBase = 8

// FitError is a working set that does not fit its memory.
type FitError struct {
	Kernel string
	// Tile is the tile that could not be placed.
	Tile string
	Mem  isa.Memory
	Core int
	// Needed is the bytes the kernel needs (per partition on chip) at the
	// point the tile does not fit; Available what the memory has.
	Needed, Available int64
	// PerRank is set for a per-rank HBM tile that does not fit its rank's
	// share of the chip's HBM (Rank, on Chip; Available is the share and
	// Needed what the rank's tiles need of it).
	PerRank    bool
	Rank, Chip int
}

func (e *FitError) Error() string {
	unit := "bytes per partition"
	if e.Mem == isa.MemHBM {
		unit = "bytes"
	}
	if e.PerRank {
		return fmt.Sprintf("kernel %s: tile %s does not fit rank %d's share of chip %d's hbm: the rank's tiles need %d bytes, the share has %d",
			e.Kernel, e.Tile, e.Rank, e.Chip, e.Needed, e.Available)
	}
	return fmt.Sprintf("kernel %s: tile %s does not fit %s: the working set needs %d %s, %s has %d",
		e.Kernel, e.Tile, e.Mem, e.Needed, unit, e.Mem, e.Available)
}

// OpError is an error in one op of a kernel (an access outside its tile,
// an instruction the hardware cannot run).
type OpError struct {
	Kernel string
	File   string
	Pos    string // line:col in the text form, "" for a Go-built kernel
	Op     string // the op as the text form prints it
	Msg    string
}

func (e *OpError) Error() string {
	if e.File != "" && e.Pos != "" {
		return fmt.Sprintf("%s:%s: %s: %s", e.File, e.Pos, e.Op, e.Msg)
	}
	return fmt.Sprintf("kernel %s: %s: %s", e.Kernel, e.Op, e.Msg)
}

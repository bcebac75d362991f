// Package engines holds a NeuronCore's instruction sequencers — TensorE,
// VectorE, ScalarE, GpSimdE and the Sync engine — and its semaphore board.
// Each sequencer runs its own instruction stream on the Akita serial engine,
// asynchronously; only semaphores order them. An instruction occupies its
// engine for its issue interval and completes after its latency (both from
// the cost tables); shared SBUF/PSUM ports, PSUM banks, the DMA queues and
// TensorE's power ramp add the contention the timing comes out of.
package engines

import (
	"fmt"

	"github.com/sarchlab/akita/v3/sim"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/memory"
	"github.com/trnsim/trnsim/noc"
)

// StallCause is one of the fixed reasons an engine waits.
type StallCause uint8

// Stall causes reported by the simulator.
const (
	StallSemaphore  StallCause = iota // waiting for a semaphore
	StallPSUMBank                     // another engine holds the PSUM bank
	StallPort                         // the shared SBUF or PSUM port is busy
	StallDMAQueue                     // the DMA queue is full
	StallPower                        // TensorE's dI/dt power ramp
	StallDependency                   // the engine's own in-flight result (RAW/WAW), or TensorE's stationary
	NumStallCauses
)

var stallNames = [...]string{"semaphore", "psum_bank", "port", "dma_queue", "power_throttle", "dependency"}

// String names the cause as reports print it.
func (c StallCause) String() string { return stallNames[c] }

// DMAPort is what a sequencer needs from its core's DMA engines.
type DMAPort interface {
	// QueueFull reports whether DMA queue q has no free slot.
	QueueFull(q int16) bool
	// WaitQueue asks for wake to be called when queue q frees a slot.
	WaitQueue(q int16, wake func(at clock.Time))
	// SubmitDecoded hands a transfer to the DMA engines, triggered at time
	// trigger by an agent with clock vc; spans are its on-chip operands'
	// spans (isa.Decoded.Spans).
	SubmitDecoded(in *isa.Instruction, spans []isa.Span, trigger clock.Time, vc memory.VClock) error
	// Descriptors returns how many descriptors a transfer needs.
	Descriptors(in *isa.Instruction) int64
}

// Tracer receives instructions and waits as they are committed, as
// timelines take them (TraceObserver attaches one).
type Tracer interface {
	Instruction(chip, core int32, eng isa.Engine, in *isa.Instruction, start, end clock.Time)
	Wait(chip, core int32, eng isa.Engine, in *isa.Instruction, sem isa.SemRef, start, end clock.Time)
}

// Describer prints an instruction for error messages.
type Describer func(in *isa.Instruction) string

// Sim is the state shared by every core of one simulation: the Akita engine,
// the boards of all cores (for semaphores across cores), the failure flag and
// the instruction and event counts.
type Sim struct {
	Engine sim.Engine
	// Boards maps (chip, core) to a board; set by the chip builder.
	Boards func(chip, core int32) *SemBoard
	// Err is the first fatal error (bad instruction, data race).
	Err      error
	Describe Describer
	// Instructions counts committed instructions across the simulation.
	Instructions int64
	// Events counts handled events.
	Events int64
	// Now is the time of the event being handled.
	Now clock.Time
	// Clocks is shared by the vector clocks of the race detector.
	Clocks *memory.Clocks
	// Fabric delays semaphore updates that cross cores or chips (nil:
	// none do).
	Fabric *noc.Fabric
}

// Fail records the first fatal error; later events are ignored.
func (s *Sim) Fail(err error) {
	if s.Err == nil {
		s.Err = err
	}
}

// CoreConfig holds what a core's sequencers need to know.
type CoreConfig struct {
	Chip, Core int32
	Generation int
	Clocks     [isa.NumEngines]clock.Clock
	Cost       *isa.CostModel
	Limits     *isa.Limits
	// Ports rules.
	VectorGpSimdShareSBUF bool
	VectorScalarSharePSUM bool
	SamePSUMBankExclusive bool
	// TensorE.
	BackgroundLoadStationary bool
	Power                    PowerParams
	// SoftwareDGECycles is GpSimd's cost per generated descriptor.
	SoftwareDGECycles float64
	// AgentBase is the first vector-clock agent of this core; the engines
	// take AgentBase..AgentBase+4 and the DMA queues follow.
	AgentBase int
	Agents    int
}

// Core is one NeuronCore's sequencers and the per-core state they share.
type Core struct {
	Cfg   CoreConfig
	Sim   *Sim
	Board *SemBoard
	DMA   DMAPort
	// Race checks compute instructions' accesses (nil: no check).
	Race Checker
	// Observers see every commit of the core's engines.
	Observers []Observer
	Seqs      [isa.NumEngines]*Sequencer

	sbufVG   *memory.Port // VectorE/GpSimd SBUF port (NC-v2)
	psumVS   *memory.Port // VectorE/ScalarE PSUM port (NC-v2)
	psumBank []*memory.Port
}

// NewCore builds a core's sequencers. streams gives each engine's stream
// (nil: idle engine); hooks the race check and the observers.
func NewCore(s *Sim, cfg CoreConfig, board *SemBoard, dma DMAPort, hooks Hooks, streams [isa.NumEngines]isa.Stream) *Core {
	c := &Core{Cfg: cfg, Sim: s, Board: board, DMA: dma, Race: hooks.Race, Observers: hooks.Observers}
	c.sbufVG = memory.NewPort("SBUF port shared by vector and gpsimd")
	c.psumVS = memory.NewPort("PSUM port shared by vector and scalar")
	for i := 0; i < cfg.Limits.PSUMBanks; i++ {
		c.psumBank = append(c.psumBank, memory.NewPort(fmt.Sprintf("PSUM bank %d", i)))
	}
	for _, e := range isa.AllEngines() {
		c.Seqs[e] = newSequencer(c, e, streams[e])
	}
	return c
}

// Start schedules each sequencer's first issue at time zero.
func (c *Core) Start() {
	for _, s := range c.Seqs {
		if s.stream != nil {
			s.wakeAt(0)
		}
	}
}

// EventOrder ranks the wake-ups of a core's components among those at one
// time (eventpool.Engine): by chip, then core, then component: the engines
// in isa.Engine order, then (component isa.NumEngines) the DMA engines.
func EventOrder(chip, core int32, component int) uint64 {
	return (uint64(uint32(chip))<<20|uint64(uint32(core))&0xfffff)<<4 | uint64(component)&0xf
}

// board returns the board holding a semaphore: this core's without a
// lookup, another core's through the simulation.
func (c *Core) board(r isa.SemRef) *SemBoard {
	if r.Chip == c.Cfg.Chip && r.Core == c.Cfg.Core {
		return c.Board
	}
	return c.Sim.Boards(r.Chip, r.Core)
}

// postLatency is what an update of r from this core takes to arrive; ok
// is false (and the simulation failed) when r's chip cannot be reached.
func (c *Core) postLatency(in *isa.Instruction, r isa.SemRef) (clock.Time, bool) {
	f := c.Sim.Fabric
	if f == nil || (r.Chip == c.Cfg.Chip && r.Core == c.Cfg.Core) {
		return 0, true
	}
	lat, err := f.PostLatency(c.Cfg.Chip, c.Cfg.Core, r.Chip, r.Core)
	if err != nil {
		c.Sim.Fail(fmt.Errorf("%s: semaphore s%d@%d.%d: %w", c.Sim.Describe(in), r.ID, r.Chip, r.Core, err))
		return 0, false
	}
	return lat, true
}

// agentName names an agent of this core for race reports.
func (c *Core) agentName(e isa.Engine) string {
	return fmt.Sprintf("chip %d core %d %s", c.Cfg.Chip, c.Cfg.Core, e)
}

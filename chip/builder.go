package chip

import (
	"fmt"
	"sort"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/dma"
	"github.com/trnsim/trnsim/engines"
	"github.com/trnsim/trnsim/internal/eventpool"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/memory"
	"github.com/trnsim/trnsim/noc"
	"github.com/trnsim/trnsim/opstats"
)

// SystemBuilder builds the simulated system for a program: the fabric
// between the chips, a ChipBuilder per chip and a CoreBuilder per core
// that has instructions (MGPUSim's builder style: values configured with
// With methods, Build at the end).
type SystemBuilder struct {
	cfg  *configs.RunConfig
	opts Options
}

// MakeSystemBuilder returns a builder for the hardware of cfg.
func MakeSystemBuilder(cfg *configs.RunConfig) SystemBuilder { return SystemBuilder{cfg: cfg} }

// WithOptions sets the run's options (tracer, race check, progress,
// observers).
func (b SystemBuilder) WithOptions(o Options) SystemBuilder {
	b.opts = o
	return b
}

// FabricConfig returns the fabric of a hardware config, as noc takes it.
func FabricConfig(h *configs.Hardware) noc.Config {
	t := &h.Topology
	c := noc.Config{
		Chips: h.Chips, ChipsPerNode: h.ChipsPerNode(),
		Kind: t.Kind, Dims: t.Dims, AxisGBps: t.AxisBandwidthGBps,
		LinkGBps:       h.Chip.Links.LinkBandwidthGBps,
		LinkLatency:    clock.FromNanoseconds(h.Chip.Links.LatencyNs),
		SwitchPortGBps: float64(h.Chip.Links.Count) * h.Chip.Links.LinkBandwidthGBps,
		NoCLatency:     clock.FromNanoseconds(h.Chip.NoC.LatencyNs),
		EFAGBps:        h.EFA.ChipBandwidthGBps,
		EFALatency:     clock.FromNanoseconds(h.EFA.LatencyNs),
	}
	for _, l := range t.Links {
		c.Custom = append(c.Custom, noc.Link{A: l.A, B: l.B, GBps: l.BandwidthGBps})
	}
	return c
}

// Build checks the program against the hardware and wires the system.
func (b SystemBuilder) Build(prog *isa.Program) (*system, error) {
	cfg, opts := b.cfg, b.opts
	h := &cfg.Hardware
	limits := h.Limits()
	for _, buf := range prog.Buffers {
		if err := limits.CheckBuffer(buf); err != nil {
			if buf.Line > 0 {
				return nil, fmt.Errorf("line %d: %w", buf.Line, err)
			}
			return nil, err
		}
	}
	order, streams, err := activeCores(h, prog)
	if err != nil {
		return nil, err
	}
	fabric, err := noc.New(FabricConfig(h))
	if err != nil {
		return nil, fmt.Errorf("hardware.topology: %w", err)
	}
	co := &h.Core
	perCore := int(isa.NumEngines) + co.DMA.QueuesPerEngine
	agents := len(order) * perCore

	s := &system{cfg: cfg, prog: prog, boards: map[coreKey]*engines.SemBoard{}, fabric: fabric,
		act: newActivity(), perOp: opstats.New()}
	s.act.collOps = opts.CollectiveOps
	s.sim = &engines.Sim{
		Engine:   eventpool.NewEngine(),
		Describe: func(in *isa.Instruction) string { return Describe(prog, in) },
		Clocks:   &memory.Clocks{},
		Fabric:   fabric,
	}
	// What watches the run: the engines' own counters (per op too), the
	// overlap record and the per-op DMA time always; the caller's tracer,
	// progress and observers when asked.
	observers := []engines.Observer{s.act}
	dmaTracers := dmaFanOut{s.act, s.perOp}
	if opts.Tracer != nil {
		observers = append(observers, engines.TraceObserver(opts.Tracer))
		dmaTracers = append(dmaTracers, opts.Tracer)
	}
	if opts.Progress != nil && opts.ProgressEvery > 0 {
		observers = append(observers, &engines.ProgressObserver{Every: opts.ProgressEvery, Report: opts.Progress})
	}
	observers = append(observers, opts.Observers...)
	s.sim.Boards = func(chip, core int32) *engines.SemBoard {
		k := coreKey{chip, core}
		if bd, ok := s.boards[k]; ok {
			return bd
		}
		if int(chip) < 0 || int(chip) >= h.Chips || int(core) < 0 || int(core) >= h.Chip.Cores {
			return nil
		}
		bd := engines.NewSemBoard(chip, core, co.Semaphores, agents)
		bd.Clocks = s.sim.Clocks
		s.boards[k] = bd
		return bd
	}
	for c := 0; c < h.Chips; c++ {
		s.hbm = append(s.hbm, ChipBuilder{hw: h}.buildHBM())
	}
	// One race detector sees every core: HBM is shared by a chip's cores,
	// and an access on one core may race with a transfer of another.
	hooks := engines.Hooks{Observers: observers}
	var race *memory.RaceDetector
	if !opts.NoRaceCheck {
		race = memory.NewRaceDetector()
		race.SetBuffers(prog.Buffers)
		hooks.Race = race
	}
	cb := CoreBuilder{cfg: cfg, limits: limits, agents: agents, perCore: perCore, sys: s, race: race, hooks: hooks, dmaTracer: dmaTracers}
	for i, k := range order {
		s.cores = append(s.cores, cb.build(k, i, *streams[k]))
	}
	return s, nil
}

// activeCores returns the cores with an instruction stream, in chip and
// core order, and their streams.
func activeCores(h *configs.Hardware, prog *isa.Program) ([]coreKey, map[coreKey]*[isa.NumEngines]isa.Stream, error) {
	var order []coreKey
	streams := map[coreKey]*[isa.NumEngines]isa.Stream{}
	// Every stream opens together: a generated program makes them in one
	// pass.
	opened := prog.Open()
	for si, src := range prog.Streams {
		k := coreKey{src.Key.Chip, src.Key.Core}
		if int(k.chip) >= h.Chips || int(k.core) >= h.Chip.Cores || k.chip < 0 || k.core < 0 {
			return nil, nil, fmt.Errorf("the program has instructions for chip %d core %d, but the hardware has %d chip(s) of %d cores",
				k.chip, k.core, h.Chips, h.Chip.Cores)
		}
		if _, ok := streams[k]; !ok {
			order = append(order, k)
			streams[k] = &[isa.NumEngines]isa.Stream{}
		}
		if streams[k][src.Key.Engine] != nil {
			return nil, nil, fmt.Errorf("the program has two streams for %s", src.Key)
		}
		streams[k][src.Key.Engine] = opened[si]
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].chip != order[j].chip {
			return order[i].chip < order[j].chip
		}
		return order[i].core < order[j].core
	})
	return order, streams, nil
}

// ChipBuilder builds what a chip's cores share: its HBM.
type ChipBuilder struct {
	hw *configs.Hardware
}

func (b ChipBuilder) buildHBM() *memory.HBM {
	m := &b.hw.Chip.HBM
	stackBytes := int64(m.StackGiB * (1 << 30))
	return memory.NewHBM(m.Stacks, m.BandwidthGBps, stackBytes, m.InterleaveBytes, clock.FromNanoseconds(m.LatencyNs))
}

// CoreBuilder builds one NeuronCore: its sequencers and DMA engines, on
// the system's boards, HBM and fabric.
type CoreBuilder struct {
	cfg             *configs.RunConfig
	limits          *isa.Limits
	agents, perCore int
	sys             *system
	race            *memory.RaceDetector
	hooks           engines.Hooks
	dmaTracer       dma.Tracer
}

// localStack is the HBM stack next to a core: the chip's stacks are shared
// by consecutive cores (on trn2 each stack serves a pair). -1 when the
// addresses interleave over every stack.
func localStack(h *configs.Hardware, core int32) int {
	if h.Chip.HBM.InterleaveBytes > 0 {
		return -1
	}
	return int(core) * h.Chip.HBM.Stacks / h.Chip.Cores
}

func (b CoreBuilder) build(k coreKey, index int, streams [isa.NumEngines]isa.Stream) *coreParts {
	h := &b.cfg.Hardware
	co := &h.Core
	s := b.sys
	board := s.sim.Boards(k.chip, k.core)
	base := index * b.perCore
	dcfg := dma.Config{
		Chip: k.chip, Core: k.core,
		CoresPerChip:       h.Chip.Cores,
		LocalStack:         localStack(h, k.core),
		Stacks:             h.Chip.HBM.Stacks,
		EventOrder:         engines.EventOrder(k.chip, k.core, int(isa.NumEngines)),
		Engines:            co.DMA.Engines,
		Queues:             co.DMA.QueuesPerEngine,
		QueueDepth:         co.DMA.QueueDepth,
		Partitions:         co.SBUF.Partitions,
		EngineGBps:         co.DMA.EngineBandwidthGBps,
		DescriptorMaxBytes: int64(co.DMA.DescriptorMaxKiB) * 1024,
		DescriptorOverhead: clock.FromNanoseconds(co.DMA.DescriptorOverheadNs),
		StartLatency:       clock.FromNanoseconds(co.DMA.StartLatencyNs),
		CompletionLatency:  clock.FromNanoseconds(co.DMA.CompletionLatencyNs),
		HWDGEBlocks:        co.DMA.HardwareDGEBlocks,
		HWDGETime:          clock.FromNanoseconds(co.DMA.HardwareDGENs),
		TransposeEffHBM:    co.DMA.TransposeEfficiencyHBM,
		TransposeEffSBUF:   co.DMA.TransposeEfficiencySBUF,
		AgentBase:          base + int(isa.NumEngines),
		Agents:             b.agents,
		CollectiveOverhead: clock.FromNanoseconds(h.Runtime.CollectiveOverheadUs * 1000),
	}
	if co.DMA.Arbitration == "qos" {
		dcfg.QoSClasses = co.DMA.QoSClasses
	}
	simState := s.sim
	d := dma.New(dcfg, dma.Env{
		Engine: simState.Engine,
		Post: func(sem isa.SemRef, at clock.Time, add int64, vc memory.VClock) error {
			bd := simState.Boards(sem.Chip, sem.Core)
			if bd == nil {
				return fmt.Errorf("semaphore s%d@%d.%d does not exist", sem.ID, sem.Chip, sem.Core)
			}
			bd.Post(sem.ID, at, add, vc, simState.Now)
			return nil
		},
		Now:          func() clock.Time { return simState.Now },
		Failed:       func() bool { return simState.Err != nil },
		Fail:         simState.Fail,
		Event:        func(at clock.Time) { simState.Events++; simState.Now = at },
		HBM:          s.hbm[k.chip],
		HBMOf:        func(chip int32) *memory.HBM { return s.hbm[chip] },
		Fabric:       s.fabric,
		IsCollective: func(op int32) bool { return s.act.collOps[op] },
		Race:         b.race,
		Clocks:       s.sim.Clocks,
		Tracer:       b.dmaTracer,
		Describe:     simState.Describe,
	})
	var clocks [isa.NumEngines]clock.Clock
	clocks[isa.EngineTensor] = clock.New(co.Tensor.ClockGHz)
	clocks[isa.EngineVector] = clock.New(co.Vector.ClockGHz)
	clocks[isa.EngineScalar] = clock.New(co.Scalar.ClockGHz)
	clocks[isa.EngineGpSimd] = clock.New(co.GpSimd.ClockGHz)
	clocks[isa.EngineSync] = clock.New(co.Sync.ClockGHz)
	ccfg := engines.CoreConfig{
		Chip: k.chip, Core: k.core,
		Generation:               h.Generation,
		Clocks:                   clocks,
		Cost:                     b.cfg.Cost,
		Limits:                   b.limits,
		VectorGpSimdShareSBUF:    co.Ports.VectorGpSimdShareSBUF,
		VectorScalarSharePSUM:    co.Ports.VectorScalarSharePSUM,
		SamePSUMBankExclusive:    co.Ports.SamePSUMBankExclusive,
		BackgroundLoadStationary: co.Tensor.BackgroundLoadStationary,
		Power: engines.PowerParams{
			Enabled:       co.Power.Enabled,
			StartFraction: co.Power.StartFraction,
			Ramp:          clock.FromNanoseconds(co.Power.RampUs * 1000),
			Window:        clock.FromNanoseconds(co.Power.WindowUs * 1000),
			LowUtil:       co.Power.LowUtilFraction,
		},
		SoftwareDGECycles: co.DMA.SoftwareDGECyclesPerDescriptor,
		AgentBase:         base,
		Agents:            b.agents,
	}
	core := engines.NewCore(s.sim, ccfg, board, d, b.hooks, streams)
	return &coreParts{key: k, core: core, dma: d}
}

// Package chip builds a simulated system from a resolved run config — the
// Akita engine, chips with their HBM, NeuronCores with their sequencers,
// semaphore boards, DMA engines and the race detector — loads a Program into
// it, runs it and collects the statistics. It holds the wiring, not the
// engine internals.
package chip

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/dma"
	"github.com/trnsim/trnsim/engines"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/isa/asm"
	"github.com/trnsim/trnsim/memory"
	"github.com/trnsim/trnsim/noc"
	"github.com/trnsim/trnsim/opstats"
)

// Tracer receives the timeline: engine instructions, semaphore waits and
// DMA engine shares.
type Tracer interface {
	engines.Tracer
	dma.Tracer
}

// Options tune a run.
type Options struct {
	// Tracer, if set, receives every instruction (costs host time).
	Tracer Tracer
	// NoRaceCheck turns the data-race detector off (faster).
	NoRaceCheck bool
	// Progress is called about every ProgressEvery instructions.
	Progress      func(instructions int64, simTime clock.Time)
	ProgressEvery int64
	// Observers, if set, see every committed engine instruction too.
	Observers []engines.Observer
	// CollectiveOps are the op ids of collectives, whose traffic is
	// measured on its own (Result.CommTime, Result.ExposedCommTime).
	CollectiveOps map[int32]bool
}

// EngineResult are one engine's statistics.
type EngineResult struct {
	Engine       isa.Engine
	Instructions int64
	Busy         clock.Time
	Stall        [engines.NumStallCauses]clock.Time
	FirstStart   clock.Time
	LastEnd      clock.Time
	FLOPs        float64
	// MatmulFLOPs splits FLOPs by matmul class (engines.ClassOf).
	MatmulFLOPs [engines.NumMatmulClasses]float64
	OpCounts    [isa.NumOpcodes]int64
	// Idle is the time the engine had no instruction left: after its last
	// one ended (all the time, with none), summed over launches.
	Idle clock.Time
}

// CoreResult are one core's statistics.
type CoreResult struct {
	Chip, Core int32
	Engines    [isa.NumEngines]EngineResult
	DMA        dma.Stats
	// PeakSBUFBytes and PeakPSUMBytes are the highest byte per partition the
	// program's buffers occupy (static allocation).
	PeakSBUFBytes, PeakPSUMBytes int64
}

// ChipResult are one chip's statistics.
type ChipResult struct {
	Chip          int32
	Cores         []CoreResult
	HBMReadBytes  int64
	HBMWriteBytes int64
}

// Result is what a run produced.
type Result struct {
	SimTime clock.Time
	// DMAComputeOverlapPct is the share of DMA-active time during which a
	// compute engine was busy (to within 100 ns bins).
	DMAComputeOverlapPct float64
	Instructions         int64
	Events               int64
	HostTime             time.Duration
	Chips                []ChipResult
	// Ops are the figures per workload op (instruction op ids; 0 for
	// instructions without one), in order of id.
	Ops []opstats.Op
	// Links are the links between chips that carried data, in link order.
	Links []noc.LinkStats
	// CommTime is the time some collective (Options.CollectiveOps) was in
	// flight, from its first trigger to its last completion;
	// ExposedCommTime the part of it during which no compute engine of
	// any core was busy (to within 134 ns bins).
	CommTime, ExposedCommTime clock.Time
	// dmaTime is the DMA-active time and dmaWithCompute the part of it a
	// compute engine was busy (DMAComputeOverlapPct's terms).
	dmaTime, dmaWithCompute clock.Time
	// allLinks is every link of the fabric, in link order, used or not
	// (folding launches keeps the order).
	allLinks []noc.LinkStats
	// LaunchTimes are the simulated times of the launches, in order
	// (RunLaunches; one for Run).
	LaunchTimes []clock.Time
}

// DeadlockError reports a program that cannot finish.
type DeadlockError struct {
	Stuck    []string
	Finished int
	Total    int
}

func (e *DeadlockError) Error() string {
	kind := "deadlock"
	if e.Finished > 0 {
		kind = fmt.Sprintf("partial deadlock (%d of %d engines finished)", e.Finished, e.Total)
	}
	return fmt.Sprintf("%s: %d engine(s) can never continue:\n  %s", kind, len(e.Stuck), strings.Join(e.Stuck, "\n  "))
}

type coreKey struct{ chip, core int32 }

// system is one simulation's wiring.
type system struct {
	cfg    *configs.RunConfig
	prog   *isa.Program
	sim    *engines.Sim
	boards map[coreKey]*engines.SemBoard
	cores  []*coreParts
	hbm    []*memory.HBM
	fabric *noc.Fabric
	// act and perOp always watch the run.
	act   *activity
	perOp *opstats.Collector
}

type coreParts struct {
	key  coreKey
	core *engines.Core
	dma  *dma.Subsystem
}

// Describe prints an instruction with its assembly line for messages.
func Describe(prog *isa.Program, in *isa.Instruction) string {
	text := asm.FormatInstruction(prog, in)
	if in.Line > 0 {
		return fmt.Sprintf("line %d: %s", in.Line, text)
	}
	return text
}

// Run simulates prog on the hardware of cfg.
func Run(cfg *configs.RunConfig, prog *isa.Program, opts Options) (*Result, error) {
	hostStart := time.Now()
	s, err := MakeSystemBuilder(cfg).WithOptions(opts).Build(prog)
	if err != nil {
		return nil, err
	}
	for _, cp := range s.cores {
		cp.core.Start()
	}
	if err := s.sim.Engine.Run(); err != nil {
		return nil, err
	}
	if s.sim.Err != nil {
		return nil, s.sim.Err
	}
	if err := s.deadlock(); err != nil {
		return nil, err
	}
	res := s.collect()
	res.dmaTime, res.dmaWithCompute = s.act.overlap()
	if res.dmaTime > 0 {
		res.DMAComputeOverlapPct = 100 * float64(res.dmaWithCompute) / float64(res.dmaTime)
	}
	for _, cp := range s.cores {
		for _, seq := range cp.core.Seqs {
			s.perOp.AddEngine(cp.key.chip, cp.key.core, seq.Engine(), &seq.Stats)
		}
	}
	res.Ops = s.perOp.Ops(res.SimTime)
	s.act.addCollectives(res.Ops)
	res.CommTime, res.ExposedCommTime = s.act.comm()
	res.allLinks = s.fabric.Stats()
	res.Links = usedLinks(res.allLinks)
	res.LaunchTimes = []clock.Time{res.SimTime}
	res.HostTime = time.Since(hostStart)
	return res, nil
}

// usedLinks returns the links that carried data, in link order.
func usedLinks(all []noc.LinkStats) []noc.LinkStats {
	var out []noc.LinkStats
	for _, l := range all {
		if l.Bytes > 0 {
			out = append(out, l)
		}
	}
	return out
}

// dmaFanOut hands every DMA share to several tracers.
type dmaFanOut []dma.Tracer

func (f dmaFanOut) DMA(chip, core int32, engine, n int, queue int16, in *isa.Instruction, bytes int64, start, end clock.Time) {
	for _, t := range f {
		t.DMA(chip, core, engine, n, queue, in, bytes, start, end)
	}
}

// deadlock reports every engine that did not finish its stream.
func (s *system) deadlock() error {
	de := &DeadlockError{}
	for _, cp := range s.cores {
		for _, seq := range cp.core.Seqs {
			if seq == nil || !seq.HasStream() {
				continue
			}
			de.Total++
			if seq.Done() {
				de.Finished++
				continue
			}
			in, idx := seq.Current()
			where := fmt.Sprintf("chip %d core %d %s", cp.key.chip, cp.key.core, seq.Engine())
			if in == nil {
				de.Stuck = append(de.Stuck, where+": stopped before fetching its next instruction")
				continue
			}
			var waits []string
			for _, w := range in.Waits {
				b := s.sim.Boards(w.Sem.Chip, w.Sem.Core)
				if v := b.Final(w.Sem.ID); v < w.Value {
					waits = append(waits, fmt.Sprintf("s%d on chip %d core %d >= %d, which only ever reached %d", w.Sem.ID, w.Sem.Chip, w.Sem.Core, w.Value, v))
				}
			}
			if in.Op == isa.OpBarrier {
				if v := cp.core.Board.Final(in.Attrs.BarrierSem); v < in.Attrs.Target {
					waits = append(waits, fmt.Sprintf("barrier s%d >= %d, which only ever reached %d", in.Attrs.BarrierSem, in.Attrs.Target, v))
				}
			}
			if len(waits) == 0 {
				if cause, _, _, ok := seq.Waiting(); ok && cause == engines.StallDMAQueue {
					waits = append(waits, fmt.Sprintf("a free slot in DMA queue %d", in.Attrs.Queue))
				} else {
					waits = append(waits, "an event that never came")
				}
			}
			de.Stuck = append(de.Stuck, fmt.Sprintf("%s at instruction #%d (%s) waits for %s",
				where, idx, Describe(s.prog, in), strings.Join(waits, " and ")))
		}
	}
	if len(de.Stuck) > 0 {
		return de
	}
	return nil
}

func (s *system) collect() *Result {
	res := &Result{Instructions: s.sim.Instructions, Events: s.sim.Events}
	chips := map[int32]*ChipResult{}
	var chipOrder []int32
	for _, cp := range s.cores {
		cr := CoreResult{Chip: cp.key.chip, Core: cp.key.core, DMA: cp.dma.FinalStats()}
		for _, seq := range cp.core.Seqs {
			seq.Stats.Finish()
			st := seq.Stats
			cr.Engines[seq.Engine()] = EngineResult{Engine: seq.Engine(), Instructions: st.Instructions, Busy: st.BusyTime,
				Stall: st.Stall, FirstStart: st.FirstStart, LastEnd: st.LastEnd, FLOPs: st.FLOPs, MatmulFLOPs: st.MatmulFLOPs, OpCounts: st.OpCounts}
			if st.Instructions > 0 && st.LastEnd > res.SimTime {
				res.SimTime = st.LastEnd
			}
		}
		if cr.DMA.LastCompletion > res.SimTime {
			res.SimTime = cr.DMA.LastCompletion
		}
		for _, b := range s.prog.Buffers {
			if b.Chip != cp.key.chip || b.Core != cp.key.core {
				continue
			}
			end := b.Offset + b.BytesPerPartition()
			switch b.Mem {
			case isa.MemSBUF:
				cr.PeakSBUFBytes = max(cr.PeakSBUFBytes, end)
			case isa.MemPSUM:
				cr.PeakPSUMBytes = max(cr.PeakPSUMBytes, end)
			}
		}
		ch, ok := chips[cp.key.chip]
		if !ok {
			ch = &ChipResult{Chip: cp.key.chip}
			chips[cp.key.chip] = ch
			chipOrder = append(chipOrder, cp.key.chip)
		}
		ch.Cores = append(ch.Cores, cr)
	}
	// A chip whose HBM other chips' cores wrote or read counts too, with
	// no cores of its own.
	for c, m := range s.hbm {
		if _, ok := chips[int32(c)]; !ok && m.ReadBytes+m.WriteBytes > 0 {
			chips[int32(c)] = &ChipResult{Chip: int32(c)}
			chipOrder = append(chipOrder, int32(c))
		}
	}
	sort.Slice(chipOrder, func(i, j int) bool { return chipOrder[i] < chipOrder[j] })
	for _, c := range chipOrder {
		ch := chips[c]
		ch.HBMReadBytes = s.hbm[c].ReadBytes
		ch.HBMWriteBytes = s.hbm[c].WriteBytes
		for i := range ch.Cores {
			for e := range ch.Cores[i].Engines {
				er := &ch.Cores[i].Engines[e]
				er.Idle = res.SimTime
				if er.Instructions > 0 {
					er.Idle -= min(er.LastEnd, res.SimTime)
				}
			}
		}
		res.Chips = append(res.Chips, *ch)
	}
	return res
}

package sched

import (
	"fmt"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/tile"
)

// compiled is a kernel ready to walk: its placement, its ops with their
// body tables, and the stream layout.
type compiled struct {
	k *tile.Kernel
	// depths is each loop variable's nesting depth (loopDepths).
	depths          []int
	tg              *Target
	opts            Options
	lay             *layout
	ops             []*opInfo
	nQ              int   // DMA queues per core
	qOrder          []int // the order in which engines take free queues
	perCore         int   // streams per core: the engines, then the queues
	coreIdx         map[int]int
	dmaEngines      int64
	queuesPerEngine int
	finalDist       int64
	soloBuf         int
	aggGBps         float64
	loops           []*loopInfo  // by Loop.ID
	conds           []*tile.Code // by If.ID
	// coreSlot[rank] is the rank's index in the layout (-1: unused);
	// perChip the cores per chip (rank r is core r % perChip of chip r /
	// perChip).
	coreSlot []int
	perChip  int
	// ex is the collectives' expansion: the scheduler's own ops and
	// tiles, and the cores loops walked in lockstep.
	ex *expansion
	// nextID numbers bodies; bodies are shared by every walk of the
	// program, and metas holds them by index; rel releases those of ops
	// every walk is done with (release.go).
	nextID uint64
	metas  metaStore
	rel    *releaser
	// keys holds the bodies' keys (keepKey).
	keys []int64
	// canon[buf] is the buffer that stands for buffer buf in body
	// templates: the first of its tile's slot, over the ranks, at the same
	// partitions (see cloneBody).
	canon []int32
	// possible[stream] is set for the engine streams an op may go to; the
	// others are known to be empty without walking.
	possible []bool
	nests    int
}

// loopInfo is a loop's bounds, compiled.
type loopInfo struct {
	loop        *tile.Loop
	start, stop *tile.Code
	step        int64
	// batch is set for a loop nest whose every op is a compute op pinned to
	// one engine (see batch.go); nest describes it for the batch memo.
	batch bool
	nest  *nestInfo
	// compound is set for a compound nest (see compound.go), which nest
	// describes.
	compound bool
	// lockstep, for a cores loop with collectives or remote accesses,
	// walks its body statement by statement over every rank (see
	// collective.go).
	lockstep *phased
}

func (c *compiled) nStreams() int { return len(c.lay.cores) * c.perCore }

// chipCore returns the chip and core of a rank.
func (c *compiled) chipCore(rank int) (chip, core int32) {
	return int32(rank / c.perChip), int32(rank % c.perChip)
}

// slotOf returns a rank's index in the layout, -1 for a rank the kernel
// does not use.
func (c *compiled) slotOf(core int) int {
	if core < 0 || core >= len(c.coreSlot) {
		return -1
	}
	return c.coreSlot[core]
}

// opInfo is an op of the kernel, ready to execute.
type opInfo struct {
	op          *tile.Op
	isDMA       bool
	loadOnly    bool // a DMA whose inputs are all in HBM
	touchesPSUM bool
	sharedHBM   bool // HBM operands move by the instance's HBMOffset
	accs        []opAcc
	exprs       []opExpr
	maxLevel    int // the deepest loop level its expressions depend on
	keyLen      int
	// cached is one more than the last expression that depends on a loop
	// (whose values a walk caches; 0: none).
	cached      int
	start, stop int32 // multiply_moving flags (-1: none)
	// one is the op's first body (its key's hash oneHash), bodies the
	// others by hash: most of a long program's ops (a collective's
	// transfers, a decode's weight loads) have one body.
	one     *bodyMeta
	oneHash uint64
	bodies  map[uint64]*bodyMeta
	// templates are the op's bodies by their key on no core, the buffers
	// canonical: another rank's instance of the same body is a copy moved
	// to its own buffers (cloneBody).
	templates map[uint64]*bodyMeta
	// The latest instance, for ordering edges.
	lastStream int32
	lastPos    int64
	lastValid  bool
	// issuer is the rank that triggers one of the scheduler's own
	// transfers (a collective's; -1 for the kernel's ops), what the
	// collective as the text form prints it, for messages.
	issuer int
	what   string
	// gate is the issuer's collective input tile the transfer waits for
	// whole (synth.gate; nil: none); with done, the output tile the nop
	// ending a collective waits for whole and stands for a write of.
	gate *tileInfo
	done bool
	// mirrored: a transfer kept for its image by symmetric-core reuse
	// (synth.mirrored).
	mirrored bool
}

type opAcc struct {
	acc   *tile.Access
	write bool
	Mem   isa.Memory
	Core  int
	// dims are the expressions of each dimension: indexes into the op's
	// exprs (-1: the whole dimension).
	dims [tile.MaxTileDims]struct{ start, stop int32 }
	step [tile.MaxTileDims]int64
	idx  [tile.MaxTileDims]bool
	// level[d] is the loop depth dimension d's bounds depend on (-1: none);
	// maxLevel the deepest of them (the rank's too).
	level    [tile.MaxTileDims]int
	maxLevel int
	// rank is the expression of a remote access's rank (-1: the
	// instance's own rank); perRank is set for a per-rank HBM tile.
	rank    int32
	perRank bool
	// Static facts of the tile, to skip pointer chasing per instance.
	ti      *tileInfo
	nd      int
	hbm     bool
	onChip  bool
	inCores bool
	// keyPos is where the operand's buffer starts in the op's body key;
	// its dimensions follow (start and stop, or the size for a shared HBM
	// operand).
	keyPos int
}

// opExpr is one expression of an op, compiled, with the loop depth of the
// innermost variable it uses (-1: constant, value holds it).
type opExpr struct {
	code  *tile.Code
	level int
	value int64
}

func (x *opExpr) eval(env []int64) int64 {
	if x.level < 0 {
		return x.value
	}
	return x.code.Eval(env)
}

// bodyMeta is a body the op has made, with what the scheduler derives
// from it once.
type bodyMeta struct {
	body *isa.Body
	key  []int64
	next *bodyMeta
	// spans are the on-chip operands' spans (empty when in HBM).
	spans []isa.Span
	// hbm are the HBM operands.
	hbm       []hbmOperand
	sharedHBM bool
	// Estimates: the issue interval and completion latency on the engine,
	// and a transfer's time on the DMA engines.
	intervalNs, latencyNs, xferNs float64
	// succ are the bodies the op's next instance had after this one.
	succ [2]*bodyMeta
	// inst is the body's Instruction with no wait, signal or offset,
	// shared by every such instance.
	inst *isa.Instruction
	// idx is the body's index in compiled.metas (metaStore); qsig a transfer's signal
	// of its queue's semaphore.
	idx  uint32
	qsig []isa.SemSignal
	// tkey is the body's template key (a template's; nil otherwise),
	// tnext the next template of its hash.
	tkey  []int64
	tnext *bodyMeta
}

// plain returns the body's shared Instruction with no wait, no signal and
// no HBM offset.
func (m *bodyMeta) plain() *isa.Instruction { return m.inst }

type hbmOperand struct {
	op    *isa.Operand
	acc   int // index into the instance's evaluated accesses
	write bool
	buf   *isa.Buffer
	idx   int32
}

// Program is a compiled kernel: an isa.Program whose streams the scheduler
// generates as the simulator asks for them, plus what it decided.
type Program struct {
	*isa.Program
	c *compiled
	// PeakSBUFBytes and PeakPSUMBytes are the placement's highest byte per
	// partition, by rank.
	PeakSBUFBytes, PeakPSUMBytes map[int]int64
	// Cores are the ranks the kernel uses (NeuronCores numbered across
	// chips: rank r is core r % CoresPerChip of chip r / CoresPerChip),
	// ascending.
	Cores []int
	// Notes say, in words, where the scheduler did not do what the options
	// asked (the kernel-wide collective algorithm rdh on a group that is
	// not a power of two runs ring), for the run's notes.
	Notes []string
	// SimulatedRanks, when not 0, is how many of a cores loop's
	// SymmetricRanks ranks symmetric-core reuse scheduled
	// (Options.SymmetricRanks); the others take their time.
	SimulatedRanks, SymmetricRanks int
}

// Compile checks a kernel against the target, places its tiles and
// returns its program. Errors in an op that show only when it executes
// (an access outside its tile for some iteration) come from the streams.
func Compile(k *tile.Kernel, tg *Target, opts Options) (*Program, error) {
	ex, lay, err := decide(k, tg, opts)
	if err != nil {
		return nil, err
	}
	lim := tg.Limits
	nRanks, perChip := ranksOf(lim)
	c := &compiled{k: k, tg: tg, opts: opts, lay: lay, canon: canonBuffers(lay), nQ: lim.DMAQueues, perCore: int(isa.NumEngines) + lim.DMAQueues,
		coreIdx: map[int]int{}, dmaEngines: int64(lim.DMAEngines), queuesPerEngine: opts.QueuesPerEngine,
		finalDist: int64(opts.FinalizeDistance), soloBuf: opts.SoloBuffer, perChip: perChip, ex: ex}
	// Queues are handed out in order; with QoS arbitration class by class
	// (0, k, 2k, ..., then 1, 1+k, ...), so an engine's queues share a
	// priority.
	// Queues an op pins are left out of the automatic hand-out, so that
	// kernels that pin queues compose with kernels that do not (the pins
	// stay theirs whatever the others take first).
	pinned := map[int]bool{}
	for _, op := range k.Ops {
		if op.QueuePinned {
			pinned[int(op.Attrs.Queue)] = true
		}
	}
	for _, q := range ex.queues {
		pinned[q] = true
	}
	for cl := 0; cl < max(tg.DMAQoSClasses, 1); cl++ {
		for q := cl; q < c.nQ; q += max(tg.DMAQoSClasses, 1) {
			if !pinned[q] {
				c.qOrder = append(c.qOrder, q)
			}
		}
	}
	if len(c.qOrder) == 0 { // every queue pinned: the hand-out takes them in order
		for q := 0; q < c.nQ; q++ {
			c.qOrder = append(c.qOrder, q)
		}
	}
	if c.queuesPerEngine <= 0 {
		c.queuesPerEngine = 3
	}
	if c.finalDist <= 0 {
		c.finalDist = 4096
	}
	if c.soloBuf <= 0 {
		// (At least soloSlack instructions a stream: over many ranks the
		// streams' demands drift apart by more than a fixed buffer, and
		// every stream that detaches walks the whole program again, with
		// state of its own for every stream.)
		c.soloBuf = max(1<<17, soloSlack*c.nStreams())
	}
	c.aggGBps = tg.DMAEngineGBps * float64(lim.DMAEngines)
	c.coreSlot = make([]int, nRanks)
	for i := range c.coreSlot {
		c.coreSlot[i] = -1
	}
	for i, core := range lay.cores {
		c.coreIdx[core] = i
		c.coreSlot[core] = i
	}
	depths := loopDepths(k)
	c.depths = depths
	c.loops, c.conds = make([]*loopInfo, k.Blocks), make([]*tile.Code, k.Blocks)
	var cc tile.Compiler
	var prep func(stmts []tile.Stmt)
	prep = func(stmts []tile.Stmt) {
		for _, s := range stmts {
			switch s := s.(type) {
			case *tile.Loop:
				step, _ := s.Step.Const()
				c.loops[s.ID] = &loopInfo{loop: s, start: cc.Compile(s.Start), stop: cc.Compile(s.Stop), step: step, lockstep: ex.loops[s]}
				prep(s.Body)
			case *tile.If:
				c.conds[s.ID] = cc.Compile(s.Cond)
				prep(s.Then)
				prep(s.Else)
			}
		}
	}
	prep(k.Body)
	for _, li := range c.loops {
		if li != nil {
			li.batch = batchable(li.loop)
		}
	}
	for _, op := range append(append([]*tile.Op(nil), k.Ops...), ex.ops...) {
		oi := &opInfo{op: op, isDMA: op.Opcode.IsDMA(), start: -1, stop: -1, maxLevel: -1, issuer: -1}
		if x, ok := ex.what[op]; ok {
			oi.issuer, oi.what = x.issuer, x.what
			if x.gate != nil {
				oi.gate = lay.tiles[x.gate.ID]
			}
			if x.done != nil {
				oi.gate, oi.done = lay.tiles[x.done.ID], true
			}
			oi.mirrored = x.mirrored
		}
		addExpr := func(e tile.Expr) int32 {
			// A constant needs no code (most of a collective's transfers'
			// expressions are).
			if v, ok := e.Const(); ok {
				oi.exprs = append(oi.exprs, opExpr{level: -1, value: v})
				return int32(len(oi.exprs) - 1)
			}
			x := opExpr{code: cc.Compile(e), level: -1}
			for _, v := range x.code.Vars {
				x.level = max(x.level, depths[v])
			}
			if x.level < 0 {
				x.value, x.code = x.code.Eval(nil), nil
			} else {
				oi.cached = len(oi.exprs) + 1
			}
			oi.exprs = append(oi.exprs, x)
			return int32(len(oi.exprs) - 1)
		}
		oi.loadOnly = oi.isDMA
		nHBM := 0
		add := func(a *tile.Access, write bool) {
			oa := opAcc{acc: a, write: write, Mem: a.Tile.Mem, Core: a.Tile.Core, rank: -1}
			if !a.Rank.IsZero() {
				oa.rank = addExpr(a.Rank)
			}
			for d := range a.Tile.Shape {
				oa.dims[d].start, oa.dims[d].stop, oa.step[d] = -1, -1, 1
				if d < len(a.Ranges) {
					r := &a.Ranges[d]
					oa.dims[d].start = addExpr(r.Start)
					oa.idx[d] = r.Index
					if !r.Index {
						oa.dims[d].stop = addExpr(r.Stop)
						oa.step[d] = r.Step
					}
				}
			}
			oa.maxLevel = -1
			if oa.rank >= 0 {
				oa.maxLevel = oi.exprs[oa.rank].level
				oi.maxLevel = max(oi.maxLevel, oa.maxLevel)
			}
			for d := range a.Tile.Shape {
				oa.level[d] = -1
				for _, x := range []int32{oa.dims[d].start, oa.dims[d].stop} {
					if x >= 0 {
						oa.level[d] = max(oa.level[d], oi.exprs[x].level)
					}
				}
				oi.maxLevel = max(oi.maxLevel, oa.level[d])
				oa.maxLevel = max(oa.maxLevel, oa.level[d])
			}
			oa.ti, oa.nd = lay.tiles[a.Tile.ID], len(a.Tile.Shape)
			oa.hbm, oa.onChip, oa.inCores = a.Tile.Mem == isa.MemHBM, a.Tile.Mem.OnChip(), oa.ti.inCores
			oa.perRank = oa.hbm && oa.ti.perRank
			oi.accs = append(oi.accs, oa)
			if a.Tile.Mem == isa.MemPSUM {
				oi.touchesPSUM = true
			}
			if a.Tile.Mem == isa.MemHBM {
				nHBM++
			} else if !write {
				oi.loadOnly = false
			}
		}
		for i := range op.Outs {
			add(&op.Outs[i], true)
		}
		for i := range op.Ins {
			add(&op.Ins[i], false)
		}
		oi.sharedHBM = nHBM == 1
		// The body key: engine, queue, DGE, core, flags, then per operand
		// its buffer and its dimensions.
		oi.keyLen = keyHead
		for i := range oi.accs {
			a := &oi.accs[i]
			a.keyPos = oi.keyLen
			if a.hbm && oi.sharedHBM {
				oi.keyLen += 1 + a.nd
			} else {
				oi.keyLen += 1 + 2*a.nd
			}
		}
		if !op.Start.IsZero() {
			oi.start = addExpr(op.Start)
			oi.maxLevel = max(oi.maxLevel, oi.exprs[oi.start].level)
		}
		if !op.Stop.IsZero() {
			oi.stop = addExpr(op.Stop)
			oi.maxLevel = max(oi.maxLevel, oi.exprs[oi.stop].level)
		}
		c.ops = append(c.ops, oi)
	}
	for _, li := range c.loops {
		if li != nil && li.batch {
			li.nest = c.newNest(li.loop)
		}
	}
	c.markCompounds(k.Body)
	c.rel = newReleaser(c)
	c.possible = possibleStreams(c)
	prog := &isa.Program{Version: isa.AssemblyVersion, Target: tg.Name, Buffers: lay.buffers}
	for ci, core := range lay.cores {
		for _, e := range isa.AllEngines() {
			chip, cr := c.chipCore(core)
			key := isa.StreamKey{Chip: chip, Core: cr, Engine: e}
			idx := ci*c.perCore + int(e)
			prog.Streams = append(prog.Streams, isa.StreamSource{Key: key, Count: -1, Open: func() isa.Stream {
				return newSolo(c, idx)
			}})
		}
	}
	prog.OpenAll = func() []isa.Stream { return newSession(c).streams() }
	return &Program{Program: prog, c: c, PeakSBUFBytes: lay.peakSBUF, PeakPSUMBytes: lay.peakPSUM, Cores: lay.cores, Notes: ex.notes,
		SimulatedRanks: len(ex.unit), SymmetricRanks: ex.unitOf}, nil
}

// Check makes the decisions of Compile that can fail (the kernel's own
// checks, the semaphores it needs, the collectives' expansion, the tiles'
// placement and the ops' access rules) and returns the ranks the kernel
// uses, ascending, without compiling the program: what a check of a
// config needs (trnsim check, a sweep's check of its points). It fails
// where Compile fails, with the same error, since Compile makes the same
// decisions first (decide).
func Check(k *tile.Kernel, tg *Target, opts Options) (cores []int, err error) {
	_, lay, err := decide(k, tg, opts)
	if err != nil {
		return nil, err
	}
	return lay.cores, nil
}

// decide finishes the kernel if it is not, checks the semaphores it needs,
// expands its collectives, places its tiles and checks every op's
// accesses: every decision of Compile that can fail.
func decide(k *tile.Kernel, tg *Target, opts Options) (*expansion, *layout, error) {
	if len(k.Ops) == 0 && len(k.Body) > 0 {
		if err := k.Finish(); err != nil {
			return nil, nil, err
		}
	}
	lim := tg.Limits
	if lim.Semaphores < QueueSemBase+lim.DMAQueues {
		return nil, nil, fmt.Errorf("the scheduler needs %d semaphores per core; the hardware has %d", QueueSemBase+lim.DMAQueues, lim.Semaphores)
	}
	ex, err := expand(k, tg, opts)
	if err != nil {
		return nil, nil, err
	}
	lay, err := place(k, tg, ex)
	if err != nil {
		return nil, nil, err
	}
	for _, ops := range [][]*tile.Op{k.Ops, ex.ops} {
		for _, op := range ops {
			if err := checkAccesses(k, op, lay); err != nil {
				return nil, nil, err
			}
		}
	}
	return ex, lay, nil
}

// checkAccesses checks what an op may access: compute engines no HBM, and
// another rank's instance only a DMA of a per-rank HBM tile.
func checkAccesses(k *tile.Kernel, op *tile.Op, lay *layout) error {
	isDMA := op.Opcode.IsDMA()
	nHBM := 0
	for _, as := range [][]tile.Access{op.Outs, op.Ins} {
		for i := range as {
			if as[i].Tile.Mem == isa.MemHBM {
				nHBM++
			}
		}
	}
	if !isDMA && nHBM > 0 {
		return &OpError{Kernel: k.Name, File: k.File, Pos: op.Pos.String(), Op: tile.FormatOp(op),
			Msg: "compute engines cannot access HBM directly; move the data with a DMA"}
	}
	for _, as := range [][]tile.Access{op.Outs, op.Ins} {
		for i := range as {
			a := &as[i]
			perRank := a.Tile.Mem == isa.MemHBM && lay.tiles[a.Tile.ID].perRank
			if !a.Rank.IsZero() && (!perRank || !isDMA) {
				return &OpError{Kernel: k.Name, File: k.File, Pos: op.Pos.String(), Op: tile.FormatOp(op),
					Msg: fmt.Sprintf("%s@...: only DMA ops access another rank's instance, and only of a per-rank HBM tile", a.Tile.Name)}
			}
		}
	}
	return nil
}

// possibleStreams returns which engine streams may receive instructions:
// an op's pinned engine, or the engines the scheduler may choose for it,
// on the cores it may run on.
func possibleStreams(c *compiled) []bool {
	out := make([]bool, c.nStreams())
	lim := c.tg.Limits
	dge := c.opts.DGE
	if c.opts.DGEAuto {
		dge = isa.DGENone
		if lim.HardwareDGE {
			dge = isa.DGEHardware
		}
	}
	var walk func(stmts []tile.Stmt, cores []int)
	walk = func(stmts []tile.Stmt, cores []int) {
		for _, s := range stmts {
			switch s := s.(type) {
			case *tile.Loop:
				cs := cores
				if s.Kind == tile.Cores {
					cs = c.ex.coresOf(s)
				}
				walk(s.Body, cs)
			case *tile.If:
				walk(s.Then, cores)
				walk(s.Else, cores)
			case *tile.Op:
				oi := c.ops[s.ID]
				cs := cores
				if cs == nil {
					cs = []int{c.lay.cores[0]}
					for _, a := range oi.accs {
						if a.Mem.OnChip() {
							cs = []int{a.Core}
							break
						}
					}
				}
				var engs []isa.Engine
				switch {
				case !s.Any:
					engs = []isa.Engine{s.Engine}
				case oi.isDMA:
					d := dge
					if s.DGESet {
						d = s.Attrs.DGE
					}
					if s.Opcode == isa.OpDMAGather || s.Opcode == isa.OpDMAScatter {
						d = isa.DGESoftware
					}
					switch d {
					case isa.DGEHardware:
						engs = []isa.Engine{isa.EngineSync, isa.EngineScalar}
					case isa.DGESoftware:
						engs = []isa.Engine{isa.EngineGpSimd}
					default:
						engs = []isa.Engine{isa.EngineSync, isa.EngineScalar, isa.EngineGpSimd}
					}
				default:
					engs = []isa.Engine{isa.EngineVector, isa.EngineScalar, isa.EngineGpSimd}
				}
				for _, core := range cs {
					ci := c.slotOf(core)
					if ci < 0 {
						continue
					}
					for _, e := range engs {
						if oi.isDMA || s.Opcode.RunsOn(e) {
							out[c.engineStream(ci, e)] = true
						}
					}
				}
			}
		}
	}
	walk(c.k.Body, nil)
	// The collectives' transfers, on the engine and rank they name.
	for _, oi := range c.ops {
		if oi.issuer >= 0 {
			if ci := c.slotOf(oi.issuer); ci >= 0 {
				out[c.engineStream(ci, oi.op.Engine)] = true
			}
		}
	}
	return out
}

// loopDepths returns, for every loop variable, the depth of its loop (0:
// outermost).
func loopDepths(k *tile.Kernel) []int {
	d := make([]int, len(k.Vars))
	var walk func(stmts []tile.Stmt, depth int)
	walk = func(stmts []tile.Stmt, depth int) {
		for _, s := range stmts {
			switch s := s.(type) {
			case *tile.Loop:
				d[s.Var.Index] = depth
				walk(s.Body, depth+1)
			case *tile.If:
				walk(s.Then, depth)
				walk(s.Else, depth)
			}
		}
	}
	walk(k.Body, 0)
	return d
}

// body returns the body of the current instance of an op on engine eng
// (for a DMA: triggered by eng on queue q with descriptor generation dge;
// q < 0 for compute), made on first use.
func (w *walk) body(oi *opInfo, core int, eng isa.Engine, q int, dge isa.DGEKind) (*bodyMeta, error) {
	key := w.bodyKey(oi, core, eng, q, dge)
	// The body that followed the last one before is the likeliest.
	last := w.lastBody[oi.op.ID]
	if last != nil {
		for _, m := range last.succ {
			if m != nil && equalKey(m.key, key) {
				w.lastBody[oi.op.ID] = m
				return m, nil
			}
		}
	}
	m, err := w.lookupBody(oi, core, eng, q, dge, key)
	if err != nil {
		return nil, err
	}
	if last != nil && last.succ[0] != m {
		last.succ[1], last.succ[0] = last.succ[0], m
	}
	w.lastBody[oi.op.ID] = m
	return m, nil
}

// keyHead is the number of key entries before the operands'.
const keyHead = 5

// bodyKey returns the key of the current instance's body: everything the
// body depends on. The operands' part is kept up to date by evalAccesses.
func (w *walk) bodyKey(oi *opInfo, core int, eng isa.Engine, q int, dge isa.DGEKind) []int64 {
	key := w.accCache[oi.op.ID].key
	var flags int64
	if oi.start >= 0 && w.expr(oi, oi.start) != 0 {
		flags |= 1
	}
	if oi.stop >= 0 && w.expr(oi, oi.stop) != 0 {
		flags |= 2
	}
	key[0], key[1], key[2], key[3], key[4] = int64(eng), int64(q), int64(dge), int64(core), flags
	return key
}

// lookupBody returns the body with key, made on first use.
func (w *walk) lookupBody(oi *opInfo, core int, eng isa.Engine, q int, dge isa.DGEKind, key []int64) (*bodyMeta, error) {
	var flags int64
	if oi.start >= 0 && w.expr(oi, oi.start) != 0 {
		flags |= 1
	}
	if oi.stop >= 0 && w.expr(oi, oi.stop) != 0 {
		flags |= 2
	}
	h := hashKey(key)
	if m := oi.one; m != nil && oi.oneHash == h && equalKey(m.key, key) {
		return m, nil
	}
	for m := oi.bodies[h]; m != nil; m = m.next {
		if equalKey(m.key, key) {
			return m, nil
		}
	}
	// The same body on another rank is a template to copy (not for the
	// scheduler's own transfers, which one rank issues).
	var tkey []int64
	var th uint64
	var m *bodyMeta
	if len(w.c.lay.cores) > 1 && oi.issuer < 0 {
		tkey = w.templateKey(oi, key)
		th = hashKey(tkey)
		for t := oi.templates[th]; t != nil; t = t.tnext {
			if equalKey(t.tkey, tkey) {
				m = w.cloneBody(t, oi, core)
				break
			}
		}
	}
	if m == nil {
		var err error
		m, err = w.newBody(oi, core, eng, q, dge, flags)
		if err != nil {
			return nil, err
		}
		if tkey != nil {
			m.tkey = w.c.keepKey(tkey)
			if oi.templates == nil {
				oi.templates = map[uint64]*bodyMeta{}
			}
			m.tnext = oi.templates[th]
			oi.templates[th] = m
		}
	}
	m.key = w.c.keepKey(key)
	if oi.one == nil {
		oi.one, oi.oneHash = m, h
		return m, nil
	}
	if oi.bodies == nil {
		oi.bodies = map[uint64]*bodyMeta{}
	}
	m.next = oi.bodies[h]
	oi.bodies[h] = m
	return m, nil
}

// keepKey returns a copy of key that lives as long as the compiled
// kernel: the bodies' keys, kept together in chunks rather than one
// allocation (or one fixed buffer in every body) each.
func (c *compiled) keepKey(key []int64) []int64 {
	if cap(c.keys)-len(c.keys) < len(key) {
		c.keys = make([]int64, 0, max(keyChunk, len(key)))
	}
	n := len(c.keys)
	c.keys = append(c.keys, key...)
	return c.keys[n:len(c.keys):len(c.keys)]
}

// keyChunk is how many key entries keepKey allocates at a time.
const keyChunk = 8192

func hashKey(k []int64) uint64 {
	h := uint64(14695981039346656037)
	for _, v := range k {
		h ^= uint64(v)
		h *= 1099511628211
		h ^= h >> 29
	}
	return h
}

func equalKey(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// templateKey returns a body key with its core left out and its buffers
// canonical (in scratch: valid until the next call).
func (w *walk) templateKey(oi *opInfo, key []int64) []int64 {
	tk := append(w.tkeyBuf[:0], key...)
	tk[3] = -1
	for i := range oi.accs {
		kp := oi.accs[i].keyPos
		tk[kp] = int64(w.c.canon[tk[kp]])
	}
	w.tkeyBuf = tk
	return tk
}

// soloSlack is the instructions per stream the shared walk may buffer
// before a stream gets a walk of its own (Options.SoloBuffer's default
// is the larger of this times the streams and 2^17).
const soloSlack = 2048

// cloneBody makes the body of the current instance from template t, the
// same op's body on another rank whose template key is the instance's:
// the same operands but for their buffers, which differ only in where
// they are (each instance's buffer has its canonical buffer's tile, slot
// and partitions), so each operand moves by its buffer's offset, its
// chip and core become its buffer's, and the body's its rank's; the
// limits it was checked against and its estimates are the template's.
// The body is what newBody would make, for less.
func (w *walk) cloneBody(t *bodyMeta, oi *opInfo, core int) *bodyMeta {
	w.c.nextID++
	tb := t.body
	ba := newBodyAlloc(len(tb.Ins))
	b := ba.body
	*b = *tb
	chip, cr := w.c.chipCore(core)
	b.ID, b.Chip, b.Core = w.c.nextID, chip, cr
	ba.inst.Body = b
	m := ba.meta
	*m = bodyMeta{body: b, inst: ba.inst, sharedHBM: t.sharedHBM,
		intervalNs: t.intervalNs, latencyNs: t.latencyNs, xferNs: t.xferNs}
	w.c.metas.add(m)
	if t.qsig != nil {
		m.qsig = []isa.SemSignal{{Sem: isa.SemRef{Chip: chip, Core: cr, ID: t.qsig[0].Sem.ID}, Add: 1}}
	}
	bufs := w.c.lay.buffers
	if len(tb.Outs) <= len(ba.outs) && len(tb.Ins) <= len(ba.ins) {
		b.Outs, b.Ins = ba.outs[:len(tb.Outs):len(tb.Outs)], ba.ins[:len(tb.Ins):len(tb.Ins)]
	} else {
		b.Outs, b.Ins = make([]isa.Operand, len(tb.Outs)), make([]isa.Operand, len(tb.Ins))
	}
	copy(b.Outs, tb.Outs)
	copy(b.Ins, tb.Ins)
	nOut := len(b.Outs)
	if len(w.accs) <= len(ba.spans) {
		m.spans = ba.spans[:0:len(w.accs)]
	} else {
		m.spans = make([]isa.Span, 0, len(w.accs))
	}
	no, ni := 0, 0
	for i := range w.accs {
		var opnd *isa.Operand
		write := oi.accs[i].write
		if write {
			opnd = &b.Outs[no]
			no++
		} else {
			opnd = &b.Ins[ni]
			ni++
		}
		nb := w.accs[i].buf
		from, to := bufs[opnd.Buffer], bufs[nb]
		opnd.Buffer = nb
		opnd.AP = opnd.AP.Shifted(to.Offset - from.Offset)
		opnd.AP.Chip, opnd.AP.Core = to.Chip, to.Core
	}
	// Spans and HBM operands, in operand order (outputs first), as
	// newBody orders them.
	w.operandRecords(m, b, nOut, bufs)
	return m
}

// canonBuffers returns, for every buffer of the layout, the buffer that
// stands for it in body templates: the first buffer of the same tile and
// slot at the same partitions (on chip), over the ranks; itself when
// there is none.
func canonBuffers(lay *layout) []int32 {
	canon := make([]int32, len(lay.buffers))
	for i := range canon {
		canon[i] = int32(i)
	}
	for _, ti := range lay.tiles {
		for _, slots := range ti.bufs {
			for s, b := range slots {
				for _, first := range ti.bufs {
					if s >= len(first) {
						continue
					}
					f := first[s]
					if f == b {
						break
					}
					if lay.buffers[f].PartStart == lay.buffers[b].PartStart {
						canon[b] = f
						break
					}
				}
			}
		}
	}
	return canon
}

// bodyParts are the parts of one body that newBody and cloneBody make,
// allocated together (bodyAlloc, or bodyAlloc1 for a body of one input or
// none, most of them): its meta, the body, its shared Instruction, and
// room for the usual operand and span counts.
type bodyParts struct {
	meta      *bodyMeta
	body      *isa.Body
	inst      *isa.Instruction
	outs, ins []isa.Operand
	spans     []isa.Span
}

type bodyAlloc struct {
	meta  bodyMeta
	body  isa.Body
	inst  isa.Instruction
	outs  [1]isa.Operand
	ins   [2]isa.Operand
	spans [3]isa.Span
}

type bodyAlloc1 struct {
	meta  bodyMeta
	body  isa.Body
	inst  isa.Instruction
	outs  [1]isa.Operand
	ins   [1]isa.Operand
	spans [2]isa.Span
}

// newBodyAlloc allocates the parts of a body with nIns inputs.
func newBodyAlloc(nIns int) bodyParts {
	if nIns <= 1 {
		a := &bodyAlloc1{}
		return bodyParts{meta: &a.meta, body: &a.body, inst: &a.inst, outs: a.outs[:], ins: a.ins[:], spans: a.spans[:]}
	}
	a := &bodyAlloc{}
	return bodyParts{meta: &a.meta, body: &a.body, inst: &a.inst, outs: a.outs[:], ins: a.ins[:], spans: a.spans[:]}
}

// newBody makes the body of the current instance.
func (w *walk) newBody(oi *opInfo, core int, eng isa.Engine, q int, dge isa.DGEKind, flags int64) (*bodyMeta, error) {
	op := oi.op
	w.c.nextID++
	// One allocation for the body, its meta, its shared Instruction and,
	// for the usual operand counts, the operands and spans.
	nOuts := 0
	for i := range oi.accs {
		if oi.accs[i].write {
			nOuts++
		}
	}
	ba := newBodyAlloc(len(oi.accs) - nOuts)
	b := ba.body
	chip, cr := w.c.chipCore(core)
	*b = isa.Body{ID: w.c.nextID, Op: op.Opcode, Engine: eng, Chip: chip, Core: cr, Attrs: op.Attrs, OpID: op.OpID}
	if !op.Start.IsZero() {
		b.Attrs.Start = flags&1 != 0
	}
	if !op.Stop.IsZero() {
		b.Attrs.Stop = flags&2 != 0
	}
	if oi.isDMA {
		b.Attrs.Queue = int16(max(q, 0))
		b.Attrs.DGE = dge
	}
	ba.inst.Body = b
	m := ba.meta
	*m = bodyMeta{body: b, inst: ba.inst, sharedHBM: oi.sharedHBM}
	w.c.metas.add(m)
	if oi.isDMA {
		m.qsig = []isa.SemSignal{{Sem: isa.SemRef{Chip: chip, Core: cr, ID: int32(QueueSemBase + max(q, 0))}, Add: 1}}
	}
	bufs := w.c.lay.buffers
	if nOuts <= len(ba.outs) && len(oi.accs)-nOuts <= len(ba.ins) {
		b.Outs, b.Ins = ba.outs[:0:nOuts], ba.ins[:0:len(oi.accs)-nOuts]
	} else {
		b.Outs = make([]isa.Operand, 0, nOuts)
		b.Ins = make([]isa.Operand, 0, len(oi.accs)-nOuts)
	}
	for i := range w.accs {
		ae := &w.accs[i]
		a := oi.accs[i].acc
		buf := bufs[ae.buf]
		t := ae.ti.t
		var opnd isa.Operand
		var err error
		zero := t.Mem == isa.MemHBM && oi.sharedHBM
		if a.Rearrange != nil {
			opnd, err = w.rearranged(ae, a, buf, zero)
		} else {
			if cap(w.slices) < ae.nd {
				w.slices = make([]isa.Slice, ae.nd)
			}
			sl := w.slices[:ae.nd]
			for d := 0; d < ae.nd; d++ {
				st, sp := ae.starts[d], ae.stops[d]
				step := int64(1)
				index := false
				if d < len(a.Ranges) {
					step = a.Ranges[d].Step
					index = a.Ranges[d].Index
				}
				if zero {
					sp -= st
					st = 0
				}
				sl[d] = isa.Slice{Start: st, Stop: sp, Step: step, Index: index}
			}
			opnd, err = buf.View(ae.buf, sl...)
		}
		if err != nil {
			return nil, w.opErr(oi, "%v", err)
		}
		if oi.accs[i].write {
			b.Outs = append(b.Outs, opnd)
		} else {
			b.Ins = append(b.Ins, opnd)
		}
	}
	if err := w.c.tg.Limits.Check(m.inst); err != nil {
		return nil, w.opErr(oi, "%v", err)
	}
	// Spans and HBM operands, in operand order (outputs first).
	nOut := len(b.Outs)
	if len(w.accs) <= len(ba.spans) {
		m.spans = ba.spans[:0:len(w.accs)]
	} else {
		m.spans = make([]isa.Span, 0, len(w.accs))
	}
	w.operandRecords(m, b, nOut, bufs)
	// Estimates from the simulator's own cost table.
	tg := w.c.tg
	cost := tg.Cost.CostOf(m.inst, 128, &w.costEnv)
	ghz := tg.ClockGHz[eng]
	if ghz <= 0 {
		ghz = 1
	}
	m.intervalNs = float64(cost.IntervalCycles) / ghz
	m.latencyNs = float64(cost.LatencyCycles) / ghz
	if oi.isDMA {
		bytes := max(b.Outs[0].AP.Bytes(), b.Ins[0].AP.Bytes())
		if w.c.aggGBps > 0 {
			m.xferNs = float64(bytes) / w.c.aggGBps
		}
	}
	return m, nil
}

// rearrKey names a rearrangement applied to dimension sizes and strides.
type rearrKey struct {
	r            *tile.Rearrange
	n            int
	sizes, strds [tile.MaxTileDims]int64
}

type rearrDims struct{ sizes, strides []int64 }

// rearrangeDims is r.Dims(sizes, strides), remembered: the bodies of one
// access differ in their offsets far more often than in their sizes.
func (w *walk) rearrangeDims(r *tile.Rearrange, sizes, strides []int64) ([]int64, []int64, error) {
	if len(sizes) > tile.MaxTileDims {
		return r.Dims(sizes, strides)
	}
	k := rearrKey{r: r, n: len(sizes)}
	copy(k.sizes[:], sizes)
	copy(k.strds[:], strides)
	if d, ok := w.rearrs[k]; ok {
		return d.sizes, d.strides, nil
	}
	os, ost, err := r.Dims(sizes, strides)
	if err != nil {
		return nil, nil, err
	}
	if w.rearrs == nil {
		w.rearrs = map[rearrKey]rearrDims{}
	}
	w.rearrs[k] = rearrDims{os, ost}
	return os, ost, nil
}

// rearranged builds a rearranged HBM operand: the slice's dimensions,
// split and permuted; the first output dimension is the row dimension.
func (w *walk) rearranged(ae *accEval, a *tile.Access, buf *isa.Buffer, zero bool) (isa.Operand, error) {
	t := ae.ti.t
	strides := make([]int64, ae.nd)
	acc := int64(1)
	for d := ae.nd - 1; d >= 0; d-- {
		strides[d] = acc
		acc *= t.Shape[d]
	}
	var sizes, sst []int64
	off := int64(0)
	for d := 0; d < ae.nd; d++ {
		step := int64(1)
		index := false
		if d < len(a.Ranges) {
			step, index = a.Ranges[d].Step, a.Ranges[d].Index
		}
		if !zero {
			off += ae.starts[d] * strides[d]
		}
		if index {
			continue
		}
		n := (ae.stops[d] - ae.starts[d] + step - 1) / step
		sizes = append(sizes, n)
		sst = append(sst, strides[d]*step)
	}
	os, ost, err := w.rearrangeDims(a.Rearrange, sizes, sst)
	if err != nil {
		return isa.Operand{}, err
	}
	dims := make([]isa.Dim, len(os))
	for i := range os {
		dims[i] = isa.Dim{Size: os[i], Stride: ost[i]}
	}
	// Size-1 free dimensions and contiguous ones collapse (at most four
	// free dimensions reach the hardware).
	if len(dims) > 1 {
		var free []isa.Dim
		for _, d := range dims[1:] {
			if d.Size == 1 {
				continue
			}
			if n := len(free); n > 0 && free[n-1].Stride == d.Stride*d.Size {
				free[n-1] = isa.Dim{Size: free[n-1].Size * d.Size, Stride: d.Stride}
				continue
			}
			free = append(free, d)
		}
		dims = append(dims[:1], free...)
	}
	return buf.Raw(ae.buf, 0, 0, off, dims)
}

// operandRecords appends to m the spans of b's on-chip operands and its
// HBM operands, in operand order (the nOut outputs first), the walk's
// accesses w.accs giving each its buffer.
func (w *walk) operandRecords(m *bodyMeta, b *isa.Body, nOut int, bufs []*isa.Buffer) {
	for i := range w.accs {
		var opnd *isa.Operand
		write := i < nOut
		if write {
			opnd = &b.Outs[i]
		} else {
			opnd = &b.Ins[i-nOut]
		}
		ap := &opnd.AP
		if ap.Mem.OnChip() {
			lo, hi := ap.ByteSpan()
			m.spans = append(m.spans, isa.Span{Mem: ap.Mem, Write: write, Chip: ap.Chip, Core: ap.Core,
				PartLo: ap.PartStart, PartHi: ap.PartStart + ap.PartCount, Lo: lo, Hi: hi})
			continue
		}
		m.hbm = append(m.hbm, hbmOperand{op: opnd, acc: i, write: write, buf: bufs[w.accs[i].buf], idx: w.accs[i].buf})
	}
}

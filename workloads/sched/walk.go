package sched

import (
	"fmt"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/tile"
)

// A walk executes a kernel's loop tree in program order, one op instance
// (one instruction) at a time, keeping the scheduler's whole state: the
// dependency records, every stream's position, knowledge and marks, the
// estimates, and the instructions of the streams it keeps. It is
// deterministic: walks of one compiled kernel make the same decisions, so
// a stream may be served by a walk of its own.
type walk struct {
	c     *compiled
	env   []int64
	stack []frame
	// stamp[d] changes whenever the loop at depth d moves (or starts); an
	// op's cached expression values are valid while the stamp of their
	// level is unchanged.
	stamp    []uint64
	tick     uint64
	cache    [][]exprCache
	accCache []accCache
	lastBody []*bodyMeta
	depth    int
	tileInst []int64
	streams  []*stream
	tr       *tracker
	// gen counts the instructions made so far.
	gen int64
	// pending are compute instructions whose signal is not yet final, in
	// the order they were made.
	pending []pendingFinal
	phead   int
	err     error
	done    bool
	// qOwner[core][queue] is the engine that triggers the queue (-1: none).
	qOwner  [][]int
	qNext   []int
	dmaFree []float64

	// bt collects the instances of a batched loop nest.
	bt batch
	// comp is the compound nest being recorded (nil: none).
	comp *compRecord
	// memo scratch
	memoBuf        []int64
	memoLo, memoHi []int64
	segs           [][]segCache
	bounds         [][]boundsCache

	// deps collects the dependencies of the instance being scheduled.
	deps depSet
	// mdeps collects a mirrored transfer's destination conflicts, keepSkip
	// the position on its own queue they need (-1: none; writeConflictOn).
	mdeps    depSet
	keepSkip int64
	// scratch
	accs     []accEval
	key      []int64
	waitBuf  []waitCand
	slabIns  []isa.Instruction
	slabWait []isa.SemWait
	slabSig  []isa.SemSignal
	// held counts the instructions the streams hold (stream.held).
	held int
	// passed is the units the walk has passed, checkpoints where it stood
	// when it passed them, safe the units before which it holds nothing
	// (release.go).
	passed      int
	checkpoints []checkpoint
	safe        int
	// va makes the streams' clocks; none knows nothing.
	va   *vcAlloc
	none vclock
	// slices and costEnv are scratch for making bodies; rearrs remembers
	// rearranged dimensions.
	slices  []isa.Slice
	tkeyBuf []int64
	costEnv isa.CostEnv
	rearrs  map[rearrKey]rearrDims
}

type frame struct {
	stmts []tile.Stmt
	pc    int
	loop  *tile.Loop
	stop  int64
	step  int64
	cores bool
	// ph, for a cores loop walked in lockstep or a collective outside
	// the cores loops, is its phases: phase runs for every rank (iter
	// indexes ph.ranks) before the next; rank is the iteration's rank and
	// base the loop's tiles' instances when it started.
	ph    *phased
	phase int
	iter  int
	rank  int
	base  []int64
	// For a cores loop walked in lockstep, outer is the tile instances at
	// its start and insts[i] rank ph.ranks[i]'s own, made on its first
	// phase: each rank's tiles rotate through their slots as they would
	// in a walk of that rank alone, whatever the ranks before it did.
	outer []int64
	insts [][]int64
}

// accCache is an op's last evaluated operands and the loop stamps they
// were evaluated at.
type accCache struct {
	accs   []accEval
	key    []int64
	stamps []uint64
	core   int
	valid  bool
}

type exprCache struct {
	stamp uint64
	value int64
}

// pendingFinal is a run of n compute instructions of one stream,
// positions pos.., made when the walk had made gen instructions (the last
// at gen+n-1); the run becomes final once the walk is FinalizeDistance
// past its last.
type pendingFinal struct {
	stream int32
	n      int32
	pos    int64
	gen    int64
}

type waitCand struct {
	stream int32
	dep    int64 // the position needed
	pos    int64 // the mark waited for
	count  int64
	est    float64
	// m is the mark waited for (valid while waits runs: a stream's marks
	// change only when it is marked, once a call).
	m    *mark
	drop bool
}

// knows returns the position of stream s the candidate's mark knows
// complete.
func (c *waitCand) knows(a *vcAlloc, s int32) int64 {
	m := c.m
	if m.clock.d != nil {
		return m.clock.d[s]
	}
	k := m.clock.get(a, s)
	if s == m.trig {
		k = max(k, m.trigPos)
	}
	return k
}

// accEval is one operand of an op instance, evaluated.
type accEval struct {
	ti     *tileInfo
	buf    int32
	nd     int
	starts [tile.MaxTileDims]int64
	stops  [tile.MaxTileDims]int64
	// hbmOff is the byte offset of the slice's start in its HBM tensor.
	hbmOff int64
}

func newWalk(c *compiled) *walk {
	n := c.nStreams()
	// With symmetric-core reuse, shadow streams after the streams keep the
	// mirrored transfers' records (tracker.shadow).
	nRec := n
	if c.ex != nil && c.ex.unit != nil {
		nRec = 2 * n
	}
	w := &walk{c: c, env: make([]int64, len(c.k.Vars)), tileInst: make([]int64, len(c.lay.tiles)),
		tr: newTracker(len(c.lay.cores), c.tg.Limits.SBUFPartitionBytes, c.tg.Limits.PSUMPartitionBytes, nRec)}
	if nRec > n {
		w.tr.shadow = int32(n)
	}
	w.va = newVCAlloc(n)
	w.none = w.va.noKnowledge()
	for ci, core := range c.lay.cores {
		chip, cr := c.chipCore(core)
		for k := 0; k < c.perCore; k++ {
			s := &stream{core: ci, queue: -1, lastMark: -1, newest: -1, finalTo: -1, held: &w.held}
			if k < int(isa.NumEngines) {
				s.engine = isa.Engine(k)
				s.sem = isa.SemRef{Chip: chip, Core: cr, ID: int32(k)}
				s.mult = 1
				s.know = w.va.mutable()
			} else {
				s.queue = k - int(isa.NumEngines)
				s.sem = isa.SemRef{Chip: chip, Core: cr, ID: int32(QueueSemBase + s.queue)}
				s.mult = c.dmaEngines
			}
			s.signal1 = []isa.SemSignal{{Sem: s.sem, Add: 1}}
			w.streams = append(w.streams, s)
		}
		own := make([]int, c.nQ)
		for i := range own {
			own[i] = -1
		}
		w.qOwner = append(w.qOwner, own)
		w.qNext = append(w.qNext, 0)
		w.dmaFree = append(w.dmaFree, 0)
	}
	w.deps = newDepSet(nRec)
	w.keepSkip = -1
	w.stack = append(w.stack, frame{stmts: c.k.Body})
	w.stamp = make([]uint64, len(c.k.Vars)+1)
	w.cache = make([][]exprCache, len(c.ops))
	w.accCache = make([]accCache, len(c.ops))
	w.lastBody = make([]*bodyMeta, len(c.ops))
	// One allocation for every op's expression cache (constants have none).
	n = 0
	for _, oi := range c.ops {
		n += oi.cached
	}
	caches := make([]exprCache, n)
	for i, oi := range c.ops {
		w.cache[i], caches = caches[:oi.cached:oi.cached], caches[oi.cached:]
		if oi.maxLevel >= 0 {
			w.accCache[i].stamps = make([]uint64, oi.maxLevel+1)
		}
	}
	c.rel.register(w)
	return w
}

// step advances the walk by one instruction (or to its end).
func (w *walk) step() {
	if w.done || w.err != nil {
		return
	}
	w.progress()
	for len(w.stack) > 0 {
		f := &w.stack[len(w.stack)-1]
		if f.pc >= len(f.stmts) && f.ph != nil {
			if w.nextPhase(f) {
				continue
			}
			if f.loop != nil {
				w.depth--
				// After the loop, the instances of its last rank.
				if n := len(f.insts); n > 0 && f.insts[n-1] != nil {
					copy(f.outer, f.insts[n-1])
				}
				w.tileInst = f.outer
				for i, t := range f.loop.Tiles {
					w.tileInst[t.ID] = f.base[i] + int64(len(f.ph.ranks))
				}
			}
			w.stack = w.stack[:len(w.stack)-1]
			continue
		}
		if f.pc >= len(f.stmts) {
			if f.loop != nil {
				v := f.loop.Var.Index
				w.env[v] += f.step
				if w.env[v] < f.stop {
					f.pc = 0
					w.tick++
					w.stamp[w.depth-1] = w.tick
					w.newIteration(f.loop)
					continue
				}
				w.depth--
			}
			w.stack = w.stack[:len(w.stack)-1]
			if w.bt.active && len(w.stack) == w.bt.depth {
				// The batched loop is done.
				w.bt.active = false
				if w.flushBatch() {
					return
				}
			}
			if w.comp != nil && len(w.stack) == w.comp.depth {
				w.finishCompound()
			}
			continue
		}
		s := f.stmts[f.pc]
		f.pc++
		switch s := s.(type) {
		case *tile.Loop:
			li := w.c.loops[s.ID]
			start, stop := li.start.Eval(w.env), li.stop.Eval(w.env)
			step := li.step
			if start >= stop {
				continue
			}
			if li.compound && w.comp == nil && !w.bt.active && li.nest.ok {
				if w.enterCompound(li.nest, w.loopCore()) {
					return
				}
			}
			if li.batch && !w.bt.active {
				if n := li.nest; n != nil && n.ok {
					core := w.loopCore()
					if key, h, ok := w.memoKey(n, core); ok {
						if me := n.lookup(key, h); me != nil {
							w.replay(me, w.c.slotOf(core))
							w.advanceTiles(n, me.deltas)
							return
						}
						w.bt.record, w.bt.recordKey, w.bt.recordHash = n, append(w.bt.recordKey[:0], key...), h
						w.bt.recordInst = w.tileInsts(n, w.bt.recordInst)
					} else {
						n.ok = false
					}
				}
				w.bt.active, w.bt.depth = true, len(w.stack)
			}
			if li.lockstep != nil {
				base := make([]int64, len(s.Tiles))
				for i, t := range s.Tiles {
					base[i] = w.tileInst[t.ID]
				}
				w.stack = append(w.stack, frame{loop: s, cores: true, ph: li.lockstep, iter: -1, base: base,
					outer: w.tileInst, insts: make([][]int64, len(li.lockstep.ranks))})
				w.depth++
				continue
			}
			w.env[s.Var.Index] = start
			w.stack = append(w.stack, frame{stmts: s.Body, loop: s, stop: stop, step: step, cores: s.Kind == tile.Cores})
			w.tick++
			w.stamp[w.depth] = w.tick
			w.depth++
			w.newIteration(s)
		case *tile.If:
			body := s.Then
			if w.c.conds[s.ID].Eval(w.env) == 0 {
				body = s.Else
			}
			if len(body) > 0 {
				w.stack = append(w.stack, frame{stmts: body})
			}
		case *tile.Op:
			if w.bt.active {
				if err := w.collectInstance(w.c.ops[s.ID]); err != nil {
					w.err = err
					return
				}
				if len(w.bt.insts) >= batchMax && w.flushBatch() {
					return
				}
				continue
			}
			if err := w.emit(w.c.ops[s.ID]); err != nil {
				w.err = err
				return
			}
			w.gen++
			w.finalize(false)
			return
		case *tile.Collective:
			// Outside the cores loops: its steps, each over its group.
			if ph := w.c.ex.colls[s]; ph != nil {
				w.stack = append(w.stack, frame{cores: true, ph: ph, iter: -1})
			}
		}
	}
	w.done = true
	w.finalize(true)
	w.progress()
}

// nextPhase moves a lockstep frame to its next (phase, rank) with
// statements, reporting false when every phase is done. The loop's tiles
// keep the instance each rank had: that of its iteration in a walk of the
// loop in order.
func (w *walk) nextPhase(f *frame) bool {
	ph := f.ph
	for {
		f.iter++
		if f.iter >= len(ph.ranks) {
			f.iter = 0
			f.phase++
		}
		if f.phase >= len(ph.phases) {
			return false
		}
		stmts := ph.phases[f.phase].stmtsFor(f.iter)
		if len(stmts) == 0 {
			continue
		}
		f.stmts, f.pc, f.rank = stmts, 0, ph.ranks[f.iter]
		if f.loop != nil {
			w.env[f.loop.Var.Index] = int64(f.rank)
			w.tick++
			w.stamp[w.depth-1] = w.tick
			inst := f.insts[f.iter]
			if inst == nil {
				// The rank's first phase: its own instances, from the loop's
				// start, and one new instance of the loop's tiles.
				inst = append([]int64(nil), f.outer...)
				for i, t := range f.loop.Tiles {
					inst[t.ID] = f.base[i] + 1
				}
				f.insts[f.iter] = inst
			}
			w.tileInst = inst
		}
		return true
	}
}

// frameRank returns the rank of a cores frame.
func (w *walk) frameRank(f *frame) int {
	if f.loop != nil {
		return int(w.env[f.loop.Var.Index])
	}
	return f.rank
}

// loopCore returns the core of the enclosing cores loop, or the first.
func (w *walk) loopCore() int {
	for i := len(w.stack) - 1; i >= 0; i-- {
		if w.stack[i].cores {
			return w.frameRank(&w.stack[i])
		}
	}
	return w.c.lay.cores[0]
}

// newIteration starts a new instance of every tile the loop declares.
func (w *walk) newIteration(l *tile.Loop) {
	for _, t := range l.Tiles {
		w.tileInst[t.ID]++
	}
}

// slot returns the slot the current instance of t uses.
func (w *walk) slot(t *tile.Tile) int {
	if t.Scope == nil || t.Bufs == 1 {
		return 0
	}
	return int((w.tileInst[t.ID] - 1) % int64(t.Bufs))
}

// coreOf returns the core an op instance runs on: the enclosing cores
// loop's, or the core of its first on-chip operand, or the first core.
func (w *walk) coreOf(oi *opInfo) int {
	if oi.issuer >= 0 {
		return oi.issuer
	}
	for i := len(w.stack) - 1; i >= 0; i-- {
		if w.stack[i].cores {
			return w.frameRank(&w.stack[i])
		}
	}
	for _, a := range oi.accs {
		if a.Mem.OnChip() {
			return a.Core
		}
	}
	return w.c.lay.cores[0]
}

func (w *walk) opErr(oi *opInfo, format string, args ...any) error {
	what := oi.what
	if what == "" {
		what = tile.FormatOp(oi.op)
	}
	return &OpError{Kernel: w.c.k.Name, File: w.c.k.File, Pos: oi.op.Pos.String(), Op: what, Msg: fmt.Sprintf(format, args...)}
}

// expr returns the value of the op's expression i for the current
// iteration: computed again only when a loop it depends on has moved.
func (w *walk) expr(oi *opInfo, i int32) int64 {
	x := &oi.exprs[i]
	if x.level < 0 {
		return x.value
	}
	c := &w.cache[oi.op.ID][i]
	if st := w.stamp[x.level]; c.stamp != st {
		c.stamp, c.value = st, x.code.Eval(w.env)
	}
	return c.value
}

// evalAccesses evaluates the op's operands for the current iteration. The
// op's last evaluation is kept: only dimensions whose bounds depend on a
// loop that moved since are evaluated again. It keeps the operands' part of
// the op's body key up to date too.
func (w *walk) evalAccesses(oi *opInfo, core int) error {
	ac := &w.accCache[oi.op.ID]
	// m: the outermost level that moved since the last instance.
	m := -1
	if ac.valid && ac.core == core {
		m = oi.maxLevel + 1
		for l := 0; l <= oi.maxLevel; l++ {
			if ac.stamps[l] != w.stamp[l] {
				m = l
				break
			}
		}
	} else {
		if len(ac.accs) != len(oi.accs) || ac.key == nil {
			ac.accs = make([]accEval, len(oi.accs))
			ac.key = make([]int64, oi.keyLen)
			for i := range oi.accs {
				ac.accs[i].ti, ac.accs[i].nd = oi.accs[i].ti, oi.accs[i].nd
			}
		}
	}
	for l := max(m, 0); l <= oi.maxLevel; l++ {
		ac.stamps[l] = w.stamp[l]
	}
	ac.valid, ac.core = true, core
	w.accs = ac.accs
	key := ac.key
	for i := range oi.accs {
		a := &oi.accs[i]
		ae := &ac.accs[i]
		if a.onChip {
			c := a.ti.t.Core
			if a.inCores {
				c = core
			}
			var bufs []int32
			if c >= 0 && c < len(a.ti.bufs) {
				bufs = a.ti.bufs[c]
			}
			if bufs == nil {
				ac.valid = false
				return w.opErr(oi, "tile %s does not exist on core %d", a.ti.t.Name, c)
			}
			ae.buf = bufs[w.slot(a.ti.t)]
		} else if a.perRank {
			r := core
			if a.rank >= 0 {
				r = int(w.expr(oi, a.rank))
			}
			var bufs []int32
			if r >= 0 && r < len(a.ti.bufs) {
				bufs = a.ti.bufs[r]
			}
			if bufs == nil {
				ac.valid = false
				return w.opErr(oi, "%s", w.noInstance(a.ti, r))
			}
			ae.buf = bufs[0]
		} else {
			ae.buf = a.ti.bufs[0][0]
		}
		kp := a.keyPos
		key[kp] = int64(ae.buf)
		if a.maxLevel < m {
			continue
		}
		shared := a.hbm && oi.sharedHBM
		for d := 0; d < ae.nd; d++ {
			if a.level[d] < m {
				continue
			}
			dm := a.dims[d]
			var st, sp int64
			if dm.start < 0 {
				st, sp = 0, a.ti.t.Shape[d]
			} else {
				st = oi.exprs[dm.start].eval(w.env)
				sp = st + 1
				if dm.stop >= 0 {
					sp = oi.exprs[dm.stop].eval(w.env)
				}
				if st < 0 || sp > a.ti.t.Shape[d] || st >= sp {
					ac.valid = false
					return w.opErr(oi, "dimension %d of %s: %d:%d is outside 0:%d or empty", d, a.ti.t.Name, st, sp, a.ti.t.Shape[d])
				}
			}
			ae.starts[d], ae.stops[d] = st, sp
			if shared {
				key[kp+1+d] = sp - st
			} else {
				key[kp+1+2*d], key[kp+2+2*d] = st, sp
			}
		}
		if a.hbm {
			t := a.ti.t
			off := int64(0)
			stride := int64(1)
			for d := ae.nd - 1; d >= 0; d-- {
				off += ae.starts[d] * stride
				stride *= t.Shape[d]
			}
			ae.hbmOff = off * int64(t.DType.Bytes())
		}
	}
	return nil
}

// streamOf returns the stream index of engine e (or queue q) of core
// index ci.
func (c *compiled) engineStream(ci int, e isa.Engine) int32 { return int32(ci*c.perCore + int(e)) }
func (c *compiled) queueStream(ci, q int) int32             { return int32(ci*c.perCore + int(isa.NumEngines) + q) }

// instance finds the core (and its index) of the op's current instance
// and evaluates its operands.
func (w *walk) instance(oi *opInfo) (core, ci int, err error) {
	core = w.coreOf(oi)
	ci = w.c.slotOf(core)
	if ci < 0 {
		return core, ci, w.opErr(oi, "core %d is not one the kernel uses", core)
	}
	return core, ci, w.evalAccesses(oi, core)
}

// emit makes the instruction of one op instance.
func (w *walk) emit(oi *opInfo) error {
	op := oi.op
	core, ci, err := w.instance(oi)
	if err != nil {
		return err
	}
	if oi.isDMA {
		return w.emitDMA(oi, core, ci)
	}
	// Candidate engines.
	var cands [3]isa.Engine
	nc := 0
	if !op.Any {
		cands[0], nc = op.Engine, 1
	} else {
		for _, e := range []isa.Engine{isa.EngineVector, isa.EngineScalar, isa.EngineGpSimd} {
			if !op.Opcode.RunsOn(e) {
				continue
			}
			if e == isa.EngineGpSimd && !w.c.tg.Limits.GpSimdPSUMAccess && oi.touchesPSUM {
				continue
			}
			cands[nc] = e
			nc++
		}
		if nc == 0 {
			return w.opErr(oi, "no engine can run it")
		}
	}
	var metas [3]*bodyMeta
	for i := 0; i < nc; i++ {
		m, err := w.body(oi, core, cands[i], -1, isa.DGENone)
		if err != nil {
			if nc > 1 && i > 0 {
				// An engine that cannot run this instance is no candidate.
				cands[i] = 255
				continue
			}
			return err
		}
		metas[i] = m
	}
	w.collect(oi, ci, metas[0])
	// The engine estimated to finish first.
	best, bestFinish, bestStart := -1, 0.0, 0.0
	for i := 0; i < nc; i++ {
		if cands[i] == 255 {
			continue
		}
		s := w.c.engineStream(ci, cands[i])
		start := w.streams[s].est
		for _, d := range w.deps.list {
			if d != s {
				start = max(start, w.deps.est[d])
			}
		}
		finish := start + metas[i].intervalNs
		if best < 0 || finish < bestFinish {
			best, bestFinish, bestStart = i, finish, start
		}
	}
	eng, meta := cands[best], metas[best]
	sid := w.c.engineStream(ci, eng)
	st := w.streams[sid]
	waits := w.waits(st, sid, -1)
	p := st.pos
	st.pos++
	if len(waits) > 0 {
		w.snapshot(st, p)
	}
	st.newest = p
	done := bestStart + meta.latencyNs
	st.est = bestStart + meta.intervalNs
	w.record(ci, meta, sid, p, done)
	w.recordDone(oi, sid, p, done)
	w.pending = append(w.pending, pendingFinal{stream: sid, n: 1, pos: p, gen: w.gen})
	st.unfinal++
	oi.lastStream, oi.lastPos, oi.lastValid = sid, p, true
	w.output(st, meta, waits, p, false)
	w.clearDeps()
	return nil
}

// emitDMA makes a transfer's trigger instruction.
func (w *walk) emitDMA(oi *opInfo, core, ci int) error {
	op := oi.op
	tg := w.c.tg
	dge := w.c.opts.DGE
	if w.c.opts.DGEAuto {
		dge = isa.DGENone
		if tg.Limits.HardwareDGE {
			dge = isa.DGEHardware
		}
	}
	if op.DGESet {
		dge = op.Attrs.DGE
	}
	if (op.Opcode == isa.OpDMAGather || op.Opcode == isa.OpDMAScatter) && !op.DGESet {
		dge = isa.DGESoftware
	}
	allowed := func(e isa.Engine) bool {
		switch dge {
		case isa.DGEHardware:
			return e == isa.EngineSync || e == isa.EngineScalar
		case isa.DGESoftware:
			return e == isa.EngineGpSimd
		}
		return e != isa.EngineTensor
	}
	if oi.issuer >= 0 {
		// A collective's transfer: its engine and queue are set.
		return w.emitPinnedDMA(oi, core, ci, dge)
	}
	// Dependencies first: the trigger's choice uses them.
	probe, err := w.body(oi, core, isa.EngineSync, 0, isa.DGENone)
	if err != nil {
		return err
	}
	w.collect(oi, ci, probe)
	return w.triggerDMA(oi, core, ci, dge, allowed)
}

// emitPinnedDMA makes the trigger of a transfer whose engine and queue
// are the op's (a collective's): its body is made once, without a probe.
func (w *walk) emitPinnedDMA(oi *opInfo, core, ci int, dge isa.DGEKind) error {
	q, err := w.queueFor(oi, ci, oi.op.Engine)
	if err != nil {
		return err
	}
	meta, err := w.body(oi, core, oi.op.Engine, q, dge)
	if err != nil {
		return err
	}
	w.collect(oi, ci, meta)
	return w.issueDMA(oi, ci, oi.op.Engine, q, meta)
}

// triggerDMA chooses the engine and queue of a transfer whose
// dependencies are collected, and makes its trigger.
func (w *walk) triggerDMA(oi *opInfo, core, ci int, dge isa.DGEKind, allowed func(isa.Engine) bool) error {
	op := oi.op
	var eng isa.Engine
	switch {
	case !op.Any:
		eng = op.Engine
		if !allowed(eng) {
			return w.opErr(oi, "%s DGE transfers are not triggered from %s", dge, eng)
		}
	case op.QueuePinned && w.qOwner[ci][op.Attrs.Queue] >= 0:
		eng = isa.Engine(w.qOwner[ci][op.Attrs.Queue])
	case oi.loadOnly && allowed(isa.EngineSync):
		// A load (every input in HBM) goes to the Sync engine, whose stream
		// has no compute, so it runs ahead of the engines it feeds.
		eng = isa.EngineSync
	default:
		// A transfer of computed data: the engine estimated to be free
		// first (ScalarE, then GpSimd, then Sync on a tie), so it waits
		// for its data without holding up the loads behind it.
		first := true
		var bestStart float64
		for _, e := range []isa.Engine{isa.EngineScalar, isa.EngineGpSimd, isa.EngineSync} {
			if !allowed(e) {
				continue
			}
			s := w.c.engineStream(ci, e)
			start := w.streams[s].est
			for _, d := range w.deps.list {
				if d != s {
					start = max(start, w.deps.est[d])
				}
			}
			if first || start < bestStart {
				eng, bestStart, first = e, start, false
			}
		}
		if first {
			return w.opErr(oi, "no engine can trigger a %s DGE transfer", dge)
		}
	}
	q, err := w.queueFor(oi, ci, eng)
	if err != nil {
		return err
	}
	meta, err := w.body(oi, core, eng, q, dge)
	if err != nil {
		return err
	}
	return w.issueDMA(oi, ci, eng, q, meta)
}

// issueDMA makes the trigger instruction of a transfer on engine eng and
// queue q, its dependencies collected.
func (w *walk) issueDMA(oi *opInfo, ci int, eng isa.Engine, q int, meta *bodyMeta) error {
	tg := w.c.tg
	tid := w.c.engineStream(ci, eng)
	qid := w.c.queueStream(ci, q)
	ts, qs := w.streams[tid], w.streams[qid]
	// The queue keeps its transfers in order: no wait on itself, except
	// for what a mirrored transfer's destination waits for: its image's
	// issuer is another rank, whose queue orders nothing of this one's.
	if oi.mirrored {
		w.keepSkip = w.writeConflictOn(meta, qid)
	}
	waits := w.waits(ts, tid, qid)
	w.keepSkip = -1
	pe := ts.pos
	ts.pos++
	if len(waits) > 0 {
		w.snapshot(ts, pe)
	}
	pq := qs.pos
	qs.pos++
	// Every transfer signals its queue: its mark carries the trigger's
	// knowledge, and the trigger's position.
	qs.addMark(pq, ts.know.view(w.va), w.va, qid, tid, pe)
	start := ts.est
	for _, d := range w.deps.list {
		if d != tid && d != qid {
			start = max(start, w.deps.est[d])
		}
	}
	ts.est = start + meta.intervalNs
	xfer := max(start+tg.DMAStartNs, w.dmaFree[ci])
	w.dmaFree[ci] = xfer + meta.xferNs
	done := w.dmaFree[ci] + tg.DMACompletionNs
	rs := qid
	if oi.mirrored && w.tr.shadow >= 0 {
		// What a mirrored transfer writes, its image's issuer wrote: what
		// waits for it waits explicitly, even on this queue.
		rs = w.tr.shadow + qid
	}
	w.record(ci, meta, rs, pq, done)
	oi.lastStream, oi.lastPos, oi.lastValid = qid, pq, true
	w.output(ts, meta, waits, pe, true)
	w.clearDeps()
	return nil
}

// queueFor returns the DMA queue a transfer triggered by eng uses: the one
// the kernel pins, or the next of the engine's queues in turn. Each queue
// is triggered by one engine, so its order is that engine's program order.
func (w *walk) queueFor(oi *opInfo, ci int, eng isa.Engine) (int, error) {
	owner := w.qOwner[ci]
	if oi.op.QueuePinned {
		q := int(oi.op.Attrs.Queue)
		if q >= w.c.nQ {
			return 0, w.opErr(oi, "queue %d does not exist (%d queues)", q, w.c.nQ)
		}
		if owner[q] >= 0 && owner[q] != int(eng) {
			return 0, w.opErr(oi, "queue %d is triggered by %s already; a queue has one triggering engine", q, isa.Engine(owner[q]))
		}
		owner[q] = int(eng)
		return q, nil
	}
	s := w.streams[w.c.engineStream(ci, eng)]
	if len(s.queues) < w.c.queuesPerEngine {
		// Take the next free queue while the engine has fewer than its
		// share; when none is left, it shares those it has.
		for i := range w.c.qOrder {
			j := (w.qNext[ci] + i) % len(w.c.qOrder)
			q := w.c.qOrder[j]
			if owner[q] < 0 {
				owner[q] = int(eng)
				s.queues = append(s.queues, q)
				w.qNext[ci] = j + 1
				break
			}
		}
	}
	if len(s.queues) == 0 {
		return 0, w.opErr(oi, "every DMA queue of core %d is triggered by another engine", w.c.lay.cores[ci])
	}
	q := s.queues[s.rr%len(s.queues)]
	s.rr++
	return q, nil
}

// collect gathers the op instance's dependencies: for every stream, the
// latest conflicting position and the estimated completion.
func (w *walk) collect(oi *opInfo, ci int, meta *bodyMeta) {
	for i := range meta.spans {
		sp := &meta.spans[i]
		if sp.Hi > sp.Lo {
			w.tr.spanConflicts(w.spanCore(sp), sp, &w.deps)
		}
	}
	for i := range meta.hbm {
		h := &meta.hbm[i]
		reg := w.region(meta, h, &w.accs[h.acc])
		w.tr.regionConflicts(h.idx, &reg, h.write, &w.deps)
	}
	for _, a := range oi.op.After {
		ai := w.c.ops[a.ID]
		if ai.lastValid {
			w.deps.add(ai.lastStream, ai.lastPos, 0)
		}
	}
	if reg, idx, ok := w.gateRegion(oi); ok {
		// Every write to the issuer's whole input (or output) tile.
		w.tr.regionConflicts(idx, &reg, false, &w.deps)
	}
}

// writeConflictOn is the latest position of stream that the written HBM
// operands of meta conflict with (-1: none).
func (w *walk) writeConflictOn(meta *bodyMeta, stream int32) int64 {
	if w.mdeps.pos == nil {
		w.mdeps = newDepSet(len(w.deps.pos))
	}
	for i := range meta.hbm {
		h := &meta.hbm[i]
		if h.write {
			reg := w.region(meta, h, &w.accs[h.acc])
			w.tr.regionConflicts(h.idx, &reg, true, &w.mdeps)
		}
	}
	p := w.mdeps.pos[stream]
	w.mdeps.clear()
	return p
}

// gateRegion is the whole tile instance a collective's transfer or end
// waits for (opInfo.gate).
func (w *walk) gateRegion(oi *opInfo) (isa.Region, int32, bool) {
	g := oi.gate
	if g == nil || oi.issuer < 0 || oi.issuer >= len(g.bufs) || len(g.bufs[oi.issuer]) == 0 {
		return isa.Region{}, 0, false
	}
	idx := g.bufs[oi.issuer][0]
	b := w.c.lay.buffers[idx]
	return isa.Region{Chip: b.Chip, Buffer: idx, ByteLo: b.Offset, ByteHi: b.Offset + g.t.Bytes()}, idx, true
}

// recordDone records the end of a rank's collective (opInfo.done) as a
// write of its whole output: what reads the output waits for it.
func (w *walk) recordDone(oi *opInfo, stream int32, pos int64, est float64) {
	if !oi.done {
		return
	}
	if reg, idx, ok := w.gateRegion(oi); ok {
		w.tr.recordRegion(idx, &reg, true, stream, pos, est)
	}
}

// spanCore returns the core index of a span's memory.
func (w *walk) spanCore(sp *isa.Span) int {
	return w.c.slotOf(int(sp.Chip)*w.c.perChip + int(sp.Core))
}

// noInstance says why rank r has no instance of a per-rank tile.
func (w *walk) noInstance(ti *tileInfo, r int) string {
	if n, _ := ranksOf(w.c.tg.Limits); r < 0 || r >= n {
		return fmt.Sprintf("rank %d has no instance of %s: %s", r, ti.t.Name, noRankText(w.c.tg.Limits, r))
	}
	lo, hi := ti.ranks[0], ti.ranks[len(ti.ranks)-1]
	return fmt.Sprintf("rank %d has no instance of %s (its cores loop runs ranks %d to %d)", r, ti.t.Name, lo, hi)
}

// region is the HBM region an operand of the instance touches. A shared
// body's HBM operand sits at its tensor's start and moves by the
// instance's offset; any other body's operands (a transfer between two
// HBM tensors) already hold their own offsets.
func (w *walk) region(meta *bodyMeta, h *hbmOperand, ae *accEval) isa.Region {
	ap := h.op.AP
	if meta.sharedHBM {
		ap = ap.Shifted(ae.hbmOff)
	}
	return isa.RegionOf(h.buf, h.idx, &ap)
}

func (w *walk) clearDeps() { w.deps.clear() }

// record remembers the instance's accesses.
func (w *walk) record(ci int, meta *bodyMeta, stream int32, pos int64, est float64) {
	for i := range meta.spans {
		sp := &meta.spans[i]
		if sp.Hi > sp.Lo {
			w.tr.recordSpan(w.spanCore(sp), sp, stream, pos, est)
		}
	}
	for i := range meta.hbm {
		h := &meta.hbm[i]
		reg := w.region(meta, h, &w.accs[h.acc])
		w.tr.recordRegion(h.idx, &reg, h.write, stream, pos, est)
	}
}

// waits turns the collected dependencies into the waits of an instruction
// of stream self (whose knowledge is st.know; skip is a stream ordered by
// itself, a queue's own), joining what they tell into st.know: the fewest
// waits, none implied by another.
func (w *walk) waits(st *stream, self, skip int32) []waitCand {
	cands := w.waitBuf[:0]
	for _, d := range w.deps.list {
		if d == self || (d == skip && w.keepSkip < 0) {
			continue
		}
		p := w.deps.pos[d]
		if d == skip {
			p = w.keepSkip
		}
		// A shadow stream's records are its queue's, waited for like
		// another stream's.
		r := w.tr.real(d)
		if r == self || p <= st.know.get(r) {
			continue
		}
		cands = append(cands, waitCand{stream: r, dep: p, est: w.deps.est[d]})
	}
	if len(cands) == 0 {
		w.waitBuf = cands
		return nil
	}
	// The producer expected to finish last first: its knowledge is the
	// likeliest to imply the others.
	for i := 1; i < len(cands); i++ {
		for j := i; j > 0; j-- {
			a, b := &cands[j-1], &cands[j]
			if a.est > b.est || (a.est == b.est && a.stream < b.stream) {
				break
			}
			*a, *b = *b, *a
		}
	}
	for i := range cands {
		c := &cands[i]
		if c.dep <= st.know.get(c.stream) {
			c.drop = true
			continue
		}
		m := w.resolve(c.stream, c.dep)
		c.pos, c.count, c.m = m.pos, m.count, m
		if w.va.dense {
			// A dense mark's copy holds its own and its trigger's positions.
			joinDense(st.know.d, m.clock.d)
			continue
		}
		st.know.join(w.va, m.clock)
		if st.know.get(c.stream) < c.pos {
			st.know.set(w.va, c.stream, c.pos)
		}
		if m.trig >= 0 && m.trig != self && st.know.get(m.trig) < m.trigPos {
			st.know.set(w.va, m.trig, m.trigPos)
		}
	}
	// A wait implied by another's knowledge goes.
	for i := range cands {
		ci := &cands[i]
		if ci.drop {
			continue
		}
		for j := range cands {
			cj := &cands[j]
			if i != j && !cj.drop && cj.knows(w.va, ci.stream) >= ci.dep {
				ci.drop = true
				break
			}
		}
	}
	kept := cands[:0]
	for _, c := range cands {
		if !c.drop {
			kept = append(kept, c)
		}
	}
	w.waitBuf = kept
	return kept
}

// resolve returns the mark a consumer of stream d's position p waits for:
// the first mark at p or after, marking p when it is not final yet.
func (w *walk) resolve(d int32, p int64) *mark {
	s := w.streams[d]
	if m := s.markAt(p); m != nil {
		return m
	}
	return w.markEngine(d, p)
}

// markEngine marks position p of engine stream d (not final, and after
// every mark so far).
func (w *walk) markEngine(d int32, p int64) *mark {
	s := w.streams[d]
	clock, ok := s.clockAt(p)
	if !ok {
		clock = w.none
	}
	m := s.addMark(p, clock, w.va, d, -1, -1)
	if e := s.entryAt(p); e != nil {
		e.flags |= outSignal
	}
	return m
}

// snapshot remembers an engine's knowledge at position p (it waited).
func (w *walk) snapshot(st *stream, p int64) {
	st.addSnap(p, w.va.snapshot(&st.know), w.va)
}

// finalize decides the signals of the compute instructions the walk has
// gone far enough past (all of them at the end): one that has no mark
// after it gets its stream's newest instruction marked.
func (w *walk) finalize(all bool) {
	for w.phead < len(w.pending) {
		pf := w.pending[w.phead]
		last := pf.pos + int64(pf.n) - 1
		if !all && pf.gen+int64(pf.n)-1+w.c.finalDist > w.gen {
			break
		}
		w.phead++
		s := w.streams[pf.stream]
		s.unfinal -= int(pf.n)
		if !all && s.lastMark < last {
			w.markEngine(pf.stream, s.newest)
		}
		s.finalTo = max(s.finalTo, last)
		s.pruneSnaps(last+1, w.va)
	}
	if w.phead > 4096 && w.phead*2 > len(w.pending) {
		n := copy(w.pending, w.pending[w.phead:])
		w.pending, w.phead = w.pending[:n], 0
	}
}

// signal returns a one-element signal slice.
func (w *walk) signal(sem isa.SemRef, add int64) []isa.SemSignal {
	if len(w.slabSig) == cap(w.slabSig) {
		w.slabSig = make([]isa.SemSignal, 0, 256)
	}
	w.slabSig = append(w.slabSig, isa.SemSignal{Sem: sem, Add: add})
	n := len(w.slabSig)
	return w.slabSig[n-1 : n : n]
}

// output makes the instruction for a kept stream.
func (w *walk) output(st *stream, meta *bodyMeta, waits []waitCand, pos int64, dma bool) {
	if !st.keep {
		return
	}
	if st.skip > 0 {
		st.skip--
		return
	}
	e := outEntry{meta: meta.idx}
	if dma {
		e.flags = outFinal | outDMA
	}
	off := w.hbmOffset(meta)
	if len(waits) == 0 && off == 0 {
		st.pushOut(e, pos, nil)
		return
	}
	x := outExtra{hbmOff: off}
	if len(waits) > 0 {
		if len(w.slabWait)+len(waits) > cap(w.slabWait) {
			w.slabWait = make([]isa.SemWait, 0, max(512, len(waits)))
		}
		i0 := len(w.slabWait)
		for _, c := range waits {
			ws := w.streams[c.stream]
			w.slabWait = append(w.slabWait, isa.SemWait{Sem: ws.sem, Value: c.count * ws.mult})
		}
		x.waits = w.slabWait[i0:len(w.slabWait):len(w.slabWait)]
	}
	e.flags |= outHasExtra
	st.pushOut(e, pos, &x)
}

// next hands out the stream's oldest instruction held.
func (w *walk) next(st *stream) *isa.Instruction {
	e := st.head()
	meta := w.c.metas.get(e.meta)
	if e.flags&(outSignal|outDMA|outHasExtra) == 0 {
		st.pop(e)
		return meta.plain()
	}
	x := st.pop(e)
	if len(w.slabIns) == cap(w.slabIns) {
		w.slabIns = make([]isa.Instruction, 0, 256)
	}
	w.slabIns = append(w.slabIns, isa.Instruction{Body: meta.body, HBMOffset: x.hbmOff, Waits: x.waits})
	in := &w.slabIns[len(w.slabIns)-1]
	switch {
	case e.flags&outDMA != 0:
		in.Signal = meta.qsig
	case e.flags&outSignal != 0:
		in.Signal = st.signal1
	}
	return in
}

// hbmOffset returns the instance's HBM offset for a body whose HBM
// operand sits at its tensor's start.
func (w *walk) hbmOffset(meta *bodyMeta) int64 {
	if !meta.sharedHBM || len(meta.hbm) == 0 {
		return 0
	}
	return w.accs[meta.hbm[0].acc].hbmOff
}

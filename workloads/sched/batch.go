package sched

import (
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/tile"
)

// Batches. A loop nest whose every op is a compute op pinned to one engine
// (TensorE's K-tile loop of a GEMM: load_stationary, multiply_moving,
// multiply_moving, ...) runs as one batch: its instances are evaluated
// first, then their dependencies are found once, for the union of each op's
// accesses over the batch, and every wait goes on the batch's first
// instruction (the rest follow in the engine's program order); each op's
// accesses are remembered as their union, at the op's last instance. That
// orders no less than instance-by-instance scheduling — a later access that
// conflicts with any instance waits for the last — and costs the
// dependency work once per batch. A batch holds at most batchMax
// instructions; a longer nest is cut into several.

const batchMax = 1024

type batch struct {
	active bool
	depth  int // stack depth of the batched loop's frame
	insts  []batchInst
	// union[op][span] is the union of an op's on-chip accesses so far
	// (valid when epoch matches).
	union   [][]isa.Span
	uepoch  []uint64
	epoch   uint64
	touched []int32
	core    int
	ci      int
	// record is the nest whose batch is being collected, to memoise under
	// recordKey once it is complete (nil: none).
	record     *nestInfo
	recordKey  []int64
	recordHash uint64
	recordInst []int64
	// replay, when set, is the memoised batch to schedule instead of
	// insts.
	replay *memoEntry
}

type batchInst struct {
	oi   *opInfo
	meta *bodyMeta
}

// batchable reports whether every op of l's nest is a compute op pinned to
// one engine, with no ordering edges.
func batchable(l *tile.Loop) bool {
	eng := isa.NumEngines
	ok := true
	var walk func(stmts []tile.Stmt)
	walk = func(stmts []tile.Stmt) {
		for _, s := range stmts {
			switch s := s.(type) {
			case *tile.Loop:
				if s.Kind == tile.Cores {
					ok = false
				}
				walk(s.Body)
			case *tile.If:
				walk(s.Then)
				walk(s.Else)
			case *tile.Op:
				if s.Any || s.Opcode.IsDMA() || len(s.After) > 0 || s.Label != "" {
					ok = false
				}
				if eng == isa.NumEngines {
					eng = s.Engine
				}
				if s.Engine != eng {
					ok = false
				}
			default:
				ok = false
			}
		}
	}
	walk(l.Body)
	return ok && eng != isa.NumEngines && l.Kind != tile.Cores
}

// collectInstance evaluates one instance of a batched op.
func (w *walk) collectInstance(oi *opInfo) error {
	core, ci, err := w.instance(oi)
	if err != nil {
		return err
	}
	meta, err := w.body(oi, core, oi.op.Engine, -1, isa.DGENone)
	if err != nil {
		return err
	}
	bt := &w.bt
	if len(bt.insts) == 0 {
		bt.core, bt.ci = core, ci
		bt.epoch++
		if bt.union == nil {
			bt.union = make([][]isa.Span, len(w.c.ops))
			bt.uepoch = make([]uint64, len(w.c.ops))
		}
	} else if ci != bt.ci {
		// A nest over cores does not batch; a change of core cuts it.
		bt.record = nil
		w.flushBatch()
		return w.collectInstance(oi)
	}
	id := oi.op.ID
	u := bt.union[id]
	if bt.uepoch[id] != bt.epoch {
		u = append(u[:0], meta.spans...)
		bt.uepoch[id] = bt.epoch
		bt.touched = append(bt.touched, int32(id))
	} else {
		for i := range meta.spans {
			if i < len(u) {
				unionSpan(&u[i], &meta.spans[i])
			}
		}
	}
	bt.union[id] = u
	bt.insts = append(bt.insts, batchInst{oi: oi, meta: meta})
	return nil
}

func unionSpan(u, s *isa.Span) {
	if s.Hi <= s.Lo {
		return
	}
	if u.Hi <= u.Lo {
		*u = *s
		return
	}
	u.Lo, u.Hi = min(u.Lo, s.Lo), max(u.Hi, s.Hi)
	u.PartLo, u.PartHi = min(u.PartLo, s.PartLo), max(u.PartHi, s.PartHi)
	u.Write = u.Write || s.Write
}

// flushBatch schedules the collected instances; it reports whether it
// made any.
func (w *walk) flushBatch() bool {
	bt := &w.bt
	insts := bt.insts
	me := bt.replay
	if me != nil {
		insts, bt.replay = me.insts, nil
	}
	n := len(insts)
	if n == 0 {
		bt.touched = bt.touched[:0]
		bt.record = nil
		return false
	}
	if me == nil && ((bt.record != nil && !bt.active) || w.comp != nil) {
		me = w.newEntry()
	}
	if bt.record != nil {
		if !bt.active {
			// The nest is complete: remember it.
			w.remember(bt.record, bt.recordKey, me)
		}
		bt.record = nil
	}
	if w.comp != nil {
		w.comp.subs = append(w.comp.subs, me)
	}
	eng := insts[0].oi.op.Engine
	ci := bt.ci
	sid := w.c.engineStream(ci, eng)
	st := w.streams[sid]
	// Each op's last position, then dependencies found and accesses
	// remembered in one pass (the batch's own records are its stream's:
	// they never make a wait); the estimates are set once known.
	p0 := st.pos
	if me != nil {
		for _, l := range me.last {
			l.op.lastStream, l.op.lastPos, l.op.lastValid = sid, p0+int64(l.idx), true
		}
	} else {
		for i := range insts {
			bi := &insts[i]
			bi.oi.lastStream, bi.oi.lastPos, bi.oi.lastValid = sid, p0+int64(i), true
		}
	}
	if me != nil {
		for i := range me.unions {
			u := &me.unions[i]
			oi := w.c.ops[u.op]
			for j := range u.spans {
				sp := &u.spans[j]
				w.tr.checkRecord(w.spanCore(sp), sp, sid, oi.lastPos, 0, &w.deps, &st.know, st.est)
			}
		}
	} else {
		for _, id := range bt.touched {
			oi := w.c.ops[id]
			for i := range bt.union[id] {
				sp := &bt.union[id][i]
				if sp.Hi > sp.Lo {
					w.tr.checkRecord(w.spanCore(sp), sp, sid, oi.lastPos, 0, &w.deps, &st.know, st.est)
				}
			}
		}
	}
	start := st.est
	for _, d := range w.deps.list {
		if d != sid {
			start = max(start, w.deps.est[d])
		}
	}
	waits := w.waits(st, sid, -1)
	if len(waits) > 0 {
		w.snapshot(st, p0)
	}
	// Positions, estimates and each op's last position.
	t := start
	var done float64
	for i := range insts {
		m := insts[i].meta
		done = t + m.latencyNs
		t += m.intervalNs
	}
	if st.keep {
		w.output(st, insts[0].meta, waits, p0, false)
		if me != nil {
			st.pushBulk(me.outs[1:], p0+1)
		} else {
			for i := 1; i < n; i++ {
				w.output(st, insts[i].meta, nil, p0+int64(i), false)
			}
		}
	}
	w.pending = append(w.pending, pendingFinal{stream: sid, n: int32(n), pos: p0, gen: w.gen})
	st.pos = p0 + int64(n)
	st.newest = st.pos - 1
	st.unfinal += n
	st.est = t
	w.tr.setEsts(done)
	w.clearDeps()
	bt.insts = bt.insts[:0]
	bt.touched = bt.touched[:0]
	w.gen += int64(n)
	w.finalize(false)
	return true
}

// The batch memo. A batch's instructions are a pure function of what the
// expressions of its nest evaluate to, so a nest entered again with the
// same expression signatures (tile.Code.Signature: the interior blocks of
// a GEMM all share one) replays the bodies and access unions it made the
// first time, without evaluating anything. Nests whose loops have bounds
// that depend on the nest's own variables are not memoised.

// nestInfo is a batch root's nest, for the memo.
type nestInfo struct {
	ok    bool
	loops []*tile.Loop    // pre-order, the root first
	codes []*tile.Code    // every expression evaluated in the nest, once each
	plans []*tile.SigPlan // their signature plans
	// plevel[i] is the loop depth plan i's signature depends on (through
	// the variables outside the nest, and the bounds of the nest's loops
	// it uses): while that loop has not moved, the signature is the same.
	plevel []int
	// groups are the plans by level (their signatures are kept together);
	// blevel[i] is the level loop i's bounds depend on.
	groups []planGroup
	blevel []int
	id     int
	isVar  []bool // the nest's variables
	ops    []int32
	tiles  []*tile.Tile // tiles the nest's ops access
	// declared are the tiles the nest's loops declare.
	declared []*tile.Tile
	// cmemo holds a compound nest's entries (see compound.go).
	cmemo map[uint64][]*compEntry
	memo  map[uint64][]*memoEntry
	hits  int
}

// planGroup is the plans whose signatures depend on the same loop level
// (-1: none).
type planGroup struct {
	level int
	plans []int
}

// segCache is one group's last signature segment, its hash and the stamp
// they are valid at.
type segCache struct {
	seg   []int64
	hash  uint64
	stamp uint64
	valid bool
}

// boundsCache is a nest's loop bounds, valid at stamp.
type boundsCache struct {
	lo, hi int64
	stamp  uint64
	valid  bool
}

type memoEntry struct {
	key    []int64
	insts  []batchInst
	unions []memoUnion
	// outs are the instructions as held by a stream (none has an extra);
	// last, for each op of the batch, the index of its last instance.
	outs []outEntry
	last []opLast
	// deltas are how far the instances of the tiles the nest declares
	// move.
	deltas []int64
}

type opLast struct {
	op  *opInfo
	idx int32
}

type memoUnion struct {
	op    int32
	spans []isa.Span
}

func (c *compiled) newNest(root *tile.Loop) *nestInfo {
	n := &nestInfo{ok: true, isVar: make([]bool, len(c.k.Vars)), memo: map[uint64][]*memoEntry{}}
	seenTile := map[*tile.Tile]bool{}
	var walk func(stmts []tile.Stmt)
	addLoop := func(l *tile.Loop) {
		n.loops = append(n.loops, l)
		n.isVar[l.Var.Index] = true
		// A tile declared in the nest rotates within it: the slots its
		// instances take follow from where the rotation stands when the
		// nest is entered, which the signature holds (the slot of every
		// tile the nest accesses).
		n.declared = append(n.declared, l.Tiles...)
	}
	walk = func(stmts []tile.Stmt) {
		for _, s := range stmts {
			switch s := s.(type) {
			case *tile.Loop:
				addLoop(s)
				walk(s.Body)
			case *tile.If:
				n.codes = append(n.codes, c.conds[s.ID])
				walk(s.Then)
				walk(s.Else)
			case *tile.Op:
				oi := c.ops[s.ID]
				n.ops = append(n.ops, int32(s.ID))
				for i := range oi.exprs {
					if oi.exprs[i].level >= 0 {
						n.codes = append(n.codes, oi.exprs[i].code)
					}
				}
				for _, a := range oi.accs {
					if !seenTile[a.acc.Tile] {
						seenTile[a.acc.Tile] = true
						n.tiles = append(n.tiles, a.acc.Tile)
					}
				}
			}
		}
	}
	addLoop(root)
	walk(root.Body)
	// Each expression once.
	seen := map[*tile.Code]bool{}
	kept := n.codes[:0]
	for _, code := range n.codes {
		if !seen[code] {
			seen[code] = true
			kept = append(kept, code)
		}
	}
	n.codes = kept
	nest := func(v int) bool { return n.isVar[v] }
	depths := c.depths
	loopOf := map[int]*tile.Loop{}
	for _, l := range n.loops {
		loopOf[l.Var.Index] = l
	}
	for _, code := range n.codes {
		n.plans = append(n.plans, code.Plan(nest))
		lvl := -1
		for _, v := range code.Vars {
			if !n.isVar[v] {
				lvl = max(lvl, depths[v])
				continue
			}
			li := c.loops[loopOf[v].ID]
			for _, b := range []*tile.Code{li.start, li.stop} {
				for _, u := range b.Vars {
					lvl = max(lvl, depths[u])
				}
			}
		}
		n.plevel = append(n.plevel, lvl)
	}
	byLevel := map[int]int{}
	for i, lvl := range n.plevel {
		g, ok := byLevel[lvl]
		if !ok {
			g = len(n.groups)
			byLevel[lvl] = g
			n.groups = append(n.groups, planGroup{level: lvl})
		}
		n.groups[g].plans = append(n.groups[g].plans, i)
	}
	for _, l := range n.loops {
		li := c.loops[l.ID]
		lvl := -1
		for _, b := range []*tile.Code{li.start, li.stop} {
			for _, u := range b.Vars {
				if !n.isVar[u] {
					lvl = max(lvl, depths[u])
				}
			}
		}
		n.blevel = append(n.blevel, lvl)
	}
	n.id = c.nests
	c.nests++
	// Bounds must not depend on the nest's variables (a box).
	for _, l := range n.loops {
		li := c.loops[l.ID]
		for _, code := range []*tile.Code{li.start, li.stop} {
			for _, v := range code.Vars {
				if n.isVar[v] {
					n.ok = false
				}
			}
		}
	}
	return n
}

// memoKey returns the signature of the nest entered now and its hash, or
// false. Signature segments and loop bounds are kept per loop level and
// computed again only when their level has moved.
func (w *walk) memoKey(n *nestInfo, core int) ([]int64, uint64, bool) {
	key := w.memoBuf[:0]
	key = append(key, int64(core))
	for _, t := range n.tiles {
		key = append(key, int64(w.slot(t)))
	}
	if len(w.memoLo) < len(w.env) {
		w.memoLo, w.memoHi = make([]int64, len(w.env)), make([]int64, len(w.env))
	}
	if w.segs == nil {
		w.segs = make([][]segCache, w.c.nests)
		w.bounds = make([][]boundsCache, w.c.nests)
	}
	bounds := w.bounds[n.id]
	if bounds == nil {
		bounds = make([]boundsCache, len(n.loops))
		w.bounds[n.id] = bounds
	}
	for i, l := range n.loops {
		bc := &bounds[i]
		lvl := n.blevel[i]
		if !bc.valid || (lvl >= 0 && bc.stamp != w.stamp[lvl]) {
			li := w.c.loops[l.ID]
			bc.lo, bc.hi, bc.valid = li.start.Eval(w.env), li.stop.Eval(w.env)-1, true
			if lvl >= 0 {
				bc.stamp = w.stamp[lvl]
			}
		}
		w.memoLo[l.Var.Index], w.memoHi[l.Var.Index] = bc.lo, bc.hi
		key = append(key, bc.lo, bc.hi)
	}
	h := hashKey(key)
	segs := w.segs[n.id]
	if segs == nil {
		segs = make([]segCache, len(n.groups))
		w.segs[n.id] = segs
	}
	for i := range n.groups {
		g := &n.groups[i]
		sc := &segs[i]
		if !sc.valid || (g.level >= 0 && sc.stamp != w.stamp[g.level]) {
			sc.seg = sc.seg[:0]
			for _, pi := range g.plans {
				sc.seg = n.plans[pi].Append(sc.seg, w.env, w.memoLo, w.memoHi)
			}
			sc.hash = hashKey(sc.seg)
			sc.valid = true
			if g.level >= 0 {
				sc.stamp = w.stamp[g.level]
			}
		}
		key = append(key, sc.seg...)
		h = (h ^ sc.hash) * 1099511628211
	}
	w.memoBuf = key
	return key, h, true
}

// replay schedules a memoised batch.
func (w *walk) replay(me *memoEntry, ci int) {
	bt := &w.bt
	bt.ci = ci
	bt.replay = me
	bt.epoch++
	if bt.union == nil {
		bt.union = make([][]isa.Span, len(w.c.ops))
		bt.uepoch = make([]uint64, len(w.c.ops))
	}
	bt.touched = bt.touched[:0]
	w.flushBatch()
}

// newEntry makes the memo entry of the batch being flushed.
func (w *walk) newEntry() *memoEntry {
	bt := &w.bt
	me := &memoEntry{insts: append([]batchInst(nil), bt.insts...)}
	for _, id := range bt.touched {
		u := memoUnion{op: id}
		for _, sp := range bt.union[id] {
			if sp.Hi > sp.Lo {
				u.spans = append(u.spans, sp)
			}
		}
		me.unions = append(me.unions, u)
	}
	me.outs = make([]outEntry, len(me.insts))
	lastIdx := map[*opInfo]int32{}
	for i, bi := range me.insts {
		me.outs[i] = outEntry{meta: bi.meta.idx}
		lastIdx[bi.oi] = int32(i)
	}
	for i, bi := range me.insts {
		if lastIdx[bi.oi] == int32(i) {
			me.last = append(me.last, opLast{op: bi.oi, idx: int32(i)})
		}
	}
	return me
}

// remember stores the batch entry me of nest n under key, with how far
// the instances of the tiles the nest declares moved.
func (w *walk) remember(n *nestInfo, key []int64, me *memoEntry) {
	me.key = append([]int64(nil), key...)
	me.deltas = w.tileDeltas(n, w.bt.recordInst)
	if n.memo == nil {
		n.memo = map[uint64][]*memoEntry{}
	}
	n.memo[w.bt.recordHash] = append(n.memo[w.bt.recordHash], me)
}

// tileDeltas returns how far the instances of the tiles n declares moved
// since they were inst.
func (w *walk) tileDeltas(n *nestInfo, inst []int64) []int64 {
	if len(n.declared) == 0 {
		return nil
	}
	d := make([]int64, len(n.declared))
	for i, t := range n.declared {
		d[i] = w.tileInst[t.ID] - inst[i]
	}
	return d
}

// tileInsts appends the instances of the tiles n declares to buf.
func (w *walk) tileInsts(n *nestInfo, buf []int64) []int64 {
	buf = buf[:0]
	for _, t := range n.declared {
		buf = append(buf, w.tileInst[t.ID])
	}
	return buf
}

// advanceTiles moves the instances of the tiles n declares as a walk of
// the nest would have.
func (w *walk) advanceTiles(n *nestInfo, deltas []int64) {
	for i, t := range n.declared {
		w.tileInst[t.ID] += deltas[i]
	}
}

func (n *nestInfo) lookup(key []int64, h uint64) *memoEntry {
	for _, me := range n.memo[h] {
		if equalKey(me.key, key) {
			n.hits++
			return me
		}
	}
	return nil
}

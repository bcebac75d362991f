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
	core := w.coreOf(oi)
	ci, ok := w.c.coreIdx[core]
	if !ok {
		return w.opErr(oi, "core %d is not one the kernel uses", core)
	}
	if err := w.evalAccesses(oi, core); err != nil {
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
	n := len(bt.insts)
	if n == 0 {
		bt.touched = bt.touched[:0]
		return false
	}
	eng := bt.insts[0].oi.op.Engine
	ci := bt.ci
	sid := w.c.engineStream(ci, eng)
	st := w.streams[sid]
	add := func(stream int32, pos int64, est float64) {
		if w.depPos[stream] < 0 {
			w.depList = append(w.depList, stream)
		}
		if pos > w.depPos[stream] {
			w.depPos[stream] = pos
		}
		if est > w.depEst[stream] {
			w.depEst[stream] = est
		}
	}
	for _, id := range bt.touched {
		for i := range bt.union[id] {
			sp := &bt.union[id][i]
			if sp.Hi > sp.Lo {
				w.tr.spanConflicts(w.spanCore(sp), sp, add)
			}
		}
	}
	start := st.est
	for _, d := range w.depList {
		if d != sid {
			start = max(start, w.depEst[d])
		}
	}
	waits := w.waits(st, sid, -1)
	p0 := st.pos
	st.know[sid] = p0
	if len(waits) > 0 {
		w.snapshot(st, p0)
	}
	// Positions, estimates and each op's last position.
	t := start
	var done float64
	for i := range bt.insts {
		bi := &bt.insts[i]
		p := p0 + int64(i)
		done = t + bi.meta.latencyNs
		t += bi.meta.intervalNs
		bi.oi.lastStream, bi.oi.lastPos, bi.oi.lastValid = sid, p, true
		w.pending = append(w.pending, pendingFinal{stream: sid, pos: p, gen: w.gen + int64(i)})
		if i == 0 {
			w.output(st, bi.meta, waits, nil, 0, p, false)
		} else {
			w.output(st, bi.meta, nil, nil, 0, p, false)
		}
	}
	st.pos = p0 + int64(n)
	st.know[sid] = st.pos - 1
	st.newest = st.pos - 1
	st.unfinal += n
	st.est = t
	for _, id := range bt.touched {
		oi := w.c.ops[id]
		for i := range bt.union[id] {
			sp := &bt.union[id][i]
			if sp.Hi > sp.Lo {
				w.tr.recordSpan(w.spanCore(sp), sp, sid, oi.lastPos, done)
			}
		}
	}
	w.clearDeps()
	bt.insts = bt.insts[:0]
	bt.touched = bt.touched[:0]
	w.gen += int64(n)
	w.finalize(false)
	return true
}

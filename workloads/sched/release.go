package sched

import (
	"fmt"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/tile"
)

// Releasing the bodies of finished ops.
//
// A walk makes a body for every distinct instance of an op and keeps it in
// the op's memo, so that a later instance, another rank's or another
// walk's, finds it made. In a program of many ops, each with instances of
// their own (a model's every layer over every rank, simulated exactly),
// the bodies would add up to nearly every instruction's. So the kernel is
// cut into units, in program order: each top-level statement, and each
// phase of a top-level cores loop walked in lockstep (a model's kernels
// and collective steps, one after another). An op belongs to the last unit
// it appears in. Once every live walk has passed a unit and handed out
// every instruction it had made by then, no walk will look up the unit's
// ops' bodies again, and nothing held refers to them by index: the bodies
// leave the ops' memos, the metas store and the memos of the unit's loop
// nests. A walk that starts later (a stream's walk of its own, another
// session) makes them again, the same but for their IDs.

// metaChunk is how many bodies' metas one chunk of the store holds.
const metaChunk = 1 << 12

// metaStore holds the bodies' metas by index (bodyMeta.idx), in chunks;
// a chunk whose every body is released is dropped.
type metaStore struct {
	chunks  [][]*bodyMeta
	live    []int32
	n       uint32
	dropped int
}

// add stores m and sets its index.
func (s *metaStore) add(m *bodyMeta) {
	c := int(s.n / metaChunk)
	if c == len(s.chunks) {
		s.chunks = append(s.chunks, make([]*bodyMeta, metaChunk))
		s.live = append(s.live, 0)
	}
	m.idx = s.n
	s.chunks[c][s.n%metaChunk] = m
	s.live[c]++
	s.n++
}

// get returns the meta of index idx.
func (s *metaStore) get(idx uint32) *bodyMeta {
	var m *bodyMeta
	if ch := s.chunks[idx/metaChunk]; ch != nil {
		m = ch[idx%metaChunk]
	}
	if m == nil {
		panic(fmt.Sprintf("internal error: body %d used after its op was released", idx))
	}
	return m
}

// drop releases the meta of index idx.
func (s *metaStore) drop(idx uint32) {
	c := idx / metaChunk
	ch := s.chunks[c]
	if ch == nil || ch[idx%metaChunk] == nil {
		return
	}
	ch[idx%metaChunk] = nil
	s.dropped++
	if s.live[c]--; s.live[c] == 0 && int(c) < len(s.chunks)-1 {
		s.chunks[c] = nil
	}
}

// len is how many bodies were stored.
func (s *metaStore) len() int { return int(s.n) }

// held is how many bodies are stored and not released.
func (s *metaStore) held() int { return int(s.n) - s.dropped }

// releaseAbove is the default of Options.ReleaseAbove: below it no body
// is released, so that a walk that starts later (a stream that detaches,
// another session) finds every body made, as it would without releasing.
const releaseAbove = 1 << 17

// releaser cuts the kernel into units and releases the bodies of the
// units every live walk is done with.
type releaser struct {
	c *compiled
	// top[pc] is top-level statement pc's first unit; phased[pc] is set
	// for a cores loop walked in lockstep, whose phases are units.
	top    []int
	phased []bool
	// ops and nests are each unit's ops (those whose last appearance it
	// is) and loop nests with memos.
	ops   [][]int32
	nests [][]*nestInfo
	// hbmDone[u] are the HBM tiles unit u is the last to access: a walk
	// past it drops their dependency records (no later access can
	// conflict with them).
	hbmDone [][]int32
	// walks are the live walks; releasedTo the units released (below it).
	walks      []*walk
	releasedTo int
	// released counts the bodies released.
	released int64
}

// checkpoint is where a walk stood when it passed the units before unit:
// how many instructions each of its streams had made.
type checkpoint struct {
	unit int
	made []int64
}

// newReleaser cuts c's kernel into units.
func newReleaser(c *compiled) *releaser {
	r := &releaser{c: c}
	owner := make([]int, len(c.ops))
	for i := range owner {
		owner[i] = -1
	}
	var collect func(stmts []tile.Stmt, u int)
	collectPhased := func(ph *phased, u int, each bool) {
		for p := range ph.phases {
			if each {
				u = r.top[len(r.top)-1] + p
			}
			ps := &ph.phases[p]
			collect(ps.all, u)
			for _, per := range ps.per {
				collect(per, u)
			}
		}
	}
	collect = func(stmts []tile.Stmt, u int) {
		for _, s := range stmts {
			switch s := s.(type) {
			case *tile.Loop:
				li := c.loops[s.ID]
				if li.nest != nil {
					r.nests[u] = append(r.nests[u], li.nest)
				}
				collect(s.Body, u)
				if li.lockstep != nil {
					collectPhased(li.lockstep, u, false)
				}
			case *tile.If:
				collect(s.Then, u)
				collect(s.Else, u)
			case *tile.Op:
				owner[s.ID] = u
			case *tile.Collective:
				if ph := c.ex.colls[s]; ph != nil {
					collectPhased(ph, u, false)
				}
			}
		}
	}
	for _, s := range c.k.Body {
		u := len(r.ops)
		r.top = append(r.top, u)
		n := 1
		var ph *phased
		if l, ok := s.(*tile.Loop); ok && c.loops[l.ID].lockstep != nil {
			ph = c.loops[l.ID].lockstep
			n = max(len(ph.phases), 1)
		}
		r.phased = append(r.phased, ph != nil)
		for range n {
			r.ops = append(r.ops, nil)
			r.nests = append(r.nests, nil)
		}
		if ph == nil {
			collect([]tile.Stmt{s}, u)
			continue
		}
		// The loop's body and nests are the first phase's at the least;
		// every phase's own statements are that phase's.
		l := s.(*tile.Loop)
		if li := c.loops[l.ID]; li.nest != nil {
			r.nests[u] = append(r.nests[u], li.nest)
		}
		collect(l.Body, u)
		collectPhased(ph, u, true)
	}
	last := make([]int, len(c.lay.tiles))
	for i := range last {
		last[i] = -1
	}
	for op, u := range owner {
		if u < 0 {
			continue
		}
		r.ops[u] = append(r.ops[u], int32(op))
		oi := c.ops[op]
		for _, as := range [][]tile.Access{oi.op.Outs, oi.op.Ins} {
			for i := range as {
				if t := as[i].Tile; t.Mem == isa.MemHBM {
					last[t.ID] = max(last[t.ID], u)
				}
			}
		}
		if oi.gate != nil {
			last[oi.gate.t.ID] = max(last[oi.gate.t.ID], u)
		}
	}
	r.hbmDone = make([][]int32, len(r.ops))
	for t, u := range last {
		if u >= 0 {
			r.hbmDone[u] = append(r.hbmDone[u], int32(t))
		}
	}
	return r
}

// register adds a new walk, which starts before every unit: what was
// released is made again as it walks, and released again once every walk
// has passed it.
func (r *releaser) register(w *walk) {
	r.walks = append(r.walks, w)
	r.releasedTo = 0
}

// unitNow returns the unit the walk is in (len(units) once it is done).
func (w *walk) unitNow() int {
	r := w.c.rel
	if w.done || len(w.stack) == 0 {
		return len(r.ops)
	}
	pc := w.stack[0].pc - 1
	if pc < 0 {
		return 0
	}
	u := r.top[pc]
	if r.phased[pc] && len(w.stack) > 1 && w.stack[1].ph != nil {
		u += max(w.stack[1].phase, 0)
	}
	return u
}

// progress notes that the walk passed units, and releases what no walk
// needs any more.
func (w *walk) progress() {
	u := w.unitNow()
	if u <= w.passed {
		return
	}
	r := w.c.rel
	for v := w.passed; v < u; v++ {
		for _, t := range r.hbmDone[v] {
			for _, bufs := range w.c.lay.tiles[t].bufs {
				for _, b := range bufs {
					delete(w.tr.hbm, b)
				}
			}
		}
	}
	w.passed = u
	made := make([]int64, len(w.streams))
	for i, s := range w.streams {
		made[i] = s.opos + int64(s.ocount)
	}
	w.checkpoints = append(w.checkpoints, checkpoint{unit: u, made: made})
	w.c.rel.try()
}

// drained notes that st handed out an instruction: once the walk is done
// and one of its streams holds nothing more, the releaser looks again
// (a done walk takes no more steps, so its own progress calls are over).
func (w *walk) drained(st *stream) {
	if w.done && st.ocount == 0 {
		w.c.rel.try()
	}
}

// safeUnit returns the units before which the walk holds no instruction
// made (its checkpoints whose instructions are all handed out).
func (w *walk) safeUnit() int {
	for len(w.checkpoints) > 0 {
		cp := &w.checkpoints[0]
		for i, s := range w.streams {
			if s.opos < cp.made[i] {
				return w.safe
			}
		}
		w.safe = cp.unit
		w.checkpoints = w.checkpoints[1:]
	}
	return w.safe
}

// try releases the units every live walk is done with, and forgets the
// walks that are done and hold nothing.
func (r *releaser) try() {
	k := len(r.ops)
	live := r.walks[:0]
	for _, w := range r.walks {
		s := w.safeUnit()
		if w.done && s == len(r.ops) {
			continue
		}
		k = min(k, s)
		live = append(live, w)
	}
	clear(r.walks[len(live):])
	r.walks = live
	if above := r.c.opts.ReleaseAbove; above == 0 && r.c.metas.held() < releaseAbove || above > 0 && r.c.metas.held() < above {
		return
	}
	for ; r.releasedTo < k; r.releasedTo++ {
		r.release(r.releasedTo)
	}
}

// release drops unit u's bodies and memos.
func (r *releaser) release(u int) {
	c := r.c
	for _, id := range r.ops[u] {
		oi := c.ops[id]
		chains := func(fn func(m *bodyMeta)) {
			if oi.one != nil {
				fn(oi.one)
			}
			for _, m := range oi.bodies {
				fn(m)
			}
		}
		chains(func(m *bodyMeta) {
			for ; m != nil; m = m.next {
				c.metas.drop(m.idx)
				m.succ = [2]*bodyMeta{}
				r.released++
			}
		})
		chains(func(m *bodyMeta) {
			for m != nil {
				next := m.next
				m.next, m.tnext, m.key, m.tkey = nil, nil, nil, nil
				m = next
			}
		})
		oi.one, oi.bodies, oi.templates = nil, nil, nil
		for _, w := range r.walks {
			w.lastBody[id] = nil
		}
	}
	for _, n := range r.nests[u] {
		n.memo, n.cmemo = nil, nil
	}
}

// BodiesReleased returns how many bodies the program's walks have
// released so far (release.go): a measure of the memory releasing saves.
func (p *Program) BodiesReleased() int64 { return p.c.rel.released }

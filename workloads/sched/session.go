package sched

import (
	"github.com/trnsim/trnsim/isa"
)

// A session is one opening of a program's streams (one simulation, or one
// printing): one shared walk makes every stream's instructions, and a
// stream whose demand runs far ahead of the others (so the walk would
// buffer more than SoloBuffer of their instructions) gets a walk of its
// own, which makes only its instructions. Walks are deterministic, so the
// instructions are the same either way; memory stays bounded by the
// buffer, whatever the kernel.
type session struct {
	c      *compiled
	shared *walk
	outs   []*outStream
}

// outStream is one engine stream of a session.
type outStream struct {
	sess   *session
	idx    int32
	solo   *walk
	handed int64
	// empty is set for a stream no op can go to.
	empty bool
}

func newSession(c *compiled) *session {
	s := &session{c: c, shared: newWalk(c)}
	for ci := range c.lay.cores {
		for e := 0; e < int(isa.NumEngines); e++ {
			idx := c.engineStream(ci, isa.Engine(e))
			s.shared.streams[idx].keep = true
			s.outs = append(s.outs, &outStream{sess: s, idx: idx, empty: !c.possible[idx]})
		}
	}
	return s
}

func (s *session) streams() []isa.Stream {
	out := make([]isa.Stream, len(s.outs))
	for i, o := range s.outs {
		out[i] = o
	}
	return out
}

// newSolo returns a stream served by a walk of its own.
func newSolo(c *compiled, idx int) isa.Stream {
	if !c.possible[idx] {
		return &outStream{idx: int32(idx), empty: true}
	}
	w := newWalk(c)
	w.streams[idx].keep = true
	return &outStream{idx: int32(idx), solo: w}
}

// Next returns the stream's next instruction, advancing its walk as far as
// that takes.
func (o *outStream) Next() (*isa.Instruction, error) {
	if o.empty {
		return nil, nil
	}
	w := o.solo
	if w == nil {
		w = o.sess.shared
	}
	st := w.streams[o.idx]
	if in := w.popPlain(st); in != nil {
		o.handed++
		w.drained(st)
		return in, nil
	}
	for {
		if st.headFinal(w.done) != nil {
			o.handed++
			in := w.next(st)
			w.drained(st)
			return in, nil
		}
		if w.err != nil {
			return nil, w.err
		}
		if w.done {
			return nil, nil
		}
		if o.solo == nil && o.sess.bufferedExcept(o.idx) >= o.sess.c.soloBuf {
			o.detach()
			w = o.solo
			st = w.streams[o.idx]
			continue
		}
		w.step()
	}
}

// bufferedExcept returns how many instructions the shared walk holds for
// streams other than idx.
func (s *session) bufferedExcept(idx int32) int {
	// A detached stream's shared copy holds none.
	return s.shared.held - s.shared.streams[idx].buffered()
}

// detach gives the stream a walk of its own, which skips what the shared
// walk has handed out already; the shared walk stops keeping it.
func (o *outStream) detach() {
	w := newWalk(o.sess.c)
	st := w.streams[o.idx]
	st.keep = true
	st.skip = o.handed
	old := o.sess.shared.streams[o.idx]
	old.keep, old.detached = false, true
	old.dropOut()
	o.solo = w
}

// Drain generates every instruction of a program the scheduler made, in
// one walk, without simulating, and returns how many there are (-1 if the
// program is not the scheduler's or fails). It measures the scheduler's
// own cost.
func Drain(p *isa.Program) int64 {
	if p.OpenAll == nil {
		return -1
	}
	streams := p.OpenAll()
	if len(streams) == 0 {
		return 0
	}
	o, ok := streams[0].(*outStream)
	if !ok {
		return -1
	}
	w := o.sess.shared
	var n int64
	for !w.done && w.err == nil {
		w.step()
		for _, s := range w.streams {
			if s.keep {
				// Hand out what is final, as the simulator would.
				for {
					if w.popPlain(s) == nil {
						if s.headFinal(false) == nil {
							break
						}
						w.next(s)
					}
					n++
				}
			}
		}
	}
	for _, s := range w.streams {
		if s.keep {
			for s.head() != nil {
				w.next(s)
				n++
			}
		}
	}
	if w.err != nil {
		return -1
	}
	return n
}

package sched

// vclock is a vector clock: for every stream, the highest position known
// complete (-1: none). Over many streams (24 a core: 3,072 at 128 ranks)
// it is kept in chunks that copies share, so that a copy costs a few
// chunk pointers and a change a chunk: a frozen copy shares every chunk
// and is never written; a clock that writes an entry of a chunk it does
// not own copies that chunk first; a join takes a chunk of the other clock
// whole where it dominates. Over few streams (dense, one chunk) a copy is
// the array, into a buffer reused once the copy is dropped. The values are
// those of a plain array either way; only the cost differs.
type vclock struct {
	// d is a dense clock's array; ch a chunked clock's chunks.
	d  []int64
	ch [][]int64
}

// mclock is a mutable vector clock (an engine's knowledge).
type mclock struct {
	vclock
	// own[c] says chunk c is this clock's alone.
	own []bool
	// shift is log2 of the chunk size.
	shift uint
	// The clock's last frozen copy, while it has not changed since (dirty
	// false).
	last  [][]int64
	dirty bool
}

// denseStreams is the most streams whose clocks are dense (a chip's eight
// cores: 192): below it a copy of the array costs less than the joins of
// chunks (measured at 8 to 128 ranks).
const denseStreams = 256

// vcAlloc makes one walk's clocks: their chunks and pointer arrays from
// slabs, and, dense, reuses the buffers of dropped copies.
type vcAlloc struct {
	shift  uint
	mask   int
	chunks int
	dense  bool
	// none is the chunk of no knowledge (every entry -1), shared.
	none []int64
	slab []int64
	ptrs [][]int64
	free [][]int64
}

func newVCAlloc(streams int) *vcAlloc {
	a := &vcAlloc{shift: 6}
	if streams <= denseStreams {
		a.dense = true
		a.none = make([]int64, streams)
		for i := range a.none {
			a.none[i] = -1
		}
		return a
	}
	for a.shift > 3 && 1<<(a.shift-1) >= streams {
		a.shift--
	}
	size := 1 << a.shift
	a.mask = size - 1
	a.chunks = (streams + size - 1) >> a.shift
	a.none = make([]int64, size)
	for i := range a.none {
		a.none[i] = -1
	}
	return a
}

// Chunks and pointer arrays come from slabs of a few at a time, each slab
// alive while any of its clocks is: a clock kept long (the oldest mark of a
// stream that seldom signals) holds its slab, so slabs stay small.
const (
	slabChunks   = 8
	slabPointers = 4
)

func (a *vcAlloc) chunk() []int64 {
	size := a.mask + 1
	if len(a.slab) < size {
		a.slab = make([]int64, size*slabChunks)
	}
	c := a.slab[:size:size]
	a.slab = a.slab[size:]
	return c
}

func (a *vcAlloc) pointers() [][]int64 {
	if len(a.ptrs) < a.chunks {
		a.ptrs = make([][]int64, a.chunks*slabPointers)
	}
	p := a.ptrs[:a.chunks:a.chunks]
	a.ptrs = a.ptrs[a.chunks:]
	return p
}

// noKnowledge returns a frozen clock that knows nothing.
func (a *vcAlloc) noKnowledge() vclock {
	if a.dense {
		return vclock{d: a.none}
	}
	p := a.pointers()
	for i := range p {
		p[i] = a.none
	}
	return vclock{ch: p}
}

// mutable returns a clock that knows nothing, to be written.
func (a *vcAlloc) mutable() mclock {
	if a.dense {
		// Its own: copies are made of it, never shared.
		return mclock{vclock: vclock{d: append([]int64(nil), a.none...)}}
	}
	v := mclock{vclock: a.noKnowledge(), shift: a.shift}
	v.own = make([]bool, len(v.ch))
	return v
}

// get returns entry i of a frozen clock.
func (v vclock) get(a *vcAlloc, i int32) int64 {
	if v.d != nil {
		return v.d[i]
	}
	return v.ch[int(i)>>a.shift][int(i)&a.mask]
}

// get returns entry i.
func (v *mclock) get(i int32) int64 {
	if v.d != nil {
		return v.d[i]
	}
	return v.ch[int(i)>>v.shift][int(i)&(1<<v.shift-1)]
}

// set writes entry i.
func (v *mclock) set(a *vcAlloc, i int32, x int64) {
	if v.d != nil {
		v.d[i] = x
		return
	}
	c := int(i) >> a.shift
	if !v.own[c] {
		n := a.chunk()
		copy(n, v.ch[c])
		v.ch[c], v.own[c] = n, true
	}
	v.ch[c][int(i)&a.mask] = x
	v.dirty = true
}

// view returns the clock's knowledge to keep at once (hold): a frozen
// copy, or, dense, the clock itself.
func (v *mclock) view(a *vcAlloc) vclock {
	if a.dense {
		return v.vclock
	}
	return v.freeze(a)
}

// hold keeps src (a frozen copy or a view) in *dst, which owns what it
// held before: shared, or, dense, copied into dst's buffer.
func (a *vcAlloc) hold(dst *vclock, src vclock) {
	if !a.dense {
		*dst = src
		return
	}
	if dst.d == nil {
		dst.d = make([]int64, len(src.d))
	}
	copy(dst.d, src.d)
}

// snapshot returns a frozen copy of a mutable clock, to be released when
// dropped.
func (a *vcAlloc) snapshot(v *mclock) vclock {
	if !a.dense {
		return v.freeze(a)
	}
	var c []int64
	if k := len(a.free); k > 0 {
		c = a.free[k-1]
		a.free = a.free[:k-1]
	} else {
		c = make([]int64, len(v.d))
	}
	copy(c, v.d)
	return vclock{d: c}
}

// release takes back a snapshot no one refers to any more.
func (a *vcAlloc) release(c vclock) {
	if c.d != nil {
		a.free = append(a.free, c.d)
	}
}

// freeze returns a frozen copy of the clock, which no longer owns its
// chunks.
func (v *mclock) freeze(a *vcAlloc) vclock {
	if v.last != nil && !v.dirty {
		return vclock{ch: v.last}
	}
	p := a.pointers()
	copy(p, v.ch)
	clear(v.own)
	v.last, v.dirty = p, false
	return vclock{ch: p}
}

// joinDense raises a dense clock's array to at least src's.
func joinDense(dst, src []int64) {
	for i, v := range src {
		if v > dst[i] {
			dst[i] = v
		}
	}
}

// join raises the clock to at least src (frozen), entry by entry.
func (v *mclock) join(a *vcAlloc, src vclock) {
	if a.dense {
		joinDense(v.d, src.d)
		return
	}
	for c, sc := range src.ch {
		dc := v.ch[c]
		if &dc[0] == &sc[0] {
			continue
		}
		greater, less := false, false
		dc = dc[:len(sc)]
		for k, x := range sc {
			if x > dc[k] {
				greater = true
				if less {
					break
				}
			} else if x < dc[k] {
				less = true
				if greater {
					break
				}
			}
		}
		switch {
		case !greater && less:
		case !greater:
			// Equal: share src's chunk, so that the next join with a clock
			// that shares it too finds the same chunk.
			v.ch[c], v.own[c] = sc, false
		case !less:
			v.ch[c], v.own[c], v.dirty = sc, false, true
		default:
			if !v.own[c] {
				n := a.chunk()
				copy(n, dc)
				dc = n
				v.ch[c], v.own[c] = n, true
			}
			for k, x := range sc {
				if x > dc[k] {
					dc[k] = x
				}
			}
			v.dirty = true
		}
	}
}

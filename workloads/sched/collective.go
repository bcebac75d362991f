package sched

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/tile"
)

// Collectives and lockstep cores loops.
//
// A cores loop whose body holds a collective, or an op that accesses
// another rank's tile (x@RANK), is walked in lockstep: each statement of
// its body runs for every rank of the loop before the next statement runs
// for any, so what one rank writes for another in one statement is written
// before the other reads it in a later one, and the dependency records
// order the two (the reader waits on the writer's semaphore). Any other
// cores loop is walked rank after rank, as before.
//
// A collective is expanded here, before placement, into the scheduler's
// own DMA transfers: a list of steps, each a list of transfers per rank of
// its group, between the ranks' HBM tiles (and scratch tiles the
// algorithm needs), reductions by dma_copy acc=add. Inside a cores loop
// each step is a phase of the lockstep walk; outside one, the collective's
// steps are walked over its group in the same way. The dependency records
// order the steps as the data flows (a transfer that reads what an earlier
// step wrote waits for it; one that overwrites what an earlier step reads
// waits for that), and every wait names an instruction made earlier in the
// walk, so the ranks cannot wait for one another in a cycle.
//
// The transfers are triggered by GpSimd (whose stream the kernels' loads
// and evacuations rarely use, so a transfer waiting for another rank holds
// up little) without descriptor generation (the descriptors are prepared
// ahead, as the Neuron runtime's collectives are), on DMA queues kept for
// collectives and left out of the automatic hand-out, and they carry the
// collective's op id.

// Message sizes at which the algorithm changes (reference §5.1: mesh below
// 1 MB, recursive halving/doubling from 1 to 56 MB, ring above).
const (
	meshMaxBytes = 1 << 20
	rdhMaxBytes  = 56 << 20
)

// collectiveQueues is how many DMA queues of each rank collectives use.
const collectiveQueues = 2

// phased is a lockstep walk: phases, each run for every rank in ranks
// (in order) before the next. For a cores loop each statement of its body
// is one phase and a collective's steps are more; a collective outside the
// cores loops has only its steps.
type phased struct {
	ranks  []int
	phases []phase
}

// phase is one statement for every rank (all), or a collective's step:
// each rank's transfers (per, by index into ranks).
type phase struct {
	all []tile.Stmt
	per [][]tile.Stmt
}

func (p *phase) stmtsFor(i int) []tile.Stmt {
	if p.per != nil {
		return p.per[i]
	}
	return p.all
}

// expansion is what the collectives add to a kernel.
type expansion struct {
	// tiles are scratch tiles (IDs after the kernel's), each per rank on
	// tileRanks[t].
	tiles     []*tile.Tile
	tileRanks map[*tile.Tile][]int
	// ops are the transfers (IDs after the kernel's ops); what says, for
	// each, the rank that triggers it and the collective it belongs to.
	ops  []*tile.Op
	what map[*tile.Op]synth
	// loops are the cores loops walked in lockstep; colls the phases of
	// each collective outside the cores loops.
	loops map[*tile.Loop]*phased
	colls map[*tile.Collective]*phased
	// ranks are those collectives outside the cores loops use; queues the
	// DMA queues kept for collectives.
	ranks  []int
	queues []int
	// notes are what the program says of its collectives (Program.Notes).
	notes []string
	// unit, when set, is the ranks symmetric-core reuse simulates of the
	// loop unitLoop's unitOf (symmetric.go).
	unit     []int
	unitLoop *tile.Loop
	unitOf   int
}

type synth struct {
	issuer int
	what   string
	// gate, when set, is the issuer's input tile of the collective: the
	// transfer, one that reads it, waits for every write to it (the
	// collective starts on its whole input, as the CC-Cores start a
	// collective once its input tensor is complete, not piece by piece as
	// its rows are written).
	gate *tile.Tile
	// done, on the nop that ends a rank's part of a collective, is the
	// rank's output tile: the nop waits for every write to it, and what
	// reads the output waits for the nop (the rank's result is read once
	// complete, as the CC-Cores signal a collective's end).
	done *tile.Tile
	// mirrored marks a transfer symmetric-core reuse keeps for its image
	// (xfer.via): what its destination waits for is another rank's.
	mirrored bool
}

// expander builds an expansion.
type expander struct {
	k    *tile.Kernel
	tg   *Target
	opts Options
	ex   *expansion
	// nextOp and nextTile number the expansion's ops and tiles.
	nextOp, nextTile int
	nColl            int
	consts           map[int64]tile.Expr
	// scratchTiles are the scratch tiles made, by name; orders the member
	// orders found (topo.go).
	scratchTiles map[string]*tile.Tile
	orders       map[orderKey][]int
}

// expand expands every collective of k and finds the lockstep loops.
func expand(k *tile.Kernel, tg *Target, opts Options) (*expansion, error) {
	ex := &expansion{tileRanks: map[*tile.Tile][]int{}, what: map[*tile.Op]synth{},
		loops: map[*tile.Loop]*phased{}, colls: map[*tile.Collective]*phased{}}
	switch opts.CollectiveAlgorithm {
	case "", tile.AlgoMesh, tile.AlgoRDH, tile.AlgoRing:
	default:
		return nil, fmt.Errorf("kernel %s: collective algorithm %q: the algorithms are %s (\"\" chooses by message size)",
			k.Name, opts.CollectiveAlgorithm, strings.Join(tile.CollectiveAlgorithms, ", "))
	}
	e := &expander{k: k, tg: tg, opts: opts, ex: ex, nextOp: len(k.Ops), nextTile: len(k.Tiles)}
	if len(k.Collectives()) > 0 {
		// The queues kept for collectives: the highest the kernel does not
		// pin.
		pinned := map[int]bool{}
		for _, op := range k.Ops {
			if op.QueuePinned {
				pinned[int(op.Attrs.Queue)] = true
			}
		}
		for q := tg.Limits.DMAQueues - 1; q >= 0 && len(ex.queues) < collectiveQueues; q-- {
			if !pinned[q] {
				ex.queues = append(ex.queues, q)
			}
		}
		if len(ex.queues) == 0 {
			return nil, fmt.Errorf("kernel %s: the kernel pins every DMA queue; its collectives need one", k.Name)
		}
	}
	seen := map[int]bool{}
	var walk func(stmts []tile.Stmt) error
	walk = func(stmts []tile.Stmt) error {
		for _, s := range stmts {
			switch s := s.(type) {
			case *tile.Loop:
				if s.Kind == tile.Cores {
					if err := e.coresLoop(s); err != nil {
						return err
					}
					continue
				}
				if err := walk(s.Body); err != nil {
					return err
				}
			case *tile.If:
				if err := walk(s.Then); err != nil {
					return err
				}
				if err := walk(s.Else); err != nil {
					return err
				}
			case *tile.Collective:
				n, _ := ranksOf(tg.Limits)
				for i, r := range s.Group {
					if r < 0 || r >= n {
						return e.errAt(s, s.GroupPos(i), "group names %s", whichNoRankText(tg.Limits, r))
					}
				}
				if len(s.Group) == 0 {
					return e.errAt(s, s.Pos, "outside a cores loop a collective needs group=[RANKS]")
				}
				ph := &phased{ranks: append([]int(nil), s.Group...)}
				steps, err := e.collective(s, nil, s.Group)
				if err != nil {
					return err
				}
				e.nColl++
				e.addSteps(ph, steps)
				ex.colls[s] = ph
				for _, r := range s.Group {
					if !seen[r] {
						seen[r] = true
						ex.ranks = append(ex.ranks, r)
					}
				}
			}
		}
		return nil
	}
	if err := walk(k.Body); err != nil {
		return nil, err
	}
	return ex, nil
}

// errAt is an error located at pos in collective c.
func (e *expander) errAt(c *tile.Collective, pos tile.Pos, format string, args ...any) error {
	return &OpError{Kernel: e.k.Name, File: e.k.File, Pos: pos.String(), Op: tile.FormatCollective(c), Msg: fmt.Sprintf(format, args...)}
}

// coresLoop makes the lockstep walk of a cores loop that needs one.
func (e *expander) coresLoop(l *tile.Loop) error {
	needs, remote := false, false
	var find func(stmts []tile.Stmt)
	find = func(stmts []tile.Stmt) {
		for _, s := range stmts {
			switch s := s.(type) {
			case *tile.Collective:
				needs = true
			case *tile.Op:
				for _, a := range append(append([]tile.Access(nil), s.Outs...), s.Ins...) {
					if !a.Rank.IsZero() {
						needs, remote = true, true
					}
				}
			case *tile.Loop:
				find(s.Body)
			case *tile.If:
				find(s.Then)
				find(s.Else)
			}
		}
	}
	find(l.Body)
	if !needs {
		return nil
	}
	lo, ok1 := l.Start.Static()
	hi, ok2 := l.Stop.Static()
	step, _ := l.Step.Const()
	n, _ := ranksOf(e.tg.Limits)
	if !ok1 || !ok2 || lo < 0 || hi > int64(n) {
		return &OpError{Kernel: e.k.Name, File: e.k.File, Pos: l.Pos.String(), Op: "for " + l.Var.Name + " cores",
			Msg: "a cores loop needs constant bounds within " + coresText(e.tg.Limits)}
	}
	ph := &phased{}
	for r := lo; r < hi; r += max(step, 1) {
		ph.ranks = append(ph.ranks, int(r))
	}
	if len(ph.ranks) == 0 {
		return nil
	}
	// The body's statements, a collective's as its groups' steps.
	type item struct {
		stmt  tile.Stmt
		steps [][]cstep
	}
	var items []item
	firstTile := e.nextTile
	for _, s := range l.Body {
		c, ok := s.(*tile.Collective)
		if !ok {
			items = append(items, item{stmt: s})
			continue
		}
		group := c.Group
		if len(group) == 0 {
			group = ph.ranks
		}
		for i, r := range group {
			if r < 0 || r >= n {
				return e.errAt(c, c.GroupPos(i), "group names %s", whichNoRankText(e.tg.Limits, r))
			}
			found := false
			for _, x := range ph.ranks {
				found = found || x == r
			}
			if !found {
				return e.errAt(c, c.GroupPos(i), "group names rank %d, which the cores loop over %s does not run (ranks %d to %d)",
					r, l.Var.Name, ph.ranks[0], ph.ranks[len(ph.ranks)-1])
			}
		}
		groups := [][]int{group}
		if c.GroupSize > 0 {
			if len(ph.ranks)%c.GroupSize != 0 {
				return e.errAt(c, c.GroupSizePos(), "group_size=%d does not divide the %d ranks of the cores loop over %s (ranks %d to %d)",
					c.GroupSize, len(ph.ranks), l.Var.Name, ph.ranks[0], ph.ranks[len(ph.ranks)-1])
			}
			groups = nil
			for g := 0; g < len(ph.ranks); g += c.GroupSize {
				groups = append(groups, ph.ranks[g:g+c.GroupSize])
			}
		}
		var all [][]cstep
		for _, g := range groups {
			steps, err := e.collective(c, l, g)
			if err != nil {
				return err
			}
			all = append(all, steps)
		}
		e.nColl++
		items = append(items, item{steps: all})
	}
	if e.opts.SymmetricRanks && !remote && e.ex.unit == nil && !usesVar(l.Body, l.Var) {
		var colls [][]cstep
		ok := true
		for _, it := range items {
			if it.stmt == nil {
				ok = ok && len(it.steps) == 1
				colls = append(colls, it.steps[0])
			}
		}
		if ok {
			if unit := e.symmetricUnit(ph.ranks, colls); unit != nil {
				e.reduceTo(l, ph, unit, firstTile)
			}
		}
	}
	for _, it := range items {
		if it.stmt != nil {
			ph.phases = append(ph.phases, phase{all: []tile.Stmt{it.stmt}})
			continue
		}
		e.addSteps(ph, it.steps...)
	}
	e.ex.loops[l] = ph
	return nil
}

// xfer is one transfer of a collective: triggered by group member issuer,
// dst (+)= src. lane 0 takes the issuer's kept queues in turn; lane k > 0
// is kept queue k-1 (modulo how many are kept): transfers of one lane run
// in the queue's order, with no wait between them.
type xfer struct {
	issuer   int
	dst, src view
	add      bool
	lane     int
	// via is the rank the transfer stands for a transfer to, mirror the
	// issuer of the transfer whose destination it writes, and images the
	// chips (from, to) of its images that cross chips (symmetric-core
	// reuse: symmetric.go; via -1: none).
	via, mirror int
	images      []int32
}

// The lanes of a one-step (mesh) collective: a member's reductions into
// its piece, and what reads the piece after them, queue behind its local
// copy on laneReduce; what it sends takes laneSend.
const (
	laneReduce = 1
	laneSend   = 2
)

// addSteps turns a collective's steps into ops and phases of ph: one
// list of steps per group of ranks (group_size=), step k of every group
// in one phase.
func (e *expander) addSteps(ph *phased, groups ...[]cstep) {
	idx := map[int]int{}
	for i, r := range ph.ranks {
		idx[r] = i
	}
	qn := map[int]int{}
	what := map[*tile.Collective]string{}
	nSteps := 0
	for _, g := range groups {
		nSteps = max(nSteps, len(g))
	}
	for k := 0; k < nSteps; k++ {
		p := phase{per: make([][]tile.Stmt, len(ph.ranks))}
		any := false
		for _, g := range groups {
			if k >= len(g) {
				continue
			}
			if e.stepOps(&g[k], &p, idx, qn, what) {
				any = true
			}
		}
		if any {
			ph.phases = append(ph.phases, p)
		}
	}
	// A last phase: each member's end of the collective (a send or recv
	// is one transfer, which what reads its output waits for anyway).
	var c *tile.Collective
	members := map[int]bool{}
	for _, g := range groups {
		if len(g) > 0 {
			c = g[0].c
			for _, r := range g[0].ranks {
				members[r] = true
			}
		}
	}
	if c == nil || c.Kind == tile.Send || c.Kind == tile.Recv {
		return
	}
	out := c.Outs[0].Tile
	if !out.PerRank() || out.Mem != isa.MemHBM {
		return
	}
	p := phase{per: make([][]tile.Stmt, len(ph.ranks))}
	for i, r := range ph.ranks {
		if !members[r] {
			continue
		}
		op := &tile.Op{Opcode: isa.OpNop, Engine: isa.EngineGpSimd, OpID: c.OpID, Pos: c.Pos, ID: e.nextOp}
		e.nextOp++
		e.ex.ops = append(e.ex.ops, op)
		e.ex.what[op] = synth{issuer: r, what: what[c], done: out}
		p.per[i] = append(p.per[i], op)
	}
	ph.phases = append(ph.phases, p)
}

// stepOps adds the ops of one step to phase p, reporting whether it had
// any.
func (e *expander) stepOps(st *cstep, p *phase, idx, qn map[int]int, what map[*tile.Collective]string) bool {
	if _, ok := what[st.c]; !ok {
		what[st.c] = tile.FormatCollective(st.c)
	}
	any := false
	for _, x := range st.xs {
		if x.dst.elems() == 0 || x.src.elems() == 0 {
			continue
		}
		r := st.ranks[x.issuer]
		var q int
		if x.lane > 0 {
			q = e.ex.queues[(x.lane-1)%len(e.ex.queues)]
		} else {
			q = e.ex.queues[qn[r]%len(e.ex.queues)]
			qn[r]++
		}
		op := &tile.Op{Opcode: isa.OpDMACopy, Engine: isa.EngineGpSimd, Outs: []tile.Access{e.access(x.dst)},
			Ins: []tile.Access{e.access(x.src)}, QueuePinned: true, DGESet: true, OpID: st.c.OpID, Pos: st.c.Pos, ID: e.nextOp}
		op.Attrs.Queue, op.Attrs.DGE = int16(q), isa.DGENone
		if x.add {
			op.Attrs.Accumulate = isa.ALUAdd
		}
		if x.via >= 0 {
			per := max(e.tg.Limits.CoresPerChip, 1)
			op.Attrs.Via, op.Attrs.ViaChip, op.Attrs.ViaCore = true, int32(x.via/per), int32(x.via%per)
			op.Attrs.MirrorChip, op.Attrs.MirrorCore = int32(x.mirror/per), int32(x.mirror%per)
			op.Attrs.LinkImages = x.images
		}
		e.nextOp++
		e.ex.ops = append(e.ex.ops, op)
		sy := synth{issuer: r, what: what[st.c], mirrored: x.via >= 0}
		if in := st.c.Ins[0].Tile; x.src.t == in && in.PerRank() && in.Mem == isa.MemHBM {
			sy.gate = in
		}
		e.ex.what[op] = sy
		i := idx[r]
		p.per[i] = append(p.per[i], op)
		any = true
	}
	return any
}

// cstep is one step of a collective: transfers by group index (ranks maps
// a group index to its rank).
type cstep struct {
	c     *tile.Collective
	ranks []int
	algo  string
	xs    []xfer
}

// vdim is one dimension of a collective's operand: n elements from start,
// step apart, or the single index start.
type vdim struct {
	start tile.Expr
	n     int64
	step  int64
	index bool
}

// view is a collective's operand on one rank (or a piece of it): its
// tile's instance (rank -1: a kernel-level tensor) and its dimensions.
type view struct {
	t    *tile.Tile
	rank int
	dims []vdim
}

func (v view) elems() int64 {
	n := int64(1)
	for _, d := range v.dims {
		if !d.index {
			n *= d.n
		}
	}
	return n
}

// overlaps reports whether two views are known to share an element: the
// same instance of a tile, at constant positions that overlap.
func (v view) overlaps(o view) bool {
	if v.t != o.t || v.rank != o.rank {
		return false
	}
	for d := range v.dims {
		a, ok1 := v.dims[d].start.Const()
		b, ok2 := o.dims[d].start.Const()
		if !ok1 || !ok2 {
			return false
		}
		ea := a + (v.dims[d].n-1)*v.dims[d].step + 1
		eb := b + (o.dims[d].n-1)*o.dims[d].step + 1
		if ea <= b || eb <= a {
			return false
		}
	}
	return true
}

// shape is the sizes of the kept (not indexed) dimensions.
func (v view) shape() []int64 {
	var s []int64
	for _, d := range v.dims {
		if !d.index {
			s = append(s, d.n)
		}
	}
	return s
}

func shapeText(s []int64) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// splitDim returns the dimension pieces of the view are cut along for n
// pieces: the first kept one of at least n elements, else the largest.
func (v view) splitDim(n int) int {
	best := -1
	for d, x := range v.dims {
		if x.index {
			continue
		}
		if x.n >= int64(n) {
			return d
		}
		if best < 0 || x.n > v.dims[best].n {
			best = d
		}
	}
	return best
}

// part returns pieces lo..hi-1 of the view cut into n: along the split
// dimension, piece k holds elements k*len/n to (k+1)*len/n.
func (v view) part(n, lo, hi int) view {
	d := v.splitDim(n)
	out := v
	out.dims = append([]vdim(nil), v.dims...)
	x := out.dims[d]
	a, b := int64(lo)*x.n/int64(n), int64(hi)*x.n/int64(n)
	out.dims[d] = vdim{start: x.start.AddC(a * x.step), n: b - a, step: x.step}
	return out
}

// access returns the view as an access; its constants are shared (so
// that the scheduler compiles each once).
func (e *expander) access(v view) tile.Access {
	a := tile.Access{Tile: v.t}
	for _, d := range v.dims {
		if d.index {
			a.Ranges = append(a.Ranges, tile.I(e.intern(d.start)))
			continue
		}
		a.Ranges = append(a.Ranges, tile.Range{Start: e.intern(d.start), Stop: e.intern(d.start.AddC((d.n-1)*d.step + 1)), Step: d.step})
	}
	if v.rank >= 0 {
		a.Rank = e.intern(tile.C(int64(v.rank)))
	}
	return a
}

// cst returns the expression of constant v, one for every use of v.
func (e *expander) cst(v int64) tile.Expr {
	if c, ok := e.consts[v]; ok {
		return c
	}
	return e.intern(tile.C(v))
}

// intern returns one expression for every constant of a value.
func (e *expander) intern(x tile.Expr) tile.Expr {
	v, ok := x.Const()
	if !ok {
		return x
	}
	if c, ok := e.consts[v]; ok {
		return c
	}
	if e.consts == nil {
		e.consts = map[int64]tile.Expr{}
	}
	e.consts[v] = x
	return x
}

// makeView evaluates an operand for rank r (the cores loop variable v
// replaced by r; v nil outside a cores loop).
func (e *expander) makeView(c *tile.Collective, a *tile.Access, v *tile.Var, r int) (view, error) {
	t := a.Tile
	vw := view{t: t, rank: -1}
	if t.PerRank() {
		vw.rank = r
	}
	pos := a.Pos
	if pos.Line == 0 {
		pos = c.Pos
	}
	sub := func(x tile.Expr) tile.Expr {
		if v == nil {
			return x
		}
		return x.Subst(v, int64(r))
	}
	kept := false
	for d := range t.Shape {
		if d >= len(a.Ranges) {
			vw.dims = append(vw.dims, vdim{start: tile.C(0), n: t.Shape[d], step: 1})
			kept = true
			continue
		}
		rg := a.Ranges[d]
		start := sub(rg.Start)
		if rg.Index {
			vw.dims = append(vw.dims, vdim{start: start, n: 1, step: 1, index: true})
			continue
		}
		ext, ok := sub(rg.Stop).Sub(start).Folded()
		if !ok {
			return vw, e.errAt(c, pos, "dimension %d of %s: a collective's operand sizes must be constant (they may not depend on a loop)", d, t.Name)
		}
		if ext <= 0 {
			return vw, e.errAt(c, pos, "dimension %d of %s is empty (for rank %d)", d, t.Name, r)
		}
		vw.dims = append(vw.dims, vdim{start: start, n: (ext + rg.Step - 1) / rg.Step, step: rg.Step})
		kept = true
	}
	if !kept {
		// A single element: its last index becomes a range of one.
		d := &vw.dims[len(vw.dims)-1]
		d.index = false
	}
	return vw, nil
}

// inside checks that an operand, where its position is known, lies in
// its tile (the transfers of its pieces would find it otherwise, for a
// piece).
func (e *expander) inside(c *tile.Collective, v view) error {
	for d, x := range v.dims {
		st, ok := x.start.Const()
		if !ok {
			continue
		}
		sp := st + (x.n-1)*x.step + 1
		if st < 0 || sp > v.t.Shape[d] {
			if x.index {
				sp = st + 1
			}
			return e.errAt(c, c.Pos, "dimension %d of %s: %d:%d is outside 0:%d or empty", d, v.t.Name, st, sp, v.t.Shape[d])
		}
	}
	return nil
}

// scratch returns a per-rank scratch HBM tile shaped like v, on ranks.
func (e *expander) scratch(c *tile.Collective, l *tile.Loop, v view, ranks []int) *tile.Tile {
	return e.scratchTile(c, l, "scratch", v.t.DType, v.shape(), ranks)
}

// scratchTile returns a per-rank scratch HBM tile, named for the
// collective and what, on ranks.
func (e *expander) scratchTile(c *tile.Collective, l *tile.Loop, what string, dt isa.DType, shape []int64, ranks []int) *tile.Tile {
	name := fmt.Sprintf("coll%d_%s", e.nColl, what)
	for k := 1; ; k++ {
		// The groups of one collective share its scratch tiles, each rank
		// its own instance (a group of other sizes gets a tile of its own).
		t := e.scratchTiles[name]
		if t == nil {
			break
		}
		if t.DType == dt && equalShape(t.Shape, shape) {
			e.ex.tileRanks[t] = append(e.ex.tileRanks[t], ranks...)
			return t
		}
		name = fmt.Sprintf("coll%d_%s%d", e.nColl, what, k)
	}
	t := &tile.Tile{Name: name, Mem: isa.MemHBM, DType: dt, Shape: shape,
		Bufs: 1, Offset: -1, Bank: -1, Scope: l, ID: e.nextTile, Pos: c.Pos}
	if e.scratchTiles == nil {
		e.scratchTiles = map[string]*tile.Tile{}
	}
	e.scratchTiles[name] = t
	e.nextTile++
	e.ex.tiles = append(e.ex.tiles, t)
	e.ex.tileRanks[t] = append([]int(nil), ranks...)
	return t
}

// algorithm returns the algorithm a collective of n ranks moving bytes per
// rank uses. rdh needs a power-of-two group: the statement's algo=rdh on
// another is an error; the kernel-wide option's runs ring, with a note;
// the size's choice runs ring.
func (e *expander) algorithm(c *tile.Collective, n int, bytes int64) (string, error) {
	pow2 := bits.OnesCount(uint(n)) == 1
	if c.Algo == tile.AlgoRDH && !pow2 {
		return "", e.errAt(c, c.AlgoPos(), "algo=rdh pairs ranks whose indices differ in one bit, so it needs a group of a power-of-two size; this one has %d ranks: use algo=ring or algo=mesh, or leave algo= out", n)
	}
	a := c.Algo
	if a == "" {
		a = e.opts.CollectiveAlgorithm
		if a == tile.AlgoRDH && !pow2 && e.ex != nil {
			e.note("%s%s: the collective algorithm rdh needs a power-of-two group; this one has %d ranks and runs ring", e.where(c), tile.FormatCollective(c), n)
		}
	}
	if a == "" {
		switch {
		case bytes < meshMaxBytes:
			a = tile.AlgoMesh
		case bytes <= rdhMaxBytes:
			a = tile.AlgoRDH
		default:
			a = tile.AlgoRing
		}
	}
	if a == tile.AlgoRDH && !pow2 {
		a = tile.AlgoRing
	}
	return a, nil
}

// note adds a note for the program, once.
func (e *expander) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	for _, x := range e.ex.notes {
		if x == n {
			return
		}
	}
	e.ex.notes = append(e.ex.notes, n)
}

// where is "FILE:LINE:COL: " of a collective in the text form, or "".
func (e *expander) where(c *tile.Collective) string {
	if e.k.File == "" || c.Pos.Line == 0 {
		return ""
	}
	return e.k.File + ":" + c.Pos.String() + ": "
}

// Algorithm returns the algorithm the scheduler uses for a collective of
// group size n moving bytes per rank, given the statement's algo= and the
// kernel-wide option (tests and reports use it).
// The statement's algo=rdh on a group that is not a power of two is an
// error when scheduled; here it gives ring, as the option does.
func Algorithm(stmtAlgo, optAlgo string, n int, bytes int64) string {
	e := &expander{opts: Options{CollectiveAlgorithm: optAlgo}}
	if stmtAlgo == tile.AlgoRDH && bits.OnesCount(uint(n)) != 1 {
		stmtAlgo = tile.AlgoRing
	}
	a, _ := e.algorithm(&tile.Collective{Algo: stmtAlgo}, n, bytes)
	return a
}

// collective expands c (in cores loop l, nil outside one) over group.
func (e *expander) collective(c *tile.Collective, l *tile.Loop, group []int) ([]cstep, error) {
	n := len(group)
	if (c.Kind == tile.Send || c.Kind == tile.Recv) && n != 2 {
		return nil, e.errAt(c, c.GroupPos(0), "%s moves a tile between two ranks: group=[FROM, TO], not %d ranks", c.Kind, n)
	}
	seen := map[int]int{}
	for i, r := range group {
		if j, dup := seen[r]; dup {
			return nil, e.errAt(c, c.GroupPos(i), "rank %d is in the group twice (members %d and %d)", r, j, i)
		}
		seen[r] = i
	}
	var v *tile.Var
	if l != nil {
		v = l.Var
	}
	outs, ins := make([]view, n), make([]view, n)
	for i, r := range group {
		var err error
		if outs[i], err = e.makeView(c, &c.Outs[0], v, r); err != nil {
			return nil, err
		}
		if ins[i], err = e.makeView(c, &c.Ins[0], v, r); err != nil {
			return nil, err
		}
		for _, vw := range []view{outs[i], ins[i]} {
			if err := e.inside(c, vw); err != nil {
				return nil, err
			}
		}
		if outs[i].overlaps(ins[i]) {
			return nil, e.errAt(c, c.Pos, "rank %d's output and input overlap; a collective is not done in place", r)
		}
	}
	if dt, it := c.Outs[0].Tile.DType, c.Ins[0].Tile.DType; dt != it {
		return nil, e.errAt(c, c.Pos, "the output is %s and the input %s; a collective moves one dtype", dt, it)
	}
	eb := int64(c.Ins[0].Tile.DType.Bytes())
	b := &cbuild{e: e, c: c, l: l, n: n, group: group, in: ins, out: outs}
	if per := max(e.tg.Limits.CoresPerChip, 1); group[0]/per != group[n-1]/per {
		b.block = per
	}
	same := func(vs []view, what string) error {
		for i := range vs {
			if !equalShape(vs[i].shape(), vs[0].shape()) {
				return e.errAt(c, c.Pos, "mismatched sizes: rank %d's %s is %s, rank %d's %s; every rank's must be the same",
					group[i], what, shapeText(vs[i].shape()), group[0], shapeText(vs[0].shape()))
			}
		}
		return nil
	}
	pieceOf := func(whole, piece view, k int, wholeWhat, pieceWhat string, r int) error {
		p := whole.part(n, k, k+1)
		if p.elems() != piece.elems() {
			return e.errAt(c, c.Pos, "mismatched sizes: rank %d's %s has %d elements, but piece %d of %d of the %s (%s) has %d",
				r, pieceWhat, piece.elems(), k, n, wholeWhat, shapeText(p.shape()), p.elems())
		}
		return nil
	}
	var bytes int64
	switch c.Kind {
	case tile.AllReduce:
		if err := same(ins, "input"); err != nil {
			return nil, err
		}
		for i := range outs {
			if !equalShape(outs[i].shape(), ins[i].shape()) {
				return nil, e.errAt(c, c.Pos, "mismatched sizes: rank %d's output is %s and its input %s; an all_reduce needs one shape",
					group[i], shapeText(outs[i].shape()), shapeText(ins[i].shape()))
			}
		}
		bytes = ins[0].elems() * eb
	case tile.ReduceScatter:
		if err := same(ins, "input"); err != nil {
			return nil, err
		}
		for i := range outs {
			if err := pieceOf(ins[i], outs[i], i, "input", "output", group[i]); err != nil {
				return nil, err
			}
		}
		bytes = ins[0].elems() * eb
	case tile.AllGather:
		if err := same(outs, "output"); err != nil {
			return nil, err
		}
		for i := range ins {
			if err := pieceOf(outs[i], ins[i], i, "output", "input", group[i]); err != nil {
				return nil, err
			}
		}
		bytes = outs[0].elems() * eb
	case tile.AllToAll:
		if err := same(ins, "input"); err != nil {
			return nil, err
		}
		if err := same(outs, "output"); err != nil {
			return nil, err
		}
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if a, z := ins[i].part(n, j, j+1).elems(), outs[j].part(n, i, i+1).elems(); a != z {
					return nil, e.errAt(c, c.Pos, "mismatched sizes: piece %d of rank %d's input has %d elements, piece %d of rank %d's output %d",
						j, group[i], a, i, group[j], z)
				}
			}
		}
		bytes = ins[0].elems() * eb
	case tile.Broadcast:
		for i := range outs {
			if !equalShape(outs[i].shape(), ins[0].shape()) {
				return nil, e.errAt(c, c.Pos, "mismatched sizes: rank %d's output is %s, the input of rank %d (the root) %s",
					group[i], shapeText(outs[i].shape()), group[0], shapeText(ins[0].shape()))
			}
		}
		bytes = ins[0].elems() * eb
	case tile.Send, tile.Recv:
		if outs[1].elems() != ins[0].elems() {
			return nil, e.errAt(c, c.Pos, "mismatched sizes: rank %d's output has %d elements, rank %d's input %d",
				group[1], outs[1].elems(), group[0], ins[0].elems())
		}
		bytes = ins[0].elems() * eb
	}
	var err error
	if b.algo, err = e.algorithm(c, n, bytes); err != nil {
		return nil, err
	}
	b.members = group
	if perm := e.memberOrder(c.Kind, b.algo, group); !isIdentity(perm) {
		// The algorithm runs over the members in the order perm (topo.go):
		// position q is member perm[q]. A reduce-scatter's or all-gather's
		// pieces follow their members (position q's own piece is
		// perm[q]); an all-reduce's and a broadcast's are the message's.
		b.group, b.in, b.out = make([]int, n), make([]view, n), make([]view, n)
		for q, m := range perm {
			b.group[q], b.in[q], b.out[q] = group[m], ins[m], outs[m]
		}
		if c.Kind == tile.ReduceScatter || c.Kind == tile.AllGather {
			b.pp = perm
		}
	}
	return b.build(), nil
}

func isIdentity(p []int) bool {
	for i, x := range p {
		if x != i {
			return false
		}
	}
	return true
}

func equalShape(a, b []int64) bool {
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

// cbuild builds one collective's steps: group members are numbered 0 to
// n-1 (member i is rank group[i]); pieces of a message are numbered the
// same way (view.part).
type cbuild struct {
	e       *expander
	c       *tile.Collective
	l       *tile.Loop
	n       int
	group   []int
	algo    string
	in, out []view
	scr     []view
	stage   *tile.Tile
	steps   []cstep
	// members is the group in its own order (group is in the algorithm's,
	// members[pp[q]] == group[q]); pp maps the pieces the algorithm
	// numbers by position to the message's (nil: the same).
	members []int
	pp      []int
	// slotDims are each member's staging slot dimensions after the index
	// (slot).
	slotDims [][]vdim
	// block, for a group over several chips, is the cores of a chip: a
	// run of pieces never spans positions of two blocks, so that every
	// member moves the same transfers whatever the order puts next to its
	// block (symmetric.go).
	block int
}

// ap returns the message's piece of the algorithm's piece q.
func (b *cbuild) ap(q int) int {
	if b.pp == nil {
		return q
	}
	return b.pp[q]
}

// runs calls fn for the runs of the message's pieces that the algorithm's
// pieces lo..hi-1 are, in order (one run, lo..hi, without a reordering).
func (b *cbuild) runs(lo, hi int, fn func(lo, hi int)) {
	for q := lo; q < hi; {
		a := b.ap(q)
		z := q + 1
		for z < hi && b.ap(z) == a+(z-q) && (b.block == 0 || z%b.block != 0) {
			z++
		}
		fn(a, a+(z-q))
		q = z
	}
}

func (b *cbuild) mod(a int) int { return ((a % b.n) + b.n) % b.n }

// A one-step (mesh) collective's members pair by XOR where the group is a
// power of two (member i's k-th peer is i XOR k, a pairing the shifts of
// recursive halving/doubling and of a torus's axes keep: symmetric.go),
// round the group otherwise (i + k).
func (b *cbuild) xorPairs() bool { return b.n&(b.n-1) == 0 }

// peer is member i's k-th peer (k from 1 to n-1).
func (b *cbuild) peer(i, k int) int {
	if b.xorPairs() {
		return i ^ k
	}
	return (i + k) % b.n
}

// from is the member whose k-th peer j is.
func (b *cbuild) from(j, k int) int {
	if b.xorPairs() {
		return j ^ k
	}
	return b.mod(j - k)
}

// dist numbers the members other than j from 1 to n-1 as seen from j:
// i XOR j, or (i - j) mod n.
func (b *cbuild) dist(i, j int) int {
	if b.xorPairs() {
		return i ^ j
	}
	return b.mod(i - j)
}

// step starts a new step.
func (b *cbuild) step() { b.steps = append(b.steps, cstep{c: b.c, ranks: b.group, algo: b.algo}) }

// x adds a transfer to the current step.
func (b *cbuild) x(issuer int, dst, src view, add bool) { b.xl(issuer, dst, src, add, 0) }

// xl adds a transfer on a lane to the current step.
func (b *cbuild) xl(issuer int, dst, src view, add bool, lane int) {
	s := &b.steps[len(b.steps)-1]
	s.xs = append(s.xs, xfer{issuer: issuer, dst: dst, src: src, add: add, lane: lane, via: -1})
}

func (b *cbuild) pin(i, lo, hi int) view  { return b.in[i].part(b.n, lo, hi) }
func (b *cbuild) pout(i, lo, hi int) view { return b.out[i].part(b.n, lo, hi) }

// scratchOf returns member i's scratch view (a per-rank tile shaped like
// the input), made on first use.
func (b *cbuild) scratchOf(i int) view {
	if b.scr == nil {
		t := b.e.scratch(b.c, b.l, b.in[0], b.members)
		b.scr = make([]view, b.n)
		for j := range b.scr {
			v := view{t: t, rank: b.group[j]}
			for _, s := range t.Shape {
				v.dims = append(v.dims, vdim{start: tile.C(0), n: s, step: 1})
			}
			b.scr[j] = v
		}
	}
	return b.scr[i]
}

// slot returns, on member j, the staging slot that member i writes its
// piece j into in a one-step reduce-scatter: slot dist(i, j) - 1 of
// j's staging tile, a per-rank scratch HBM tile of n - 1 slots each
// shaped like the message's largest piece (made on first use), of which
// j's slots hold piece j's shape.
func (b *cbuild) slot(j, i int) view {
	if b.stage == nil {
		var shape []int64
		for k := 0; k < b.n; k++ {
			ps := b.in[0].part(b.n, k, k+1).shape()
			if shape == nil {
				shape = ps
				continue
			}
			for d := range shape {
				shape[d] = max(shape[d], ps[d])
			}
		}
		b.stage = b.e.scratchTile(b.c, b.l, "stage", b.in[0].t.DType, append([]int64{int64(b.n - 1)}, shape...), b.members)
	}
	// A slot's dimensions after its index are member j's piece's, made
	// once per member (a mesh over n members asks for n(n-1) slots).
	if b.slotDims == nil {
		b.slotDims = make([][]vdim, b.n)
	}
	if b.slotDims[j] == nil {
		for _, d := range b.in[j].part(b.n, j, j+1).dims {
			if !d.index {
				b.slotDims[j] = append(b.slotDims[j], vdim{start: b.e.cst(0), n: d.n, step: 1})
			}
		}
	}
	dims := make([]vdim, 0, 1+len(b.slotDims[j]))
	dims = append(dims, vdim{start: b.e.cst(int64(b.dist(i, j) - 1)), n: 1, step: 1, index: true})
	return view{t: b.stage, rank: b.group[j], dims: append(dims, b.slotDims[j]...)}
}

// meshReduceScatter is the one-step reduce-scatter of mesh: in its first
// step member i copies its own piece i into dst(i) and writes every other
// piece j of its input into its staging slot on member j, every transfer
// to a place of its own, so all of them are in flight at once; in the
// second, member j adds its slots into dst(j), in the order they were
// sent, by transfers queued behind the copy on one queue (each waits only
// for its slot to arrive, none for another).
func (b *cbuild) meshReduceScatter(dst func(j int) view) {
	n := b.n
	b.step()
	for i := 0; i < n; i++ {
		b.xl(i, dst(i), b.pin(i, i, i+1), false, laneReduce)
		for k := 1; k < n; k++ {
			j := b.peer(i, k)
			b.xl(i, b.slot(j, i), b.pin(i, j, j+1), false, laneSend)
		}
	}
	b.step()
	for j := 0; j < n; j++ {
		for s := 1; s < n; s++ {
			b.xl(j, dst(j), b.slot(j, b.from(j, s)), true, laneReduce)
		}
	}
}

// rsAcc is where member j of a reduce-scatter accumulates the
// algorithm's pieces lo..hi-1: its own piece in its output, the others in
// its scratch tile; it calls fn for each run of the message's pieces with
// the view that holds it.
func (b *cbuild) rsAcc(j, lo, hi int, fn func(lo, hi int, v view)) {
	other := func(lo, hi int) {
		b.runs(lo, hi, func(lo, hi int) { fn(lo, hi, b.scratchOf(j).part(b.n, lo, hi)) })
	}
	if j < lo || j >= hi {
		other(lo, hi)
		return
	}
	if lo < j {
		other(lo, j)
	}
	a := b.ap(j)
	fn(a, a+1, b.out[j])
	if j+1 < hi {
		other(j+1, hi)
	}
}

// except calls fn for the runs of pieces 0..n-1 other than skip.
func (b *cbuild) except(skip int, fn func(lo, hi int)) {
	if skip > 0 {
		fn(0, skip)
	}
	if skip+1 < b.n {
		fn(skip+1, b.n)
	}
}

// build returns the steps of the collective (the first, when any, the
// local copies of every rank).
func (b *cbuild) build() []cstep {
	n := b.n
	if n == 1 && b.c.Kind != tile.Send && b.c.Kind != tile.Recv {
		b.step()
		b.x(0, b.out[0], b.in[0], false)
		return b.steps
	}
	switch b.c.Kind {
	case tile.AllReduce:
		b.allReduce()
	case tile.ReduceScatter:
		b.reduceScatter()
	case tile.AllGather:
		b.allGather()
	case tile.AllToAll:
		b.allToAll()
	case tile.Broadcast:
		b.broadcast()
	case tile.Send:
		b.step()
		b.x(0, b.out[1], b.in[0], false)
	case tile.Recv:
		b.step()
		b.x(1, b.out[1], b.in[0], false)
	}
	return b.steps
}

// allReduce: every rank's output is the sum of the inputs. Each rank
// first copies into its output the pieces it will receive sums into.
func (b *cbuild) allReduce() {
	n := b.n
	switch b.algo {
	case tile.AlgoMesh:
		// A one-step reduce-scatter into the members' own pieces of their
		// outputs, then a one-step all-gather: member j writes its summed
		// piece into every other member's output, queued behind its
		// additions (no wait for them).
		b.meshReduceScatter(func(j int) view { return b.pout(j, j, j+1) })
		b.step()
		for j := 0; j < n; j++ {
			for k := 1; k < n; k++ {
				b.xl(j, b.pout(b.peer(j, k), j, j+1), b.pout(j, j, j+1), false, laneReduce)
			}
		}
	case tile.AlgoRDH:
		// Recursive halving (a reduce-scatter: member i ends with piece i
		// summed), then recursive doubling (an all-gather).
		b.step()
		for i := 0; i < n; i++ {
			lo := i & (n / 2)
			b.x(i, b.pout(i, lo, lo+n/2), b.pin(i, lo, lo+n/2), false)
		}
		for d := n / 2; d >= 1; d /= 2 {
			b.step()
			for i := 0; i < n; i++ {
				j, lo := i^d, (i&^(2*d-1))+((i&d)^d)
				src := b.pout(i, lo, lo+d)
				if d == n/2 {
					src = b.pin(i, lo, lo+d)
				}
				b.x(i, b.pout(j, lo, lo+d), src, true)
			}
		}
		for d := 1; d < n; d *= 2 {
			b.step()
			for i := 0; i < n; i++ {
				j, lo := i^d, i&^(d-1)
				b.x(i, b.pout(j, lo, lo+d), b.pout(i, lo, lo+d), false)
			}
		}
	default: // ring
		// Reduce-scatter around the ring (at step s member i adds piece
		// i-s-1 into member i+1's; member i ends with piece i summed), then
		// all-gather around it: 2(N-1) steps of a piece each. The first
		// step copies each member's input into its output whole, so that
		// every member does the same (the piece it sends first is
		// overwritten by the all-gather).
		b.step()
		for i := 0; i < n; i++ {
			b.x(i, b.out[i], b.in[i], false)
		}
		for s := 0; s < n-1; s++ {
			b.step()
			for i := 0; i < n; i++ {
				p := b.mod(i - s - 1)
				src := b.pout(i, p, p+1)
				if s == 0 {
					src = b.pin(i, p, p+1)
				}
				b.x(i, b.pout((i+1)%n, p, p+1), src, true)
			}
		}
		for s := 0; s < n-1; s++ {
			b.step()
			for i := 0; i < n; i++ {
				p := b.mod(i - s)
				b.x(i, b.pout((i+1)%n, p, p+1), b.pout(i, p, p+1), false)
			}
		}
	}
}

// reduceScatter: member i's output is piece i of the sum of the inputs;
// partial sums of the other pieces go through a scratch tile shaped like
// the input.
func (b *cbuild) reduceScatter() {
	n := b.n
	switch b.algo {
	case tile.AlgoMesh:
		b.meshReduceScatter(func(j int) view { return b.out[j] })
	case tile.AlgoRDH:
		b.step()
		for i := 0; i < n; i++ {
			lo := i & (n / 2)
			b.rsAcc(i, lo, lo+n/2, func(lo, hi int, v view) { b.x(i, v, b.pin(i, lo, hi), false) })
		}
		for d := n / 2; d >= 1; d /= 2 {
			b.step()
			for i := 0; i < n; i++ {
				j, lo := i^d, (i&^(2*d-1))+((i&d)^d)
				b.rsAcc(j, lo, lo+d, func(lo, hi int, v view) {
					src := b.scratchOf(i).part(n, lo, hi)
					if d == n/2 {
						src = b.pin(i, lo, hi)
					}
					b.x(i, v, src, true)
				})
			}
		}
	default: // ring
		b.step()
		for i := 0; i < n; i++ {
			b.except(b.mod(i-1), func(lo, hi int) {
				b.rsAcc(i, lo, hi, func(lo, hi int, v view) { b.x(i, v, b.pin(i, lo, hi), false) })
			})
		}
		for s := 0; s < n-1; s++ {
			b.step()
			for i := 0; i < n; i++ {
				p := b.mod(i - s - 1)
				a := b.ap(p)
				src := b.pin(i, a, a+1)
				if s > 0 {
					src = b.scratchOf(i).part(n, a, a+1)
				}
				b.rsAcc((i+1)%n, p, p+1, func(lo, hi int, v view) { b.x(i, v, src, true) })
			}
		}
	}
}

// allGather: piece i of every output is member i's input.
func (b *cbuild) allGather() {
	n := b.n
	b.step()
	for i := 0; i < n; i++ {
		a := b.ap(i)
		b.x(i, b.pout(i, a, a+1), b.in[i], false)
	}
	switch b.algo {
	case tile.AlgoMesh:
		b.step()
		for i := 0; i < n; i++ {
			for k := 1; k < n; k++ {
				b.x(i, b.pout(b.peer(i, k), i, i+1), b.in[i], false)
			}
		}
	case tile.AlgoRDH:
		for d := 1; d < n; d *= 2 {
			b.step()
			for i := 0; i < n; i++ {
				j, lo := i^d, i&^(d-1)
				if d == 1 {
					a := b.ap(i)
					b.x(i, b.pout(j, a, a+1), b.in[i], false)
					continue
				}
				send := func(lo, hi int) { b.x(i, b.pout(j, lo, hi), b.pout(i, lo, hi), false) }
				if b.block == 0 || d <= b.block {
					b.runs(lo, lo+d, send)
					continue
				}
				// Over several chips' blocks: its own block first, then the
				// others in XOR order from it, so that every member sends
				// alike (symmetric.go's shifts keep the order).
				own := (i - lo) / b.block
				for k := 0; k < d/b.block; k++ {
					blo := lo + (own^k)*b.block
					b.runs(blo, blo+b.block, send)
				}
			}
		}
	default: // ring
		for s := 0; s < n-1; s++ {
			b.step()
			for i := 0; i < n; i++ {
				a := b.ap(b.mod(i - s))
				src := b.pout(i, a, a+1)
				if s == 0 {
					src = b.in[i]
				}
				b.x(i, b.pout((i+1)%n, a, a+1), src, false)
			}
		}
	}
}

// allToAll: piece j of member i's input goes to piece i of member j's
// output. Every piece moves once, straight to its rank; the algorithm
// orders the transfers: mesh in one step, ring by shifts (step s: to
// member i+s), rdh by pairs (step s: to member i XOR s).
func (b *cbuild) allToAll() {
	n := b.n
	b.step()
	for i := 0; i < n; i++ {
		b.x(i, b.pout(i, i, i+1), b.pin(i, i, i+1), false)
	}
	if b.algo == tile.AlgoMesh {
		b.step()
	}
	for s := 1; s < n; s++ {
		if b.algo != tile.AlgoMesh {
			b.step()
		}
		for i := 0; i < n; i++ {
			j := (i + s) % n
			if b.algo == tile.AlgoRDH {
				j = i ^ s
			} else if b.algo == tile.AlgoMesh {
				j = b.peer(i, s)
			}
			b.x(i, b.pout(j, i, i+1), b.pin(i, j, j+1), false)
		}
	}
}

// broadcast: every output gets member 0's input.
func (b *cbuild) broadcast() {
	n := b.n
	b.step()
	b.x(0, b.out[0], b.in[0], false)
	switch b.algo {
	case tile.AlgoMesh:
		for j := 1; j < n; j++ {
			b.x(0, b.out[j], b.in[0], false)
		}
	case tile.AlgoRDH:
		// A binomial tree: in step d the members below d send to those d
		// above them.
		for d := 1; d < n; d *= 2 {
			b.step()
			for i := 0; i < d && i+d < n; i++ {
				src := b.out[i]
				if i == 0 {
					src = b.in[0]
				}
				b.x(i, b.out[i+d], src, false)
			}
		}
	default: // ring
		// A pipelined chain 0 -> 1 -> ... -> n-1 of n pieces: in step s
		// member h forwards piece s-h.
		for s := 0; s < 2*n-2; s++ {
			b.step()
			for h := 0; h < n-1; h++ {
				p := s - h
				if p < 0 || p >= n {
					continue
				}
				src := b.pout(h, p, p+1)
				if h == 0 {
					src = b.pin(0, p, p+1)
				}
				b.x(h, b.pout(h+1, p, p+1), src, false)
			}
		}
	}
}

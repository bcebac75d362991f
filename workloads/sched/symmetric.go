package sched

import (
	"github.com/trnsim/trnsim/workloads/tile"
)

// Symmetric-core reuse.
//
// A model's tensor-parallel ranks run one program, each on its own part
// of the weights; the hardware they run on is often symmetric too (the
// cores of a chip under shifts by an HBM stack's cores, the chips of a
// torus under its translations). Then every rank's timeline is the same,
// and simulating a unit of them — the cores of one HBM stack where the
// group sits in one chip, one chip where it spans chips — gives the time
// of all. With Options.SymmetricRanks the scheduler looks for such a unit
// in each cores loop whose body holds collectives, and where it finds one
// schedules only the unit's ranks:
//
//   - The symmetry: shifts of a collective's member positions (the order
//     its algorithm runs them in) by multiples of the unit's size u, by
//     XOR for recursive halving/doubling and for mesh over a power-of-two
//     group (whose members pair by XOR: on a torus, XOR on a chip's
//     coordinates keeps distances, where a rotation of the ranks does
//     not), round the group otherwise. Each of these maps the algorithm's transfers to
//     its transfers. The unit is the first u positions, and must be the
//     same ranks in every collective of the loop.
//   - The mirror: a unit member's transfer x from position i to a
//     position d outside the unit has an image under the shift g that
//     brings d into the unit: the transfer from g(i) to g(d), which the
//     unit member g(d) receives. By the symmetry both happen at the same
//     time, so x is kept and writes where that image would (g(d)'s view),
//     carrying d as isa.Attrs.Via: its route, fabric latency and
//     semaphore updates are d's, its bytes land on g(d). Transfers issued
//     outside the unit are dropped. Every later access to what the image
//     wrote orders after x, as it would after the image.
//   - The checks, any of which failing leaves the loop whole: the
//     target's links alike wherever the shifts take a route
//     (Target.SymmetricLinks: not a custom topology, whose links may
//     differ one by one); every
//     collective is an all-reduce, reduce-scatter, all-gather or
//     all-to-all over all of the loop's ranks (one group, no rank of it
//     accessed by another's op), the ranks whole stacks or chips; every
//     kept transfer has its image, of the same shape, reduction and lane,
//     between the same tiles, whose route (chip hops and latency, or
//     crossing stacks within a chip) is the same as its own, under every
//     shift; every transfer of the step is the image of exactly one of the
//     unit's; and nothing in the loop's body depends on the rank (an `if`
//     on it, a range computed from it: usesVar), so that the ranks run one
//     program.
//
// What reuse does not see is traffic of ranks outside the unit that
// crosses links the unit's transfers use (a route through a chip that is
// neither end); docs/models.md says where that matters.

// symmetricUnit returns the ranks of ranks (a cores loop's, in order) that
// symmetric-core reuse simulates, given the steps of the loop's
// collectives (one group each), or nil where it does not apply.
func (e *expander) symmetricUnit(ranks []int, colls [][]cstep) []int {
	n := len(ranks)
	if len(colls) == 0 || n < 2 || !e.tg.SymmetricLinks {
		return nil
	}
	for _, steps := range colls {
		// One group over every rank of the loop: ranks outside a
		// collective's group would run another program.
		if len(steps) == 0 || len(steps[0].ranks) != n {
			return nil
		}
	}
	per := max(e.tg.Limits.CoresPerChip, 1)
	lo := ranks[0]
	for i, r := range ranks {
		if r != lo+i {
			return nil
		}
	}
	// The units to try, smallest first: an HBM stack's cores (within a
	// chip, or across whole chips where the shifts keep the routes), then
	// across chips a whole chip.
	var units []int
	st := e.tg.CoresPerStack
	if lo/per == (lo+n-1)/per {
		if st <= 0 || (lo%per)%st != 0 {
			return nil
		}
		units = []int{st}
	} else {
		if lo%per != 0 || n%per != 0 {
			return nil
		}
		if st > 0 && st < per && per%st == 0 {
			units = append(units, st)
		}
		units = append(units, per)
	}
	for _, u := range units {
		if n%u != 0 || n/u < 2 {
			continue
		}
		unit := make([]int, u)
		for i := range unit {
			unit[i] = lo + i
		}
		outs := make([][][]xfer, len(colls))
		ok := true
		for c, steps := range colls {
			if outs[c], ok = e.symmetric(steps, unit, per); !ok {
				break
			}
		}
		if !ok {
			continue
		}
		// Every collective passed: keep the unit's transfers.
		for c, steps := range colls {
			for k := range steps {
				steps[k].xs = outs[c][k]
			}
		}
		return unit
	}
	return nil
}

// routeSig is what a transfer's timing depends on of its two ends.
type routeSig struct {
	sameChip, crossStack bool
	hops                 int
	latencyNs            float64
}

func (e *expander) routeSig(a, b, per int) routeSig {
	ca, cb := a/per, b/per
	if ca == cb {
		s := routeSig{sameChip: true}
		if k := e.tg.CoresPerStack; k > 0 {
			s.crossStack = (a%per)/k != (b%per)/k
		}
		return s
	}
	var s routeSig
	if h := e.tg.ChipHops; h != nil && ca < len(h) && cb < len(h) {
		s.hops, s.latencyNs = h[ca][cb], e.tg.ChipLatencyNs[ca][cb]
	}
	return s
}

// symmetric checks one collective's steps against the unit (see above)
// and returns the unit's transfers of each step, or false.
func (e *expander) symmetric(steps []cstep, unit []int, per int) ([][]xfer, bool) {
	if len(steps) == 0 {
		return nil, false
	}
	switch steps[0].c.Kind {
	case tile.AllReduce, tile.ReduceScatter, tile.AllGather, tile.AllToAll:
	default:
		return nil, false
	}
	u := len(unit)
	group := steps[0].ranks
	n := len(group)
	if n%u != 0 {
		return nil, false
	}
	pos := make(map[int]int, n)
	for q, r := range group {
		pos[r] = q
	}
	inUnit := map[int]bool{}
	for _, r := range unit {
		inUnit[r] = true
	}
	for q := 0; q < u; q++ {
		if !inUnit[group[q]] {
			return nil, false
		}
	}
	// rdh pairs members by XOR, and so does mesh over a power-of-two group
	// (cbuild.peer): their shifts are XORs; ring's (and mesh's otherwise)
	// rotations.
	xor := steps[0].algo == tile.AlgoRDH || (steps[0].algo == tile.AlgoMesh && n&(n-1) == 0)
	if xor && u&(u-1) != 0 {
		return nil, false
	}
	// shift is the symmetry h_t: position p moved by t (a multiple of u).
	shift := func(p, t int) int {
		if xor {
			return p ^ t
		}
		return (p + t) % n
	}
	out := make([][]xfer, len(steps))
	// byPair[from*n+to] lists a step's transfers between two positions, in
	// order (cleared after each step).
	byPair := make([][]int, n*n)
	for k := range steps {
		xs := steps[k].xs
		dstPos := make([]int, len(xs))
		occ := make([]int, len(xs))
		for j, x := range xs {
			d, ok := pos[x.dst.rank]
			if !ok || x.src.rank != group[x.issuer] {
				return nil, false
			}
			dstPos[j] = d
			key := x.issuer*n + d
			occ[j] = len(byPair[key])
			byPair[key] = append(byPair[key], j)
		}
		// Every transfer is the image of one of the unit's under exactly
		// one shift (the unit's own under none), and matches it.
		covered := make([]bool, len(xs))
		for j, x := range xs {
			i, d := x.issuer, dstPos[j]
			if i >= u {
				continue
			}
			covered[j] = true
			sig := e.routeSig(group[i], group[d], per)
			mirror := -1
			var images []int32
			for t := u; t < n; t += u {
				hi, hd := shift(i, t), shift(d, t)
				if a, b := group[hi]/per, group[hd]/per; a != b {
					images = append(images, int32(a), int32(b))
				}
				imgs := byPair[hi*n+hd]
				if occ[j] >= len(imgs) {
					return nil, false
				}
				m := imgs[occ[j]]
				img := xs[m]
				if covered[m] || img.add != x.add || img.lane != x.lane || img.dst.t != x.dst.t || img.src.t != x.src.t ||
					!equalShape(img.dst.shape(), x.dst.shape()) || img.src.elems() != x.src.elems() ||
					e.routeSig(group[hi], group[hd], per) != sig {
					return nil, false
				}
				covered[m] = true
				if d >= u && hd < u {
					mirror = m
				}
			}
			if d < u {
				out[k] = append(out[k], x)
				continue
			}
			if mirror < 0 {
				return nil, false
			}
			// x lands where its image in the unit would: the image's
			// destination, as the image's issuer's write.
			y := x
			y.dst, y.via, y.mirror = xs[mirror].dst, group[d], group[xs[mirror].issuer]
			if group[i]/per != group[d]/per {
				y.images = images
			}
			out[k] = append(out[k], y)
		}
		for j := range xs {
			if !covered[j] {
				return nil, false
			}
			byPair[xs[j].issuer*n+dstPos[j]] = byPair[xs[j].issuer*n+dstPos[j]][:0]
		}
	}
	return out, true
}

// reduceTo makes the lockstep walk ph of cores loop l run only the unit's
// ranks, and the scratch tiles its collectives made (IDs from firstTile)
// exist only there.
func (e *expander) reduceTo(l *tile.Loop, ph *phased, unit []int, firstTile int) {
	inUnit := map[int]bool{}
	for _, r := range unit {
		inUnit[r] = true
	}
	for t, rs := range e.ex.tileRanks {
		if t.ID < firstTile {
			continue
		}
		var keep []int
		for _, r := range rs {
			if inUnit[r] {
				keep = append(keep, r)
			}
		}
		e.ex.tileRanks[t] = keep
	}
	e.ex.unit, e.ex.unitLoop, e.ex.unitOf = append([]int(nil), unit...), l, len(ph.ranks)
	ph.ranks = e.ex.unit
}

// coresOf returns the ranks a cores loop runs: the unit, for the loop
// symmetric-core reuse reduced, else its static range.
func (ex *expansion) coresOf(l *tile.Loop) []int {
	if ex != nil && ex.unitLoop == l {
		return ex.unit
	}
	lo, _ := l.Start.Static()
	hi, _ := l.Stop.Static()
	var cs []int
	for c := lo; c < hi; c++ {
		cs = append(cs, int(c))
	}
	return cs
}

// usesVar reports whether any statement of stmts depends on v (a loop
// bound, a condition, an operand's range or rank, a multiply's flags): the
// ranks of a cores loop over v may then differ in what they do.
func usesVar(stmts []tile.Stmt, v *tile.Var) bool {
	found := false
	expr := func(e tile.Expr) {
		if !found && !e.IsZero() {
			e.Vars(func(x *tile.Var) { found = found || x == v })
		}
	}
	accs := func(as []tile.Access) {
		for i := range as {
			for _, r := range as[i].Ranges {
				expr(r.Start)
				expr(r.Stop)
			}
			expr(as[i].Rank)
		}
	}
	var walk func(stmts []tile.Stmt)
	walk = func(stmts []tile.Stmt) {
		for _, s := range stmts {
			if found {
				return
			}
			switch s := s.(type) {
			case *tile.Loop:
				expr(s.Start)
				expr(s.Stop)
				expr(s.Step)
				walk(s.Body)
			case *tile.If:
				expr(s.Cond)
				walk(s.Then)
				walk(s.Else)
			case *tile.Op:
				accs(s.Outs)
				accs(s.Ins)
				expr(s.Start)
				expr(s.Stop)
			case *tile.Collective:
				accs(s.Outs)
				accs(s.Ins)
			}
		}
	}
	walk(stmts)
	return found
}

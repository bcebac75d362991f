package sched

import (
	"fmt"
	"sort"
	"strings"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/tile"
)

// Alignment of placed tiles.
const (
	sbufAlignBytes = 64
	hbmAlignBytes  = 4096
)

// tileInfo is what the scheduler knows of a tile: where it lives, and the
// isa buffer of each of its (rank, slot) copies. A rank is a core numbered
// over every chip: rank r is core r % CoresPerChip of chip r /
// CoresPerChip.
type tileInfo struct {
	t *tile.Tile
	// inCores is set for an on-chip tile declared inside a cores loop: it
	// exists on every rank of the loop. perRank is set for every tile that
	// exists once per rank (those, per-rank HBM tiles and the scheduler's
	// scratch tiles), ranks lists the ranks.
	inCores bool
	perRank bool
	ranks   []int
	// slotBytes is one slot's size (per partition on chip), aligned.
	slotBytes int64
	// offset[rank] is the tile's placement on that rank (on chip, and for
	// a per-rank HBM tile), or a kernel-level tensor's HBM address (index
	// 0).
	offset map[int]int64
	// bufs[rank][slot] is the isa buffer index of a copy (a kernel-level
	// HBM tensor: index 0).
	bufs [][]int32
	// live is the tile's lifetime in statement numbers (inclusive).
	live [2]int
	used bool
}

// stmtSpan numbers statements in program order: a statement covers
// [first, last], its nested statements included.
type stmtSpan struct{ first, last int }

// layout is the result of placement.
type layout struct {
	tiles   []*tileInfo
	buffers []*isa.Buffer
	cores   []int // cores the kernel uses, ascending
	// peak per-partition bytes per (core, memory), for reports.
	peakSBUF, peakPSUM map[int]int64
}

// ranksOf returns the ranks of a system (chips x cores per chip) and the
// cores per chip.
func ranksOf(lim *isa.Limits) (n, perChip int) {
	perChip = max(lim.CoresPerChip, 1)
	return max(lim.Chips, 1) * perChip, perChip
}

// coresText says which ranks exist, for messages: "the chip's 8 cores" on
// one chip, "the system's 32 ranks (4 chips of 8 cores)" on several.
func coresText(lim *isa.Limits) string {
	n, per := ranksOf(lim)
	if n == per {
		return fmt.Sprintf("the chip's %d cores", n)
	}
	return fmt.Sprintf("the system's %d ranks (%d chips of %d cores)", n, n/per, per)
}

// noRankText is the message for a rank (or core) r that does not exist.
func noRankText(lim *isa.Limits, r int) string {
	n, per := ranksOf(lim)
	if n == per {
		return fmt.Sprintf("core %d does not exist (the chip has %d)", r, n)
	}
	return fmt.Sprintf("rank %d does not exist (the system has %d: %d chips of %d cores)", r, n, n/per, per)
}

// whichNoRankText is noRankText after a noun: "rank 16, which does not
// exist (...)".
func whichNoRankText(lim *isa.Limits, r int) string {
	return strings.Replace(noRankText(lim, r), " does not exist", ", which does not exist", 1)
}

// place assigns every tile its memory: kernel-level HBM tensors in order
// at aligned addresses, per-rank HBM tiles in their rank's share of the
// chip's HBM, on-chip tiles first fit among the tiles whose lifetimes
// overlap theirs, per rank. ex brings the scheduler's own tiles and ranks
// (collectives).
func place(k *tile.Kernel, tg *Target, ex *expansion) (*layout, error) {
	lim := tg.Limits
	nRanks, perChip := ranksOf(lim)
	lay := &layout{peakSBUF: map[int]int64{}, peakPSUM: map[int]int64{}}
	all := append(append([]*tile.Tile(nil), k.Tiles...), ex.tiles...)
	infos := make([]*tileInfo, len(all))
	for i, t := range all {
		infos[i] = &tileInfo{t: t, offset: map[int]int64{}, bufs: make([][]int32, nRanks), live: [2]int{-1, -1}}
	}
	for t, rs := range ex.tileRanks {
		ti := infos[t.ID]
		ti.perRank, ti.ranks, ti.used = true, rs, true
	}
	lay.tiles = infos

	// Number the statements and find the cores loops.
	spans := map[tile.Stmt]stmtSpan{}
	n := 0
	coreSet := map[int]bool{}
	var cerr error
	var number func(stmts []tile.Stmt, inCores bool)
	number = func(stmts []tile.Stmt, inCores bool) {
		for _, s := range stmts {
			first := n
			n++
			switch s := s.(type) {
			case *tile.Loop:
				if s.Kind == tile.Cores {
					lo, ok1 := s.Start.Static()
					hi, ok2 := s.Stop.Static()
					if !ok1 || !ok2 || lo < 0 || hi > int64(nRanks) {
						if cerr == nil {
							cerr = &OpError{Kernel: k.Name, File: k.File, Pos: s.Pos.String(), Op: "for " + s.Var.Name + " cores",
								Msg: "a cores loop needs constant bounds within " + coresText(lim)}
						}
					}
					for _, c := range ex.coresOf(s) {
						coreSet[c] = true
					}
				}
				for _, t := range s.Tiles {
					infos[t.ID].inCores = inCores || s.Kind == tile.Cores
				}
				number(s.Body, inCores || s.Kind == tile.Cores)
			case *tile.If:
				number(s.Then, inCores)
				number(s.Else, inCores)
			}
			spans[s] = stmtSpan{first, n - 1}
		}
	}
	number(k.Body, false)
	if cerr != nil {
		return nil, cerr
	}
	coresLoopRange := func(t *tile.Tile) []int {
		// The cores a per-core tile exists on: its cores loop's range.
		for l := t.Scope; l != nil; l = parentLoop(k, l) {
			if l.Kind == tile.Cores {
				return ex.coresOf(l)
			}
		}
		return nil
	}

	// Lifetimes: each use widens the tile's interval by the statement of
	// the tile's own scope that holds it.
	var visit func(stmts []tile.Stmt, path []tile.Stmt)
	visit = func(stmts []tile.Stmt, path []tile.Stmt) {
		for _, s := range stmts {
			p := append(path, s)
			var accs []tile.Access
			switch s := s.(type) {
			case *tile.Loop:
				visit(s.Body, p)
			case *tile.If:
				visit(s.Then, p)
				visit(s.Else, p)
			case *tile.Op:
				accs = append(append(accs, s.Outs...), s.Ins...)
			case *tile.Collective:
				accs = append(append(accs, s.Outs...), s.Ins...)
			}
			for _, a := range accs {
				ti := infos[a.Tile.ID]
				ti.used = true
				// The statement in the tile's scope body on the path to s.
				anchor := p[0]
				for i, q := range p {
					if l, ok := q.(*tile.Loop); ok && l == a.Tile.Scope && i+1 < len(p) {
						anchor = p[i+1]
					}
				}
				sp := spans[anchor]
				if ti.live[0] < 0 || sp.first < ti.live[0] {
					ti.live[0] = sp.first
				}
				ti.live[1] = max(ti.live[1], sp.last)
			}
		}
	}
	visit(k.Body, nil)
	for _, ti := range infos {
		if !ti.used {
			continue
		}
		if ti.t.Bufs > 1 && ti.t.Scope != nil {
			// A rotating tile is live across iterations: its whole loop.
			sp := spans[ti.t.Scope]
			ti.live = [2]int{sp.first + 1, sp.last}
		}
	}

	// The ranks of per-rank tiles: their cores loop's.
	for _, ti := range infos {
		if ti.t.Scope == nil || ti.perRank {
			continue
		}
		if ti.inCores || (ti.t.Mem == isa.MemHBM && ti.t.Scope.Kind == tile.Cores) {
			ti.perRank = true
			ti.ranks = coresLoopRange(ti.t)
		}
	}

	// Cores: those of the cores loops, of on-chip tiles outside them, of
	// collectives outside them, and core 0 when nothing else names one.
	for _, ti := range infos {
		if ti.used && ti.t.Mem.OnChip() && !ti.inCores {
			coreSet[ti.t.Core] = true
		}
	}
	for _, r := range ex.ranks {
		coreSet[r] = true
	}
	if len(coreSet) == 0 {
		coreSet[0] = true
	}
	for c := range coreSet {
		if c < 0 || c >= nRanks {
			return nil, &OpError{Kernel: k.Name, File: k.File, Op: "tile core", Msg: noRankText(lim, c)}
		}
		lay.cores = append(lay.cores, c)
	}
	sort.Ints(lay.cores)

	bank := lim.PSUMBankBytes()
	for _, ti := range infos {
		t := ti.t
		size := t.Bytes()
		switch t.Mem {
		case isa.MemSBUF:
			ti.slotBytes = roundUp(size, sbufAlignBytes)
		case isa.MemPSUM:
			if size <= bank {
				s := int64(4)
				for s < size {
					s *= 2
				}
				ti.slotBytes = min(s, bank)
			} else {
				ti.slotBytes = roundUp(size, bank)
			}
		default:
			ti.slotBytes = roundUp(size, hbmAlignBytes)
		}
		if t.Mem.OnChip() && int64(t.PartStart)+t.Shape[0] > int64(lim.Partitions) {
			return nil, &OpError{Kernel: k.Name, File: k.File, Pos: t.Pos.String(), Op: "tile " + t.Name,
				Msg: fmt.Sprintf("partitions %d:%d outside the %d partitions", t.PartStart, int64(t.PartStart)+t.Shape[0], lim.Partitions)}
		}
	}

	// HBM: kernel-level tensors in declaration order, on their chip.
	hbmNext := map[int]int64{}
	type span struct{ lo, hi int64 }
	taken := map[int][]span{} // by chip
	for _, ti := range infos {
		t := ti.t
		if t.Mem != isa.MemHBM || ti.perRank {
			continue
		}
		addr := hbmNext[t.Chip]
		if t.Offset >= 0 {
			addr = t.Offset
		}
		ti.offset[0] = addr
		hbmNext[t.Chip] = max(hbmNext[t.Chip], roundUp(addr+ti.slotBytes, hbmAlignBytes))
		taken[t.Chip] = append(taken[t.Chip], span{addr, addr + ti.slotBytes})
		if tg.HBMBytes > 0 && addr+t.Bytes() > tg.HBMBytes {
			return nil, &FitError{Kernel: k.Name, Tile: t.Name, Mem: isa.MemHBM, Needed: addr + t.Bytes(), Available: tg.HBMBytes}
		}
	}
	// Per-rank tiles: in the rank's share of its chip's HBM (core c of a
	// chip from c x share: on trn2, whose four stacks are contiguous
	// ranges, cores 2k and 2k+1 share stack k), past the kernel-level
	// tensors there; at= is an offset inside the share.
	share := int64(1) << 40
	if tg.HBMBytes > 0 {
		share = tg.HBMBytes / int64(perChip) / hbmAlignBytes * hbmAlignBytes
	}
	rankNext := map[int]int64{}
	for _, ti := range infos {
		t := ti.t
		if t.Mem != isa.MemHBM || !ti.perRank {
			continue
		}
		for _, r := range ti.ranks {
			chip, core := r/perChip, r%perChip
			lo := int64(core) * share
			addr := max(lo, rankNext[r])
			if t.Offset >= 0 {
				addr = lo + t.Offset
			} else {
				for moved := true; moved; {
					moved = false
					for _, sp := range taken[chip] {
						if sp.lo < addr+ti.slotBytes && addr < sp.hi {
							addr, moved = roundUp(sp.hi, hbmAlignBytes), true
						}
					}
				}
			}
			if addr+t.Bytes() > lo+share {
				return nil, &FitError{Kernel: k.Name, Tile: t.Name, Mem: isa.MemHBM, Needed: addr + t.Bytes() - lo, Available: share,
					PerRank: true, Rank: r, Chip: chip}
			}
			ti.offset[r] = addr
			rankNext[r] = max(rankNext[r], roundUp(addr+ti.slotBytes, hbmAlignBytes))
		}
	}

	// On chip, per core and memory: pinned tiles first, then the others in
	// order of their lifetimes' start, largest first.
	for _, core := range lay.cores {
		for _, mem := range []isa.Memory{isa.MemSBUF, isa.MemPSUM} {
			capB := lim.SBUFPartitionBytes
			if mem == isa.MemPSUM {
				capB = lim.PSUMPartitionBytes
			}
			var todo []*tileInfo
			for _, ti := range infos {
				if !ti.used || ti.t.Mem != mem {
					continue
				}
				onCore := false
				if ti.inCores {
					for _, c := range ti.ranks {
						onCore = onCore || c == core
					}
				} else {
					onCore = ti.t.Core == core
				}
				if onCore {
					todo = append(todo, ti)
				}
			}
			sort.SliceStable(todo, func(i, j int) bool {
				a, b := todo[i], todo[j]
				pa, pb := a.t.Offset >= 0 || a.t.Bank >= 0, b.t.Offset >= 0 || b.t.Bank >= 0
				if pa != pb {
					return pa
				}
				if a.live[0] != b.live[0] {
					return a.live[0] < b.live[0]
				}
				return a.slotBytes*int64(a.t.Bufs) > b.slotBytes*int64(b.t.Bufs)
			})
			type placed struct {
				lo, hi int64
				live   [2]int
				name   string
			}
			var done []placed
			peak := int64(0)
			for _, ti := range todo {
				t := ti.t
				size := ti.slotBytes * int64(t.Bufs)
				align := int64(sbufAlignBytes)
				if mem == isa.MemPSUM {
					align = min(ti.slotBytes, bank)
				}
				conflicts := func(off int64) (int64, string, bool) {
					for _, p := range done {
						if p.live[0] <= ti.live[1] && ti.live[0] <= p.live[1] && off < p.hi && p.lo < off+size {
							return p.hi, p.name, true
						}
					}
					return 0, "", false
				}
				var off int64
				pinned := t.Offset >= 0 || t.Bank >= 0
				if !pinned {
					// Unpinned tiles come in order of their first use: a
					// tile dead before this one starts can meet no later
					// one either (the result is the same; the scan stays
					// as short as the tiles live at once).
					kept := done[:0]
					for _, p := range done {
						if p.live[1] >= ti.live[0] {
							kept = append(kept, p)
						}
					}
					done = kept
				}
				if pinned {
					off = t.Offset
					if t.Bank >= 0 {
						off = int64(t.Bank) * bank
					}
					if _, other, bad := conflicts(off); bad {
						return nil, &OpError{Kernel: k.Name, File: k.File, Pos: t.Pos.String(), Op: "tile " + t.Name,
							Msg: fmt.Sprintf("its pinned placement overlaps tile %s, which is live at the same time", other)}
					}
					if mem == isa.MemPSUM && ti.slotBytes <= bank && off%bank+size > bank && t.Bufs == 1 {
						return nil, &OpError{Kernel: k.Name, File: k.File, Pos: t.Pos.String(), Op: "tile " + t.Name,
							Msg: fmt.Sprintf("pinned at byte %d, it straddles a PSUM bank boundary (%d bytes per bank)", off, bank)}
					}
				} else {
					for {
						next, _, bad := conflicts(off)
						if !bad {
							break
						}
						off = roundUp(next, align)
					}
				}
				if off+size > capB {
					return nil, &FitError{Kernel: k.Name, Tile: t.Name, Mem: mem, Core: core, Needed: off + size, Available: capB}
				}
				done = append(done, placed{off, off + size, ti.live, t.Name})
				ti.offset[core] = off
				peak = max(peak, off+size)
			}
			if mem == isa.MemSBUF {
				lay.peakSBUF[core] = peak
			} else {
				lay.peakPSUM[core] = peak
			}
		}
	}

	// One isa buffer per (core, slot) copy; names are the tile's, made
	// unique.
	names := map[string]bool{}
	for _, t := range all {
		names[t.Name] = true
	}
	unique := func(base string) string {
		name := base
		for i := 2; names[name]; i++ {
			name = fmt.Sprintf("%s_%d", base, i)
		}
		names[name] = true
		return name
	}
	for _, ti := range infos {
		t := ti.t
		if !ti.used {
			continue
		}
		if t.Mem == isa.MemHBM && !ti.perRank {
			b := &isa.Buffer{Name: t.Name, Mem: isa.MemHBM, DType: t.DType, Shape: t.Shape, Chip: int32(t.Chip), Core: -1, Offset: ti.offset[0]}
			ti.bufs[0] = []int32{int32(len(lay.buffers))}
			lay.buffers = append(lay.buffers, b)
			continue
		}
		if t.Mem == isa.MemHBM {
			for _, r := range ti.ranks {
				b := &isa.Buffer{Name: unique(fmt.Sprintf("%s_c%d", t.Name, r)), Mem: isa.MemHBM, DType: t.DType, Shape: t.Shape,
					Chip: int32(r / perChip), Core: -1, Offset: ti.offset[r]}
				ti.bufs[r] = []int32{int32(len(lay.buffers))}
				lay.buffers = append(lay.buffers, b)
			}
			continue
		}
		cores := []int{t.Core}
		if ti.inCores {
			cores = ti.ranks
		}
		for _, c := range cores {
			for s := 0; s < t.Bufs; s++ {
				name := t.Name
				if ti.inCores {
					name = fmt.Sprintf("%s_c%d", name, c)
				}
				if t.Bufs > 1 {
					name = fmt.Sprintf("%s_%d", name, s)
				}
				if name != t.Name {
					name = unique(name)
				}
				b := &isa.Buffer{Name: name, Mem: t.Mem, DType: t.DType, Shape: t.Shape, Chip: int32(c / perChip), Core: int32(c % perChip),
					PartStart: int32(t.PartStart), Offset: ti.offset[c] + int64(s)*ti.slotBytes}
				ti.bufs[c] = append(ti.bufs[c], int32(len(lay.buffers)))
				lay.buffers = append(lay.buffers, b)
			}
		}
	}
	return lay, nil
}

func roundUp(v, m int64) int64 { return (v + m - 1) / m * m }

// parentLoop returns the loop that encloses l (nil at kernel level).
func parentLoop(k *tile.Kernel, l *tile.Loop) *tile.Loop {
	var found *tile.Loop
	var walk func(stmts []tile.Stmt, parent *tile.Loop) bool
	walk = func(stmts []tile.Stmt, parent *tile.Loop) bool {
		for _, s := range stmts {
			switch s := s.(type) {
			case *tile.Loop:
				if s == l {
					found = parent
					return true
				}
				if walk(s.Body, s) {
					return true
				}
			case *tile.If:
				if walk(s.Then, parent) || walk(s.Else, parent) {
					return true
				}
			}
		}
		return false
	}
	walk(k.Body, nil)
	return found
}

// PeakOnChip places a kernel's tiles as Compile does, without compiling
// it, and returns the most SBUF and PSUM per partition they take at once
// on any core, or the *FitError of a tile that does not fit: what a
// kernel's planner checks a choice by when its own count of the working
// set could be short of the placement's (lifetimes, rotations, first-fit
// gaps).
func PeakOnChip(k *tile.Kernel, tg *Target) (sbuf, psum int64, err error) {
	ex, err := expand(k, tg, Options{})
	if err != nil {
		return 0, 0, err
	}
	lay, err := place(k, tg, ex)
	if err != nil {
		return 0, 0, err
	}
	for _, b := range lay.peakSBUF {
		sbuf = max(sbuf, b)
	}
	for _, b := range lay.peakPSUM {
		psum = max(psum, b)
	}
	return sbuf, psum, nil
}

package memory

import (
	"fmt"
	"slices"
	"strings"

	"github.com/trnsim/trnsim/isa"
)

// HBM race checking. Every DMA transfer's HBM operands are checked, as
// isa.Regions (boxes in the coordinates of the buffer they slice, exact for
// rectangular slices), against the recent HBM accesses of every other
// agent of the simulation — the DMA queues of every core of the chip — so
// a core that reads what another core's transfer wrote without a semaphore
// between them is a race.
//
// Records are kept in cells of a per-buffer grid over the box (blocks of
// hbmRowBlock in the first dimension and hbmColBlock in the last): a
// transfer touches a few cells, and only records of those cells are
// compared. An access that would touch more than hbmMaxCells cells, or
// that is no box, is kept in its buffer's (or the chip's) wide cell, which
// every access of that buffer (or chip) checks.
//
// A chip remembers at most hbmLiveCells cells: when there are more, the
// half touched longest ago is forgotten, so memory stays bounded however
// many distinct places a program touches (a race between two accesses with
// that many other cells touched in between is missed, as the SBUF records
// forget old accesses, see recordsPerAgent).

const (
	hbmRowBlock  = 128
	hbmColBlock  = 4096
	hbmMaxCells  = 64
	hbmLiveCells = 1024
)

type hbmRec struct {
	reg   isa.Region
	epoch uint32
	write bool
}

type hbmRing struct {
	agent    int32
	maxEpoch uint32
	recRing[hbmRec]
}

func (g *hbmRing) push(r hbmRec) {
	g.maxEpoch = r.epoch
	g.recRing.push(r)
}

type hbmCell struct {
	rings []*hbmRing
	// touched is when the cell was last recorded in (the chip's tick).
	touched uint64
}

// bufShadow holds one HBM buffer's cells.
type bufShadow struct {
	cells  map[uint64]*hbmCell
	wide   hbmCell
	lo, hi int64 // the buffer's bytes
}

// hbmShadow holds one chip's HBM records.
type hbmShadow struct {
	bufs  map[int32]*bufShadow
	loose hbmCell // accesses with no box
	// cells counts the grid cells of every buffer; tick the accesses.
	cells int
	tick  uint64
}

// forget drops the half of the chip's grid cells touched longest ago.
func (sh *hbmShadow) forget() {
	ticks := make([]uint64, 0, sh.cells)
	for _, bs := range sh.bufs {
		for _, c := range bs.cells {
			ticks = append(ticks, c.touched)
		}
	}
	slices.Sort(ticks)
	cut := ticks[len(ticks)/2]
	for _, bs := range sh.bufs {
		for k, c := range bs.cells {
			if c.touched < cut {
				delete(bs.cells, k)
				sh.cells--
			}
		}
	}
}

// SetBuffers tells the detector the program's buffers, which HBM regions
// are boxes of (see isa.RegionOf).
func (d *RaceDetector) SetBuffers(bufs []*isa.Buffer) { d.buffers = bufs }

// CheckHBM checks the HBM operands of transfer in, issued by agent (called
// name) whose clock is vc, against the other agents' HBM accesses, and
// records them. It returns a *RaceError naming the first conflicting pair,
// or nil.
func (d *RaceDetector) CheckHBM(in *isa.Instruction, agent int, name string, vc VClock, describe func(*isa.Instruction) string) error {
	epoch := vc[agent]
	var err error
	check := func(op *isa.Operand, write bool) {
		if err != nil || op.AP.Mem != isa.MemHBM {
			return
		}
		ap := in.HBMAP(op)
		var b *isa.Buffer
		if op.Buffer >= 0 && int(op.Buffer) < len(d.buffers) {
			b = d.buffers[op.Buffer]
		}
		reg := isa.RegionOf(b, op.Buffer, &ap)
		if reg.ByteHi <= reg.ByteLo {
			return
		}
		d.register(agent, name, epoch, in)
		if r, ragent, ok := d.checkHBM(&reg, int32(agent), epoch, write, vc); ok {
			err = &RaceError{
				First:    Access{Mem: isa.MemHBM, Chip: r.reg.Chip, Lo: r.reg.ByteLo, Hi: r.reg.ByteHi, Write: r.write, Agent: int(ragent), Epoch: r.epoch, Who: d.who(ragent, r.epoch), AgentName: d.names[ragent]},
				Second:   Access{Mem: isa.MemHBM, Chip: reg.Chip, Lo: reg.ByteLo, Hi: reg.ByteHi, Write: write, Agent: agent, Epoch: epoch, Who: in, AgentName: name},
				Describe: describe,
				hbm:      d.describeRegions(&r.reg, &reg),
			}
		}
	}
	for i := range in.Outs {
		check(&in.Outs[i], true)
	}
	for i := range in.Ins {
		check(&in.Ins[i], false)
	}
	return err
}

func (d *RaceDetector) hbmShadow(chip int32) *hbmShadow {
	if d.hbm == nil {
		d.hbm = map[int32]*hbmShadow{}
	}
	sh := d.hbm[chip]
	if sh == nil {
		sh = &hbmShadow{bufs: map[int32]*bufShadow{}}
		d.hbm[chip] = sh
	}
	return sh
}

func (sh *hbmShadow) buf(idx int32, b *isa.Buffer) *bufShadow {
	bs := sh.bufs[idx]
	if bs == nil {
		bs = &bufShadow{cells: map[uint64]*hbmCell{}, lo: b.Offset, hi: b.Offset + b.TotalBytes()}
		sh.bufs[idx] = bs
	}
	return bs
}

// cellRange returns the grid blocks a box covers: rows [r0, r1] and
// columns [c0, c1] (inclusive).
func cellRange(r *isa.Region) (r0, r1, c0, c1 int64) {
	last := r.NDims - 1
	r0, r1 = r.Lo[0]/hbmRowBlock, (r.Hi[0]-1)/hbmRowBlock
	if last == 0 {
		return r0, r1, 0, 0
	}
	return r0, r1, r.Lo[last] / hbmColBlock, (r.Hi[last] - 1) / hbmColBlock
}

// checkHBM records reg in the chip's shadow and returns the first earlier
// record it races with.
func (d *RaceDetector) checkHBM(reg *isa.Region, agent int32, epoch uint32, write bool, vc VClock) (race hbmRec, raceAgent int32, found bool) {
	sh := d.hbmShadow(reg.Chip)
	sh.tick++
	mine := hbmRec{reg: *reg, epoch: epoch, write: write}
	visit := func(c *hbmCell, record bool) {
		if !found {
			race, raceAgent, found = c.check(&mine, agent, vc)
		}
		if record {
			c.record(&mine, agent)
			c.touched = sh.tick
		}
	}
	var bs *bufShadow
	if reg.Buffer >= 0 && int(reg.Buffer) < len(d.buffers) {
		bs = sh.buf(reg.Buffer, d.buffers[reg.Buffer])
	}
	if !reg.Box || bs == nil {
		// No box: compare with everything whose bytes it may touch.
		visit(&sh.loose, true)
		for _, other := range sh.bufs {
			if other.lo >= reg.ByteHi || reg.ByteLo >= other.hi {
				continue
			}
			visit(&other.wide, false)
			for _, c := range other.cells {
				visit(c, false)
			}
		}
		return
	}
	visit(&sh.loose, false)
	r0, r1, c0, c1 := cellRange(reg)
	wide := (r1-r0+1)*(c1-c0+1) > hbmMaxCells
	visit(&bs.wide, wide)
	if wide {
		for _, c := range bs.cells {
			visit(c, false)
		}
		return
	}
	for r := r0; r <= r1; r++ {
		for c := c0; c <= c1; c++ {
			k := uint64(r)<<32 | uint64(c)
			cell := bs.cells[k]
			if cell == nil {
				cell = &hbmCell{}
				bs.cells[k] = cell
				sh.cells++
			}
			visit(cell, true)
		}
	}
	if sh.cells > hbmLiveCells {
		sh.forget()
	}
	return
}

// check returns the first record of another agent in c that conflicts with
// a and is not ordered before it by vc.
func (c *hbmCell) check(a *hbmRec, agent int32, vc VClock) (hbmRec, int32, bool) {
	for _, g := range c.rings {
		if g.agent == agent || g.maxEpoch <= vc[g.agent] {
			continue
		}
		seen := vc[g.agent]
		for i := 0; i < int(g.n); i++ {
			r := g.at(i)
			if r.epoch > seen && (r.write || a.write) && r.reg.Overlaps(&a.reg) {
				return *r, g.agent, true
			}
		}
	}
	return hbmRec{}, 0, false
}

// record adds a to agent's ring in c; a record of the agent that a covers
// (and, if it wrote, a writes too) is replaced.
func (c *hbmCell) record(a *hbmRec, agent int32) {
	var own *hbmRing
	for _, g := range c.rings {
		if g.agent == agent {
			own = g
			break
		}
	}
	if own == nil {
		own = &hbmRing{agent: agent}
		c.rings = append(c.rings, own)
	}
	for i := 0; i < int(own.n); i++ {
		r := own.at(i)
		if (a.write || !r.write) && a.reg.Covers(&r.reg) {
			*r = *a
			own.maxEpoch = a.epoch
			return
		}
	}
	own.push(*a)
}

// describeRegions names the HBM elements two racing regions share.
func (d *RaceDetector) describeRegions(a, b *isa.Region) string {
	name := func(idx int32) string {
		if idx >= 0 && int(idx) < len(d.buffers) {
			return d.buffers[idx].Name
		}
		return "?"
	}
	if a.Box && b.Box && a.Buffer == b.Buffer {
		parts := make([]string, a.NDims)
		for k := uint8(0); k < a.NDims; k++ {
			parts[k] = fmt.Sprintf("%d:%d", max(a.Lo[k], b.Lo[k]), min(a.Hi[k], b.Hi[k]))
		}
		return fmt.Sprintf("%s[%s]", name(a.Buffer), strings.Join(parts, ", "))
	}
	return fmt.Sprintf("bytes %d:%d (%s and %s)", max(a.ByteLo, b.ByteLo), min(a.ByteHi, b.ByteHi), name(a.Buffer), name(b.Buffer))
}

package sched

import (
	"math/rand"
	"testing"

	"github.com/trnsim/trnsim/isa"
)

// Every stream's records in a granule lie inside its hull, and its writes
// inside its write hull, whatever the accesses (reads and writes that
// cover, merge, overlap and overflow a granule's record limit): what lets
// the tracker skip a stream's records beside an access.
func TestTrackerHullsHoldTheRecords(t *testing.T) {
	const streams = 6
	rng := rand.New(rand.NewSource(1))
	tr := newTracker(1, 64<<10, 16<<10, streams)
	deps := newDepSet(streams)
	pos := make([]int64, streams)
	for step := 0; step < 10000; step++ {
		s := int32(rng.Intn(streams))
		mem := isa.MemSBUF
		if rng.Intn(4) == 0 {
			mem = isa.MemPSUM
		}
		lo := int64(rng.Intn(12 << 10))
		plo := int32(rng.Intn(128))
		sp := isa.Span{Mem: mem, Write: rng.Intn(3) == 0, PartLo: plo, PartHi: plo + 1 + int32(rng.Intn(int(128-plo))),
			Lo: lo, Hi: lo + 1 + int64(rng.Intn(6<<10))}
		if rng.Intn(4) != 0 {
			// Small and apart: lists that fill up and merge their oldest.
			sp.PartHi, sp.Hi = plo+1, lo+1+int64(rng.Intn(16))
		}
		if rng.Intn(2) == 0 {
			tr.checkRecord(0, &sp, s, pos[s], float64(step), &deps, nil, 0)
			tr.setEsts(float64(step))
			deps.clear()
		} else {
			tr.recordSpan(0, &sp, s, pos[s], float64(step))
		}
		pos[s]++
		for mi := range tr.onchip[0] {
			for g := range tr.onchip[0][mi] {
				for _, sr := range tr.onchip[0][mi][g].streams {
					for _, r := range sr.recs {
						b := box{r.lo, r.hi, r.plo, r.phi}
						if !inside(&b, &sr.hull) {
							t.Fatalf("step %d: record %+v outside hull %+v", step, r, sr.hull)
						}
						if r.write && !(sr.hasW && inside(&b, &sr.whull)) {
							t.Fatalf("step %d: write %+v outside write hull %+v", step, r, sr.whull)
						}
					}
				}
			}
		}
	}
}

func inside(b, h *box) bool {
	return h.lo <= b.lo && b.hi <= h.hi && h.plo <= b.plo && b.phi <= h.phi
}

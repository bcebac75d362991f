package kernels

import (
	"slices"
	"sync"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/sched"
)

// The GEMM plan search's shared work. A candidate's estimate depends on
// the shape, the options it inherits and the target, never on the SBUF
// size, which only decides the candidates that fit, and it scales to the
// batch from one GEMM's (estParts): searches that differ in SBUF or batch
// alone (a sweep over hardware.core.sbuf.partition_kib or
// workload.gemm.batch, a model's Linear planned with and without its
// prefetch share, the same Linear in every layer) share every candidate's
// estimate parts through the target's memo, and their estimators where
// the batch is the same too. The plans are those each search makes alone
// (TestPlanMemoGivesTheSamePlans).

// planState is a plan's every field but the report's (which fields the
// search chose, its op id): what an estimate may read.
type planState struct {
	g                                     GEMM
	tn, bm, bn, bk, nbuf, nres            int64
	order                                 LoopOrder
	accDT                                 isa.DType
	banks, groupBanks, groups             int64
	evacuate                              Evacuation
	transpose                             TransposeMode
	doubleRow                             bool
	dequantize                            DequantEngine
	weightQueue                           int
	psumK                                 bool
	bSlots, bHead                         int64
	aResident                             bool
	groupBanksAvail, banksPerTile, tileEl int64
	keepResult, aOnChip, keepPlanned      bool
}

// PlanKey is a plan as one comparable value: every field its kernel is
// made from (Kernel), for work shared through a memo.
type PlanKey struct {
	state planState
	opID  int32
}

// Key returns the plan's key.
func (p *GEMMPlan) Key() PlanKey { return PlanKey{state: p.state(), opID: p.opID} }

func (p *GEMMPlan) state() planState {
	return planState{g: p.G, tn: p.TN, bm: p.BM, bn: p.BN, bk: p.BK, nbuf: p.NBuf, nres: p.NRes, order: p.Order, accDT: p.AccDT,
		banks: p.Banks, groupBanks: p.GroupBanks, groups: p.Groups, evacuate: p.Evacuate, transpose: p.Transpose,
		doubleRow: p.DoubleRow, dequantize: p.Dequantize, weightQueue: p.weightQueue, psumK: p.PSUMK,
		bSlots: p.BSlots, bHead: p.BHead, aResident: p.AResident, groupBanksAvail: p.groupBanksAvail,
		banksPerTile: p.banksPerTile, tileEl: p.tile, keepResult: p.keepResult, aOnChip: p.aOnChip, keepPlanned: p.keepPlanned}
}

// searchKey is one search's shared work: the target as it reads it, the
// plan's state before the candidates vary it, and the evacuations and
// dequantisation engines each candidate is estimated with.
type searchKey struct {
	target       sched.TargetKey
	base         planState
	evacs        [4]Evacuation
	deqs         [8]DequantEngine
	nEvac, nDeqs int
}

// candKey is what a candidate sets on the plan's state (GroupBanks and
// Groups follow from the N block and the banks).
type candKey struct {
	acc            isa.DType
	tr             TransposeMode
	order          LoopOrder
	ares, psumK    bool
	nbuf, nres, gb int64
	bn, bm, bk     int64
}

// packedCandKey is a candKey as words without padding, which a map
// hashes as one piece of memory (a struct of mixed fields is hashed field
// by field).
type packedCandKey struct{ bn, bm, bk, rest uint64 }

// pack returns k's packed form, exact (no two keys share one) where ok:
// the small fields share one word, each within its bits.
func (k candKey) pack() (p packedCandKey, ok bool) {
	if k.nbuf < 0 || k.nbuf >= 1<<16 || k.nres < 0 || k.nres >= 1<<8 || k.gb < 0 || k.gb >= 1<<14 {
		return p, false
	}
	b := func(v bool) uint64 {
		if v {
			return 1
		}
		return 0
	}
	rest := uint64(k.acc) | uint64(k.tr)<<8 | uint64(k.order)<<16 | b(k.ares)<<24 | b(k.psumK)<<25 |
		uint64(k.nbuf)<<26 | uint64(k.nres)<<42 | uint64(k.gb)<<50
	return packedCandKey{bn: uint64(k.bn), bm: uint64(k.bm), bk: uint64(k.bk), rest: rest}, true
}

// searchWork is the candidates' estimate parts of the searches that
// share it (one GEMM's, per evacuation and dequantisation engine, n of
// them at offset at&estChunkMask of chunk at>>estChunkBits), safe for
// concurrent searches: a candidate two of them estimate at once is
// estimated twice, to the same figures, and kept once.
type searchWork struct {
	mu sync.RWMutex
	at map[packedCandKey]int32
	// chunks hold the shared parts; a chunk never grows past its
	// capacity, so the parts handed out never move (no copying as the
	// store grows).
	chunks [][]estParts
	ests   []estParts // (the scratch of a search that shares nothing)
	shared bool
	// protos are the estimators by accumulation dtype, each search's
	// copied from them (with scratch and memo of its own, and bounds for
	// its batch).
	protos map[isa.DType]*estimator
}

// estimator returns an estimator of the search's GEMM with this
// accumulation dtype: a copy of the shared one, made once, its bounds
// made again where the batch differs (the tiles' costs do not depend on
// it).
func (w *searchWork) estimator(tg *sched.Target, g GEMM, tn int64, acc isa.DType) *estimator {
	if !w.shared {
		return newEstimator(tg, g, tn, acc)
	}
	w.mu.Lock()
	proto := w.protos[acc]
	if proto == nil {
		proto = newEstimator(tg, g, tn, acc)
		w.protos[acc] = proto
	}
	w.mu.Unlock()
	e := *proto
	// (The search's own scratch, memo and target: what it reads through
	// e.tg is its own, SBUF size included.)
	e.steps, e.deq, e.tg = nil, nil, tg
	rebound := max(e.g.Batch, 1) != max(g.Batch, 1)
	e.g = g
	if rebound {
		e.tensorBound()
	}
	return &e
}

// searchWorkFor returns the work shared by searches of base (whatever its
// batch) with these evacuations and engines on tg: the memo's, or a
// search's own without one.
func searchWorkFor(tg *sched.Target, base *GEMMPlan, evacs []Evacuation, deqs []DequantEngine) *searchWork {
	if tg.Memo == nil || len(evacs) > 4 || len(deqs) > 8 {
		return &searchWork{}
	}
	st := base.state()
	st.g.Batch = 0 // (the parts are one GEMM's)
	k := searchKey{target: tg.Key().WithoutSBUF(), base: st, nEvac: len(evacs), nDeqs: len(deqs)}
	copy(k.evacs[:], evacs)
	copy(k.deqs[:], deqs)
	return tg.Memo.Get(k, func() any {
		return &searchWork{at: map[packedCandKey]int32{}, shared: true, protos: map[isa.DType]*estimator{}}
	}).(*searchWork)
}

// estimates gives a candidate's estimate parts (one GEMM's), estimated
// once (scratch is the search's own).
func (w *searchWork) estimates(c *GEMMPlan, k candKey, est *estimator, evacs []Evacuation, deqs []DequantEngine, scratch []Estimate) []estParts {
	n := len(evacs) * len(deqs)
	if !w.shared {
		w.ests = slices.Grow(w.ests[:0], n)[:n]
		c.estimateEvacs(est, evacs, deqs, scratch, w.ests)
		return w.ests
	}
	pk, ok := k.pack()
	if !ok {
		parts := make([]estParts, n) // (not shared: a key beyond the packing)
		c.estimateEvacs(est, evacs, deqs, scratch, parts)
		return parts
	}
	w.mu.RLock()
	parts, ok := w.stored(pk, n)
	w.mu.RUnlock()
	if ok {
		return parts
	}
	var buf [32]estParts // (n is at most 4 x 8)
	parts = buf[:n]
	c.estimateEvacs(est, evacs, deqs, scratch, parts)
	w.mu.Lock()
	defer w.mu.Unlock()
	if got, ok := w.stored(pk, n); ok {
		return got // (estimated meanwhile by another search)
	}
	last := len(w.chunks) - 1
	if last < 0 || len(w.chunks[last])+n > cap(w.chunks[last]) {
		// (The first chunks small, for a search of few candidates.)
		w.chunks = append(w.chunks, make([]estParts, 0, 64<<min(len(w.chunks), 4))) // (64, 128, ... 1<<estChunkBits)
		last++
	}
	ch := w.chunks[last]
	off := len(ch)
	w.chunks[last] = append(ch, parts...)
	w.at[pk] = int32(last<<estChunkBits | off)
	return w.chunks[last][off : off+n : off+n]
}

// Chunks of the shared parts hold at most 1<<estChunkBits.
const (
	estChunkBits = 10
	estChunkMask = 1<<estChunkBits - 1
)

// stored returns the n parts stored under pk, if any (the lock held).
func (w *searchWork) stored(pk packedCandKey, n int) ([]estParts, bool) {
	at, ok := w.at[pk]
	if !ok {
		return nil, false
	}
	off := int(at & estChunkMask)
	return w.chunks[at>>estChunkBits][off : off+n : off+n], true
}

// planOnce returns a copy of the plan the target's memo keeps for key,
// made by plan the first time (without a memo: plan's own), for the
// caller to give its op id. The copy is shallow: a plan's maps are
// written only while planning.
func planOnce[P any](tg *sched.Target, key any, plan func() (*P, error)) (*P, error) {
	if tg.Memo == nil {
		return plan()
	}
	r := tg.Memo.Get(key, func() any {
		p, err := plan()
		return planResult[P]{p, err}
	}).(planResult[P])
	if r.err != nil {
		return nil, r.err
	}
	p := *r.p
	return &p, nil
}

// planResult is what the memo keeps of a plan search.
type planResult[P any] struct {
	p   *P
	err error
}

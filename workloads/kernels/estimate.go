package kernels

import (
	"math"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/sched"
)

// Estimate is a plan's analytic time: each engine's busy time from the
// simulator's own cost table, and the whole, in nanoseconds.
type Estimate struct {
	TensorNs, VectorNs, ScalarNs, DMANs float64
	// GpSimdNs is GpSimd's share of the dequantisation of quantised
	// weights (GEMM.Dequant); zero otherwise.
	GpSimdNs float64
	// FillNs is the time before the first multiply (the first blocks'
	// loads); DrainNs after the last (its evacuation and the last store);
	// StallNs the waits for single-buffered results to be stored.
	FillNs, DrainNs, StallNs float64
	// StepsNs is the sum over steps of each step's slowest stage.
	StepsNs float64
	TotalNs float64
}

// ContentionNorm is the p of the p-norm that combines the engines' loads
// into the busy time: fitted on the trn2 2048^3 grid (every point of
// scripts/gemm-grid there; the least RMS log error of the estimate
// against the simulation over p = 2, 3, 4, 4.5, 5, 5.5, 6, 8) and checked on the
// other grids (TestPlanEstimateFit, docs/validation.md).
const ContentionNorm = 5.0

// tileCosts are the issue intervals (ns) of every instruction shape a GEMM
// with tile_n tn has, by [M-tile][N-tile][K-tile] size class: index 0 is
// the full tile (128 rows, tn columns, 128 K rows), 1 the shape's ragged
// remainder (M % 128, N % tn, K % 128), which is the same in every block
// because blocks are multiples of tiles.
type tileCosts struct {
	mm [2][2][2][2]float64 // [m][n][k][double row]
	ls [2][2][2]float64    // [m][k][double row]
	// Evacuations, by result dtype (0: the output's, 1: the accumulation
	// dtype's): a copy on VectorE or ScalarE, an add on VectorE.
	copyV, copyS, add [2][2][2]float64 // [res][m][n]
	transposePE       [2][2]float64    // [m][k], TensorE transposes of A [M, K]
	transposeCopy     [2][2]float64
}

// estimator prices plans of one GEMM with one tile_n on one target.
type estimator struct {
	tg         *sched.Target
	g          GEMM
	tn         int64
	rm, rn, rk int64 // ragged remainders: M % 128, N % tn, K % 128
	c          tileCosts
	bw         float64 // DMA bytes per ns
	descNs     float64 // one descriptor's cost, spread over the DMA engines
	steps      []step  // reused by estimate
	// deq memoises the dequantisation instruction's cost by engine, rows
	// and columns (quantised weights only).
	deq map[deqShape]float64
	// mmNs and lsNs are lower bounds on TensorE's multiplies over the
	// whole GEMM and on its stationary loads per N block, without and
	// with double-row mode (see tensorBound).
	mmNs, lsNs [2]float64
	// copyVNs, copySNs and addNs are every result tile's evacuation once,
	// as a VectorE copy, a ScalarE copy or a VectorE add, by result dtype
	// (the index of tileCosts' evacuations).
	copyVNs, copySNs, addNs [2]float64
	// aBytes, bBytes and cBytes are one read of A and B and the write of
	// C, in HBM bytes (every batch).
	aBytes, bBytes, cBytes float64
	// vgShared: VectorE and GpSimd take turns on one SBUF port
	// (NeuronCore-v2, S1; the simulator's
	// hardware.core.ports.vector_gpsimd_share_sbuf, which the target does
	// not carry: the generation stands for it), so their loads add up.
	vgShared bool
}

// newEstimator costs every tile shape once with the target's cost table.
// DMAGBps is the rate at which tg's DMA engines together move a core's
// data, at most the HBM bandwidth where that is known (for estimates: the
// scheduler never reads the HBM bandwidth).
func DMAGBps(tg *sched.Target) float64 {
	bw := tg.DMAEngineGBps * float64(tg.Limits.DMAEngines)
	if tg.HBMGBps > 0 && tg.HBMGBps < bw {
		bw = tg.HBMGBps
	}
	return bw
}

// DMALatencyNs is a transfer's fixed latency on tg, start and completion.
func DMALatencyNs(tg *sched.Target) float64 { return tg.DMAStartNs + tg.DMACompletionNs }

func newEstimator(tg *sched.Target, g GEMM, tn int64, accDT isa.DType) *estimator {
	e := &estimator{tg: tg, g: g, tn: tn, rm: g.M % 128, rn: g.N % tn, rk: g.K % 128, vgShared: tg.Limits.Generation == 2}
	var env isa.CostEnv
	cost := func(op isa.Opcode, eng isa.Engine, perf uint8, ns int64, outs, ins []isa.Operand) float64 {
		body := &isa.Body{Op: op, Engine: eng, Outs: outs, Ins: ins, Attrs: isa.Attrs{PerfMode: perf}}
		switch op {
		case isa.OpTensorTensor:
			body.Attrs.ALU0 = isa.ALUAdd
		case isa.OpActivation:
			body.Attrs.Func, body.Attrs.Scale = isa.ActCopy, 1
		}
		c := tg.Cost.CostOf(&isa.Instruction{Body: body}, ns, &env)
		ghz := tg.ClockGHz[eng]
		if ghz <= 0 {
			ghz = 1
		}
		return float64(c.IntervalCycles) / ghz
	}
	view := func(mem isa.Memory, dt isa.DType, rows, cols int64) []isa.Operand {
		b := isa.Buffer{Mem: mem, DType: dt, Shape: []int64{max(rows, 1), max(cols, 1)}}
		op, _ := b.View(0)
		return []isa.Operand{op}
	}
	size := func(full, rem int64, i int) int64 {
		if i == 0 {
			return full
		}
		return rem
	}
	resDTs := [2]isa.DType{g.Out, accDT}
	for mi := 0; mi < 2; mi++ {
		r := size(128, e.rm, mi)
		for ki := 0; ki < 2; ki++ {
			kr := size(128, e.rk, ki)
			for dr := 0; dr < 2; dr++ {
				perf, w := uint8(0), int64(1)
				if dr == 1 {
					perf, w = 2, 2
				}
				e.c.ls[mi][ki][dr] = cost(isa.OpLoadStationary, isa.EngineTensor, perf, 0, nil, view(isa.MemSBUF, g.In, kr, w*r))
				for ni := 0; ni < 2; ni++ {
					c := size(tn, e.rn, ni)
					e.c.mm[mi][ni][ki][dr] = cost(isa.OpMultiplyMoving, isa.EngineTensor, perf, w*r,
						view(isa.MemPSUM, isa.FP32, r, c), view(isa.MemSBUF, g.In, kr, w*c))
				}
			}
			e.c.transposePE[mi][ki] = cost(isa.OpTranspose, isa.EngineTensor, 0, 0, view(isa.MemPSUM, isa.FP32, kr, r), view(isa.MemSBUF, g.In, r, kr))
			e.c.transposeCopy[mi][ki] = cost(isa.OpTensorCopy, isa.EngineVector, 0, 0, view(isa.MemSBUF, g.In, kr, r), view(isa.MemPSUM, isa.FP32, kr, r))
		}
		for ni := 0; ni < 2; ni++ {
			c := size(tn, e.rn, ni)
			for ri, dt := range resDTs {
				ps := view(isa.MemPSUM, isa.FP32, r, c)
				out := view(isa.MemSBUF, dt, r, c)
				e.c.copyV[ri][mi][ni] = cost(isa.OpTensorCopy, isa.EngineVector, 0, 0, out, ps)
				e.c.copyS[ri][mi][ni] = cost(isa.OpActivation, isa.EngineScalar, 0, 0, out, ps)
				e.c.add[ri][mi][ni] = cost(isa.OpTensorTensor, isa.EngineVector, 0, 0, out, append(view(isa.MemSBUF, dt, r, c), ps...))
			}
		}
	}
	e.tensorBound()
	e.bw = DMAGBps(tg)
	if e.bw <= 0 {
		e.bw = 1
	}
	if n := tg.Limits.DMAEngines; n > 0 {
		e.descNs = tg.DMADescriptorNs / float64(n)
	}
	return e
}

// tensorBound sets mmNs and lsNs, and the evacuation totals, for the
// estimator's GEMM (its batch included). Blocks are multiples of tiles, so every
// plan multiplies the same tiles: M/128 full M tiles and a ragged one, N/tn
// full N tiles and a ragged one, K/128 full K tiles and a ragged one,
// whatever its blocks; only the stationary loads repeat per N block, and in
// double-row mode a block of an odd number of K tiles leaves one unpaired
// (so a full K tile costs at least the cheaper of a single-row tile and
// half a pair). Each is at most what block sums over a plan's steps.
func (e *estimator) tensorBound() {
	g := e.g
	batch := float64(max(g.Batch, 1))
	mCount := [2]float64{float64(g.M / 128), float64(min(e.rm, 1))}
	nCount := [2]float64{float64(g.N / e.tn), float64(min(e.rn, 1))}
	kFull, kRagged := float64(g.K/128), float64(min(e.rk, 1))
	e.copyVNs, e.copySNs, e.addNs = [2]float64{}, [2]float64{}, [2]float64{}
	for dr := 0; dr < 2; dr++ {
		var mm, ls float64
		for mi := 0; mi < 2; mi++ {
			for ni := 0; ni < 2; ni++ {
				full := e.c.mm[mi][ni][0][0]
				if dr == 1 {
					full = min(full, e.c.mm[mi][ni][0][1]/2)
				}
				mm += mCount[mi] * nCount[ni] * (kFull*full + kRagged*e.c.mm[mi][ni][1][0])
			}
			full := e.c.ls[mi][0][0]
			if dr == 1 {
				full = min(full, e.c.ls[mi][0][1]/2)
			}
			ls += mCount[mi] * (kFull*full + kRagged*e.c.ls[mi][1][0])
		}
		if e.tg.BackgroundLoadStationary {
			ls = 0
		}
		e.mmNs[dr], e.lsNs[dr] = batch*mm, batch*ls
	}
	e.aBytes = batch * float64(g.K) * float64(g.M) * float64(g.In.Bytes())
	e.bBytes = batch * float64(g.K) * float64(g.N) * float64(g.BDType().Bytes())
	e.cBytes = batch * float64(g.M) * float64(g.N) * float64(g.Out.Bytes())
	for res := 0; res < 2; res++ {
		for mi := 0; mi < 2; mi++ {
			for ni := 0; ni < 2; ni++ {
				n := batch * mCount[mi] * nCount[ni]
				e.copyVNs[res] += n * e.c.copyV[res][mi][ni]
				e.copySNs[res] += n * e.c.copyS[res][mi][ni]
				e.addNs[res] += n * e.c.add[res][mi][ni]
			}
		}
	}
}

// descs returns the descriptors of moving rows x cols of dtype bytes eb
// where each row is contiguous: one per row and per descriptor-size piece.
func (e *estimator) descs(rows, cols int64, eb float64) float64 {
	maxB := e.tg.DMADescriptorMaxBytes
	if maxB <= 0 {
		return float64(rows)
	}
	return float64(rows) * float64(ceilDiv(int64(float64(cols)*eb+0.5), maxB))
}

// fmax is max for numbers that are never NaN (the builtin's NaN rules cost
// more than the comparison in the plan search's inner loop).
func fmax(a, b float64) float64 {
	if a > b {
		return a
	}
	return b
}

// step is one class of the plan's steps (a K block of a result block).
type step struct {
	w blockWork
	// copies and adds are the shares of the step's result tiles it
	// evacuates by a copy (the first K block, or with PSUMK the last) and
	// by an add into the SBUF partial sums (the other K blocks); a class
	// of steps of which one in n evacuates has 1/n.
	copies, adds float64
	count        float64
	ms, ns, ks   int64
	bytes, trPE  float64
	// storeNs is the part of the step's DMA time that is its share of the
	// result block's store (its latency is the result buffers' to hide,
	// not the input buffers').
	storeNs float64
	trCopy  float64
	descs   float64
	// deq is the step's dequantisation of its B block (quantised weights),
	// in ns, if it all ran on each engine (see dequantBlock).
	deq [numDeq]float64
	// scale is the step's share of its result block's multiply by the
	// per-channel scales on VectorE (quantised weights, unless the
	// evacuations apply them).
	scale float64
}

// pieces splits n into pieces of size: the count of full pieces and the
// length of the last, shorter one (0 when size divides n).
func pieces(n, size int64) (full, last int64) { return n / size, n % size }

// blockWork is one result block's work for one K block.
type blockWork struct {
	pe             float64 // TensorE
	copyV, copyS   float64 // its evacuations as copies (first K block)
	add            float64 // or as adds into the result (the others)
	evacM, evacN   int     // size class of its last evacuation
	mTiles, nTiles float64
}

// block prices the work of a result block of ms x ns for a K block of ks
// (ms a multiple of 128 but at the edge, ns of tile_n but at the edge).
func (e *estimator) block(ms, ns, ks int64, doubleRow bool, res int) blockWork {
	var w blockWork
	mf, ml := pieces(ms, 128)
	nf, nl := pieces(ns, e.tn)
	kf, kl := pieces(ks, 128)
	pairs := int64(0)
	if doubleRow {
		pairs = kf / 2
		kf -= 2 * pairs
	}
	bg := e.tg.BackgroundLoadStationary
	for mi, mc := range [2]int64{mf, 1} {
		if mc == 0 || (mi == 1 && ml == 0) {
			continue
		}
		for ni, nc := range [2]int64{nf, 1} {
			if nc == 0 || (ni == 1 && nl == 0) {
				continue
			}
			n := float64(mc * nc)
			w.pe += n * (float64(pairs)*e.c.mm[mi][ni][0][1] + float64(kf)*e.c.mm[mi][ni][0][0])
			if kl > 0 {
				w.pe += n * e.c.mm[mi][ni][1][0]
			}
			w.copyV += n * e.c.copyV[res][mi][ni]
			w.copyS += n * e.c.copyS[res][mi][ni]
			w.add += n * e.c.add[res][mi][ni]
			w.evacM, w.evacN = mi, ni
		}
		if !bg {
			n := float64(mc)
			w.pe += n * (float64(pairs)*e.c.ls[mi][0][1] + float64(kf)*e.c.ls[mi][0][0])
			if kl > 0 {
				w.pe += n * e.c.ls[mi][1][0]
			}
		}
	}
	return w
}

// estimateEvacs returns the plan's analytic time for each evacuation
// choice in evacs and, for quantised weights, each dequantisation engine
// in deqs (nil: the plan's), into out[evac*len(deqs)+deq], step by step:
// a step is one
// K block of one result block, and its time is the slowest of its
// multiplies (TensorE), its evacuations (VectorE or ScalarE) and its loads
// (the DMA engines: its bytes at their rate, and, with NBuf input buffers,
// NBuf-1 loads in flight to hide each one's latency). Added to that: the
// fill before the first multiply, the drain after the last, and the waits
// of a single result buffer for its store. Every instruction is costed by
// the simulator's own cost table. A quantised B block's conversion is
// the work of the engine (or engines) that dequantise it, in the step that
// loads the block.
//
// A batch repeats every step: each estimate is made for one GEMM of the
// batch, its parts (parts[i], when parts is not nil) scale to the batch
// (estParts.scale), so searches of one shape at every batch size share
// their candidates' parts (planmemo.go).
func (p *GEMMPlan) estimateEvacs(e *estimator, evacs []Evacuation, deqs []DequantEngine, out []Estimate, parts []estParts) {
	g := p.G
	res := 0
	if !p.kOnce() {
		res = 1
	}
	nBK, nBM := ceilDiv(g.K, p.BK), ceilDiv(g.M, p.BM)
	batch := float64(max(g.Batch, 1))
	// A store that casts the result block to C's dtype moves the larger
	// side's bytes through the DMA engines.
	eb, outB := float64(g.In.Bytes()), float64(max(g.Out.Bytes(), p.ResultDType().Bytes()))
	wb := float64(g.BDType().Bytes()) // B's bytes per element in HBM
	lat := DMALatencyNs(e.tg)
	transposeEff := 1.0
	if eff := e.tg.DMATransposeEfficiency; g.AMK && p.Transpose == TransposeDMA && eff > 0 {
		transposeEff = eff
	}
	tensorT := g.AMK && p.Transpose == TransposeTensor
	aRes := p.aResFor(p.Order, p.BM)
	nBN := ceilDiv(g.N, p.BN)
	steps := e.steps[:0]
	if cap(steps) == 0 {
		steps = make([]step, 0, 16) // (a plan has a few classes of steps)
	}
	defer func() { e.steps = steps[:0] }()
	nfull, nlast := pieces(g.N, p.BN)
	mfull, mlast := pieces(g.M, p.BM)
	kFirst := min(p.BK, g.K)
	kfull, klast := pieces(g.K-kFirst, p.BK)
	for _, nb := range [2][2]int64{{p.BN, nfull}, {nlast, 1}} {
		if nb[1] == 0 || nb[0] == 0 {
			continue
		}
		for _, mb := range [2][2]int64{{p.BM, mfull}, {mlast, 1}} {
			if mb[1] == 0 || mb[0] == 0 {
				continue
			}
			for ki, kb := range [3][2]int64{{kFirst, 1}, {p.BK, kfull}, {klast, 1}} {
				if kb[1] == 0 || kb[0] == 0 {
					continue
				}
				ms, ns, ks := mb[0], nb[0], kb[0]
				st := step{w: e.block(ms, ns, ks, p.DoubleRow, res), count: float64(nb[1] * mb[1] * kb[1]), ms: ms, ns: ns, ks: ks}
				// The last K block's class (a kfull-th of the middle class).
				lastK := ki == 2 || (ki == 1 && klast == 0) || (ki == 0 && kfull == 0 && klast == 0)
				switch {
				case !p.PSUMK && ki == 0:
					st.copies = 1
				case !p.PSUMK:
					st.adds = 1
				case lastK:
					// K in PSUM: one copy per result tile, after the last K block.
					st.copies = 1 / float64(kb[1])
				}
				// The step's loads: its A block, its B block, and its share
				// of the result block's store, with their descriptors (one
				// per contiguous row piece).
				aBytes := float64(ks*ms) * eb / transposeEff
				bBytes := float64(ks*ns) * wb
				aDescs := e.descs(ks, ms, eb)
				if g.AMK && !(p.Transpose == TransposeDMA) {
					// A's rows as stored, for TensorE transposes (a DMA
					// transpose, like A^T, has a descriptor per row of A^T).
					aDescs = e.descs(ms, ks, eb)
				}
				if aRes {
					// A resident: loaded (and transposed) during the first
					// N block only; spread over all of them.
					aBytes /= float64(nBN)
					aDescs /= float64(nBN)
				}
				st.bytes = aBytes + bBytes + float64(ms*ns)*outB/float64(nBK)
				bDescs := e.descs(ks, ns, wb)
				if g.BTiled {
					// Pre-tiled: each partition's full K tiles of the block in one
					// run (one per tile when the block is narrower than BN), the
					// partial tile's rows in another.
					kf, kl := pieces(ks, 128)
					switch {
					case kf > 0 && ns == p.BN:
						bDescs = e.descs(128, kf*ns, wb)
					case kf > 0:
						bDescs = e.descs(128*kf, ns, wb)
					default:
						bDescs = 0
					}
					if kl > 0 {
						bDescs += e.descs(kl, ns, wb)
					}
				}
				st.descs = aDescs + bDescs + e.descs(ms, ns, outB)/float64(nBK)
				if g.Dequant {
					// The B block's conversion, and this step's share of its N
					// block's scales (loaded once per N block).
					st.deq = e.dequantBlock(ks, ns)
					// The last K block of a result block multiplies it by the
					// scales (a class of kfull steps: a kfull-th each).
					if lastK {
						st.scale = e.scaleBlock(ms, ns, p.ResultDType()) / float64(kb[1])
					}
					share := float64(ceilDiv(g.M, p.BM) * nBK)
					st.bytes += float64(p.scaleRows()*ns) * float64(g.Out.Bytes()) / share
					st.descs += float64(p.scaleRows()) / share
				}
				st.storeNs = (float64(ms*ns)*outB/e.bw + e.descs(ms, ns, outB)*e.descNs) / float64(nBK)
				if tensorT {
					mf, ml := pieces(ms, 128)
					kf, kl := pieces(ks, 128)
					for mi, mc := range [2]int64{mf, min(ml, 1)} {
						for kj, kc := range [2]int64{kf, min(kl, 1)} {
							st.trPE += float64(mc*kc) * e.c.transposePE[mi][kj]
							st.trCopy += float64(mc*kc) * e.c.transposeCopy[mi][kj]
						}
					}
					if aRes {
						st.trPE /= float64(nBN)
						st.trCopy /= float64(nBN)
					}
				}
				if p.Order == OrderNKM && nBM > 1 {
					// In nkm a B block is loaded once for all the M blocks
					// of its K block: one step of nBM carries it, in a burst.
					light := st
					light.bytes -= bBytes
					light.descs -= bDescs
					light.deq = [numDeq]float64{}
					light.count = st.count * float64(nBM-1) / float64(nBM)
					st.count -= light.count
					steps = append(steps, light)
				}
				steps = append(steps, st)
			}
		}
	}
	if len(deqs) == 0 {
		deqs = []DequantEngine{p.Dequantize}
	}
	// Engine totals, whatever the evacuation; with evacuate auto the copies
	// balance VectorE and ScalarE (the scheduler sends each to whichever
	// finishes it first).
	var totals Estimate
	var copiesV, copiesS, adds, trCopies float64
	var deqTotal [numDeq]float64 // the dequantisation, all on one engine
	for i := range steps {
		st := &steps[i]
		totals.TensorNs += st.count * (st.w.pe + st.trPE)
		copiesV += st.count * st.copies * st.w.copyV
		copiesS += st.count * st.copies * st.w.copyS
		adds += st.count * st.adds * st.w.add
		totals.DMANs += st.count * (st.bytes/e.bw + st.descs*e.descNs)
		trCopies += st.count * st.trCopy
		for j := range deqTotal {
			deqTotal[j] += st.count * st.deq[j]
		}
	}
	for oi, ev := range evacs {
		base := totals
		fV, fS := 1.0, 0.0 // shares of the copies on VectorE and ScalarE
		switch ev {
		case EvacScalar:
			fV, fS = 0, 1
		case EvacAlternate:
			fV, fS = 0.5, 0.5
		case EvacAuto:
			fV = 0
			if copiesV+copiesS > 0 {
				fV = min(1, max(0, (copiesS-adds)/(copiesV+copiesS)))
			}
			fS = 1 - fV
		}
		base.VectorNs = adds + fV*copiesV + trCopies
		base.ScalarNs = fS * copiesS
		for di, dq := range deqs {
			est := base
			var q estParts
			fold := p.kOnce() && ev == EvacVector // the evacuations apply the scales
			if g.Dequant && !fold {
				for i := range steps {
					est.VectorNs += steps[i].count * steps[i].scale
				}
			}
			if g.Dequant {
				l := dq.spread([3]float64{est.VectorNs, est.ScalarNs, 0}, deqTotal)
				est.VectorNs, est.ScalarNs, est.GpSimdNs = l[0], l[1], l[2]
			}
			// The steps, each as slow as its slowest stage.
			var stepsNs, firstKB float64 // firstKB: TensorE's run-ahead
			for i := range steps {
				st := &steps[i]
				c := st.w.pe + st.trPE
				ev := st.adds*st.w.add + st.copies*fV*st.w.copyV + st.trCopy
				sc := st.copies * fS * st.w.copyS
				var gp float64
				var conv float64 // a single buffer's wait for the conversion
				if g.Dequant && !fold {
					ev += st.scale
				}
				if g.Dequant {
					l := dq.spread([3]float64{ev, sc, 0}, st.deq)
					conv = max(l[0]-ev, l[1]-sc, l[2])
					ev, sc, gp = l[0], l[1], l[2]
				}
				load := st.bytes/e.bw + st.descs*e.descNs
				in := load - st.storeNs // the input blocks' loads
				var t float64
				if e.vgShared {
					ev, gp = ev+gp, 0
				}
				if p.NBuf <= 1 {
					// Single-buffered inputs: loads, conversions and multiplies
					// take turns.
					t = max(c+load+lat+conv, ev, sc, gp)
				} else {
					t = fmax(fmax(fmax(c, ev), gp), fmax(fmax(sc, load), (in+lat)/float64(p.NBuf-1)))
				}
				stepsNs += st.count * t
				if i == 0 {
					// How far TensorE runs ahead of a stalled evacuation: the
					// PSUM accumulation groups it can fill meanwhile.
					mTiles := float64(ceilDiv(st.ms, 128))
					firstKB = c * min(1, float64(p.Groups)/mTiles)
				}
			}
			bm, bn := min(p.BM, g.M), min(p.BN, g.N)
			aFill := float64(kFirst*bm) * eb
			if aRes {
				// A resident: all of it loaded by the first step, a transfer
				// per K block, the first of them on the trigger's queues
				// together (three), ahead of the first K block's multiplies.
				aFill = float64(min(g.K, 3*p.BK)*bm) * eb / transposeEff
			}
			est.FillNs = (aFill+float64(kFirst*bn)*wb)/e.bw + lat
			if g.Dequant {
				// The first K tile's conversion before the first multiply.
				est.FillNs += dq.first(e.dequantBlock(min(kFirst, 128), bn))
			}
			storeNs := float64(bm*bn)*outB/e.bw + lat
			last := steps[len(steps)-1].w
			lastEvac := e.c.copyV[res][last.evacM][last.evacN]
			if !p.kOnce() {
				lastEvac = e.c.add[res][last.evacM][last.evacN]
			}
			est.DrainNs = lastEvac + storeNs
			if p.NRes == 1 {
				// One result buffer: a result block's first evacuation waits for
				// the store of the block before it in that buffer.
				// (In nkm the result buffer holds every M block of an N block,
				// each stored as its last K block ends: the first evacuation
				// of the next N block waits for the first M block's store.)
				// (groups is for one GEMM of the batch.)
				groups, perRes := float64(ceilDiv(g.N, p.BN)*ceilDiv(g.M, p.BM)), storeNs
				if p.Order == OrderNKM {
					groups = float64(ceilDiv(g.N, p.BN))
				}
				if w := perRes - firstKB; w > 0 {
					q.stallGroups, q.stallNs = groups, w
				}
			}
			est.StepsNs = stepsNs
			// Engines that are all busy slow one another (a multiply waits for a
			// load or an evacuation now and then): their loads combine as a
			// p-norm, between the slowest one (p = inf, perfect overlap) and their
			// sum (p = 1). ContentionNorm is fitted (docs/validation.md).
			busy := stepsNs
			// The norm is at most the slowest engine's load times n^(1/p) for
			// n loads: when the steps take longer than that it cannot matter.
			bound := normOf4
			if est.GpSimdNs > 0 {
				bound = normOf5
			}
			vNs, gNs := est.VectorNs, est.GpSimdNs
			if e.vgShared {
				vNs, gNs = vNs+gNs, 0
			}
			if top := max(est.TensorNs, vNs, est.ScalarNs, est.DMANs, gNs); stepsNs < top*bound {
				pow := func(x float64) float64 { x2 := x * x; return x2 * x2 * x } // x^ContentionNorm
				pn := math.Pow(pow(est.TensorNs)+pow(vNs)+pow(est.ScalarNs)+pow(est.DMANs)+pow(gNs), 1/ContentionNorm)
				busy = max(stepsNs, pn)
			}
			q.busyNs, q.fillNs, q.drainNs = busy, est.FillNs, est.DrainNs
			out[oi*len(deqs)+di] = q.scale(est, batch)
			if parts != nil {
				parts[oi*len(deqs)+di] = q
			}
		}
	}
}

// estParts are what an estimate of one GEMM of a batch scales to the
// batch by: every step repeats once per GEMM, the fill and the drain do
// not, and a single result buffer's store waits once per result group
// but the first.
type estParts struct {
	busyNs, fillNs, drainNs float64
	// stallNs is one group's wait for its result buffer's store (zero:
	// none), over stallGroups groups a GEMM.
	stallNs, stallGroups float64
}

// totalNs is the estimate of a batch of batch GEMMs (at least 1).
func (q *estParts) totalNs(batch float64) float64 {
	return batch*q.busyNs + q.fillNs + q.drainNs + q.stalls(batch)
}

// stalls is the result buffer's waits over a batch.
func (q *estParts) stalls(batch float64) float64 {
	if g := q.stallGroups * batch; q.stallNs > 0 && g > 1 {
		return (g - 1) * q.stallNs
	}
	return 0
}

// scale returns est, one GEMM's estimate, for a batch.
func (q *estParts) scale(est Estimate, batch float64) Estimate {
	est.TensorNs *= batch
	est.VectorNs *= batch
	est.ScalarNs *= batch
	est.DMANs *= batch
	est.GpSimdNs *= batch
	est.StepsNs *= batch
	est.StallNs = q.stalls(batch)
	est.TotalNs = q.totalNs(batch)
	return est
}

// normOf4 is 4^(1/ContentionNorm), the most the p-norm of four loads can
// exceed the largest of them by (a touch more, for rounding).
var normOf4 = math.Pow(4, 1/ContentionNorm) * (1 + 1e-12)

// normOf5 is the same for five loads (GpSimd dequantising weights).
var normOf5 = math.Pow(5, 1/ContentionNorm) * (1 + 1e-12)

// lowerBoundNs is at most the plan's estimate (TotalNs) for every
// evacuation choice, cheap enough to skip candidates with: TensorE's least
// time (tensorBound), the HBM bytes at the DMA engines' bandwidth (the
// steps' loads and stores include them) and the larger of VectorE's and
// ScalarE's evacuations however they are shared (each result tile copied
// once, and added once per further K block), combined as the estimate
// combines the engines' loads (a p-norm of the loads, of which these are
// part, is at most its busy time), then the fill before the first
// multiply and the last block's store.
func (p *GEMMPlan) lowerBoundNs(e *estimator) float64 {
	tensor, dma, evac, rest := p.boundParts(e)
	pow := func(x float64) float64 { x2 := x * x; return x2 * x2 * x } // x^ContentionNorm
	busy := math.Pow(pow(tensor)+pow(dma)+pow(evac), 1/ContentionNorm)
	return fmax(busy, fmax(tensor, fmax(dma, evac))) + rest
}

// boundExceeds reports whether lowerBoundNs is above limit.
func (p *GEMMPlan) boundExceeds(e *estimator, limit float64) bool {
	return partsExceed(limit)(p.boundParts(e))
}

// partsExceed returns the test of whether a bound of these parts is above
// limit, without the p-norm's root: the busy part exceeds what the limit
// leaves when its largest load does, or when the sum of the loads' fifth
// powers exceeds that part's (the root is monotonic). It is monotonic in
// every part, so parts at most another's exceed only if those do.
func partsExceed(limit float64) func(tensor, dma, evac, rest float64) bool {
	return func(tensor, dma, evac, rest float64) bool {
		left := limit - rest
		if left < 0 || fmax(tensor, fmax(dma, evac)) > left {
			return true
		}
		pow := func(x float64) float64 { x2 := x * x; return x2 * x2 * x } // x^ContentionNorm
		return pow(tensor)+pow(dma)+pow(evac) > pow(left)
	}
}

// boundParts returns lowerBoundNs's loads (TensorE's least time, the HBM
// bytes at the DMA engines' bandwidth, the busier evacuation engine's
// least) and the fill and last store beside them.
func (p *GEMMPlan) boundParts(e *estimator) (tensor, dma, evac, rest float64) {
	g := p.G
	outB := float64(max(g.Out.Bytes(), p.ResultDType().Bytes()))
	tensor, dma, rest = p.blocksBound(e, p.Order, p.BN, p.BM, min(p.BK, g.K), outB)
	res, adds := 0, 0.0
	if !p.kOnce() {
		res = 1
		adds = float64(ceilDiv(g.K, p.BK)-1) * e.addNs[1]
	}
	// The evacuations: VectorE has the adds; the copies go to VectorE,
	// ScalarE or both, so the busier of the two has at least half of the
	// adds and the cheaper copies.
	evac = fmax(adds, (adds+min(e.copyVNs[res], e.copySNs[res]))/2)
	return tensor, dma, evac, rest
}

// anyKBoundExceeds reports whether boundExceeds holds for this plan with
// every K block at once, given order, N and M blocks (and the plan's A
// residence), the smallest K block being bkMin: its parts are at most
// each K block's (TensorE's time and the HBM bytes do not depend on the K
// block; the evacuations take at least half the cheapest copy; the fill
// is least with the smallest K block and the store with results in C's
// dtype), so the search skips all those K blocks when it holds.
func (p *GEMMPlan) anyKBoundExceeds(e *estimator, limit float64, order LoopOrder, bn, bm, bkMin int64) bool {
	tensor, dma, rest := p.blocksBound(e, order, bn, bm, min(bkMin, p.G.K), float64(p.G.Out.Bytes()))
	evac := min(e.copyVNs[0], e.copySNs[0], e.copyVNs[1], e.copySNs[1]) / 2
	return partsExceed(limit)(tensor, dma, evac, rest)
}

// blocksBound returns TensorE's least time, the HBM bytes at the DMA
// engines' bandwidth and the fill and last store of a plan with this
// order and these blocks (k1: the first K block's rows; outB: a result
// element's bytes).
func (p *GEMMPlan) blocksBound(e *estimator, order LoopOrder, bn, bm, k1 int64, outB float64) (tensor, dma, rest float64) {
	g := p.G
	eb := float64(g.In.Bytes())
	wb := float64(g.BDType().Bytes())
	lat := DMALatencyNs(e.tg)
	bm, bn = min(bm, g.M), min(bn, g.N)
	fill := (float64(k1*bm)*eb+float64(k1*bn)*wb)/e.bw + lat
	store := float64(bm*bn)*outB/e.bw + lat
	dr := 0
	if p.DoubleRow {
		dr = 1
	}
	nBN := float64(ceilDiv(g.N, bn))
	tensor = e.mmNs[dr] + nBN*e.lsNs[dr]
	// dmaBytes in floating point: A once or per N block, B once (nkm) or
	// per M block, C once.
	aReads, bReads := nBN, float64(ceilDiv(g.M, bm))
	if p.aResFor(order, bm) {
		aReads = 1
	}
	if order == OrderNKM {
		bReads = 1
	}
	dma = (e.aBytes*aReads + e.bBytes*bReads + e.cBytes + float64(p.scaleHBMBytes())) / e.bw
	return tensor, dma, fill + store
}

// estimate returns the plan's analytic time (see estimateEvacs).
func (p *GEMMPlan) estimate(e *estimator) Estimate {
	var out [1]Estimate
	p.estimateEvacs(e, []Evacuation{p.Evacuate}, nil, out[:], nil)
	return out[0]
}

// Estimate returns the plan's analytic time on tg (what the plan search
// minimises).
func (p *GEMMPlan) Estimate(tg *sched.Target) Estimate {
	return p.estimate(newEstimator(tg, p.G, p.TN, p.AccDT))
}

// LowerBoundNs returns the bound the plan search skips candidates by: at
// most Estimate(tg).TotalNs.
func (p *GEMMPlan) LowerBoundNs(tg *sched.Target) float64 {
	return p.lowerBoundNs(newEstimator(tg, p.G, p.TN, p.AccDT))
}

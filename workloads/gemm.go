package workloads

import (
	"fmt"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
)

// gemmPlan holds a GEMM's resolved lowering parameters.
type gemmPlan struct {
	M, K, N    int64
	in, out    isa.DType
	aLayout    string
	TN         int64 // moving free size per matmul
	BM, BN, BK int64 // block sizes
	nbuf       int64 // input block buffers
	nres       int64 // result buffers: blocks (nmk) or sets of a block per M block (nkm)
	order      string
	accDT      isa.DType // accumulation dtype when K spans several blocks
	queues     int64
	banks      int64 // PSUM banks used
	G          int64 // banks per accumulation group (BN / TN)
	ngroups    int64
	dge        isa.DGEKind
	evacuate   string
	auto       map[string]bool
}

const (
	semA int32 = iota
	semB
	semMM
	semStep
	semEvacV
	semEvacS
	semStore
)

// Loop orders: "nmk" loops N blocks, then M blocks, then K blocks, keeping
// one result block in SBUF while B is reloaded for every M block; "nkm" (the
// NKI tutorial's fully optimised kernel) loops K blocks outside M blocks,
// keeping the result blocks of every M block in SBUF so each B block is
// loaded once.
var loopOrders = []string{"nkm", "nmk"}

// resultBlocks returns how many result blocks the plan keeps in SBUF.
func (p *gemmPlan) resultBlocks() int64 {
	if p.order == "nkm" {
		return p.nres * ceilDiv(p.M, p.BM)
	}
	return p.nres
}

// resDT returns the dtype of the SBUF result blocks.
func (p *gemmPlan) resDT() isa.DType {
	if p.K <= p.BK {
		return p.out
	}
	return p.accDT
}

// sbufBytes returns the SBUF bytes per partition a plan needs.
func (p *gemmPlan) sbufBytes() int64 {
	eb := int64(p.in.Bytes())
	kt := p.BK / 128
	return p.nbuf*kt*(p.BM+p.BN)*eb + p.resultBlocks()*(p.BM/128)*p.BN*int64(p.resDT().Bytes()) + 64*4
}

// dmaBytes returns the HBM traffic of a plan.
func (p *gemmPlan) dmaBytes() int64 {
	eb := int64(p.in.Bytes())
	bReads := ceilDiv(p.M, p.BM)
	if p.order == "nkm" {
		bReads = 1
	}
	return p.K*p.M*eb*ceilDiv(p.N, p.BN) + p.K*p.N*eb*bReads + p.M*p.N*int64(p.out.Bytes())
}

func roundUp(v, m int64) int64 { return ceilDiv(v, m) * m }

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// planGEMM resolves the lowering parameters, choosing the ones the config
// leaves at zero: the largest blocks that fit SBUF while moving the fewest
// bytes from HBM.
func planGEMM(cfg *configs.RunConfig) (*gemmPlan, error) {
	g := cfg.Workload.GEMM
	l := &cfg.Workload.Lowering
	h := &cfg.Hardware
	lim := h.Limits()
	in, _ := isa.ParseDType(g.DType)
	out, _ := isa.ParseDType(g.OutDType)
	p := &gemmPlan{M: g.M, K: g.K, N: g.N, in: in, out: out, aLayout: g.ALayout, auto: map[string]bool{}}
	if lim.ArrayRows != 128 || lim.ArrayCols != 128 || lim.Partitions < 128 {
		return nil, cfg.FieldError("hardware.core.tensor.array_rows", "the GEMM lowering tiles for a 128x128 array over 128 partitions; this hardware has %dx%d over %d", lim.ArrayRows, lim.ArrayCols, lim.Partitions)
	}
	maxTN := int64(lim.MovingFreeMax)
	bankElems := lim.PSUMBankBytes() / 4
	if !lim.MatmulMayCrossBanks && bankElems < maxTN {
		maxTN = bankElems
	}
	p.TN = int64(l.TileN)
	if p.TN == 0 {
		p.TN = min(maxTN, 512, roundUp(g.N, 64))
		p.auto["tile_n"] = true
	}
	if p.TN > maxTN {
		return nil, cfg.FieldError("workload.lowering.tile_n", "%d exceeds the moving free size limit of %d", p.TN, maxTN)
	}
	p.banks = int64(l.PSUMBanks)
	if p.banks == 0 {
		p.banks = int64(lim.PSUMBanks)
		p.auto["psum_banks"] = true
	}
	if p.banks > int64(lim.PSUMBanks) {
		return nil, cfg.FieldError("workload.lowering.psum_banks", "%d exceeds the %d PSUM banks", p.banks, lim.PSUMBanks)
	}
	banksPerTile := ceilDiv(p.TN*4, lim.PSUMBankBytes())
	p.nbuf = int64(l.Buffers)
	if p.nbuf == 0 {
		p.nbuf = 2
		p.auto["buffers"] = true
	}
	p.queues = int64(l.DMAQueues)
	if p.queues == 0 {
		p.queues = 3
		p.auto["dma_queues"] = true
	}
	if p.queues > int64(lim.DMAQueues) {
		return nil, cfg.FieldError("workload.lowering.dma_queues", "%d exceeds the %d DMA queues", p.queues, lim.DMAQueues)
	}
	switch l.DGE {
	case "", "auto":
		p.dge = isa.DGENone
		if lim.HardwareDGE {
			p.dge = isa.DGEHardware
		}
	case "hw":
		p.dge = isa.DGEHardware
	case "none":
		p.dge = isa.DGENone
	}
	p.evacuate = l.Evacuate
	if p.evacuate == "" {
		p.evacuate = "vector"
	}
	p.accDT = isa.FP32
	if l.AccumulateDType != "" {
		p.accDT, _ = isa.ParseDType(l.AccumulateDType)
	} else {
		p.auto["accumulate_dtype"] = true
	}
	orders := loopOrders
	if l.LoopOrder != "" {
		orders = []string{l.LoopOrder}
	} else {
		p.auto["loop_order"] = true
	}
	// Candidate blocks.
	cands := func(given int, step, limit int64, name string) []int64 {
		if given > 0 {
			return []int64{int64(given)}
		}
		p.auto[name] = true
		var out []int64
		for v := step; v <= limit; v += step {
			out = append(out, v)
		}
		return out
	}
	maxG := max(1, p.banks/2/banksPerTile)
	bns := cands(l.BlockN, p.TN, min(roundUp(g.N, p.TN), p.TN*maxG), "block_n")
	bms := cands(l.BlockM, 128, min(roundUp(g.M, 128), 4096), "block_m")
	bks := cands(l.BlockK, 128, min(roundUp(g.K, 128), 2048), "block_k")
	sbufCap := h.SBUFBytesPerPartition()
	var best *gemmPlan
	for _, order := range orders {
		for _, bn := range bns {
			for _, bm := range bms {
				for _, nres := range []int64{2, 1} {
					// The traffic does not depend on BK and a bigger BK is
					// better: only the biggest that fits competes (SBUF use
					// grows with BK).
					for i := len(bks) - 1; i >= 0; i-- {
						c := *p
						c.order, c.BN, c.BM, c.BK, c.nres = order, bn, bm, bks[i], nres
						if c.sbufBytes() > sbufCap {
							continue
						}
						if best == nil || better(&c, best) {
							cc := c
							best = &cc
						}
						break
					}
				}
			}
		}
	}
	if best == nil {
		c := *p
		c.order, c.BN, c.BM, c.BK, c.nres = orders[len(orders)-1], bns[0], bms[0], bks[0], 1
		path := "workload.lowering.block_m"
		if !p.auto["block_k"] {
			path = "workload.lowering.block_k"
		}
		return nil, cfg.FieldError(path, "the GEMM working set needs %d KiB per partition with the smallest blocks, more than SBUF's %d KiB",
			c.sbufBytes()/1024, sbufCap/1024)
	}
	p = best
	// Checks on given values.
	switch {
	case p.BN%p.TN != 0:
		return nil, cfg.FieldError("workload.lowering.block_n", "%d is not a multiple of tile_n %d", p.BN, p.TN)
	case p.BM%128 != 0:
		return nil, cfg.FieldError("workload.lowering.block_m", "%d is not a multiple of 128", p.BM)
	case p.BK%128 != 0:
		return nil, cfg.FieldError("workload.lowering.block_k", "%d is not a multiple of 128", p.BK)
	}
	p.G = (p.BN / p.TN) * banksPerTile
	if p.G > p.banks {
		return nil, cfg.FieldError("workload.lowering.block_n", "%d columns need %d PSUM banks per accumulation group; only %d are available", p.BN, p.G, p.banks)
	}
	p.ngroups = p.banks / p.G
	if (p.evacuate == "scalar" || p.evacuate == "alternate") && p.K > p.BK {
		return nil, cfg.FieldError("workload.lowering.evacuate", "%s evacuation needs K in one block (K %d > block_k %d): accumulating across K blocks uses VectorE adds", p.evacuate, p.K, p.BK)
	}
	return p, nil
}

// better prefers fewer HBM bytes, then fewer instructions (bigger blocks),
// then double-buffered results.
func better(a, b *gemmPlan) bool {
	if da, db := a.dmaBytes(), b.dmaBytes(); da != db {
		return da < db
	}
	if a.order != b.order {
		return a.order == "nkm"
	}
	if a.BK != b.BK {
		return a.BK > b.BK
	}
	if a.nres != b.nres {
		return a.nres > b.nres
	}
	if a.BM != b.BM {
		return a.BM > b.BM
	}
	return a.BN > b.BN
}

// choices lists the resolved parameters for reports.
func (p *gemmPlan) choices() []Choice {
	c := func(name string, v int64) Choice {
		return Choice{Path: "workload.lowering." + name, Value: v, Auto: p.auto[name]}
	}
	return []Choice{c("tile_n", p.TN), c("block_m", p.BM), c("block_n", p.BN), c("block_k", p.BK),
		c("buffers", p.nbuf), c("result_buffers", p.nres), c("dma_queues", p.queues), c("psum_banks", p.banks)}
}

// gstep is one step of a GEMM schedule: one K block of one result block.
type gstep struct {
	nb, mb, kb             int64
	n0, m0, k0             int64
	nSize, mSize, kSize    int64
	mTiles, kTiles, nTiles int64
	aSlot, bSlot           int64
	loadB                  bool
	// slotFree: the step's input slots are free once semStep reaches it.
	slotFree int64
	block    int64 // result block id, nb*blocksM + mb
	resSlot  int64
	first    bool // first K block of its result block
	last     bool // last K block: the block is stored after this step
	// resFree: the result slot is free once this many store transfers
	// completed (times the DMA engines).
	resFree int64
	// Running counts: A and B load transfers through this step, group uses
	// before it, store transfers through it.
	cumA, cumB, groups0, cumStores int64
}

// schedule lays out the steps of a plan in loop order with their slots and
// the counts every generator derives its semaphore values from.
func (p *gemmPlan) schedule() []gstep {
	nBN, nBM, nBK := ceilDiv(p.N, p.BN), ceilDiv(p.M, p.BM), ceilDiv(p.K, p.BK)
	var steps []gstep
	add := func(nb, mb, kb int64) {
		st := gstep{nb: nb, mb: mb, kb: kb, n0: nb * p.BN, m0: mb * p.BM, k0: kb * p.BK, block: nb*nBM + mb,
			first: kb == 0, last: kb == nBK-1}
		st.nSize, st.mSize, st.kSize = min(p.BN, p.N-st.n0), min(p.BM, p.M-st.m0), min(p.BK, p.K-st.k0)
		st.mTiles, st.kTiles, st.nTiles = ceilDiv(st.mSize, 128), ceilDiv(st.kSize, 128), ceilDiv(st.nSize, p.TN)
		steps = append(steps, st)
	}
	if p.order == "nkm" {
		for nb := int64(0); nb < nBN; nb++ {
			for kb := int64(0); kb < nBK; kb++ {
				for mb := int64(0); mb < nBM; mb++ {
					add(nb, mb, kb)
				}
			}
		}
	} else {
		for nb := int64(0); nb < nBN; nb++ {
			for mb := int64(0); mb < nBM; mb++ {
				for kb := int64(0); kb < nBK; kb++ {
					add(nb, mb, kb)
				}
			}
		}
	}
	loads := func(st *gstep, layoutMK bool) int64 {
		if layoutMK {
			return st.kTiles
		}
		if st.kSize%128 != 0 && st.kTiles > 1 {
			return 2
		}
		return 1
	}
	stores := func(st *gstep) int64 {
		if st.mSize%128 != 0 && st.mTiles > 1 {
			return 2
		}
		return 1
	}
	storesThrough := make([]int64, nBN*nBM) // cumulative store transfers through each block
	var cumA, cumB, groups, cumStores int64
	for s := range steps {
		st := &steps[s]
		si := int64(s)
		st.aSlot = si % p.nbuf
		free := si - p.nbuf + 1
		if p.order == "nkm" {
			gb := st.nb*nBK + st.kb // B group: the steps sharing one B block
			st.loadB = st.mb == 0
			st.bSlot = gb % p.nbuf
			if st.loadB {
				free = max(free, (gb-p.nbuf+1)*nBM)
			}
			st.resSlot = (st.nb%p.nres)*nBM + st.mb
		} else {
			st.loadB = true
			st.bSlot = st.aSlot
			st.resSlot = st.block % p.nres
		}
		st.slotFree = free
		if st.first {
			prev := st.block - p.nres
			if p.order == "nkm" {
				prev = st.block - p.nres*nBM
			}
			if prev >= 0 {
				st.resFree = storesThrough[prev]
			}
		}
		cumA += loads(st, p.aLayout == "mk")
		if st.loadB {
			cumB += loads(st, false)
		}
		st.cumA, st.cumB, st.groups0 = cumA, cumB, groups
		groups += st.mTiles
		if st.last {
			cumStores += stores(st)
			storesThrough[st.block] = cumStores
		}
		st.cumStores = cumStores
	}
	return steps
}

// lowerGEMM lowers C[M,N] = A[M,K] @ B[K,N] for one NeuronCore.
//
// Each step moves one K block of one result block: Sync loads the A^T block
// [BK, BM] (and, when the step starts a new B block, the B block [BK, BN])
// into SBUF with nbuf-deep buffering; TensorE, for each 128-row M tile and
// each 128-row K tile, loads the stationary A^T tile once and streams the B
// tile's TN-column slices through it, accumulating each into its own PSUM
// bank over the K block; VectorE evacuates each accumulation group into the
// SBUF result block (copy for the first K block, add for the rest); ScalarE
// triggers the store of each finished result block. PSUM groups rotate so
// TensorE fills one while VectorE drains another. Every hand-off is a
// counting semaphore. The loop order (nkm, the NKI tutorial's, or nmk) and
// the block sizes come from the plan.
func lowerGEMM(cfg *configs.RunConfig) (*isa.Program, *Info, error) {
	p, err := planGEMM(cfg)
	if err != nil {
		return nil, nil, err
	}
	h := &cfg.Hardware
	b := newProgBuilder(h.Name, h.SBUFBytesPerPartition())
	eb := int64(p.in.Bytes())
	var aHBM int32
	if p.aLayout == "km" {
		aHBM = b.hbm("AT", p.in, p.K, p.M)
	} else {
		aHBM = b.hbm("A", p.in, p.M, p.K)
	}
	bHBM := b.hbm("B", p.in, p.K, p.N)
	cHBM := b.hbm("C", p.out, p.M, p.N)
	if err := b.fitsHBM(h.HBMBytesPerChip()); err != nil {
		return nil, nil, cfg.FieldError("workload.gemm.m", "the GEMM does not fit one chip: %v", err)
	}
	KT := p.BK / 128
	MT := p.BM / 128
	var aBuf, bBuf, resBuf []int32
	for i := int64(0); i < p.nbuf; i++ {
		x, err := b.sbuf(fmt.Sprintf("aT%d", i), p.in, 128, KT*p.BM)
		if err != nil {
			return nil, nil, cfg.FieldError("workload.lowering.block_m", "%v", err)
		}
		y, err := b.sbuf(fmt.Sprintf("b%d", i), p.in, 128, KT*p.BN)
		if err != nil {
			return nil, nil, cfg.FieldError("workload.lowering.block_n", "%v", err)
		}
		aBuf, bBuf = append(aBuf, x), append(bBuf, y)
	}
	for i := int64(0); i < p.resultBlocks(); i++ {
		r, err := b.sbuf(fmt.Sprintf("res%d", i), p.resDT(), 128, MT*p.BN)
		if err != nil {
			return nil, nil, cfg.FieldError("workload.lowering.block_m", "%v", err)
		}
		resBuf = append(resBuf, r)
	}
	bankBytes := h.Limits().PSUMBankBytes()
	var ps []int32
	banksPerTile := ceilDiv(p.TN*4, bankBytes)
	for i := int64(0); i < p.banks/banksPerTile; i++ {
		ps = append(ps, b.psum(fmt.Sprintf("ps%d", i), isa.FP32, i*banksPerTile*bankBytes, 128, p.TN))
	}
	tilesPerGroup := p.BN / p.TN
	// Operands of full tiles, built on first use and shared read-only by
	// every instruction that names them (partial edge tiles go through the
	// builder's memo).
	ntMax := p.BN / p.TN
	nRes := p.resultBlocks()
	lsCache := make([][]isa.Operand, p.nbuf*KT*MT)
	mvCache := make([][]isa.Operand, p.nbuf*KT*ntMax)
	psCache := make([][]isa.Operand, len(ps))
	resCache := make([][]isa.Operand, nRes*MT*ntMax)
	accCache := make([][]isa.Operand, nRes*MT*ntMax*int64(len(ps)))
	// memo returns the view cache[i] of a full tile, built once, or a fresh
	// view of a partial one.
	memo := func(cache [][]isa.Operand, i int64, full bool, view func() []isa.Operand) []isa.Operand {
		if !full {
			return view()
		}
		if cache[i] == nil {
			cache[i] = view()
		}
		return cache[i]
	}
	lsOp := func(slot, kt, mt, krows, rows int64) []isa.Operand {
		return memo(lsCache, (slot*KT+kt)*MT+mt, krows == 128 && rows == 128, func() []isa.Operand {
			return b.viewOps(aBuf[slot], rng(0, krows), rng(kt*p.BM+mt*128, kt*p.BM+mt*128+rows))
		})
	}
	mvOp := func(slot, kt, nt, krows, cols int64) []isa.Operand {
		return memo(mvCache, (slot*KT+kt)*ntMax+nt, krows == 128 && cols == p.TN, func() []isa.Operand {
			return b.viewOps(bBuf[slot], rng(0, krows), rng(kt*p.BN+nt*p.TN, kt*p.BN+nt*p.TN+cols))
		})
	}
	psOp := func(bank, rows, cols int64) []isa.Operand {
		return memo(psCache, bank, rows == 128 && cols == p.TN, func() []isa.Operand {
			return b.viewOps(ps[bank], rng(0, rows), rng(0, cols))
		})
	}
	resOp := func(rslot, mt, nt, rows, cols int64) []isa.Operand {
		return memo(resCache, (rslot*MT+mt)*ntMax+nt, rows == 128 && cols == p.TN, func() []isa.Operand {
			return b.viewOps(resBuf[rslot], rng(0, rows), rng(mt*p.BN+nt*p.TN, mt*p.BN+nt*p.TN+cols))
		})
	}

	// accOps is the operand pair (result tile, PSUM tile) of an
	// accumulating evacuation, shared like the single views.
	accOps := func(sl *slab, rslot, mt, nt, bank, rows, cols int64) []isa.Operand {
		return memo(accCache, ((rslot*MT+mt)*ntMax+nt)*int64(len(ps))+bank, rows == 128 && cols == p.TN, func() []isa.Operand {
			return sl.operands(resOp(rslot, mt, nt, rows, cols)[0], psOp(bank, rows, cols)[0])
		})
	}

	sched := p.schedule()
	steps := int64(len(sched))
	dmaEngines := int64(h.Core.DMA.Engines)
	evacEngine := func(u int64) isa.Engine {
		switch p.evacuate {
		case "scalar":
			return isa.EngineScalar
		case "alternate":
			if u%2 == 1 {
				return isa.EngineScalar
			}
		}
		return isa.EngineVector
	}
	evacSem := func(e isa.Engine) int32 {
		if e == isa.EngineScalar {
			return semEvacS
		}
		return semEvacV
	}
	// groupCount returns, for group uses 0..u, how many each engine
	// evacuated.
	groupCount := func(u int64, e isa.Engine) int64 {
		if u < 0 {
			return 0
		}
		switch p.evacuate {
		case "scalar":
			if e == isa.EngineScalar {
				return u + 1
			}
			return 0
		case "alternate":
			if e == isa.EngineScalar {
				return (u + 1) / 2
			}
			return u/2 + 1
		}
		if e == isa.EngineVector {
			return u + 1
		}
		return 0
	}
	queue := func(i int64) int16 { return int16(i % p.queues) }
	opID := int32(1)

	syncGen := func(s int64, sb *stepBuf) ([]*isa.Instruction, error) {
		si := &sched[s]
		out := sb.out
		// The slots are free once TensorE has finished the steps that used them.
		waits := b.waitGE(nil, semStep, si.slotFree)
		first := true
		dma := func(dst, src isa.Operand, op isa.Opcode, sem int32, q int64) {
			in := sb.inst()
			*in = isa.Instruction{Body: &isa.Body{Op: op, Engine: isa.EngineSync, Chip: b.chip, Core: b.core, Outs: sb.operands(dst), Ins: sb.operands(src), Attrs: isa.Attrs{Queue: queue(q), DGE: p.dge}, OpID: opID}, Signal: b.signal(sem)}
			if first {
				in.Waits = waits
				first = false
			}
			out = append(out, in)
		}
		aSlot, bSlot := si.aSlot, si.bSlot
		// A^T block: partition p of k-tile kt holds row k0+kt*128+p.
		fullK := si.kSize / 128 * 128
		if p.aLayout == "km" {
			if fullK > 0 {
				kt := fullK / 128
				dst := b.raw(aBuf[aSlot], 0, 128, 0, isa.Dim{Size: kt, Stride: p.BM}, isa.Dim{Size: si.mSize, Stride: 1})
				src := b.raw(aHBM, 0, 0, si.k0*p.M+si.m0, isa.Dim{Size: 128, Stride: p.M}, isa.Dim{Size: kt, Stride: 128 * p.M}, isa.Dim{Size: si.mSize, Stride: 1})
				dma(dst, src, isa.OpDMACopy, semA, 2*s)
			}
			if rem := si.kSize - fullK; rem > 0 {
				kt := fullK / 128
				dst := b.view(aBuf[aSlot], rng(0, rem), rng(kt*p.BM, kt*p.BM+si.mSize))
				src := b.view(aHBM, rng(si.k0+fullK, si.k0+si.kSize), rng(si.m0, si.m0+si.mSize))
				dma(dst, src, isa.OpDMACopy, semA, 2*s)
			}
		} else {
			for kt := int64(0); kt < si.kTiles; kt++ {
				rows := min(128, si.kSize-kt*128)
				dst := b.view(aBuf[aSlot], rng(0, rows), rng(kt*p.BM, kt*p.BM+si.mSize))
				src := b.view(aHBM, rng(si.m0, si.m0+si.mSize), rng(si.k0+kt*128, si.k0+kt*128+rows))
				dma(dst, src, isa.OpDMATranspose, semA, 2*s)
			}
		}
		if !si.loadB {
			return out, nil
		}
		if fullK > 0 {
			kt := fullK / 128
			dst := b.raw(bBuf[bSlot], 0, 128, 0, isa.Dim{Size: kt, Stride: p.BN}, isa.Dim{Size: si.nSize, Stride: 1})
			src := b.raw(bHBM, 0, 0, si.k0*p.N+si.n0, isa.Dim{Size: 128, Stride: p.N}, isa.Dim{Size: kt, Stride: 128 * p.N}, isa.Dim{Size: si.nSize, Stride: 1})
			dma(dst, src, isa.OpDMACopy, semB, 2*s+1)
		}
		if rem := si.kSize - fullK; rem > 0 {
			kt := fullK / 128
			dst := b.view(bBuf[bSlot], rng(0, rem), rng(kt*p.BN, kt*p.BN+si.nSize))
			src := b.view(bHBM, rng(si.k0+fullK, si.k0+si.kSize), rng(si.n0, si.n0+si.nSize))
			dma(dst, src, isa.OpDMACopy, semB, 2*s+1)
		}
		return out, nil
	}

	// Instructions without waits or signals are the same every time their
	// tile comes round: they are built once and handed out again (the
	// simulator never changes an instruction).
	lsInst := make([]*isa.Instruction, p.nbuf*KT*MT)
	mmInst := make([]*isa.Instruction, p.nbuf*KT*ntMax*p.ngroups*4)
	tensorGen := func(s int64, sb *stepBuf) ([]*isa.Instruction, error) {
		si := &sched[s]
		sl := &sb.slab
		out := sb.out
		var waits []isa.SemWait
		waits = b.waitGE(waits, semA, dmaEngines*si.cumA)
		waits = b.waitGE(waits, semB, dmaEngines*si.cumB)
		for mt := int64(0); mt < si.mTiles; mt++ {
			u := si.groups0 + mt
			g := u % p.ngroups
			rows := min(128, si.mSize-mt*128)
			// The group's banks are free once group use u-ngroups is evacuated.
			if prev := u - p.ngroups; prev >= 0 {
				e := evacEngine(prev)
				waits = b.waitGE(waits, evacSem(e), groupCount(prev, e))
			}
			for kt := int64(0); kt < si.kTiles; kt++ {
				krows := min(128, si.kSize-kt*128)
				full := krows == 128 && rows == 128
				var ls *isa.Instruction
				li := (si.aSlot*KT+kt)*MT + mt
				if full && waits == nil && lsInst[li] != nil {
					ls = lsInst[li]
				} else {
					ls = sl.inst()
					*ls = isa.Instruction{Body: &isa.Body{Op: isa.OpLoadStationary, Engine: isa.EngineTensor, Chip: b.chip, Core: b.core, Ins: lsOp(si.aSlot, kt, mt, krows, rows), OpID: opID}, Waits: waits}
					if full && waits == nil {
						lsInst[li] = ls
					}
				}
				waits = nil
				out = append(out, ls)
				for nt := int64(0); nt < si.nTiles; nt++ {
					cols := min(p.TN, si.nSize-nt*p.TN)
					start, stop := kt == 0, kt == si.kTiles-1
					signals := stop && nt == si.nTiles-1
					mi := (((si.bSlot*KT+kt)*ntMax+nt)*p.ngroups+g)*4 + b2i(start)*2 + b2i(stop)
					reuse := full && cols == p.TN && !signals
					if reuse && mmInst[mi] != nil {
						out = append(out, mmInst[mi])
						continue
					}
					mm := sl.inst()
					*mm = isa.Instruction{Body: &isa.Body{Op: isa.OpMultiplyMoving, Engine: isa.EngineTensor, Chip: b.chip, Core: b.core, Outs: psOp(g*tilesPerGroup+nt, rows, cols), Ins: mvOp(si.bSlot, kt, nt, krows, cols), Attrs: isa.Attrs{Start: start, Stop: stop}, OpID: opID}}
					if signals {
						mm.Signal = b.signal(semMM)
						if mt == si.mTiles-1 {
							mm.Signal = append(mm.Signal, isa.SemSignal{Sem: b.sem(semStep), Add: 1})
						}
					}
					if reuse {
						mmInst[mi] = mm
					}
					out = append(out, mm)
				}
			}
		}
		return out, nil
	}

	var storeInstrs func(s int64, out []*isa.Instruction, sl *slab) []*isa.Instruction
	// Evacuations without waits or signals (the middle tiles of a group) are
	// handed out again too, keyed by engine, result slot, tile, group and
	// whether they copy or add.
	evInst := make([]*isa.Instruction, 2*nRes*MT*ntMax*p.ngroups*2)
	evacGen := func(eng isa.Engine) func(s int64, sb *stepBuf) ([]*isa.Instruction, error) {
		return func(s int64, sb *stepBuf) ([]*isa.Instruction, error) {
			si := &sched[s]
			sl := &sb.slab
			out := sb.out
			for mt := int64(0); mt < si.mTiles; mt++ {
				u := si.groups0 + mt
				if evacEngine(u) != eng {
					continue
				}
				g := u % p.ngroups
				rows := min(128, si.mSize-mt*128)
				var waits []isa.SemWait
				waits = b.waitGE(waits, semMM, u+1)
				if si.first && mt == 0 {
					// The result slot is free once its previous block is stored.
					waits = b.waitGE(waits, semStore, dmaEngines*si.resFree)
				}
				for nt := int64(0); nt < si.nTiles; nt++ {
					cols := min(p.TN, si.nSize-nt*p.TN)
					plain := nt != 0 && nt != si.nTiles-1 && rows == 128 && cols == p.TN
					ei := ((((b2i(eng == isa.EngineScalar)*nRes+si.resSlot)*MT+mt)*ntMax+nt)*p.ngroups+g)*2 + b2i(si.first)
					if plain && evInst[ei] != nil {
						out = append(out, evInst[ei])
						continue
					}
					dsts := resOp(si.resSlot, mt, nt, rows, cols)
					srcs := psOp(g*tilesPerGroup+nt, rows, cols)
					in := sl.inst()
					switch {
					case si.first && eng == isa.EngineScalar:
						*in = isa.Instruction{Body: &isa.Body{Op: isa.OpActivation, Outs: dsts, Ins: srcs, Attrs: isa.Attrs{Func: isa.ActCopy, Scale: 1}}}
					case si.first:
						*in = isa.Instruction{Body: &isa.Body{Op: isa.OpTensorCopy, Outs: dsts, Ins: srcs}}
					default:
						*in = isa.Instruction{Body: &isa.Body{Op: isa.OpTensorTensor, Outs: dsts, Ins: accOps(sl, si.resSlot, mt, nt, g*tilesPerGroup+nt, rows, cols), Attrs: isa.Attrs{ALU0: isa.ALUAdd}}}
					}
					in.Engine, in.Chip, in.Core, in.OpID = eng, b.chip, b.core, opID
					if nt == 0 {
						in.Waits = waits
					}
					if nt == si.nTiles-1 {
						in.Signal = b.signal(evacSem(eng))
					}
					if plain {
						evInst[ei] = in
					}
					out = append(out, in)
				}
			}
			if eng == isa.EngineScalar {
				out = storeInstrs(s, out, sl)
			}
			return out, nil
		}
	}

	// storeInstrs returns the store of a finished result block (issued from
	// ScalarE's stream) after the block's last K step.
	storeInstrs = func(s int64, out []*isa.Instruction, sl *slab) []*isa.Instruction {
		si := &sched[s]
		if !si.last {
			return out
		}
		var waits []isa.SemWait
		lastU := si.groups0 + si.mTiles - 1
		waits = b.waitGE(waits, semEvacV, groupCount(lastU, isa.EngineVector))
		waits = b.waitGE(waits, semEvacS, groupCount(lastU, isa.EngineScalar))
		fullM := si.mSize / 128 * 128
		st := func(dst, src isa.Operand) {
			in := sl.inst()
			*in = isa.Instruction{Body: &isa.Body{Op: isa.OpDMACopy, Engine: isa.EngineScalar, Chip: b.chip, Core: b.core, Outs: sl.operands(dst), Ins: sl.operands(src), Attrs: isa.Attrs{Queue: queue(2*s + 2), DGE: p.dge}, OpID: opID}, Signal: b.signal(semStore), Waits: waits}
			waits = nil
			out = append(out, in)
		}
		if fullM > 0 {
			mt := fullM / 128
			src := b.raw(resBuf[si.resSlot], 0, 128, 0, isa.Dim{Size: mt, Stride: p.BN}, isa.Dim{Size: si.nSize, Stride: 1})
			dst := b.raw(cHBM, 0, 0, si.m0*p.N+si.n0, isa.Dim{Size: 128, Stride: p.N}, isa.Dim{Size: mt, Stride: 128 * p.N}, isa.Dim{Size: si.nSize, Stride: 1})
			st(dst, src)
		}
		if rem := si.mSize - fullM; rem > 0 {
			mt := fullM / 128
			src := b.view(resBuf[si.resSlot], rng(0, rem), rng(mt*p.BN, mt*p.BN+si.nSize))
			dst := b.view(cHBM, rng(si.m0+fullM, si.m0+si.mSize), rng(si.n0, si.n0+si.nSize))
			st(dst, src)
		}
		return out
	}

	key := func(e isa.Engine) isa.StreamKey { return isa.StreamKey{Chip: b.chip, Core: b.core, Engine: e} }
	b.prog.Streams = []isa.StreamSource{
		batchStream(key(isa.EngineTensor), steps, tensorGen),
		batchStream(key(isa.EngineVector), steps, evacGen(isa.EngineVector)),
		batchStream(key(isa.EngineScalar), steps, evacGen(isa.EngineScalar)),
		batchStream(key(isa.EngineSync), steps, syncGen),
	}
	b.prog.SortStreams()

	flops := 2 * float64(p.M) * float64(p.N) * float64(p.K)
	name := cfg.Workload.Name
	if name == "" {
		name = fmt.Sprintf("gemm %dx%dx%d %s", p.M, p.K, p.N, p.in)
	}
	info := &Info{Name: name, Kind: "gemm", DType: p.in, FLOPs: flops, CoresUsed: 1,
		Shape:       []Dim{{"m", p.M}, {"k", p.K}, {"n", p.N}},
		Ops:         []Op{{ID: opID, Name: "matmul", Kind: "matmul", FLOPs: flops}},
		MinHBMBytes: (p.M*p.K+p.K*p.N)*eb + p.M*p.N*int64(p.out.Bytes()),
		Choices:     p.choices(),
		Notes:       []string{"loop order " + p.order, "result dtype " + p.resDT().String()}}
	return b.prog, info, nil
}

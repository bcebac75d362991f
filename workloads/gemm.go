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
	nres       int64 // result block buffers
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

// sbufBytes returns the SBUF bytes per partition a plan needs.
func (p *gemmPlan) sbufBytes() int64 {
	eb := int64(p.in.Bytes())
	kt := p.BK / 128
	resEB := int64(4)
	if p.K <= p.BK {
		resEB = int64(p.out.Bytes())
	}
	return p.nbuf*kt*(p.BM+p.BN)*eb + p.nres*(p.BM/128)*p.BN*resEB + 64*4
}

// dmaBytes returns the HBM traffic of a plan.
func (p *gemmPlan) dmaBytes() int64 {
	eb := int64(p.in.Bytes())
	return p.K*p.M*eb*ceilDiv(p.N, p.BN) + p.K*p.N*eb*ceilDiv(p.M, p.BM) + p.M*p.N*int64(p.out.Bytes())
}

func roundUp(v, m int64) int64 { return ceilDiv(v, m) * m }

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
	for _, bn := range bns {
		for _, bm := range bms {
			for _, bk := range bks {
				for _, nres := range []int64{2, 1} {
					c := *p
					c.BN, c.BM, c.BK, c.nres = bn, bm, bk, nres
					if c.sbufBytes() > sbufCap {
						continue
					}
					if best == nil || better(&c, best) {
						cc := c
						best = &cc
					}
				}
			}
		}
	}
	if best == nil {
		c := *p
		c.BN, c.BM, c.BK, c.nres = bns[0], bms[0], bks[0], 1
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
		c("buffers", p.nbuf), c("dma_queues", p.queues), c("psum_banks", p.banks)}
}

// lowerGEMM lowers C[M,N] = A[M,K] @ B[K,N] for one NeuronCore.
//
// Loop nest (the NKI tutorial's fully optimised kernel): for each N block,
// for each M block, for each K block: Sync loads the A^T block [BK, BM] and
// the B block [BK, BN] into SBUF (nbuf-deep buffering); TensorE, for each
// 128-row M tile and each 128-row K tile, loads the stationary A^T tile once
// and streams the B tile's TN-column slices through it, accumulating each
// into its own PSUM bank over the K block; VectorE evacuates each
// accumulation group into an SBUF result block (copy for the first K block,
// add for the rest); ScalarE triggers the store of each finished result
// block. PSUM groups rotate so TensorE fills one while VectorE drains
// another. Every hand-off is a counting semaphore.
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
	KT := p.BK / 128
	MT := p.BM / 128
	resDT := isa.FP32
	if p.K <= p.BK {
		resDT = p.out
	}
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
	for i := int64(0); i < p.nres; i++ {
		r, err := b.sbuf(fmt.Sprintf("res%d", i), resDT, 128, MT*p.BN)
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
	lsCache := make([][]isa.Operand, p.nbuf*KT*MT)
	mvCache := make([][]isa.Operand, p.nbuf*KT*ntMax)
	psCache := make([][]isa.Operand, len(ps))
	resCache := make([][]isa.Operand, p.nres*MT*ntMax)
	lsOp := func(slot, kt, mt, krows, rows int64) []isa.Operand {
		if krows == 128 && rows == 128 {
			i := (slot*KT+kt)*MT + mt
			if lsCache[i] == nil {
				lsCache[i] = b.viewOps(aBuf[slot], rng(0, 128), rng(kt*p.BM+mt*128, kt*p.BM+mt*128+128))
			}
			return lsCache[i]
		}
		return b.viewOps(aBuf[slot], rng(0, krows), rng(kt*p.BM+mt*128, kt*p.BM+mt*128+rows))
	}
	mvOp := func(slot, kt, nt, krows, cols int64) []isa.Operand {
		if krows == 128 && cols == p.TN {
			i := (slot*KT+kt)*ntMax + nt
			if mvCache[i] == nil {
				mvCache[i] = b.viewOps(bBuf[slot], rng(0, 128), rng(kt*p.BN+nt*p.TN, kt*p.BN+nt*p.TN+p.TN))
			}
			return mvCache[i]
		}
		return b.viewOps(bBuf[slot], rng(0, krows), rng(kt*p.BN+nt*p.TN, kt*p.BN+nt*p.TN+cols))
	}
	psOp := func(bank, rows, cols int64) []isa.Operand {
		if rows == 128 && cols == p.TN {
			if psCache[bank] == nil {
				psCache[bank] = b.viewOps(ps[bank], rng(0, 128), rng(0, p.TN))
			}
			return psCache[bank]
		}
		return b.viewOps(ps[bank], rng(0, rows), rng(0, cols))
	}
	resOp := func(rslot, mt, nt, rows, cols int64) []isa.Operand {
		if rows == 128 && cols == p.TN {
			i := (rslot*MT+mt)*ntMax + nt
			if resCache[i] == nil {
				resCache[i] = b.viewOps(resBuf[rslot], rng(0, 128), rng(mt*p.BN+nt*p.TN, mt*p.BN+nt*p.TN+p.TN))
			}
			return resCache[i]
		}
		return b.viewOps(resBuf[rslot], rng(0, rows), rng(mt*p.BN+nt*p.TN, mt*p.BN+nt*p.TN+cols))
	}

	nBlocksN, nBlocksM, nBlocksK := ceilDiv(p.N, p.BN), ceilDiv(p.M, p.BM), ceilDiv(p.K, p.BK)
	steps := nBlocksN * nBlocksM * nBlocksK
	type stepInfo struct {
		nb, mb, kb             int64
		n0, m0, k0             int64
		nSize, mSize, kSize    int64
		mTiles, kTiles, nTiles int64
		block                  int64 // result block index (nb, mb)
	}
	stepAt := func(s int64) stepInfo {
		kb := s % nBlocksK
		mb := (s / nBlocksK) % nBlocksM
		nb := s / (nBlocksK * nBlocksM)
		si := stepInfo{nb: nb, mb: mb, kb: kb, n0: nb * p.BN, m0: mb * p.BM, k0: kb * p.BK, block: s / nBlocksK}
		si.nSize = min(p.BN, p.N-si.n0)
		si.mSize = min(p.BM, p.M-si.m0)
		si.kSize = min(p.BK, p.K-si.k0)
		si.mTiles, si.kTiles, si.nTiles = ceilDiv(si.mSize, 128), ceilDiv(si.kSize, 128), ceilDiv(si.nSize, p.TN)
		return si
	}
	// DMA transfers per block load: full K tiles in one transfer, a partial
	// last tile in another.
	loadsOf := func(si stepInfo) int64 {
		if p.aLayout == "mk" {
			return si.kTiles
		}
		if si.kSize%128 != 0 && si.kTiles > 1 {
			return 2
		}
		return 1
	}
	bLoadsOf := func(si stepInfo) int64 {
		if si.kSize%128 != 0 && si.kTiles > 1 {
			return 2
		}
		return 1
	}
	storesOf := func(si stepInfo) int64 {
		if si.mSize%128 != 0 && si.mTiles > 1 {
			return 2
		}
		return 1
	}
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
	// Running counters shared by construction: every generator walks the
	// steps in order and derives counts from this prefix table.
	type prefix struct{ aLoads, bLoads, groups, stores int64 }
	prefixes := make([]prefix, steps+1)
	for s := int64(0); s < steps; s++ {
		si := stepAt(s)
		pr := prefixes[s]
		pr.aLoads += loadsOf(si)
		pr.bLoads += bLoadsOf(si)
		pr.groups += si.mTiles
		if si.kb == nBlocksK-1 {
			pr.stores += storesOf(si)
		}
		prefixes[s+1] = pr
	}

	syncGen := func(s int64) ([]*isa.Instruction, error) {
		si := stepAt(s)
		slot := s % p.nbuf
		var out []*isa.Instruction
		var waits []isa.SemWait
		// The slot is free once TensorE finished step s-nbuf.
		waits = b.waitGE(waits, semStep, s-p.nbuf+1)
		first := true
		dma := func(dst, src isa.Operand, op isa.Opcode, sem int32, q int64) {
			in := &isa.Instruction{Op: op, Engine: isa.EngineSync, Chip: b.chip, Core: b.core,
				Outs: []isa.Operand{dst}, Ins: []isa.Operand{src}, Attrs: isa.Attrs{Queue: queue(q), DGE: p.dge},
				Signal: b.signal(sem), OpID: opID}
			if first {
				in.Waits = waits
				first = false
			}
			out = append(out, in)
		}
		// A^T block: partition p of k-tile kt holds row k0+kt*128+p.
		fullK := si.kSize / 128 * 128
		if p.aLayout == "km" {
			if fullK > 0 {
				kt := fullK / 128
				dst := b.raw(aBuf[slot], 0, 128, 0, isa.Dim{Size: kt, Stride: p.BM}, isa.Dim{Size: si.mSize, Stride: 1})
				src := b.raw(aHBM, 0, 0, si.k0*p.M+si.m0, isa.Dim{Size: 128, Stride: p.M}, isa.Dim{Size: kt, Stride: 128 * p.M}, isa.Dim{Size: si.mSize, Stride: 1})
				dma(dst, src, isa.OpDMACopy, semA, 2*s)
			}
			if rem := si.kSize - fullK; rem > 0 {
				kt := fullK / 128
				dst := b.view(aBuf[slot], rng(0, rem), rng(kt*p.BM, kt*p.BM+si.mSize))
				src := b.view(aHBM, rng(si.k0+fullK, si.k0+si.kSize), rng(si.m0, si.m0+si.mSize))
				dma(dst, src, isa.OpDMACopy, semA, 2*s)
			}
		} else {
			for kt := int64(0); kt < si.kTiles; kt++ {
				rows := min(128, si.kSize-kt*128)
				dst := b.view(aBuf[slot], rng(0, rows), rng(kt*p.BM, kt*p.BM+si.mSize))
				src := b.view(aHBM, rng(si.m0, si.m0+si.mSize), rng(si.k0+kt*128, si.k0+kt*128+rows))
				dma(dst, src, isa.OpDMATranspose, semA, 2*s)
			}
		}
		if fullK > 0 {
			kt := fullK / 128
			dst := b.raw(bBuf[slot], 0, 128, 0, isa.Dim{Size: kt, Stride: p.BN}, isa.Dim{Size: si.nSize, Stride: 1})
			src := b.raw(bHBM, 0, 0, si.k0*p.N+si.n0, isa.Dim{Size: 128, Stride: p.N}, isa.Dim{Size: kt, Stride: 128 * p.N}, isa.Dim{Size: si.nSize, Stride: 1})
			dma(dst, src, isa.OpDMACopy, semB, 2*s+1)
		}
		if rem := si.kSize - fullK; rem > 0 {
			kt := fullK / 128
			dst := b.view(bBuf[slot], rng(0, rem), rng(kt*p.BN, kt*p.BN+si.nSize))
			src := b.view(bHBM, rng(si.k0+fullK, si.k0+si.kSize), rng(si.n0, si.n0+si.nSize))
			dma(dst, src, isa.OpDMACopy, semB, 2*s+1)
		}
		return out, nil
	}

	tensorGen := func(s int64) ([]*isa.Instruction, error) {
		si := stepAt(s)
		slot := s % p.nbuf
		n := si.mTiles * si.kTiles * (1 + si.nTiles)
		sl := newSlab(int(n), 0)
		out := make([]*isa.Instruction, 0, n)
		var waits []isa.SemWait
		waits = b.waitGE(waits, semA, dmaEngines*prefixes[s+1].aLoads)
		waits = b.waitGE(waits, semB, dmaEngines*prefixes[s+1].bLoads)
		for mt := int64(0); mt < si.mTiles; mt++ {
			u := prefixes[s].groups + mt
			g := u % p.ngroups
			rows := min(128, si.mSize-mt*128)
			// The group's banks are free once group use u-ngroups is evacuated.
			if prev := u - p.ngroups; prev >= 0 {
				e := evacEngine(prev)
				waits = b.waitGE(waits, evacSem(e), groupCount(prev, e))
			}
			for kt := int64(0); kt < si.kTiles; kt++ {
				krows := min(128, si.kSize-kt*128)
				ls := sl.inst()
				*ls = isa.Instruction{Op: isa.OpLoadStationary, Engine: isa.EngineTensor, Chip: b.chip, Core: b.core,
					Ins: lsOp(slot, kt, mt, krows, rows), OpID: opID, Waits: waits}
				waits = nil
				out = append(out, ls)
				for nt := int64(0); nt < si.nTiles; nt++ {
					cols := min(p.TN, si.nSize-nt*p.TN)
					mm := sl.inst()
					*mm = isa.Instruction{Op: isa.OpMultiplyMoving, Engine: isa.EngineTensor, Chip: b.chip, Core: b.core,
						Outs:  psOp(g*tilesPerGroup+nt, rows, cols),
						Ins:   mvOp(slot, kt, nt, krows, cols),
						Attrs: isa.Attrs{Start: kt == 0, Stop: kt == si.kTiles-1}, OpID: opID}
					if kt == si.kTiles-1 && nt == si.nTiles-1 {
						mm.Signal = b.signal(semMM)
						if mt == si.mTiles-1 {
							mm.Signal = append(mm.Signal, isa.SemSignal{Sem: b.sem(semStep), Add: 1})
						}
					}
					out = append(out, mm)
				}
			}
		}
		return out, nil
	}

	var storeInstrs func(s int64) []*isa.Instruction
	evacGen := func(eng isa.Engine) func(s int64) ([]*isa.Instruction, error) {
		return func(s int64) ([]*isa.Instruction, error) {
			si := stepAt(s)
			n := si.mTiles * si.nTiles
			sl := newSlab(int(n), int(2*n))
			out := make([]*isa.Instruction, 0, n+2)
			rslot := si.block % p.nres
			for mt := int64(0); mt < si.mTiles; mt++ {
				u := prefixes[s].groups + mt
				if evacEngine(u) != eng {
					continue
				}
				g := u % p.ngroups
				rows := min(128, si.mSize-mt*128)
				var waits []isa.SemWait
				waits = b.waitGE(waits, semMM, u+1)
				if si.kb == 0 && mt == 0 {
					// The result slot is free once block block-nres is stored.
					if prevBlock := si.block - p.nres; prevBlock >= 0 {
						waits = b.waitGE(waits, semStore, dmaEngines*prefixes[(prevBlock+1)*nBlocksK].stores)
					}
				}
				for nt := int64(0); nt < si.nTiles; nt++ {
					cols := min(p.TN, si.nSize-nt*p.TN)
					dsts := resOp(rslot, mt, nt, rows, cols)
					srcs := psOp(g*tilesPerGroup+nt, rows, cols)
					dst, src := dsts[0], srcs[0]
					in := sl.inst()
					switch {
					case si.kb == 0 && eng == isa.EngineScalar:
						*in = isa.Instruction{Op: isa.OpActivation, Outs: dsts, Ins: srcs,
							Attrs: isa.Attrs{Func: isa.ActCopy, Scale: 1}}
					case si.kb == 0:
						*in = isa.Instruction{Op: isa.OpTensorCopy, Outs: dsts, Ins: srcs}
					default:
						*in = isa.Instruction{Op: isa.OpTensorTensor, Outs: dsts, Ins: sl.operands(dst, src),
							Attrs: isa.Attrs{ALU0: isa.ALUAdd}}
					}
					in.Engine, in.Chip, in.Core, in.OpID = eng, b.chip, b.core, opID
					if nt == 0 {
						in.Waits = waits
					}
					if nt == si.nTiles-1 {
						in.Signal = b.signal(evacSem(eng))
					}
					out = append(out, in)
				}
			}
			if eng == isa.EngineScalar {
				out = append(out, storeInstrs(s)...)
			}
			return out, nil
		}
	}

	// storeInstrs returns the store of a finished result block (issued from
	// ScalarE's stream) after the block's last K step.
	storeInstrs = func(s int64) []*isa.Instruction {
		si := stepAt(s)
		if si.kb != nBlocksK-1 {
			return nil
		}
		rslot := si.block % p.nres
		var waits []isa.SemWait
		lastU := prefixes[s+1].groups - 1
		waits = b.waitGE(waits, semEvacV, groupCount(lastU, isa.EngineVector))
		waits = b.waitGE(waits, semEvacS, groupCount(lastU, isa.EngineScalar))
		var out []*isa.Instruction
		fullM := si.mSize / 128 * 128
		st := func(dst, src isa.Operand) {
			in := &isa.Instruction{Op: isa.OpDMACopy, Engine: isa.EngineScalar, Chip: b.chip, Core: b.core,
				Outs: []isa.Operand{dst}, Ins: []isa.Operand{src}, Attrs: isa.Attrs{Queue: queue(2*s + 2), DGE: p.dge},
				Signal: b.signal(semStore), OpID: opID, Waits: waits}
			waits = nil
			out = append(out, in)
		}
		if fullM > 0 {
			mt := fullM / 128
			src := b.raw(resBuf[rslot], 0, 128, 0, isa.Dim{Size: mt, Stride: p.BN}, isa.Dim{Size: si.nSize, Stride: 1})
			dst := b.raw(cHBM, 0, 0, si.m0*p.N+si.n0, isa.Dim{Size: 128, Stride: p.N}, isa.Dim{Size: mt, Stride: 128 * p.N}, isa.Dim{Size: si.nSize, Stride: 1})
			st(dst, src)
		}
		if rem := si.mSize - fullM; rem > 0 {
			mt := fullM / 128
			src := b.view(resBuf[rslot], rng(0, rem), rng(mt*p.BN, mt*p.BN+si.nSize))
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
		Ops:         []Op{{ID: opID, Name: "matmul", Kind: "matmul", FLOPs: flops}},
		MinHBMBytes: (p.M*p.K+p.K*p.N)*eb + p.M*p.N*int64(p.out.Bytes()),
		Choices:     p.choices()}
	return b.prog, info, nil
}

package kernels

import (
	"fmt"
	"math"
	"slices"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/sched"
	. "github.com/trnsim/trnsim/workloads/tile"
)

// GEMM is C[M, N] = A[M, K] @ B[K, N], or Batch of them (a batched
// matmul: Batch independent A, B and C, stored one after another along
// their first dimension).
type GEMM struct {
	M, K, N int64
	// Batch is the number of independent GEMMs (0 or 1: one).
	Batch   int64
	In, Out isa.DType
	// AMK is set when A is stored row-major [M, K]; otherwise it is stored
	// transposed, [K, M] (the NKI lhsT layout).
	AMK bool
	// Epilogue is elementwise work fused into the result's way out.
	Epilogue Epilogue
	// Dequant stores B quantised, in WeightDType (int8 weight-only, or an
	// FP8 dtype where TensorE has no FP8 mode), while the matmuls run in
	// In: B streams from HBM at WeightDType's width, each block is
	// converted to In in SBUF (GEMMOptions.Dequantize picks the engine),
	// and the per-output-channel scale SCALE [1, N] (in Out) multiplies
	// the result before the epilogue (dequant.go).
	Dequant     bool
	WeightDType isa.DType
	// BTiled stores B pre-tiled for the plan's blocks, as a compiler lays
	// out weights ahead of time for the kernel that reads them: [N blocks
	// x 128, K tiles, BN] (GEMMPlan.BShape), row nb*128 + p, tile t holding
	// B[t*128 + p, nb*BN : nb*BN + BN] (zero past K and N), so that each
	// partition's rows of a block are one contiguous run in HBM. One GEMM
	// (no batch).
	BTiled bool
}

// BDType returns B's dtype in HBM.
func (g GEMM) BDType() isa.DType {
	if g.Dequant {
		return g.WeightDType
	}
	return g.In
}

// Epilogue is what a GEMM does to each finished result block in SBUF
// before storing it, instead of a pass of its own through HBM: an
// activation on ScalarE (Func, when Apply), then a combination with the
// matching block of an HBM tensor R [M, N] on VectorE (Combine: add for a
// residual, multiply for a gate), R loaded as the block is stored (or,
// where K accumulates in PSUM, at the N block's start, to be combined as
// each tile leaves PSUM: foldResidual).
type Epilogue struct {
	// Bias adds an HBM vector BIAS [N] to every row first (loaded once
	// into every partition).
	Bias    bool
	Apply   bool
	Func    isa.ActFunc
	Combine isa.ALUOp
	// Norm, last, normalises each row (a post-norm transformer's
	// LayerNorm after the residual add): the plan then holds whole rows
	// in one N block.
	Norm EpilogueNorm
}

// EpilogueNorm is a LayerNorm or RMSNorm over each result row (N
// columns), as kernels.Norm computes it: the weight NW [N], and for a
// LayerNorm with Bias the bias NB [N], loaded once into every partition.
type EpilogueNorm struct {
	On, RMS, Bias bool
	Eps           float64
}

// HasR reports whether the epilogue reads R.
func (e Epilogue) HasR() bool { return e.Combine != isa.ALUNone }

// Any reports whether there is an epilogue.
func (e Epilogue) Any() bool { return e.Bias || e.Apply || e.HasR() || e.Norm.On }

// Evacuation selects the engine that copies PSUM results out.
type Evacuation uint8

// Evacuation choices.
const (
	EvacVector Evacuation = iota
	EvacScalar
	EvacAlternate
	// EvacAuto leaves it to the scheduler (estimated finish time).
	EvacAuto
)

// LoopOrder is the GEMM's block loop order.
type LoopOrder uint8

// Loop orders: NKM loops K blocks outside M blocks, keeping every M
// block's result in SBUF so each B block is loaded once (the NKI
// tutorial's kernel); NMK keeps one result block at a time and reloads B
// for every M block.
const (
	OrderAuto LoopOrder = iota
	OrderNKM
	OrderNMK
)

func (o LoopOrder) String() string { return [...]string{"auto", "nkm", "nmk"}[o] }

// TransposeMode says how A stored [M, K] reaches the stationary layout.
type TransposeMode uint8

// Transpose modes.
const (
	// TransposeAuto: DMA transposes for 2- and 4-byte dtypes, TensorE
	// transposes otherwise (FP8).
	TransposeAuto TransposeMode = iota
	TransposeDMA
	TransposeTensor
)

// MatmulMode is TensorE's mode for the GEMM's matmuls.
type MatmulMode uint8

// Matmul modes.
const (
	// MatmulAuto: double row where the hardware and the dtype allow it.
	MatmulAuto MatmulMode = iota
	MatmulNormal
	// MatmulDoubleRow: FP8 double-row mode (NeuronCore-v3, fp8e4/fp8e5):
	// each matmul contracts two K tiles, stationary [128, 2, 128] and
	// moving [128, 2, N], in the time of a BF16 pair.
	MatmulDoubleRow
)

// GEMMOptions are the GEMM's lowering choices; zero values are chosen by
// the kernel.
type GEMMOptions struct {
	TileN, BlockM, BlockN, BlockK int64
	Buffers, ResultBuffers        int64
	PSUMBanks                     int64
	Evacuate                      Evacuation
	// EvacuateSet says Evacuate was given; otherwise the plan search
	// chooses between vector and auto.
	EvacuateSet bool
	Order       LoopOrder
	// AccumulateDType is the dtype of SBUF result blocks when K spans
	// several blocks; AccumulateSet says it was given.
	AccumulateDType isa.DType
	AccumulateSet   bool
	Transpose       TransposeMode
	Mode            MatmulMode
	// Dequantize is the engine that converts quantised weights (GEMM.Dequant);
	// DequantizeSet says it was given, otherwise the plan search
	// chooses by estimated time.
	Dequantize    DequantEngine
	DequantizeSet bool
	// SBUFBytes, when set, is the SBUF per partition the plan's working
	// set may take (less than the whole: room left for what runs beside
	// it, such as the next op's prefetched weights).
	SBUFBytes int64
	// WeightSlotBytes, when set, streams B (one GEMM, loop order nkm or
	// one M block) through the slots of one kernel-level tile of at most
	// that many bytes per partition (at least Buffers blocks), loaded in
	// order on a DMA queue of their own, the first blocks by the kernel's
	// first statement (the head, GEMMPlan.HeadStmts), which a caller may
	// move earlier in program order to prefetch them. Quantised weights
	// stream as stored, each block converted a step ahead of its
	// multiplies as ever.
	WeightSlotBytes int64
	// KeepResult reserves SBUF for the whole result ([128, 1, M tiles, N],
	// ResultTileShape) beside the plan's working set, so that a plan of
	// several N blocks may keep it (GEMMPlan.KeepResult); a plan of one N
	// block may keep it without.
	KeepResult bool
	// OpID is the workload op the instructions belong to.
	OpID int32
}

// GEMMPlan is a GEMM's resolved lowering.
type GEMMPlan struct {
	G GEMM
	// normFree is the most columns one bn_stats reads, for a fused norm;
	// normVector how many of a row's columns VectorE normalises, scales
	// and shifts (normVectorCols), ScalarE and GpSimd the rest (VectorE
	// multiplies those too where normShareVG: GpSimd shares its SBUF port).
	normFree, normVector int64
	normShareVG          bool
	TN, BM, BN, BK       int64
	NBuf, NRes           int64
	Order                LoopOrder
	AccDT                isa.DType
	Banks                int64
	GroupBanks           int64 // banks per accumulation group
	Groups               int64
	Evacuate             Evacuation
	Transpose            TransposeMode
	// DoubleRow is set when the matmuls run in FP8 double-row mode.
	DoubleRow bool
	// Dequantize is the engine that converts quantised weights;
	// weightQueue the DMA queue their loads keep to (-1: none).
	Dequantize  DequantEngine
	weightQueue int
	// PSUMK is set when K spans several blocks and every M tile's
	// accumulation group of an N block stays in PSUM across them (one M
	// block, loop order nkm, two such sets of groups fitting the banks):
	// the K blocks accumulate in PSUM and each result tile is evacuated
	// once, with no partial sums in SBUF (see psumKFor).
	PSUMK bool
	// BSlots is the number of B blocks of a streamed B (the
	// GEMMOptions.WeightSlotBytes mode; 0 otherwise) and BHead how many of
	// them the head loads (all of B's blocks when they all fit).
	BSlots, BHead int64
	// keepResult and aOnChip hand a result from one GEMM to the next in
	// SBUF (KeepResult, ReadAOnChip); keepPlanned says the plan left SBUF
	// for the whole result (GEMMOptions.KeepResult).
	keepResult, aOnChip, keepPlanned bool
	// AResident is set when the whole of A^T stays in SBUF (one M block,
	// loop order nkm): loaded by the first step (a transfer per K block),
	// TensorE-transposed, where it is, by K block a step ahead of the
	// multiplies of the first N block, and read by every N block (see
	// aResFor). K in PSUM (PSUMK) takes it.
	AResident bool
	// groupBanksAvail is the PSUM banks the accumulation groups may use
	// (the transpose mode's), for psumKFor.
	groupBanksAvail    int64
	banksPerTile, tile int64 // PSUM banks per moving tile, and its pitch in elements
	auto               map[string]bool
	opID               int32
}

// BShape returns the shape of B in HBM: [Batch*K, N], or pre-tiled
// (BTiled) [ceil(N/BN)*128, ceil(K/128), min(BN, N)].
func (p *GEMMPlan) BShape() []int64 {
	g := p.G
	if g.BTiled {
		return []int64{ceilDiv(g.N, p.BN) * 128, ceilDiv(g.K, 128), min(p.BN, g.N)}
	}
	return []int64{max(g.Batch, 1) * g.K, g.N}
}

// ResultDType returns the dtype of the SBUF result blocks.
func (p *GEMMPlan) ResultDType() isa.DType {
	if p.G.K <= p.BK || p.PSUMK {
		return p.G.Out
	}
	return p.AccDT
}

// psumKFor reports whether a plan with these blocks accumulates K across
// its blocks in PSUM: K spans several blocks, there is one M block (loop
// order nkm, so the K blocks of an N block follow one another), and the
// accumulation groups of all its M tiles fit the banks twice over (an N
// block's groups are evacuated while the next N block's fill the
// others). Each result tile is then evacuated once, by a copy, instead of
// a copy and an add per further K block through an SBUF partial sum.
func (p *GEMMPlan) psumKFor(order LoopOrder, bm, bn, bk int64) bool {
	g := p.G
	if g.K <= bk || order != OrderNKM || g.M > bm || p.TN <= 0 || g.Dequant {
		// (Not with quantised weights: their conversion pipeline, one
		// block ahead, wants K blocks the adds' cost keeps large.)
		return false
	}
	groupBanks := (bn / p.TN) * p.banksPerTile
	return groupBanks > 0 && 2*ceilDiv(g.M, 128)*groupBanks <= p.groupBanksAvail
}

// streamable reports whether B may be streamed through kernel-level
// slots (GEMMOptions.WeightSlotBytes): B of one GEMM, each B block used
// once in loop order (nkm, or one M block). Quantised weights stream as
// stored, their conversions one block ahead as ever.
func (p *GEMMPlan) streamable() bool {
	g := p.G
	return max(g.Batch, 1) == 1 && (p.Order == OrderNKM || g.M <= p.BM)
}

// HeadStmts returns how many of the kernel's first statements load the
// head of a streamed B (GEMMOptions.WeightSlotBytes): they read only B
// and write only its slots, so a caller may move them earlier in program
// order, to prefetch the weights while the work before runs.
func (p *GEMMPlan) HeadStmts() int {
	if p.BHead > 0 {
		return 1
	}
	return 0
}

// AResidentStmts returns how many statements after the head load a
// resident A (one GEMM): they read only A and write only its SBUF tile,
// so a caller may move them earlier in program order, above no statement
// that writes A.
func (p *GEMMPlan) AResidentStmts() int {
	if p.aResFor(p.Order, p.BM) && max(p.G.Batch, 1) == 1 && !p.aOnChip {
		return 1
	}
	return 0
}

// AResidentSBUFBytes returns the SBUF per partition of a resident A's
// tiles (A^T, and A's rows for TensorE transposes).
func (p *GEMMPlan) AResidentSBUFBytes() int64 {
	if p.AResidentStmts() == 0 {
		return 0
	}
	return p.aSBUFBytes(p.Order, p.BM, p.BK)
}

// aChunkBytes is the least bytes per partition of a transfer of a
// resident A (several K blocks, where one is less).
const aChunkBytes = 4096

// headGroupBytes is how many bytes per partition a transfer of a
// pre-tiled B's head takes at most: several K blocks, each partition's
// run of them one descriptor (at 16 ns a descriptor against about 480 ns
// for the bytes: 3% on the bytes' time).
const headGroupBytes = 8192

// SlotTileName names a streamed B's slot tile in the GEMM's kernel (a
// caller may pin its placement).
const SlotTileName = "bs"

// SlotSBUFBytes returns the SBUF per partition of a streamed B's slots.
func (p *GEMMPlan) SlotSBUFBytes() int64 {
	return mul(p.BSlots, roundUp(mul(p.BK/128, p.BN, int64(p.G.BDType().Bytes())), 64))
}

// aResFor reports whether a plan with this order and M block keeps A
// resident (AResident, where it applies: one M block in loop order nkm).
func (p *GEMMPlan) aResFor(order LoopOrder, bm int64) bool {
	return p.AResident && order == OrderNKM && p.G.M <= bm
}

// aSBUFBytes returns the SBUF bytes per partition of the A blocks: NBuf
// rotating K blocks, or all of A^T when resident (with, for TensorE
// transposes, the rows of A as loaded, all of them when resident).
func (p *GEMMPlan) aSBUFBytes(order LoopOrder, bm, bk int64) int64 {
	eb := int64(p.G.In.Bytes())
	slot := func(b int64) int64 { return roundUp(b, 64) }
	tensorT := p.G.AMK && p.Transpose == TransposeTensor
	if p.aResFor(order, bm) {
		kAll := roundUp(p.G.K, 128)
		n := slot(mul(kAll/128, min(bm, p.G.M), eb))
		if tensorT {
			n = add(n, slot(mul(ceilDiv(min(p.G.M, bm), 128), kAll, eb)))
		}
		return n
	}
	n := mul(p.NBuf, slot(mul(bk/128, bm, eb)))
	if tensorT {
		n = add(n, mul(2, slot(mul(bk, eb)))) // A rows staged for TensorE transposes
	}
	return n
}

// biasMatmul reports whether the epilogue's bias joins each result
// tile's accumulation in PSUM as one more matmul, a row of ones
// (stationary, one partition) times the bias row (moving): the group's
// first, so that its evacuation is the result with the bias, without the
// bias broadcast to every partition by DMA (N x 128 elements written for
// N read) nor an add pass. Each result tile accumulates once (kOnce), in
// the one dtype (the bias is Out), and not with quantised weights (their
// scales multiply the sum) or double-row matmuls.
func (p *GEMMPlan) biasMatmul() bool {
	g := p.G
	return g.Epilogue.Bias && p.kOnce() && g.In == g.Out && !g.Dequant && !p.DoubleRow
}

// foldBias reports whether the epilogue's bias is added by the
// evacuations (VectorE's, each result tile's only one: an add of the PSUM
// tile and the bias at the copy's cost), not by a pass over the finished
// block. Not with quantised weights, whose scales multiply first.
func (p *GEMMPlan) foldBias() bool {
	return p.G.Epilogue.Bias && !p.G.Dequant && p.kOnce() && p.Evacuate == EvacVector && !p.biasMatmul()
}

// foldResidual reports whether the epilogue's residual (or gating
// input) is combined with each result tile as it leaves PSUM, VectorE's
// evacuation a tensor_tensor of the PSUM tile and the residual block
// loaded ahead (one input in PSUM, one in SBUF: the copy's cost, S9),
// not by a pass over the finished block: K accumulated in PSUM (each
// result tile evacuated once, one M block), VectorE evacuations, the bias
// (if any) in PSUM already, no activation before the combine and no
// quantised weights' scales.
func (p *GEMMPlan) foldResidual() bool {
	e := p.G.Epilogue
	return e.HasR() && p.PSUMK && !e.Apply && !p.G.Dequant && (!e.Bias || p.biasMatmul()) && p.Evacuate == EvacVector
}

// ResultTileName and AOnChipTileName name the kernel-level SBUF tiles
// through which one GEMM hands its result to the next (KeepResult,
// ReadAOnChip): a caller inlining both binds them to one tile.
const (
	ResultTileName  = "C_SB"
	AOnChipTileName = "A_SB"
)

// CanKeepResult reports whether the plan can leave its result in a
// kernel-level SBUF tile (ResultTileName, ResultTileShape) besides storing
// it: K accumulated in PSUM (one M block), one N block or SBUF left for
// the whole result (GEMMOptions.KeepResult), N a multiple of 128 (the
// rows a GEMM reading it as A transposes), one GEMM, no stores deferred.
func (p *GEMMPlan) CanKeepResult() bool {
	g := p.G
	return p.PSUMK && !p.deferStores() && (p.BN >= g.N || p.keepPlanned) && g.N%128 == 0 && max(g.Batch, 1) == 1 &&
		ceilDiv(g.M, p.BM) == 1 && p.BM/128 == ceilDiv(g.M, 128)
}

// KeepResult makes the kernel leave its result in ResultTileName (see
// CanKeepResult, which must hold).
func (p *GEMMPlan) KeepResult() { p.keepResult = true }

// ResultTileShape is the shape of ResultTileName: [128, 1, M tiles, N],
// each M tile's rows in its partitions.
func (p *GEMMPlan) ResultTileShape() []int64 {
	return []int64{128, 1, ceilDiv(p.G.M, 128), p.G.N}
}

// CanReadAOnChip reports whether the plan can read A's rows from a
// kernel-level SBUF tile (AOnChipTileName, AOnChipShape) instead of
// loading them: A [M, K] resident and transposed by TensorE, K a
// multiple of 128, one GEMM.
func (p *GEMMPlan) CanReadAOnChip() bool {
	g := p.G
	return p.aResFor(p.Order, p.BM) && g.AMK && p.Transpose == TransposeTensor && g.K%128 == 0 &&
		max(g.Batch, 1) == 1 && !g.Dequant && p.BM >= g.M
}

// ReadAOnChip makes the kernel read A's rows from AOnChipTileName (see
// CanReadAOnChip, which must hold).
func (p *GEMMPlan) ReadAOnChip() { p.aOnChip = true }

// AOnChipShape is the shape of AOnChipTileName: [128, 1, M tiles, K],
// as ResultTileShape of a GEMM whose N is this one's K.
func (p *GEMMPlan) AOnChipShape() []int64 {
	return []int64{128, 1, ceilDiv(p.G.M, 128), p.G.K}
}

// residentFits reports whether the nkm plan with these blocks, K in PSUM
// and A resident fits cap.
func (p *GEMMPlan) residentFits(bn, bm, bk, nres, cap int64) bool {
	q := *p
	q.AResident = true
	return q.sbufBytesOf(OrderNKM, bn, bm, bk, nres) <= cap
}

// kOnce reports whether each result tile is evacuated once (K in one
// block, or accumulated in PSUM across its blocks).
func (p *GEMMPlan) kOnce() bool { return p.G.K <= p.BK || p.PSUMK }

// sbufBytes returns the SBUF bytes per partition a plan needs, as the
// scheduler places it (every tile slot rounded to 64 bytes).
func (p *GEMMPlan) sbufBytes() int64 { return p.sbufBytesOf(p.Order, p.BN, p.BM, p.BK, p.NRes) }

// sbufBytesOf is sbufBytes for the plan with those choices instead.
func (p *GEMMPlan) sbufBytesOf(order LoopOrder, bn, bm, bk, nres int64) int64 {
	if p.G.M < 1<<32 && bn < 1<<16 && bm < 1<<16 && bk < 1<<16 && nres < 1<<8 && p.NBuf < 1<<8 {
		// No product can overflow: plain arithmetic (the plan search calls
		// this thousands of times).
		return p.sbufBytesSmall(order, bn, bm, bk, nres)
	}
	return p.sbufBytesSat(order, bn, bm, bk, nres)
}

// sbufBytesSat is sbufBytesOf with every product and sum saturating.
func (p *GEMMPlan) sbufBytesSat(order LoopOrder, bn, bm, bk, nres int64) int64 {
	eb := int64(p.G.In.Bytes())
	kt := bk / 128
	slot := func(b int64) int64 { return roundUp(b, 64) }
	perRes := int64(1) // result blocks per result buffer
	if order == OrderNKM {
		perRes = ceilDiv(p.G.M, bm)
	}
	resDT := p.G.Out
	if p.G.K > bk && !p.psumKFor(order, bm, bn, bk) {
		resDT = p.AccDT
	}
	n := add(p.aSBUFBytes(order, bm, bk), mul(p.NBuf, slot(mul(kt, bn, eb))),
		mul(nres, slot(mul(perRes, bm/128, bn, int64(resDT.Bytes())))))
	if p.G.Epilogue.HasR() {
		n = add(n, mul(2, slot(mul(bm/128, bn, int64(p.G.Out.Bytes()))))) // R blocks
	}
	if p.G.Epilogue.Bias {
		n = add(n, add(slot(mul(p.G.N, int64(p.G.Out.Bytes()))), 64)) // the bias row, its gather index
	}
	if p.G.Dequant {
		n = add(n, mul(p.NBuf, slot(mul(kt, bn, int64(p.G.WeightDType.Bytes())))), p.scaleSBUFBytes(bn)) // B as stored, the scales
	}
	return add(n, p.normSBUFBytes())
}

// blockCols is columns [c0, c0+cols) of a block's rows t (whose last range
// starts at column 0).
func blockCols(t Access, c0, cols int64) Access {
	t.Ranges = append([]Range(nil), t.Ranges...)
	t.Ranges[len(t.Ranges)-1] = RS(C(c0), C(cols))
	return t
}

// normVectorCols is how many of a fused norm's columns (the first) VectorE
// normalises itself, the rest being normalised by ScalarE side by side
// (normRows); VectorE multiplies its columns by the weight and adds the
// bias, and then ScalarE's columns too where it shares SBUF's port with
// GpSimd (NC-v2), else GpSimd does those at the same time. The split, in
// steps of an even 64th of the row, is the one whose later lane finishes
// first by the target's cost table. A row's statistics are needed before
// any of this, so these passes are the norm's tail on the critical path
// of a block of a few tokens.
func normVectorCols(tg *sched.Target, g GEMM) int64 {
	v, _ := normSplit(tg, g, -1)
	return v
}

// normSplit returns the best split of normVectorCols and its estimated
// time, or, with vector >= 0, that split's time.
func normSplit(tg *sched.Target, g GEMM, vector int64) (int64, float64) {
	n, nm := g.N, g.Epilogue.Norm
	c := rowCost{tg}
	dt := g.Out // (the result block, and the weight and bias, in C's dtype, as K in one block or in PSUM leaves it)
	sc := c.view(isa.FP32, 1)
	// norm is the normalisation of cols columns on e, mul their weight
	// and bias (inf where e cannot).
	norm := func(cols int64, e isa.Engine) float64 {
		if cols <= 0 {
			return 0
		}
		x := c.view(dt, cols)
		a := isa.Attrs{ALU0: isa.ALUMultiply}
		ins := []isa.Operand{x, sc}
		if !nm.RMS {
			a.ALU1 = isa.ALUAdd
			ins = append(ins, sc)
		}
		if t := c.ns(isa.OpTensorScalar, e, a, x, ins...); t > 0 {
			return t
		}
		return math.Inf(1)
	}
	mul := func(cols int64, e isa.Engine) float64 {
		if cols <= 0 {
			return 0
		}
		x := c.view(dt, cols)
		t := c.ns(isa.OpTensorTensor, e, isa.Attrs{ALU0: isa.ALUMultiply}, x, x, x)
		if nm.Bias && !nm.RMS {
			t += c.ns(isa.OpTensorTensor, e, isa.Attrs{ALU0: isa.ALUAdd}, x, x, x)
		}
		if t > 0 {
			return t
		}
		return math.Inf(1)
	}
	finish := func(v int64) float64 {
		own := norm(v, isa.EngineVector) + mul(v, isa.EngineVector)
		s := norm(n-v, isa.EngineScalar)
		if tg.VectorGpSimdShareSBUF {
			return math.Max(own, s) + mul(n-v, isa.EngineVector)
		}
		return math.Max(own, s+mul(n-v, isa.EngineGpSimd))
	}
	if vector >= 0 {
		return vector, finish(vector)
	}
	step := max(2, roundUp(ceilDiv(n, 64), 2))
	best, bestNs := n, finish(n)
	for v := n - step; v >= 0; v -= step {
		if ns := finish(v); ns < bestNs {
			best, bestNs = v, ns
		}
	}
	if ns := finish(0); ns < bestNs {
		best, bestNs = 0, ns
	}
	return best, bestNs
}

// NormTailNs is a fused norm's estimated work on the last M block after
// its evacuations, which nothing in the GEMM overlaps: for each of its M
// tiles (one after another on VectorE) the statistics, rstd and the
// normalisation's two lanes (normVectorCols). The plan's Estimate leaves
// the epilogue out.
func (p *GEMMPlan) NormTailNs(tg *sched.Target) float64 {
	g, nm := p.G, p.G.Epilogue.Norm
	if !nm.On {
		return 0
	}
	c := rowCost{tg}
	stats := c.bnStatsNs(g.Out, g.N, max(p.normFree, 1))
	xf := c.view(isa.FP32, 1)
	stats += c.ns(isa.OpActivation, isa.EngineScalar, isa.Attrs{Func: isa.ActRsqrt, Scale: 1}, xf, xf)
	rows := g.M - (ceilDiv(g.M, p.BM)-1)*p.BM // the last M block's rows
	_, lanes := normSplit(tg, g, p.normVector)
	return float64(ceilDiv(rows, 128)) * (stats + lanes)
}

// normSBUFBytes is the SBUF per partition of a fused norm (Epilogue.Norm):
// its weight (and bias) in every partition, their gather index and
// epsilon, and the statistics tiles of normRows (two buffers each, for
// each of the store's copies that declares them).
func (p *GEMMPlan) normSBUFBytes() int64 {
	nm := p.G.Epilogue.Norm
	if !nm.On {
		return 0
	}
	slot := func(b int64) int64 { return roundUp(b, 64) }
	rows := int64(1)
	if nm.Bias && !nm.RMS {
		rows = 2
	}
	nch := ceilDiv(p.G.N, max(p.normFree, 1))
	stats := slot(mul(nch, bnStatsWidth, 4)) + slot(bnAggrWidth*4) + 3*64 // nst, nmv, nrstd, nshift or nms
	return add(mul(rows, slot(mul(p.G.N, int64(p.G.Out.Bytes())))), 2*64, mul(normStoreCopies*2, stats))
}

// normStoreCopies bounds the copies of the store whose blocks normRows
// declares its tiles in (whole M tiles and the remainder, in the loop and
// after it).
const normStoreCopies = 4

// sbufBytesSmall is sbufBytesOf for sizes whose products fit an int64.
func (p *GEMMPlan) sbufBytesSmall(order LoopOrder, bn, bm, bk, nres int64) int64 {
	eb := int64(p.G.In.Bytes())
	slot := func(b int64) int64 { return (b + 63) &^ 63 }
	perRes := int64(1)
	if order == OrderNKM {
		perRes = (p.G.M + bm - 1) / bm
	}
	resDT := p.G.Out
	if p.G.K > bk && !p.psumKFor(order, bm, bn, bk) {
		resDT = p.AccDT
	}
	kt := bk / 128
	var n int64
	if p.aResFor(order, bm) {
		n = p.aSBUFBytes(order, bm, bk)
	} else {
		n = p.NBuf * slot(kt*bm*eb)
		if p.G.AMK && p.Transpose == TransposeTensor {
			n += 2 * slot(bk*eb)
		}
	}
	n += p.NBuf*slot(kt*bn*eb) + nres*slot(perRes*(bm/128)*bn*int64(resDT.Bytes()))
	if p.G.Epilogue.HasR() {
		n += 2 * slot((bm/128)*bn*int64(p.G.Out.Bytes())) // R blocks
	}
	if p.G.Epilogue.Bias {
		n += slot(p.G.N*int64(p.G.Out.Bytes())) + 64 // the bias row, its gather index
	}
	if p.G.Dequant {
		n += p.NBuf*slot(kt*bn*int64(p.G.WeightDType.Bytes())) + p.scaleSBUFBytes(bn)
	}
	return n + p.normSBUFBytes()
}

// AReads returns how many times the plan reads A from HBM: once per N
// block, or once when A stays resident.
func (p *GEMMPlan) AReads() int64 {
	if p.aResFor(p.Order, p.BM) {
		return 1
	}
	return ceilDiv(p.G.N, p.BN)
}

// HBMBytes returns the HBM bytes the plan's transfers move.
func (p *GEMMPlan) HBMBytes() int64 { return p.dmaBytes() }

// dmaBytes returns the HBM traffic of a plan.
func (p *GEMMPlan) dmaBytes() int64 {
	g := p.G
	eb := int64(g.In.Bytes())
	bReads := ceilDiv(g.M, p.BM)
	if p.Order == OrderNKM {
		bReads = 1
	}
	aReads := p.AReads()
	return add(mul(max(g.Batch, 1), add(mul(g.K, g.M, eb, aReads), mul(g.K, g.N, int64(g.BDType().Bytes()), bReads), mul(g.M, g.N, int64(g.Out.Bytes())))),
		p.scaleHBMBytes())
}

// PlanGEMM resolves the lowering options, choosing the ones left at zero:
// the largest blocks that fit SBUF while moving the fewest bytes from HBM.
func PlanGEMM(g GEMM, o GEMMOptions, tg *sched.Target) (*GEMMPlan, error) {
	// The same GEMM with the same options on the same target (a model's
	// Linear in every layer, and in every decode step) is planned once:
	// the plan is its op id's alone.
	k := gemmKey{g: g, o: o, target: tg.Key()}
	k.o.OpID = 0
	p, err := planOnce(tg, k, func() (*GEMMPlan, error) { return planGEMM(g, k.o, tg) })
	if err != nil {
		return nil, err
	}
	p.opID = o.OpID
	return p, nil
}

// gemmKey is what a GEMM plan is made from, but its op id.
type gemmKey struct {
	g      GEMM
	o      GEMMOptions
	target sched.TargetKey
}

func planGEMM(g GEMM, o GEMMOptions, tg *sched.Target) (*GEMMPlan, error) {
	lim := tg.Limits
	if err := checkDequant(g); err != nil {
		return nil, err
	}
	if g.BTiled && max(g.Batch, 1) > 1 {
		return nil, fmt.Errorf("gemm: a pre-tiled B takes one GEMM, not a batch of %d", g.Batch)
	}
	p := &GEMMPlan{G: g, auto: map[string]bool{}, Evacuate: o.Evacuate, Transpose: o.Transpose, Dequantize: o.Dequantize, opID: o.OpID,
		weightQueue: weightQueue(tg, g)}
	if lim.ArrayRows != 128 || lim.ArrayCols != 128 || lim.Partitions < 128 {
		return nil, optErr("array", "the GEMM tiles for a 128x128 array over 128 partitions; this hardware has %dx%d over %d", lim.ArrayRows, lim.ArrayCols, lim.Partitions)
	}
	if g.Epilogue.Norm.On {
		switch {
		case max(g.Batch, 1) > 1:
			return nil, optErr("epilogue", "a fused norm takes one GEMM, not a batch of %d", g.Batch)
		case lim.BNStatsFreeMax < 1:
			return nil, optErr("epilogue", "a fused norm needs bn_stats")
		case o.BlockN > 0 && o.BlockN < g.N:
			return nil, optErr("block_n", "%d: a fused norm needs a row's %d columns in one N block", o.BlockN, g.N)
		}
		p.normFree = lim.BNStatsFreeMax
		p.normVector, p.normShareVG = normVectorCols(tg, g), tg.VectorGpSimdShareSBUF
	}
	transposes := []TransposeMode{p.Transpose}
	if g.AMK && p.Transpose == TransposeAuto {
		// dma_transpose takes 2- and 4-byte dtypes; for those the search
		// tries both.
		transposes = []TransposeMode{TransposeTensor}
		if g.In.Bytes() == 2 || g.In.Bytes() == 4 {
			transposes = []TransposeMode{TransposeDMA, TransposeTensor}
		}
		p.Transpose = transposes[0]
	}
	if g.AMK && p.Transpose == TransposeDMA && g.In.Bytes() != 2 && g.In.Bytes() != 4 {
		return nil, optErr("transpose", "dma_transpose takes 2- and 4-byte dtypes; %s needs transpose: tensor", g.In)
	}
	// Double row: two rows of the contraction per PE row, for fp8e4 and
	// fp8e5 where the hardware has the mode (fp8e3 runs at the BF16 rate).
	dtOK := g.In == isa.FP8E4 || g.In == isa.FP8E5
	switch o.Mode {
	case MatmulAuto:
		p.DoubleRow = lim.FP8DoubleRow && dtOK
	case MatmulDoubleRow:
		if !lim.FP8DoubleRow {
			return nil, optErr("matmul_mode", "double_row needs FP8 double-row mode, which this hardware does not have (NeuronCore-v3 only)")
		}
		if !dtOK {
			return nil, optErr("matmul_mode", "double_row takes fp8e4 or fp8e5 inputs, not %s", g.In)
		}
		p.DoubleRow = true
	}
	batch := max(g.Batch, 1)
	a := hbmTensor{"AT", g.In, []int64{batch, g.K, g.M}}
	if g.AMK {
		a = hbmTensor{"A", g.In, []int64{batch, g.M, g.K}}
	}
	hbm := []hbmTensor{a, {"B", g.BDType(), []int64{batch, g.K, g.N}}, {"C", g.Out, []int64{batch, g.M, g.N}}}
	if g.Dequant {
		hbm = append(hbm, hbmTensor{"SCALE", g.Out, []int64{1, g.N}})
	}
	if err := checkHBM("gemm", tg, hbm...); err != nil {
		return nil, err
	}
	bankBytes := lim.PSUMBankBytes()
	maxTN := int64(lim.MovingFreeMax)
	bankElems := bankBytes / 4
	if !lim.MatmulMayCrossBanks && bankElems < maxTN {
		maxTN = bankElems
	}
	p.TN = o.TileN
	if p.TN == 0 {
		p.TN = min(maxTN, 512, roundUp(g.N, 64))
		p.auto["tile_n"] = true
	}
	if p.TN > maxTN {
		return nil, optErr("tile_n", "%d exceeds the moving free size limit of %d", p.TN, maxTN)
	}
	p.Banks = o.PSUMBanks
	if p.Banks == 0 {
		p.Banks = int64(lim.PSUMBanks)
		p.auto["psum_banks"] = true
	}
	if p.Banks > int64(lim.PSUMBanks) {
		return nil, optErr("psum_banks", "%d exceeds the %d PSUM banks", p.Banks, lim.PSUMBanks)
	}
	// The banks the accumulation groups may use: TensorE transposes keep
	// one for themselves.
	banksFor := func(tr TransposeMode) int64 {
		if g.AMK && tr == TransposeTensor {
			return p.Banks - 1
		}
		return p.Banks
	}
	// The transpose modes that can work with these banks (and a block_n
	// given); when none can, the last one's reason is the error.
	needBN := mul(o.BlockN/max(p.TN, 1), ceilDiv(p.TN*4, lim.PSUMBankBytes()))
	var usable []TransposeMode
	for _, tr := range transposes {
		if banksFor(tr) >= 1 && (o.BlockN == 0 || needBN <= banksFor(tr)) {
			usable = append(usable, tr)
		}
	}
	if len(usable) > 0 {
		transposes = usable
	} else {
		transposes = transposes[len(transposes)-1:]
	}
	p.Transpose = transposes[0]
	groupBanks := banksFor(transposes[len(transposes)-1])
	if groupBanks < 1 {
		return nil, optErr("psum_banks", "TensorE transposes need a PSUM bank besides the accumulation groups; give at least 2")
	}
	p.banksPerTile = ceilDiv(p.TN*4, bankBytes)
	p.tile = p.banksPerTile * bankElems
	p.NBuf = o.Buffers
	nbufs := []int64{p.NBuf}
	if p.NBuf == 0 {
		p.NBuf = 2
		nbufs = []int64{2, 3}
		p.auto["buffers"] = true
	}
	// Partial sums across K blocks: FP32 in SBUF, or, where the output is
	// a 2-byte dtype, that dtype (as the NKI tutorial's kernel does: each
	// K block is summed in FP32 in PSUM, then added to the result once).
	p.AccDT = isa.FP32
	accs := []isa.DType{isa.FP32}
	if o.AccumulateSet {
		p.AccDT = o.AccumulateDType
		accs = []isa.DType{p.AccDT}
	} else {
		p.auto["accumulate_dtype"] = true
		if g.Out.Bytes() == 2 {
			accs = append(accs, g.Out)
		}
	}
	orders := []LoopOrder{OrderNKM, OrderNMK}
	if o.Order != OrderAuto {
		orders = []LoopOrder{o.Order}
	} else {
		p.auto["loop_order"] = true
	}
	// Candidate sizes: every multiple of step up to 4 steps, then the
	// powers of two and the even splits of the dimension (blocks need not
	// divide it), up to limit.
	cands := func(given, step, limit, dim int64, name string) []int64 {
		if given > 0 {
			return []int64{given}
		}
		p.auto[name] = true
		seen := map[int64]bool{}
		var out []int64
		addC := func(v int64) {
			v = roundUp(v, step)
			if v >= step && v <= limit && !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
		for v := step; v <= 4*step; v += step {
			addC(v)
		}
		for v := step; v <= limit; v *= 2 {
			addC(v)
		}
		for s := int64(1); s <= 12; s++ {
			addC(ceilDiv(dim, s))
		}
		slices.Sort(out)
		return out
	}
	// A block size the user gave is checked before the search, so a bad
	// one is reported as such and not as a working set that does not fit.
	switch {
	case o.BlockN > 0 && o.BlockN%p.TN != 0:
		return nil, optErr("block_n", "%d is not a multiple of tile_n %d", o.BlockN, p.TN)
	case o.BlockM > 0 && o.BlockM%128 != 0:
		return nil, optErr("block_m", "%d is not a multiple of 128", o.BlockM)
	case o.BlockK > 0 && o.BlockK%128 != 0:
		return nil, optErr("block_k", "%d is not a multiple of 128", o.BlockK)
	case o.BlockN > 0 && mul(o.BlockN/p.TN, p.banksPerTile) > groupBanks:
		return nil, optErr("block_n", "%d columns need %d PSUM banks per accumulation group; only %d are available", o.BlockN, mul(o.BlockN/p.TN, p.banksPerTile), groupBanks)
	}
	// N block candidates: accumulation groups of at most half the banks
	// (two groups rotate), for a transpose mode's banks.
	blockNs := func(banks int64) []int64 {
		if o.BlockN > 0 {
			return []int64{o.BlockN}
		}
		maxG := max(1, banks/2/p.banksPerTile)
		var out []int64
		for v := p.TN; v <= min(roundUp(g.N, p.TN), p.TN*maxG); v += p.TN {
			if g.Epilogue.Norm.On && v < g.N {
				continue // (a fused norm reads whole rows)
			}
			out = append(out, v)
		}
		return out
	}
	if o.BlockN == 0 {
		p.auto["block_n"] = true
	}
	bns := blockNs(groupBanks)
	if len(bns) == 0 {
		return nil, optErr("epilogue", "a fused norm needs a row's %d columns in one N block; the PSUM banks' accumulation groups hold at most %d", g.N, p.TN*max(1, groupBanks/2/p.banksPerTile))
	}
	bms := cands(o.BlockM, 128, min(roundUp(g.M, 128), 4096), g.M, "block_m")
	bks := cands(o.BlockK, 128, min(roundUp(g.K, 128), 8192), g.K, "block_k")
	nress := []int64{2, 1}
	if o.ResultBuffers > 0 {
		nress = []int64{o.ResultBuffers}
	} else {
		p.auto["result_buffers"] = true
	}
	// A resident (one M block in nkm) or in rotating K blocks: both,
	// where it can apply.
	aress := []bool{false}
	if g.M <= 512 {
		// (A few tokens, four M tiles at most: beside many, A's residence
		// takes SBUF that bigger blocks of B would use better.)
		aress = append(aress, true)
	}
	evacs := []Evacuation{p.Evacuate}
	if !o.EvacuateSet {
		evacs = []Evacuation{EvacVector, EvacAuto}
		if g.Dequant {
			// VectorE evacuates and applies the scales (dequant.go).
			evacs = evacs[:1]
		}
	}
	// The dequantisation engine, for quantised weights: by estimate
	// unless given.
	deqs := []DequantEngine{p.Dequantize}
	if g.Dequant && !o.DequantizeSet {
		deqs = dequantSearch
		p.auto["dequantize"] = true
	}
	// The search: every combination that fits SBUF, by estimated time
	// (the simulator's cost table; see estimate.go), ties to fewer HBM
	// bytes and bigger blocks.
	sbufCap := lim.SBUFPartitionBytes
	if o.SBUFBytes > 0 && o.SBUFBytes < sbufCap {
		sbufCap = o.SBUFBytes
	}
	if o.KeepResult {
		if reserve := roundUp(mul(ceilDiv(g.M, 128), g.N, int64(g.Out.Bytes())), 64); reserve < sbufCap {
			sbufCap -= reserve
			p.keepPlanned = true
		}
	}
	var best *GEMMPlan
	// minNs is the least estimate seen: a plan within tieFraction of it
	// that betterBy prefers wins, without the choice drifting upwards.
	minNs := math.Inf(1)
	ests := make([]Estimate, len(evacs)*len(deqs))
	// (The candidates' estimates: shared through the target's memo with
	// searches that differ from this one only in SBUF or batch; planmemo.go.)
	work := searchWorkFor(tg, p, evacs, deqs)
	estimators := map[isa.DType]*estimator{}
	// splitOrPow2[i]: bks[i] is an even split of K or a power of two (the
	// K blocks below the biggest that fits which compete).
	splitOrPow2 := make([]bool, len(bks))
	for i, bk := range bks {
		splitOrPow2[i] = evenSplit(g.K, bk) || bk&(bk-1) == 0
	}
	fits := make([]int64, len(bks)) // SBUF bytes by K block, for the nest's nres
	// fits2: fits with two result buffers, from the nest's nres = 2 (nress
	// tries 2 first), for the test of whether one buffer is worth trying.
	fits2 := make([]int64, len(bks))
	bestDMA := int64(0)      // best's dmaBytes (betterBy's first test)
	batchF := float64(batch) // (the candidates' estimates scale to it)
	for _, acc := range accs {
		for _, nbuf := range nbufs {
			for _, tr := range transposes {
				p.Transpose, p.AccDT, p.NBuf = tr, acc, nbuf
				est := estimators[acc]
				if est == nil {
					// (An estimator depends on the accumulation dtype, not on
					// the buffers or the transpose mode.)
					est = work.estimator(tg, g, p.TN, acc)
					estimators[acc] = est
				}
				gb := banksFor(tr)
				p.groupBanksAvail = gb
				for _, order := range orders {
					for _, bn := range blockNs(gb) {
						for _, bm := range bms {
							for _, ares := range aress {
								if ares && !(order == OrderNKM && g.M <= bm) {
									continue // A resident takes one M block in nkm
								}
								p.AResident = ares
								if best != nil && p.anyKBoundExceeds(est, minNs*(1+tieFraction), order, bn, bm, bks[0]) {
									continue // no K block's loads alone beat the best plan (bks is sorted)
								}
								for _, nres := range nress {
									// The biggest K block that fits, the even splits of K
									// and the powers of two below it compete (small blocks
									// pipeline the loads of a DMA-bound GEMM better).
									kmax := int64(0)
									for i, bk := range bks {
										fits[i] = p.sbufBytesOf(order, bn, bm, bk, nres)
										if bk > kmax && fits[i] <= sbufCap {
											kmax = bk
										}
									}
									if nres == 2 {
										copy(fits2, fits)
									}
									for i, bk := range bks {
										if kmax == 0 || bk > kmax || (bk != kmax && !splitOrPow2[i]) || fits[i] > sbufCap {
											// (A smaller K block can need more SBUF: K
											// in several blocks accumulates in AccDT.)
											continue
										}
										if nres == 1 && len(nress) > 1 && fits2[i] <= sbufCap {
											continue // two result buffers fit: one is never faster
										}
										psumK := p.psumKFor(order, bm, bn, bk)
										if (psumK || (len(orders) > 1 && p.psumKFor(OrderNKM, bm, bn, bk))) && !(psumK && ares) && p.residentFits(bn, bm, bk, nres, sbufCap) {
											// One M block whose K can accumulate in PSUM: only that
											// plan, with A resident (K blocks of A or B rotating through
											// loop tiles would wait, for their slots' reuse, on the N
											// block's last multiply, the only one an evacuation marks;
											// adds of partial sums cost VectorE what PSUM does for free).
											continue
										}
										if ares && !psumK && g.N <= bn {
											continue // A resident pays for K in PSUM or for more than one N block
										}
										if acc != accs[0] && (bk >= g.K || psumK) {
											continue // K in one block or in PSUM: no partial sums to accumulate
										}
										if (p.Evacuate == EvacScalar || p.Evacuate == EvacAlternate) && bk < g.K && !psumK && len(bks) > 1 {
											continue // ScalarE evacuations need K in one block
										}
										c := *p
										c.Order, c.BN, c.BM, c.BK, c.NRes, c.PSUMK = order, bn, bm, bk, nres, psumK
										if best != nil && c.boundExceeds(est, minNs*(1+tieFraction)) {
											continue // its loads alone take longer than the best plan
										}
										c.GroupBanks = (bn / p.TN) * p.banksPerTile
										c.Groups = max(1, gb/max(c.GroupBanks, 1))
										tot := work.estimates(&c, candKey{acc: acc, tr: tr, order: order, ares: ares, psumK: psumK,
											nbuf: nbuf, nres: nres, gb: gb, bn: bn, bm: bm, bk: bk}, est, evacs, deqs, ests)
										for ei, ev := range evacs {
											for di, dq := range deqs {
												c.Evacuate, c.Dequantize = ev, dq
												ns := tot[ei*len(deqs)+di].totalNs(batchF)
												if best == nil || ns < minNs*(1-tieFraction) || (ns <= minNs*(1+tieFraction) && betterBy(&c, best, c.dmaBytes(), bestDMA)) {
													if best == nil {
														best = new(GEMMPlan)
													}
													*best, bestDMA = c, c.dmaBytes()
												}
												minNs = min(minNs, ns)
											}
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	p.Transpose, p.AccDT, p.NBuf, p.AResident = transposes[0], accs[0], nbufs[0], false
	if best == nil && (p.Evacuate == EvacScalar || p.Evacuate == EvacAlternate) && o.BlockK == 0 {
		return nil, optErr("evacuate", "%s evacuation needs K in one block, and no K block of %d fits SBUF (accumulating across K blocks uses VectorE adds)",
			map[Evacuation]string{EvacScalar: "scalar", EvacAlternate: "alternate"}[p.Evacuate], g.K)
	}
	if best == nil {
		c := *p
		c.Order, c.BN, c.BM, c.BK, c.NRes = orders[len(orders)-1], bns[0], bms[0], bks[0], nress[len(nress)-1]
		c.Transpose = transposes[len(transposes)-1]
		return nil, &sched.FitError{Kernel: "gemm", Tile: "the smallest input and result blocks", Mem: isa.MemSBUF,
			Needed: c.sbufBytes(), Available: sbufCap}
	}
	p = best
	groupBanks = banksFor(p.Transpose)
	switch {
	case p.BN%p.TN != 0:
		return nil, optErr("block_n", "%d is not a multiple of tile_n %d", p.BN, p.TN)
	case p.BM%128 != 0:
		return nil, optErr("block_m", "%d is not a multiple of 128", p.BM)
	case p.BK%128 != 0:
		return nil, optErr("block_k", "%d is not a multiple of 128", p.BK)
	}
	p.GroupBanks = (p.BN / p.TN) * p.banksPerTile
	if p.GroupBanks > groupBanks {
		return nil, optErr("block_n", "%d columns need %d PSUM banks per accumulation group; only %d are available", p.BN, p.GroupBanks, groupBanks)
	}
	p.Groups = groupBanks / p.GroupBanks
	if (o.WeightSlotBytes > 0 || p.PSUMK) && p.streamable() {
		// (With K in PSUM, B always streams: rotating K-block tiles would
		// put each N block's evacuation, and the semaphore mark it needs,
		// in program order before the next N block's loads, which would
		// then wait for that mark, the last multiply of the N block,
		// instead of the multiplies their slots' last blocks took part in.)
		blk := roundUp(mul(p.BK/128, p.BN, int64(g.BDType().Bytes())), 64)
		nBlocks := ceilDiv(g.N, p.BN) * ceilDiv(g.K, p.BK)
		slotBytes := o.WeightSlotBytes
		if slotBytes == 0 && o.Buffers == 0 {
			// A GEMM on its own, its buffers left to the plan, streams B
			// through twice its input buffers where the SBUF its other
			// tiles leave holds them (buffers given are kept): NBuf slots
			// of small blocks leave part of each block's latency exposed
			// (trn3 1x4096x4096 at block_k=128: 88.7 us with buffers: 3
			// given, 3 slots; 82.5 us left to the plan, 6), while a head of
			// most of SBUF (all of it as slots) delays the first multiplies.
			slotBytes = min(sbufCap-p.sbufBytes()+p.NBuf*blk, 2*p.NBuf*blk)
		}
		p.BSlots = min(nBlocks, max(p.NBuf, slotBytes/blk))
		p.BHead = p.BSlots - 1
		if p.BSlots == nBlocks {
			p.BHead = nBlocks
		}
		p.weightQueue = streamQueue(tg)
	}
	if (p.Evacuate == EvacScalar || p.Evacuate == EvacAlternate) && !p.kOnce() {
		return nil, optErr("evacuate", "%s evacuation needs K in one block (K %d > block_k %d): accumulating across K blocks uses VectorE adds",
			map[Evacuation]string{EvacScalar: "scalar", EvacAlternate: "alternate"}[p.Evacuate], g.K, p.BK)
	}
	return p, nil
}

// evenSplit reports whether block is K split into equal parts (rounded up
// to whole tiles).
func evenSplit(k, block int64) bool { return roundUp(ceilDiv(k, ceilDiv(k, block)), 128) == block }

// tieFraction is how close two estimates must be for the plan search to
// call them equal and prefer the one betterBy prefers.
const tieFraction = 0.002

// betterBy reports whether the plan search prefers a to b when their
// estimates tie: fewer HBM bytes (da and db, their dmaBytes), then fewer
// instructions (bigger blocks), then double-buffered results.
func betterBy(a, b *GEMMPlan, da, db int64) bool {
	if da != db {
		return da < db
	}
	if a.Order != b.Order {
		return a.Order == OrderNKM
	}
	if a.NBuf != b.NBuf {
		return a.NBuf > b.NBuf // deeper buffering hides more of the loads
	}
	if a.BK != b.BK {
		return a.BK > b.BK
	}
	if a.NRes != b.NRes {
		return a.NRes > b.NRes
	}
	if a.BM != b.BM {
		return a.BM > b.BM
	}
	if a.BN != b.BN {
		return a.BN > b.BN
	}
	return a.AResident && !b.AResident
}

// Choices lists the resolved options in a fixed order.
func (p *GEMMPlan) Choices() []Choice {
	c := func(name string, v int64) Choice { return Choice{Name: name, Value: v, Auto: p.auto[name]} }
	return []Choice{c("tile_n", p.TN), c("block_m", p.BM), c("block_n", p.BN), c("block_k", p.BK),
		c("buffers", p.NBuf), c("result_buffers", p.NRes), c("psum_banks", p.Banks)}
}

// Notes describes the plan's other choices in words.
func (p *GEMMPlan) Notes() []string {
	n := []string{"loop order " + p.Order.String(), "result dtype " + p.ResultDType().String(),
		"evacuate " + [...]string{"vector", "scalar", "alternate", "auto"}[p.Evacuate]}
	if p.G.AMK {
		n = append(n, map[TransposeMode]string{TransposeDMA: "A [M, K] through DMA transposes", TransposeTensor: "A [M, K] through TensorE transposes"}[p.Transpose])
	}
	if p.DoubleRow {
		n = append(n, "matmuls in FP8 double-row mode")
	}
	if p.PSUMK {
		n = append(n, "K accumulated in PSUM across its blocks")
	}
	if p.BSlots > 0 {
		n = append(n, fmt.Sprintf("B streamed through %d slots", p.BSlots))
	}
	if p.aResFor(p.Order, p.BM) {
		n = append(n, "A resident in SBUF (loaded once)")
	}
	if p.G.Dequant {
		n = append(n, fmt.Sprintf("weights %s, dequantised to %s on %s; per-channel scales on the result", p.G.WeightDType, p.G.In, p.Dequantize))
	}
	return n
}

// Kernel writes the plan as a tile-IR kernel.
//
// Each step moves one K block of one result block: the A^T block
// [BK, BM] (and, when the step starts a new B block, the B block
// [BK, BN]) is loaded with N-deep buffering; for each 128-row M tile and
// each 128-row K tile, TensorE loads the stationary A^T tile once and
// streams the B tile's TN-column slices through it, accumulating each into
// its PSUM bank over the K block; the accumulation group (a PSUM tile that
// rotates over the banks, so TensorE fills one while another is drained)
// is evacuated into the SBUF result block (copy for the first K block,
// add for the rest); a finished result block is stored. The scheduler
// orders all of it.
//
// With one M block (a few tokens: decode, small batches) the K blocks of
// an N block accumulate in PSUM (PSUMK), each result tile evacuated once,
// A^T stays resident (AResident), and B streams through the slots of one
// kernel-level tile a fixed number of blocks ahead in program order
// (BSlots), on a DMA queue of its own, its first blocks loaded by the
// kernel's first statement (HeadStmts); B may be stored pre-tiled
// (GEMM.BTiled).
func (p *GEMMPlan) Kernel() (*Kernel, error) {
	g := p.G
	k := New("gemm")
	batch := max(g.Batch, 1)
	var aHBM *Tile
	if g.AMK {
		aHBM = k.Tensor("A", g.In, Input, batch*g.M, g.K)
	} else {
		aHBM = k.Tensor("AT", g.In, Input, batch*g.K, g.M)
	}
	bHBM := k.Tensor("B", g.BDType(), Input, p.BShape()...)
	cHBM := k.Tensor("C", g.Out, Output, batch*g.M, g.N)
	// A streamed B's slots (its head is made last, and moved first).
	var bsAll *Tile
	if p.BSlots > 0 && !g.Dequant {
		bsAll = k.Root().Tile(SlotTileName, isa.MemSBUF, g.In, []int64{128, p.BSlots, p.BK / 128, min(p.BN, g.N)}, 1)
	}
	var scaleHBM, scaleIdx *Tile
	if g.Dequant {
		scaleHBM = k.Tensor("SCALE", g.Out, Input, 1, g.N)
		if p.scaleGather() {
			// The scales reach every partition of the result by a gather
			// of row 0 with an all-zero index, as the bias does.
			scaleIdx = k.Root().Tile("scale_idx", isa.MemSBUF, isa.INT32, []int64{p.scaleRows(), 1}, 1)
			k.Root().Add(&Op{Opcode: isa.OpMemset, Engine: isa.EngineGpSimd, Outs: []Access{scaleIdx.All()}, OpID: p.opID})
		}
	}
	var rHBM *Tile
	if g.Epilogue.HasR() {
		rHBM = k.Tensor("R", g.Out, Input, batch*g.M, g.N)
	}
	var biasSB, biasRow, ones *Tile
	if p.biasMatmul() {
		// The bias row in one partition, and a row of ones, for the
		// bias's matmul (biasMatmul).
		biasHBM := k.Tensor("BIAS", g.Out, Input, g.N)
		root := k.Root()
		biasRow = root.Tile("bias_row", isa.MemSBUF, g.Out, []int64{1, g.N}, 1)
		ones = root.Tile("ones", isa.MemSBUF, g.In, []int64{1, min(128, g.M, p.BM)}, 1)
		root.Add(&Op{Opcode: isa.OpMemset, Engine: isa.EngineGpSimd, Outs: []Access{ones.All()}, Attrs: isa.Attrs{Value: 1}, OpID: p.opID})
		one := &Rearrange{In: [][]string{{"o", "c"}}, Out: []string{"o", "c"}, Sizes: map[string]int64{"o": 1}}
		root.Add(&Op{Opcode: isa.OpDMACopy, Any: true, Outs: []Access{biasRow.All()}, Ins: []Access{biasHBM.All().Rearranged(one)}, OpID: p.opID})
	} else if g.Epilogue.Bias {
		// The bias in every partition, once: a gather of row 0 with an
		// all-zero index (the IR has no broadcast access).
		biasHBM := k.Tensor("BIAS", g.Out, Input, g.N)
		root := k.Root()
		biasSB = root.Tile("bias", isa.MemSBUF, g.Out, []int64{128, g.N}, 1)
		idx := root.Tile("bias_idx", isa.MemSBUF, isa.INT32, []int64{128, 1}, 1)
		root.Add(&Op{Opcode: isa.OpMemset, Engine: isa.EngineGpSimd, Outs: []Access{idx.All()}, OpID: p.opID})
		broadcastRows(root, biasSB, biasHBM, idx, p.opID)
	}
	// A fused norm's weight (and bias) in every partition, once, and its
	// epsilon.
	var normW, normB, normEps *Tile
	if nm := g.Epilogue.Norm; nm.On {
		root := k.Root()
		idx := root.Tile("norm_idx", isa.MemSBUF, isa.INT32, []int64{128, 1}, 1)
		root.Add(&Op{Opcode: isa.OpMemset, Engine: isa.EngineGpSimd, Outs: []Access{idx.All()}, OpID: p.opID})
		normW = root.Tile("norm_w", isa.MemSBUF, g.Out, []int64{128, g.N}, 1)
		broadcastRows(root, normW, k.Tensor("NW", g.Out, Input, g.N), idx, p.opID)
		if nm.Bias && !nm.RMS {
			normB = root.Tile("norm_b", isa.MemSBUF, g.Out, []int64{128, g.N}, 1)
			broadcastRows(root, normB, k.Tensor("NB", g.Out, Input, g.N), idx, p.opID)
		}
		normEps = root.Tile("norm_eps", isa.MemSBUF, isa.FP32, []int64{128, 1}, 1)
		root.Add(&Op{Opcode: isa.OpMemset, Engine: isa.EngineGpSimd, Outs: []Access{normEps.All()}, Attrs: isa.Attrs{Value: nm.Eps}, OpID: p.opID})
	}
	// The rows of the batch element being built start at kOff (A^T, B)
	// and mOff (A, C).
	kOff, mOff := C(0), C(0)
	nBN, nBM, nBK := ceilDiv(g.N, p.BN), ceilDiv(g.M, p.BM), ceilDiv(g.K, p.BK)
	KT, MT, NT := p.BK/128, p.BM/128, p.BN/p.TN
	resDT := p.ResultDType()
	root := k.Root()
	// Sizes of the block a loop variable is at (ragged at the edges).
	kSize := func(kb Expr) Expr { return Min(C(p.BK), C(g.K).Sub(kb.MulC(p.BK))) }
	mSize := func(mb Expr) Expr { return Min(C(p.BM), C(g.M).Sub(mb.MulC(p.BM))) }
	nSize := func(nb Expr) Expr { return Min(C(p.BN), C(g.N).Sub(nb.MulC(p.BN))) }
	ktiles := func(kb Expr) Expr { return kSize(kb).CDiv(C(128)) }
	mtiles := func(mb Expr) Expr { return mSize(mb).CDiv(C(128)) }
	ntiles := func(nb Expr) Expr { return nSize(nb).CDiv(C(p.TN)) }
	split := func() *Rearrange {
		return &Rearrange{In: [][]string{{"t", "p"}, {"f"}}, Out: []string{"p", "t", "f"}, Sizes: map[string]int64{"p": 128}}
	}
	dma := func(b *Block, code isa.Opcode, dst, src Access) {
		b.Add(&Op{Opcode: code, Any: true, Outs: []Access{dst}, Ins: []Access{src}, OpID: p.opID})
	}
	// dmaOn is dma on queue q (none when q < 0).
	dmaOn := func(b *Block, q int, dst, src Access) {
		if q < 0 {
			dma(b, isa.OpDMACopy, dst, src)
			return
		}
		b.Add(pinQueue(&Op{Opcode: isa.OpDMACopy, Any: true, Outs: []Access{dst}, Ins: []Access{src}, OpID: p.opID}, q))
	}
	// loadRows loads rows [r0, r0+size) x cols [c0, c0+csize) of an HBM
	// tensor into an SBUF tile [128, T, F]: full 128-row tiles in one
	// transfer, the remainder in another.
	loadRows := func(b *Block, dst atter, src *Tile, r0, size, c0, csize Expr, q int) {
		full := size.Div(C(128)).MulC(128)
		b.When(full.Gt(C(0)), func(b *Block) {
			dmaOn(b, q, dst.At(R(C(0), C(128)), R(C(0), full.Div(C(128))), R(C(0), csize)),
				src.At(RS(r0, full), RS(c0, csize)).Rearranged(split()))
		})
		rem := size.Sub(full)
		b.When(rem.Gt(C(0)), func(b *Block) {
			dmaOn(b, q, dst.At(R(C(0), rem), I(full.Div(C(128))), R(C(0), csize)),
				src.At(RS(r0.Add(full), rem), RS(c0, csize)))
		})
	}
	// A resident (AResident): all of A^T in one tile [128, K tiles, BM],
	// and, for TensorE transposes, the rows of A as loaded [128, M tiles,
	// K]: each filled once, by K block, in the first N block.
	var aRes, aRaw *Tile
	aResident := p.aResFor(p.Order, p.BM)
	// transposeA transposes M tile mt's rows of A (raw [rows, ks]) into
	// its columns of the A^T block a, a [128, 128] tile at a time through
	// PSUM.
	// The full K tiles' transposes go by groups of tg into one PSUM tile
	// (half the transposes' bank, two rotating), copied out at once: one
	// copy per group, not per tile (for a few rows of A a tile's copy is
	// mostly its fixed cost).
	aRows := min(128, g.M, p.BM)
	tg := max(1, 256/aRows)
	transposeA := func(b *Block, raw atter, a atter, mt, rows, ks Expr, sfx string) {
		full := ks.Div(C(128))
		b.For("kg_a"+sfx, C(0), full.CDiv(C(tg)), Parallel, func(b *Block, kg Expr) {
			n := Min(C(tg), full.Sub(kg.MulC(tg)))
			pt := b.Tile("pst"+sfx, isa.MemPSUM, isa.FP32, []int64{128, tg, aRows}, 2)
			b.For("kt_a"+sfx, C(0), n, Parallel, func(b *Block, i Expr) {
				b.Add(&Op{Opcode: isa.OpTranspose, Engine: isa.EngineTensor, Outs: []Access{pt.At(R(C(0), C(128)), I(i), R(C(0), rows))},
					Ins: []Access{raw.At(R(C(0), rows), RS(kg.MulC(tg).Add(i).MulC(128), C(128)))}, OpID: p.opID})
			})
			b.Add(&Op{Opcode: isa.OpTensorCopy, Engine: isa.EngineVector, Outs: []Access{a.At(R(C(0), C(128)), RS(kg.MulC(tg), n), RS(mt.MulC(128), rows))},
				Ins: []Access{pt.At(R(C(0), C(128)), R(C(0), n), R(C(0), rows))}, OpID: p.opID})
		})
		rem := ks.Sub(full.MulC(128))
		b.When(rem.Gt(C(0)), func(b *Block) {
			pt := b.Tile("pstr"+sfx, isa.MemPSUM, isa.FP32, []int64{128, aRows}, 1)
			b.Add(&Op{Opcode: isa.OpTranspose, Engine: isa.EngineTensor, Outs: []Access{pt.At(R(C(0), rem), R(C(0), rows))},
				Ins: []Access{raw.At(R(C(0), rows), RS(full.MulC(128), rem))}, OpID: p.opID})
			b.Add(&Op{Opcode: isa.OpTensorCopy, Engine: isa.EngineVector, Outs: []Access{a.At(R(C(0), rem), I(full), RS(mt.MulC(128), rows))},
				Ins: []Access{pt.At(R(C(0), rem), R(C(0), rows))}, OpID: p.opID})
		})
	}
	// loadA fills the A^T block of (mb, kb) into a (a [128, KT, BM] view:
	// a slot of the K block's tile, or its K tiles of the resident one).
	loadA := func(b *Block, a atter, mb, kb Expr) {
		k0, m0 := kb.MulC(p.BK), mb.MulC(p.BM)
		if g.AMK {
			m0 = mOff.Add(m0)
		} else {
			k0 = kOff.Add(k0)
		}
		if !g.AMK {
			loadRows(b, a, aHBM, k0, kSize(kb), m0, mSize(mb), -1)
			return
		}
		if p.Transpose == TransposeDMA {
			b.For("kt_a", C(0), ktiles(kb), Parallel, func(b *Block, kt Expr) {
				rows := Min(C(128), kSize(kb).Sub(kt.MulC(128)))
				dma(b, isa.OpDMATranspose, a.At(R(C(0), rows), I(kt), R(C(0), mSize(mb))),
					aHBM.At(RS(m0, mSize(mb)), RS(k0.Add(kt.MulC(128)), rows)))
			})
			return
		}
		// TensorE transposes: rows of A into SBUF, 128 at a time, then each
		// [rows, 128] tile through the PE array into PSUM and out to A^T.
		b.For("mt_a", C(0), mtiles(mb), Parallel, func(b *Block, mt Expr) {
			rows := Min(C(128), mSize(mb).Sub(mt.MulC(128)))
			raw := b.Tile("araw", isa.MemSBUF, g.In, []int64{128, p.BK}, 2)
			dma(b, isa.OpDMACopy, raw.At(R(C(0), rows), R(C(0), kSize(kb))), aHBM.At(RS(m0.Add(mt.MulC(128)), rows), RS(k0, kSize(kb))))
			transposeA(b, raw, a, mt, rows, kSize(kb), "")
		})
	}
	// loadAResident fills a resident A^T during the first N block: all of
	// it by the first K block's step (each transfer written before any of
	// it is read, so no load waits for the multiplies of the tiles beside
	// it), and, with TensorE transposes, each K block's tiles by its own
	// step, from A's rows all loaded by the first.
	// loadAAll loads all of a resident A by one statement: A^T into its
	// tile a K block a transfer, or A's rows (for TensorE transposes) a
	// chunk of whole K blocks of at least aChunkBytes per partition a
	// transfer, so that the first blocks arrive first while each
	// descriptor stays long.
	loadAAll := func(b *Block) {
		m0, ms := mOff, mSize(C(0))
		eb := int64(g.In.Bytes())
		chunkOf := func(perBlock int64) int64 { return p.BK * max(1, ceilDiv(aChunkBytes, perBlock)) }
		switch {
		case !g.AMK:
			// (A^T's rows of a partition are K tiles apart: chunks of
			// several K blocks would not merge its runs, only delay the
			// first block.)
			ck := p.BK
			b.For("kc_a", C(0), C(ceilDiv(g.K, ck)), Parallel, func(b *Block, c Expr) {
				loadRows(b, ktShift{aRes, c.MulC(ck / 128)}, aHBM, kOff.Add(c.MulC(ck)), Min(C(ck), C(g.K).Sub(c.MulC(ck))), C(0), ms, -1)
			})
		case p.Transpose == TransposeDMA:
			b.For("kt_a", C(0), C(ceilDiv(g.K, 128)), Parallel, func(b *Block, kt Expr) {
				rows := Min(C(128), C(g.K).Sub(kt.MulC(128)))
				dma(b, isa.OpDMATranspose, aRes.At(R(C(0), rows), I(kt), R(C(0), ms)), aHBM.At(RS(m0, ms), RS(kt.MulC(128), rows)))
			})
		default:
			ck := chunkOf(p.BK * eb)
			b.For("kc_r", C(0), C(ceilDiv(g.K, ck)), Parallel, func(b *Block, c Expr) {
				cs := Min(C(ck), C(g.K).Sub(c.MulC(ck)))
				b.For("mt_r", C(0), mtiles(C(0)), Parallel, func(b *Block, mt Expr) {
					rows := Min(C(128), ms.Sub(mt.MulC(128)))
					dma(b, isa.OpDMACopy, aRaw.At(R(C(0), rows), I(mt), RS(c.MulC(ck), cs)),
						aHBM.At(RS(m0.Add(mt.MulC(128)), rows), RS(c.MulC(ck), cs)))
				})
			})
		}
	}
	// loadAResident does a resident A's part of step (nb, kb): all of its
	// loads by the first step where they are not a statement of their own
	// (a batch: AResidentStmts), and, with TensorE transposes, each K
	// block's tiles transposed a step ahead of their multiplies (the first
	// two by the first step), so that in TensorE's program order the next
	// block's transposes come before this block's multiplies, and their
	// copies out of PSUM run while it multiplies.
	loadAResident := func(b *Block, nb, kb Expr) {
		first := nb.Eq(C(0)).And(kb.Eq(C(0)))
		if batch > 1 {
			b.When(first, func(b *Block) { loadAAll(b) })
		}
		if !g.AMK || p.Transpose == TransposeDMA {
			return
		}
		ms := mSize(C(0))
		transpose := func(b *Block, kb Expr, sfx string) {
			b.For("mt_a"+sfx, C(0), mtiles(C(0)), Parallel, func(b *Block, mt Expr) {
				rows := Min(C(128), ms.Sub(mt.MulC(128)))
				transposeA(b, colShift{aRaw, mt, kb.MulC(p.BK), p.aOnChip}, ktShift{aRes, kb.MulC(KT)}, mt, rows, kSize(kb), sfx)
			})
		}
		b.When(first, func(b *Block) { transpose(b, C(0), "") })
		if nBK > 1 {
			b.When(nb.Eq(C(0)).And(kb.Add(C(1)).Lt(C(nBK))), func(b *Block) { transpose(b, kb.Add(C(1)), "_n") })
		}
	}
	// loadBBlock loads the B block (nb, kb) into dst ([128, KT, BN]) on
	// queue q (none when q < 0): B's rows 128 at a time into the
	// partitions, or, pre-tiled (BTiled), each partition's run of the
	// block's full K tiles in one piece.
	loadBBlock := func(b *Block, dst atter, nb, kb Expr, q int) {
		if !g.BTiled {
			loadRows(b, dst, bHBM, kOff.Add(kb.MulC(p.BK)), kSize(kb), nb.MulC(p.BN), nSize(nb), q)
			return
		}
		full := kSize(kb).Div(C(128))
		t0 := kb.MulC(KT)
		b.When(full.Gt(C(0)), func(b *Block) {
			dmaOn(b, q, dst.At(R(C(0), C(128)), R(C(0), full), R(C(0), nSize(nb))),
				bHBM.At(RS(nb.MulC(128), C(128)), RS(t0, full), R(C(0), nSize(nb))))
		})
		rem := kSize(kb).Sub(full.MulC(128))
		b.When(rem.Gt(C(0)), func(b *Block) {
			dmaOn(b, q, dst.At(R(C(0), rem), I(full), R(C(0), nSize(nb))),
				bHBM.At(RS(nb.MulC(128), rem), I(t0.Add(full)), R(C(0), nSize(nb))))
		})
	}
	loadB := func(b *Block, bt *Tile, nb, kb Expr) { loadBBlock(b, bt, nb, kb, -1) }
	// Quantised weights: the B blocks rotate through NBuf slots of two
	// kernel-level tiles (as stored, and converted), and each block is
	// loaded and converted one block ahead of its multiplies: in every
	// engine's program order the conversion of block j + 1 comes before
	// the evacuations, epilogue and stores that wait for block j's
	// matmuls, so whichever engines convert, they do it while TensorE
	// multiplies. Block j is the j-th (N, K) block in loop order (nkm:
	// nb, kb; nmk: nb, mb, kb).
	var bwAll, bqAll *Tile
	perNB := nBK // blocks per N block
	if p.Order != OrderNKM {
		perNB = nBM * nBK
	}
	nBlocks := nBN * perNB
	// (Streamed, BSlots > 0, the blocks as stored rotate through BSlots
	// slots and load BHead blocks ahead; the conversions stay one ahead.)
	rawSlots := p.NBuf
	if p.BSlots > 0 {
		rawSlots = p.BSlots
	}
	loadRaw := func(b *Block, j Expr) {
		nb, kb := j.Div(C(perNB)), j.Mod(C(nBK))
		loadBBlock(b, slotted{bwAll, j.Mod(C(rawSlots)), true}, nb, kb, p.weightQueue)
	}
	prepare := func(b *Block, j Expr, loopVar string) {
		nb, kb := j.Div(C(perNB)), j.Mod(C(nBK))
		bw, bq := slotted{bwAll, j.Mod(C(rawSlots)), true}, slotted{bqAll, j.Mod(C(p.NBuf)), true}
		if p.BSlots == 0 {
			loadRaw(b, j)
		}
		b.For(loopVar, C(0), ktiles(kb), Parallel, func(b *Block, kt Expr) {
			rows := Min(C(128), kSize(kb).Sub(kt.MulC(128)))
			p.dequantOp(b, bq.At(R(C(0), rows), I(kt), R(C(0), nSize(nb))), bw.At(R(C(0), rows), I(kt), R(C(0), nSize(nb))), j.MulC(KT).Add(kt))
		})
	}
	// loadStreamed loads block j of a streamed B into its slot.
	loadStreamed := func(b *Block, j Expr) {
		nb, kb := j.Div(C(perNB)), j.Mod(C(nBK))
		loadBBlock(b, slotted{bsAll, j.Mod(C(p.BSlots)), true}, nb, kb, p.weightQueue)
	}
	// weights returns block j's B block for the multiplies and what loads
	// it: for quantised weights, loading and converting the next block
	// (block j's was, the step before); otherwise the step's own tile and
	// its load.
	weights := func(b *Block, j, nb, kb Expr) (slotted, func()) {
		if g.Dequant {
			return slotted{bqAll, j.Mod(C(p.NBuf)), true}, func() {
				if p.BSlots > 0 && p.BHead < nBlocks {
					// The block as stored BHead ahead, into the slot of the
					// block whose conversion came a step before.
					b.When(j.Add(C(p.BHead)).Lt(C(nBlocks)), func(b *Block) { loadRaw(b, j.Add(C(p.BHead))) })
				}
				b.When(j.Add(C(1)).Lt(C(nBlocks)), func(b *Block) { prepare(b, j.Add(C(1)), "kt_q") })
			}
		}
		if p.BSlots > 0 {
			// Streamed: block j from its slot, block j + BHead loaded into
			// the slot block j - 1 used (its multiplies came before, in
			// TensorE's program order).
			return slotted{bsAll, j.Mod(C(p.BSlots)), true}, func() {
				if p.BHead < nBlocks {
					b.When(j.Add(C(p.BHead)).Lt(C(nBlocks)), func(b *Block) { loadStreamed(b, j.Add(C(p.BHead))) })
				}
			}
		}
		bt := b.Tile("b", isa.MemSBUF, g.In, []int64{128, KT, min(p.BN, g.N)}, int(p.NBuf))
		return slotted{t: bt}, func() { loadB(b, bt, nb, kb) }
	}
	// The scales of the N block being built (quantised weights), loaded
	// once per N block into the result's partitions.
	// (Two slots of a kernel-level tile, by N block: a store deferred past
	// the next N block's first multiplies still finds its block's.)
	var scaleAll *Tile
	scaleAt := func(nb Expr) slotted { return slotted{scaleAll, nb.Mod(C(2)), true} }
	loadScales := func(b *Block, nb Expr) {
		if !g.Dequant {
			return
		}
		P := p.scaleRows()
		src := scaleHBM.At(R(C(0), C(1)), RS(nb.MulC(p.BN), nSize(nb)))
		dst := scaleAt(nb).At(R(C(0), C(P)), R(C(0), nSize(nb)))
		if scaleIdx == nil {
			dma(b, isa.OpDMACopy, dst, src)
			return
		}
		b.Add(&Op{Opcode: isa.OpDMAGather, Engine: isa.EngineGpSimd, Outs: []Access{dst}, Ins: []Access{src, scaleIdx.All()},
			Attrs: isa.Attrs{DGE: isa.DGENone}, DGESet: true, OpID: p.opID})
	}
	// matmuls multiplies the K block kb of M tile mt of (mb, nb) into
	// its accumulation group ps (an access of [128, NT, tile]); with
	// PSUMK the group accumulates over every K block of the N block.
	matmuls := func(b *Block, a atter, bt slotted, ps func(rows, nt, cols Expr) Access, mt, mb, nb, kb Expr) {
		rows := Min(C(128), mSize(mb).Sub(mt.MulC(128)))
		// and joins a flag with whether kb starts (ends) the accumulation:
		// with PSUMK only the first (last) K block does.
		and := func(flag Expr, last bool) Expr {
			if !last && ones != nil {
				return C(0) // the bias's matmul starts the group
			}
			if !p.PSUMK {
				return flag
			}
			if last {
				return flag.And(kb.Eq(C(nBK - 1)))
			}
			return flag.And(kb.Eq(C(0)))
		}
		if ones != nil {
			// The bias: a row of ones times the bias row, the group's first
			// matmul (biasMatmul).
			b.When(kb.Eq(C(0)), func(b *Block) {
				b.Add(&Op{Opcode: isa.OpLoadStationary, Engine: isa.EngineTensor,
					Ins: []Access{ones.At(R(C(0), C(1)), R(C(0), rows))}, OpID: p.opID})
				b.For("nt_b", C(0), ntiles(nb), Parallel, func(b *Block, nt Expr) {
					cols := Min(C(p.TN), nSize(nb).Sub(nt.MulC(p.TN)))
					b.Add(&Op{Opcode: isa.OpMultiplyMoving, Engine: isa.EngineTensor,
						Outs:  []Access{ps(rows, nt, cols)},
						Ins:   []Access{biasRow.At(R(C(0), C(1)), RS(nb.MulC(p.BN).Add(nt.MulC(p.TN)), cols))},
						Start: C(1), Stop: C(0), OpID: p.opID})
				})
			})
		}
		firstSingle := C(0) // the first K tile multiplied on its own
		if p.DoubleRow {
			// Pairs of full K tiles, each one double-row matmul
			// (stationary [128, 2, rows], moving [128, 2, cols]); a
			// leftover or partial tile follows in normal mode, in the
			// same accumulation group.
			pairs := kSize(kb).Div(C(256))
			firstSingle = pairs.MulC(2)
			dr := isa.Attrs{PerfMode: 2}
			b.For("kp", C(0), pairs, Sequential, func(b *Block, kp Expr) {
				b.Add(&Op{Opcode: isa.OpLoadStationary, Engine: isa.EngineTensor, Attrs: dr,
					Ins: []Access{a.At(R(C(0), C(128)), RS(kp.MulC(2), C(2)), RS(mt.MulC(128), rows))}, OpID: p.opID})
				b.For("nt_p", C(0), ntiles(nb), Parallel, func(b *Block, nt Expr) {
					cols := Min(C(p.TN), nSize(nb).Sub(nt.MulC(p.TN)))
					b.Add(&Op{Opcode: isa.OpMultiplyMoving, Engine: isa.EngineTensor, Attrs: dr,
						Outs:  []Access{ps(rows, nt, cols)},
						Ins:   []Access{bt.At(R(C(0), C(128)), RS(kp.MulC(2), C(2)), RS(nt.MulC(p.TN), cols))},
						Start: and(kp.Eq(C(0)), false), Stop: and(kp.Eq(pairs.Sub(C(1))).And(firstSingle.Eq(ktiles(kb))), true), OpID: p.opID})
				})
			})
		}
		b.For("kt", firstSingle, ktiles(kb), Sequential, func(b *Block, kt Expr) {
			krows := Min(C(128), kSize(kb).Sub(kt.MulC(128)))
			b.Add(&Op{Opcode: isa.OpLoadStationary, Engine: isa.EngineTensor,
				Ins: []Access{a.At(R(C(0), krows), I(kt), RS(mt.MulC(128), rows))}, OpID: p.opID})
			b.For("nt", C(0), ntiles(nb), Parallel, func(b *Block, nt Expr) {
				cols := Min(C(p.TN), nSize(nb).Sub(nt.MulC(p.TN)))
				b.Add(&Op{Opcode: isa.OpMultiplyMoving, Engine: isa.EngineTensor,
					Outs:  []Access{ps(rows, nt, cols)},
					Ins:   []Access{bt.At(R(C(0), krows), I(kt), RS(nt.MulC(p.TN), cols))},
					Start: and(kt.Eq(C(0)), false), Stop: and(kt.Eq(ktiles(kb).Sub(C(1))), true), OpID: p.opID})
			})
		})
	}
	// evacuate moves M tile mt's accumulation group ps out into the
	// result block res (at index resIdx of its block dimension, or none):
	// a copy for the first K block (or the only evacuation, kOnce), an add
	// for the others.
	// foldR is the residual block the evacuations combine with the result
	// (foldResidual), set around an N block's evacuations.
	var foldR *Tile
	evacuate := func(b *Block, ps func(rows, nt, cols Expr) Access, res atter, resIdx Expr, hasIdx bool, mt, mb, nb, kb Expr, group Expr, sfx string) {
		rows := Min(C(128), mSize(mb).Sub(mt.MulC(128)))
		b.For("nt_e"+sfx, C(0), ntiles(nb), Parallel, func(b *Block, nt Expr) {
			cols := Min(C(p.TN), nSize(nb).Sub(nt.MulC(p.TN)))
			var dst Access
			if hasIdx {
				dst = res.At(R(C(0), rows), I(resIdx), I(mt), RS(nt.MulC(p.TN), cols))
			} else {
				dst = res.At(R(C(0), rows), I(mt), RS(nt.MulC(p.TN), cols))
			}
			src := ps(rows, nt, cols)
			copyOp := func(b *Block, scalar bool, any bool) {
				if scalar {
					b.Add(&Op{Opcode: isa.OpActivation, Engine: isa.EngineScalar, Outs: []Access{dst}, Ins: []Access{src},
						Attrs: isa.Attrs{Func: isa.ActCopy, Scale: 1}, OpID: p.opID})
					return
				}
				if foldR != nil {
					// The residual combined as the block leaves PSUM
					// (foldResidual).
					b.Add(&Op{Opcode: isa.OpTensorTensor, Engine: isa.EngineVector, Outs: []Access{dst},
						Ins:   []Access{src, foldR.At(R(C(0), rows), I(mt), RS(nt.MulC(p.TN), cols))},
						Attrs: isa.Attrs{ALU0: g.Epilogue.Combine}, OpID: p.opID})
					return
				}
				if p.foldBias() {
					// The bias added as the block leaves PSUM: an add costs
					// what the copy does.
					b.Add(&Op{Opcode: isa.OpTensorTensor, Engine: isa.EngineVector, Outs: []Access{dst},
						Ins:   []Access{src, biasSB.At(R(C(0), rows), RS(nb.MulC(p.BN).Add(nt.MulC(p.TN)), cols))},
						Attrs: isa.Attrs{ALU0: isa.ALUAdd}, OpID: p.opID})
					return
				}
				if p.foldScale() && p.kOnce() {
					// The per-channel scales applied as the block leaves
					// PSUM: a multiply costs what the copy does.
					b.Add(&Op{Opcode: isa.OpTensorTensor, Engine: isa.EngineVector, Outs: []Access{dst},
						Ins:   []Access{src, scaleAt(nb).At(R(C(0), rows), RS(nt.MulC(p.TN), cols))},
						Attrs: isa.Attrs{ALU0: isa.ALUMultiply}, OpID: p.opID})
					return
				}
				b.Add(&Op{Opcode: isa.OpTensorCopy, Engine: isa.EngineVector, Any: any, Outs: []Access{dst}, Ins: []Access{src}, OpID: p.opID})
			}
			addOp := func(b *Block, any bool) {
				b.Add(&Op{Opcode: isa.OpTensorTensor, Engine: isa.EngineVector, Any: any, Outs: []Access{dst}, Ins: []Access{dst, src},
					Attrs: isa.Attrs{ALU0: isa.ALUAdd}, OpID: p.opID})
			}
			first := kb.Eq(C(0))
			switch p.Evacuate {
			case EvacScalar:
				copyOp(b, true, false)
			case EvacAlternate:
				turn := group.Add(mt)
				if p.PSUMK {
					turn = turn.Add(nt) // one M tile per N block: by N tile
				}
				b.If(turn.Mod(C(2)).Eq(C(1)), func(b *Block) { copyOp(b, true, false) }, func(b *Block) { copyOp(b, false, false) })
			default:
				any := p.Evacuate == EvacAuto
				if p.kOnce() {
					copyOp(b, false, any)
				} else {
					b.If(first, func(b *Block) { copyOp(b, false, any) }, func(b *Block) {
						addOp(b, any)
						if p.foldScale() {
							// The last K block's sum scaled per tile as it
							// is added, on VectorE right after its add.
							b.When(kb.Eq(C(nBK-1)), func(b *Block) {
								b.Add(&Op{Opcode: isa.OpTensorTensor, Engine: isa.EngineVector, Outs: []Access{dst},
									Ins:   []Access{dst, scaleAt(nb).At(R(C(0), rows), RS(nt.MulC(p.TN), cols))},
									Attrs: isa.Attrs{ALU0: isa.ALUMultiply}, OpID: p.opID})
							})
						}
					})
				}
			}
		})
	}
	// psAt is the accumulation group of M tile mt in a PSUM tile ps
	// [128, MT, NT, tile] (slotted).
	psAt := func(ps slotted, mt Expr) func(rows, nt, cols Expr) Access {
		return func(rows, nt, cols Expr) Access { return ps.At(R(C(0), rows), I(mt), I(nt), R(C(0), cols)) }
	}
	// compute multiplies the K block kb into the result block res (at
	// index resIdx of its block dimension, or none) for (mb, nb), each M
	// tile in an accumulation group of its own, evacuated after it.
	// computeThen is compute with between, if set, emitted after the
	// first M tile's multiplies and before its evacuation.
	computeThen := func(b *Block, a atter, bt slotted, res atter, resIdx Expr, hasIdx bool, mb, nb, kb Expr, group Expr, between func(b *Block)) {
		b.For("mt", C(0), mtiles(mb), Parallel, func(b *Block, mt Expr) {
			ps := b.Tile("ps", isa.MemPSUM, isa.FP32, []int64{128, NT, p.tile}, int(p.Groups))
			at := func(rows, nt, cols Expr) Access { return ps.At(R(C(0), rows), I(nt), R(C(0), cols)) }
			matmuls(b, a, bt, at, mt, mb, nb, kb)
			if between != nil {
				b.When(mt.Eq(C(0)), between)
			}
			evacuate(b, at, res, resIdx, hasIdx, mt, mb, nb, kb, group, "")
		})
	}
	compute := func(b *Block, a atter, bt slotted, res atter, resIdx Expr, hasIdx bool, mb, nb, kb Expr, group Expr) {
		computeThen(b, a, bt, res, resIdx, hasIdx, mb, nb, kb, group, nil)
	}
	// psumGroups is how many sets of an N block's accumulation groups
	// (one per M tile) rotate in PSUM with PSUMK.
	psumMT := ceilDiv(min(g.M, p.BM), 128)
	psumGroups := int64(1)
	if p.PSUMK {
		psumGroups = max(1, p.groupBanksAvail/(psumMT*p.GroupBanks))
	}
	// store writes the finished result block of (mb, nb).
	// epilogue applies the fused work to a finished block before it is
	// stored: the activation in place on ScalarE, then R's matching block
	// (loaded into rt) combined on VectorE.
	epi := g.Epilogue
	epilogue := func(b *Block, blk Access, rt Access, rsrc Access, rearr bool, bias Access) {
		if epi.Bias && bias.Tile != nil { // (a block of whole M tiles adds it per tile first)
			b.Add(&Op{Opcode: isa.OpTensorTensor, Engine: isa.EngineVector, Outs: []Access{blk}, Ins: []Access{blk, bias},
				Attrs: isa.Attrs{ALU0: isa.ALUAdd}, OpID: p.opID})
		}
		if epi.Apply {
			b.Add(&Op{Opcode: isa.OpActivation, Engine: isa.EngineScalar, Outs: []Access{blk}, Ins: []Access{blk},
				Attrs: isa.Attrs{Func: epi.Func, Scale: 1}, OpID: p.opID})
		}
		if rt.Tile != nil {
			if rearr {
				rsrc = rsrc.Rearranged(split())
			}
			dma(b, isa.OpDMACopy, rt, rsrc)
			b.Add(&Op{Opcode: isa.OpTensorTensor, Engine: isa.EngineVector, Outs: []Access{blk}, Ins: []Access{blk, rt},
				Attrs: isa.Attrs{ALU0: epi.Combine}, OpID: p.opID})
		}
	}
	// normRows normalises rows of a finished block t (whole rows: the
	// plan's N block holds every column) as the norm kernel does with
	// bn_stats (norm.go): the statistics on VectorE over chunks of at most
	// normFree columns, rstd = rsqrt(var + eps) on ScalarE (RMSNorm:
	// mean(x^2) = mean^2 + var), then x*rstd [- mean*rstd], times the
	// weight [plus the bias], in place.
	normRows := func(b *Block, t Access, rows Expr, sfx string) {
		nm := g.Epilogue.Norm
		sdt := isa.FP32
		if resDT.IsHalf() {
			sdt = resDT
		}
		nch := ceilDiv(g.N, p.normFree)
		st := b.Tile("nst"+sfx, isa.MemSBUF, isa.FP32, []int64{128, nch, bnStatsWidth}, 2)
		mv := b.Tile("nmv"+sfx, isa.MemSBUF, isa.FP32, []int64{128, bnAggrWidth}, 2)
		rstd := b.Tile("nrstd"+sfx, isa.MemSBUF, sdt, []int64{128, 1}, 2)
		rs := func(x *Tile) Access { return x.At(R(C(0), rows)) }
		op := func(o *Op) { o.OpID = p.opID; b.Add(o) }
		for c := int64(0); c < nch; c++ {
			chunk := blockCols(t, c*p.normFree, min(p.normFree, g.N-c*p.normFree))
			op(&Op{Opcode: isa.OpBNStats, Engine: isa.EngineVector, Outs: []Access{st.At(R(C(0), rows), I(C(c)))}, Ins: []Access{chunk}})
		}
		op(&Op{Opcode: isa.OpBNAggr, Engine: isa.EngineVector, Outs: []Access{rs(mv)}, Ins: []Access{rs(st)}})
		mean, under := mv.At(R(C(0), rows), RS(C(0), C(1))), mv.At(R(C(0), rows), RS(C(1), C(1)))
		if nm.RMS {
			ms := b.Tile("nms"+sfx, isa.MemSBUF, isa.FP32, []int64{128, 1}, 2)
			op(&Op{Opcode: isa.OpScalarTensorTensor, Engine: isa.EngineGpSimd, Outs: []Access{rs(ms)}, Ins: []Access{mean, under, mean},
				Attrs: isa.Attrs{ALU0: isa.ALUMultiply, ALU1: isa.ALUAdd}})
			under = rs(ms)
		}
		op(&Op{Opcode: isa.OpActivation, Engine: isa.EngineScalar, Outs: []Access{rs(rstd)}, Ins: []Access{under, rs(normEps)},
			Attrs: isa.Attrs{Func: isa.ActRsqrt, Scale: 1}})
		var shift *Tile
		if !nm.RMS {
			shift = b.Tile("nshift"+sfx, isa.MemSBUF, sdt, []int64{128, 1}, 2)
			op(&Op{Opcode: isa.OpScalarTensorTensor, Engine: isa.EngineGpSimd, Outs: []Access{rs(shift)}, Ins: []Access{mean, rs(rstd)},
				Attrs: isa.Attrs{ALU0: isa.ALUMultiply, Imm0: -1, ALU1: isa.ALUMultiply}})
		}
		// x*rstd [- mean*rstd], times the weight [plus the bias], by
		// columns in two lanes side by side (normVectorCols): VectorE's
		// first columns, ScalarE's normalisation of the rest and then
		// GpSimd's multiplies (VectorE's, after its own, where they share
		// SBUF's port).
		mulE := isa.EngineGpSimd
		if p.normShareVG {
			mulE = isa.EngineVector
		}
		normOp := func(c0, cols int64, e isa.Engine) {
			x := blockCols(t, c0, cols)
			o := &Op{Opcode: isa.OpTensorScalar, Engine: e, Outs: []Access{x}, Ins: []Access{x, rs(rstd)}, Attrs: isa.Attrs{ALU0: isa.ALUMultiply}}
			if shift != nil {
				o.Ins = append(o.Ins, rs(shift))
				o.Attrs.ALU1 = isa.ALUAdd
			}
			op(o)
		}
		mulOps := func(c0, cols int64, e isa.Engine) {
			x := blockCols(t, c0, cols)
			op(&Op{Opcode: isa.OpTensorTensor, Engine: e, Outs: []Access{x}, Ins: []Access{x, normW.At(R(C(0), rows), RS(C(c0), C(cols)))}, Attrs: isa.Attrs{ALU0: isa.ALUMultiply}})
			if normB != nil {
				op(&Op{Opcode: isa.OpTensorTensor, Engine: e, Outs: []Access{x}, Ins: []Access{x, normB.At(R(C(0), rows), RS(C(c0), C(cols)))}, Attrs: isa.Attrs{ALU0: isa.ALUAdd}})
			}
		}
		nv := p.normVector
		if nv < g.N {
			normOp(nv, g.N-nv, isa.EngineScalar)
		}
		if nv > 0 {
			normOp(0, nv, isa.EngineVector)
			mulOps(0, nv, isa.EngineVector)
		}
		if nv < g.N {
			mulOps(nv, g.N-nv, mulE)
		}
	}
	// storeDMA stores a finished block. A deferred store (quantised
	// weights) is triggered by ScalarE: on Sync it would hold up the
	// weights' loads behind it until the block is done; ScalarE reaches it
	// after the conversions emitted before it, by when it is.
	storeDMA := func(b *Block, dst, src Access) {
		if p.deferStores() {
			b.Add(&Op{Opcode: isa.OpDMACopy, Engine: isa.EngineScalar, Outs: []Access{dst}, Ins: []Access{src}, OpID: p.opID})
			return
		}
		dma(b, isa.OpDMACopy, dst, src)
	}
	// sfx tells the names of a second copy of the store apart.
	store := func(b *Block, res atter, resIdx Expr, hasIdx bool, mb, nb Expr, sfx string) {
		m0, n0 := mOff.Add(mb.MulC(p.BM)), nb.MulC(p.BN)
		size, ncols := mSize(mb), nSize(nb)
		full := size.Div(C(128)).MulC(128)
		// tileOf is M tile mt of the result block, its ncols columns.
		tileOf := func(mt Expr) Access {
			if hasIdx {
				return res.At(R(C(0), C(128)), I(resIdx), I(mt), R(C(0), ncols))
			}
			return res.At(R(C(0), C(128)), I(mt), R(C(0), ncols))
		}
		var rt *Tile
		if epi.HasR() && !p.foldResidual() {
			rt = b.Tile("r"+sfx, isa.MemSBUF, g.Out, []int64{128, MT, p.BN}, 2)
		}
		b.When(full.Gt(C(0)), func(b *Block) {
			var src Access
			if hasIdx {
				src = res.At(R(C(0), C(128)), I(resIdx), R(C(0), full.Div(C(128))), R(C(0), ncols))
			} else {
				src = res.At(R(C(0), C(128)), R(C(0), full.Div(C(128))), R(C(0), ncols))
			}
			if g.Dequant && !p.foldScale() {
				// The per-channel scales first, per M tile.
				b.For("mt_s"+sfx, C(0), full.Div(C(128)), Parallel, func(b *Block, mt Expr) {
					blk := tileOf(mt)
					b.Add(&Op{Opcode: isa.OpTensorTensor, Engine: isa.EngineVector, Outs: []Access{blk}, Ins: []Access{blk, scaleAt(nb).At(R(C(0), C(128)), R(C(0), ncols))},
						Attrs: isa.Attrs{ALU0: isa.ALUMultiply}, OpID: p.opID})
				})
			}
			if epi.Any() {
				var rAcc, rSrc, bAcc Access // bAcc stays empty: the bias goes per M tile below
				if rt != nil {
					rAcc, rSrc = rt.At(R(C(0), C(128)), R(C(0), full.Div(C(128))), R(C(0), ncols)), rHBM.At(RS(m0, full), RS(n0, ncols))
				}
				if biasSB != nil && !p.foldBias() {
					// The bias's columns of the block, the same for every M tile.
					b.For("mt_b"+sfx, C(0), full.Div(C(128)), Parallel, func(b *Block, mt Expr) {
						blk := tileOf(mt)
						b.Add(&Op{Opcode: isa.OpTensorTensor, Engine: isa.EngineVector, Outs: []Access{blk}, Ins: []Access{blk, biasSB.At(R(C(0), C(128)), RS(n0, ncols))},
							Attrs: isa.Attrs{ALU0: isa.ALUAdd}, OpID: p.opID})
					})
				}
				epilogue(b, src, rAcc, rSrc, true, bAcc)
				if epi.Norm.On {
					b.For("mt_n"+sfx, C(0), full.Div(C(128)), Parallel, func(b *Block, mt Expr) { normRows(b, tileOf(mt), C(128), sfx) })
				}
			}
			storeDMA(b, cHBM.At(RS(m0, full), RS(n0, ncols)).Rearranged(split()), src)
		})
		rem := size.Sub(full)
		b.When(rem.Gt(C(0)), func(b *Block) {
			var src Access
			if hasIdx {
				src = res.At(R(C(0), rem), I(resIdx), I(full.Div(C(128))), R(C(0), ncols))
			} else {
				src = res.At(R(C(0), rem), I(full.Div(C(128))), R(C(0), ncols))
			}
			if g.Dequant && !p.foldScale() {
				b.Add(&Op{Opcode: isa.OpTensorTensor, Engine: isa.EngineVector, Outs: []Access{src}, Ins: []Access{src, scaleAt(nb).At(R(C(0), rem), R(C(0), ncols))},
					Attrs: isa.Attrs{ALU0: isa.ALUMultiply}, OpID: p.opID})
			}
			if epi.Any() {
				var rAcc, rSrc, bAcc Access
				if rt != nil {
					rAcc, rSrc = rt.At(R(C(0), rem), I(full.Div(C(128))), R(C(0), ncols)), rHBM.At(RS(m0.Add(full), rem), RS(n0, ncols))
				}
				if biasSB != nil && !p.foldBias() {
					bAcc = biasSB.At(R(C(0), rem), RS(n0, ncols))
				}
				epilogue(b, src, rAcc, rSrc, false, bAcc)
				if epi.Norm.On {
					normRows(b, src, rem, sfx+"r")
				}
			}
			storeDMA(b, cHBM.At(RS(m0.Add(full), rem), RS(n0, ncols)), src)
		})
	}
	// blockA returns the A^T block of (mb, kb) for the multiplies, loading
	// it: a slot of a K block tile, or, A resident, the K block's tiles of
	// the resident tile, loaded during the first N block only.
	blockA := func(b *Block, nb, mb, kb Expr) atter {
		if aResident {
			loadAResident(b, nb, kb)
			return ktShift{aRes, kb.MulC(KT)}
		}
		a := b.Tile("a", isa.MemSBUF, g.In, []int64{128, KT, p.BM}, int(p.NBuf))
		loadA(b, a, mb, kb)
		return a
	}
	// mulK multiplies the K block kb of the one M block (PSUMK) into the
	// accumulation groups ps of its M tiles.
	mulK := func(b *Block, bt slotted, ps slotted, nb, kb Expr) {
		a := blockA(b, nb, C(0), kb)
		b.For("mt", C(0), mtiles(C(0)), Parallel, func(b *Block, mt Expr) { matmuls(b, a, bt, psAt(ps, mt), mt, C(0), nb, kb) })
	}
	// evacK evacuates the N block nb's accumulation groups (PSUMK) into
	// its result block, after its last K block.
	evacK := func(b *Block, ps slotted, res atter, nb Expr, sfx string) {
		b.For("mt_k"+sfx, C(0), mtiles(C(0)), Parallel, func(b *Block, mt Expr) {
			evacuate(b, psAt(ps, mt), res, C(0), true, mt, C(0), nb, C(nBK-1), nb.MulC(MT), sfx)
		})
	}
	var aLoad Stmt // a resident A's loads, one GEMM's (AResidentStmts)
	build := func(root *Block) {
		if aResident {
			kAll := roundUp(g.K, 128)
			aRes = root.Tile("ares", isa.MemSBUF, g.In, []int64{128, kAll / 128, min(p.BM, g.M)}, 1)
			switch {
			case p.aOnChip:
				// A's rows are the GEMM's before, in SBUF already.
				aRaw = root.Tile(AOnChipTileName, isa.MemSBUF, g.In, p.AOnChipShape(), 1)
			case g.AMK && p.Transpose == TransposeTensor:
				aRaw = root.Tile("araw", isa.MemSBUF, g.In, []int64{128, ceilDiv(min(g.M, p.BM), 128), kAll}, 1)
			}
			if batch == 1 && !p.aOnChip {
				loadAAll(root)
				aLoad = k.Body[len(k.Body)-1]
			}
		}
		if p.PSUMK && p.deferStores() {
			// As below, the N block's evacuations deferred with its
			// stores; its accumulation groups rotate through the slots of
			// a kernel-level PSUM tile.
			resAll := root.Tile("res", isa.MemSBUF, resDT, []int64{128, p.NRes, nBM, MT, p.BN}, 1)
			resOf := func(nb Expr) slotted { return slotted{resAll, nb.Mod(C(p.NRes)), true} }
			psAll := root.Tile("ps", isa.MemPSUM, isa.FP32, []int64{128, psumGroups, psumMT, NT, p.tile}, 1)
			psOf := func(nb Expr) slotted { return slotted{psAll, nb.Mod(C(psumGroups)), true} }
			finish := func(b *Block, nb Expr, sfx string) {
				evacK(b, psOf(nb), resOf(nb), nb, sfx)
				store(b, resOf(nb), C(0), true, C(0), nb, sfx)
			}
			root.For("nb", C(0), C(nBN), Parallel, func(b *Block, nb Expr) {
				loadScales(b, nb)
				b.For("kb", C(0), C(nBK), Sequential, func(b *Block, kb Expr) {
					bt, load := weights(b, nb.MulC(nBK).Add(kb), nb, kb)
					load()
					mulK(b, bt, psOf(nb), nb, kb)
					b.When(kb.Eq(C(0)).And(nb.Gt(C(0))), func(b *Block) { finish(b, nb.Sub(C(1)), "") })
				})
			})
			finish(root, C(nBN-1), "_last")
		} else if p.PSUMK {
			var kept *Tile
			if p.keepResult {
				// The result in a kernel-level tile, which a GEMM reading it
				// as A reads in place (one N block, one M block).
				kept = root.Tile(ResultTileName, isa.MemSBUF, resDT, p.ResultTileShape(), 1)
			}
			root.For("nb", C(0), C(nBN), Parallel, func(b *Block, nb Expr) {
				var res atter = slotted{t: kept}
				if kept == nil {
					res = slotted{t: b.Tile("res", isa.MemSBUF, resDT, []int64{128, nBM, MT, p.BN}, int(p.NRes))}
				} else if nBN > 1 {
					res = lastShift{kept, nb.MulC(p.BN)} // (the N block's columns of the whole result)
				}
				ps := b.Tile("ps", isa.MemPSUM, isa.FP32, []int64{128, psumMT, NT, p.tile}, int(psumGroups))
				loadScales(b, nb)
				if p.foldResidual() {
					// The N block's residual, loaded ahead of its evacuations.
					foldR = b.Tile("r", isa.MemSBUF, g.Out, []int64{128, MT, p.BN}, 2)
					loadRows(b, foldR, rHBM, mOff, mSize(C(0)), nb.MulC(p.BN), nSize(nb), -1)
				}
				b.For("kb", C(0), C(nBK), Sequential, func(b *Block, kb Expr) {
					bt, load := weights(b, nb.MulC(nBK).Add(kb), nb, kb)
					load()
					mulK(b, bt, slotted{t: ps}, nb, kb)
				})
				evacK(b, slotted{t: ps}, res, nb, "")
				foldR = nil
				store(b, res, C(0), true, C(0), nb, "")
			})
		} else if p.Order == OrderNKM && p.deferStores() {
			// Quantised weights: an N block's results are stored after the
			// next N block's first K block is multiplied, so in every
			// engine's program order that block's multiplies come before the
			// epilogue and stores of the one before (which wait for all its
			// evacuations: a multiply emitted after them would wait for
			// them too, through the semaphore mark they share). The result
			// blocks rotate through NRes slots of a kernel-level tile.
			resAll := root.Tile("res", isa.MemSBUF, resDT, []int64{128, p.NRes, nBM, MT, p.BN}, 1)
			resOf := func(nb Expr) slotted { return slotted{resAll, nb.Mod(C(p.NRes)), true} }
			storeAll := func(b *Block, nb Expr, sfx string) {
				b.For("mb_s"+sfx, C(0), C(nBM), Parallel, func(b *Block, mb Expr) { store(b, resOf(nb), mb, true, mb, nb, sfx) })
			}
			root.For("nb", C(0), C(nBN), Parallel, func(b *Block, nb Expr) {
				loadScales(b, nb)
				b.For("kb", C(0), C(nBK), Sequential, func(b *Block, kb Expr) {
					bt, load := weights(b, nb.MulC(nBK).Add(kb), nb, kb)
					load()
					b.For("mb", C(0), C(nBM), Parallel, func(b *Block, mb Expr) {
						a := blockA(b, nb, mb, kb)
						compute(b, a, bt, resOf(nb), mb, true, mb, nb, kb, mb.MulC(MT))
					})
					b.When(kb.Eq(C(0)).And(nb.Gt(C(0))), func(b *Block) { storeAll(b, nb.Sub(C(1)), "") })
				})
			})
			storeAll(root, C(nBN-1), "_last")
		} else if p.Order == OrderNKM {
			// An M block's store is emitted after the next M block's first
			// multiplies: it waits for the last of its block's evacuations,
			// and multiplies emitted after it would wait for that one too,
			// through the semaphore mark they share, where they need only
			// the evacuation of their own accumulation group. (In each
			// engine's program order nothing moves: the store still follows
			// its block's evacuations and precedes the next block's.) A
			// store that loads a residual block keeps one call site, so
			// that its tile is placed once: it follows its own block.
			deferStore := !epi.HasR()
			root.For("nb", C(0), C(nBN), Parallel, func(b *Block, nb Expr) {
				res := b.Tile("res", isa.MemSBUF, resDT, []int64{128, nBM, MT, p.BN}, int(p.NRes))
				loadScales(b, nb)
				b.For("kb", C(0), C(nBK), Sequential, func(b *Block, kb Expr) {
					bt, load := weights(b, nb.MulC(nBK).Add(kb), nb, kb)
					load()
					last := kb.Eq(C(nBK - 1))
					b.For("mb", C(0), C(nBM), Parallel, func(b *Block, mb Expr) {
						a := blockA(b, nb, mb, kb)
						if !deferStore {
							compute(b, a, bt, slotted{t: res}, mb, true, mb, nb, kb, mb.MulC(MT))
							b.When(last, func(b *Block) { store(b, slotted{t: res}, mb, true, mb, nb, "") })
							return
						}
						computeThen(b, a, bt, slotted{t: res}, mb, true, mb, nb, kb, mb.MulC(MT), func(b *Block) {
							b.When(last.And(mb.Gt(C(0))), func(b *Block) { store(b, slotted{t: res}, mb.Sub(C(1)), true, mb.Sub(C(1)), nb, "") })
						})
					})
					if deferStore {
						b.When(last, func(b *Block) { store(b, slotted{t: res}, C(nBM-1), true, C(nBM-1), nb, "_last") })
					}
				})
			})
		} else {
			root.For("nb", C(0), C(nBN), Parallel, func(b *Block, nb Expr) {
				loadScales(b, nb)
				b.For("mb", C(0), C(nBM), Parallel, func(b *Block, mb Expr) {
					res := b.Tile("res", isa.MemSBUF, resDT, []int64{128, MT, p.BN}, int(p.NRes))
					b.For("kb", C(0), C(nBK), Sequential, func(b *Block, kb Expr) {
						a := b.Tile("a", isa.MemSBUF, g.In, []int64{128, KT, p.BM}, int(p.NBuf))
						bt, load := weights(b, nb.MulC(nBM).Add(mb).MulC(nBK).Add(kb), nb, kb)
						loadA(b, a, mb, kb)
						load()
						compute(b, a, bt, slotted{t: res}, C(0), false, mb, nb, kb, mb.MulC(MT))
					})
					store(b, slotted{t: res}, C(0), false, mb, nb, "")
				})
			})
		}
	}
	if g.Dequant {
		// (One GEMM: checkDequant refuses a batch.)
		name := "bw"
		if p.BSlots > 0 {
			name = SlotTileName
		}
		bwAll = root.Tile(name, isa.MemSBUF, g.WeightDType, []int64{128, rawSlots, KT, min(p.BN, g.N)}, 1)
		bqAll = root.Tile("b", isa.MemSBUF, g.In, []int64{128, p.NBuf, KT, min(p.BN, g.N)}, 1)
		scaleAll = root.Tile("scale", isa.MemSBUF, g.Out, []int64{p.scaleRows(), 2, p.BN}, 1)
		prepare(root, C(0), "kt_q0")
	}
	if batch > 1 {
		root.For("batch", C(0), C(batch), Parallel, func(b *Block, bi Expr) {
			kOff, mOff = bi.MulC(g.K), bi.MulC(g.M)
			build(b)
		})
	} else {
		build(root)
	}
	if p.BSlots > 0 {
		// The head: the first BHead blocks of a streamed B, the kernel's
		// first statement (HeadStmts). Pre-tiled, consecutive full K
		// blocks of an N block are one run per partition in HBM and their
		// slots one in SBUF: they load headGroup of them a transfer (fewer
		// descriptors, each the bigger), the ragged last K block alone.
		slots, one := bsAll, loadStreamed
		if g.Dequant {
			slots, one = bwAll, loadRaw
		}
		wb := int64(g.BDType().Bytes())
		gsz := int64(1)
		if g.BTiled {
			gsz = max(1, headGroupBytes/roundUp(mul(KT, min(p.BN, g.N), wb), 64))
		}
		ragged := g.K%p.BK != 0
		root.For("nb_h", C(0), C(ceilDiv(p.BHead, nBK)), Parallel, func(b *Block, nb Expr) {
			cnt := Min(C(nBK), C(p.BHead).Sub(nb.MulC(nBK))) // the N block's K blocks in the head
			full := cnt
			if ragged {
				full = Min(cnt, C(nBK-1))
			}
			if gsz == 1 {
				b.For("kb_h", C(0), cnt, Parallel, func(b *Block, kb Expr) { one(b, nb.MulC(nBK).Add(kb)) })
				return
			}
			b.For("kg_h", C(0), full.CDiv(C(gsz)), Parallel, func(b *Block, gi Expr) {
				kb0 := gi.MulC(gsz)
				n := Min(C(gsz), full.Sub(kb0))
				dmaOn(b, p.weightQueue, slots.At(R(C(0), C(128)), RS(nb.MulC(nBK).Add(kb0), n), R(C(0), C(KT)), R(C(0), nSize(nb))),
					bHBM.At(RS(nb.MulC(128), C(128)), RS(kb0.MulC(KT), n.MulC(KT)), R(C(0), nSize(nb))).Rearranged(
						&Rearrange{In: [][]string{{"p"}, {"g", "t"}, {"f"}}, Out: []string{"p", "g", "t", "f"}, Sizes: map[string]int64{"t": KT}}))
			})
			if ragged {
				b.When(cnt.Eq(C(nBK)), func(b *Block) { one(b, nb.MulC(nBK).Add(C(nBK-1))) })
			}
		})
		n := len(k.Body)
		k.Body = append([]Stmt{k.Body[n-1]}, k.Body[:n-1]...)
	}
	if aLoad != nil {
		// A resident's loads next (AResidentStmts).
		at := p.HeadStmts()
		var body []Stmt
		for _, st := range k.Body {
			if st != aLoad {
				body = append(body, st)
			}
		}
		k.Body = append(append(append([]Stmt{}, body[:at]...), aLoad), body[at:]...)
	}
	if err := k.Finish(); err != nil {
		return nil, fmt.Errorf("internal error: the GEMM kernel: %w", err)
	}
	return k, nil
}

// lastShift is a tile seen with its last dimension moved by c0 (an N
// block's columns of a kept result, ResultTileName).
type lastShift struct {
	t  *Tile
	c0 Expr
}

// At is the tile's access with the last range moved by c0.
func (s lastShift) At(rs ...Range) Access {
	rs = append([]Range(nil), rs...)
	r := &rs[len(rs)-1]
	r.Start = s.c0.Add(r.Start)
	if !r.Index {
		r.Stop = s.c0.Add(r.Stop)
	}
	return s.t.At(rs...)
}

// atter is a tile or a view of one that gives accesses.
type atter interface{ At(rs ...Range) Access }

// ktShift is a tile [128, T, F] seen from its tile t0: index i of the
// second dimension is t0 + i (a K block's tiles of a resident A^T).
type ktShift struct {
	t  *Tile
	t0 Expr
}

// At is the tile's access, the second range shifted.
func (s ktShift) At(rs ...Range) Access {
	rs = append([]Range(nil), rs...)
	r := rs[1]
	r.Start = s.t0.Add(r.Start)
	if !r.Index {
		r.Stop = s.t0.Add(r.Stop)
	}
	rs[1] = r
	return s.t.At(rs...)
}

// colShift is index i of a tile [128, I, F] seen as [128, F'] from column
// c0: an M tile's K block of A's resident rows.
type colShift struct {
	t     *Tile
	i, c0 Expr
	// lead says the tile has one more dimension after the partitions, of
	// size 1 (an A_SB tile, AOnChipShape).
	lead bool
}

// At is the tile's access: the partition range, the index, the column
// range shifted.
func (s colShift) At(rs ...Range) Access {
	r := rs[1]
	r.Start = s.c0.Add(r.Start)
	if !r.Index {
		r.Stop = s.c0.Add(r.Stop)
	}
	if s.lead {
		return s.t.At(rs[0], I(C(0)), I(s.i), r)
	}
	return s.t.At(rs[0], I(s.i), r)
}

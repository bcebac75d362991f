package kernels

import (
	"fmt"
	"math"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/sched"
	. "github.com/trnsim/trnsim/workloads/tile"
)

// Norm is RMSNorm or LayerNorm over the last dimension of X [Rows, Cols]
// (one token per row): OUT = x * rsqrt(mean(x^2) + Eps) * W for RMSNorm,
// OUT = (x - mean) * rsqrt(var + Eps) * W [+ B] for LayerNorm. X, W
// [Cols], B [Cols] and OUT share DType; the statistics are FP32 in SBUF.
type Norm struct {
	Rows, Cols int64
	DType      isa.DType
	// RMS selects RMSNorm; else LayerNorm, with the bias B when Bias.
	RMS  bool
	Bias bool
	Eps  float64
}

// NormStats is how a norm kernel computes its row statistics.
type NormStats uint8

// Ways to compute the statistics.
const (
	// NormStatsAuto lets the plan choose (the one with the least busy
	// engine).
	NormStatsAuto NormStats = iota
	// NormStatsBN uses VectorE's bn_stats (over chunks of at most the
	// hardware's bn_stats free size) and bn_aggr.
	NormStatsBN
	// NormStatsAccumulate uses ScalarE's accumulating activation for the
	// sum of squares and, for LayerNorm, a tensor_reduce for the sum: it
	// leaves VectorE free for the normalisation.
	NormStatsAccumulate
)

// String names the method as the plan reports it.
func (s NormStats) String() string {
	switch s {
	case NormStatsBN:
		return "bn_stats"
	case NormStatsAccumulate:
		return "accumulate"
	}
	return "auto"
}

// NormOptions are the norm kernel's choices (0: chosen).
type NormOptions struct {
	Buffers int64
	OpID    int32
	// Stats picks how the statistics are computed (NormStatsAuto: by
	// estimated engine time).
	Stats NormStats
}

// NormPlan is a resolved norm lowering: whole rows are held in SBUF, 128
// rows a tile, NBuf tiles deep.
type NormPlan struct {
	N     Norm
	NBuf  int64
	Stats NormStats
	// Engines of the per-element ops: the normalisation (x*rstd [+ shift],
	// a tensor_scalar), the product with W, the sum with B, and, for
	// LayerNorm with NormStatsAccumulate, the row sum; Small runs the
	// per-row arithmetic on [128, 1] tiles.
	NormEngine, WEngine, BEngine, SumEngine, Small isa.Engine
	// ScalarDType is the dtype of the per-row scale and shift that the
	// normalisation reads: the data dtype when it is BF16/FP16 (so that
	// VectorE's tensor_scalar runs in its fast mode), else FP32.
	ScalarDType isa.DType
	// BusyNs is the estimated busy time of each engine per full row tile.
	BusyNs [isa.NumEngines]float64
	// BNFree is the most columns one bn_stats reads.
	BNFree int64
	auto   map[string]bool
	opID   int32
}

// bnStatsWidth and bnAggrWidth are the per-partition outputs of bn_stats
// (per chunk) and bn_aggr (mean and variance).
const (
	bnStatsWidth = 6
	bnAggrWidth  = 2
)

// PlanNorm resolves the options.
func PlanNorm(n Norm, o NormOptions, tg *sched.Target) (*NormPlan, error) {
	lim := tg.Limits
	if n.Rows <= 0 || n.Cols <= 0 {
		return nil, &ShapeError{Dim: "rows", Msg: fmt.Sprintf("norm of [%d, %d]: sizes must be positive", n.Rows, n.Cols)}
	}
	if n.RMS && n.Bias {
		return nil, optErr("bias", "RMSNorm takes no bias")
	}
	if o.Buffers < 0 {
		return nil, optErr("buffers", "%d: buffers must be positive", o.Buffers)
	}
	p := &NormPlan{N: n, NBuf: o.Buffers, Stats: o.Stats, auto: map[string]bool{}, opID: o.OpID, ScalarDType: isa.FP32,
		BNFree: max(lim.BNStatsFreeMax, 1)}
	if n.DType.IsHalf() {
		p.ScalarDType = n.DType
	}
	ts := []hbmTensor{{"X", n.DType, []int64{n.Rows, n.Cols}}, {"W", n.DType, []int64{n.Cols}}}
	if n.Bias {
		ts = append(ts, hbmTensor{"B", n.DType, []int64{n.Cols}})
	}
	if err := checkHBM("norm", tg, append(ts, hbmTensor{"OUT", n.DType, []int64{n.Rows, n.Cols}})...); err != nil {
		return nil, err
	}
	if n.Cols > lim.VectorFreeMaxSBUF {
		return nil, &ShapeError{Dim: "cols", Msg: fmt.Sprintf("%d exceeds the engines' free size limit of %d (a norm holds whole rows)", n.Cols, lim.VectorFreeMaxSBUF)}
	}
	eb := int64(n.DType.Bytes())
	row := roundUp(mul(n.Cols, eb), 64)
	// Fixed tiles: W (and B) broadcast to every partition, the junk output
	// of the accumulating activation, the statistics (a few 64-byte slots).
	fixed := mul(row, 2) // W and the junk tile
	if n.Bias {
		fixed = add(fixed, row)
	}
	fixed = add(fixed, roundUp(mul(ceilDiv(n.Cols, max(lim.BNStatsFreeMax, 1)), bnStatsWidth, 4), 64), 16*64)
	if p.NBuf == 0 {
		p.auto["buffers"] = true
		p.NBuf = autoRowBuffers(fixed, row, ceilDiv(n.Rows, 128), lim.SBUFPartitionBytes)
	}
	if need := add(fixed, mul(p.NBuf, row)); need > lim.SBUFPartitionBytes {
		return nil, &sched.FitError{Kernel: "norm", Tile: "the row tiles and the broadcast weights", Mem: isa.MemSBUF, Needed: need, Available: lim.SBUFPartitionBytes}
	}
	p.assign(tg)
	return p, nil
}

// Choices lists the resolved options.
func (p *NormPlan) Choices() []Choice {
	return []Choice{{Name: "buffers", Value: p.NBuf, Auto: p.auto["buffers"]},
		{Name: "norm_stats", Value: int64(p.Stats), Auto: p.auto["norm_stats"]}}
}

// rowCost prices instructions on [128, n] tiles with the target's cost
// table, in nanoseconds of issue interval.
type rowCost struct{ tg *sched.Target }

func (c rowCost) view(dt isa.DType, cols int64) isa.Operand {
	b := isa.Buffer{Mem: isa.MemSBUF, DType: dt, Shape: []int64{128, max(cols, 1)}}
	op, _ := b.View(0)
	return op
}

func (c rowCost) ns(op isa.Opcode, eng isa.Engine, a isa.Attrs, out isa.Operand, ins ...isa.Operand) float64 {
	if c.tg.Cost == nil || !op.RunsOn(eng) {
		return 0
	}
	var env isa.CostEnv
	body := &isa.Body{Op: op, Engine: eng, Outs: []isa.Operand{out}, Ins: ins, Attrs: a}
	cost := c.tg.Cost.CostOf(&isa.Instruction{Body: body}, 0, &env)
	ghz := c.tg.ClockGHz[eng]
	if ghz <= 0 {
		ghz = 1
	}
	return float64(cost.IntervalCycles) / ghz
}

// bnStatsNs is the statistics of cols columns of dt per partition:
// bn_stats over chunks of at most fmax columns, then bn_aggr.
func (c rowCost) bnStatsNs(dt isa.DType, cols, fmax int64) float64 {
	full, last := cols/fmax, cols%fmax
	ns := float64(full) * c.ns(isa.OpBNStats, isa.EngineVector, isa.Attrs{}, c.view(isa.FP32, bnStatsWidth), c.view(dt, fmax))
	if last > 0 {
		ns += c.ns(isa.OpBNStats, isa.EngineVector, isa.Attrs{}, c.view(isa.FP32, bnStatsWidth), c.view(dt, last))
	}
	return ns + c.ns(isa.OpBNAggr, isa.EngineVector, isa.Attrs{}, c.view(isa.FP32, bnAggrWidth), c.view(isa.FP32, ceilDiv(cols, fmax)*bnStatsWidth))
}

// rowStep is one per-element op of a row kernel: its cost on each engine
// that may run it (0: it may not).
type rowStep [isa.NumEngines]float64

// assignRows gives each step the engine that minimises the busiest
// engine's load over all the steps (then the total load), starting from
// the loads in base: an exhaustive search, the steps being few.
func assignRows(base [isa.NumEngines]float64, steps []rowStep) ([]isa.Engine, [isa.NumEngines]float64) {
	best := make([]isa.Engine, len(steps))
	cur := make([]isa.Engine, len(steps))
	bestMax, bestSum := math.Inf(1), math.Inf(1)
	var bestLoad [isa.NumEngines]float64
	var rec func(i int, load [isa.NumEngines]float64)
	rec = func(i int, load [isa.NumEngines]float64) {
		if i == len(steps) {
			mx, sum := 0.0, 0.0
			for _, l := range load {
				mx, sum = math.Max(mx, l), sum+l
			}
			if mx < bestMax-1e-9 || (mx < bestMax+1e-9 && sum < bestSum-1e-9) {
				bestMax, bestSum, bestLoad = mx, sum, load
				copy(best, cur)
			}
			return
		}
		for _, e := range []isa.Engine{isa.EngineVector, isa.EngineScalar, isa.EngineGpSimd} {
			if steps[i][e] <= 0 {
				continue
			}
			cur[i] = e
			l := load
			l[e] += steps[i][e]
			rec(i+1, l)
		}
	}
	rec(0, base)
	return best, bestLoad
}

// assign chooses the statistics method and the engines by estimated busy
// time per full row tile.
func (p *NormPlan) assign(tg *sched.Target) {
	n, lim := p.N, tg.Limits
	c := rowCost{tg}
	dt, sdt := n.DType, p.ScalarDType
	x, xf := c.view(dt, n.Cols), c.view(isa.FP32, 1)
	sc := c.view(sdt, 1)
	small := 0.0
	if tg.Cost != nil {
		if v, ok := tg.Cost.Constant("MIN_II"); ok {
			small = v / max(tg.ClockGHz[isa.EngineVector], 0.1)
		}
	}
	try := func(stats NormStats) ([]isa.Engine, [isa.NumEngines]float64) {
		var base [isa.NumEngines]float64
		var steps []rowStep
		// The rsqrt on ScalarE, and a few small ops on VectorE.
		base[isa.EngineScalar] += c.ns(isa.OpActivation, isa.EngineScalar, isa.Attrs{Func: isa.ActRsqrt, Scale: 1}, xf, xf)
		base[isa.EngineVector] += 3 * small
		if stats == NormStatsBN {
			base[isa.EngineVector] += c.bnStatsNs(dt, n.Cols, max(lim.BNStatsFreeMax, 1))
		} else {
			base[isa.EngineScalar] += c.ns(isa.OpActivation, isa.EngineScalar, isa.Attrs{Func: isa.ActSquare, Scale: 1, Accumulate: isa.ALUAdd}, x, x) +
				c.ns(isa.OpActReadAccumulator, isa.EngineScalar, isa.Attrs{}, xf)
			if !n.RMS {
				var s rowStep
				for _, e := range []isa.Engine{isa.EngineVector, isa.EngineGpSimd} {
					s[e] = c.ns(isa.OpTensorReduce, e, isa.Attrs{ALU0: isa.ALUAdd, Axis: 1}, xf, x)
				}
				steps = append(steps, s)
			}
		}
		var norm rowStep
		nAttrs := isa.Attrs{ALU0: isa.ALUMultiply}
		nIns := []isa.Operand{x, sc}
		if !n.RMS {
			nAttrs.ALU1 = isa.ALUAdd
			nIns = append(nIns, sc)
		}
		for _, e := range []isa.Engine{isa.EngineVector, isa.EngineScalar, isa.EngineGpSimd} {
			norm[e] = c.ns(isa.OpTensorScalar, e, nAttrs, x, nIns...)
		}
		steps = append(steps, norm)
		var ws rowStep
		for _, e := range []isa.Engine{isa.EngineVector, isa.EngineGpSimd} {
			ws[e] = c.ns(isa.OpTensorTensor, e, isa.Attrs{ALU0: isa.ALUMultiply}, x, x, x)
		}
		steps = append(steps, ws)
		if n.Bias {
			steps = append(steps, ws)
		}
		return assignRows(base, steps)
	}
	busiest := func(l [isa.NumEngines]float64) float64 {
		m := 0.0
		for _, v := range l {
			m = math.Max(m, v)
		}
		return m
	}
	if p.Stats == NormStatsAuto {
		p.auto["norm_stats"] = true
		_, lb := try(NormStatsBN)
		_, la := try(NormStatsAccumulate)
		p.Stats = NormStatsBN
		if busiest(la) < busiest(lb) {
			p.Stats = NormStatsAccumulate
		}
	}
	engs, load := try(p.Stats)
	p.BusyNs = load
	i := 0
	if p.Stats == NormStatsAccumulate && !n.RMS {
		p.SumEngine, i = engs[0], 1
	}
	p.NormEngine, p.WEngine = engs[i], engs[i+1]
	if n.Bias {
		p.BEngine = engs[i+2]
	}
	// The small per-row ops go to the less loaded of VectorE and GpSimd.
	p.Small = isa.EngineVector
	if load[isa.EngineGpSimd] < load[isa.EngineVector] {
		p.Small = isa.EngineGpSimd
	}
}

// broadcastRows loads the 1-D HBM tensor src [cols] into every partition
// of dst [parts, cols] with one dma_gather whose index tile idx
// ([parts, 1] int32) is all zeros: every partition picks row 0 of src seen
// as [1, cols]. The tile IR has no zero-stride (broadcast) access, and one
// transfer over every partition keeps all the DMA engines busy, where a
// chain of partition-doubling copies would take ~8 transfer latencies.
// The descriptors are the host's (dge=none): the index is a constant.
func broadcastRows(b *Block, dst, src, idx *Tile, opID int32) {
	one := &Rearrange{In: [][]string{{"o", "c"}}, Out: []string{"o", "c"}, Sizes: map[string]int64{"o": 1}}
	b.Add(&Op{Opcode: isa.OpDMAGather, Engine: isa.EngineGpSimd, Outs: []Access{dst.All()}, Ins: []Access{src.All().Rearranged(one), idx.All()},
		Attrs: isa.Attrs{DGE: isa.DGENone}, DGESet: true, OpID: opID})
}

// rowPipeline builds the loop over nr tiles that load and compute run in:
// iteration r loads tile r and runs stage k of tile r - lead - k, so that
// the loads, issued by Sync like the stores, run lead tiles ahead of the
// compute (a store never holds up a later load in Sync's stream), and an
// engine that works in two stages of a tile does the first stage of the
// next tile before it waits for the other engines' part of this one.
func rowPipeline(b *Block, name string, nr, lead int64, load func(b *Block, j Expr), stages ...func(b *Block, j Expr)) {
	last := lead + int64(len(stages)) - 1
	b.For(name, C(0), C(nr+last), Sequential, func(b *Block, r Expr) {
		b.When(r.Lt(C(nr)), func(b *Block) { load(b, r) })
		for k, st := range stages {
			d := lead + int64(k)
			cond := r.Ge(C(d)).And(r.Lt(C(nr + d)))
			if d == 0 {
				cond = r.Lt(C(nr))
			}
			b.When(cond, func(b *Block) { st(b, r.Sub(C(d))) })
		}
	})
}

// autoRowBuffers is the number of row slots a row pipeline gets: up to 8
// (the loads then run 6 tiles ahead, enough to cover the DMA latency and
// the compute of a tile), no more than the row tiles need, at least 2, and
// as many as fit next to fixed bytes per partition.
func autoRowBuffers(fixed, slot, tiles, capacity int64) int64 {
	nb := min(int64(8), tiles+2)
	for nb > 2 && add(fixed, mul(nb, slot)) > capacity {
		nb--
	}
	return max(nb, 2)
}

// rowLead is the lookahead of a pipeline of nbuf slots and the given
// number of compute stages: the load of tile r waits for the store of tile
// r - nbuf, which Sync then issued two iterations earlier.
func rowLead(nbuf, stages int64) int64 { return max(nbuf-1-stages, 0) }

// Kernel writes the plan: W (and B) are broadcast to every partition once;
// then each tile of 128 rows is loaded, its statistics computed, normalised
// in place, scaled (and shifted), and stored, the loads running ahead of
// the compute over NBuf row slots.
func (p *NormPlan) Kernel() (*Kernel, error) {
	n, sdt := p.N, p.ScalarDType
	name := "layernorm"
	if n.RMS {
		name = "rmsnorm"
	}
	k := New(name)
	dt := n.DType
	x := k.Tensor("X", dt, Input, n.Rows, n.Cols)
	w := k.Tensor("W", dt, Input, n.Cols)
	var bias *Tile
	if n.Bias {
		bias = k.Tensor("B", dt, Input, n.Cols)
	}
	out := k.Tensor("OUT", dt, Output, n.Rows, n.Cols)
	parts := min(n.Rows, 128)
	root := k.Root()
	id := p.opID
	idx := root.Tile("bc_idx", isa.MemSBUF, isa.INT32, []int64{parts, 1}, 1)
	root.Add(&Op{Opcode: isa.OpMemset, Engine: isa.EngineGpSimd, Outs: []Access{idx.All()}, OpID: id})
	wt := root.Tile("w_bc", isa.MemSBUF, dt, []int64{parts, n.Cols}, 1)
	broadcastRows(root, wt, w, idx, id)
	var bt *Tile
	if n.Bias {
		bt = root.Tile("b_bc", isa.MemSBUF, dt, []int64{parts, n.Cols}, 1)
		broadcastRows(root, bt, bias, idx, id)
	}
	eps := root.Tile("eps", isa.MemSBUF, isa.FP32, []int64{parts, 1}, 1)
	root.Add(&Op{Opcode: isa.OpMemset, Engine: p.Small, Outs: []Access{eps.All()}, Attrs: isa.Attrs{Value: n.Eps}, OpID: id})
	var junk *Tile
	if p.Stats == NormStatsAccumulate {
		junk = root.Tile("junk", isa.MemSBUF, dt, []int64{parts, n.Cols}, 1)
	}
	nb := p.NBuf
	xs := root.Tile("x", isa.MemSBUF, dt, []int64{parts, nb, n.Cols}, 1)
	nr := ceilDiv(n.Rows, 128)
	nbuf := int(nb)
	fmax := p.BNFree
	nch := ceilDiv(n.Cols, fmax)
	invC := 1 / float64(n.Cols)
	rowsOf := func(j Expr) Expr { return Min(C(128), C(n.Rows).Sub(j.MulC(128))) }
	slot := func(j Expr) Access { return xs.At(R(C(0), rowsOf(j)), I(j.Mod(C(nb)))) }
	load := func(b *Block, j Expr) {
		b.Add(&Op{Opcode: isa.OpDMACopy, Engine: isa.EngineSync, Outs: []Access{slot(j)}, Ins: []Access{x.At(RS(j.MulC(128), rowsOf(j)))}, OpID: id})
	}
	// The per-row scale and shift pass from the statistics stage to the
	// normalisation stage, one tile later: slot j % NBuf of tiles declared
	// once.
	rstdT := root.Tile("rstd", isa.MemSBUF, sdt, []int64{parts, nb, 1}, 1)
	var shiftT *Tile
	if !n.RMS {
		shiftT = root.Tile("shift", isa.MemSBUF, sdt, []int64{parts, nb, 1}, 1)
	}
	rowSlot := func(t *Tile, j Expr) Access { return t.At(R(C(0), rowsOf(j)), I(j.Mod(C(nb)))) }
	stats := func(b *Block, j Expr) {
		rows := rowsOf(j)
		t := slot(j)
		rs := func(t *Tile) Access { return t.At(R(C(0), rows)) }
		op := func(o *Op) { o.OpID = id; b.Add(o) }
		// Statistics: rstd = rsqrt(mean(x^2) + eps) for RMSNorm, or
		// rstd = rsqrt(var + eps) and shift = -mean*rstd for LayerNorm.
		// under is the value under the square root (before eps).
		var under, mean Access
		if p.Stats == NormStatsBN {
			st := b.Tile("bnst", isa.MemSBUF, isa.FP32, []int64{parts, nch, bnStatsWidth}, nbuf)
			mv := b.Tile("mv", isa.MemSBUF, isa.FP32, []int64{parts, bnAggrWidth}, nbuf)
			b.For("j", C(0), C(nch), Parallel, func(b *Block, c Expr) {
				cols := Min(C(fmax), C(n.Cols).Sub(c.MulC(fmax)))
				b.Add(&Op{Opcode: isa.OpBNStats, Engine: isa.EngineVector, Outs: []Access{st.At(R(C(0), rows), I(c))},
					Ins: []Access{xs.At(R(C(0), rows), I(j.Mod(C(nb))), RS(c.MulC(fmax), cols))}, OpID: id})
			})
			op(&Op{Opcode: isa.OpBNAggr, Engine: isa.EngineVector, Outs: []Access{rs(mv)}, Ins: []Access{rs(st)}})
			mean = mv.At(R(C(0), rows), RS(C(0), C(1)))
			under = mv.At(R(C(0), rows), RS(C(1), C(1)))
			if n.RMS {
				// mean(x^2) = mean^2 + var.
				ms := b.Tile("ms", isa.MemSBUF, isa.FP32, []int64{parts, 1}, nbuf)
				op(&Op{Opcode: isa.OpScalarTensorTensor, Engine: p.Small, Outs: []Access{rs(ms)}, Ins: []Access{mean, under, mean},
					Attrs: isa.Attrs{ALU0: isa.ALUMultiply, ALU1: isa.ALUAdd}})
				under = rs(ms)
			}
		} else {
			// The sum of squares from ScalarE's accumulator.
			op(&Op{Opcode: isa.OpActivation, Engine: isa.EngineScalar, Outs: []Access{rs(junk)}, Ins: []Access{t},
				Attrs: isa.Attrs{Func: isa.ActSquare, Scale: 1, Accumulate: isa.ALUAdd}})
			ss := b.Tile("ss", isa.MemSBUF, isa.FP32, []int64{parts, 1}, nbuf)
			op(&Op{Opcode: isa.OpActReadAccumulator, Engine: isa.EngineScalar, Outs: []Access{rs(ss)}})
			ms := b.Tile("ms", isa.MemSBUF, isa.FP32, []int64{parts, 1}, nbuf)
			under = rs(ms)
			if n.RMS {
				op(&Op{Opcode: isa.OpTensorScalar, Engine: p.Small, Outs: []Access{rs(ms)}, Ins: []Access{rs(ss)},
					Attrs: isa.Attrs{ALU0: isa.ALUMultiply, Imm0: invC}})
			} else {
				sum := b.Tile("sum", isa.MemSBUF, isa.FP32, []int64{parts, 1}, nbuf)
				mn := b.Tile("mean", isa.MemSBUF, isa.FP32, []int64{parts, 1}, nbuf)
				m2 := b.Tile("mean2", isa.MemSBUF, isa.FP32, []int64{parts, 1}, nbuf)
				op(&Op{Opcode: isa.OpTensorReduce, Engine: p.SumEngine, Outs: []Access{rs(sum)}, Ins: []Access{t},
					Attrs: isa.Attrs{ALU0: isa.ALUAdd, Axis: 1}})
				op(&Op{Opcode: isa.OpTensorScalar, Engine: p.Small, Outs: []Access{rs(mn)}, Ins: []Access{rs(sum)},
					Attrs: isa.Attrs{ALU0: isa.ALUMultiply, Imm0: invC}})
				op(&Op{Opcode: isa.OpTensorTensor, Engine: p.Small, Outs: []Access{rs(m2)}, Ins: []Access{rs(mn), rs(mn)},
					Attrs: isa.Attrs{ALU0: isa.ALUMultiply}})
				// var = ss/C - mean^2.
				op(&Op{Opcode: isa.OpScalarTensorTensor, Engine: p.Small, Outs: []Access{rs(ms)}, Ins: []Access{rs(ss), rs(m2)},
					Attrs: isa.Attrs{ALU0: isa.ALUMultiply, Imm0: invC, ALU1: isa.ALUSubtract}})
				mean = rs(mn)
			}
		}
		// rstd = rsqrt(under + eps): the bias operand is eps.
		op(&Op{Opcode: isa.OpActivation, Engine: isa.EngineScalar, Outs: []Access{rowSlot(rstdT, j)}, Ins: []Access{under, rs(eps)},
			Attrs: isa.Attrs{Func: isa.ActRsqrt, Scale: 1}})
		if !n.RMS {
			// shift = (mean * -1) * rstd.
			op(&Op{Opcode: isa.OpScalarTensorTensor, Engine: p.Small, Outs: []Access{rowSlot(shiftT, j)}, Ins: []Access{mean, rowSlot(rstdT, j)},
				Attrs: isa.Attrs{ALU0: isa.ALUMultiply, Imm0: -1, ALU1: isa.ALUMultiply}})
		}
	}
	apply := func(b *Block, j Expr) {
		rows := rowsOf(j)
		t := slot(j)
		rs := func(t *Tile) Access { return t.At(R(C(0), rows)) }
		op := func(o *Op) { o.OpID = id; b.Add(o) }
		// The per-partition operands of tensor_scalar stand for its
		// immediates: x * rstd [+ shift].
		norm := &Op{Opcode: isa.OpTensorScalar, Engine: p.NormEngine, Outs: []Access{t}, Ins: []Access{t, rowSlot(rstdT, j)},
			Attrs: isa.Attrs{ALU0: isa.ALUMultiply}}
		if !n.RMS {
			norm.Ins = append(norm.Ins, rowSlot(shiftT, j))
			norm.Attrs.ALU1 = isa.ALUAdd
		}
		op(norm)
		op(&Op{Opcode: isa.OpTensorTensor, Engine: p.WEngine, Outs: []Access{t}, Ins: []Access{t, rs(wt)}, Attrs: isa.Attrs{ALU0: isa.ALUMultiply}})
		if n.Bias {
			op(&Op{Opcode: isa.OpTensorTensor, Engine: p.BEngine, Outs: []Access{t}, Ins: []Access{t, rs(bt)}, Attrs: isa.Attrs{ALU0: isa.ALUAdd}})
		}
		op(&Op{Opcode: isa.OpDMACopy, Engine: isa.EngineSync, Outs: []Access{out.At(RS(j.MulC(128), rows))}, Ins: []Access{t}})
	}
	rowPipeline(root, "r", nr, rowLead(nb, 2), load, stats, apply)
	if err := k.Finish(); err != nil {
		return nil, fmt.Errorf("internal error: the %s kernel: %w", name, err)
	}
	return k, nil
}

// EstimateNs is the norm kernel's estimated time by itself, for choosing
// between it and a norm fused into the GEMM before it: each row tile
// loaded and stored (a transfer's fixed latency both ways, the bytes at
// the DMA engines' rate), pipelined with the busiest engine's work over
// the row tiles.
func (p *NormPlan) EstimateNs(tg *sched.Target) float64 {
	n := p.N
	bw := max(DMAGBps(tg), 1)
	busy := 0.0
	for _, v := range p.BusyNs {
		busy = max(busy, v)
	}
	tiles := float64(ceilDiv(n.Rows, 128))
	bytes := 2 * float64(n.Rows*n.Cols*int64(n.DType.Bytes()))
	return 2*DMALatencyNs(tg) + max(bytes/bw, tiles*busy) + busy
}

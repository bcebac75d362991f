package kernels

import (
	"fmt"
	"sort"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/sched"
	. "github.com/trnsim/trnsim/workloads/tile"
)

// Quantised weights (GEMM.Dequant), as the Neuron compiler runs
// weight-only quantisation: B streams from HBM at one byte per element
// (int8, or FP8 where TensorE has no FP8 mode), so a weight-bound GEMM
// (decode) moves half of BF16's bytes; each B block is converted to the
// matmul dtype in SBUF by one instruction per K tile, on the engine or
// engines GEMMOptions.Dequantize names, and TensorE multiplies in BF16.
//
// The scale is per output channel: one value per column of B. B's K rows
// lie on the partitions, so a column's scale runs along the free
// dimension, where neither ScalarE's per-partition activation scale nor
// tensor_scalar's per-partition operand can apply it; scaling the weights
// would take a tensor_tensor with the scales broadcast to every partition
// over all K x N elements. It commutes with the matmul, (A Wq) diag(s) =
// A (Wq diag(s)), so the conversion is a plain cast (exact for int8 in
// BF16) and the result block, M x N elements instead of K x N, is
// multiplied by the scales on VectorE before the epilogue. The scales are
// an HBM input SCALE [1, N] in Out, loaded once per N block into the
// result's partitions.

// DequantEngine is the engine that converts quantised weight tiles.
type DequantEngine uint8

// Dequantisation engines.
const (
	// DequantAuto leaves each conversion to the scheduler (any
	// tensor_copy: VectorE, ScalarE or GpSimd, whichever it estimates
	// finishes it first), which spreads them over the three.
	DequantAuto DequantEngine = iota
	// DequantVector and DequantGpSimd convert with tensor_copy,
	// DequantScalar with an activation (copy), as NKI does on NeuronCore-v2,
	// where ScalarE has no tensor_copy.
	DequantVector
	DequantScalar
	DequantGpSimd
	// DequantAlternate alternates ScalarE and GpSimd by K tile: the two
	// engines whose streams hold nothing that waits for the matmuls but
	// the stores (VectorE evacuates), at the same rate on every
	// generation.
	DequantAlternate
	// DequantAlternateScalar gives ScalarE two K tiles of every three and
	// GpSimd the third: on NeuronCore-v2, where VectorE and GpSimd share
	// an SBUF port (S1), GpSimd's share delays VectorE's evacuations.
	DequantAlternateScalar
)

func (d DequantEngine) String() string {
	return [...]string{"auto", "vector", "scalar", "gpsimd", "alternate", "alternate_scalar"}[d]
}

// ParseDequantEngine reads a dequantisation engine's name.
func ParseDequantEngine(s string) (DequantEngine, bool) {
	for d := DequantAuto; d <= DequantAlternateScalar; d++ {
		if d.String() == s {
			return d, true
		}
	}
	return 0, false
}

// dequantSearch is the order the plan search tries the engines in (ties
// go to the first). DequantAuto is not among them: the scheduler assigns
// each conversion when it compiles, by estimated finish, and sends some to
// VectorE, where they queue behind evacuations that wait for the matmuls
// (the estimate's even spread over three engines does not happen).
var dequantSearch = []DequantEngine{DequantAlternate, DequantAlternateScalar, DequantScalar, DequantGpSimd, DequantVector}

// checkDequant checks a GEMM's quantised weights.
func checkDequant(g GEMM) error {
	if !g.Dequant {
		return nil
	}
	switch {
	case g.WeightDType != isa.INT8 && !g.WeightDType.IsFP8():
		return fmt.Errorf("gemm: quantised weights are int8 or an FP8 dtype, not %s", g.WeightDType)
	case g.In != isa.BF16 && g.In != isa.FP16 && g.In != isa.FP32:
		return fmt.Errorf("gemm: quantised weights are dequantised to bf16, fp16 or fp32, not %s", g.In)
	case max(g.Batch, 1) > 1:
		return fmt.Errorf("gemm: quantised weights (with their scales) take one GEMM, not a batch of %d", g.Batch)
	}
	return nil
}

// weightQueue is the DMA queue the loads of quantised weights keep to, so
// that they come in the order the conversions need them and a block
// loaded ahead never holds up the activations' loads behind it in a
// queue: the fourth last the scheduler hands out (the elementwise kernel
// pins the last three), or -1 without quantised weights or with fewer
// than four queues.
func weightQueue(tg *sched.Target, g GEMM) int {
	if !g.Dequant {
		return -1
	}
	return streamQueue(tg)
}

// streamQueue is the DMA queue weights streamed ahead of their use keep
// to (quantised weights, a streamed B): the fourth last the scheduler
// hands out (the elementwise kernel pins the last three), or -1 with fewer
// than four queues.
func streamQueue(tg *sched.Target) int {
	n := tg.Limits.DMAQueues
	if n < 4 {
		return -1
	}
	classes := max(tg.DMAQoSClasses, 1)
	var order []int
	for cl := 0; cl < classes; cl++ {
		for q := cl; q < n; q += classes {
			order = append(order, q)
		}
	}
	return order[n-4]
}

// foldScale reports whether the scales are applied by the evacuations
// (VectorE's: with K in one block a multiply of the PSUM tile by the
// scales instead of its copy, at the copy's cost; otherwise a multiply of
// each tile right after the last K block's add), not by a pass over the
// finished block (the other evacuation choices).
func (p *GEMMPlan) foldScale() bool { return p.G.Dequant && p.Evacuate == EvacVector }

// deferStores reports whether an N block's results are stored after the
// next N block's first multiplies (loop order nkm, quantised weights, two
// result buffers or more, so the next block's results have a slot of
// their own).
func (p *GEMMPlan) deferStores() bool { return p.G.Dequant && p.Order == OrderNKM && p.NRes >= 2 }

// scaleRows returns the partitions the scales are loaded into: the result
// block's rows.
func (p *GEMMPlan) scaleRows() int64 { return min(p.G.M, 128) }

// scaleGather reports whether the scales reach their partitions by a
// gather of one row into each (more than one row), not a plain copy.
func (p *GEMMPlan) scaleGather() bool { return p.scaleRows() > 1 }

// scaleSBUFBytes returns the SBUF bytes per partition of the scales of an
// N block of bn columns (two rotate), and the gather's index.
func (p *GEMMPlan) scaleSBUFBytes(bn int64) int64 {
	if !p.G.Dequant {
		return 0
	}
	n := 2 * roundUp(bn*int64(p.G.Out.Bytes()), 64)
	if p.scaleGather() {
		n += 64
	}
	return n
}

// scaleHBMBytes returns the bytes the scales' loads read: every N block's
// columns once into each of the result's partitions.
func (p *GEMMPlan) scaleHBMBytes() int64 {
	if !p.G.Dequant {
		return 0
	}
	return mul(p.scaleRows(), p.G.N, int64(p.G.Out.Bytes()))
}

// Conversion engines, as estimator.dequantBlock indexes them.
const (
	deqV  = iota // VectorE tensor_copy
	deqSA        // ScalarE activation (DequantScalar)
	deqG         // GpSimd tensor_copy
	deqST        // ScalarE tensor_copy (where DequantAuto sends one)
	numDeq
)

type deqShape struct {
	eng        int
	rows, cols int64
	dt         isa.DType // the result's dtype (the scales' multiply)
}

// scaleMul is deqShape.eng for the scales' multiply on VectorE.
const scaleMul = numDeq

// dequantBlock returns the conversion of a B block of ks x ns, in ns, if
// it all ran on each engine (indexed deqV, deqSA, deqG, deqST).
func (e *estimator) dequantBlock(ks, ns int64) [numDeq]float64 {
	var out [numDeq]float64
	kf, kl := pieces(ks, 128)
	for eng := 0; eng < numDeq; eng++ {
		out[eng] = float64(kf) * e.dequantCost(eng, 128, ns)
		if kl > 0 {
			out[eng] += e.dequantCost(eng, kl, ns)
		}
	}
	return out
}

// scaleBlock returns the scales' multiply of a result block of ms x ns
// in dtype dt on VectorE (a pass per M tile), in ns.
func (e *estimator) scaleBlock(ms, ns int64, dt isa.DType) float64 {
	mf, ml := pieces(ms, 128)
	t := float64(mf) * e.scaleCost(128, ns, dt)
	if ml > 0 {
		t += e.scaleCost(ml, ns, dt)
	}
	return t
}

func (e *estimator) scaleCost(rows, cols int64, dt isa.DType) float64 {
	key := deqShape{scaleMul, rows, cols, dt}
	if c, ok := e.deq[key]; ok {
		return c
	}
	view := func(dt isa.DType) isa.Operand {
		b := isa.Buffer{Mem: isa.MemSBUF, DType: dt, Shape: []int64{rows, cols}}
		o, _ := b.View(0)
		return o
	}
	return e.memoCost(key, &isa.Body{Op: isa.OpTensorTensor, Engine: isa.EngineVector, Outs: []isa.Operand{view(dt)},
		Ins: []isa.Operand{view(dt), view(e.g.Out)}, Attrs: isa.Attrs{ALU0: isa.ALUMultiply}})
}

// memoCost returns body's issue interval (ns) from the cost table,
// memoised under key.
func (e *estimator) memoCost(key deqShape, body *isa.Body) float64 {
	var env isa.CostEnv
	c := e.tg.Cost.CostOf(&isa.Instruction{Body: body}, 0, &env)
	ghz := e.tg.ClockGHz[body.Engine]
	if ghz <= 0 {
		ghz = 1
	}
	ns := float64(c.IntervalCycles) / ghz
	if e.deq == nil {
		e.deq = map[deqShape]float64{}
	}
	e.deq[key] = ns
	return ns
}

// dequantCost is one conversion instruction of rows x cols, from the cost
// table.
func (e *estimator) dequantCost(eng int, rows, cols int64) float64 {
	key := deqShape{eng, rows, cols, 0}
	if c, ok := e.deq[key]; ok {
		return c
	}
	op, engine := isa.OpTensorCopy, [...]isa.Engine{isa.EngineVector, isa.EngineScalar, isa.EngineGpSimd, isa.EngineScalar}[eng]
	attrs := isa.Attrs{}
	if eng == deqSA {
		op, attrs = isa.OpActivation, isa.Attrs{Func: isa.ActCopy, Scale: 1}
	}
	view := func(dt isa.DType) []isa.Operand {
		b := isa.Buffer{Mem: isa.MemSBUF, DType: dt, Shape: []int64{rows, cols}}
		o, _ := b.View(0)
		return []isa.Operand{o}
	}
	return e.memoCost(key, &isa.Body{Op: op, Engine: engine, Outs: view(e.g.In), Ins: view(e.g.WeightDType), Attrs: attrs})
}

// spread adds conversion work (costs: its time on each engine alone) to
// the loads of VectorE, ScalarE and GpSimd: all of it on a pinned engine;
// with DequantAuto shared out so that the engines that take part finish
// together (the scheduler sends each conversion to the engine it
// estimates finishes first), the least loaded first.
func (d DequantEngine) spread(loads [3]float64, costs [numDeq]float64) [3]float64 {
	switch d {
	case DequantVector:
		loads[0] += costs[deqV]
		return loads
	case DequantScalar:
		loads[1] += costs[deqSA]
		return loads
	case DequantGpSimd:
		loads[2] += costs[deqG]
		return loads
	case DequantAlternate:
		loads[1] += costs[deqSA] / 2
		loads[2] += costs[deqG] / 2
		return loads
	case DequantAlternateScalar:
		loads[1] += costs[deqSA] * 2 / 3
		loads[2] += costs[deqG] / 3
		return loads
	}
	c := [3]float64{costs[deqV], costs[deqST], costs[deqG]}
	if c[0] <= 0 || c[1] <= 0 || c[2] <= 0 {
		return loads // no work
	}
	idx := []int{0, 1, 2}
	sort.SliceStable(idx, func(a, b int) bool { return loads[idx[a]] < loads[idx[b]] })
	var sumInv, sumLC float64
	for k := 0; k < 3; k++ {
		i := idx[k]
		sumInv += 1 / c[i]
		sumLC += loads[i] / c[i]
		// The level at which the k+1 least loaded engines share the work.
		level := (1 + sumLC) / sumInv
		if k == 2 || level <= loads[idx[k+1]] {
			for _, j := range idx[:k+1] {
				loads[j] = max(loads[j], level)
			}
			return loads
		}
	}
	return loads
}

// first returns the time of a conversion on the engine that would do it
// (DequantAuto: the fastest).
func (d DequantEngine) first(costs [numDeq]float64) float64 {
	switch d {
	case DequantVector:
		return costs[deqV]
	case DequantScalar, DequantAlternateScalar:
		return costs[deqSA]
	case DequantGpSimd, DequantAlternate:
		return costs[deqG]
	}
	return min(costs[deqV], costs[deqST], costs[deqG])
}

// dequantOp converts a quantised weight tile src into dst (in the matmul
// dtype) on the plan's engine; tileNo counts the K tiles converted
// (DequantAlternate's parity).
func (p *GEMMPlan) dequantOp(b *Block, dst, src Access, tileNo Expr) {
	switch p.Dequantize {
	case DequantAlternate, DequantAlternateScalar:
		onScalar := tileNo.Mod(C(2)).Eq(C(0))
		if p.Dequantize == DequantAlternateScalar {
			onScalar = tileNo.Mod(C(3)).Ne(C(2))
		}
		b.If(onScalar, func(b *Block) {
			b.Add(&Op{Opcode: isa.OpActivation, Engine: isa.EngineScalar, Outs: []Access{dst}, Ins: []Access{src},
				Attrs: isa.Attrs{Func: isa.ActCopy, Scale: 1}, OpID: p.opID})
		}, func(b *Block) {
			b.Add(&Op{Opcode: isa.OpTensorCopy, Engine: isa.EngineGpSimd, Outs: []Access{dst}, Ins: []Access{src}, OpID: p.opID})
		})
	case DequantScalar:
		b.Add(&Op{Opcode: isa.OpActivation, Engine: isa.EngineScalar, Outs: []Access{dst}, Ins: []Access{src},
			Attrs: isa.Attrs{Func: isa.ActCopy, Scale: 1}, OpID: p.opID})
	case DequantVector:
		b.Add(&Op{Opcode: isa.OpTensorCopy, Engine: isa.EngineVector, Outs: []Access{dst}, Ins: []Access{src}, OpID: p.opID})
	case DequantGpSimd:
		b.Add(&Op{Opcode: isa.OpTensorCopy, Engine: isa.EngineGpSimd, Outs: []Access{dst}, Ins: []Access{src}, OpID: p.opID})
	default:
		b.Add(&Op{Opcode: isa.OpTensorCopy, Engine: isa.EngineVector, Any: true, Outs: []Access{dst}, Ins: []Access{src}, OpID: p.opID})
	}
}

// slotted is a tile, or (has) one slot of a tile whose second dimension
// counts slots: the quantised weights' rotating B blocks.
type slotted struct {
	t    *Tile
	slot Expr
	has  bool
}

// At is the tile's access, the slot's index inserted after the partition
// range.
func (s slotted) At(rs ...Range) Access {
	if !s.has {
		return s.t.At(rs...)
	}
	return s.t.At(append([]Range{rs[0], I(s.slot)}, rs[1:]...)...)
}

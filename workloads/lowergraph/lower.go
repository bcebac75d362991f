// Package lowergraph lowers an op graph (package graph) to one tile-IR
// kernel: every graph tensor gets an HBM tensor, token-major ([tokens,
// features], the layout the projections write), each op is planned by its
// kernel (the GEMM's plan search, the norm, attention and elementwise
// kernels) and inlined into the one kernel with its op id, and views
// (reshape, permute, the heads of a projection) cost nothing: they name
// the same HBM tensor. The scheduler then orders the ops by their data.
package lowergraph

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/graph"
	"github.com/trnsim/trnsim/workloads/kernels"
	"github.com/trnsim/trnsim/workloads/sched"
	"github.com/trnsim/trnsim/workloads/tile"
)

// Op is a graph op as lowered: its op id (what reports attribute time to),
// name, kind, FLOPs and least HBM bytes.
type Op struct {
	ID          int32
	Name, Kind  string
	FLOPs       int64
	MinHBMBytes int64
}

// Result is the lowered graph.
type Result struct {
	Kernel *tile.Kernel
	Ops    []Op
	// Notes are lowering choices in words (copies a kernel needed, ops
	// fused).
	Notes []string
	// HandOffs counts the results kept in SBUF for the Linears after
	// them (handOff).
	HandOffs int
}

// Error is an op the lowering cannot lower, named as the graph names it;
// Err is the kernel's error it reports, if any (a working set that does
// not fit).
type Error struct {
	Op, Kind, Msg string
	Err           error
}

func (e *Error) Error() string { return fmt.Sprintf("%s (%s): %s", e.Op, e.Kind, e.Msg) }

// Unwrap returns the kernel's error.
func (e *Error) Unwrap() error { return e.Err }

type lowering struct {
	g       *graph.Graph
	tg      *sched.Target
	k       *tile.Kernel
	store   map[*graph.Tensor]*tile.Tile
	names   map[string]int
	weights map[*graph.Tensor]*tile.Tile // Linear weights, stored [in, out]
	casts   map[*graph.Tensor]*tile.Tile // activations cast for FP8 matmuls
	res     *Result
	op      *graph.Op
	id      int32
	inlined int // kernels inlined so far (their names' prefix)
	// fusions are the Linears' epilogues; fusedInto the ops they absorb.
	fusions   map[*graph.Op]*fusion
	fusedInto map[*graph.Op]*graph.Op
	// ranks is the plan's rank count (Options.Ranks), group its
	// collectives' group size (Options.GroupSize).
	ranks, group int
	// quant holds the dequantised Linears' scales (quant.go).
	quant *quantState
	// lastStart is where the statements of the last kernel inlined begin
	// in the kernel's body, and lastSBUF the SBUF per partition its tiles
	// take at most (their sum): a Linear's weight prefetch moves before
	// them if it fits beside them (prefetch.go).
	lastStart int
	lastSBUF  int64
	// kernels are the kernels inlined so far, in program order (the last
	// one's start and SBUF are lastStart and lastSBUF): how far back a
	// Linear's weight prefetch may move (prefetch.go).
	kernels []inlined
	// slotTurn is the SBUF region the next prefetched weight slots take
	// (prefetch.go).
	slotTurn int
	// onchip holds the activations a Linear's GEMM left in SBUF besides
	// HBM (kernels.GEMMPlan.KeepResult), for the Linears after it that
	// read them as A in place (ReadAOnChip).
	onchip map[*graph.Tensor]*tile.Tile
	// onchipReaders are the Linears that may read them so (nextReaders).
	onchipReaders map[*graph.Op]bool
	noHandOff     bool
	// keepPlan plans the current Linear with SBUF left for its whole
	// result (kernels.GEMMOptions.KeepResult).
	keepPlan bool
}

// Options are the lowering's choices.
type Options struct {
	// NoFusion lowers every op through its own kernel (each through HBM),
	// to measure what fusion buys.
	NoFusion bool
	// Ranks > 1 runs the graph (one rank's part of a parallel plan) on
	// every rank of a cores loop, its collectives over those ranks, or,
	// with GroupSize, over consecutive groups of that many (one per
	// replica).
	Ranks, GroupSize int
	// NoSBUFHandOff stores every Linear's result to HBM for the next to
	// load, even where it could read it in SBUF (handOff), to measure
	// what the hand-off buys.
	NoSBUFHandOff bool
}

// Lower lowers g for the target.
func Lower(g *graph.Graph, tg *sched.Target, name string, opts Options) (*Result, error) {
	l := &lowering{g: g, tg: tg, k: tile.New(sanitize(name)), store: map[*graph.Tensor]*tile.Tile{}, names: map[string]int{},
		weights: map[*graph.Tensor]*tile.Tile{}, casts: map[*graph.Tensor]*tile.Tile{}, res: &Result{}, ranks: opts.Ranks, group: opts.GroupSize}
	l.fusions, l.fusedInto = map[*graph.Op]*fusion{}, map[*graph.Op]*graph.Op{}
	l.onchip, l.onchipReaders, l.noHandOff = map[*graph.Tensor]*tile.Tile{}, map[*graph.Op]bool{}, opts.NoSBUFHandOff
	if !opts.NoFusion {
		l.fusions, l.fusedInto = planFusions(g)
	}
	fused := 0
	for _, o := range g.Ops {
		l.op, l.id = o, int32(o.ID+1)
		if _, ok := l.fusedInto[o]; ok {
			// Done by the GEMM it is fused into; listed with no work.
			l.res.Ops = append(l.res.Ops, Op{ID: l.id, Name: o.Name, Kind: string(o.Kind), FLOPs: o.FLOPs(), MinHBMBytes: o.MinHBMBytes()})
			fused++
			continue
		}
		if err := l.lowerOp(o); err != nil {
			return nil, err
		}
		l.res.Ops = append(l.res.Ops, Op{ID: l.id, Name: o.Name, Kind: string(o.Kind), FLOPs: o.FLOPs(), MinHBMBytes: o.MinHBMBytes()})
	}
	if fused > 0 {
		l.res.Notes = append(l.res.Notes, fmt.Sprintf("%d ops fused into the GEMMs' epilogues (activations, SwiGLU, residual adds, post-norms)", fused))
	}
	if l.ranks > 1 {
		l.k = wrapRanks(l.k, l.ranks)
	}
	if err := l.k.Finish(); err != nil {
		return nil, fmt.Errorf("internal error: the lowered graph: %w", err)
	}
	l.res.Kernel = l.k
	return l.res, nil
}

func (l *lowering) errf(format string, args ...any) error {
	return &Error{Op: l.op.Name, Kind: string(l.op.Kind), Msg: fmt.Sprintf(format, args...)}
}

// wrapErr is errf of a kernel's error, kept for errors.As.
func (l *lowering) wrapErr(err error) error {
	return &Error{Op: l.op.Name, Kind: string(l.op.Kind), Msg: err.Error(), Err: err}
}

// sanitize makes a tile name of a module path.
func sanitize(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_', r >= '0' && r <= '9' && i > 0:
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// unique returns a tile name not used yet.
func (l *lowering) unique(name string) string {
	name = sanitize(name)
	n := l.names[name]
	l.names[name] = n + 1
	if n == 0 {
		return name
	}
	return fmt.Sprintf("%s_%d", name, n)
}

// rowsCols is a tensor's token-major storage: the leading dims as rows,
// the last as columns.
func rowsCols(t *graph.Tensor) (int64, int64) {
	if len(t.Shape) == 1 {
		return 1, t.Shape[0]
	}
	rows := int64(1)
	for _, d := range t.Shape[:len(t.Shape)-1] {
		rows *= d
	}
	return rows, t.Shape[len(t.Shape)-1]
}

func tileRole(t *graph.Tensor) tile.Role {
	switch {
	case t.Role == graph.Output:
		return tile.Output
	case t.Producer == nil:
		return tile.Input
	}
	return tile.Temp
}

// tensor2D returns t's HBM tensor as [rows, cols].
func (l *lowering) tensor2D(t *graph.Tensor) *tile.Tile {
	if s, ok := l.store[t]; ok {
		return s
	}
	r, c := rowsCols(t)
	s := l.k.Tensor(l.unique(t.Name), t.DType, tileRole(t), r, c)
	l.store[t] = s
	return s
}

// tensor1D returns t's HBM tensor as [elements].
func (l *lowering) tensor1D(t *graph.Tensor) *tile.Tile {
	if s, ok := l.store[t]; ok {
		return s
	}
	s := l.k.Tensor(l.unique(t.Name), t.DType, tileRole(t), t.Elements())
	l.store[t] = s
	return s
}

// alias makes out a view of in's storage.
func (l *lowering) alias(out, in *graph.Tensor) {
	l.store[out] = l.tensor2D(in)
}

// inlined is a kernel inlined into the body: where its statements begin
// (the statements up to the next kernel's are its own, any collective
// after them included, and prefetches moved before later kernels), the
// SBUF per partition its unpinned tiles take at most, and the slot
// region its weights' slots are pinned in (-1: none).
type inlined struct {
	start  int
	sbuf   int64
	region int
}

// inline adds a kernel for the current op.
func (l *lowering) inline(k *tile.Kernel, bind map[string]*tile.Tile) error {
	return l.inlineHead(k, bind, hoist{region: -1})
}

// inlineHead adds a kernel for the current op whose first statements
// prefetch what depends on nothing the work before computes
// (kernels.GEMMPlan.HeadStmts, AResidentStmts): they move before the
// kernels inlined last, whose work then hides their loads (h).
func (l *lowering) inlineHead(k *tile.Kernel, bind map[string]*tile.Tile, h hoist) error {
	l.inlined++
	sbuf := sbufFootprint(k)
	n0 := len(l.k.Body)
	if err := l.k.Root().Inline(k, fmt.Sprintf("op%d_k%d_", l.id, l.inlined), bind); err != nil {
		return fmt.Errorf("internal error: %s: %w", l.op.Name, err)
	}
	if h.head+h.aRes > 0 && h.head+h.aRes <= len(l.k.Body)-n0 {
		// A resident A's loads before the last kernel, then the weights'
		// head before the kernels from h.at on.
		l.move(n0+h.head, h.aRes, l.lastStart)
		l.move(n0+h.aRes, h.head, h.at)
		n0 += h.head + h.aRes
	}
	l.kernels = append(l.kernels, inlined{start: n0, sbuf: sbuf, region: h.region})
	l.lastStart, l.lastSBUF = n0, sbuf
	return nil
}

// move moves the n statements of the body from from to to (to <= from),
// the statements between after them, and the kernels' starts with them.
func (l *lowering) move(from, n, to int) {
	if n <= 0 || to >= from {
		return
	}
	body := l.k.Body
	moved := append([]tile.Stmt(nil), body[from:from+n]...)
	copy(body[to+n:from+n], body[to:from])
	copy(body[to:], moved)
	for i := range l.kernels {
		if s := l.kernels[i].start; s >= to && s < from {
			l.kernels[i].start += n
		}
	}
	if l.lastStart >= to && l.lastStart < from {
		l.lastStart += n
	}
}

// sbufFootprint is the most SBUF per partition a kernel's unpinned tiles
// can take at once: the sum of their slots, as the scheduler places them.
func sbufFootprint(k *tile.Kernel) int64 {
	var n int64
	for _, t := range k.Tiles {
		if t.Mem == isa.MemSBUF && t.Offset < 0 {
			n += (t.Bytes() + 63) / 64 * 64 * int64(max(t.Bufs, 1))
		}
	}
	return n
}

func (l *lowering) lowerOp(o *graph.Op) error {
	switch o.Kind {
	case graph.Reshape, graph.Permute:
		// Views of token-major storage: the heads of a projection
		// ([b, s, h*d] as [b, h, s, d]) and back. Attention, RoPE and the
		// cache append read the storage in that layout.
		l.alias(o.Outputs[0], o.Inputs[0])
		return nil
	case graph.Linear:
		return l.linear(o)
	case graph.MatMul:
		return l.matmul(o)
	case graph.AddOp, graph.MulOp:
		return l.binary(o)
	case graph.SiLU, graph.GELU, graph.ReLU, graph.Tanh:
		return l.unary(o)
	case graph.SwiGLU:
		return l.swiglu(o)
	case graph.Split:
		return l.split(o)
	}
	if f := extraLowerings[o.Kind]; f != nil {
		return f(l, o)
	}
	return l.errf("not lowered yet (lowered: %s)", strings.Join(loweredKinds(), ", "))
}

// extraLowerings are the kinds lowered in the other files of the package.
var extraLowerings = map[graph.Kind]func(l *lowering, o *graph.Op) error{}

func loweredKinds() []string {
	out := []string{"reshape", "permute", "linear", "matmul", "add", "mul", "silu", "gelu", "relu", "tanh", "swiglu", "split"}
	for k := range extraLowerings {
		out = append(out, string(k))
	}
	return out
}

// weightKN is a Linear weight [out, in] stored for the GEMM as the plan
// reads it: pre-tiled for its blocks (kernels.GEMMPlan.BShape, the layout
// a compiler lays weights out in ahead of time), shape. A weight shared
// with an embedding table (a tied LM head) gets a transposed copy of its
// own.
func (l *lowering) weightKN(w *graph.Tensor, shape []int64) *tile.Tile {
	if s, ok := l.weights[w]; ok {
		return s
	}
	name := w.Name
	for _, o := range l.g.Ops {
		if o.Kind == graph.Embedding && o.Inputs[1] == w {
			name += "_t"
			l.res.Notes = append(l.res.Notes, fmt.Sprintf("%s: the tied LM head reads a transposed copy of the embedding table", w.Name))
			break
		}
	}
	s := l.k.Tensor(l.unique(name), w.DType, tile.Input, shape...)
	l.weights[w] = s
	return s
}

func (l *lowering) linear(o *graph.Op) error {
	x, w, bias := o.Inputs[0], o.Inputs[1], o.Inputs[2]
	m, kd := rowsCols(x)
	n := w.Shape[0]
	g := kernels.GEMM{M: m, K: kd, N: n, In: w.DType, Out: x.DType, AMK: true}
	var a *tile.Tile
	if l.dequantised(w.DType, x.DType) {
		// Quantised weights, converted on chip (quant.go): the
		// activations stay as they are.
		g.In, g.Dequant, g.WeightDType = x.DType, true, w.DType
		a = l.tensor2D(x)
	} else {
		var err error
		if a, err = l.matmulInput(x, w.DType, m, kd); err != nil {
			return err
		}
	}
	out := o.Outputs[0]
	f := l.fusions[o]
	if f != nil {
		g.Epilogue, out = f.epi, f.out
	}
	plan, err := l.planLinear(g, w)
	if err == nil && f != nil && f.norm != nil && !l.normFusionPays(g, w, plan, f.norm) {
		err = errors.New("the norm's whole rows cost the GEMM more than the norm by itself")
	}
	if err != nil && f != nil && f.norm != nil {
		// No plan holds the norm's whole rows in one N block (or none
		// that is no slower): the norm is lowered on its own after all,
		// reading what the GEMM writes.
		delete(l.fusedInto, f.norm)
		f.absorbed = f.absorbed[:len(f.absorbed)-1]
		f.out, f.norm, f.nw, f.nb = f.norm.Inputs[0], nil, nil, nil
		f.epi.Norm = kernels.EpilogueNorm{}
		g.Epilogue, out = f.epi, f.out
		plan, err = l.planLinear(g, w)
	}
	if err != nil {
		return l.wrapErr(err)
	}
	keeps := f != nil || bias == nil
	if keeps && !l.noHandOff && !l.tensorParallel() && plan.PSUMK && !plan.CanKeepResult() && len(l.nextReaders(out)) > 0 &&
		ceilDiv(m, 128) <= keptMTiles && l.keptFits(m, n, g.Out) {
		// Several N blocks: a plan that leaves SBUF for the whole result
		// can keep it for the Linears after it, where it is estimated no
		// slower than the plan without that reserve.
		l.keepPlan = true
		kp, kerr := l.planLinear(g, w)
		l.keepPlan = false
		if kerr == nil && kp.CanKeepResult() && kp.Estimate(l.tg).TotalNs <= plan.Estimate(l.tg).TotalNs {
			plan = kp
		}
	}
	onchip := l.handOff(plan, x, a, out, keeps)
	k, err := plan.Kernel()
	if err != nil {
		return err
	}
	head := l.headOf(plan, k, a)
	wt := l.weightKN(w, plan.BShape())
	bindScale := func(bind map[string]*tile.Tile) map[string]*tile.Tile {
		if g.Dequant {
			bind["SCALE"] = l.weightScale(w, g.Out)
			l.noteDequant(plan)
		}
		for name, t := range onchip { // (every branch: an on-chip A left unbound would be a tile nothing writes)
			bind[name] = t
		}
		return bind
	}
	if f != nil {
		bind := bindScale(map[string]*tile.Tile{"A": a, "B": wt, "C": l.tensor2D(out)})
		if f.r != nil {
			bind["R"] = l.tensor2D(f.r)
		}
		if f.bias != nil {
			bind["BIAS"] = l.tensor1D(f.bias)
		}
		if f.nw != nil {
			bind["NW"] = l.tensor1D(f.nw)
		}
		if f.nb != nil {
			bind["NB"] = l.tensor1D(f.nb)
		}
		return l.inlineHead(k, bind, head)
	}
	target := l.tensor2D(out)
	if bias != nil {
		// The GEMM writes a temporary; the bias is added as it is copied
		// out.
		tmp := l.k.Tensor(l.unique(out.Name+"_nobias"), out.DType, tile.Temp, m, n)
		if err := l.inlineHead(k, bindScale(map[string]*tile.Tile{"A": a, "B": wt, "C": tmp}), head); err != nil {
			return err
		}
		return l.biasAdd(tmp, l.tensor2D(bias), target, m, n, out.DType)
	}
	return l.inlineHead(k, bindScale(map[string]*tile.Tile{"A": a, "B": wt, "C": target}), head)
}

// handOff sets a Linear's plan to hand activations over in SBUF, and
// returns the kernel's on-chip tiles to bind: A's rows read where the
// GEMM before left them (its output x, the plan's A a as stored, no cast),
// and the result kept for a Linear after it that reads out as its input
// (where the result is the op's output, keeps). Neither is a copy: the
// GEMM before evacuates into the tile its result is stored from, and this
// one transposes A out of it (kernels.GEMMPlan.KeepResult, ReadAOnChip),
// so a Linear after a Linear skips the store's and the load's latency and
// the load's bytes; the stores to HBM stay, for every other reader.
func (l *lowering) handOff(plan *kernels.GEMMPlan, x *graph.Tensor, a *tile.Tile, out *graph.Tensor, keeps bool) map[string]*tile.Tile {
	bind := map[string]*tile.Tile{}
	if t := l.onchip[x]; t != nil && l.onchipReaders[l.op] && a == l.store[x] && plan.CanReadAOnChip() && slices.Equal(t.Shape, plan.AOnChipShape()) && t.DType == plan.G.In {
		plan.ReadAOnChip()
		bind[kernels.AOnChipTileName] = t
	}
	if !keeps || l.noHandOff || l.tensorParallel() || !plan.CanKeepResult() || !l.keptFits(plan.G.M, plan.G.N, plan.ResultDType()) {
		// (With tensor parallelism, a kept tile moved where later result
		// blocks are placed, first fit by lifetime, onto blocks whose
		// stores were still running, and their evacuations waited for
		// them: BERT-large at TP8 on trn2, batch 2 x 64 tokens, 9.6%
		// slower. A big result would crowd the kernels it lives across.)
		return bind
	}
	readers := l.nextReaders(out)
	if len(readers) == 0 {
		return bind
	}
	for _, r := range readers {
		l.onchipReaders[r] = true
	}
	plan.KeepResult()
	l.res.HandOffs++
	t := l.k.Root().Tile(l.unique(out.Name+"_sbuf"), isa.MemSBUF, plan.ResultDType(), plan.ResultTileShape(), 1)
	bind[kernels.ResultTileName] = t
	l.onchip[out] = t
	return bind
}

// keptShare is the most of SBUF per partition (a keptShare-th) a result
// kept for the Linears after it may take; keptMTiles the most M tiles of
// one kept over several N blocks. With more, the readers were slower (the
// model matrix: GPT-2 at 384 tokens on inf2 +2.8%, BERT-base at 4 x 127 on
// trn1 +2.6%, each transposing more of A than it saves loading), and at
// two a review found the readers' plans mostly unable to read A in place,
// so that the writer's reserve was all cost (BERT-base at 2 x 77 on trn1
// +5.2%).
const (
	keptShare  = 8
	keptMTiles = 1
)

// keptFits reports whether a result of rows x cols of dt, its M tiles in
// the partitions, takes at most a keptShare-th of SBUF per partition.
func (l *lowering) keptFits(rows, cols int64, dt isa.DType) bool {
	return ceilDiv(rows, 128)*cols*int64(dt.Bytes()) <= l.tg.Limits.SBUFPartitionBytes/keptShare
}

// tensorParallel reports whether the graph runs on ranks that share its
// work (collectives over groups of more than one rank), not as copies.
func (l *lowering) tensorParallel() bool { return l.ranks > 1 && l.group != 1 }

// nextReaders returns the Linears that read t as their input right after
// the current op, with no other kernel between (ops fused away and views
// cost none): those may read it where the current op's GEMM leaves it, so
// that the tile holds SBUF only while they run.
func (l *lowering) nextReaders(t *graph.Tensor) []*graph.Op {
	i := l.op.ID
	if i < 0 || i >= len(l.g.Ops) || l.g.Ops[i] != l.op {
		return nil // (ops numbered otherwise than by their place)
	}
	var out []*graph.Op
	for _, c := range l.g.Ops[i+1:] {
		if _, fused := l.fusedInto[c]; fused || c.Kind == graph.Reshape || c.Kind == graph.Permute {
			continue
		}
		if c.Kind != graph.Linear || c.Inputs[0] != t {
			break
		}
		if w := c.Inputs[1]; w.DType == t.DType && !l.dequantised(w.DType, t.DType) {
			// (Only a reader of t itself: FP8 weights read a cast copy,
			// quantised ones are converted beside activations as they are.)
			out = append(out, c)
		}
	}
	return out
}

// matmulInput is the activation x [rows, cols] as a matmul with weights
// in wdt reads it: x itself, or, for FP8 weights, x cast to FP8 by a DMA
// pass (per tensor, as Neuron's FP8 matmuls take both operands in FP8),
// so TensorE runs the FP8 double-row mode (NeuronCore-v3). Elsewhere FP8
// weights, and int8 weights everywhere, are dequantised instead
// (quant.go) and never come here.
func (l *lowering) matmulInput(x *graph.Tensor, wdt isa.DType, rows, cols int64) (*tile.Tile, error) {
	if wdt == x.DType {
		return l.tensor2D(x), nil
	}
	if !wdt.IsFP8() || x.DType.IsFP8() {
		return nil, l.errf("weights in %s with activations in %s are not lowered yet", wdt, x.DType)
	}
	if !l.tg.Limits.FP8DoubleRow {
		return nil, l.errf("%s weights with activations in %s are not lowered (without FP8 double-row matmuls they are dequantised, which takes bf16, fp16 or fp32 activations)", wdt, x.DType)
	}
	if s, ok := l.casts[x]; ok {
		return s, nil
	}
	s := l.k.Tensor(l.unique(x.Name+"_"+wdt.String()), wdt, tile.Temp, rows, cols)
	if err := l.inline(castKernel(x.DType, wdt, rows, cols, cols, copyWindow{rows: rows, rowStep: 1}, l.id), map[string]*tile.Tile{"SRC": l.tensor2D(x), "DST": s}); err != nil {
		return nil, err
	}
	l.casts[x] = s
	return s, nil
}

// matmul lowers a (batched) matmul a [..., m, k] @ b [..., k, n] as the
// GEMM's batch of independent GEMMs: a's storage [batch*m, k] is the mk
// layout, b's [batch*k, n] the GEMM's B.
func (l *lowering) matmul(o *graph.Op) error {
	a, bt, out := o.Inputs[0], o.Inputs[1], o.Outputs[0]
	r := len(a.Shape)
	m, kd, n := a.Shape[r-2], a.Shape[r-1], bt.Shape[r-1]
	batch := a.Elements() / (m * kd)
	if a.DType != bt.DType {
		return l.errf("operands in %s and %s are not lowered yet", a.DType, bt.DType)
	}
	g := kernels.GEMM{M: m, K: kd, N: n, Batch: batch, In: a.DType, Out: out.DType, AMK: true}
	plan, err := kernels.PlanGEMM(g, kernels.GEMMOptions{OpID: l.id}, l.tg)
	if err != nil {
		return l.wrapErr(err)
	}
	k, err := plan.Kernel()
	if err != nil {
		return err
	}
	return l.inline(k, map[string]*tile.Tile{"A": l.tensor2D(a), "B": l.tensor2D(bt), "C": l.tensor2D(out)})
}

// elementwise inlines the elementwise kernel over [rows, cols].
func (l *lowering) elementwise(e kernels.Elementwise, bind map[string]*tile.Tile) error {
	plan, err := kernels.PlanElementwise(e, kernels.ElementwiseOptions{OpID: l.id}, l.tg)
	if err != nil {
		return l.wrapErr(err)
	}
	k, err := plan.Kernel()
	if err != nil {
		return err
	}
	return l.inline(k, bind)
}

func (l *lowering) binary(o *graph.Op) error {
	a, b, out := o.Inputs[0], o.Inputs[1], o.Outputs[0]
	if a.Elements() != b.Elements() {
		if len(b.Shape) == 1 && o.Kind == graph.AddOp {
			r, c := rowsCols(a)
			return l.biasAdd(l.tensor2D(a), l.tensor2D(b), l.tensor2D(out), r, c, out.DType)
		}
		return l.errf("broadcasting %s over %s is not lowered yet", graph.ShapeString(b.Shape), graph.ShapeString(a.Shape))
	}
	r, c := rowsCols(out)
	alu := isa.ALUAdd
	if o.Kind == graph.MulOp {
		alu = isa.ALUMultiply
	}
	return l.elementwise(kernels.Elementwise{Rows: r, Cols: c, DType: out.DType, ALU: alu, Engine: isa.EngineVector},
		map[string]*tile.Tile{"X": l.tensor2D(a), "Y": l.store2DAs(b, r, c), "OUT": l.tensor2D(out)})
}

// store2DAs is t's storage, which must be [rows, cols].
func (l *lowering) store2DAs(t *graph.Tensor, rows, cols int64) *tile.Tile {
	return l.tensor2D(t)
}

var unaryFuncs = map[graph.Kind]isa.ActFunc{graph.SiLU: isa.ActSilu, graph.GELU: isa.ActGelu, graph.ReLU: isa.ActRelu, graph.Tanh: isa.ActTanh}

func (l *lowering) unary(o *graph.Op) error {
	x, out := o.Inputs[0], o.Outputs[0]
	f := unaryFuncs[o.Kind]
	if o.Kind == graph.GELU && o.Attrs.Tanh {
		f = isa.ActGeluTanh
	}
	r, c := rowsCols(out)
	return l.elementwise(kernels.Elementwise{Rows: r, Cols: c, DType: out.DType, Unary: true, Func: f, Engine: isa.EngineScalar},
		map[string]*tile.Tile{"X": l.tensor2D(x), "OUT": l.tensor2D(out)})
}

// swiglu is silu(gate) on ScalarE into a temporary, then times up on
// VectorE.
func (l *lowering) swiglu(o *graph.Op) error {
	gate, up, out := o.Inputs[0], o.Inputs[1], o.Outputs[0]
	r, c := rowsCols(out)
	tmp := l.k.Tensor(l.unique(out.Name+"_silu"), out.DType, tile.Temp, r, c)
	if err := l.elementwise(kernels.Elementwise{Rows: r, Cols: c, DType: out.DType, Unary: true, Func: isa.ActSilu, Engine: isa.EngineScalar},
		map[string]*tile.Tile{"X": l.tensor2D(gate), "OUT": tmp}); err != nil {
		return err
	}
	return l.elementwise(kernels.Elementwise{Rows: r, Cols: c, DType: out.DType, ALU: isa.ALUMultiply, Engine: isa.EngineVector},
		map[string]*tile.Tile{"X": tmp, "Y": l.tensor2D(up), "OUT": l.tensor2D(out)})
}

// split copies each part out: along the last dim, a block of columns;
// along the sequence of [batch, seq, dim], rows (an LM head's last
// position, BERT's first token).
func (l *lowering) split(o *graph.Op) error {
	x := o.Inputs[0]
	ax := o.Attrs.Axis
	src := l.tensor2D(x)
	switch {
	case ax == len(x.Shape)-1:
		rows, _ := rowsCols(x)
		var c0 int64
		for i, part := range o.Outputs {
			n := o.Attrs.Shape[i]
			if err := l.inline(copyKernel(x.DType, rows, x.Shape[ax], n, copyWindow{rows: rows, rowStep: 1, col0: c0}, l.id), map[string]*tile.Tile{"SRC": src, "DST": l.tensor2D(part)}); err != nil {
				return err
			}
			c0 += n
		}
		return nil
	case len(x.Shape) == 3 && ax == 1:
		b, s, d := x.Shape[0], x.Shape[1], x.Shape[2]
		var s0 int64
		for i, part := range o.Outputs {
			n := o.Attrs.Shape[i]
			if n == 1 || len(o.Outputs) == 1 {
				// One position of each sequence: rows s0, s0+s, ...
				if err := l.inline(copyKernel(x.DType, b*s, d, d, copyWindow{rows: b, row0: s0, rowStep: s}, l.id), map[string]*tile.Tile{"SRC": src, "DST": l.tensor2D(part)}); err != nil {
					return err
				}
			} else if l.used(part) {
				return l.errf("a part of %d positions is not lowered yet", n)
			}
			s0 += n
		}
		return nil
	}
	return l.errf("a split along dim %d of %s is not lowered yet", ax, graph.ShapeString(x.Shape))
}

// used reports whether some op reads t.
func (l *lowering) used(t *graph.Tensor) bool {
	for _, o := range l.g.Ops {
		for _, in := range o.Inputs {
			if in == t {
				return true
			}
		}
	}
	return t.Role == graph.Output
}

// normFusionPays reports whether a post-norm fused into its GEMM's
// epilogue (plan, whole rows in one N block) is estimated no slower than
// the GEMM planned without it followed by the norm kernel: the plans'
// estimates (which leave the epilogue out), plus the fused norm's tail on
// the last M tile against the norm kernel's own time (its rows' round trip
// through HBM, its work).
func (l *lowering) normFusionPays(g kernels.GEMM, w *graph.Tensor, plan *kernels.GEMMPlan, norm *graph.Op) bool {
	free := g
	free.Epilogue.Norm = kernels.EpilogueNorm{}
	fp, err := l.planLinear(free, w)
	if err != nil {
		return true
	}
	if g.Dequant || !plan.PSUMK {
		// The norm's time is counted only where the whole-row plan
		// accumulates K in PSUM (one M block of a few tokens, BERT's at
		// batch 1). Elsewhere the estimates miss more than the norm:
		// with quantised weights the whole-row plan's conversions come a
		// block of every column at a time, later behind the multiplies
		// than the estimate has them (BERT-large in int8 on trn3, one
		// layer at 77 tokens: the fused output.dense 41.2 us against
		// 25.7 + 6.9 us apart); with partial sums in SBUF VectorE adds
		// them and normalises every M tile besides (BERT-large in FP8 on
		// trn2 at 384 tokens: 95.6 against 47.5 + 32.9 us). There only a
		// plan estimated no slower than the GEMM's own takes the norm.
		return plan.Estimate(l.tg).TotalNs <= fp.Estimate(l.tg).TotalNs
	}
	n := kernels.Norm{Rows: g.M * max(g.Batch, 1), Cols: g.N, DType: g.Out, RMS: norm.Kind == graph.RMSNorm, Bias: len(norm.Inputs) > 2 && norm.Inputs[2] != nil, Eps: norm.Attrs.Eps}
	np, err := kernels.PlanNorm(n, kernels.NormOptions{}, l.tg)
	if err != nil {
		return true
	}
	return plan.Estimate(l.tg).TotalNs+plan.NormTailNs(l.tg) <= fp.Estimate(l.tg).TotalNs+np.EstimateNs(l.tg)
}

package workloads

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/kernels"
	"github.com/trnsim/trnsim/workloads/lowergraph"
	"github.com/trnsim/trnsim/workloads/sched"
	"github.com/trnsim/trnsim/workloads/tile"
)

// schedOptions returns the scheduler's options from the lowering fields.
func schedOptions(cfg *configs.RunConfig) (sched.Options, error) {
	l := &cfg.Workload.Lowering
	o := sched.Options{QueuesPerEngine: l.DMAQueues}
	if l.DMAQueues > cfg.Hardware.Core.DMA.QueuesPerEngine {
		return o, cfg.FieldError("workload.lowering.dma_queues", "%d exceeds the %d DMA queues", l.DMAQueues, cfg.Hardware.Core.DMA.QueuesPerEngine)
	}
	switch l.DGE {
	case "", "auto":
		o.DGEAuto = true
	case "hw":
		o.DGE = isa.DGEHardware
	case "none":
		o.DGE = isa.DGENone
	}
	if a := cfg.Parallel.CollectiveAlgorithm; a != "" && a != "auto" {
		o.CollectiveAlgorithm = a
	}
	return o, nil
}

// compile schedules a kernel, mapping a working set that does not fit to
// the first of fitFields the user set.
func compile(cfg *configs.RunConfig, k *tile.Kernel, fitFields map[isa.Memory][]string) (*sched.Program, error) {
	return compileOps(cfg, k, fitFields, nil)
}

// compileOps is compile for a kernel of inlined ops (lowergraph names an
// op's tiles op<id>_...): a tile that does not fit on chip is named with
// the op of ops it belongs to.
func compileOps(cfg *configs.RunConfig, k *tile.Kernel, fitFields map[isa.Memory][]string, ops []lowergraph.Op) (*sched.Program, error) {
	return compileRanks(cfg, k, fitFields, ops, false)
}

// compileRanks is compileOps for a kernel whose cores loop's ranks run
// identical programs where symmetric is set: the scheduler may simulate
// a unit of them (sched.Options.SymmetricRanks).
func compileRanks(cfg *configs.RunConfig, k *tile.Kernel, fitFields map[isa.Memory][]string, ops []lowergraph.Op, symmetric bool) (*sched.Program, error) {
	opts, err := schedOptions(cfg)
	if err != nil {
		return nil, err
	}
	opts.SymmetricRanks = symmetric
	p, rankErr, schedErr := schedule(k, Target(cfg), opts)
	if rankErr != nil {
		return nil, rankErr
	}
	if schedErr != nil {
		return nil, mapError(cfg, ownedFit(schedErr, ops), fitFields)
	}
	return p, nil
}

// ownedFit returns err with an on-chip tile that does not fit named with
// its op, where the tile is one of ops'.
func ownedFit(err error, ops []lowergraph.Op) error {
	var fe *sched.FitError
	var id int32
	if !errors.As(err, &fe) || !fe.Mem.OnChip() {
		return err
	}
	if _, scanErr := fmt.Sscanf(fe.Tile, "op%d_", &id); scanErr != nil {
		return err
	}
	for _, o := range ops {
		if o.ID == id {
			owned := *fe
			owned.Tile = fmt.Sprintf("tile %s of op %s (%s)", fe.Tile, o.Name, o.Kind)
			return &owned
		}
	}
	return err
}

// schedule checks k's core numbers and schedules it: the error of the
// former as it is (it points at the kernel's text), the scheduler's as
// the scheduler gave it (mapError names the user's fields).
func schedule(k *tile.Kernel, tg *sched.Target, opts sched.Options) (p *sched.Program, rankErr, schedErr error) {
	// Core numbers are checked here, where the chip is known.
	if err := k.CheckRanks(tg.Limits.Chips, tg.Limits.CoresPerChip); err != nil {
		return nil, err, nil
	}
	p, err := sched.Compile(k, tg, opts)
	return p, nil, err
}

// checkScheduled is schedule for a check: the same errors, and the
// number of ranks the kernel uses, without compiling the program
// (sched.Check).
func checkScheduled(k *tile.Kernel, tg *sched.Target, opts sched.Options) (cores int, rankErr, schedErr error) {
	if err := k.CheckRanks(tg.Limits.Chips, tg.Limits.CoresPerChip); err != nil {
		return 0, err, nil
	}
	cs, err := sched.Check(k, tg, opts)
	return len(cs), nil, err
}

// mapError turns a kernel's or the scheduler's error into one that names
// the field the user set.
func mapError(cfg *configs.RunConfig, err error, fitFields map[isa.Memory][]string) error {
	var oe *kernels.OptionError
	if errors.As(err, &oe) {
		return cfg.FieldError("workload.lowering."+oe.Option, "%s", oe.Msg)
	}
	var se *kernels.ShapeError
	if errors.As(err, &se) {
		return cfg.FieldError("workload."+cfg.Workload.Kind+"."+se.Dim, "%s", se.Msg)
	}
	var fe *sched.FitError
	if errors.As(err, &fe) {
		return fitError(cfg, fe, fitFields[fe.Mem])
	}
	return err
}

// fitError blames a working set that does not fit on the first of fields
// the user set (a memory size, a block size), else on the workload.
func fitError(cfg *configs.RunConfig, fe *sched.FitError, fields []string) error {
	if path, ok := fitField(cfg, fe, fields); ok {
		return cfg.FieldError(path, "%s", fitMessage(fe))
	}
	return cfg.FieldError("workload.kind", "%s", fitMessage(fe))
}

// fitMessage says what does not fit, how much it needs and how much there
// is.
func fitMessage(fe *sched.FitError) string {
	mem := strings.ToUpper(fe.Mem.String())
	var msg string
	if fe.Mem == isa.MemHBM && fe.PerRank {
		msg = fmt.Sprintf("the %s kernel's tiles of rank %d do not fit its share of chip %d's HBM: they need %s, the share is %s (at tile %s)",
			fe.Kernel, fe.Rank, fe.Chip, sizeGiB(fe.Needed), sizeGiB(fe.Available), fe.Tile)
	} else if fe.Mem == isa.MemHBM {
		msg = fmt.Sprintf("the %s kernel's tensors do not fit one chip's HBM: they need %s, the chip has %s (at tensor %s)",
			fe.Kernel, sizeGiB(fe.Needed), sizeGiB(fe.Available), fe.Tile)
	} else {
		what := fe.Tile // a kernel's words, or the name of the scheduler's tile
		if !strings.Contains(what, " ") {
			what = "tile " + what
		}
		msg = fmt.Sprintf("the %s kernel's working set does not fit %s: it needs %s per partition (placing %s), more than %s's %s",
			fe.Kernel, mem, bytesText(fe.Needed), what, mem, bytesText(fe.Available))
	}
	return msg
}

// fitField returns the first of fields the user set, to blame for what
// does not fit.
func fitField(cfg *configs.RunConfig, fe *sched.FitError, fields []string) (string, bool) {
	// The tensor sizes are alike: one given by --set, the user's latest
	// change, is blamed before those of the file. On chip, fields go in
	// order (the memory, then the blocks, the buffers, the shape).
	if fe.Mem == isa.MemHBM {
		for _, f := range fields {
			if src, ok := cfg.Sources[f]; ok && src.File == configs.SetFile {
				return f, true
			}
		}
	}
	return cfg.UserSet(fields...)
}

// bytesText prints bytes in KiB, or in MiB, GiB or TiB when they are at least
// a thousand of the smaller unit; a size that saturated an int64 is "more
// than 8 EiB".
func bytesText(b int64) string {
	if b == math.MaxInt64 {
		return "more than 8 EiB"
	}
	v, units := float64(b)/1024, []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for v >= 1000 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

// sizeGiB prints bytes in GiB (HBM capacities), as bytesText does past 8 EiB.
func sizeGiB(b int64) string {
	if b == math.MaxInt64 {
		return "more than 8 EiB"
	}
	return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
}

var gemmFit = map[isa.Memory][]string{
	isa.MemSBUF: {"hardware.core.sbuf.partition_kib", "workload.lowering.block_m", "workload.lowering.block_n",
		"workload.lowering.block_k", "workload.lowering.buffers", "workload.lowering.result_buffers", "workload.gemm.m",
		"workload.gemm.n", "workload.gemm.k"},
	isa.MemPSUM: {"hardware.core.psum.partition_kib", "hardware.core.psum.banks", "workload.lowering.psum_banks",
		"workload.lowering.block_n", "workload.lowering.tile_n"},
	isa.MemHBM: {"workload.gemm.m", "workload.gemm.n", "workload.gemm.k", "hardware.chip.hbm.stack_gib"},
}

// GEMMPlan resolves the GEMM plan of cfg's workload: the lowering fields
// it sets, the rest chosen by the plan search.
func GEMMPlan(cfg *configs.RunConfig) (*kernels.GEMMPlan, error) {
	g := cfg.Workload.GEMM
	l := &cfg.Workload.Lowering
	in, _ := isa.ParseDType(g.DType)
	out, _ := isa.ParseDType(g.OutDType)
	kg := kernels.GEMM{M: g.M, K: g.K, N: g.N, Batch: g.Batch, In: in, Out: out, AMK: g.ALayout == "mk"}
	if w, ok := isa.ParseDType(g.WeightsDType); ok && w != in {
		kg.Dequant, kg.WeightDType = true, w
	}
	o := kernels.GEMMOptions{TileN: int64(l.TileN), BlockM: int64(l.BlockM), BlockN: int64(l.BlockN), BlockK: int64(l.BlockK),
		Buffers: int64(l.Buffers), ResultBuffers: int64(l.ResultBuffers), PSUMBanks: int64(l.PSUMBanks), OpID: 1}
	o.Dequantize, o.DequantizeSet = kernels.ParseDequantEngine(l.Dequantize)
	o.EvacuateSet = l.Evacuate != ""
	switch l.Evacuate {
	case "scalar":
		o.Evacuate = kernels.EvacScalar
	case "alternate":
		o.Evacuate = kernels.EvacAlternate
	case "auto":
		o.Evacuate = kernels.EvacAuto
	}
	switch l.LoopOrder {
	case "nkm":
		o.Order = kernels.OrderNKM
	case "nmk":
		o.Order = kernels.OrderNMK
	}
	if l.AccumulateDType != "" {
		o.AccumulateDType, _ = isa.ParseDType(l.AccumulateDType)
		o.AccumulateSet = true
	}
	switch l.Transpose {
	case "dma":
		o.Transpose = kernels.TransposeDMA
	case "tensor":
		o.Transpose = kernels.TransposeTensor
	}
	switch l.MatmulMode {
	case "normal":
		o.Mode = kernels.MatmulNormal
	case "double_row":
		o.Mode = kernels.MatmulDoubleRow
	}
	plan, err := kernels.PlanGEMM(kg, o, Target(cfg))
	if err != nil {
		return nil, mapError(cfg, err, gemmFit)
	}
	return plan, nil
}

// lowerGEMM lowers C[M,N] = A[M,K] @ B[K,N] on one NeuronCore through the
// GEMM kernel and the scheduler.
func lowerGEMM(cfg *configs.RunConfig) (*isa.Program, *Info, error) {
	return gemm(cfg, false)
}

// gemm lowers cfg's GEMM, or with checkOnly checks that it lowers: the
// plan, its kernel and its schedule (placement), without a program. The
// check's kernel and schedule are shared through cfg.Memo by the configs
// with the same plan and target (checkSchedule).
func gemm(cfg *configs.RunConfig, checkOnly bool) (*isa.Program, *Info, error) {
	g := cfg.Workload.GEMM
	in, _ := isa.ParseDType(g.DType)
	out, _ := isa.ParseDType(g.OutDType)
	plan, err := GEMMPlan(cfg)
	if err != nil {
		return nil, nil, err
	}
	var prog *isa.Program
	var cores int
	if checkOnly {
		if cores, err = checkSchedule(cfg, plan); err != nil {
			return nil, nil, err
		}
	} else {
		k, err := plan.Kernel()
		if err != nil {
			return nil, nil, err
		}
		p, err := compile(cfg, k, gemmFit)
		if err != nil {
			return nil, nil, err
		}
		prog, cores = p.Program, len(p.Cores)
	}
	eb, wb := int64(in.Bytes()), int64(plan.G.BDType().Bytes())
	batch := max(g.Batch, 1)
	scales := int64(0) // quantised weights' per-column scales, in C's dtype
	if plan.G.Dequant {
		scales = g.N * int64(out.Bytes())
	}
	flops := 2 * float64(batch) * float64(g.M) * float64(g.N) * float64(g.K)
	name := cfg.Workload.Name
	shape := []Dim{{"m", g.M}, {"k", g.K}, {"n", g.N}}
	if batch > 1 {
		shape = append([]Dim{{"batch", batch}}, shape...)
	}
	if name == "" {
		name = fmt.Sprintf("gemm %dx%dx%d %s", g.M, g.K, g.N, in)
		if plan.G.Dequant {
			name += fmt.Sprintf(" (%s weights)", plan.G.WeightDType)
		}
		if batch > 1 {
			name = fmt.Sprintf("bmm %dx%dx%dx%d %s", batch, g.M, g.K, g.N, in)
		}
	}
	info := &Info{Name: name, Kind: "gemm", DType: in, FLOPs: flops, CoresUsed: cores,
		Shape:       shape,
		Ops:         []Op{{ID: 1, Name: "matmul", Kind: "matmul", FLOPs: flops}},
		MinHBMBytes: batch*(g.M*g.K*eb+g.K*g.N*wb+g.M*g.N*int64(out.Bytes())) + scales,
		Choices:     choices(plan.Choices()),
		Notes:       plan.Notes()}
	info.Choices = append(info.Choices, queueChoice(cfg))
	return prog, info, nil
}

// scheduleKey is what a GEMM plan's kernel and its schedule depend on: the
// plan, the target but its HBM bandwidth (which the scheduler never reads,
// only the plan search's estimates) and the scheduler's options.
type scheduleKey struct {
	plan   kernels.PlanKey
	target sched.TargetKey
	opts   sched.Options
}

// scheduled is a kernel's schedule as a check sees it: the cores it uses,
// or the error making the kernel (or placing its ranks) gave, or the
// scheduler's (before mapError names the user's fields).
type scheduled struct {
	cores               int
	kernelErr, schedErr error
}

// checkSchedule makes and schedules plan's kernel for cfg and returns the
// cores it uses, the work shared through cfg.Memo with configs of the same
// key (a sweep's points that differ in HBM bandwidth, or in fields the
// plan search chose the same plan for).
func checkSchedule(cfg *configs.RunConfig, plan *kernels.GEMMPlan) (int, error) {
	opts, err := schedOptions(cfg)
	if err != nil {
		if _, kerr := plan.Kernel(); kerr != nil {
			return 0, kerr // (as lowerGEMM reports them: the kernel's error first)
		}
		return 0, err
	}
	tg := Target(cfg)
	build := func() any {
		k, err := plan.Kernel()
		if err != nil {
			return scheduled{kernelErr: err}
		}
		cores, rankErr, schedErr := checkScheduled(k, tg, opts)
		if rankErr != nil || schedErr != nil {
			return scheduled{kernelErr: rankErr, schedErr: schedErr}
		}
		return scheduled{cores: cores}
	}
	var s scheduled
	if tg.ChipHops != nil {
		s = build().(scheduled) // (routes between chips are not in the key)
	} else {
		s = cfg.Memo.Get(scheduleKey{plan: plan.Key(), target: tg.Key().WithoutHBMBandwidth(), opts: opts}, build).(scheduled)
	}
	if s.kernelErr != nil {
		return 0, s.kernelErr
	}
	if s.schedErr != nil {
		return 0, mapError(cfg, s.schedErr, gemmFit)
	}
	return s.cores, nil
}

func choices(cs []kernels.Choice) []Choice {
	out := make([]Choice, len(cs))
	for i, c := range cs {
		out[i] = Choice{Path: "workload.lowering." + c.Name, Value: c.Value, Auto: c.Auto}
	}
	return out
}

// queueChoice reports the DMA queues per triggering engine.
func queueChoice(cfg *configs.RunConfig) Choice {
	q := cfg.Workload.Lowering.DMAQueues
	if q == 0 {
		return Choice{Path: "workload.lowering.dma_queues", Value: 3, Auto: true}
	}
	return Choice{Path: "workload.lowering.dma_queues", Value: int64(q)}
}

var actFuncs = map[string]isa.ActFunc{"exp": isa.ActExp, "gelu": isa.ActGelu, "silu": isa.ActSilu, "relu": isa.ActRelu,
	"tanh": isa.ActTanh, "sigmoid": isa.ActSigmoid, "copy": isa.ActCopy, "square": isa.ActSquare, "sqrt": isa.ActSqrt, "rsqrt": isa.ActRsqrt}

var aluOps = map[string]isa.ALUOp{"add": isa.ALUAdd, "subtract": isa.ALUSubtract, "multiply": isa.ALUMultiply, "max": isa.ALUMax}

var elementwiseFit = map[isa.Memory][]string{
	isa.MemSBUF: {"hardware.core.sbuf.partition_kib", "workload.lowering.elementwise_free", "workload.lowering.buffers"},
	isa.MemHBM:  {"workload.elementwise.rows", "workload.elementwise.cols"},
}

// lowerElementwise lowers out = op(x[, y]) over a [rows, cols] tensor.
func lowerElementwise(cfg *configs.RunConfig) (*isa.Program, *Info, error) {
	e := cfg.Workload.Elementwise
	l := &cfg.Workload.Lowering
	dt, _ := isa.ParseDType(e.DType)
	eng := map[string]isa.Engine{"scalar": isa.EngineScalar, "vector": isa.EngineVector, "gpsimd": isa.EngineGpSimd}[e.Engine]
	ke := kernels.Elementwise{Rows: e.Rows, Cols: e.Cols, DType: dt, Engine: eng}
	if op, ok := aluOps[e.Op]; ok {
		ke.ALU = op
	} else {
		ke.Unary, ke.Func = true, actFuncs[e.Op]
	}
	tg := Target(cfg)
	plan, err := kernels.PlanElementwise(ke, kernels.ElementwiseOptions{Free: int64(l.ElementwiseFree), Buffers: int64(l.Buffers), OpID: 1}, tg)
	if err != nil {
		return nil, nil, mapError(cfg, err, elementwiseFit)
	}
	k, err := plan.Kernel()
	if err != nil {
		return nil, nil, err
	}
	p, err := compile(cfg, k, elementwiseFit)
	if err != nil {
		return nil, nil, err
	}
	nIn := int64(2)
	if ke.Unary {
		nIn = 1
	}
	name := cfg.Workload.Name
	if name == "" {
		name = fmt.Sprintf("%s %dx%d %s", e.Op, e.Rows, e.Cols, e.DType)
	}
	info := &Info{Name: name, Kind: "elementwise", DType: dt, CoresUsed: len(p.Cores),
		Shape:       []Dim{{"rows", e.Rows}, {"cols", e.Cols}},
		Ops:         []Op{{ID: 1, Name: e.Op, Kind: "elementwise"}},
		MinHBMBytes: (nIn + 1) * e.Rows * e.Cols * int64(dt.Bytes()),
		Choices:     append(choices(plan.Choices()), queueChoice(cfg))}
	return p.Program, info, nil
}

// tileSizes finds a tile whose size does not fit an int64 (a dimension
// written as large as one holds), which the scheduler's placement would
// take for a small one: HBM tiles in order of declaration, on-chip ones
// each per partition, every size saturating.
func tileSizes(k *tile.Kernel, tg *sched.Target) *sched.FitError {
	var hbm int64
	for _, t := range k.Tiles {
		dims := t.Shape
		if t.Mem.OnChip() && len(dims) > 0 {
			dims = dims[1:]
		}
		b := satMul(append([]int64{int64(t.DType.Bytes())}, dims...)...)
		switch {
		case t.Mem == isa.MemHBM:
			if hbm = satAdd(hbm, b); hbm == math.MaxInt64 {
				return &sched.FitError{Kernel: k.Name, Tile: t.Name, Mem: isa.MemHBM, Needed: hbm, Available: tg.HBMBytes}
			}
		case satMul(b, int64(max(t.Bufs, 1))) == math.MaxInt64:
			avail := tg.Limits.SBUFPartitionBytes
			if t.Mem == isa.MemPSUM {
				avail = tg.Limits.PSUMPartitionBytes
			}
			return &sched.FitError{Kernel: k.Name, Tile: t.Name, Mem: t.Mem, Needed: math.MaxInt64, Available: avail}
		}
	}
	return nil
}

// satMul and satAdd are products and sums of non-negative sizes that
// saturate at math.MaxInt64.
func satMul(xs ...int64) int64 {
	p := int64(1)
	for _, x := range xs {
		switch {
		case x <= 0:
			return 0
		case p > math.MaxInt64/x:
			p = math.MaxInt64
		default:
			p *= x
		}
	}
	return p
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// lowerTile schedules a kernel written in the tile IR.
func lowerTile(cfg *configs.RunConfig) (*isa.Program, *Info, error) {
	w := cfg.Workload.Tile
	src, name := w.Source, "workload.tile.source"
	if w.File != "" {
		data, err := os.ReadFile(w.File)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: cannot read: %v", w.File, err)
		}
		src, name = string(data), w.File
	}
	src, err := applyTileParams(cfg, src)
	if err != nil {
		return nil, nil, err
	}
	k, err := tile.Parse(src, name)
	if err != nil {
		return nil, nil, err
	}
	// A tile that does not fit is blamed on the memory size the user set,
	// else on the tile's declaration.
	fields := map[isa.Memory][]string{isa.MemSBUF: {"hardware.core.sbuf.partition_kib"},
		isa.MemPSUM: {"hardware.core.psum.partition_kib"}, isa.MemHBM: {"hardware.chip.hbm.stack_gib"}}
	fe := tileSizes(k, Target(cfg))
	var p *sched.Program
	if fe == nil {
		opts, oerr := schedOptions(cfg)
		if oerr != nil {
			return nil, nil, oerr
		}
		lim := Target(cfg).Limits
		if err := k.CheckRanks(lim.Chips, lim.CoresPerChip); err != nil {
			return nil, nil, err
		}
		if p, err = sched.Compile(k, Target(cfg), opts); err != nil && !errors.As(err, &fe) {
			return nil, nil, mapError(cfg, err, fields)
		}
		if fe == nil {
			// (After placement, so a kernel whose tensors do not fit says
			// so even if it has no ops.)
			if err := k.CheckRunnable(); err != nil {
				return nil, nil, err
			}
		}
	}
	if fe != nil {
		if path, ok := fitField(cfg, fe, fields[fe.Mem]); ok {
			return nil, nil, cfg.FieldError(path, "%s", fitMessage(fe))
		}
		for _, t := range k.Tiles {
			if t.Name == fe.Tile && t.Pos.Line > 0 {
				return nil, nil, fmt.Errorf("%s:%s: tile %s: %s", name, t.Pos, t.Name, fitMessage(fe))
			}
		}
		return nil, nil, fmt.Errorf("%s: %s", name, fitMessage(fe))
	}
	info := &Info{Name: cfg.Workload.Name, Kind: "tile", DType: isa.BF16, CoresUsed: len(p.Cores), Notes: append([]string(nil), p.Notes...)}
	if info.Name == "" {
		info.Name = k.Name
	}
	ids := map[int32]bool{}
	opIDs := []int32{}
	for _, op := range k.Ops {
		opIDs = append(opIDs, op.OpID)
	}
	// A collective's op id is named by its kind, so that its traffic is
	// measured and drawn as a collective's (an id shared with other ops
	// stays "tile").
	collKind := map[int32]string{}
	for _, c := range k.Collectives() {
		opIDs = append(opIDs, c.OpID)
		collKind[c.OpID] = c.Kind
	}
	for _, op := range k.Ops {
		delete(collKind, op.OpID)
	}
	for _, id := range opIDs {
		if id != 0 && !ids[id] {
			ids[id] = true
			kind := "tile"
			if ck, ok := collKind[id]; ok {
				kind = ck
			}
			info.Ops = append(info.Ops, Op{ID: id, Name: fmt.Sprintf("op %d", id), Kind: kind})
		}
	}
	var in, out int64
	for _, t := range k.Tiles {
		switch t.Role {
		case tile.Input:
			in += t.Bytes()
		case tile.Output:
			out += t.Bytes()
		}
	}
	info.MinHBMBytes = in + out
	return p.Program, info, nil
}

package workloads

import (
	"fmt"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
)

var actFuncs = map[string]isa.ActFunc{"exp": isa.ActExp, "gelu": isa.ActGelu, "silu": isa.ActSilu, "relu": isa.ActRelu,
	"tanh": isa.ActTanh, "sigmoid": isa.ActSigmoid, "copy": isa.ActCopy, "square": isa.ActSquare, "sqrt": isa.ActSqrt, "rsqrt": isa.ActRsqrt}

var aluOps = map[string]isa.ALUOp{"add": isa.ALUAdd, "subtract": isa.ALUSubtract, "multiply": isa.ALUMultiply, "max": isa.ALUMax}

// lowerElementwise lowers out = op(x[, y]) over a [rows, cols] tensor: tiles
// of 128 rows and `elementwise_free` columns are loaded by Sync, computed on
// ScalarE (activations) or VectorE/GpSimd (binary ops) and stored from
// GpSimd's stream, with `buffers`-deep buffering ordered by semaphores.
func lowerElementwise(cfg *configs.RunConfig) (*isa.Program, *Info, error) {
	e := cfg.Workload.Elementwise
	l := &cfg.Workload.Lowering
	h := &cfg.Hardware
	lim := h.Limits()
	dt, _ := isa.ParseDType(e.DType)
	eb := int64(dt.Bytes())
	binary := aluOps[e.Op] != isa.ALUNone
	nIn := int64(1)
	if binary {
		nIn = 2
	}
	free := int64(l.ElementwiseFree)
	auto := map[string]bool{}
	if free == 0 {
		// 4 KiB per partition saturates the DMA engines (reference §4).
		free = min(e.Cols, max(4096/eb, 64))
		auto["elementwise_free"] = true
	}
	nbuf := int64(l.Buffers)
	if nbuf == 0 {
		nbuf = 2
		auto["buffers"] = true
	}
	queues := int64(l.DMAQueues)
	if queues == 0 {
		queues = 2
		auto["dma_queues"] = true
	}
	if queues > int64(lim.DMAQueues) {
		return nil, nil, cfg.FieldError("workload.lowering.dma_queues", "%d exceeds the %d DMA queues", queues, lim.DMAQueues)
	}
	if free > lim.VectorFreeMaxSBUF {
		return nil, nil, cfg.FieldError("workload.lowering.elementwise_free", "%d exceeds the engines' free size limit of %d", free, lim.VectorFreeMaxSBUF)
	}
	need := nbuf * (nIn + 1) * free * eb
	if need > h.SBUFBytesPerPartition() {
		return nil, nil, cfg.FieldError("workload.lowering.elementwise_free", "%d buffers of %d elements need %d KiB per partition, more than SBUF's %d KiB",
			nbuf*(nIn+1), free, need/1024, h.SBUFBytesPerPartition()/1024)
	}
	dge := isa.DGENone
	if lim.HardwareDGE && l.DGE != "none" {
		dge = isa.DGEHardware
	}
	b := newProgBuilder(h.Name, h.SBUFBytesPerPartition())
	x := b.hbm("X", dt, e.Rows, e.Cols)
	var y int32 = -1
	if binary {
		y = b.hbm("Y", dt, e.Rows, e.Cols)
	}
	out := b.hbm("OUT", dt, e.Rows, e.Cols)
	if err := b.fitsHBM(h.HBMBytesPerChip()); err != nil {
		return nil, nil, cfg.FieldError("workload.elementwise.rows", "the tensors do not fit one chip: %v", err)
	}
	var inBuf [][]int32
	var outBuf []int32
	for i := int64(0); i < nbuf; i++ {
		var ins []int32
		for j := int64(0); j < nIn; j++ {
			v, err := b.sbuf(fmt.Sprintf("in%d_%d", j, i), dt, 128, free)
			if err != nil {
				return nil, nil, cfg.FieldError("workload.lowering.elementwise_free", "%v", err)
			}
			ins = append(ins, v)
		}
		o, err := b.sbuf(fmt.Sprintf("out%d", i), dt, 128, free)
		if err != nil {
			return nil, nil, cfg.FieldError("workload.lowering.elementwise_free", "%v", err)
		}
		inBuf, outBuf = append(inBuf, ins), append(outBuf, o)
	}
	rowTiles, colTiles := ceilDiv(e.Rows, 128), ceilDiv(e.Cols, free)
	steps := rowTiles * colTiles
	tile := func(s int64) (r0, rows, c0, cols int64) {
		r0, c0 = (s/colTiles)*128, (s%colTiles)*free
		return r0, min(128, e.Rows-r0), c0, min(free, e.Cols-c0)
	}
	const (
		semLoad int32 = iota
		semCompute
		semStore
	)
	dmaEngines := int64(h.Core.DMA.Engines)
	eng := map[string]isa.Engine{"scalar": isa.EngineScalar, "vector": isa.EngineVector, "gpsimd": isa.EngineGpSimd}[e.Engine]
	opID := int32(1)
	loadGen := func(s int64, _ *stepBuf) ([]*isa.Instruction, error) {
		r0, rows, c0, cols := tile(s)
		slot := s % nbuf
		var waits []isa.SemWait
		waits = b.waitGE(waits, semCompute, s-nbuf+1)
		var outI []*isa.Instruction
		srcs := []int32{x}
		if binary {
			srcs = append(srcs, y)
		}
		for j, src := range srcs {
			in := &isa.Instruction{Body: &isa.Body{Op: isa.OpDMACopy, Engine: isa.EngineSync, Chip: b.chip, Core: b.core, Outs: []isa.Operand{b.view(inBuf[slot][j], rng(0, rows), rng(0, cols))}, Ins: []isa.Operand{b.view(src, rng(r0, r0+rows), rng(c0, c0+cols))}, Attrs: isa.Attrs{Queue: int16(int64(j) % queues), DGE: dge}, OpID: opID}, Signal: b.signal(semLoad)}
			if j == 0 {
				in.Waits = waits
			}
			outI = append(outI, in)
		}
		return outI, nil
	}
	computeGen := func(s int64, _ *stepBuf) ([]*isa.Instruction, error) {
		_, rows, _, cols := tile(s)
		slot := s % nbuf
		var waits []isa.SemWait
		waits = b.waitGE(waits, semLoad, dmaEngines*nIn*(s+1))
		waits = b.waitGE(waits, semStore, dmaEngines*(s-nbuf+1))
		dst := b.view(outBuf[slot], rng(0, rows), rng(0, cols))
		in := &isa.Instruction{Body: &isa.Body{Engine: eng, Chip: b.chip, Core: b.core, Outs: []isa.Operand{dst}, OpID: opID}, Waits: waits, Signal: b.signal(semCompute)}
		a := b.view(inBuf[slot][0], rng(0, rows), rng(0, cols))
		switch {
		case binary:
			in.Op, in.Ins, in.Attrs.ALU0 = isa.OpTensorTensor, []isa.Operand{a, b.view(inBuf[slot][1], rng(0, rows), rng(0, cols))}, aluOps[e.Op]
		case eng == isa.EngineScalar:
			in.Op, in.Ins, in.Attrs.Func, in.Attrs.Scale = isa.OpActivation, []isa.Operand{a}, actFuncs[e.Op], 1
		default:
			in.Op, in.Ins = isa.OpTensorCopy, []isa.Operand{a}
		}
		return []*isa.Instruction{in}, nil
	}
	// Stores are triggered from an engine with no other work where one can
	// trigger them (hardware DGE: Sync or ScalarE), else from Sync's stream
	// interleaved with the loads.
	storeEngine := isa.EngineGpSimd
	storeDGE := dge
	if dge == isa.DGEHardware {
		storeEngine = isa.EngineScalar
	}
	if storeEngine == eng {
		storeEngine = isa.EngineSync
	}
	storeGen := func(s int64, _ *stepBuf) ([]*isa.Instruction, error) {
		r0, rows, c0, cols := tile(s)
		slot := s % nbuf
		return []*isa.Instruction{{Body: &isa.Body{Op: isa.OpDMACopy, Engine: storeEngine, Chip: b.chip, Core: b.core,
			Outs:  []isa.Operand{b.view(out, rng(r0, r0+rows), rng(c0, c0+cols))},
			Ins:   []isa.Operand{b.view(outBuf[slot], rng(0, rows), rng(0, cols))},
			Attrs: isa.Attrs{Queue: int16((s + 1) % queues), DGE: storeDGE}, OpID: opID},
			Waits: b.waitGE(nil, semCompute, s+1), Signal: b.signal(semStore)}}, nil
	}
	key := func(e isa.Engine) isa.StreamKey { return isa.StreamKey{Chip: b.chip, Core: b.core, Engine: e} }
	if storeEngine == isa.EngineSync {
		// Loads and stores share Sync's stream: interleave them one step apart
		// so a store never blocks the next loads behind it.
		b.prog.Streams = append(b.prog.Streams, batchStream(key(isa.EngineSync), steps+1, func(s int64, sb *stepBuf) ([]*isa.Instruction, error) {
			var outI []*isa.Instruction
			if s < steps {
				l, _ := loadGen(s, sb)
				outI = append(outI, l...)
			}
			if s >= 1 {
				st, _ := storeGen(s-1, sb)
				outI = append(outI, st...)
			}
			return outI, nil
		}))
	} else {
		b.prog.Streams = append(b.prog.Streams, batchStream(key(isa.EngineSync), steps, loadGen), batchStream(key(storeEngine), steps, storeGen))
	}
	b.prog.Streams = append(b.prog.Streams, batchStream(key(eng), steps, computeGen))
	b.prog.SortStreams()
	name := cfg.Workload.Name
	if name == "" {
		name = fmt.Sprintf("%s %dx%d %s", e.Op, e.Rows, e.Cols, e.DType)
	}
	info := &Info{Name: name, Kind: "elementwise", DType: dt, CoresUsed: 1,
		Shape:       []Dim{{"rows", e.Rows}, {"cols", e.Cols}},
		Ops:         []Op{{ID: opID, Name: e.Op, Kind: "elementwise"}},
		MinHBMBytes: (nIn + 1) * e.Rows * e.Cols * eb,
		Choices: []Choice{{Path: "workload.lowering.elementwise_free", Value: free, Auto: auto["elementwise_free"]},
			{Path: "workload.lowering.buffers", Value: nbuf, Auto: auto["buffers"]},
			{Path: "workload.lowering.dma_queues", Value: queues, Auto: auto["dma_queues"]}}}
	return b.prog, info, nil
}

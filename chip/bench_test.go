package chip

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/internal/hostcpu"
	"github.com/trnsim/trnsim/isa"
)

// syntheticProgram builds a long, race-free, lazily generated stream that
// mixes every engine and DMA: a double-buffered pipeline where, per
// iteration, Sync loads a [128, 2048] BF16 tile (4 KiB per partition),
// TensorE multiplies its four 512-column slices into four PSUM banks,
// VectorE evacuates each bank to SBUF, ScalarE applies an activation to
// each, GpSimd runs an iota and Sync stores the result. Every dependency and
// every buffer reuse is ordered by semaphores. It has 15*iters+1
// instructions, 2 of every 15 DMA transfers.
func syntheticProgram(t testing.TB, iters int) *isa.Program {
	t.Helper()
	prog := &isa.Program{Version: isa.AssemblyVersion, Target: "trn2"}
	add := func(b *isa.Buffer) int32 {
		prog.Buffers = append(prog.Buffers, b)
		return int32(len(prog.Buffers) - 1)
	}
	const cols = 2048
	hin := add(&isa.Buffer{Name: "Hin", Mem: isa.MemHBM, DType: isa.BF16, Shape: []int64{128, cols}, Core: -1})
	hout := add(&isa.Buffer{Name: "Hout", Mem: isa.MemHBM, DType: isa.BF16, Shape: []int64{128, cols}, Core: -1, Offset: 1 << 20})
	w := add(&isa.Buffer{Name: "w", Mem: isa.MemSBUF, DType: isa.BF16, Shape: []int64{128, 128}})
	var in, mid, out [2]int32
	var acc [2][4]int32
	for s := 0; s < 2; s++ {
		in[s] = add(&isa.Buffer{Name: fmt.Sprintf("in%d", s), Mem: isa.MemSBUF, DType: isa.BF16, Shape: []int64{128, cols}, Offset: int64(4096 + s*4096)})
		mid[s] = add(&isa.Buffer{Name: fmt.Sprintf("mid%d", s), Mem: isa.MemSBUF, DType: isa.BF16, Shape: []int64{128, cols}, Offset: int64(16384 + s*4096)})
		out[s] = add(&isa.Buffer{Name: fmt.Sprintf("out%d", s), Mem: isa.MemSBUF, DType: isa.BF16, Shape: []int64{128, cols}, Offset: int64(32768 + s*4096)})
		for j := 0; j < 4; j++ {
			acc[s][j] = add(&isa.Buffer{Name: fmt.Sprintf("acc%d_%d", s, j), Mem: isa.MemPSUM, DType: isa.FP32, Shape: []int64{128, 512}, Offset: int64((s*4 + j) * 2048)})
		}
	}
	g := add(&isa.Buffer{Name: "g", Mem: isa.MemSBUF, DType: isa.INT32, Shape: []int64{32, 256}, Offset: 65536})
	// Operands are resolved once: the generator only assembles instructions.
	whole := func(i int32) isa.Operand {
		op, err := prog.Buffers[i].Whole(i)
		require.NoError(t, err)
		return op
	}
	slice := func(i int32, j int) isa.Operand {
		op, err := prog.Buffers[i].View(i, isa.Slice{Start: 0, Stop: 128, Step: 1}, isa.Slice{Start: int64(j * 512), Stop: int64((j + 1) * 512), Step: 1})
		require.NoError(t, err)
		return op
	}
	// Operand and signal slices are built once and shared read-only; each
	// step allocates its instructions and waits in one block apiece, so the
	// benchmark measures the simulator rather than the generator.
	one := func(op isa.Operand) []isa.Operand { return []isa.Operand{op} }
	var opIn, opMid, opOut, opAcc [2][4][]isa.Operand
	var wholeIn, wholeOut [2][]isa.Operand
	for s := 0; s < 2; s++ {
		wholeIn[s], wholeOut[s] = one(whole(in[s])), one(whole(out[s]))
		for j := 0; j < 4; j++ {
			opIn[s][j], opMid[s][j], opOut[s][j] = one(slice(in[s], j)), one(slice(mid[s], j)), one(slice(out[s], j))
			opAcc[s][j] = one(whole(acc[s][j]))
		}
	}
	opHin, opHout, opW, opG := one(whole(hin)), one(whole(hout)), one(whole(w)), one(whole(g))
	const (
		sLoad = iota + 1
		sMM
		sVec
		sAct
		sStore
		sG
	)
	var sigs [sG + 1][]isa.SemSignal
	for id := range sigs {
		sigs[id] = []isa.SemSignal{{Sem: isa.SemRef{ID: int32(id)}, Add: 1}}
	}
	// step hands out one step's instructions and waits from per-stream
	// slabs of 64, as the GEMM lowering does, so the benchmark measures the
	// simulator rather than the allocator.
	type step struct {
		insts []isa.Instruction
		waits []isa.SemWait
		out   []*isa.Instruction
	}
	const slabLen = 64
	newStep := func(st *step) *step {
		if st == nil {
			st = &step{}
		}
		if cap(st.insts)-len(st.insts) < 8 {
			st.insts = make([]isa.Instruction, 0, slabLen)
		}
		if cap(st.waits)-len(st.waits) < 16 {
			st.waits = make([]isa.SemWait, 0, 2*slabLen)
		}
		// The stream consumes out before asking for the next step.
		st.out = st.out[:0]
		return st
	}
	// emit copies a template into the slab and gives it its waits (a wait
	// for a value <= 0 is dropped): the one copy a lowering makes of an
	// instruction that differs from the last only in its waits.
	emit := func(st *step, tmpl *isa.Instruction, w1, w2 [2]int64) {
		w0 := len(st.waits)
		if w1[1] > 0 {
			st.waits = append(st.waits, isa.SemWait{Sem: isa.SemRef{ID: int32(w1[0])}, Value: w1[1]})
		}
		if w2[1] > 0 {
			st.waits = append(st.waits, isa.SemWait{Sem: isa.SemRef{ID: int32(w2[0])}, Value: w2[1]})
		}
		st.insts = st.insts[:len(st.insts)+1]
		in := &st.insts[len(st.insts)-1]
		*in = *tmpl
		if len(st.waits) > w0 {
			in.Waits = st.waits[w0:len(st.waits):len(st.waits)]
		}
		st.out = append(st.out, in)
	}
	stream := func(e isa.Engine, gen func(st *step, i int) []*isa.Instruction) isa.StreamSource {
		return isa.StreamSource{Key: isa.StreamKey{Engine: e}, Count: -1, Open: func() isa.Stream {
			i := 0
			var buf []*isa.Instruction
			var st *step
			return isa.FuncStream(func() (*isa.Instruction, error) {
				for len(buf) == 0 {
					if i >= iters {
						return nil, nil
					}
					st = newStep(st)
					buf = gen(st, i)
					i++
				}
				in := buf[0]
				buf = buf[1:]
				return in, nil
			})
		}}
	}
	n := int64(16) // DMA engines: a transfer raises its semaphore by 16
	// Templates: every field but the waits, per buffer slot s and slice j.
	var load, store [2]isa.Instruction
	var mm, vec, act [2][4]isa.Instruction
	for s := 0; s < 2; s++ {
		load[s] = isa.Instruction{Body: &isa.Body{Op: isa.OpDMACopy, Engine: isa.EngineSync, Outs: wholeIn[s], Ins: opHin, Attrs: isa.Attrs{Queue: 0, DGE: isa.DGEHardware}, OpID: 1}, Signal: sigs[sLoad]}
		store[s] = isa.Instruction{Body: &isa.Body{Op: isa.OpDMACopy, Engine: isa.EngineSync, Outs: opHout, Ins: wholeOut[s], Attrs: isa.Attrs{Queue: 1, DGE: isa.DGEHardware}, OpID: 5}, Signal: sigs[sStore]}
		for j := 0; j < 4; j++ {
			mm[s][j] = isa.Instruction{Body: &isa.Body{Op: isa.OpMultiplyMoving, Engine: isa.EngineTensor, Outs: opAcc[s][j], Ins: opIn[s][j], Attrs: isa.Attrs{Start: true, Stop: true}, OpID: 2}, Signal: sigs[sMM]}
			vec[s][j] = isa.Instruction{Body: &isa.Body{Op: isa.OpTensorCopy, Engine: isa.EngineVector, Outs: opMid[s][j], Ins: opAcc[s][j], OpID: 3}, Signal: sigs[sVec]}
			act[s][j] = isa.Instruction{Body: &isa.Body{Op: isa.OpActivation, Engine: isa.EngineScalar, Outs: opOut[s][j], Ins: opMid[s][j], Attrs: isa.Attrs{Func: isa.ActGelu, Scale: 1}, OpID: 4}, Signal: sigs[sAct]}
		}
	}
	ls := isa.Instruction{Body: &isa.Body{Op: isa.OpLoadStationary, Engine: isa.EngineTensor, Ins: opW, OpID: 2}}
	iotaTmpl := isa.Instruction{Body: &isa.Body{Op: isa.OpIota, Engine: isa.EngineGpSimd, Outs: opG, Attrs: isa.Attrs{Step: 1}, OpID: 6}, Signal: sigs[sG]}
	// Every template is one body, numbered.
	id := uint64(0)
	number := func(in *isa.Instruction) { id++; in.Body.ID = id }
	for s := 0; s < 2; s++ {
		number(&load[s])
		number(&store[s])
		for j := 0; j < 4; j++ {
			number(&mm[s][j])
			number(&vec[s][j])
			number(&act[s][j])
		}
	}
	number(&ls)
	number(&iotaTmpl)
	var none [2]int64
	prog.Streams = []isa.StreamSource{
		stream(isa.EngineSync, func(st *step, i int) []*isa.Instruction {
			s := i % 2
			emit(st, &load[s], [2]int64{sMM, 4 * int64(i-1)}, none)
			emit(st, &store[s], [2]int64{sAct, 4 * int64(i+1)}, none)
			return st.out
		}),
		stream(isa.EngineTensor, func(st *step, i int) []*isa.Instruction {
			s := i % 2
			if i == 0 {
				emit(st, &ls, none, none)
			}
			emit(st, &mm[s][0], [2]int64{sLoad, n * int64(i+1)}, [2]int64{sVec, 4 * int64(i-1)})
			for j := 1; j < 4; j++ {
				emit(st, &mm[s][j], none, none)
			}
			return st.out
		}),
		stream(isa.EngineVector, func(st *step, i int) []*isa.Instruction {
			s := i % 2
			for j := 0; j < 4; j++ {
				prev := int64(0)
				if j == 0 {
					prev = 4 * int64(i-1)
				}
				emit(st, &vec[s][j], [2]int64{sMM, 4*int64(i) + int64(j) + 1}, [2]int64{sAct, prev})
			}
			return st.out
		}),
		stream(isa.EngineScalar, func(st *step, i int) []*isa.Instruction {
			s := i % 2
			for j := 0; j < 4; j++ {
				prev := int64(0)
				if j == 0 {
					prev = n * int64(i-1)
				}
				emit(st, &act[s][j], [2]int64{sVec, 4*int64(i) + int64(j) + 1}, [2]int64{sStore, prev})
			}
			return st.out
		}),
		stream(isa.EngineGpSimd, func(st *step, i int) []*isa.Instruction {
			emit(st, &iotaTmpl, [2]int64{sAct, 4 * int64(i+1)}, none)
			return st.out
		}),
	}
	prog.SortStreams()
	return prog
}

func TestSyntheticMixRunsAndIsDeterministic(t *testing.T) {
	cfg := loadPreset(t, "trn2")
	var results []*Result
	for _, procs := range []int{1, 4, 1} {
		old := runtime.GOMAXPROCS(procs)
		res, err := Run(cfg, syntheticProgram(t, 300), Options{})
		runtime.GOMAXPROCS(old)
		require.NoError(t, err)
		res.HostTime = 0
		results = append(results, res)
	}
	require.Equal(t, int64(15*300+1), results[0].Instructions)
	for _, r := range results[1:] {
		require.Equal(t, results[0], r, "identical results whatever GOMAXPROCS")
	}
}

// BenchmarkSyntheticMix measures simulator speed on a long mixed stream:
// simulated instructions and Akita events per host second, on one core.
func BenchmarkSyntheticMix(b *testing.B) {
	for _, tc := range []struct {
		name   string
		noRace bool
	}{{"race-check", false}, {"no-race-check", true}} {
		b.Run(tc.name, func(b *testing.B) {
			// As the CLI does: a simulator's heap is short-lived garbage.
			defer debug.SetGCPercent(debug.SetGCPercent(400))
			cfg := loadPreset(b, "trn2")
			const iters = 20000
			m := hostcpu.NewMeter()
			for i := 0; i < b.N; i++ {
				res, err := Run(cfg, syntheticProgram(b, iters), Options{NoRaceCheck: tc.noRace})
				if err != nil {
					b.Fatal(err)
				}
				m.Add(res.Instructions, res.Events, res.HostTime)
			}
			m.Report(b)
		})
	}
}

// trivialHandler reschedules itself n times: Akita's bare event loop.
type trivialHandler struct {
	engine sim.Engine
	left   int
}

type trivialEvent struct {
	t sim.VTimeInSec
	h *trivialHandler
}

func (e *trivialEvent) Time() sim.VTimeInSec { return e.t }
func (e *trivialEvent) Handler() sim.Handler { return e.h }
func (e *trivialEvent) IsSecondary() bool    { return false }

func (h *trivialHandler) Handle(e sim.Event) error {
	h.left--
	if h.left > 0 {
		h.engine.Schedule(&trivialEvent{e.Time() + 1e-9, h})
	}
	return nil
}

// BenchmarkAkitaTrivialEvents measures Akita's serial engine on do-nothing
// events on this machine, the yardstick for the simulator's own speed
// (reference/akita.md measured about 6 M/s on its machine).
func BenchmarkAkitaTrivialEvents(b *testing.B) {
	e := sim.NewSerialEngine()
	h := &trivialHandler{engine: e, left: b.N}
	e.Schedule(&trivialEvent{0, h})
	start := hostcpu.Time()
	if err := e.Run(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/(hostcpu.Time()-start).Seconds(), "events/cpu-s")
}

package chip

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"

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
	var opIn, opMid, opOut [2][4]isa.Operand
	var opAcc [2][4]isa.Operand
	var wholeIn, wholeOut [2]isa.Operand
	for s := 0; s < 2; s++ {
		wholeIn[s], wholeOut[s] = whole(in[s]), whole(out[s])
		for j := 0; j < 4; j++ {
			opIn[s][j], opMid[s][j], opOut[s][j] = slice(in[s], j), slice(mid[s], j), slice(out[s], j)
			opAcc[s][j] = whole(acc[s][j])
		}
	}
	opHin, opHout, opW, opG := whole(hin), whole(hout), whole(w), whole(g)
	sem := func(id int32) isa.SemRef { return isa.SemRef{ID: id} }
	const (
		sLoad = iota + 1
		sMM
		sVec
		sAct
		sStore
		sG
	)
	waitGE := func(id int32, v int64) []isa.SemWait {
		if v <= 0 {
			return nil
		}
		return []isa.SemWait{{Sem: sem(id), Value: v}}
	}
	sig := func(id int32) []isa.SemSignal { return []isa.SemSignal{{Sem: sem(id), Add: 1}} }
	stream := func(e isa.Engine, gen func(i int) []*isa.Instruction) isa.StreamSource {
		return isa.StreamSource{Key: isa.StreamKey{Engine: e}, Count: -1, Open: func() isa.Stream {
			i := 0
			var buf []*isa.Instruction
			return isa.FuncStream(func() (*isa.Instruction, error) {
				for len(buf) == 0 {
					if i >= iters {
						return nil, nil
					}
					buf = gen(i)
					i++
				}
				in := buf[0]
				buf = buf[1:]
				return in, nil
			})
		}}
	}
	n := int64(16) // DMA engines: a transfer raises its semaphore by 16
	ops := func(o ...isa.Operand) []isa.Operand { return o }
	prog.Streams = []isa.StreamSource{
		stream(isa.EngineSync, func(i int) []*isa.Instruction {
			s := i % 2
			ld := &isa.Instruction{Op: isa.OpDMACopy, Engine: isa.EngineSync, Outs: ops(wholeIn[s]), Ins: ops(opHin),
				Attrs: isa.Attrs{Queue: 0, DGE: isa.DGEHardware}, Waits: waitGE(sMM, 4*int64(i-1)), Signal: sig(sLoad), OpID: 1}
			st := &isa.Instruction{Op: isa.OpDMACopy, Engine: isa.EngineSync, Outs: ops(opHout), Ins: ops(wholeOut[s]),
				Attrs: isa.Attrs{Queue: 1, DGE: isa.DGEHardware}, Waits: waitGE(sAct, 4*int64(i+1)), Signal: sig(sStore), OpID: 5}
			return []*isa.Instruction{ld, st}
		}),
		stream(isa.EngineTensor, func(i int) []*isa.Instruction {
			s := i % 2
			var out []*isa.Instruction
			if i == 0 {
				out = append(out, &isa.Instruction{Op: isa.OpLoadStationary, Engine: isa.EngineTensor, Ins: ops(opW), OpID: 2})
			}
			for j := 0; j < 4; j++ {
				var waits []isa.SemWait
				if j == 0 {
					waits = append(waitGE(sLoad, n*int64(i+1)), waitGE(sVec, 4*int64(i-1))...)
				}
				out = append(out, &isa.Instruction{Op: isa.OpMultiplyMoving, Engine: isa.EngineTensor, Outs: ops(opAcc[s][j]),
					Ins: ops(opIn[s][j]), Attrs: isa.Attrs{Start: true, Stop: true}, Waits: waits, Signal: sig(sMM), OpID: 2})
			}
			return out
		}),
		stream(isa.EngineVector, func(i int) []*isa.Instruction {
			s := i % 2
			var out []*isa.Instruction
			for j := 0; j < 4; j++ {
				waits := waitGE(sMM, 4*int64(i)+int64(j)+1)
				if j == 0 {
					waits = append(waits, waitGE(sAct, 4*int64(i-1))...)
				}
				out = append(out, &isa.Instruction{Op: isa.OpTensorCopy, Engine: isa.EngineVector, Outs: ops(opMid[s][j]),
					Ins: ops(opAcc[s][j]), Waits: waits, Signal: sig(sVec), OpID: 3})
			}
			return out
		}),
		stream(isa.EngineScalar, func(i int) []*isa.Instruction {
			s := i % 2
			var out []*isa.Instruction
			for j := 0; j < 4; j++ {
				waits := waitGE(sVec, 4*int64(i)+int64(j)+1)
				if j == 0 {
					waits = append(waits, waitGE(sStore, n*int64(i-1))...)
				}
				out = append(out, &isa.Instruction{Op: isa.OpActivation, Engine: isa.EngineScalar, Outs: ops(opOut[s][j]),
					Ins: ops(opMid[s][j]), Attrs: isa.Attrs{Func: isa.ActGelu, Scale: 1}, Waits: waits, Signal: sig(sAct), OpID: 4})
			}
			return out
		}),
		stream(isa.EngineGpSimd, func(i int) []*isa.Instruction {
			return []*isa.Instruction{{Op: isa.OpIota, Engine: isa.EngineGpSimd, Outs: ops(opG),
				Attrs: isa.Attrs{Step: 1}, Waits: waitGE(sAct, 4*int64(i+1)), Signal: sig(sG), OpID: 6}}
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
			var instr, events int64
			var host float64
			cpu0 := hostcpu.Time()
			for i := 0; i < b.N; i++ {
				res, err := Run(cfg, syntheticProgram(b, iters), Options{NoRaceCheck: tc.noRace})
				if err != nil {
					b.Fatal(err)
				}
				instr += res.Instructions
				events += res.Events
				host += res.HostTime.Seconds()
			}
			cpu := (hostcpu.Time() - cpu0).Seconds()
			b.ReportMetric(float64(instr)/host, "instr/s")
			b.ReportMetric(float64(instr)/cpu, "instr/cpu-s")
			b.ReportMetric(float64(events)/host, "events/s")
			b.ReportMetric(float64(events)/float64(instr), "events/instr")
		})
	}
}

package asm

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/isa"
)

func readRich(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("testdata/rich.s")
	require.NoError(t, err)
	return string(src)
}

func mustParse(t *testing.T, src string) *isa.Program {
	t.Helper()
	p, err := Parse(src, "test.s", Options{})
	require.NoError(t, err)
	return p
}

func mustPrint(t *testing.T, p *isa.Program) string {
	t.Helper()
	s, err := String(p)
	require.NoError(t, err)
	return s
}

// streamOf returns the instructions of one stream.
func streamOf(t *testing.T, p *isa.Program, key isa.StreamKey) []*isa.Instruction {
	t.Helper()
	for _, s := range p.Streams {
		if s.Key == key {
			return drain(t, s)
		}
	}
	return nil
}

func drain(t *testing.T, s isa.StreamSource) []*isa.Instruction {
	t.Helper()
	var out []*isa.Instruction
	st := s.Open()
	for {
		in, err := st.Next()
		require.NoError(t, err)
		if in == nil {
			return out
		}
		out = append(out, in)
	}
}

// normalized returns the program's buffers and streams with source lines
// cleared, for comparing programs parsed from different text.
func normalized(t *testing.T, p *isa.Program) ([]isa.Buffer, map[isa.StreamKey][]isa.Instruction) {
	t.Helper()
	var bufs []isa.Buffer
	for _, b := range p.Buffers {
		c := *b
		c.Line = 0
		bufs = append(bufs, c)
	}
	streams := map[isa.StreamKey][]isa.Instruction{}
	for _, s := range p.Streams {
		for _, in := range drain(t, s) {
			c := *in
			c.Line = 0
			body := *in.Body
			body.ID = 0 // numbered in order of first use, which printing changes
			c.Body = &body
			streams[s.Key] = append(streams[s.Key], c)
		}
	}
	return bufs, streams
}

func TestRoundTripRichProgram(t *testing.T) {
	p1 := mustParse(t, readRich(t))
	text1 := mustPrint(t, p1)
	p2 := mustParse(t, text1)
	text2 := mustPrint(t, p2)
	assert.Equal(t, text1, text2, "printing is canonical")

	b1, s1 := normalized(t, p1)
	b2, s2 := normalized(t, p2)
	assert.Equal(t, b1, b2)
	assert.Equal(t, s1, s2)

	golden, err := os.ReadFile("testdata/rich.canonical.s")
	require.NoError(t, err)
	assert.Equal(t, string(golden), text1, "canonical text of testdata/rich.s")
	assert.Equal(t, text1, mustPrint(t, mustParse(t, string(golden))))
}

func TestRichProgramUsesEveryOpcode(t *testing.T) {
	p := mustParse(t, readRich(t))
	seen := map[isa.Opcode]bool{}
	engines := map[isa.Opcode]map[isa.Engine]bool{}
	for _, s := range p.Streams {
		for _, in := range drain(t, s) {
			seen[in.Op] = true
			if engines[in.Op] == nil {
				engines[in.Op] = map[isa.Engine]bool{}
			}
			engines[in.Op][in.Engine] = true
		}
	}
	for _, op := range isa.AllOpcodes() {
		assert.True(t, seen[op], "%s is not in testdata/rich.s", op)
	}
	for _, op := range []isa.Opcode{isa.OpTensorCopy, isa.OpTensorScalar, isa.OpTensorTensor, isa.OpSelect} {
		assert.Len(t, engines[op], len(op.EnginesOf()), "%s on every engine that runs it", op)
	}
}

func TestMatmulSugar(t *testing.T) {
	p := mustParse(t, `.version 1
.buffer w sbuf bf16 [128, 128]
.buffer x sbuf bf16 [128, 512]
.buffer acc psum fp32 [128, 512]
tensor matmul acc, w, x start stop perf=2 wait=s1>=16 wait=s2>=1 signal=s3 signal=s4+2 op=5
`)
	ins := streamOf(t, p, isa.StreamKey{Engine: isa.EngineTensor})
	require.Len(t, ins, 2)
	ls, mm := ins[0], ins[1]
	assert.Equal(t, isa.OpLoadStationary, ls.Op)
	assert.Equal(t, isa.OpMultiplyMoving, mm.Op)
	// Waits go on the load, signals on the multiply; both keep the op id
	// and the perf mode.
	assert.Equal(t, []isa.SemWait{{Sem: isa.SemRef{ID: 1}, Value: 16}, {Sem: isa.SemRef{ID: 2}, Value: 1}}, ls.Waits)
	assert.Empty(t, ls.Signal)
	assert.Empty(t, mm.Waits)
	assert.Equal(t, []isa.SemSignal{{Sem: isa.SemRef{ID: 3}, Add: 1}, {Sem: isa.SemRef{ID: 4}, Add: 2}}, mm.Signal)
	assert.Equal(t, int32(5), ls.OpID)
	assert.Equal(t, int32(5), mm.OpID)
	assert.Equal(t, uint8(2), ls.Attrs.PerfMode)
	assert.Equal(t, uint8(2), mm.Attrs.PerfMode)
	assert.True(t, mm.Attrs.Start)
	assert.True(t, mm.Attrs.Stop)
	assert.Equal(t, int32(0), ls.Ins[0].Buffer)
	assert.Equal(t, int32(2), mm.Outs[0].Buffer)
	assert.Equal(t, int32(1), mm.Ins[0].Buffer)
	assert.Equal(t, `.version 1
.buffer w sbuf bf16 [128, 128] part=0 offset=0
.buffer x sbuf bf16 [128, 512] part=0 offset=256
.buffer acc psum fp32 [128, 512] part=0 offset=0
tensor load_stationary w perf=2 wait=s1>=16 wait=s2>=1 op=5
tensor multiply_moving acc, x start stop perf=2 signal=s3 signal=s4+2 op=5
`, mustPrint(t, p))
}

func TestOperandViews(t *testing.T) {
	p := mustParse(t, `.version 1
.buffer A hbm bf16 [1024, 512] addr=8192
.buffer x sbuf bf16 [128, 512] part=0 offset=1024
.buffer c sbuf fp32 [64, 4, 64] part=64 offset=0
vector tensor_copy x[0:64, 0:512:2], x[64:128, 1:512:2]
vector tensor_copy c[0:64, 3, 0:16], c[0:64, 1:3, 0:64:8]
vector tensor_copy x[5, 7], x{p=32:48, off=10, ap=[[-2, 4], [1, 3]]}
sync dma_copy x, A[128:256, 0:512] queue=0
sync dma_copy x, A{off=64, ap=[[512, 128], [1, 256]]} queue=1
`)
	ins := streamOf(t, p, isa.StreamKey{Engine: isa.EngineVector})
	require.Len(t, ins, 3)
	ap := func(in *isa.Instruction, out bool) isa.AccessPattern {
		if out {
			return in.Outs[0].AP
		}
		return in.Ins[0].AP
	}
	dims := func(a isa.AccessPattern) []isa.Dim { return a.Dims[:a.NDims] }

	// Slices with steps: partitions are the first dimension.
	a := ap(ins[0], true)
	assert.Equal(t, int32(0), a.PartStart)
	assert.Equal(t, int32(64), a.PartCount)
	assert.Equal(t, int64(1024), a.Offset)
	assert.Equal(t, []isa.Dim{{Size: 256, Stride: 2}}, dims(a))
	a = ap(ins[0], false)
	assert.Equal(t, int32(64), a.PartStart)
	assert.Equal(t, int64(1024+2), a.Offset)
	assert.Equal(t, []isa.Dim{{Size: 256, Stride: 2}}, dims(a))

	// A single index drops its dimension; contiguous dimensions merge.
	a = ap(ins[1], true)
	assert.Equal(t, int32(64), a.PartStart, "the buffer starts at partition 64")
	assert.Equal(t, int64(3*64*4), a.Offset)
	assert.Equal(t, []isa.Dim{{Size: 16, Stride: 1}}, dims(a))
	a = ap(ins[1], false)
	assert.Equal(t, int64(64*4), a.Offset)
	assert.Equal(t, []isa.Dim{{Size: 16, Stride: 8}}, dims(a), "[2 x 64] and [8 x 8] merge")

	// A single partition and element; a raw pattern with a negative stride.
	a = ap(ins[2], true)
	assert.Equal(t, int32(5), a.PartStart)
	assert.Equal(t, int32(1), a.PartCount)
	assert.Equal(t, int64(1024+7*2), a.Offset)
	assert.Equal(t, int64(1), a.FreeSize())
	a = ap(ins[2], false)
	assert.Equal(t, int32(32), a.PartStart)
	assert.Equal(t, int32(16), a.PartCount)
	assert.Equal(t, int64(1024+10*2), a.Offset)
	assert.Equal(t, []isa.Dim{{Size: 4, Stride: -2}, {Size: 3, Stride: 1}}, dims(a))
	assert.Equal(t, isa.ViewRaw, ins[2].Ins[0].Kind)

	// HBM: the outermost dimension is the rows a transfer spreads over
	// partitions.
	dmas := streamOf(t, p, isa.StreamKey{Engine: isa.EngineSync})
	require.Len(t, dmas, 2)
	a = dmas[0].Ins[0].AP
	assert.Equal(t, isa.MemHBM, a.Mem)
	assert.Equal(t, int32(128), a.PartCount)
	assert.Equal(t, int64(512), a.PartStride)
	assert.Equal(t, int64(8192+128*512*2), a.Offset)
	a = dmas[1].Ins[0].AP
	assert.Equal(t, int32(128), a.PartCount)
	assert.Equal(t, int64(512), a.PartStride)
	assert.Equal(t, int64(8192+64*2), a.Offset)
	assert.Equal(t, []isa.Dim{{Size: 256, Stride: 1}}, dims(a))

	text := mustPrint(t, p)
	for _, line := range []string{
		"vector tensor_copy x[0:64, 0:512:2], x[64:128, 1:512:2]",
		"vector tensor_copy c[0:64, 3, 0:16], c[0:64, 1:3, 0:64:8]",
		"vector tensor_copy x[5, 7], x{p=32:48, off=10, ap=[[-2, 4], [1, 3]]}",
		"sync dma_copy x, A{off=64, ap=[[512, 128], [1, 256]]} queue=1 dge=none",
	} {
		assert.Contains(t, text, line+"\n")
	}
}

func TestSemaphoresCoresAndBarriers(t *testing.T) {
	p := mustParse(t, `.version 1
.core 0 1
sync sem_inc signal=s3@0 signal=s4@1.0+2 signal=s5
sync barrier sem=s7 cores=[0.0, 0.1, 1] target=3 wait=s1>=1
.core 1 0
sync sem_wait wait=s3@0.1>=1 wait=s2@1>=4
`)
	ins := streamOf(t, p, isa.StreamKey{Chip: 0, Core: 1, Engine: isa.EngineSync})
	require.Len(t, ins, 2)
	assert.Equal(t, []isa.SemSignal{
		{Sem: isa.SemRef{Chip: 0, Core: 0, ID: 3}, Add: 1},
		{Sem: isa.SemRef{Chip: 1, Core: 0, ID: 4}, Add: 2},
		{Sem: isa.SemRef{Chip: 0, Core: 1, ID: 5}, Add: 1},
	}, ins[0].Signal)
	b := ins[1]
	assert.Equal(t, isa.OpBarrier, b.Op)
	assert.Equal(t, int32(7), b.Attrs.BarrierSem)
	assert.Equal(t, int64(3), b.Attrs.Target)
	assert.Equal(t, []isa.SemRef{{Chip: 0, Core: 0, ID: 7}, {Chip: 0, Core: 1, ID: 7}, {Chip: 0, Core: 1, ID: 7}}, b.Attrs.BarrierCores)

	ins = streamOf(t, p, isa.StreamKey{Chip: 1, Core: 0, Engine: isa.EngineSync})
	require.Len(t, ins, 1)
	assert.Equal(t, []isa.SemWait{{Sem: isa.SemRef{Chip: 0, Core: 1, ID: 3}, Value: 1}, {Sem: isa.SemRef{Chip: 1, Core: 1, ID: 2}, Value: 4}}, ins[0].Waits)

	assert.Equal(t, `.version 1
.core 0 1
sync sem_inc signal=s3@0 signal=s4@1.0+2 signal=s5
sync barrier sem=s7 cores=[0.0, 0.1, 0.1] target=3 wait=s1>=1
.core 1 0
sync sem_wait wait=s3@0.1>=1 wait=s2@1>=4
`, mustPrint(t, p))
}

func TestPlacement(t *testing.T) {
	p := mustParse(t, `.version 1
.buffer a sbuf bf16 [128, 3]
.buffer b sbuf bf16 [128, 3]
.buffer c sbuf bf16 [128, 8] offset=1000
.buffer d sbuf bf16 [128, 8]
.buffer p0 psum fp32 [128, 500]
.buffer p1 psum fp32 [128, 100]
.buffer h0 hbm bf16 [3]
.buffer h1 hbm bf16 [3]
.core 0 1
.buffer e sbuf bf16 [128, 3]
`)
	offsets := map[string]int64{}
	for _, b := range p.Buffers {
		offsets[b.Name] = b.Offset
	}
	assert.Equal(t, map[string]int64{
		"a": 0, "b": 64, // 64-byte alignment
		"c": 1000, "d": 1024, // after an explicit placement
		"p0": 0, "p1": 2048, // a PSUM buffer that fits a bank does not straddle one
		"h0": 0, "h1": 4096, // HBM 4 KiB alignment
		"e": 0, // each core has its own SBUF
	}, offsets)
	assert.Equal(t, int32(1), p.Buffers[len(p.Buffers)-1].Core)
	assert.Equal(t, int32(-1), p.Buffers[6].Core, "HBM buffers belong to the chip")

	p, err := Parse(".version 1\n.buffer p0 psum fp32 [128, 500]\n.buffer p1 psum fp32 [128, 100]\n", "t.s", Options{PSUMBankBytes: 1 << 14})
	require.NoError(t, err)
	assert.Equal(t, int64(2000), p.Buffers[1].Offset, "banks of 16 KiB")
}

func TestParseEmptyAndComments(t *testing.T) {
	p := mustParse(t, "; header comment\n.version 1 ; trailing\n// slashes\n\n   \t\n.target trn3\n")
	assert.Equal(t, isa.AssemblyVersion, p.Version)
	assert.Equal(t, "trn3", p.Target)
	assert.Empty(t, p.Buffers)
	assert.Empty(t, p.Streams)
	assert.Equal(t, ".version 1\n.target trn3\n", mustPrint(t, p))
}

func TestFormatOperandWithoutProgram(t *testing.T) {
	op := isa.Operand{Buffer: 3, Kind: isa.ViewRaw, RawPart: [2]int32{0, 4}, RawDims: []isa.Dim{{Size: 2, Stride: 1}}}
	assert.Equal(t, "buf3{p=0:4, off=0, ap=[[1, 2]]}", FormatOperand(nil, &op))
	op = isa.Operand{Buffer: 1, Kind: isa.ViewSlices, Slices: []isa.Slice{{Start: 0, Stop: 4, Step: 1}, {Start: 2, Index: true}}}
	assert.Equal(t, "buf1[0:4, 2]", FormatOperand(nil, &op))
}

// hdr declares the buffers the error cases use (lines 1-4).
const hdr = ".version 1\n.buffer x sbuf bf16 [128, 512]\n.buffer p psum fp32 [128, 512]\n.buffer A hbm bf16 [128, 512]\n"

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want string
	}{
		// Directives and the header.
		{"unknown directive", ".version 1\n.section text\n", `k.s:2:1: unknown directive ".section" (directives: .version, .target, .core, .buffer)`},
		{"missing version, empty file", "", `k.s:1:1: missing ".version 1" header`},
		{"missing version, comments only", "; nothing\n", `k.s:1:1: missing ".version 1" header`},
		{"missing version before a buffer", ".buffer x sbuf bf16 [128, 512]\n", `k.s:1:1: missing ".version 1" header before .buffer`},
		{"missing version before an instruction", "vector nop\n", `k.s:1:1: missing ".version 1" header before the first instruction`},
		{"bad version", ".version 2\n", `k.s:1:10: unsupported assembly version 2 (this trnsim reads version 1)`},
		{"version not a number", ".version one\n", `k.s:1:10: expected version (an integer), got "one"`},
		{"version twice", ".version 1\n.version 1\n", `k.s:2:1: .version given twice`},
		{"junk after a directive", ".version 1 extra\n", `k.s:1:12: unexpected "extra" after .version`},
		{"target not a name", ".version 1\n.target 5\n", `k.s:2:9: expected a preset name after .target, got "5"`},
		{"target twice", ".version 1\n.target a\n.target b\n", `k.s:3:1: .target given twice`},
		// Non-ASCII text is printed as written, not byte by byte.
		{"non-ASCII buffer name", ".version 1\n.buffer größe sbuf bf16 [128, 64]\n", `k.s:2:11: unexpected character 'ö'`},
		{"non-ASCII first character", ".version 1\n.buffer 名前 sbuf bf16 [128, 64]\n", `k.s:2:9: unexpected character '名'`},
		{"core without its index", ".version 1\n.core 0\n", `k.s:2:8: expected core index (an integer), got "end of line"`},
		// Engines and opcodes.
		{"unknown engine", hdr + "dma tensor_copy x, x\n", `k.s:5:1: unknown engine "dma" (engines: tensor, vector, scalar, gpsimd, sync)`},
		{"engine that is not a name", hdr + "5 tensor_copy x, x\n", `k.s:5:1: unknown engine "5" (engines: tensor, vector, scalar, gpsimd, sync)`},
		{"missing opcode", hdr + "vector\n", `k.s:5:7: expected an opcode after vector, got "end of line"`},
		{"unknown opcode", hdr + "vector frobnicate x, x\n", `k.s:5:8: unknown opcode "frobnicate"`},
		{"opcode on the wrong engine", hdr + "vector multiply_moving p, x\n", `k.s:5:8: multiply_moving cannot run on vector (it runs on tensor)`},
		{"iota on vector", hdr + "vector iota x\n", `k.s:5:8: iota cannot run on vector (it runs on gpsimd)`},
		{"matmul off tensor", hdr + "vector matmul p, x, x\n", `k.s:5:8: matmul runs on tensor, not vector`},
		// Operands.
		{"unknown buffer", hdr + "vector tensor_copy x, nope\n", `k.s:5:23: unknown buffer "nope" (declare it with .buffer before use)`},
		{"slice out of range", hdr + "vector tensor_copy x[0:129], x\n", `k.s:5:20: slice 0:129 out of range for dimension 0 of x (size 128)`},
		{"empty slice", hdr + "vector tensor_copy x[0:128, 8:8], x\n", `k.s:5:20: slice 8:8 out of range for dimension 1 of x (size 512)`},
		{"index out of range", hdr + "vector tensor_copy x[0:128, 600], x\n", `k.s:5:20: index 600 out of range for dimension 1 of x (size 512)`},
		{"too many slices", hdr + "vector tensor_copy x[0:128, 0:512, 0], x\n", `k.s:5:20: buffer x has 2 dimensions, view gives 3`},
		{"zero step", hdr + "vector tensor_copy x[0:128, 0:512:0], x\n", `k.s:5:35: slice step must be positive, got 0`},
		{"strided partitions", hdr + "vector tensor_copy x[0:128:2, 0:512], x\n", `k.s:5:20: partition dimension of x cannot be strided`},
		{"raw pattern out of range", hdr + "vector tensor_copy x{p=0:128, off=500, ap=[[1, 64]]}, x\n", `k.s:5:20: access pattern reaches bytes [1000, 1128) outside buffer x [0, 1024)`},
		{"raw partitions out of range", hdr + "vector tensor_copy x{p=0:129, off=0, ap=[[1, 64]]}, x\n", `k.s:5:20: partitions 0:129 outside buffer x (0:128)`},
		{"raw field unknown", hdr + "vector tensor_copy x{p=0:128, q=1}, x\n", `k.s:5:31: unknown access-pattern field "q" (fields: p, off, ap)`},
		{"raw field twice", hdr + "vector tensor_copy x{off=1, off=2}, x\n", `k.s:5:29: off given twice`},
		{"raw p on hbm", hdr + "sync dma_copy x, A{p=0:1, off=0, ap=[[512, 128], [1, 512]]} queue=0\n", `k.s:5:20: HBM access patterns have no p=; the first ap pair is the row dimension`},
		{"raw size zero", hdr + "vector tensor_copy x{ap=[[1, 0]]}, x\n", `k.s:5:30: size must be positive, got 0`},
		{"unclosed slice", hdr + "vector tensor_copy x[0:128, 0:512], x[\n", `k.s:5:39: expected slice start (an integer), got "end of line"`},
		// Operand counts.
		{"too few operands", hdr + "vector tensor_copy x\n", `k.s:5:8: tensor_copy takes 2 operand(s), got 1`},
		{"too many operands", hdr + "vector tensor_tensor x, x, x, x\n", `k.s:5:8: tensor_tensor takes 3 operand(s), got 4`},
		{"optional operands", hdr + "scalar activation x\n", `k.s:5:8: activation takes 2 to 4 operand(s), got 1`},
		{"matmul operands", hdr + "tensor matmul p, x\n", `k.s:5:8: matmul takes 3 operands (dst, stationary, moving), got 2`},
		// Attributes.
		{"attribute not for the opcode", hdr + "vector tensor_copy x, x alu=add\n", `k.s:5:25: tensor_copy does not take attribute "alu" (it takes: wait, signal, op)`},
		{"flag not for the opcode", hdr + "vector tensor_copy x, x start\n", `k.s:5:25: tensor_copy does not take attribute "start" (it takes: wait, signal, op)`},
		{"attribute not for matmul", hdr + "tensor matmul x, x, x bogus=3\n", `k.s:5:23: matmul (load_stationary + multiply_moving) does not take attribute "bogus" (it takes: start, stop, perf, wait, signal, op)`},
		{"duplicate attribute", hdr + "vector tensor_tensor x, x, x alu=add alu=max\n", `k.s:5:38: attribute alu given twice`},
		{"duplicate op id", hdr + "vector tensor_copy x, x wait=s1>=1 op=1 op=2\n", `k.s:5:41: attribute op given twice`},
		{"duplicate flag", hdr + "tensor multiply_moving p, x start start\n", `k.s:5:35: attribute start given twice`},
		{"bad perf mode", hdr + "tensor multiply_moving p, x perf=3\n", `k.s:5:34: perf mode must be 0, 2 (FP8 double row) or 4 (MX quad), got 3`},
		{"bad axis", hdr + "vector tensor_reduce x, x axis=5\n", `k.s:5:32: axis must be between 1 and 4, got 5`},
		{"unknown activation", hdr + "scalar activation x, x func=softplus\n", `k.s:5:29: unknown activation function "softplus"`},
		{"unknown alu op", hdr + "vector tensor_tensor x, x, x alu=plus\n", `k.s:5:34: unknown ALU operator "plus"`},
		{"negative op id", hdr + "vector tensor_copy x, x op=-1\n", `k.s:5:28: op id must be between 0 and 2147483647`},
		{"queue out of range", hdr + "sync dma_copy x, A queue=99999\n", `k.s:5:26: queue must be between 0 and 32767, got 99999`},
		{"unknown dge", hdr + "sync dma_copy x, A dge=auto\n", `k.s:5:24: unknown descriptor generation "auto" (none, sw, hw)`},
		{"immediate not a number", hdr + "vector tensor_scalar x, x imm0=abc\n", `k.s:5:32: expected imm0 (a number), got "abc"`},
		{"immediate overflows", hdr + "vector tensor_scalar x, x imm0=1e999\n", `k.s:5:32: imm0: "1e999" is not a finite number`},
		{"attribute without value", hdr + "vector tensor_reduce x, x axis\n", `k.s:5:31: expected "=", got "end of line"`},
		{"barrier without target", hdr + "sync barrier sem=s7 cores=[0.1]\n", `k.s:5:6: barrier needs sem=, cores=[...] and target=`},
		{"barrier with a remote sem", hdr + "sync barrier sem=s7@1 cores=[0.1] target=1\n", `k.s:5:14: barrier sem names the local semaphore; give remote cores in cores=`},
		// Semaphores.
		{"semaphore not s<n>", hdr + "vector tensor_copy x, x wait=t1>=1\n", `k.s:5:30: expected a semaphore such as s3, got "t1"`},
		{"semaphore without number", hdr + "vector tensor_copy x, x signal=s\n", `k.s:5:32: expected a semaphore such as s3, got "s"`},
		{"semaphore with letters", hdr + "vector tensor_copy x, x signal=s1a\n", `k.s:5:32: expected a semaphore such as s3, got "s1a"`},
		{"remote core not a number", hdr + "vector tensor_copy x, x signal=s1@x\n", `k.s:5:35: expected CHIP.CORE or CORE, got "x"`},
		{"remote core with three parts", hdr + "vector tensor_copy x, x signal=s1@1.2.3\n", `k.s:5:35: expected CHIP.CORE or CORE, got "1.2.3"`},
		{"wait without >=", hdr + "vector tensor_copy x, x wait=s1=1\n", `k.s:5:32: expected ">=", got "="`},
		{"zero signal increment", hdr + "vector tensor_copy x, x signal=s1+0\n", `k.s:5:35: signal increment must be positive, got 0`},
		// Characters.
		{"unexpected character", hdr + "vector tensor_copy x, x $\n", `k.s:5:25: unexpected character '$'`},
		{"hash is not a comment", hdr + "vector tensor_copy x, x # note\n", `k.s:5:25: unexpected character '#'`},
		{"lone >", hdr + "vector tensor_copy x, x wait=s1>1\n", `k.s:5:32: unexpected character '>'`},
		{"NUL byte", hdr + "vector tensor_copy x, x\x00\n", `k.s:5:24: NUL byte in source`},
		// Buffers.
		{"reserved buffer name", ".version 1\n.buffer start sbuf bf16 [128, 512]\n", `k.s:2:9: "start" is a reserved word and cannot name a buffer`},
		{"reserved buffer name stop", ".version 1\n.buffer stop sbuf bf16 [128, 512]\n", `k.s:2:9: "stop" is a reserved word and cannot name a buffer`},
		{"duplicate buffer", hdr + ".buffer x sbuf fp32 [128, 4]\n", `k.s:5:9: buffer "x" declared twice`},
		{"buffer name not a name", ".version 1\n.buffer 5 sbuf bf16 [1]\n", `k.s:2:9: expected a buffer name, got "5"`},
		{"bad dtype", ".version 1\n.buffer y sbuf bf17 [128, 4]\n", `k.s:2:16: unknown dtype "bf17" (dtypes: fp32, bf16, fp16, tf32, fp8e4, fp8e5, fp8e3, int32, uint32, int16, uint16, int8, uint8)`},
		{"bad memory", ".version 1\n.buffer y dram bf16 [128, 4]\n", `k.s:2:11: unknown memory "dram" (memories: hbm, sbuf, psum)`},
		{"zero dimension", ".version 1\n.buffer y sbuf bf16 [0, 4]\n", `k.s:2:22: dimension size must be positive, got 0`},
		{"shape without brackets", ".version 1\n.buffer y sbuf bf16 128, 4\n", `k.s:2:21: expected "[", got "128"`},
		{"too many dimensions", ".version 1\n.buffer y sbuf bf16 [1, 2, 3, 4, 5, 6]\n", `k.s:2:9: buffer "y" has 6 dimensions; at most 5 allowed`},
		{"buffer too large", ".version 1\n.buffer y hbm bf16 [1099511627776, 1099511627776]\n", `k.s:2:9: buffer "y" is too large`},
		{"duplicate buffer attribute", ".version 1\n.buffer y sbuf bf16 [128, 4] offset=1 offset=2\n", `k.s:2:39: attribute offset given twice`},
		{"unknown buffer attribute", ".version 1\n.buffer y sbuf bf16 [128, 4] color=1\n", `k.s:2:30: unknown buffer attribute "color" (attributes: chip, core, part, offset, addr)`},
		{"offset on hbm", ".version 1\n.buffer y hbm bf16 [128, 4] offset=1\n", `k.s:2:29: HBM buffers are placed with addr=, not offset=`},
		{"addr on sbuf", ".version 1\n.buffer y sbuf bf16 [128, 4] addr=1\n", `k.s:2:30: sbuf buffers are placed with offset=, not addr=`},
		{"core on hbm", ".version 1\n.buffer y hbm bf16 [128, 4] core=1\n", `k.s:2:29: HBM buffers belong to a chip, not a core`},
		{"part on hbm", ".version 1\n.buffer y hbm bf16 [128, 4] part=1\n", `k.s:2:29: HBM buffers have no partitions`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse(tc.src, "k.s", Options{})
			require.Error(t, err, "parsed: %+v", p)
			assert.Nil(t, p)
			assert.Equal(t, tc.want, err.Error())
			var pe *Error
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "k.s", pe.File)
			assert.LessOrEqual(t, pe.Line, max(1, strings.Count(tc.src, "\n")))
		})
	}
}

// A transfer that symmetric-core reuse keeps for the transfers it stands
// for keeps its real destination, the core it mirrors and its images'
// chips through print and parse; via= and mirror= come together.
func TestMirroredTransferRoundTrip(t *testing.T) {
	src := ".version 1\n.target trn2\n.buffer a hbm fp32 [128, 64]\n.buffer b hbm fp32 [128, 64] addr=65536\n" +
		"gpsimd dma_copy b, a queue=14 dge=none acc=add via=1.2 mirror=3.0 images=[1.2, 3.0]\n"
	p := mustParse(t, src)
	var in *isa.Instruction
	for _, ss := range p.Streams {
		if ss.Key.Engine == isa.EngineGpSimd {
			var err error
			in, err = ss.Open().Next()
			require.NoError(t, err)
		}
	}
	require.NotNil(t, in)
	a := in.Attrs
	assert.True(t, a.Via)
	assert.Equal(t, [4]int32{1, 2, 3, 0}, [4]int32{a.ViaChip, a.ViaCore, a.MirrorChip, a.MirrorCore})
	assert.Equal(t, []int32{1, 2, 3, 0}, a.LinkImages)
	text := mustPrint(t, p)
	assert.Contains(t, text, "acc=add via=1.2 mirror=3.0 images=[1.2, 3.0]")
	assert.Equal(t, text, mustPrint(t, mustParse(t, text)))

	for _, bad := range []string{"via=1.2", "mirror=3.0", "images=[1.2]"} {
		_, err := Parse(".version 1\n.buffer a hbm fp32 [128, 64]\n.buffer b hbm fp32 [128, 64] addr=65536\ngpsimd dma_copy b, a queue=1 "+bad+"\n", "k.s", Options{})
		assert.Error(t, err, bad)
	}
}

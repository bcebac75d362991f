package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/isa/asm"
)

// The writer must satisfy the simulator's tracer interface.
var _ chip.Tracer = (*TraceWriter)(nil)

// traceDoc is a decoded trace file; numbers stay json.Number so times can
// be compared exactly.
type traceDoc struct {
	Events          []map[string]any
	DisplayTimeUnit string
	OtherData       map[string]any
}

// parseTrace decodes a trace and checks it against the trace-event format:
// the object layout, the fields of every event, the metadata events and
// that every track used by a complete event is named before its first use.
func parseTrace(t *testing.T, data []byte) traceDoc {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var top map[string]any
	require.NoError(t, dec.Decode(&top), "trace is not JSON:\n%s", data)
	require.False(t, dec.More(), "trailing data after the trace object")

	raw, ok := top["traceEvents"].([]any)
	require.True(t, ok, "top-level object has no traceEvents array")
	doc := traceDoc{}
	doc.DisplayTimeUnit, _ = top["displayTimeUnit"].(string)
	doc.OtherData, _ = top["otherData"].(map[string]any)
	require.NotNil(t, doc.OtherData, "otherData is not an object")

	type track struct{ pid, tid int64 }
	procNamed := map[int64]bool{}
	threadNamed := map[track]bool{}
	for i, r := range raw {
		ev, ok := r.(map[string]any)
		require.True(t, ok, "event %d is not an object", i)
		doc.Events = append(doc.Events, ev)
		for _, k := range []string{"ph", "pid", "tid", "name"} {
			require.Contains(t, ev, k, "event %d: %v", i, ev)
		}
		name, ok := ev["name"].(string)
		require.True(t, ok, "event %d: name is not a string", i)
		pid, tid := intField(t, ev, "pid"), intField(t, ev, "tid")
		switch ev["ph"] {
		case "X":
			assert.GreaterOrEqual(t, floatField(t, ev, "ts"), 0.0, "event %d", i)
			assert.GreaterOrEqual(t, floatField(t, ev, "dur"), 0.0, "event %d", i)
			assert.IsType(t, "", ev["cat"], "event %d: cat", i)
			assert.IsType(t, map[string]any{}, ev["args"], "event %d: args", i)
			assert.True(t, procNamed[pid], "event %d: pid %d used before its process_name", i, pid)
			assert.True(t, threadNamed[track{pid, tid}], "event %d: pid %d tid %d used before its thread_name", i, pid, tid)
		case "M":
			args, ok := ev["args"].(map[string]any)
			require.True(t, ok, "metadata event %d has no args", i)
			switch name {
			case "process_name":
				assert.IsType(t, "", args["name"], "event %d: args.name", i)
				procNamed[pid] = true
			case "thread_name":
				assert.IsType(t, "", args["name"], "event %d: args.name", i)
				threadNamed[track{pid, tid}] = true
			case "process_sort_index", "thread_sort_index":
				assert.IsType(t, json.Number(""), args["sort_index"], "event %d: args.sort_index", i)
			default:
				t.Errorf("event %d: unknown metadata %q", i, name)
			}
		default:
			t.Errorf("event %d: unexpected phase %v", i, ev["ph"])
		}
	}
	return doc
}

func intField(t *testing.T, ev map[string]any, k string) int64 {
	t.Helper()
	n, ok := ev[k].(json.Number)
	require.True(t, ok, "%s is not a number in %v", k, ev)
	v, err := n.Int64()
	require.NoError(t, err, "%s is not an integer in %v", k, ev)
	return v
}

func floatField(t *testing.T, ev map[string]any, k string) float64 {
	t.Helper()
	n, ok := ev[k].(json.Number)
	require.True(t, ok, "%s is not a number in %v", k, ev)
	v, err := n.Float64()
	require.NoError(t, err)
	return v
}

// filter returns the events of one phase and category ("" for any).
func (d traceDoc) filter(ph, cat string) []map[string]any {
	var out []map[string]any
	for _, ev := range d.Events {
		if ev["ph"] == ph && (cat == "" || ev["cat"] == cat) {
			out = append(out, ev)
		}
	}
	return out
}

// meta returns the args of metadata event name on (pid, tid).
func (d traceDoc) meta(name string, pid, tid int64) map[string]any {
	for _, ev := range d.Events {
		if ev["ph"] == "M" && ev["name"] == name && ev["pid"] == json.Number(fmt.Sprint(pid)) && ev["tid"] == json.Number(fmt.Sprint(tid)) {
			return ev["args"].(map[string]any)
		}
	}
	return nil
}

func num(v any) string {
	if n, ok := v.(json.Number); ok {
		return n.String()
	}
	return fmt.Sprintf("<%T %v>", v, v)
}

func TestTraceWriterEvents(t *testing.T) {
	mm := &isa.Instruction{Body: &isa.Body{Op: isa.OpMultiplyMoving, Engine: isa.EngineTensor, OpID: 7}, Line: 12}
	cp := &isa.Instruction{Body: &isa.Body{Op: isa.OpTensorCopy, Engine: isa.EngineVector, Chip: 1, Core: 1}, Line: 13}
	dm := &isa.Instruction{Body: &isa.Body{Op: isa.OpDMACopy, Engine: isa.EngineSync, OpID: 3}, Line: 4}

	var out bytes.Buffer
	w := NewTraceWriter(&out, nil)
	// Out of time order, on two cores, with a zero-length event.
	w.Instruction(0, 0, isa.EngineTensor, mm, 5*clock.Microsecond, 6*clock.Microsecond)
	w.Instruction(0, 0, isa.EngineTensor, mm, 1500*clock.Nanosecond+1, 2*clock.Microsecond)
	w.Wait(1, 1, isa.EngineVector, cp, isa.SemRef{Chip: 1, Core: 0, ID: 3}, 0, 700*clock.Nanosecond)
	w.Instruction(1, 1, isa.EngineVector, cp, 700*clock.Nanosecond, 700*clock.Nanosecond)
	w.DMA(0, 0, 3, 1, 0, dm, 4096, 100*clock.Nanosecond, 200*clock.Nanosecond)
	w.DMA(0, 0, 3, 1, 1, dm, 2048, 100*clock.Nanosecond, 150*clock.Nanosecond)
	w.DMA(0, 0, 0, 1, 0, dm, 8192, 0, 300*clock.Nanosecond)
	w.DMA(0, 0, 3, 1, 0, dm, 1024, 200*clock.Nanosecond, 250*clock.Nanosecond)
	require.NoError(t, w.Close())

	doc := parseTrace(t, out.Bytes())
	assert.Equal(t, "ns", doc.DisplayTimeUnit)
	assert.Equal(t, "3", num(doc.OtherData["instructions"]))
	assert.Equal(t, "1", num(doc.OtherData["waits"]))
	assert.Equal(t, "4", num(doc.OtherData["dma_shares"]))

	instrs := doc.filter("X", "instr")
	require.Len(t, instrs, 3)
	first := instrs[0]
	assert.Equal(t, "multiply_moving", first["name"])
	assert.Equal(t, "1", num(first["pid"]))
	assert.Equal(t, "1", num(first["tid"]))
	assert.Equal(t, "5", num(first["ts"]))
	assert.Equal(t, "1", num(first["dur"]))
	args := first["args"].(map[string]any)
	assert.Equal(t, "7", num(args["op"]))
	assert.Equal(t, "12", num(args["line"]))
	assert.NotContains(t, args, "asm", "no program, no assembly text")
	// Femtosecond resolution survives.
	assert.Equal(t, "1.500000001", num(instrs[1]["ts"]))
	assert.Equal(t, "0.499999999", num(instrs[1]["dur"]))
	assert.Equal(t, "0", num(instrs[2]["dur"]))

	waits := doc.filter("X", "wait")
	require.Len(t, waits, 1)
	assert.Equal(t, "wait s3", waits[0]["name"])
	assert.Equal(t, "1002", num(waits[0]["pid"]))
	assert.Equal(t, "2", num(waits[0]["tid"]))
	assert.Equal(t, "0.7", num(waits[0]["dur"]))
	wargs := waits[0]["args"].(map[string]any)
	assert.Equal(t, "3", num(wargs["sem"]))
	assert.Equal(t, "1", num(wargs["chip"]))
	assert.Equal(t, "0", num(wargs["core"]))

	dmas := doc.filter("X", "dma")
	require.Len(t, dmas, 4)
	assert.Equal(t, "dma_copy", dmas[0]["name"])
	assert.Equal(t, "148", num(dmas[0]["tid"]))
	dargs := dmas[0]["args"].(map[string]any)
	assert.Equal(t, "4096", num(dargs["bytes"]))
	assert.Equal(t, "3", num(dargs["op"]))
	assert.Equal(t, "4", num(dargs["line"]))

	// Track names and orders, each written once.
	tracks := []struct {
		pid, tid int64
		name     string
	}{
		{1, 0, "chip 0 core 0"},
		{1002, 0, "chip 1 core 1"},
		{1, 1, "tensor"},
		{1002, 2, "vector"},
		{1, 148, "dma e3 q0"},
		{1, 149, "dma e3 q1"},
		{1, 100, "dma e0 q0"},
	}
	for _, tr := range tracks {
		t.Run(tr.name, func(t *testing.T) {
			kind, sortKind := "thread_name", "thread_sort_index"
			if tr.tid == 0 {
				kind, sortKind = "process_name", "process_sort_index"
			}
			a := doc.meta(kind, tr.pid, tr.tid)
			require.NotNil(t, a)
			assert.Equal(t, tr.name, a["name"])
			s := doc.meta(sortKind, tr.pid, tr.tid)
			require.NotNil(t, s)
			if tr.tid != 0 {
				assert.Equal(t, fmt.Sprint(tr.tid), num(s["sort_index"]))
			}
		})
	}
	assert.Len(t, doc.filter("M", ""), 2*len(tracks), "metadata is written once per track")
}

func TestTraceWriterEmpty(t *testing.T) {
	var out bytes.Buffer
	w := NewTraceWriter(&out, nil)
	require.NoError(t, w.Close())
	doc := parseTrace(t, out.Bytes())
	assert.Empty(t, doc.Events)
}

func TestTraceWriterAssemblyAndEscaping(t *testing.T) {
	name := "say \"hi\"\n\tback\\slash <&> \u2028 é \x01"
	sem := isa.SemRef{ID: 2}
	prog, err := asm.Parse(".version 1\n.buffer a sbuf bf16 [128, 64]\nvector memset a wait=s2>=1 op=5\n", "t.asm", asm.Options{})
	require.NoError(t, err)
	prog.SemNames = map[isa.SemRef]string{sem: name}
	require.Len(t, prog.Streams, 1)
	in, err := prog.Streams[0].Open().Next()
	require.NoError(t, err)
	require.NotNil(t, in)

	var out bytes.Buffer
	w := NewTraceWriter(&out, prog)
	w.Wait(0, 0, isa.EngineVector, in, sem, 0, clock.Nanosecond)
	w.Instruction(0, 0, isa.EngineVector, in, clock.Nanosecond, 2*clock.Nanosecond)
	require.NoError(t, w.Close())

	doc := parseTrace(t, out.Bytes())
	waits := doc.filter("X", "wait")
	require.Len(t, waits, 1)
	assert.Equal(t, name, waits[0]["args"].(map[string]any)["sem_name"])
	instrs := doc.filter("X", "instr")
	require.Len(t, instrs, 1)
	assert.Equal(t, asm.FormatInstruction(prog, in), instrs[0]["args"].(map[string]any)["asm"])
}

func TestAppendJSONString(t *testing.T) {
	cases := []string{
		"",
		"plain text 123",
		`with "quotes"`,
		"new\nline\r\ttab",
		`back\slash`,
		"html <b>&amp;</b>",
		"unicode é ∑ 😀 \u2028\u2029",
		"control \x00\x1f\x7f",
	}
	for _, s := range cases {
		t.Run(fmt.Sprintf("%q", s), func(t *testing.T) {
			b := appendJSONString([]byte("x"), s)
			require.Equal(t, byte('x'), b[0])
			var got string
			require.NoError(t, json.Unmarshal(b[1:], &got), "%s", b[1:])
			assert.Equal(t, s, got)
		})
	}
	// Invalid UTF-8 still gives valid JSON.
	b := appendJSONString(nil, "bad \xff byte")
	assert.True(t, json.Valid(b), "%s", b)
}

func TestAppendMicros(t *testing.T) {
	cases := []struct {
		in   clock.Time
		want string
	}{
		{0, "0"},
		{1, "0.000000001"},
		{clock.Picosecond, "0.000001"},
		{clock.Nanosecond, "0.001"},
		{700 * clock.Nanosecond, "0.7"},
		{clock.Microsecond, "1"},
		{clock.Microsecond + 10, "1.00000001"},
		{3*clock.Second + 5*clock.Nanosecond, "3000000.005"},
		{-clock.Nanosecond, "-0.001"},
		{clock.Never, "9223372036.854775807"},
		{-clock.Never - 1, "-9223372036.854775808"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			assert.Equal(t, tc.want, string(appendMicros(nil, tc.in)))
		})
	}
}

func TestTrackIDs(t *testing.T) {
	cases := []struct {
		name string
		got  int64
		want int64
	}{
		{"core 0.0", TracePID(0, 0), 1},
		{"core 2.7", TracePID(2, 7), 2008},
		{"tensor", EngineTID(isa.EngineTensor), 1},
		{"sync", EngineTID(isa.EngineSync), 5},
		{"dma e0 q0", DMATID(0, 0), 100},
		{"dma e3 q0", DMATID(3, 0), 148},
		{"dma e15 q15", DMATID(15, 15), 355},
		{"dma e0 q16 (wide)", DMATID(0, 16), wideDMATIDBase + 16},
		{"dma e1 q16 (wide)", DMATID(1, 16), wideDMATIDBase + 65536 + 16},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, tc.got) })
	}
}

// countingWriter records what reached it and can fail after a limit.
type countingWriter struct {
	n       int
	failAt  int
	failErr error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.failErr != nil && c.n+len(p) > c.failAt {
		return 0, c.failErr
	}
	c.n += len(p)
	return len(p), nil
}

func TestTraceWriterStreams(t *testing.T) {
	cw := &countingWriter{}
	w := NewTraceWriter(cw, nil)
	in := &isa.Instruction{Body: &isa.Body{Op: isa.OpTensorCopy, Engine: isa.EngineVector}}
	const n = 20000
	for i := 0; i < n; i++ {
		at := clock.Time(i) * clock.Nanosecond
		w.Instruction(0, 0, isa.EngineVector, in, at, at+clock.Nanosecond)
	}
	// Most of the events already reached the writer: only one buffer's
	// worth may be held back.
	assert.Greater(t, cw.n, n*60)
	before := cw.n
	require.NoError(t, w.Close())
	assert.Greater(t, cw.n, before)
	assert.Len(t, w.tids, 1)
}

func TestTraceWriterErrors(t *testing.T) {
	boom := errors.New("disk full")
	cw := &countingWriter{failAt: 1000, failErr: boom}
	w := NewTraceWriter(cw, nil)
	in := &isa.Instruction{Body: &isa.Body{Op: isa.OpTensorCopy, Engine: isa.EngineVector}}
	for i := 0; i < 20000; i++ {
		w.Instruction(0, 0, isa.EngineVector, in, 0, clock.Nanosecond)
	}
	assert.ErrorIs(t, w.Close(), boom)
	assert.ErrorIs(t, w.Close(), boom, "a second Close returns the same error")

	// Events after Close are ignored.
	var out bytes.Buffer
	w = NewTraceWriter(&out, nil)
	require.NoError(t, w.Close())
	size := out.Len()
	w.Instruction(0, 0, isa.EngineVector, in, 0, clock.Nanosecond)
	require.NoError(t, w.Close())
	assert.Equal(t, size, out.Len())
	assert.True(t, json.Valid(out.Bytes()))
}

// TestTraceWriterRun traces a small kernel through the simulator: a load,
// a compute that waits for it, a store that waits for the compute.
func TestTraceWriterRun(t *testing.T) {
	src := `.version 1
.buffer h hbm bf16 [128, 512]
.buffer o hbm bf16 [128, 512]
.buffer a sbuf bf16 [128, 512]
.buffer b sbuf bf16 [128, 512]
sync dma_copy a, h queue=0 dge=hw signal=s0
vector tensor_copy b, a wait=s0>=16 signal=s1 op=2
sync dma_copy o, b queue=1 dge=hw wait=s1>=1 signal=s2
`
	cfg, err := configs.LoadBytes([]byte("workload: {kind: gemm, gemm: {m: 128, k: 128, n: 128}}\n"), "test.yaml",
		configs.LoadOptions{Sets: []string{"hardware.preset=trn2"}})
	require.NoError(t, err)
	prog, err := asm.Parse(src, "test.asm", asm.Options{PSUMBankBytes: cfg.Hardware.Limits().PSUMBankBytes()})
	require.NoError(t, err)

	var out bytes.Buffer
	w := NewTraceWriter(&out, prog)
	res, err := chip.Run(cfg, prog, chip.Options{Tracer: w})
	require.NoError(t, err)
	require.NoError(t, w.Close())

	doc := parseTrace(t, out.Bytes())
	instrs := doc.filter("X", "instr")
	assert.Len(t, instrs, int(res.Instructions))
	var copyEv map[string]any
	for _, ev := range instrs {
		if ev["name"] == "tensor_copy" {
			copyEv = ev
		}
	}
	require.NotNil(t, copyEv, "no tensor_copy event")
	cargs := copyEv["args"].(map[string]any)
	assert.Equal(t, "2", num(cargs["op"]))
	assert.Equal(t, "7", num(cargs["line"]))
	assert.True(t, strings.HasPrefix(cargs["asm"].(string), "vector tensor_copy b, a"), cargs["asm"])

	waits := doc.filter("X", "wait")
	require.NotEmpty(t, waits)
	var vecWait bool
	for _, ev := range waits {
		if ev["name"] == "wait s0" && num(ev["tid"]) == fmt.Sprint(EngineTID(isa.EngineVector)) {
			vecWait = true
			assert.Greater(t, floatField(t, ev, "dur"), 0.0)
		}
	}
	assert.True(t, vecWait, "the vector engine's wait for the load is traced")

	dmas := doc.filter("X", "dma")
	require.NotEmpty(t, dmas)
	var loaded, stored int64
	queues := map[string]bool{}
	for _, ev := range dmas {
		a := ev["args"].(map[string]any)
		nb, err := a["bytes"].(json.Number).Int64()
		require.NoError(t, err)
		switch num(a["line"]) {
		case "6":
			loaded += nb
		case "8":
			stored += nb
		}
		queues[doc.meta("thread_name", intField(t, ev, "pid"), intField(t, ev, "tid"))["name"].(string)] = true
	}
	const tileBytes = 128 * 512 * 2
	assert.Equal(t, int64(tileBytes), loaded, "the load's shares add up to the tile")
	assert.Equal(t, int64(tileBytes), stored, "the store's shares add up to the tile")
	assert.Contains(t, queues, "dma e0 q0")
	assert.Contains(t, queues, "dma e0 q1")

	// The process is named for the core.
	assert.Equal(t, "chip 0 core 0", doc.meta("process_name", 1, 0)["name"])
}

func BenchmarkTraceWriterInstruction(b *testing.B) {
	w := NewTraceWriter(io.Discard, nil)
	in := &isa.Instruction{Body: &isa.Body{Op: isa.OpTensorCopy, Engine: isa.EngineVector, OpID: 3}, Line: 10}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		at := clock.Time(i) * clock.Nanosecond
		w.Instruction(0, 0, isa.EngineVector, in, at, at+clock.Nanosecond)
	}
	require.NoError(b, w.Close())
}

func BenchmarkTraceWriterDMA(b *testing.B) {
	w := NewTraceWriter(io.Discard, nil)
	in := &isa.Instruction{Body: &isa.Body{Op: isa.OpDMACopy, Engine: isa.EngineSync}, Line: 10}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		at := clock.Time(i) * clock.Nanosecond
		w.DMA(0, 0, i%16, 1, int16(i%4), in, 4096, at, at+clock.Nanosecond)
	}
	require.NoError(b, w.Close())
}

func TestTraceWriterDMASharesOfSeveralEngines(t *testing.T) {
	dm := &isa.Instruction{Body: &isa.Body{Op: isa.OpDMACopy, Engine: isa.EngineSync}, Line: 4}
	var out bytes.Buffer
	w := NewTraceWriter(&out, nil)
	w.DMA(0, 0, 4, 3, 2, dm, 512, 0, 100*clock.Nanosecond)
	require.NoError(t, w.Close())
	doc := parseTrace(t, out.Bytes())
	assert.Equal(t, "3", num(doc.OtherData["dma_shares"]))
	dmas := doc.filter("X", "dma")
	require.Len(t, dmas, 3, "one slice per engine")
	for i, d := range dmas {
		assert.Equal(t, fmt.Sprint(DMATID(4+i, 2)), num(d["tid"]))
	}
}

// A collective's DMA shares are drawn on collective tracks, named by the
// op; other traffic keeps the DMA tracks.
func TestTraceWriterCollectiveTracks(t *testing.T) {
	coll := &isa.Instruction{Body: &isa.Body{Op: isa.OpDMACopy, Engine: isa.EngineSync, OpID: 7}}
	plain := &isa.Instruction{Body: &isa.Body{Op: isa.OpDMACopy, Engine: isa.EngineSync, OpID: 3}}
	var out bytes.Buffer
	w := NewTraceWriter(&out, nil)
	w.SetCollectives(map[int32]string{7: "layers.0.o_proj.all_reduce"})
	w.DMA(0, 1, 0, 2, 12, coll, 512, 0, 100*clock.Nanosecond)
	w.DMA(0, 1, 0, 1, 2, plain, 512, 0, 100*clock.Nanosecond)
	require.NoError(t, w.Close())
	doc := parseTrace(t, out.Bytes())
	cs := doc.filter("X", "collective")
	require.Len(t, cs, 2)
	for i, c := range cs {
		assert.Equal(t, "layers.0.o_proj.all_reduce", c["name"])
		assert.Equal(t, fmt.Sprint(CollectiveTIDBase+int64(i)*DMAQueuesPerTID+12), num(c["tid"]))
	}
	ds := doc.filter("X", "dma")
	require.Len(t, ds, 1)
	assert.Equal(t, "dma_copy", ds[0]["name"])
}

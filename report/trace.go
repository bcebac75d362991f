package report

import (
	"bufio"
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/isa/asm"
)

// Track numbering of the trace. Every (chip, core) is one process; every
// engine sequencer and every DMA (engine, queue) that appears is one thread
// of it.
const (
	// PIDsPerChip spaces the process ids of chips: pid = chip*PIDsPerChip +
	// core + 1.
	PIDsPerChip = 1000
	// DMATIDBase is the thread id of DMA engine 0, queue 0; DMA engine e,
	// queue q is DMATIDBase + e*DMAQueuesPerTID + q. Engine sequencers have
	// thread ids 1..isa.NumEngines, so they sort first.
	DMATIDBase = 100
	// DMAQueuesPerTID is the stride of DMA engines in thread ids. A queue
	// outside [0, DMAQueuesPerTID) gets the thread id 1<<20 + e*65536 + q
	// instead, so ids never collide.
	DMAQueuesPerTID = 16

	wideDMATIDBase = 1 << 20

	// CollectiveTIDBase is the thread id of collective traffic on DMA
	// engine 0, queue 0 (collectives have tracks of their own, after the
	// DMA queues': CollectiveTIDBase + e*DMAQueuesPerTID + q).
	CollectiveTIDBase = 1 << 19
)

// TracePID returns the trace process id of a core.
func TracePID(chip, core int32) int64 { return int64(chip)*PIDsPerChip + int64(core) + 1 }

// EngineTID returns the trace thread id of an engine sequencer.
func EngineTID(eng isa.Engine) int64 { return int64(eng) + 1 }

// DMATID returns the trace thread id of a DMA engine's queue.
func DMATID(engine int, queue int16) int64 {
	if queue >= 0 && queue < DMAQueuesPerTID {
		return DMATIDBase + int64(engine)*DMAQueuesPerTID + int64(queue)
	}
	return wideDMATIDBase + int64(engine)*65536 + int64(queue)
}

// TraceWriter streams a simulation's timeline as a Chrome trace-event file
// (the JSON Object Format that Perfetto and chrome://tracing open). It
// implements chip.Tracer: pass it as chip.Options.Tracer, then call Close.
//
// Each event is written through a buffer as it arrives; nothing is kept but
// the set of tracks seen, so a trace of millions of instructions costs no
// memory. Events arrive out of time order, which the format allows. Times
// are written in microseconds (the format's unit) exactly, to the
// femtosecond.
//
// Engine instructions are complete ("X") events of category "instr" on the
// engine's thread, semaphore waits events of category "wait" on the waiting
// engine's thread, DMA engine shares events of category "dma" on the thread
// of the DMA engine and queue. Track names and sort orders are "M" metadata
// events, written the first time a track is used.
//
// A TraceWriter is safe for concurrent use. Write errors are kept: the first
// one is returned by Close, and events after it are dropped.
type TraceWriter struct {
	mu   sync.Mutex
	bw   *bufio.Writer
	prog *isa.Program
	err  error
	// n counts the events written (for the separators); closed is set by
	// Close.
	n      int64
	closed bool
	// Counts of each kind of event, reported in otherData.
	instrs, waits, dmas int64
	// Tracks whose metadata has been written.
	pids map[int64]struct{}
	tids map[[2]int64]struct{}
	// buf is the scratch space one event is formatted in.
	buf []byte
	// opNames caches the quoted JSON name of each opcode.
	opNames map[isa.Opcode][]byte
	// notes are extra otherData entries, in the order Note added them.
	notes [][2]string
	// collectives names the op ids whose DMA traffic is a collective's
	// (SetCollectives): it goes on collective tracks, named by the op.
	collectives map[int32][]byte
}

// SetCollectives names the workload ops that are collectives (op id to
// name): their DMA shares are drawn on tracks of their own ("collective
// e0 q12", category "collective") with the op's name, so communication
// stands apart from the compute traffic it overlaps.
func (t *TraceWriter) SetCollectives(ops map[int32]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.collectives = map[int32][]byte{}
	for id, name := range ops {
		q, _ := json.Marshal(name)
		t.collectives[id] = q
	}
}

// SetProgram makes prog the program whose instructions follow (a run of
// several launches, one program each).
func (t *TraceWriter) SetProgram(prog *isa.Program) { t.prog = prog }

// NewTraceWriter starts a trace on w. prog, if not nil, is the program being
// simulated; it gives each instruction event its assembly text. The caller
// keeps ownership of w: Close flushes but does not close it.
func NewTraceWriter(w io.Writer, prog *isa.Program) *TraceWriter {
	t := &TraceWriter{
		bw:      bufio.NewWriterSize(w, 256<<10),
		prog:    prog,
		pids:    map[int64]struct{}{},
		tids:    map[[2]int64]struct{}{},
		buf:     make([]byte, 0, 512),
		opNames: map[isa.Opcode][]byte{},
	}
	t.writeString(`{"traceEvents":[`)
	return t
}

// Instruction records an engine instruction that ran from start to end.
func (t *TraceWriter) Instruction(chip, core int32, eng isa.Engine, in *isa.Instruction, start, end clock.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.err != nil {
		return
	}
	pid, tid := TracePID(chip, core), EngineTID(eng)
	t.engineTrack(chip, core, pid, tid, eng)
	b := append(t.startX("instr", pid, tid, start, end), t.opName(in.Op)...)
	b = append(b, `,"args":{"op":`...)
	b = strconv.AppendInt(b, int64(in.OpID), 10)
	b = append(b, `,"line":`...)
	b = strconv.AppendInt(b, int64(in.Line), 10)
	if t.prog != nil {
		b = append(b, `,"asm":`...)
		b = appendJSONString(b, asm.FormatInstruction(t.prog, in))
	}
	b = append(b, "}}"...)
	t.event(b)
	t.instrs++
}

// Wait records engine eng waiting from start to end for semaphore sem
// before instruction in.
func (t *TraceWriter) Wait(chip, core int32, eng isa.Engine, in *isa.Instruction, sem isa.SemRef, start, end clock.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.err != nil {
		return
	}
	pid, tid := TracePID(chip, core), EngineTID(eng)
	t.engineTrack(chip, core, pid, tid, eng)
	b := append(t.startX("wait", pid, tid, start, end), `"wait s`...)
	b = strconv.AppendInt(b, int64(sem.ID), 10)
	b = append(b, `","args":{"sem":`...)
	b = strconv.AppendInt(b, int64(sem.ID), 10)
	b = append(b, `,"chip":`...)
	b = strconv.AppendInt(b, int64(sem.Chip), 10)
	b = append(b, `,"core":`...)
	b = strconv.AppendInt(b, int64(sem.Core), 10)
	if t.prog != nil {
		if s, ok := t.prog.SemNames[sem]; ok {
			b = append(b, `,"sem_name":`...)
			b = appendJSONString(b, s)
		}
	}
	if in != nil {
		b = append(b, `,"line":`...)
		b = strconv.AppendInt(b, int64(in.Line), 10)
	}
	b = append(b, "}}"...)
	t.event(b)
	t.waits++
}

// DMA records engines DMA engines, from engine on, each serving bytes of
// transfer in from queue queue, from start to end: one slice per engine.
func (t *TraceWriter) DMA(chip, core int32, engine, engines int, queue int16, in *isa.Instruction, bytes int64, start, end clock.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for e := engine; e < engine+engines; e++ {
		t.dma(chip, core, e, queue, in, bytes, start, end)
	}
}

func (t *TraceWriter) dma(chip, core int32, engine int, queue int16, in *isa.Instruction, bytes int64, start, end clock.Time) {
	if t.closed || t.err != nil {
		return
	}
	pid, tid := TracePID(chip, core), DMATID(engine, queue)
	cat, track := "dma", "dma e"
	name, coll := t.collectives[in.OpID]
	if coll && in.OpID != 0 && queue >= 0 && queue < DMAQueuesPerTID {
		tid = CollectiveTIDBase + int64(engine)*DMAQueuesPerTID + int64(queue)
		cat, track = "collective", "collective e"
	}
	if t.newTrack(chip, core, pid, tid) {
		b := t.startM("thread_name", pid, tid)
		b = append(b, `"name":"`...)
		b = append(b, track...)
		b = strconv.AppendInt(b, int64(engine), 10)
		b = append(b, " q"...)
		b = strconv.AppendInt(b, int64(queue), 10)
		b = append(b, `"}}`...)
		t.event(b)
		t.threadSort(pid, tid)
	}
	b := t.startX(cat, pid, tid, start, end)
	if cat == "collective" {
		b = append(b, name...)
	} else {
		b = append(b, t.opName(in.Op)...)
	}
	b = append(b, `,"args":{"op":`...)
	b = strconv.AppendInt(b, int64(in.OpID), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, bytes, 10)
	b = append(b, `,"line":`...)
	b = strconv.AppendInt(b, int64(in.Line), 10)
	b = append(b, "}}"...)
	t.event(b)
	t.dmas++
}

// Note adds a string entry to the trace's otherData (written by Close), for
// example to say that the trace keeps only a window of the run.
func (t *TraceWriter) Note(key, value string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.notes = append(t.notes, [2]string{key, value})
}

// Close finishes the JSON document and flushes it. It returns the first
// write error, if any. Events after Close are ignored; a second Close
// returns the same error.
func (t *TraceWriter) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return t.err
	}
	t.closed = true
	b := append(t.buf[:0], "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"trnsim\",\"time_unit\":\"us\""...)
	b = append(b, `,"instructions":`...)
	b = strconv.AppendInt(b, t.instrs, 10)
	b = append(b, `,"waits":`...)
	b = strconv.AppendInt(b, t.waits, 10)
	b = append(b, `,"dma_shares":`...)
	b = strconv.AppendInt(b, t.dmas, 10)
	for _, n := range t.notes {
		b = append(b, ',')
		b = appendJSONString(b, n[0])
		b = append(b, ':')
		b = appendJSONString(b, n[1])
	}
	b = append(b, "}}\n"...)
	t.buf = b
	t.write(b)
	if t.err == nil {
		if err := t.bw.Flush(); err != nil {
			t.err = err
		}
	}
	return t.err
}

// write writes p unless an earlier write failed.
func (t *TraceWriter) write(p []byte) {
	if t.err != nil {
		return
	}
	if _, err := t.bw.Write(p); err != nil {
		t.err = err
	}
}

// writeString writes s unless an earlier write failed.
func (t *TraceWriter) writeString(s string) {
	if t.err != nil {
		return
	}
	if _, err := t.bw.WriteString(s); err != nil {
		t.err = err
	}
}

// event writes one formatted event object with its separator. b is kept as
// the scratch buffer of the next event.
func (t *TraceWriter) event(b []byte) {
	t.buf = b
	sep := ",\n"
	if t.n == 0 {
		sep = "\n"
	}
	t.writeString(sep)
	t.write(b)
	t.n++
}

// startX formats the common fields of a complete event into t.buf, ending
// with the key of its name; the caller appends the quoted name and the args.
func (t *TraceWriter) startX(cat string, pid, tid int64, start, end clock.Time) []byte {
	b := append(t.buf[:0], `{"ph":"X","cat":"`...)
	b = append(b, cat...)
	b = append(b, `","pid":`...)
	b = strconv.AppendInt(b, pid, 10)
	b = append(b, `,"tid":`...)
	b = strconv.AppendInt(b, tid, 10)
	b = append(b, `,"ts":`...)
	b = appendMicros(b, start)
	dur := end - start
	if dur < 0 {
		dur = 0
	}
	b = append(b, `,"dur":`...)
	b = appendMicros(b, dur)
	return append(b, `,"name":`...)
}

// opName returns the quoted JSON name of an opcode.
func (t *TraceWriter) opName(op isa.Opcode) []byte {
	if s, ok := t.opNames[op]; ok {
		return s
	}
	s := appendJSONString(nil, op.String())
	t.opNames[op] = s
	return s
}

// newTrack reports whether thread tid of process pid is used for the first
// time; if so it writes the process's metadata when that is new too, and
// the caller writes the thread's.
func (t *TraceWriter) newTrack(chip, core int32, pid, tid int64) bool {
	key := [2]int64{pid, tid}
	if _, ok := t.tids[key]; ok {
		return false
	}
	t.tids[key] = struct{}{}
	if _, ok := t.pids[pid]; !ok {
		t.pids[pid] = struct{}{}
		b := t.startM("process_name", pid, 0)
		b = append(b, `"name":"chip `...)
		b = strconv.AppendInt(b, int64(chip), 10)
		b = append(b, " core "...)
		b = strconv.AppendInt(b, int64(core), 10)
		b = append(b, `"}}`...)
		t.event(b)
		b = t.startM("process_sort_index", pid, 0)
		b = append(b, `"sort_index":`...)
		b = strconv.AppendInt(b, pid, 10)
		b = append(b, "}}"...)
		t.event(b)
	}
	return true
}

// engineTrack writes the metadata of an engine's thread on first use.
func (t *TraceWriter) engineTrack(chip, core int32, pid, tid int64, eng isa.Engine) {
	if !t.newTrack(chip, core, pid, tid) {
		return
	}
	b := t.startM("thread_name", pid, tid)
	b = append(b, `"name":`...)
	b = appendJSONString(b, eng.String())
	b = append(b, "}}"...)
	t.event(b)
	t.threadSort(pid, tid)
}

// threadSort writes a thread's sort order: its thread id, so engines come
// before DMA queues.
func (t *TraceWriter) threadSort(pid, tid int64) {
	b := t.startM("thread_sort_index", pid, tid)
	b = append(b, `"sort_index":`...)
	b = strconv.AppendInt(b, tid, 10)
	b = append(b, "}}"...)
	t.event(b)
}

// startM formats a metadata event up to the opening of its args.
func (t *TraceWriter) startM(name string, pid, tid int64) []byte {
	b := append(t.buf[:0], `{"ph":"M","name":"`...)
	b = append(b, name...)
	b = append(b, `","pid":`...)
	b = strconv.AppendInt(b, pid, 10)
	b = append(b, `,"tid":`...)
	b = strconv.AppendInt(b, tid, 10)
	return append(b, `,"args":{`...)
}

// appendMicros appends a time in microseconds, exactly: femtoseconds are
// 1e-9 microseconds, so it is an integer with up to nine decimals.
func appendMicros(b []byte, t clock.Time) []byte {
	u := uint64(t)
	if t < 0 {
		b = append(b, '-')
		u = -u // two's complement magnitude, right for math.MinInt64 too
	}
	const perMicro = uint64(clock.Microsecond)
	b = strconv.AppendUint(b, u/perMicro, 10)
	frac := u % perMicro
	if frac == 0 {
		return b
	}
	var digits [9]byte
	for i := len(digits) - 1; i >= 0; i-- {
		digits[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := len(digits)
	for digits[n-1] == '0' {
		n--
	}
	b = append(b, '.')
	return append(b, digits[:n]...)
}

// appendJSONString appends s as a JSON string. Plain printable ASCII is
// copied directly; anything else goes through encoding/json, which escapes
// quotes, control characters and invalid UTF-8.
func appendJSONString(b []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			plain = false
			break
		}
	}
	if plain {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, err := json.Marshal(s)
	if err != nil { // cannot happen for a string
		return append(b, `""`...)
	}
	return append(b, q...)
}

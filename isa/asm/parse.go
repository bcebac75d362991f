package asm

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/trnsim/trnsim/isa"
)

// Reserved words that may not name a buffer: they are bare flags.
var reserved = map[string]bool{"start": true, "stop": true}

// Alignment used when the assembly leaves placement to the assembler.
const (
	sbufAlignBytes = 64
	hbmAlignBytes  = 4096
)

// Options tune parsing.
type Options struct {
	// PSUMBankBytes aligns automatically placed PSUM buffers to banks;
	// 2048 when zero.
	PSUMBankBytes int64
}

type parser struct {
	// written names the instruction as the line writes it where that is
	// not its opcode (matmul, which expands to two), for messages.
	written string
	file    string
	opts    Options
	prog    *isa.Program
	streams map[isa.StreamKey][]*isa.Instruction
	bodies  map[string]*isa.Body
	order   []isa.StreamKey
	chip    int32
	core    int32
	line    int
	toks    []token
	pos     int
	// bump allocators for buffers without explicit placement
	nextSBUF map[[2]int32]int64
	nextPSUM map[[2]int32]int64
	nextHBM  map[int32]int64
	sawVer   bool
	sawInst  bool
}

// Parse reads assembly text. file names the source in error messages.
func Parse(src, file string, opts Options) (*isa.Program, error) {
	if opts.PSUMBankBytes <= 0 {
		opts.PSUMBankBytes = 2048
	}
	p := &parser{file: file, opts: opts, prog: &isa.Program{Version: isa.AssemblyVersion},
		streams: map[isa.StreamKey][]*isa.Instruction{}, bodies: map[string]*isa.Body{},
		nextSBUF: map[[2]int32]int64{}, nextPSUM: map[[2]int32]int64{}, nextHBM: map[int32]int64{}}
	lines := strings.Split(src, "\n")
	for i, raw := range lines {
		p.line = i + 1
		if strings.IndexByte(raw, 0) >= 0 {
			return nil, p.errAt(strings.IndexByte(raw, 0)+1, "NUL byte in source")
		}
		toks, lerr := lexLine(stripComment(raw))
		if lerr != nil {
			lerr.File, lerr.Line = file, p.line
			return nil, lerr
		}
		if len(toks) == 0 {
			continue
		}
		p.toks, p.pos = toks, 0
		var err error
		if toks[0].kind == tDirective {
			err = p.directive()
		} else {
			err = p.instruction()
		}
		if err != nil {
			return nil, err
		}
	}
	if !p.sawVer {
		return nil, &Error{File: file, Line: 1, Col: 1, Msg: fmt.Sprintf("missing \".version %d\" header", isa.AssemblyVersion)}
	}
	for _, k := range p.order {
		p.prog.Streams = append(p.prog.Streams, isa.SliceSource(k, p.streams[k]))
	}
	p.prog.SortStreams()
	return p.prog, nil
}

func (p *parser) errAt(col int, format string, args ...any) error {
	return &Error{File: p.file, Line: p.line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) peek() token {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	end := 1
	if len(p.toks) > 0 {
		last := p.toks[len(p.toks)-1]
		end = last.col + len(last.text)
	}
	return token{kind: tEOL, text: "end of line", col: end}
}

func (p *parser) take() token {
	t := p.peek()
	if p.pos < len(p.toks) {
		p.pos++
	}
	return t
}

func (p *parser) expect(text string) error {
	t := p.take()
	if t.text != text || t.kind == tEOL {
		return p.errAt(t.col, "expected %q, got %q", text, t.text)
	}
	return nil
}

func (p *parser) isPunct(text string) bool {
	t := p.peek()
	return t.kind == tPunct && t.text == text
}

func (p *parser) int(what string) (int64, token, error) {
	t := p.take()
	if t.kind != tNum {
		return 0, t, p.errAt(t.col, "expected %s (an integer), got %q", what, t.text)
	}
	v, err := strconv.ParseInt(t.text, 0, 64)
	if err != nil {
		return 0, t, p.errAt(t.col, "%s: %q is not an integer", what, t.text)
	}
	return v, t, nil
}

func (p *parser) float(what string) (float64, error) {
	t := p.take()
	if t.kind != tNum {
		return 0, p.errAt(t.col, "expected %s (a number), got %q", what, t.text)
	}
	v, err := strconv.ParseFloat(t.text, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, p.errAt(t.col, "%s: %q is not a finite number", what, t.text)
	}
	return v, nil
}

func (p *parser) directive() error {
	d := p.take()
	if d.text != ".version" && !p.sawVer {
		return p.errAt(d.col, "missing \".version %d\" header before %s", isa.AssemblyVersion, d.text)
	}
	switch d.text {
	case ".version":
		v, t, err := p.int("version")
		if err != nil {
			return err
		}
		if v != isa.AssemblyVersion {
			return p.errAt(t.col, "unsupported assembly version %d (this trnsim reads version %d)", v, isa.AssemblyVersion)
		}
		if p.sawVer {
			return p.errAt(d.col, ".version given twice")
		}
		if p.sawInst || len(p.prog.Buffers) > 0 || p.prog.Target != "" {
			return p.errAt(d.col, ".version must come first")
		}
		p.sawVer = true
	case ".target":
		t := p.take()
		if t.kind != tIdent {
			return p.errAt(t.col, "expected a preset name after .target, got %q", t.text)
		}
		if p.prog.Target != "" {
			return p.errAt(d.col, ".target given twice")
		}
		p.prog.Target = t.text
	case ".core":
		chip, _, err := p.int("chip index")
		if err != nil {
			return err
		}
		core, t, err := p.int("core index")
		if err != nil {
			return err
		}
		if chip < 0 || core < 0 || chip > math.MaxInt16 || core > math.MaxInt16 {
			return p.errAt(t.col, "chip and core indices must be between 0 and %d", math.MaxInt16)
		}
		p.chip, p.core = int32(chip), int32(core)
	case ".buffer":
		if err := p.buffer(); err != nil {
			return err
		}
	default:
		return p.errAt(d.col, "unknown directive %q (directives: .version, .target, .core, .buffer)", d.text)
	}
	if t := p.peek(); t.kind != tEOL {
		return p.errAt(t.col, "unexpected %q after %s", t.text, d.text)
	}
	return nil
}

// .buffer NAME MEM DTYPE [d0, d1, ...] [chip=C] [core=K] [part=P] [offset=B | addr=A]
func (p *parser) buffer() error {
	nt := p.take()
	if nt.kind != tIdent {
		return p.errAt(nt.col, "expected a buffer name, got %q", nt.text)
	}
	if reserved[nt.text] {
		return p.errAt(nt.col, "%q is a reserved word and cannot name a buffer", nt.text)
	}
	if p.prog.BufferIndex(nt.text) >= 0 {
		return p.errAt(nt.col, "buffer %q declared twice", nt.text)
	}
	mt := p.take()
	mem, ok := isa.ParseMemory(mt.text)
	if !ok || mt.kind != tIdent {
		return p.errAt(mt.col, "unknown memory %q (memories: hbm, sbuf, psum)", mt.text)
	}
	dt := p.take()
	dtype, ok := isa.ParseDType(dt.text)
	if !ok || dt.kind != tIdent {
		return p.errAt(dt.col, "unknown dtype %q (dtypes: %s)", dt.text, strings.Join(isa.DTypeNames(), ", "))
	}
	if err := p.expect("["); err != nil {
		return err
	}
	var shape []int64
	for {
		v, t, err := p.int("dimension size")
		if err != nil {
			return err
		}
		if v <= 0 {
			return p.errAt(t.col, "dimension size must be positive, got %d", v)
		}
		if v > 1<<40 {
			return p.errAt(t.col, "dimension size %d is too large", v)
		}
		shape = append(shape, v)
		if p.isPunct(",") {
			p.take()
			continue
		}
		if err := p.expect("]"); err != nil {
			return err
		}
		break
	}
	if len(shape) > 1+isa.MaxFreeDims {
		return p.errAt(nt.col, "buffer %q has %d dimensions; at most %d allowed", nt.text, len(shape), 1+isa.MaxFreeDims)
	}
	total := int64(dtype.Bytes())
	for _, s := range shape {
		if total > (1<<50)/s {
			return p.errAt(nt.col, "buffer %q is too large", nt.text)
		}
		total *= s
	}
	b := &isa.Buffer{Name: nt.text, Mem: mem, DType: dtype, Shape: shape, Chip: p.chip, Core: p.core, Line: p.line}
	if mem == isa.MemHBM {
		b.Core = -1
	}
	placed := false
	seen := map[string]bool{}
	for p.peek().kind != tEOL {
		kt := p.take()
		if kt.kind != tIdent {
			return p.errAt(kt.col, "expected a buffer attribute, got %q", kt.text)
		}
		if seen[kt.text] {
			return p.errAt(kt.col, "attribute %s given twice", kt.text)
		}
		seen[kt.text] = true
		if err := p.expect("="); err != nil {
			return err
		}
		v, vt, err := p.int(kt.text)
		if err != nil {
			return err
		}
		if v < 0 || v > 1<<50 {
			return p.errAt(vt.col, "%s must be between 0 and 2^50, got %d", kt.text, v)
		}
		switch kt.text {
		case "chip":
			b.Chip = int32(min(v, math.MaxInt16))
		case "core":
			if mem == isa.MemHBM {
				return p.errAt(kt.col, "HBM buffers belong to a chip, not a core")
			}
			b.Core = int32(min(v, math.MaxInt16))
		case "part":
			if mem == isa.MemHBM {
				return p.errAt(kt.col, "HBM buffers have no partitions")
			}
			b.PartStart = int32(min(v, math.MaxInt16))
		case "offset":
			if mem == isa.MemHBM {
				return p.errAt(kt.col, "HBM buffers are placed with addr=, not offset=")
			}
			b.Offset, placed = v, true
		case "addr":
			if mem != isa.MemHBM {
				return p.errAt(kt.col, "%s buffers are placed with offset=, not addr=", mem)
			}
			b.Offset, placed = v, true
		default:
			return p.errAt(kt.col, "unknown buffer attribute %q (attributes: chip, core, part, offset, addr)", kt.text)
		}
	}
	if !placed {
		p.place(b)
	} else {
		p.bump(b)
	}
	p.prog.Buffers = append(p.prog.Buffers, b)
	return nil
}

func align(v, a int64) int64 { return (v + a - 1) / a * a }

// place gives b the next free spot of its memory.
func (p *parser) place(b *isa.Buffer) {
	key := [2]int32{b.Chip, b.Core}
	switch b.Mem {
	case isa.MemHBM:
		b.Offset = align(p.nextHBM[b.Chip], hbmAlignBytes)
	case isa.MemSBUF:
		b.Offset = align(p.nextSBUF[key], sbufAlignBytes)
	case isa.MemPSUM:
		bank := p.opts.PSUMBankBytes
		start := p.nextPSUM[key]
		// A buffer that fits a bank never straddles one.
		if sz := b.BytesPerPartition(); sz <= bank && start/bank != (start+sz-1)/bank {
			start = align(start, bank)
		}
		b.Offset = align(start, 4)
	}
	p.bump(b)
}

// bump moves the allocator past b.
func (p *parser) bump(b *isa.Buffer) {
	key := [2]int32{b.Chip, b.Core}
	switch b.Mem {
	case isa.MemHBM:
		p.nextHBM[b.Chip] = max(p.nextHBM[b.Chip], b.Offset+b.TotalBytes())
	case isa.MemSBUF:
		p.nextSBUF[key] = max(p.nextSBUF[key], b.Offset+b.BytesPerPartition())
	case isa.MemPSUM:
		p.nextPSUM[key] = max(p.nextPSUM[key], b.Offset+b.BytesPerPartition())
	}
}

func (p *parser) instruction() error {
	p.sawInst = true
	if !p.sawVer {
		return p.errAt(p.toks[0].col, "missing \".version %d\" header before the first instruction", isa.AssemblyVersion)
	}
	et := p.take()
	eng, ok := isa.ParseEngine(et.text)
	if !ok || et.kind != tIdent {
		return p.errAt(et.col, "unknown engine %q (engines: tensor, vector, scalar, gpsimd, sync)", et.text)
	}
	ot := p.take()
	if ot.kind != tIdent {
		return p.errAt(ot.col, "expected an opcode after %s, got %q", et.text, ot.text)
	}
	if ot.text == "matmul" {
		return p.matmulSugar(eng, ot)
	}
	op, ok := isa.ParseOpcode(ot.text)
	if !ok {
		return p.errAt(ot.col, "unknown opcode %q", ot.text)
	}
	if !op.RunsOn(eng) {
		return p.errAt(ot.col, "%s cannot run on %s (it runs on %s)", op, eng, engineNames(op))
	}
	in := &isa.Instruction{Body: &isa.Body{Op: op, Engine: eng, Chip: p.chip, Core: p.core}, Line: int32(p.line)}
	ops, err := p.operands()
	if err != nil {
		return err
	}
	info := op.Info()
	if len(ops) < info.NumOut+info.MinIn || len(ops) > info.NumOut+info.NumIn {
		want := fmt.Sprint(info.NumOut + info.MinIn)
		if info.NumIn != info.MinIn {
			want = fmt.Sprintf("%d to %d", info.NumOut+info.MinIn, info.NumOut+info.NumIn)
		}
		return p.errAt(ot.col, "%s takes %s operand(s), got %d", op, want, len(ops))
	}
	in.Outs = ops[:info.NumOut]
	in.Ins = ops[info.NumOut:]
	if len(in.Outs) == 0 {
		in.Outs = nil
	}
	if len(in.Ins) == 0 {
		in.Ins = nil
	}
	if err := p.attrs(in); err != nil {
		return err
	}
	p.emit(in)
	return nil
}

// matmulSugar expands `tensor matmul DST, STAT, MOV [start] [stop] ...` into
// load_stationary STAT and multiply_moving DST, MOV. Waits go on the first,
// signals on the second.
func (p *parser) matmulSugar(eng isa.Engine, ot token) error {
	if eng != isa.EngineTensor {
		return p.errAt(ot.col, "matmul runs on tensor, not %s", eng)
	}
	ops, err := p.operands()
	if err != nil {
		return err
	}
	if len(ops) != 3 {
		return p.errAt(ot.col, "matmul takes 3 operands (dst, stationary, moving), got %d", len(ops))
	}
	mm := &isa.Instruction{Body: &isa.Body{Op: isa.OpMultiplyMoving, Engine: eng, Chip: p.chip, Core: p.core,
		Outs: []isa.Operand{ops[0]}, Ins: []isa.Operand{ops[2]}}, Line: int32(p.line)}
	p.written = "matmul (load_stationary + multiply_moving)"
	err = p.attrs(mm)
	p.written = ""
	if err != nil {
		return err
	}
	ls := &isa.Instruction{Body: &isa.Body{Op: isa.OpLoadStationary, Engine: eng, Chip: p.chip, Core: p.core,
		Ins: []isa.Operand{ops[1]}, OpID: mm.OpID}, Waits: mm.Waits, Line: int32(p.line)}
	ls.Attrs.PerfMode = mm.Attrs.PerfMode
	mm.Waits = nil
	p.emit(ls)
	p.emit(mm)
	return nil
}

// emit appends in to its stream. Identical bodies (the same text but for
// waits and signals) are one body, so the simulator checks and costs each
// once.
func (p *parser) emit(in *isa.Instruction) {
	key := fmt.Sprintf("%d.%d %s", in.Chip, in.Core, FormatBody(p.prog, in.Body))
	if b, ok := p.bodies[key]; ok {
		in.Body = b
	} else {
		in.Body.ID = uint64(len(p.bodies) + 1)
		p.bodies[key] = in.Body
	}
	k := isa.StreamKey{Chip: in.Chip, Core: in.Core, Engine: in.Engine}
	if _, ok := p.streams[k]; !ok {
		p.order = append(p.order, k)
	}
	p.streams[k] = append(p.streams[k], in)
}

// operands parses a comma-separated operand list; it stops at the first
// token that starts an attribute (an identifier followed by "=", or a bare
// flag).
func (p *parser) operands() ([]isa.Operand, error) {
	var ops []isa.Operand
	for {
		t := p.peek()
		if t.kind != tIdent || reserved[t.text] {
			break
		}
		if p.pos+1 < len(p.toks) && p.toks[p.pos+1].text == "=" {
			break
		}
		op, err := p.operand()
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
		if p.isPunct(",") {
			p.take()
			continue
		}
		break
	}
	return ops, nil
}

func (p *parser) operand() (isa.Operand, error) {
	nt := p.take()
	idx := p.prog.BufferIndex(nt.text)
	if idx < 0 {
		return isa.Operand{}, p.errAt(nt.col, "unknown buffer %q (declare it with .buffer before use)", nt.text)
	}
	b := p.prog.Buffers[idx]
	switch {
	case p.isPunct("["):
		p.take()
		var sl []isa.Slice
		for {
			s, err := p.slice()
			if err != nil {
				return isa.Operand{}, err
			}
			sl = append(sl, s)
			if p.isPunct(",") {
				p.take()
				continue
			}
			if err := p.expect("]"); err != nil {
				return isa.Operand{}, err
			}
			break
		}
		op, err := b.View(idx, sl...)
		if err != nil {
			return op, p.errAt(nt.col, "%v", err)
		}
		return op, nil
	case p.isPunct("{"):
		return p.rawOperand(nt, idx, b)
	}
	op, err := b.Whole(idx)
	if err != nil {
		return op, p.errAt(nt.col, "%v", err)
	}
	return op, nil
}

func (p *parser) slice() (isa.Slice, error) {
	start, t, err := p.int("slice start")
	if err != nil {
		return isa.Slice{}, err
	}
	if !p.isPunct(":") {
		if start < 0 {
			return isa.Slice{}, p.errAt(t.col, "index must not be negative, got %d", start)
		}
		return isa.Slice{Start: start, Stop: start + 1, Step: 1, Index: true}, nil
	}
	p.take()
	stop, _, err := p.int("slice stop")
	if err != nil {
		return isa.Slice{}, err
	}
	step := int64(1)
	if p.isPunct(":") {
		p.take()
		var st token
		step, st, err = p.int("slice step")
		if err != nil {
			return isa.Slice{}, err
		}
		if step <= 0 {
			return isa.Slice{}, p.errAt(st.col, "slice step must be positive, got %d", step)
		}
	}
	return isa.Slice{Start: start, Stop: stop, Step: step}, nil
}

// NAME{p=0:128, off=256, ap=[[4096,4],[1,512]]}
func (p *parser) rawOperand(nt token, idx int32, b *isa.Buffer) (isa.Operand, error) {
	p.take() // {
	var p0, p1 int64 = 0, 0
	if b.Mem.OnChip() {
		p1 = b.Shape[0]
	}
	var off int64
	var dims []isa.Dim
	seen := map[string]bool{}
	for !p.isPunct("}") {
		kt := p.take()
		if kt.kind != tIdent {
			return isa.Operand{}, p.errAt(kt.col, "expected p=, off= or ap= in access pattern, got %q", kt.text)
		}
		if seen[kt.text] {
			return isa.Operand{}, p.errAt(kt.col, "%s given twice", kt.text)
		}
		seen[kt.text] = true
		if err := p.expect("="); err != nil {
			return isa.Operand{}, err
		}
		switch kt.text {
		case "p":
			if !b.Mem.OnChip() {
				return isa.Operand{}, p.errAt(kt.col, "HBM access patterns have no p=; the first ap pair is the row dimension")
			}
			var err error
			if p0, _, err = p.int("first partition"); err != nil {
				return isa.Operand{}, err
			}
			if err := p.expect(":"); err != nil {
				return isa.Operand{}, err
			}
			if p1, _, err = p.int("end partition"); err != nil {
				return isa.Operand{}, err
			}
		case "off":
			var err error
			var t token
			if off, t, err = p.int("element offset"); err != nil {
				return isa.Operand{}, err
			}
			if off < 0 {
				return isa.Operand{}, p.errAt(t.col, "offset must not be negative")
			}
		case "ap":
			if err := p.expect("["); err != nil {
				return isa.Operand{}, err
			}
			for {
				if err := p.expect("["); err != nil {
					return isa.Operand{}, err
				}
				stride, _, err := p.int("stride")
				if err != nil {
					return isa.Operand{}, err
				}
				if err := p.expect(","); err != nil {
					return isa.Operand{}, err
				}
				size, st, err := p.int("size")
				if err != nil {
					return isa.Operand{}, err
				}
				if size <= 0 {
					return isa.Operand{}, p.errAt(st.col, "size must be positive, got %d", size)
				}
				if err := p.expect("]"); err != nil {
					return isa.Operand{}, err
				}
				dims = append(dims, isa.Dim{Size: size, Stride: stride})
				if p.isPunct(",") {
					p.take()
					continue
				}
				if err := p.expect("]"); err != nil {
					return isa.Operand{}, err
				}
				break
			}
		default:
			return isa.Operand{}, p.errAt(kt.col, "unknown access-pattern field %q (fields: p, off, ap)", kt.text)
		}
		if p.isPunct(",") {
			p.take()
		} else if !p.isPunct("}") {
			t := p.peek()
			return isa.Operand{}, p.errAt(t.col, "expected \",\" or \"}\", got %q", t.text)
		}
	}
	p.take() // }
	if p0 > math.MaxInt16 || p1 > math.MaxInt16 {
		return isa.Operand{}, p.errAt(nt.col, "partition out of range")
	}
	op, err := b.Raw(idx, int32(p0), int32(p1), off, dims)
	if err != nil {
		return op, p.errAt(nt.col, "%v", err)
	}
	return op, nil
}

func (p *parser) sem() (isa.SemRef, error) {
	t := p.take()
	if t.kind != tIdent || len(t.text) < 2 || t.text[0] != 's' {
		return isa.SemRef{}, p.errAt(t.col, "expected a semaphore such as s3, got %q", t.text)
	}
	id, err := strconv.ParseInt(t.text[1:], 10, 32)
	if err != nil || id < 0 {
		return isa.SemRef{}, p.errAt(t.col, "expected a semaphore such as s3, got %q", t.text)
	}
	ref := isa.SemRef{Chip: p.chip, Core: p.core, ID: int32(id)}
	if p.isPunct("@") {
		p.take()
		c, err := p.coreRef()
		if err != nil {
			return ref, err
		}
		ref.Chip, ref.Core = c[0], c[1]
	}
	return ref, nil
}

// coreRef reads CHIP.CORE (or CORE on the current chip).
func (p *parser) coreRef() ([2]int32, error) {
	t := p.take()
	if t.kind != tNum {
		return [2]int32{}, p.errAt(t.col, "expected CHIP.CORE or CORE, got %q", t.text)
	}
	parts := strings.Split(t.text, ".")
	var vals []int64
	for _, s := range parts {
		v, err := strconv.ParseInt(s, 10, 16)
		if err != nil || v < 0 {
			return [2]int32{}, p.errAt(t.col, "expected CHIP.CORE or CORE, got %q", t.text)
		}
		vals = append(vals, v)
	}
	switch len(vals) {
	case 1:
		return [2]int32{p.chip, int32(vals[0])}, nil
	case 2:
		return [2]int32{int32(vals[0]), int32(vals[1])}, nil
	}
	return [2]int32{}, p.errAt(t.col, "expected CHIP.CORE or CORE, got %q", t.text)
}

// coreRefList reads [CHIP.CORE, ...], calling add for each.
func (p *parser) coreRefList(add func([2]int32)) error {
	if err := p.expect("["); err != nil {
		return err
	}
	for {
		c, err := p.coreRef()
		if err != nil {
			return err
		}
		add(c)
		if !p.isPunct(",") {
			return p.expect("]")
		}
		p.take()
	}
}

func (p *parser) attrs(in *isa.Instruction) error {
	seen := map[string]bool{}
	a := &in.Attrs
	for p.peek().kind != tEOL {
		kt := p.take()
		if kt.kind != tIdent {
			return p.errAt(kt.col, "expected an attribute, got %q", kt.text)
		}
		key := kt.text
		allowed := attrAllowed(in.Op, key)
		if !allowed {
			name := in.Op.String()
			if p.written != "" {
				name = p.written
			}
			return p.errAt(kt.col, "%s does not take attribute %q%s", name, key, attrHint(in.Op))
		}
		if key != "wait" && key != "signal" {
			if seen[key] {
				return p.errAt(kt.col, "attribute %s given twice", key)
			}
			seen[key] = true
		}
		switch key {
		case "start":
			a.Start = true
			continue
		case "stop":
			a.Stop = true
			continue
		}
		if err := p.expect("="); err != nil {
			return err
		}
		var err error
		switch key {
		case "wait":
			var w isa.SemWait
			if w.Sem, err = p.sem(); err != nil {
				return err
			}
			if err = p.expect(">="); err != nil {
				return err
			}
			var t token
			if w.Value, t, err = p.int("wait value"); err != nil {
				return err
			}
			if w.Value < 0 {
				return p.errAt(t.col, "wait value must not be negative, got %d", w.Value)
			}
			in.Waits = append(in.Waits, w)
		case "signal":
			s := isa.SemSignal{Add: 1}
			if s.Sem, err = p.sem(); err != nil {
				return err
			}
			if p.isPunct("+") {
				p.take()
				var t token
				if s.Add, t, err = p.int("signal increment"); err != nil {
					return err
				}
				if s.Add <= 0 {
					return p.errAt(t.col, "signal increment must be positive, got %d", s.Add)
				}
			}
			in.Signal = append(in.Signal, s)
		case "op":
			v, t, err := p.int("op id")
			if err != nil {
				return err
			}
			if v < 0 || v > math.MaxInt32 {
				return p.errAt(t.col, "op id must be between 0 and %d", math.MaxInt32)
			}
			in.OpID = int32(v)
		case "perf":
			v, t, err := p.int("perf mode")
			if err != nil {
				return err
			}
			if v != 0 && v != 2 && v != 4 {
				return p.errAt(t.col, "perf mode must be 0, 2 (FP8 double row) or 4 (MX quad), got %d", v)
			}
			a.PerfMode = uint8(v)
		case "alu", "alu0", "alu1", "acc":
			t := p.take()
			op, ok := isa.ParseALUOp(t.text)
			if !ok || t.kind != tIdent {
				return p.errAt(t.col, "unknown ALU operator %q", t.text)
			}
			switch key {
			case "alu", "alu0":
				a.ALU0 = op
			case "alu1":
				a.ALU1 = op
			case "acc":
				a.Accumulate = op
			}
		case "imm0":
			a.Imm0, err = p.float("imm0")
		case "imm1":
			a.Imm1, err = p.float("imm1")
		case "scale":
			a.Scale, err = p.float("scale")
		case "value", "base":
			a.Value, err = p.float(key)
		case "step":
			a.Step, err = p.float("step")
		case "axis":
			v, t, err := p.int("axis")
			if err != nil {
				return err
			}
			if v < 1 || v > isa.MaxFreeDims {
				return p.errAt(t.col, "axis must be between 1 and %d, got %d", isa.MaxFreeDims, v)
			}
			a.Axis = uint8(v)
		case "func":
			t := p.take()
			f, ok := isa.ParseActFunc(t.text)
			if !ok || t.kind != tIdent {
				return p.errAt(t.col, "unknown activation function %q", t.text)
			}
			a.Func = f
		case "queue":
			v, t, err := p.int("queue")
			if err != nil {
				return err
			}
			if v < 0 || v > math.MaxInt16 {
				return p.errAt(t.col, "queue must be between 0 and %d, got %d", math.MaxInt16, v)
			}
			a.Queue = int16(v)
		case "dge":
			t := p.take()
			k, ok := isa.ParseDGEKind(t.text)
			if !ok || t.kind != tIdent {
				return p.errAt(t.col, "unknown descriptor generation %q (none, sw, hw)", t.text)
			}
			a.DGE = k
		case "via":
			c, err := p.coreRef()
			if err != nil {
				return err
			}
			a.Via, a.ViaChip, a.ViaCore = true, c[0], c[1]
		case "mirror":
			c, err := p.coreRef()
			if err != nil {
				return err
			}
			a.MirrorChip, a.MirrorCore = c[0], c[1]
		case "images":
			err = p.coreRefList(func(c [2]int32) { a.LinkImages = append(a.LinkImages, c[0], c[1]) })
		case "sem":
			s, err := p.sem()
			if err != nil {
				return err
			}
			if s.Chip != in.Chip || s.Core != in.Core {
				return p.errAt(kt.col, "barrier sem names the local semaphore; give remote cores in cores=")
			}
			a.BarrierSem = s.ID
		case "target":
			var t token
			if a.Target, t, err = p.int("target"); err != nil {
				return err
			}
			if a.Target < 0 {
				return p.errAt(t.col, "target must not be negative")
			}
		case "cores":
			err = p.coreRefList(func(c [2]int32) { a.BarrierCores = append(a.BarrierCores, isa.SemRef{Chip: c[0], Core: c[1]}) })
		}
		if err != nil {
			return err
		}
	}
	for i := range a.BarrierCores {
		a.BarrierCores[i].ID = a.BarrierSem
	}
	if in.Op == isa.OpBarrier && (!seen["sem"] || !seen["cores"] || !seen["target"]) {
		return p.errAt(p.toks[min(1, len(p.toks)-1)].col, "barrier needs sem=, cores=[...] and target=")
	}
	if seen["images"] && !seen["via"] {
		return p.errAt(p.toks[min(1, len(p.toks)-1)].col, "images= goes with via= and mirror=")
	}
	if seen["via"] != seen["mirror"] {
		return p.errAt(p.toks[min(1, len(p.toks)-1)].col, "via= and mirror= come together: the transfer's real destination and the core whose transfer it mirrors")
	}
	if in.Op == isa.OpActivation && !seen["scale"] {
		a.Scale = 1
	}
	return nil
}

// attrKeys lists the attributes each opcode accepts besides wait, signal
// and op, in canonical print order.
var attrKeys = map[isa.Opcode][]string{
	isa.OpLoadStationary:     {"perf"},
	isa.OpMultiplyMoving:     {"start", "stop", "perf"},
	isa.OpActivation:         {"func", "scale", "acc"},
	isa.OpTensorTensor:       {"alu"},
	isa.OpTensorScalar:       {"alu0", "imm0", "alu1", "imm1"},
	isa.OpScalarTensorTensor: {"alu0", "imm0", "alu1"},
	isa.OpTensorReduce:       {"alu", "axis"},
	isa.OpMemset:             {"value"},
	isa.OpIota:               {"base", "step"},
	isa.OpDMACopy:            {"queue", "dge", "acc", "via", "mirror", "images"},
	isa.OpDMATranspose:       {"queue", "dge"},
	isa.OpDMAGather:          {"queue", "dge"},
	isa.OpDMAScatter:         {"queue", "dge"},
	isa.OpBarrier:            {"sem", "cores", "target"},
}

// AttrKeys returns the attributes an opcode takes besides wait, signal and
// op, in canonical print order.
func AttrKeys(op isa.Opcode) []string { return append([]string(nil), attrKeys[op]...) }

func attrAllowed(op isa.Opcode, key string) bool {
	if key == "wait" || key == "signal" || key == "op" {
		return true
	}
	for _, k := range attrKeys[op] {
		if k == key {
			return true
		}
	}
	return false
}

func attrHint(op isa.Opcode) string {
	keys := append([]string{}, attrKeys[op]...)
	keys = append(keys, "wait", "signal", "op")
	return " (it takes: " + strings.Join(keys, ", ") + ")"
}

func engineNames(op isa.Opcode) string {
	var n []string
	for _, e := range op.EnginesOf() {
		n = append(n, e.String())
	}
	return strings.Join(n, ", ")
}

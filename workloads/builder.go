package workloads

import (
	"fmt"

	"github.com/trnsim/trnsim/isa"
)

// progBuilder assembles the buffers of a lowered program and helps the
// stream generators build operands and instructions for one core.
type progBuilder struct {
	prog       *isa.Program
	chip, core int32
	sbufNext   int64
	sbufCap    int64
	hbmNext    int64
	// views memoises on-chip views: the generators ask for the same tiles
	// of the same buffers over and over. (HBM views differ at every step,
	// so they are not kept.)
	views map[viewKey][]isa.Operand
}

type viewKey struct {
	buf            int32
	p0, p1, f0, f1 int32
}

func newProgBuilder(target string, sbufBytesPerPartition int64) *progBuilder {
	return &progBuilder{prog: &isa.Program{Version: isa.AssemblyVersion, Target: target}, sbufCap: sbufBytesPerPartition}
}

// fitsHBM reports an error when the tensors declared so far exceed capBytes.
func (b *progBuilder) fitsHBM(capBytes int64) error {
	if capBytes > 0 && b.hbmNext > capBytes {
		return fmt.Errorf("its tensors need %.1f GiB of HBM; the chip has %.1f GiB", float64(b.hbmNext)/(1<<30), float64(capBytes)/(1<<30))
	}
	return nil
}

// hbm declares an HBM tensor.
func (b *progBuilder) hbm(name string, dt isa.DType, shape ...int64) int32 {
	buf := &isa.Buffer{Name: name, Mem: isa.MemHBM, DType: dt, Shape: shape, Chip: b.chip, Core: -1, Offset: b.hbmNext}
	size := buf.TotalBytes()
	b.hbmNext += (size + 4095) / 4096 * 4096
	return b.add(buf)
}

// sbuf declares an SBUF buffer [partitions, free...] at the next free
// 64-byte-aligned offset; it fails when SBUF is full.
func (b *progBuilder) sbuf(name string, dt isa.DType, shape ...int64) (int32, error) {
	buf := &isa.Buffer{Name: name, Mem: isa.MemSBUF, DType: dt, Shape: shape, Chip: b.chip, Core: b.core, Offset: b.sbufNext}
	end := b.sbufNext + buf.BytesPerPartition()
	if end > b.sbufCap {
		return 0, fmt.Errorf("buffer %s needs bytes %d:%d per partition, beyond SBUF's %d", name, b.sbufNext, end, b.sbufCap)
	}
	b.sbufNext = (end + 63) / 64 * 64
	return b.add(buf), nil
}

// psum declares a PSUM buffer at a byte offset in each partition.
func (b *progBuilder) psum(name string, dt isa.DType, offset int64, shape ...int64) int32 {
	return b.add(&isa.Buffer{Name: name, Mem: isa.MemPSUM, DType: dt, Shape: shape, Chip: b.chip, Core: b.core, Offset: offset})
}

func (b *progBuilder) add(buf *isa.Buffer) int32 {
	b.prog.Buffers = append(b.prog.Buffers, buf)
	return int32(len(b.prog.Buffers) - 1)
}

// view slices a buffer; the lowering only builds in-range views, so an
// error here is a lowering bug reported as such.
func (b *progBuilder) view(idx int32, sl ...isa.Slice) isa.Operand {
	return b.viewOps(idx, sl...)[0]
}

// viewOps is view returned as a one-operand slice that instructions can
// share: on-chip views are built once and reused read-only.
func (b *progBuilder) viewOps(idx int32, sl ...isa.Slice) []isa.Operand {
	buf := b.prog.Buffers[idx]
	memo := buf.Mem.OnChip() && len(sl) == 2 && !sl[0].Index && !sl[1].Index && sl[0].Step == 1 && sl[1].Step == 1 &&
		sl[1].Stop < 1<<31
	var key viewKey
	if memo {
		key = viewKey{idx, int32(sl[0].Start), int32(sl[0].Stop), int32(sl[1].Start), int32(sl[1].Stop)}
		if ops, ok := b.views[key]; ok {
			return ops
		}
	}
	op, err := buf.View(idx, sl...)
	if err != nil {
		panic(fmt.Sprintf("lowering built an invalid view of %s: %v", b.prog.Buffers[idx].Name, err))
	}
	ops := []isa.Operand{op}
	if memo {
		if b.views == nil {
			b.views = map[viewKey][]isa.Operand{}
		}
		b.views[key] = ops[:1:1]
	}
	return ops[:1:1]
}

// raw builds an explicit access pattern (see isa.Buffer.Raw).
func (b *progBuilder) raw(idx int32, p0, p1 int32, off int64, dims ...isa.Dim) isa.Operand {
	op, err := b.prog.Buffers[idx].Raw(idx, p0, p1, off, dims)
	if err != nil {
		panic(fmt.Sprintf("lowering built an invalid access pattern of %s: %v", b.prog.Buffers[idx].Name, err))
	}
	return op
}

// rng is the slice start:stop.
func rng(start, stop int64) isa.Slice { return isa.Slice{Start: start, Stop: stop, Step: 1} }

// sem names a semaphore of the builder's core.
func (b *progBuilder) sem(id int32) isa.SemRef { return isa.SemRef{Chip: b.chip, Core: b.core, ID: id} }

// waitGE returns a wait for sem >= v, or nothing when v <= 0.
func (b *progBuilder) waitGE(waits []isa.SemWait, id int32, v int64) []isa.SemWait {
	if v <= 0 {
		return waits
	}
	return append(waits, isa.SemWait{Sem: b.sem(id), Value: v})
}

// signal returns a +1 signal of sem id.
func (b *progBuilder) signal(id int32) []isa.SemSignal {
	return []isa.SemSignal{{Sem: b.sem(id), Add: 1}}
}

// batchStream turns a step function into a lazy Stream: step(i) returns
// the instructions of step i (possibly none), for i in [0, steps).
func batchStream(key isa.StreamKey, steps int64, step func(i int64, sb *stepBuf) ([]*isa.Instruction, error)) isa.StreamSource {
	return isa.StreamSource{Key: key, Count: -1, Open: func() isa.Stream {
		var i int64
		var buf []*isa.Instruction
		var sb stepBuf
		// A lowering bug must not crash the tool with a stack trace: the
		// step (where the lowering runs) recovers; handing out the
		// instructions it built needs no guard.
		guarded := func(i int64) (out []*isa.Instruction, err error) {
			defer func() {
				if r := recover(); r != nil {
					out, err = nil, fmt.Errorf("internal lowering error at step %d: %v", i, r)
				}
			}()
			return step(i, &sb)
		}
		return isa.FuncStream(func() (*isa.Instruction, error) {
			for len(buf) == 0 {
				if i >= steps {
					return nil, nil
				}
				out, err := guarded(i)
				if err != nil {
					return nil, err
				}
				// Every instruction of a step is handed out before the next
				// step runs: its slice can take the next step's.
				buf, sb.out = out, out[:0]
				i++
			}
			in := buf[0]
			buf = buf[1:]
			return in, nil
		})
	}}
}

// stepBuf is one open stream's scratch for its generator's steps: out, an
// empty slice to append the step's instructions to (its storage is reused
// step after step), and a slab for the instructions the step makes.
type stepBuf struct {
	out []*isa.Instruction
	slab
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// slab hands out instructions and operand slices from large allocations
// (slabChunk of each at a time): a lowering makes many instructions, and
// one allocation each would dominate its cost. The zero slab is ready to
// use. What it hands out is never reused.
type slab struct {
	insts []isa.Instruction
	ops   []isa.Operand
}

// slabChunk is how many instructions, or operands, a slab allocates at a
// time.
const slabChunk = 64

// inst returns a new zero instruction.
func (s *slab) inst() *isa.Instruction {
	if len(s.insts) == cap(s.insts) {
		s.insts = make([]isa.Instruction, 0, slabChunk)
	}
	s.insts = s.insts[:len(s.insts)+1]
	return &s.insts[len(s.insts)-1]
}

// operands copies ops into the slab and returns them as a slice that
// cannot grow into its neighbours.
func (s *slab) operands(ops ...isa.Operand) []isa.Operand {
	if len(s.ops)+len(ops) > cap(s.ops) {
		s.ops = make([]isa.Operand, 0, max(slabChunk, len(ops)))
	}
	i := len(s.ops)
	s.ops = append(s.ops, ops...)
	return s.ops[i:len(s.ops):len(s.ops)]
}

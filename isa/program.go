package isa

import (
	"fmt"
	"sort"
)

// AssemblyVersion is the version of the text assembly format this package
// reads and writes.
const AssemblyVersion = 1

// Stream yields one engine's instructions in program order. Next returns nil
// at the end, or an error when the generator cannot continue (for example a
// lowering that ran out of SBUF). Streams are produced lazily so that large
// workloads are never held in memory whole.
//
// An instruction handed out must not change afterwards, operands included:
// the simulator holds it while it is in flight, and recognises a repeated
// body by its Body.ID (see DecodeCache). A stream may hand out the same
// instruction, or share a body between instructions, as often as it likes.
type Stream interface {
	Next() (*Instruction, error)
}

// StreamKey identifies one instruction stream: an engine of a core of a chip.
type StreamKey struct {
	Chip, Core int32
	Engine     Engine
}

// Less orders stream keys canonically (chip, core, engine).
func (k StreamKey) Less(o StreamKey) bool {
	if k.Chip != o.Chip {
		return k.Chip < o.Chip
	}
	if k.Core != o.Core {
		return k.Core < o.Core
	}
	return k.Engine < o.Engine
}

// String prints the key as chip.core.engine.
func (k StreamKey) String() string { return fmt.Sprintf("chip%d.core%d.%s", k.Chip, k.Core, k.Engine) }

// StreamSource opens a fresh iterator over one stream each time it is
// called, so the same program can be printed and simulated.
type StreamSource struct {
	Key  StreamKey
	Open func() Stream
	// Count is the number of instructions when known in advance, else -1.
	Count int64
}

// Program is the contract between workloads/lowering and the simulated chip:
// named buffers plus one lazily generated instruction stream per engine.
type Program struct {
	Version int
	// Target is the hardware preset the program was written or lowered for
	// (for example "trn2"); empty means any.
	Target  string
	Buffers []*Buffer
	Streams []StreamSource
	// Semaphores optionally names semaphore indices for printing.
	SemNames map[SemRef]string
	// OpenAll, when set, opens every stream together, in the order of
	// Streams: a generator that makes every stream in one pass (the
	// scheduler) shares the pass among them. Open uses it.
	OpenAll func() []Stream
}

// Open opens every stream of the program, in the order of Streams, for one
// simulation (or one printing).
func (p *Program) Open() []Stream {
	if p.OpenAll != nil {
		return p.OpenAll()
	}
	out := make([]Stream, len(p.Streams))
	for i, s := range p.Streams {
		out[i] = s.Open()
	}
	return out
}

// SortStreams puts the streams in canonical (chip, core, engine) order.
func (p *Program) SortStreams() {
	sort.SliceStable(p.Streams, func(i, j int) bool { return p.Streams[i].Key.Less(p.Streams[j].Key) })
}

// BufferIndex returns the index of the named buffer, or -1.
func (p *Program) BufferIndex(name string) int32 {
	for i, b := range p.Buffers {
		if b.Name == name {
			return int32(i)
		}
	}
	return -1
}

// SliceStream is a Stream over an in-memory slice.
type SliceStream struct {
	insts []*Instruction
	pos   int
}

// NewSliceStream returns a Stream over insts.
func NewSliceStream(insts []*Instruction) *SliceStream { return &SliceStream{insts: insts} }

// Next returns the next instruction or nil at the end.
func (s *SliceStream) Next() (*Instruction, error) {
	if s.pos >= len(s.insts) {
		return nil, nil
	}
	in := s.insts[s.pos]
	s.pos++
	return in, nil
}

// SliceSource wraps a fixed instruction list as a StreamSource.
func SliceSource(key StreamKey, insts []*Instruction) StreamSource {
	return StreamSource{Key: key, Count: int64(len(insts)), Open: func() Stream { return NewSliceStream(insts) }}
}

// FuncStream adapts a generator function to Stream.
type FuncStream func() (*Instruction, error)

// Next calls the function.
func (f FuncStream) Next() (*Instruction, error) { return f() }

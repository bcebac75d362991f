package isa

import (
	"fmt"
	"strings"
)

// MaxFreeDims is the largest number of free-axis dimensions an access pattern
// may have (reference §3: up to 4-D).
const MaxFreeDims = 4

// Dim is one dimension of an access pattern: Size elements, Stride elements
// apart.
type Dim struct {
	Size   int64
	Stride int64
}

// AccessPattern is a resolved operand: which memory, which partitions, where
// in the partition, and how the free axis is walked. Every partition is walked
// with the same pattern.
//
// For SBUF and PSUM, PartStart/PartCount are partitions and Offset is the
// byte offset of the first element inside each partition. For HBM, Offset is
// the absolute byte address, and the "partition" dimension is the outermost
// dimension of the view (PartCount rows, PartStride elements apart) — the rows
// a DMA transfer spreads over SBUF partitions.
type AccessPattern struct {
	Mem        Memory
	DType      DType
	Chip, Core int32 // owner; Core is -1 for HBM (shared by the chip)
	PartStart  int32
	PartCount  int32
	PartStride int64 // elements; HBM only
	Offset     int64 // bytes
	NDims      uint8
	Dims       [MaxFreeDims]Dim
	// span caches ByteSpan for patterns built by Buffer.View/Whole/Raw.
	spanLo, spanHi int64
	spanOK         bool
}

// seal caches the pattern's byte span; a pattern must not change after.
func (a *AccessPattern) seal() {
	a.spanOK = false
	a.spanLo, a.spanHi = a.ByteSpan()
	a.spanOK = true
}

// Shifted returns the pattern moved by bytes (its cached span too).
func (a AccessPattern) Shifted(bytes int64) AccessPattern {
	a.Offset += bytes
	a.spanLo += bytes
	a.spanHi += bytes
	return a
}

// FreeSize returns the number of elements per partition (N in the cost
// formulas).
func (a *AccessPattern) FreeSize() int64 {
	n := int64(1)
	for i := uint8(0); i < a.NDims; i++ {
		n *= a.Dims[i].Size
	}
	return n
}

// Elements returns the total number of elements the pattern names.
func (a *AccessPattern) Elements() int64 { return int64(a.PartCount) * a.FreeSize() }

// BytesPerPartition returns the bytes the pattern moves per partition.
func (a *AccessPattern) BytesPerPartition() int64 {
	return a.FreeSize() * int64(a.DType.Bytes())
}

// Bytes returns the bytes the pattern names in total.
func (a *AccessPattern) Bytes() int64 { return a.Elements() * int64(a.DType.Bytes()) }

// InnerStrideBytes returns the stride of the innermost dimension in bytes
// (element size for a 0-D pattern).
func (a *AccessPattern) InnerStrideBytes() int64 {
	eb := int64(a.DType.Bytes())
	for i := int(a.NDims) - 1; i >= 0; i-- {
		if a.Dims[i].Size > 1 {
			s := a.Dims[i].Stride
			if s < 0 {
				s = -s
			}
			return s * eb
		}
	}
	return eb
}

// ContiguousRunElems returns how many elements in a row are contiguous: the
// product of the innermost dimensions that are laid out densely.
func (a *AccessPattern) ContiguousRunElems() int64 {
	run := int64(1)
	for i := int(a.NDims) - 1; i >= 0; i-- {
		d := a.Dims[i]
		if d.Size == 1 {
			continue
		}
		if d.Stride != run {
			break
		}
		run *= d.Size
	}
	return run
}

// RowContiguous reports whether an HBM pattern's rows follow one another
// without gaps, so the whole pattern is one contiguous range.
func (a *AccessPattern) RowContiguous() bool {
	return a.ContiguousRunElems() == a.FreeSize() && (a.PartCount <= 1 || a.PartStride == a.FreeSize())
}

// ByteSpan returns the half-open byte range [lo, hi) that the pattern touches
// inside each partition (on-chip) or in the address space (HBM, including
// the row dimension). It is a bounding range: strided patterns may skip bytes
// inside it.
func (a *AccessPattern) ByteSpan() (lo, hi int64) {
	if a.spanOK {
		return a.spanLo, a.spanHi
	}
	eb := int64(a.DType.Bytes())
	var minE, maxE int64
	for i := uint8(0); i < a.NDims; i++ {
		d := a.Dims[i]
		if d.Size <= 0 {
			return a.Offset, a.Offset
		}
		ext := d.Stride * (d.Size - 1)
		if ext < 0 {
			minE += ext
		} else {
			maxE += ext
		}
	}
	if a.Mem == MemHBM && a.PartCount > 1 {
		ext := a.PartStride * int64(a.PartCount-1)
		if ext < 0 {
			minE += ext
		} else {
			maxE += ext
		}
	}
	return a.Offset + minE*eb, a.Offset + (maxE+1)*eb
}

// Overlaps reports whether two patterns may touch a common byte (bounding
// ranges on the same memory, chip, core and partitions).
func (a *AccessPattern) Overlaps(b *AccessPattern) bool {
	if a.Mem != b.Mem || a.Chip != b.Chip {
		return false
	}
	if a.Mem != MemHBM {
		if a.Core != b.Core {
			return false
		}
		if a.PartStart >= b.PartStart+b.PartCount || b.PartStart >= a.PartStart+a.PartCount {
			return false
		}
	}
	alo, ahi := a.ByteSpan()
	blo, bhi := b.ByteSpan()
	return alo < bhi && blo < ahi
}

// Slice is one index expression of a view: start:stop:step, or a single index.
type Slice struct {
	Start, Stop, Step int64
	Index             bool // a single index: drops the dimension
}

// ViewKind says how an operand was written.
type ViewKind uint8

// View kinds.
const (
	ViewWhole  ViewKind = iota // the whole buffer: `A`
	ViewSlices                 // numpy-style slices: `A[0:128, 0:512]`
	ViewRaw                    // explicit pattern: `A{p=0:128, off=0, ap=[[512,4],[1,128]]}`
)

// Operand is an instruction's reference to memory: the buffer it names, the
// view as written (kept so the assembly prints back the same way), and the
// resolved access pattern the simulator uses.
type Operand struct {
	Buffer int32 // index into Program.Buffers
	Kind   ViewKind
	Slices []Slice
	// Raw view fields (ViewRaw): partitions and element offset relative to the
	// buffer, and dimensions. For HBM the first raw dim is the row dimension.
	RawPart [2]int32
	RawOff  int64
	RawDims []Dim
	AP      AccessPattern
}

// Buffer is a named region of HBM, SBUF or PSUM with a shape and dtype.
//
// SBUF/PSUM buffers: Shape[0] is the partition count, placed at partitions
// [PartStart, PartStart+Shape[0]), at byte Offset inside each partition.
// HBM buffers: Offset is the byte address in the chip's HBM.
type Buffer struct {
	Name      string
	Mem       Memory
	DType     DType
	Shape     []int64
	Chip      int32
	Core      int32 // -1 for HBM
	PartStart int32
	Offset    int64
	Line      int // assembly line that declared it, 0 if generated
}

// FreeElems returns the elements per partition (on-chip) or per row (HBM).
func (b *Buffer) FreeElems() int64 {
	n := int64(1)
	for _, s := range b.Shape[1:] {
		n *= s
	}
	return n
}

// BytesPerPartition returns, for an on-chip buffer, its bytes in each
// partition.
func (b *Buffer) BytesPerPartition() int64 { return b.FreeElems() * int64(b.DType.Bytes()) }

// TotalBytes returns the buffer's size in bytes.
func (b *Buffer) TotalBytes() int64 {
	n := int64(b.DType.Bytes())
	for _, s := range b.Shape {
		n *= s
	}
	return n
}

// strides returns the element stride of each dimension (row-major).
func (b *Buffer) strides() []int64 {
	st := make([]int64, len(b.Shape))
	acc := int64(1)
	for i := len(b.Shape) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= b.Shape[i]
	}
	return st
}

func (b *Buffer) baseAP() AccessPattern {
	return AccessPattern{Mem: b.Mem, DType: b.DType, Chip: b.Chip, Core: b.Core,
		PartStart: b.PartStart, Offset: b.Offset}
}

// Whole returns an operand naming all of buffer index idx.
func (b *Buffer) Whole(idx int32) (Operand, error) {
	op := Operand{Buffer: idx, Kind: ViewWhole}
	sl := make([]Slice, len(b.Shape))
	for i, s := range b.Shape {
		sl[i] = Slice{0, s, 1, false}
	}
	ap, err := b.resolveSlices(sl)
	ap.seal()
	op.AP = ap
	return op, err
}

// View returns an operand of buffer idx sliced numpy-style. Missing trailing
// slices take the whole dimension.
func (b *Buffer) View(idx int32, slices ...Slice) (Operand, error) {
	var fixed [8]Slice
	full := fixed[:0]
	if len(b.Shape) <= len(fixed) {
		full = fixed[:len(b.Shape)]
	} else {
		full = make([]Slice, len(b.Shape))
	}
	if len(slices) > len(b.Shape) {
		return Operand{}, fmt.Errorf("buffer %s has %d dimensions, view gives %d", b.Name, len(b.Shape), len(slices))
	}
	for i := range b.Shape {
		if i < len(slices) {
			full[i] = slices[i]
		} else {
			full[i] = Slice{0, b.Shape[i], 1, false}
		}
	}
	ap, err := b.resolveSlices(full)
	ap.seal()
	return Operand{Buffer: idx, Kind: ViewSlices, Slices: append([]Slice(nil), slices...), AP: ap}, err
}

// Raw returns an operand of buffer idx with an explicit access pattern:
// partitions [p0, p1) (on-chip; ignored for HBM), an element offset from the
// buffer's start, and dims (for HBM, dims[0] is the row dimension).
func (b *Buffer) Raw(idx int32, p0, p1 int32, offElems int64, dims []Dim) (Operand, error) {
	op := Operand{Buffer: idx, Kind: ViewRaw, RawPart: [2]int32{p0, p1}, RawOff: offElems,
		RawDims: append([]Dim(nil), dims...)}
	ap := b.baseAP()
	eb := int64(b.DType.Bytes())
	free := dims
	if b.Mem == MemHBM {
		if len(dims) == 0 {
			return op, fmt.Errorf("raw view of HBM buffer %s needs at least the row dimension", b.Name)
		}
		ap.PartCount = int32(dims[0].Size)
		ap.PartStride = dims[0].Stride
		free = dims[1:]
		op.RawPart = [2]int32{0, 0}
	} else {
		if p0 < 0 || p1 <= p0 || int64(p1) > b.Shape[0] {
			return op, fmt.Errorf("partitions %d:%d outside buffer %s (0:%d)", p0, p1, b.Name, b.Shape[0])
		}
		ap.PartStart = b.PartStart + p0
		ap.PartCount = p1 - p0
	}
	if len(free) > MaxFreeDims {
		return op, fmt.Errorf("access pattern has %d free dimensions, at most %d allowed", len(free), MaxFreeDims)
	}
	if offElems < 0 {
		return op, fmt.Errorf("negative offset %d", offElems)
	}
	ap.Offset += offElems * eb
	for i, d := range free {
		if d.Size <= 0 {
			return op, fmt.Errorf("dimension %d has size %d; sizes must be positive", i, d.Size)
		}
		ap.Dims[i] = d
	}
	ap.NDims = uint8(len(free))
	ap.seal()
	op.AP = ap
	// Bounds: the pattern must stay inside the buffer.
	lo, hi := ap.ByteSpan()
	var size int64
	if b.Mem == MemHBM {
		size = b.TotalBytes()
	} else {
		size = b.BytesPerPartition()
	}
	if lo < b.Offset || hi > b.Offset+size {
		return op, fmt.Errorf("access pattern reaches bytes [%d, %d) outside buffer %s [%d, %d)",
			lo-b.Offset, hi-b.Offset, b.Name, 0, size)
	}
	return op, nil
}

func (b *Buffer) resolveSlices(sl []Slice) (AccessPattern, error) {
	ap := b.baseAP()
	var stBuf [1 + MaxFreeDims + 1]int64
	st := stBuf[:0]
	if len(b.Shape) <= len(stBuf) {
		st = stBuf[:len(b.Shape)]
		acc := int64(1)
		for i := len(b.Shape) - 1; i >= 0; i-- {
			st[i] = acc
			acc *= b.Shape[i]
		}
	} else {
		st = b.strides()
	}
	eb := int64(b.DType.Bytes())
	var dimBuf [2 + MaxFreeDims]Dim
	dims := dimBuf[:0]
	var offElems int64
	for i, s := range sl {
		n := b.Shape[i]
		if s.Index {
			if s.Start < 0 || s.Start >= n {
				return ap, fmt.Errorf("index %d out of range for dimension %d of %s (size %d)", s.Start, i, b.Name, n)
			}
			offElems += s.Start * st[i]
			if i == 0 && b.Mem.OnChip() {
				// A single partition.
				ap.PartStart = b.PartStart + int32(s.Start)
				ap.PartCount = 1
				offElems -= s.Start * st[i]
			}
			continue
		}
		if s.Step <= 0 {
			return ap, fmt.Errorf("dimension %d of %s: step must be positive, got %d", i, b.Name, s.Step)
		}
		if s.Start < 0 || s.Stop > n || s.Start >= s.Stop {
			return ap, fmt.Errorf("slice %d:%d out of range for dimension %d of %s (size %d)", s.Start, s.Stop, i, b.Name, n)
		}
		size := (s.Stop - s.Start + s.Step - 1) / s.Step
		if i == 0 && b.Mem.OnChip() {
			if s.Step != 1 {
				return ap, fmt.Errorf("partition dimension of %s cannot be strided", b.Name)
			}
			ap.PartStart = b.PartStart + int32(s.Start)
			ap.PartCount = int32(size)
			continue
		}
		offElems += s.Start * st[i]
		dims = append(dims, Dim{Size: size, Stride: s.Step * st[i]})
	}
	if b.Mem == MemHBM {
		// The outermost remaining dimension maps to partitions.
		if len(dims) == 0 {
			ap.PartCount = 1
		} else {
			ap.PartCount = int32(dims[0].Size)
			ap.PartStride = dims[0].Stride
			dims = dims[1:]
		}
	}
	dims = mergeDims(dims)
	if len(dims) > MaxFreeDims {
		return ap, fmt.Errorf("view of %s has %d free dimensions after merging, at most %d allowed", b.Name, len(dims), MaxFreeDims)
	}
	copy(ap.Dims[:], dims)
	ap.NDims = uint8(len(dims))
	ap.Offset += offElems * eb
	return ap, nil
}

// mergeDims folds adjacent dimensions that are contiguous with each other, so
// [4][512] with strides [512][1] becomes one 2048-element dimension.
func mergeDims(dims []Dim) []Dim {
	if len(dims) < 2 {
		return dims
	}
	out := dims[:1]
	for _, d := range dims[1:] {
		last := &out[len(out)-1]
		if last.Stride == d.Stride*d.Size {
			last.Size *= d.Size
			last.Stride = d.Stride
			continue
		}
		out = append(out, d)
	}
	return out
}

// FormatSlices prints slices in assembly form: `0:128, 3, 0:512:2`.
func FormatSlices(sl []Slice) string {
	parts := make([]string, len(sl))
	for i, s := range sl {
		switch {
		case s.Index:
			parts[i] = fmt.Sprint(s.Start)
		case s.Step != 1:
			parts[i] = fmt.Sprintf("%d:%d:%d", s.Start, s.Stop, s.Step)
		default:
			parts[i] = fmt.Sprintf("%d:%d", s.Start, s.Stop)
		}
	}
	return strings.Join(parts, ", ")
}

package isa

// MaxRegionDims bounds the dimensions of a buffer a Region describes (the
// assembly allows buffers of up to 5 dimensions).
const MaxRegionDims = 6

// Region is the set of HBM bytes an access touches, in a form whose
// overlap test is exact for the accesses kernels make: a box in the
// coordinates of the buffer it slices (every rectangular slice of a
// row-major tensor, including a transfer whose rows are split over
// partitions and tiles, is one), or, when the pattern is no such box, the
// bounding byte range.
type Region struct {
	// Chip owns the HBM; Buffer is the buffer's index (-1: not known).
	Chip   int32
	Buffer int32
	// Box is set when Lo/Hi hold the coordinate ranges [Lo[d], Hi[d]) of
	// every dimension d < NDims of the buffer.
	Box    bool
	NDims  uint8
	Lo, Hi [MaxRegionDims]int64
	// ByteLo and ByteHi bound the bytes touched (absolute addresses).
	ByteLo, ByteHi int64
}

// Overlaps reports whether two regions may touch a common byte: exactly,
// when both are boxes of one buffer; by their byte bounds otherwise.
func (r *Region) Overlaps(o *Region) bool {
	if r.Chip != o.Chip || r.ByteLo >= o.ByteHi || o.ByteLo >= r.ByteHi {
		return false
	}
	if r.Box && o.Box && r.Buffer == o.Buffer && r.NDims == o.NDims {
		for d := uint8(0); d < r.NDims; d++ {
			if r.Lo[d] >= o.Hi[d] || o.Lo[d] >= r.Hi[d] {
				return false
			}
		}
	}
	return true
}

// Covers reports whether r includes every byte of o, as far as the
// representation tells (false when it cannot tell).
func (r *Region) Covers(o *Region) bool {
	if r.Chip != o.Chip {
		return false
	}
	if r.Box && o.Box && r.Buffer == o.Buffer && r.NDims == o.NDims {
		for d := uint8(0); d < r.NDims; d++ {
			if r.Lo[d] > o.Lo[d] || r.Hi[d] < o.Hi[d] {
				return false
			}
		}
		return true
	}
	if !r.Box && !o.Box {
		return false // bounding ranges say nothing about the bytes inside
	}
	return false
}

// RegionOf returns the region of ap, an access pattern on HBM buffer b
// (index idx; ap with any instruction HBMOffset already added).
func RegionOf(b *Buffer, idx int32, ap *AccessPattern) Region {
	r := Region{Chip: ap.Chip, Buffer: idx}
	r.ByteLo, r.ByteHi = ap.ByteSpan()
	if b == nil || len(b.Shape) == 0 || len(b.Shape) > MaxRegionDims {
		r.Buffer = -1
		return r
	}
	eb := int64(ap.DType.Bytes())
	if eb == 0 || ap.DType != b.DType {
		return r
	}
	rel := ap.Offset - b.Offset
	if rel < 0 || rel%eb != 0 {
		return r
	}
	rel /= eb
	// The pattern's dimensions (the row dimension included), sorted by
	// stride, with dimensions that continue one another merged.
	var dims [MaxFreeDims + 1]Dim
	n := 0
	add := func(d Dim) bool {
		if d.Size == 1 {
			return true
		}
		if d.Size <= 0 || d.Stride <= 0 {
			return false
		}
		dims[n] = d
		n++
		return true
	}
	if !add(Dim{Size: int64(ap.PartCount), Stride: ap.PartStride}) {
		return r
	}
	for i := uint8(0); i < ap.NDims; i++ {
		if !add(ap.Dims[i]) {
			return r
		}
	}
	for i := 1; i < n; i++ { // insertion sort: at most 5 dimensions
		for j := i; j > 0 && dims[j].Stride < dims[j-1].Stride; j-- {
			dims[j], dims[j-1] = dims[j-1], dims[j]
		}
	}
	m := 0
	for i := 0; i < n; i++ {
		if m > 0 && dims[i].Stride == dims[m-1].Stride*dims[m-1].Size {
			dims[m-1].Size *= dims[i].Size
			continue
		}
		dims[m] = dims[i]
		m++
	}
	// The buffer's row-major strides and the coordinates of the start.
	nd := len(b.Shape)
	var st [MaxRegionDims]int64
	acc := int64(1)
	for d := nd - 1; d >= 0; d-- {
		st[d] = acc
		acc *= b.Shape[d]
	}
	r.NDims = uint8(nd)
	rem := rel
	for d := 0; d < nd; d++ {
		c := rem / st[d]
		rem -= c * st[d]
		if c >= b.Shape[d] {
			return r
		}
		r.Lo[d], r.Hi[d] = c, c+1
	}
	var used [MaxRegionDims]bool
	for i := 0; i < m; i++ {
		stride, size := dims[i].Stride, dims[i].Size
		d := -1
		for k := 0; k < nd; k++ {
			if st[k] == stride {
				d = k
				break
			}
		}
		for {
			if d < 0 || used[d] {
				return r
			}
			used[d] = true
			if r.Lo[d]+size <= b.Shape[d] {
				r.Hi[d] = r.Lo[d] + size
				break
			}
			// A dimension that runs over whole rows of d continues into
			// the dimension above.
			if r.Lo[d] != 0 || size%b.Shape[d] != 0 || d == 0 {
				return r
			}
			r.Hi[d] = b.Shape[d]
			size /= b.Shape[d]
			d--
		}
	}
	r.Box = true
	return r
}

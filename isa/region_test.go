package isa

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegionOfSlicesAndSplitRows(t *testing.T) {
	b := &Buffer{Name: "A", Mem: MemHBM, DType: BF16, Shape: []int64{1024, 512}, Offset: 1 << 20}
	view := func(sl ...Slice) Region {
		op, err := b.View(3, sl...)
		require.NoError(t, err)
		return RegionOf(b, 3, &op.AP)
	}
	raw := func(off int64, dims ...Dim) Region {
		op, err := b.Raw(3, 0, 0, off, dims)
		require.NoError(t, err)
		return RegionOf(b, 3, &op.AP)
	}
	r := view(Slice{128, 256, 1, false}, Slice{64, 192, 1, false})
	require.True(t, r.Box)
	assert.Equal(t, [2]int64{128, 64}, [2]int64{r.Lo[0], r.Lo[1]})
	assert.Equal(t, [2]int64{256, 192}, [2]int64{r.Hi[0], r.Hi[1]})

	// Rows split over 128 partitions and 4 tiles (a K-block of A^T loaded
	// into a [128, 4, m] SBUF tile): rows 256:768, columns 0:100.
	split := raw(256*512, Dim{Size: 128, Stride: 512}, Dim{Size: 4, Stride: 128 * 512}, Dim{Size: 100, Stride: 1})
	require.True(t, split.Box)
	assert.Equal(t, int64(256), split.Lo[0])
	assert.Equal(t, int64(768), split.Hi[0])
	assert.Equal(t, int64(100), split.Hi[1])

	// Whole rows read as one contiguous run become a row range.
	rows := raw(2*512, Dim{Size: 1, Stride: 1}, Dim{Size: 3 * 512, Stride: 1})
	require.True(t, rows.Box)
	assert.Equal(t, []int64{2, 5, 0, 512}, []int64{rows.Lo[0], rows.Hi[0], rows.Lo[1], rows.Hi[1]})

	tests := []struct {
		name string
		a, b Region
		want bool
	}{
		{"side by side columns do not overlap (their byte ranges do)", view(Slice{0, 128, 1, false}, Slice{0, 256, 1, false}), view(Slice{0, 128, 1, false}, Slice{256, 512, 1, false}), false},
		{"shared corner", view(Slice{0, 129, 1, false}, Slice{0, 257, 1, false}), view(Slice{128, 256, 1, false}, Slice{256, 512, 1, false}), true},
		{"split rows against a block inside them", split, view(Slice{700, 710, 1, false}, Slice{50, 60, 1, false}), true},
		{"split rows against the columns beside them", split, view(Slice{256, 768, 1, false}, Slice{100, 512, 1, false}), false},
		{"row range against a block in row 4", rows, view(Slice{4, 5, 1, false}, Slice{500, 512, 1, false}), true},
		{"row range against row 5", rows, view(Slice{5, 6, 1, false}, Slice{0, 512, 1, false}), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.a.Overlaps(&tc.b))
			assert.Equal(t, tc.want, tc.b.Overlaps(&tc.a))
		})
	}
	top := view(Slice{0, 256, 1, false})
	assert.True(t, top.Covers(&r))
	assert.False(t, r.Covers(&split))
}

// A strided pattern that is no box falls back to its byte bounds, which
// overlap whatever lies between its elements: conservative, never blind.
func TestRegionFallsBackToByteBounds(t *testing.T) {
	b := &Buffer{Name: "A", Mem: MemHBM, DType: FP32, Shape: []int64{64, 64}}
	op, err := b.View(0, Slice{0, 64, 1, false}, Slice{0, 64, 2, false})
	require.NoError(t, err)
	even := RegionOf(b, 0, &op.AP)
	assert.False(t, even.Box)
	op2, err := b.View(0, Slice{10, 11, 1, false}, Slice{1, 2, 1, false})
	require.NoError(t, err)
	odd := RegionOf(b, 0, &op2.AP)
	assert.True(t, odd.Box)
	assert.True(t, even.Overlaps(&odd), "within the byte bounds")
	other := &Buffer{Name: "B", Mem: MemHBM, DType: FP32, Shape: []int64{64, 64}, Offset: 1 << 16}
	op3, err := other.View(1, Slice{0, 1, 1, false})
	require.NoError(t, err)
	far := RegionOf(other, 1, &op3.AP)
	assert.False(t, even.Overlaps(&far), "another buffer's bytes")
}

package kernels

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/trnsim/trnsim/isa"
)

// The plan search's plain-arithmetic SBUF size agrees with the saturating
// one wherever it is used.
func TestSBUFBytesFastPathAgrees(t *testing.T) {
	for _, g := range []GEMM{
		{M: 4096, K: 8192, N: 8192, In: isa.BF16, Out: isa.BF16},
		{M: 300, K: 5000, N: 2500, In: isa.FP32, Out: isa.FP32, AMK: true},
		{M: 1 << 30, K: 128, N: 64, In: isa.FP8E4, Out: isa.BF16, AMK: true},
		{M: 1, K: 2048, N: 128256, In: isa.BF16, Out: isa.BF16, AMK: true, Dequant: true, WeightDType: isa.INT8},
		{M: 300, K: 5000, N: 2500, In: isa.BF16, Out: isa.BF16, AMK: true, Dequant: true, WeightDType: isa.FP8E4},
	} {
		for _, tr := range []TransposeMode{TransposeDMA, TransposeTensor} {
			p := &GEMMPlan{G: g, NBuf: 2, AccDT: isa.FP32, Transpose: tr}
			for _, order := range []LoopOrder{OrderNKM, OrderNMK} {
				for _, bn := range []int64{512, 1536, 4096} {
					for _, bm := range []int64{128, 2176, 4096} {
						for _, bk := range []int64{128, 1024, 2048} {
							for _, nres := range []int64{1, 2} {
								assert.Equal(t, p.sbufBytesSat(order, bn, bm, bk, nres), p.sbufBytesSmall(order, bn, bm, bk, nres),
									"%+v %v %d %d %d %d", g, order, bn, bm, bk, nres)
							}
						}
					}
				}
			}
		}
	}
}

// DequantAuto's spread shares the work so that the engines that take
// part finish together, the least loaded first; the pinned choices load
// one engine (two for the alternations).
func TestDequantSpread(t *testing.T) {
	costs := [numDeq]float64{deqV: 300, deqSA: 200, deqG: 200, deqST: 200}
	l := DequantAuto.spread([3]float64{0, 0, 0}, costs)
	// Rates 1/300, 1/200, 1/200: the level T with T/300 + 2T/200 = 1.
	want := 1 / (1.0/300 + 2.0/200)
	for i := range l {
		assert.InDelta(t, want, l[i], 1e-9)
	}
	// A VectorE already busy past the level takes none.
	l = DequantAuto.spread([3]float64{1000, 0, 0}, costs)
	assert.Equal(t, 1000.0, l[0])
	assert.InDelta(t, 100, l[1], 1e-9)
	assert.InDelta(t, 100, l[2], 1e-9)
	assert.Equal(t, [3]float64{10, 200, 0}, DequantScalar.spread([3]float64{10, 0, 0}, costs))
	assert.Equal(t, [3]float64{0, 100, 100}, DequantAlternate.spread([3]float64{}, costs))
	l = DequantAlternateScalar.spread([3]float64{}, costs)
	assert.InDelta(t, 400.0/3, l[1], 1e-9)
	assert.InDelta(t, 200.0/3, l[2], 1e-9)
}

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

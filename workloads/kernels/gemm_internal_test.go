package kernels

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// A result is kept in SBUF, and A read from it, only by plans whose
// kernels can (CanKeepResult, CanReadAOnChip): each condition, broken
// alone, refuses.
func TestHandOffConditions(t *testing.T) {
	keeper := func() *GEMMPlan {
		return &GEMMPlan{G: GEMM{M: 200, K: 1024, N: 768, In: isa.BF16, Out: isa.BF16, AMK: true}, PSUMK: true, BM: 256, BN: 1024, Order: OrderNKM}
	}
	reader := func() *GEMMPlan {
		return &GEMMPlan{G: GEMM{M: 200, K: 768, N: 1024, In: isa.BF16, Out: isa.BF16, AMK: true}, AResident: true, BM: 256, BN: 512, Order: OrderNKM, Transpose: TransposeTensor}
	}
	require.True(t, keeper().CanKeepResult())
	require.True(t, reader().CanReadAOnChip())
	assert.Equal(t, keeper().ResultTileShape(), reader().AOnChipShape(), "a keeper of N columns hands over the rows a reader of K = N reads")
	for name, p := range map[string]*GEMMPlan{
		"K not in PSUM":     func() *GEMMPlan { p := keeper(); p.PSUMK = false; return p }(),
		"two N blocks":      func() *GEMMPlan { p := keeper(); p.BN = 512; return p }(),
		"N not 128s":        func() *GEMMPlan { p := keeper(); p.G.N = 700; return p }(),
		"a batch":           func() *GEMMPlan { p := keeper(); p.G.Batch = 2; return p }(),
		"two M blocks":      func() *GEMMPlan { p := keeper(); p.BM = 128; return p }(),
		"more M tiles":      func() *GEMMPlan { p := keeper(); p.BM = 384; return p }(),
		"deferred (quant.)": func() *GEMMPlan { p := keeper(); p.G.Dequant, p.NRes = true, 2; return p }(),
	} {
		assert.False(t, p.CanKeepResult(), name)
	}
	for name, p := range map[string]*GEMMPlan{
		"A not resident": func() *GEMMPlan { p := reader(); p.AResident = false; return p }(),
		"DMA transposes": func() *GEMMPlan { p := reader(); p.Transpose = TransposeDMA; return p }(),
		"A as A^T":       func() *GEMMPlan { p := reader(); p.G.AMK = false; return p }(),
		"K not 128s":     func() *GEMMPlan { p := reader(); p.G.K = 700; return p }(),
		"a batch":        func() *GEMMPlan { p := reader(); p.G.Batch = 2; return p }(),
		"quantised":      func() *GEMMPlan { p := reader(); p.G.Dequant = true; return p }(),
		"M past a block": func() *GEMMPlan { p := reader(); p.BM = 128; return p }(),
		"another order":  func() *GEMMPlan { p := reader(); p.Order = OrderNMK; return p }(),
	} {
		assert.False(t, p.CanReadAOnChip(), name)
	}
}

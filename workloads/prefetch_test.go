package workloads

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/chip"
)

// A Linear's weight prefetch moves back past every op whose tiles leave
// its slot region alone, not only the one before it: in a BERT-base layer
// at 128 tokens on trn1 the FFN's first projection (768 x 3072, 4.72 MB of
// BF16 weights) follows the attention, its output projection and a norm,
// and its weights stream while the attention runs. Its first transfer
// (the weights' head, its first instruction) starts before the attention
// ends by at least the time its weights take at the DMA's peak (16 engines
// x 17 B/ns: 17.3 us), so the stream can be whole by then. Prefetched one
// op ahead only, it began after the attention ended.
func TestWeightPrefetchCrossesOps(t *testing.T) {
	cfg := modelConfig(t, "trn1", "bert-base", "mode: prefill, batch: 1, seq: 128", 1)
	prog, info, err := Lower(cfg)
	require.NoError(t, err)
	res, err := chip.Run(cfg, prog, chip.Options{})
	require.NoError(t, err)
	ids := map[string]int32{}
	for _, o := range info.Ops {
		ids[o.Name] = o.ID
	}
	attn, ffn := ids["encoder.layer.0.attention.attn"], ids["encoder.layer.0.intermediate.dense"]
	require.NotZero(t, attn)
	require.NotZero(t, ffn)
	var attnEnd, ffnStart float64
	for _, o := range res.Ops {
		switch o.ID {
		case attn:
			attnEnd = o.End.Seconds()
		case ffn:
			ffnStart = o.Start.Seconds()
		}
	}
	h := &cfg.Hardware
	peak := float64(h.Core.DMA.Engines) * h.Core.DMA.EngineBandwidthGBps * 1e9
	weights := 768.0 * 3072 * 2
	lead := attnEnd - ffnStart
	t.Logf("intermediate.dense starts %.1f us before the attention ends; its weights take %.1f us at the DMA peak", lead*1e6, weights/peak*1e6)
	assert.GreaterOrEqual(t, lead, weights/peak, "the FFN's weights stream while the attention runs")
}

// A Linear planned with the whole of SBUF (Qwen2-7B's down_proj at 500
// tokens on trn1: A resident over 148 K tiles, most of SBUF) keeps its
// weight slots where the placement puts them: pinned in a prefetch
// region they left its A no room (the model did not fit).
func TestWeightSlotsLeaveRoomForTheirPlan(t *testing.T) {
	cfg := modelConfig(t, "trn1", "qwen2-7b", "mode: prefill, seq: 500", 1)
	prog, _, err := Lower(cfg)
	require.NoError(t, err)
	_, err = chip.Run(cfg, prog, chip.Options{})
	require.NoError(t, err)
}

package memory_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/memory"
)

func TestHBMStackOf(t *testing.T) {
	contiguous := memory.NewHBM(4, 400, 1000, 0, 0)
	interleaved := memory.NewHBM(4, 400, 1000, 4096, 0)
	tests := []struct {
		name string
		h    *memory.HBM
		addr int64
		want int
	}{
		{"contiguous first byte", contiguous, 0, 0},
		{"contiguous end of stack 0", contiguous, 999, 0},
		{"contiguous stack 1", contiguous, 1000, 1},
		{"contiguous stack 2", contiguous, 2500, 2},
		{"contiguous last stack", contiguous, 3999, 3},
		{"contiguous past the end clamps", contiguous, 100000, 3},
		{"contiguous negative clamps", contiguous, -5000, 0},
		{"interleaved block 0", interleaved, 4095, 0},
		{"interleaved block 1", interleaved, 4096, 1},
		{"interleaved block 3", interleaved, 3*4096 + 17, 3},
		{"interleaved wraps", interleaved, 4 * 4096, 0},
		{"interleaved wraps again", interleaved, 9 * 4096, 1},
		{"interleaved ignores stack size", interleaved, 1 << 40, 0},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, tc.h.StackOf(tc.addr), tc.name)
	}
	assert.Equal(t, 4, contiguous.Stacks())
}

func TestHBMBeginSlowdown(t *testing.T) {
	// Two stacks of 100 GB/s; engines of 30 GB/s: three fit on a stack.
	h := memory.NewHBM(2, 200, 1<<20, 0, 500*clock.Nanosecond)
	assert.Equal(t, 500*clock.Nanosecond, h.Latency())
	type step struct {
		begin     bool // false: End
		engine    int
		addr      int64
		wantStack int
		wantSlow  float64
	}
	stack1 := int64(1 << 20)
	steps := []step{
		{true, 0, 0, 0, 1},
		{true, 1, 10, 0, 1},
		{true, 2, 20, 0, 1},         // 3 x 30 = 90 <= 100
		{true, 3, 30, 0, 1.2},       // 4 x 30 = 120 > 100
		{true, 3, 40, 0, 1.2},       // engine 3 again: still 4 engines
		{true, 4, 50, 0, 1.5},       // 5 engines
		{true, 5, stack1, 1, 1},     // the other stack is idle
		{false, 4, 0, 0, 0},         // engine 4 done
		{true, 6, 60, 0, 1.5},       // 5 engines again
		{false, 3, 0, 0, 0},         // one of engine 3's two shares
		{true, 7, 70, 0, 1.8},       // engine 3 still counts: 6 engines
		{false, 3, 0, 0, 0},         // engine 3's second share
		{false, 6, 0, 0, 0},         //
		{false, 7, 0, 0, 0},         //
		{true, 8, 80, 0, 1.2},       // engines 0, 1, 2, 8
		{true, 9, stack1 + 1, 1, 1}, // engines 5, 9 on stack 1
	}
	for i, s := range steps {
		if !s.begin {
			h.End(0, s.engine)
			continue
		}
		st, slow := h.Begin(s.addr, 100, false, s.engine, 30)
		require.Equal(t, s.wantStack, st, "step %d", i)
		require.InDelta(t, s.wantSlow, slow, 1e-12, "step %d", i)
	}
}

func TestHBMEndReleases(t *testing.T) {
	h := memory.NewHBM(1, 100, 1<<30, 0, 0)
	for e := 0; e < 10; e++ {
		_, slow := h.Begin(0, 1, true, e, 25)
		assert.InDelta(t, max(1, float64(e+1)*25/100), slow, 1e-12, "engine %d", e)
	}
	for e := 0; e < 10; e++ {
		h.End(0, e)
	}
	_, slow := h.Begin(0, 1, true, 3, 25)
	assert.Equal(t, 1.0, slow, "every engine released")
	// An extra End is ignored.
	h.End(0, 3)
	h.End(0, 3)
	_, slow = h.Begin(0, 1, true, 3, 200)
	assert.Equal(t, 2.0, slow, "a single engine faster than its stack is slowed")
}

func TestHBMCountsBytes(t *testing.T) {
	h := memory.NewHBM(4, 400, 1<<20, 4096, 0)
	h.Begin(0, 100, false, 0, 1)
	h.Begin(5000, 250, false, 1, 1)
	h.Begin(9000, 7, true, 2, 1)
	h.Begin(0, 1000, true, 3, 1)
	assert.Equal(t, int64(350), h.ReadBytes)
	assert.Equal(t, int64(1007), h.WriteBytes)
}

// BeginEngines for n engines is n Begins: the same stack, slowdown, active
// count and bytes, and EndEngines releases them all.
func TestHBMBeginEnginesMatchesBegins(t *testing.T) {
	one, many := memory.NewHBM(2, 200, 1<<20, 0, 0), memory.NewHBM(2, 200, 1<<20, 0, 0)
	one.Begin(0, 10, false, 2, 25) // an engine already active in the range
	many.Begin(0, 10, false, 2, 25)
	var st1 int
	var slow1 float64
	for e := 0; e < 6; e++ {
		st1, slow1 = one.Begin(64, 100, true, e, 25)
	}
	st, slow := many.BeginEngines(64, 100, true, 0, 6, 25)
	assert.Equal(t, st1, st)
	assert.InDelta(t, slow1, slow, 1e-12)
	assert.InDelta(t, 6*25.0/100, slow, 1e-12, "six engines on a 100 GB/s stack")
	assert.Equal(t, one.WriteBytes, many.WriteBytes)
	assert.Equal(t, int64(600), many.WriteBytes)

	many.EndEngines(st, 0, 6)
	_, slow = many.Begin(0, 1, false, 9, 100)
	assert.InDelta(t, 2*100.0/100, slow, 1e-12, "only engine 2's first share and the new one remain")
}

// recorder is a share that notes the engines its stack has when rescaled.
type recorder struct {
	h      *memory.HBM
	stack  int
	seen   []float64
	engine float64
}

func (r *recorder) Rescale(clock.Time) { r.seen = append(r.seen, r.h.Demand(r.stack, r.engine, 1)) }

// Shares that start on a stack at one time are rescaled once, by the
// Flush their first change asks for, to the engines the stack has after
// every start and end of that time, in whatever order those came.
func TestHBMSameTimeChangesFlushOnce(t *testing.T) {
	h := memory.NewHBM(1, 100, 1<<30, 0, 0)
	const engineGBps = 60 // two engines exceed the stack's 100 GB/s
	start := func(e int, now clock.Time, r memory.Rescaler) bool {
		h.Begin(0, 64, false, e, engineGBps)
		return h.Started(0, now, r)
	}
	a := &recorder{h: h, engine: engineGBps}
	b := &recorder{h: h, engine: engineGBps}
	c := &recorder{h: h, engine: engineGBps}
	h.Begin(0, 64, false, 9, engineGBps) // an engine busy since before
	assert.False(t, start(0, 10, a), "the first share of a time needs no flush")
	assert.True(t, start(1, 10, b), "the second asks for one")
	assert.False(t, start(2, 10, c), "a flush is already due")
	h.End(0, 9)
	assert.False(t, h.Ended(0, 10))
	assert.Empty(t, a.seen, "nothing rescaled before the flush")
	h.Flush()
	want := h.Demand(0, engineGBps, 1) // three engines: 1.8
	assert.InDelta(t, 1.8, want, 1e-9)
	for _, r := range []*recorder{a, b, c} {
		assert.Equal(t, []float64{want}, r.seen)
	}
	// A change after the flush, at the same time, asks for another.
	h.End(0, 2)
	assert.True(t, h.Ended(0, 10))
	h.Flush()
	assert.Len(t, a.seen, 2)
	// A new time starts afresh.
	assert.False(t, start(3, 20, &recorder{h: h, engine: engineGBps}))
}

package dma_test

import (
	"errors"
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/dma"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/memory"
)

// Round numbers: an engine moves 20 bytes/ns (50,000 fs per byte).
const (
	engineGBps = 20
	fsPerByte  = 50000
	overhead   = 16 * clock.Nanosecond
	startLat   = 1000 * clock.Nanosecond
	doneLat    = 300 * clock.Nanosecond
	nEngines   = 16
	nQueues    = 16
)

func testConfig() dma.Config {
	return dma.Config{
		Engines: nEngines, Queues: nQueues, QueueDepth: 4, Partitions: 128,
		EngineGBps: engineGBps, DescriptorMaxBytes: 64 << 10, DescriptorOverhead: overhead,
		StartLatency: startLat, CompletionLatency: doneLat,
		TransposeEffHBM: 0.9, TransposeEffSBUF: 0.5,
		AgentBase: 0, Agents: nQueues,
	}
}

// work is one share's engine time: descriptors x overhead + bytes at the
// engine's rate.
func work(descs, bytes int64) clock.Time {
	return clock.Time(descs)*overhead + clock.Time(bytes*fsPerByte)
}

type postRec struct {
	sem isa.SemRef
	at  clock.Time
	add int64
}

type shareRec struct {
	engine     int
	queue      int16
	in         *isa.Instruction
	bytes      int64
	start, end clock.Time
}

// harness runs one core's DMA engines on an Akita serial engine. now follows
// only the test's own events, as chip.Run's clock follows only the
// sequencers' events: the DMA engines' own events must not rely on it.
type harness struct {
	t      *testing.T
	engine *sim.SerialEngine
	now    clock.Time
	d      *dma.Subsystem
	hbm    *memory.HBM
	posts  []postRec
	shares []shareRec
	events int
}

func (h *harness) DMA(chip, core int32, engine, engines int, queue int16, in *isa.Instruction, bytes int64, start, end clock.Time) {
	for e := engine; e < engine+engines; e++ {
		h.shares = append(h.shares, shareRec{e, queue, in, bytes, start, end})
	}
}

func newHarness(t *testing.T, cfg dma.Config, hbm *memory.HBM) *harness {
	h := &harness{t: t, engine: sim.NewSerialEngine(), hbm: hbm}
	h.d = dma.New(cfg, dma.Env{
		Engine: h.engine,
		Post: func(sem isa.SemRef, at clock.Time, add int64, vc memory.VClock) error {
			h.posts = append(h.posts, postRec{sem, at, add})
			return nil
		},
		Now:    func() clock.Time { return h.now },
		Failed: func() bool { return false },
		Fail:   func(err error) { t.Errorf("DMA failed: %v", err) },
		Event:  func(clock.Time) { h.events++ },
		HBM:    hbm,
		Tracer: h,
	})
	return h
}

// fastHBM neither slows nor delays a share.
func fastHBM() *memory.HBM { return memory.NewHBM(4, 1e6, 1<<30, 0, 0) }

type fnEvent struct {
	at clock.Time
	h  *harness
	fn func()
}

func (e *fnEvent) Time() sim.VTimeInSec       { return e.at.VTime() }
func (e *fnEvent) Handler() sim.Handler       { return e }
func (e *fnEvent) IsSecondary() bool          { return false }
func (e *fnEvent) Handle(ev sim.Event) error  { e.h.now = e.at; e.fn(); return nil }
func (h *harness) at(t clock.Time, fn func()) { h.engine.Schedule(&fnEvent{t, h, fn}) }

// submit submits in at time at (an event at that time), triggered then.
func (h *harness) submit(at clock.Time, in *isa.Instruction) {
	h.at(at, func() {
		require.NoError(h.t, h.d.Submit(in, at, make(memory.VClock, nQueues)))
	})
}

// submitAll submits ins in order in one event at time at.
func (h *harness) submitAll(at clock.Time, ins ...*isa.Instruction) {
	h.at(at, func() {
		for _, in := range ins {
			require.NoError(h.t, h.d.Submit(in, at, make(memory.VClock, nQueues)))
		}
	})
}

func (h *harness) run() { require.NoError(h.t, h.engine.Run()) }

// sharesOf returns the shares of in by engine (a missing engine moved no
// bytes).
func (h *harness) sharesOf(in *isa.Instruction) map[int]shareRec {
	m := map[int]shareRec{}
	for _, s := range h.shares {
		if s.in == in {
			_, dup := m[s.engine]
			require.False(h.t, dup, "engine %d served the transfer twice", s.engine)
			m[s.engine] = s
		}
	}
	return m
}

// raised returns the total posted to sem, and the time of the last post.
func (h *harness) raised(sem int32) (int64, clock.Time) {
	var n int64
	var last clock.Time
	for _, p := range h.posts {
		if p.sem.ID == sem {
			n += p.add
			last = max(last, p.at)
		}
	}
	return n, last
}

// Buffers: HBM at address 0 and SBUF at byte 0 of each partition.
var (
	hbmBuf  = &isa.Buffer{Name: "H", Mem: isa.MemHBM, DType: isa.BF16, Shape: []int64{128, 65536}, Core: -1}
	hbmBuf2 = &isa.Buffer{Name: "H2", Mem: isa.MemHBM, DType: isa.BF16, Shape: []int64{128, 65536}, Core: -1, Offset: 1 << 24}
	sbufBuf = &isa.Buffer{Name: "S", Mem: isa.MemSBUF, DType: isa.BF16, Shape: []int64{128, 65536}}
)

func sl(a, b int64) isa.Slice { return isa.Slice{Start: a, Stop: b, Step: 1} }

func view(t *testing.T, b *isa.Buffer, s ...isa.Slice) isa.Operand {
	t.Helper()
	op, err := b.View(0, s...)
	require.NoError(t, err)
	return op
}

// load builds dma_copy S[p0:p1, 0:n] <- H[p0:p1, 0:n] on queue q, signalling
// semaphore sem.
func load(t *testing.T, q int16, sem int32, p0, p1, n int64) *isa.Instruction {
	return copyOf(t, q, sem, view(t, sbufBuf, sl(p0, p1), sl(0, n)), view(t, hbmBuf, sl(p0, p1), sl(0, n)))
}

func copyOf(t *testing.T, q int16, sem int32, dst, src isa.Operand) *isa.Instruction {
	return &isa.Instruction{Body: &isa.Body{Op: isa.OpDMACopy, Engine: isa.EngineSync, Outs: []isa.Operand{dst}, Ins: []isa.Operand{src}, Attrs: isa.Attrs{Queue: q}}, Signal: []isa.SemSignal{{Sem: isa.SemRef{ID: sem}, Add: 1}}}
}

func TestRowsToEngines(t *testing.T) {
	tests := []struct {
		name   string
		p0, p1 int64
		n      int64
		rows   map[int]int64 // engine -> rows it moves
	}{
		{"[4, 4096] uses engine 0 only", 0, 4, 4096, map[int]int64{0: 4}},
		{"[8, 4096] fills engine 0", 0, 8, 4096, map[int]int64{0: 8}},
		{"[9, 4096] spills to engine 1", 0, 9, 4096, map[int]int64{0: 8, 1: 1}},
		{"partitions 60:68 straddle engines 7 and 8", 60, 68, 4096, map[int]int64{7: 4, 8: 4}},
		{"partitions 120:128 use engine 15", 120, 128, 512, map[int]int64{15: 8}},
		{"[128, 4096] uses all 16 engines", 0, 128, 4096, func() map[int]int64 {
			m := map[int]int64{}
			for e := 0; e < nEngines; e++ {
				m[e] = 8
			}
			return m
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, testConfig(), fastHBM())
			in := load(t, 0, 3, tc.p0, tc.p1, tc.n)
			h.submit(0, in)
			h.run()
			rowBytes := tc.n * 2
			shares := h.sharesOf(in)
			assert.Len(t, shares, len(tc.rows))
			for e := 0; e < nEngines; e++ {
				st := h.d.FinalStats().Engines[e]
				if rows, ok := tc.rows[e]; ok {
					assert.Equal(t, rows*rowBytes, shares[e].bytes, "engine %d bytes", e)
					assert.Equal(t, rows*rowBytes, st.Bytes, "engine %d stats", e)
					assert.Equal(t, int64(1), st.Shares)
				} else {
					assert.Zero(t, st.Bytes, "engine %d moves nothing", e)
					assert.Zero(t, st.Shares)
				}
			}
			// Every engine writes its semaphore update, moving bytes or not.
			total, _ := h.raised(3)
			assert.Equal(t, int64(nEngines), total)
			assert.Equal(t, int64(1), h.d.Stats.Transfers)
			assert.Equal(t, (tc.p1-tc.p0)*rowBytes, h.d.Stats.Bytes)
			assert.Equal(t, int64(1), h.d.Stats.QueueTransfers[0])
			assert.Equal(t, (tc.p1-tc.p0)*rowBytes, h.hbm.ReadBytes)
		})
	}
}

func TestHBMToHBMSpreadsRowsEvenly(t *testing.T) {
	h := newHarness(t, testConfig(), fastHBM())
	in := copyOf(t, 0, 1, view(t, hbmBuf2, sl(0, 20), sl(0, 1024)), view(t, hbmBuf, sl(0, 20), sl(0, 1024)))
	h.submit(0, in)
	h.run()
	shares := h.sharesOf(in)
	// 20 rows over 16 engines: 2 rows each on engines 0..9.
	assert.Len(t, shares, 10)
	for e := 0; e < 10; e++ {
		assert.Equal(t, int64(2*2048), shares[e].bytes)
	}
	total, _ := h.raised(1)
	assert.Equal(t, int64(nEngines), total)
}

func TestSemaphoreRaisedOncePerEngine(t *testing.T) {
	tests := []struct {
		name    string
		engines int
		signal  []isa.SemSignal
		want    map[int32]int64
	}{
		{"one signal, 16 engines", 16, []isa.SemSignal{{Sem: isa.SemRef{ID: 2}, Add: 1}}, map[int32]int64{2: 16}},
		{"add 2", 16, []isa.SemSignal{{Sem: isa.SemRef{ID: 2}, Add: 2}}, map[int32]int64{2: 32}},
		{"two semaphores", 16, []isa.SemSignal{{Sem: isa.SemRef{ID: 2}, Add: 1}, {Sem: isa.SemRef{ID: 5}, Add: 1}}, map[int32]int64{2: 16, 5: 16}},
		{"four engines", 4, []isa.SemSignal{{Sem: isa.SemRef{ID: 2}, Add: 1}}, map[int32]int64{2: 4}},
		{"no signal", 16, nil, map[int32]int64{2: 0}},
	}
	for _, tc := range tests {
		for _, n := range []int64{4, 128} {
			cfg := testConfig()
			cfg.Engines = tc.engines
			h := newHarness(t, cfg, fastHBM())
			in := load(t, 0, 0, 0, n, 1024)
			in.Signal = tc.signal
			h.submit(0, in)
			h.run()
			for sem, want := range tc.want {
				got, _ := h.raised(sem)
				assert.Equal(t, want, got, "%s, [%d, 1024]: s%d", tc.name, n, sem)
			}
		}
	}
}

func TestShareTiming(t *testing.T) {
	tests := []struct {
		name         string
		rows, n      int64 // bf16 [rows, n] HBM -> SBUF
		descsPerRow  int64
		trigger      clock.Time
		hbmLatency   clock.Time
		wantEngines  int
		rowsPerShare int64
	}{
		{"[128, 4096]", 128, 4096, 1, 0, 0, 16, 8},
		{"[128, 64]: overhead-bound", 128, 64, 1, 0, 0, 16, 8},
		{"[128, 65536]: two 64 KiB descriptors per row", 128, 65536, 2, 0, 0, 16, 8},
		{"[128, 40000]: 80000 B rows need two descriptors", 128, 40000, 2, 0, 0, 16, 8},
		{"[4, 4096] at a later trigger", 4, 4096, 1, 777 * clock.Nanosecond, 0, 1, 4},
		{"HBM latency is added", 128, 4096, 1, 0, 500 * clock.Nanosecond, 16, 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, testConfig(), memory.NewHBM(4, 1e6, 1<<30, 0, tc.hbmLatency))
			in := load(t, 0, 1, 0, tc.rows, tc.n)
			assert.Equal(t, tc.rows*tc.descsPerRow, h.d.Descriptors(in))
			h.submit(tc.trigger, in)
			h.run()
			bytes := tc.rowsPerShare * tc.n * 2
			w := work(tc.rowsPerShare*tc.descsPerRow, bytes) + tc.hbmLatency
			start := tc.trigger + startLat
			shares := h.sharesOf(in)
			require.Len(t, shares, tc.wantEngines)
			for e, s := range shares {
				assert.Equal(t, start, s.start, "engine %d: first byte after the start latency", e)
				assert.InDelta(t, float64(start+w), float64(s.end), 1, "engine %d end", e)
				st := h.d.FinalStats().Engines[e]
				assert.Equal(t, start, st.FirstByte)
				assert.Equal(t, s.end, st.LastByte)
				assert.Equal(t, s.end-s.start, st.Active)
			}
			total, last := h.raised(1)
			assert.Equal(t, int64(nEngines), total)
			assert.InDelta(t, float64(start+w+doneLat), float64(last), 1, "semaphore after the completion latency")
			assert.Equal(t, last, h.d.Stats.LastCompletion)
			if tc.wantEngines < nEngines {
				// Idle engines signal when the transfer becomes ready.
				first := clock.Never
				for _, p := range h.posts {
					first = min(first, p.at)
				}
				assert.Equal(t, start+doneLat, first)
			}
		})
	}
}

func TestTransposeEfficiency(t *testing.T) {
	h := newHarness(t, testConfig(), fastHBM())
	in := load(t, 0, 1, 0, 128, 4096)
	in.Op = isa.OpDMATranspose
	h.submit(0, in)
	h.run()
	s := h.sharesOf(in)[0]
	want := float64(8*overhead) + 65536*fsPerByte/0.9
	assert.InDelta(t, want, float64(s.end-s.start), 1)
}

func TestSharesInOneQueueRunInOrder(t *testing.T) {
	h := newHarness(t, testConfig(), fastHBM())
	a := load(t, 2, 1, 0, 128, 4096)
	b := load(t, 2, 2, 0, 128, 1024)
	c := load(t, 2, 3, 0, 128, 2048)
	h.submit(0, a)
	h.submit(10*clock.Nanosecond, b)
	h.submit(20*clock.Nanosecond, c)
	h.run()
	wa, wb, wc := work(8, 8*8192), work(8, 8*2048), work(8, 8*4096)
	for e := 0; e < nEngines; e++ {
		sa, sb, sc := h.sharesOf(a)[e], h.sharesOf(b)[e], h.sharesOf(c)[e]
		assert.Equal(t, startLat, sa.start)
		assert.InDelta(t, float64(startLat+wa), float64(sa.end), 1)
		assert.Equal(t, sa.end, sb.start, "b waits for a on engine %d", e)
		assert.InDelta(t, float64(sa.end+wb), float64(sb.end), 2)
		assert.Equal(t, sb.end, sc.start, "c waits for b on engine %d", e)
		assert.InDelta(t, float64(sb.end+wc), float64(sc.end), 3)
	}
	_, la := h.raised(1)
	_, lb := h.raised(2)
	_, lc := h.raised(3)
	assert.Less(t, la, lb)
	assert.Less(t, lb, lc)
}

func TestQueuesShareAnEngine(t *testing.T) {
	w := work(8, 8*8192)
	t.Run("together", func(t *testing.T) {
		h := newHarness(t, testConfig(), fastHBM())
		a := load(t, 0, 1, 0, 128, 4096)
		b := load(t, 1, 2, 0, 128, 4096)
		h.submitAll(0, a, b)
		h.run()
		for e := 0; e < nEngines; e++ {
			for _, s := range []shareRec{h.sharesOf(a)[e], h.sharesOf(b)[e]} {
				assert.Equal(t, startLat, s.start)
				assert.InDelta(t, float64(startLat+2*w), float64(s.end), 2, "half the rate each")
			}
		}
	})
	t.Run("staggered", func(t *testing.T) {
		// b arrives when a is half done: a finishes its second half at half
		// rate, then b its second half at full rate.
		h := newHarness(t, testConfig(), fastHBM())
		a := load(t, 0, 1, 0, 128, 4096)
		b := load(t, 1, 2, 0, 128, 4096)
		h.submit(0, a)
		h.submit(w/2, b)
		h.run()
		sa, sb := h.sharesOf(a)[5], h.sharesOf(b)[5]
		assert.Equal(t, startLat+w/2, sb.start)
		assert.InDelta(t, float64(startLat+w/2+w), float64(sa.end), 2)
		assert.InDelta(t, float64(startLat+2*w), float64(sb.end), 2)
	})
	t.Run("different engines do not share", func(t *testing.T) {
		h := newHarness(t, testConfig(), fastHBM())
		a := load(t, 0, 1, 0, 8, 4096)   // engine 0
		b := load(t, 1, 2, 8, 16, 4096)  // engine 1
		c := load(t, 2, 3, 16, 24, 4096) // engine 2
		h.submitAll(0, a, b, c)
		h.run()
		for _, in := range []*isa.Instruction{a, b, c} {
			for _, s := range h.sharesOf(in) {
				assert.InDelta(t, float64(startLat+w), float64(s.end), 1)
			}
		}
	})
}

func TestQoSClasses(t *testing.T) {
	w := work(8, 8*8192)
	tests := []struct {
		name    string
		classes int
		queues  []int16 // one transfer per entry, all submitted at 0
		ends    []clock.Time
	}{
		{"round robin shares", 0, []int16{0, 1}, []clock.Time{2 * w, 2 * w}},
		{"queue 0 starves queue 1", 4, []int16{0, 1}, []clock.Time{w, 2 * w}},
		{"starved while queue 0 has more", 4, []int16{0, 0, 1}, []clock.Time{w, 2 * w, 3 * w}},
		{"queue 3 waits for queues 1 and 2", 4, []int16{3, 2, 1}, []clock.Time{3 * w, 2 * w, w}},
		{"same class shares", 4, []int16{0, 4}, []clock.Time{2 * w, 2 * w}},
		{"class 0 first, then class 1 pair", 4, []int16{1, 5, 0}, []clock.Time{3 * w, 3 * w, w}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.QoSClasses = tc.classes
			h := newHarness(t, cfg, fastHBM())
			var ins []*isa.Instruction
			for i, q := range tc.queues {
				ins = append(ins, load(t, q, int32(i), 0, 128, 4096))
			}
			h.submitAll(0, ins...)
			h.run()
			for i, in := range ins {
				for e, s := range h.sharesOf(in) {
					assert.InDelta(t, float64(startLat+tc.ends[i]), float64(s.end), 3, "transfer %d (queue %d) engine %d", i, tc.queues[i], e)
				}
			}
		})
	}
}

func TestQueueFullAndWaitQueue(t *testing.T) {
	cfg := testConfig()
	cfg.QueueDepth = 2
	h := newHarness(t, cfg, fastHBM())
	w := work(8, 8*8192)
	a := load(t, 0, 1, 0, 128, 4096)
	b := load(t, 0, 2, 0, 128, 4096)
	c := load(t, 0, 3, 0, 128, 4096)
	var wokeAt []clock.Time
	h.at(0, func() {
		assert.False(t, h.d.QueueFull(0))
		require.NoError(t, h.d.Submit(a, 0, make(memory.VClock, nQueues)))
		assert.False(t, h.d.QueueFull(0))
		require.NoError(t, h.d.Submit(b, 0, make(memory.VClock, nQueues)))
		assert.True(t, h.d.QueueFull(0), "two outstanding transfers fill a queue of depth 2")
		assert.False(t, h.d.QueueFull(1), "queues are independent")
		for i := 0; i < 2; i++ {
			h.d.WaitQueue(0, func(at clock.Time) {
				wokeAt = append(wokeAt, at)
				assert.False(t, h.d.QueueFull(0), "a slot is free when the waiter is woken")
				if len(wokeAt) == 1 {
					// Act on the wake-up as a sequencer does: an Akita event
					// at that time (it must not lie in the past).
					h.at(at, func() {
						require.NoError(t, h.d.Submit(c, at, make(memory.VClock, nQueues)))
						assert.True(t, h.d.QueueFull(0))
					})
				}
			})
		}
	})
	h.run()
	aEnd := startLat + w
	require.Len(t, wokeAt, 2, "every waiter is woken once")
	// The slot frees when a's last share finishes (before its semaphore
	// moves: the completion latency does not hold the slot).
	assert.InDelta(t, float64(aEnd), float64(wokeAt[0]), 1)
	assert.Equal(t, wokeAt[0], wokeAt[1])
	sc := h.sharesOf(c)[0]
	assert.InDelta(t, float64(startLat+3*w), float64(sc.end), 3, "c queued behind b")
	assert.False(t, h.d.QueueFull(0))
	assert.Equal(t, int64(3), h.d.Stats.QueueTransfers[0])
}

func TestDescriptors(t *testing.T) {
	hbmF32 := &isa.Buffer{Name: "F", Mem: isa.MemHBM, DType: isa.FP32, Shape: []int64{128, 65536}, Core: -1}
	sbufF32 := &isa.Buffer{Name: "T", Mem: isa.MemSBUF, DType: isa.FP32, Shape: []int64{128, 49152}}
	raw := func(b *isa.Buffer, dims ...isa.Dim) isa.Operand {
		op, err := b.Raw(0, 0, 128, 0, dims)
		require.NoError(t, err)
		return op
	}
	tests := []struct {
		name     string
		dst, src isa.Operand
		want     int64
	}{
		{"contiguous [128, 4096] bf16: one per row", view(t, sbufBuf, sl(0, 128), sl(0, 4096)), view(t, hbmBuf, sl(0, 128), sl(0, 4096)), 128},
		{"[4, 4096]", view(t, sbufBuf, sl(0, 4), sl(0, 4096)), view(t, hbmBuf, sl(0, 4), sl(0, 4096)), 4},
		{"64 KiB rows: one each", view(t, sbufBuf, sl(0, 128), sl(0, 32768)), view(t, hbmBuf, sl(0, 128), sl(0, 32768)), 128},
		{"64 KiB + 2 B rows: two each", view(t, sbufBuf, sl(0, 128), sl(0, 32769)), view(t, hbmBuf, sl(0, 128), sl(0, 32769)), 256},
		{"128 KiB rows: two each", view(t, sbufBuf, sl(0, 128), sl(0, 65536)), view(t, hbmBuf, sl(0, 128), sl(0, 65536)), 256},
		{"192 KiB fp32 rows: three each", view(t, sbufF32, sl(0, 128), sl(0, 49152)), view(t, hbmF32, sl(0, 128), sl(0, 49152)), 384},
		{"rows apart in HBM, each contiguous", view(t, sbufBuf, sl(0, 128), sl(0, 1024)), view(t, hbmBuf, sl(0, 128), sl(1024, 2048)), 128},
		{"strided source: one per element", view(t, sbufBuf, sl(0, 128), sl(0, 512)), view(t, hbmBuf, sl(0, 128), isa.Slice{Start: 0, Stop: 1024, Step: 2}), 128 * 512},
		{"runs of 64 elements in HBM", view(t, sbufBuf, sl(0, 128), sl(0, 512)), raw(hbmBuf, isa.Dim{Size: 128, Stride: 65536}, isa.Dim{Size: 8, Stride: 128}, isa.Dim{Size: 64, Stride: 1}), 128 * 8},
		{"strided destination", raw(sbufBuf, isa.Dim{Size: 16, Stride: 256}, isa.Dim{Size: 32, Stride: 1}), view(t, hbmBuf, sl(0, 128), sl(0, 512)), 128 * 16},
		{"SBUF to HBM", view(t, hbmBuf, sl(0, 128), sl(0, 4096)), view(t, sbufBuf, sl(0, 128), sl(0, 4096)), 128},
	}
	d := dma.New(testConfig(), dma.Env{Engine: sim.NewSerialEngine()})
	for _, tc := range tests {
		in := copyOf(t, 0, 0, tc.dst, tc.src)
		assert.Equal(t, tc.want, d.Descriptors(in), tc.name)
	}
}

func TestHBMStackSlowsShares(t *testing.T) {
	// One stack against engines of 20 GB/s: a share is slowed by
	// max(1, 20 x engines active on the stack / stack rate), fixed when it starts
	// (documented simplification). The 16 shares of a [128, N] transfer
	// start together, so each sees all 16 engines: 3.2x.
	tests := []struct {
		name      string
		engines   int
		stackGBps float64
		slow      float64
	}{
		{"16 engines: the stack binds", 16, 100, 3.2},
		{"8 engines", 8, 100, 1.6},
		{"4 engines: the stack does not bind", 4, 100, 1},
		{"4 engines at exactly the stack rate", 4, 80, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Engines = tc.engines
			hbm := memory.NewHBM(1, tc.stackGBps, 1<<30, 0, 0)
			h := newHarness(t, cfg, hbm)
			in := load(t, 0, 1, 0, 128, 4096)
			h.submit(0, in)
			h.run()
			rows := int64(128 / tc.engines)
			w := work(rows, rows*8192)
			shares := h.sharesOf(in)
			require.Len(t, shares, tc.engines)
			for e, s := range shares {
				assert.InDelta(t, float64(w)*tc.slow, float64(s.end-s.start), 2, "engine %d", e)
			}
			assert.Equal(t, int64(128*8192), hbm.ReadBytes)
			// The stack is released: a later transfer on one engine runs at
			// full rate.
			in2 := load(t, 0, 2, 0, 4, 4096)
			h.submit(h.d.Stats.LastCompletion, in2)
			h.run()
			s := h.sharesOf(in2)[0]
			assert.InDelta(t, float64(work(4, 4*8192)), float64(s.end-s.start), 1)
		})
	}
}

func TestHBMWriteIsCounted(t *testing.T) {
	hbm := fastHBM()
	h := newHarness(t, testConfig(), hbm)
	in := copyOf(t, 0, 1, view(t, hbmBuf, sl(0, 128), sl(0, 1024)), view(t, sbufBuf, sl(0, 128), sl(0, 1024)))
	h.submit(0, in)
	h.run()
	assert.Equal(t, int64(128*2048), hbm.WriteBytes)
	assert.Zero(t, hbm.ReadBytes)
}

func TestRaceBetweenQueues(t *testing.T) {
	h := newHarness(t, testConfig(), fastHBM())
	race := memory.NewRaceDetector()
	h.d = dma.New(testConfig(), dma.Env{
		Engine: h.engine,
		Post:   func(isa.SemRef, clock.Time, int64, memory.VClock) error { return nil },
		Now:    func() clock.Time { return h.now },
		Failed: func() bool { return false },
		Race:   race,
	})
	vc := make(memory.VClock, nQueues)
	require.NoError(t, h.d.Submit(load(t, 0, 1, 0, 128, 1024), 0, vc))
	require.NoError(t, h.d.Submit(load(t, 0, 1, 0, 128, 1024), 0, vc), "one queue is ordered")
	err := h.d.Submit(load(t, 1, 1, 0, 128, 1024), 0, vc)
	var re *memory.RaceError
	require.True(t, errors.As(err, &re), "two queues writing the same bytes unordered: %v", err)
	assert.Contains(t, err.Error(), "DMA queue 0 writes")
	assert.Contains(t, err.Error(), "DMA queue 1 writes")
	require.NoError(t, h.d.Submit(load(t, 2, 1, 0, 128, 1024), 0, memory.VClock{0: 2, 1: 1, 15: 0}), "ordered after both")
}

func TestLockstepSplitAndRejoin(t *testing.T) {
	// A [128, N] transfer spreads evenly: the engines run in lockstep. A
	// [4, N] transfer arriving halfway splits them; engine 0 then shares its
	// bandwidth between the two, the others do not.
	h := newHarness(t, testConfig(), fastHBM())
	w := work(8, 8*8192)
	a := load(t, 0, 1, 0, 128, 4096)
	b := load(t, 1, 2, 0, 4, 4096) // engine 0 only; its work is w/2
	require.Equal(t, w/2, work(4, 4*8192))
	h.submit(0, a)
	h.submit(w/2, b)
	h.run()
	t1 := startLat + w/2 // b starts with half of a left on engine 0
	for e, s := range h.sharesOf(a) {
		want := startLat + w
		if e == 0 {
			want = t1 + w // both at half rate until both finish
		}
		assert.InDelta(t, float64(want), float64(s.end), 2, "engine %d", e)
	}
	sb := h.sharesOf(b)
	require.Len(t, sb, 1)
	assert.Equal(t, t1, sb[0].start)
	assert.InDelta(t, float64(t1+w), float64(sb[0].end), 2)
	a16, _ := h.raised(1)
	b16, _ := h.raised(2)
	assert.Equal(t, int64(nEngines), a16)
	assert.Equal(t, int64(nEngines), b16)

	// Drained: a later even transfer runs on every engine again.
	c := load(t, 0, 3, 0, 128, 4096)
	at := h.d.Stats.LastCompletion
	h.submit(at, c)
	h.run()
	sc := h.sharesOf(c)
	require.Len(t, sc, nEngines)
	for e, s := range sc {
		assert.Equal(t, at+startLat, s.start, "engine %d", e)
		assert.InDelta(t, float64(at+startLat+w), float64(s.end), 1, "engine %d", e)
	}
	st := h.d.FinalStats()
	for e := 0; e < nEngines; e++ {
		wantShares, wantBytes := int64(2), int64(2*65536)
		if e == 0 {
			wantShares, wantBytes = 3, 2*65536+32768
		}
		assert.Equal(t, wantShares, st.Engines[e].Shares, "engine %d", e)
		assert.Equal(t, wantBytes, st.Engines[e].Bytes, "engine %d", e)
		assert.Equal(t, startLat, st.Engines[e].FirstByte, "engine %d", e)
		assert.Equal(t, sc[e].end, st.Engines[e].LastByte, "engine %d", e)
	}
	assert.Equal(t, st, h.d.FinalStats(), "FinalStats can be asked again")
	c16, _ := h.raised(3)
	assert.Equal(t, int64(nEngines), c16)
}

func TestHardwareDGE(t *testing.T) {
	cfg := testConfig()
	cfg.HWDGEBlocks = 1
	cfg.HWDGETime = 600 * clock.Nanosecond
	h := newHarness(t, cfg, fastHBM())
	var ins []*isa.Instruction
	for q := int16(0); q < 3; q++ {
		in := load(t, q, int32(q), 0, 8, 64)
		in.Attrs.DGE = isa.DGEHardware
		ins = append(ins, in)
	}
	h.submitAll(0, ins...)
	h.run()
	// One block builds descriptors for one transfer at a time: 600, 1200,
	// 1800 ns; a transfer starts after both its descriptors and the start
	// latency.
	for i, want := range []clock.Time{startLat, 1200 * clock.Nanosecond, 1800 * clock.Nanosecond} {
		assert.Equal(t, want, h.sharesOf(ins[i])[0].start, "transfer %d", i)
	}
}

// A queue's semaphore counts transfers in order: a later transfer whose
// shares finish first (here its rows are on engines the earlier one leaves
// idle) does not move the count before the earlier transfer completes.
func TestQueueSemaphoreCountsTransfersInOrder(t *testing.T) {
	h := newHarness(t, testConfig(), fastHBM())
	first := load(t, 0, 1, 0, 64, 4096)  // engines 0-7, 8 rows each
	second := load(t, 0, 1, 64, 128, 64) // engines 8-15, tiny
	h.submitAll(0, first, second)
	h.run()
	firstEnd := clock.Time(0)
	for _, s := range h.sharesOf(first) {
		firstEnd = max(firstEnd, s.end)
	}
	require.Greater(t, firstEnd, clock.Time(0))
	// Before the first transfer completes, the count stays below 16 (its
	// own idle engines post 8 at once; the second transfer's must wait).
	var before int64
	for _, p := range h.posts {
		if p.at < firstEnd+doneLat {
			before += p.add
		}
	}
	assert.Equal(t, int64(8), before, "only the first transfer's idle engines post early")
	n, last := h.raised(1)
	assert.Equal(t, int64(32), n)
	assert.Equal(t, firstEnd+doneLat, last, "the second transfer's updates are released when the first completes")
}

// A casting transfer moves the wider dtype on the engines but reads or
// writes only the HBM side's own bytes.
func TestCastingTransferCountsTheHBMSidesBytes(t *testing.T) {
	hbm := fastHBM()
	h := newHarness(t, testConfig(), hbm)
	fp32 := &isa.Buffer{Name: "S32", Mem: isa.MemSBUF, DType: isa.FP32, Shape: []int64{128, 1024}}
	in := copyOf(t, 0, 1, view(t, hbmBuf, sl(0, 128), sl(0, 1024)), view(t, fp32, sl(0, 128), sl(0, 1024)))
	h.submit(0, in)
	h.run()
	assert.Equal(t, int64(128*1024*2), hbm.WriteBytes, "BF16 in HBM")
	var moved int64
	for _, s := range h.sharesOf(in) {
		moved += s.bytes
	}
	assert.Equal(t, int64(128*1024*4), moved, "the engines move FP32")
}

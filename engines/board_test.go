package engines

import (
	"testing"

	"github.com/sarchlab/akita/v3/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/memory"
)

type post struct {
	at  clock.Time
	add int64
}

func TestSemBoardOutOfOrderPosts(t *testing.T) {
	b := NewSemBoard(0, 0, 4, 3)
	require.Equal(t, 4, b.Len())
	// Posted in event order at time 0, effective out of time order.
	for _, p := range []post{{300, 1}, {100, 2}, {200, 4}, {100, 8}} {
		b.Post(1, p.at, p.add, nil, 0)
	}
	values := []struct {
		t    clock.Time
		want int64
	}{{0, 0}, {99, 0}, {100, 10}, {150, 10}, {199, 10}, {200, 14}, {299, 14}, {300, 15}, {clock.Never, 15}}
	for _, v := range values {
		assert.Equal(t, v.want, b.ValueAt(1, v.t, 0), "ValueAt(%d)", v.t)
	}
	reach := []struct {
		target int64
		want   clock.Time
	}{{0, 0}, {1, 100}, {10, 100}, {11, 200}, {14, 200}, {15, 300}, {16, clock.Never}}
	for _, r := range reach {
		assert.Equal(t, r.want, b.ReachTime(1, r.target, 0), "ReachTime(%d)", r.target)
	}
	assert.Equal(t, int64(15), b.Final(1))
	// Other semaphores are untouched.
	assert.Equal(t, int64(0), b.Final(0))
	assert.Equal(t, clock.Never, b.ReachTime(0, 1, 0))

	// As time passes, increments fold in; the answers stay the same.
	assert.Equal(t, int64(14), b.ValueAt(1, 250, 250))
	assert.Equal(t, clock.Time(250), b.ReachTime(1, 11, 250), "already reached: now")
	assert.Equal(t, clock.Time(300), b.ReachTime(1, 15, 250))
	assert.Equal(t, clock.Never, b.ReachTime(1, 16, 250))
	assert.Equal(t, int64(15), b.Final(1))
	// A late post effective in the past counts from now on.
	b.Post(1, 50, 100, nil, 260)
	assert.Equal(t, int64(114), b.ValueAt(1, 260, 260))
	assert.Equal(t, clock.Time(260), b.ReachTime(1, 114, 260))
	assert.Equal(t, int64(115), b.Final(1))
	assert.Equal(t, int64(5), b.sems[1].posts)
}

func TestSemBoardEqualTimesAreStable(t *testing.T) {
	b := NewSemBoard(0, 0, 1, 1)
	b.Post(0, 100, 1, nil, 0)
	b.Post(0, 100, 2, nil, 0)
	b.Post(0, 100, 4, nil, 0)
	assert.Equal(t, []pending{{100, 1, nil}, {100, 2, nil}, {100, 4, nil}}, b.sems[0].live())
	assert.Equal(t, clock.Time(100), b.ReachTime(0, 7, 0))
	assert.Equal(t, clock.Never, b.ReachTime(0, 8, 0))
}

// A waiter for value v is ordered after the increments, in the order
// they take effect, up to the one that reached v: not after increments
// still to take effect, nor after later ones already in effect.
func TestSemBoardJoinsTheClocksOfTheIncrementsAWaitNeeds(t *testing.T) {
	b := NewSemBoard(0, 0, 2, 4)
	poster := memory.VClock{3, 0, 1, 0}
	b.Post(0, 10, 1, poster, 0)
	poster[0] = 99 // the board keeps its own copy
	b.Post(0, 5, 1, memory.VClock{1, 2, 0, 0}, 0)
	b.Post(0, 7, 1, memory.VClock{0, 0, 0, 5}, 0)
	join := func(target int64, t clock.Time) memory.VClock {
		vc := make(memory.VClock, 4)
		b.JoinVC(vc, 0, target, t)
		return vc
	}
	assert.Equal(t, memory.VClock{1, 2, 0, 0}, join(1, 5), "the increment at 5 reaches 1")
	assert.Equal(t, memory.VClock{1, 2, 0, 0}, join(1, 9), "the one at 7 is in effect but not needed")
	assert.Equal(t, memory.VClock{1, 2, 0, 5}, join(2, 9))
	assert.Equal(t, memory.VClock{3, 2, 1, 5}, join(3, 10))
	// Once folded into the history, the same answers.
	assert.Equal(t, int64(3), b.ValueAt(0, 20, 20))
	assert.Equal(t, memory.VClock{1, 2, 0, 0}, join(1, 20))
	assert.Equal(t, memory.VClock{1, 2, 0, 5}, join(2, 20))
	assert.Equal(t, memory.VClock{3, 2, 1, 5}, join(3, 20))
	assert.Equal(t, memory.VClock{0, 0, 0, 0}, join(0, 20))
	vc := make(memory.VClock, 4)
	b.JoinVC(vc, 1, 1, 100)
	assert.Equal(t, memory.VClock{0, 0, 0, 0}, vc)
}

// Past the history's length, a waiter for an old value joins the clocks of
// every increment that left the history (more than it needs, never less).
func TestSemBoardHistoryOverflow(t *testing.T) {
	b := NewSemBoard(0, 0, 1, 2)
	for i := 1; i <= histLen+10; i++ {
		b.Post(0, clock.Time(i), 1, memory.VClock{uint32(i), 0}, clock.Time(i))
	}
	assert.Equal(t, int64(histLen+10), b.ValueAt(0, 1000, 1000))
	vc := make(memory.VClock, 2)
	b.JoinVC(vc, 0, 3, 1000)
	assert.Equal(t, memory.VClock{10, 0}, vc, "values 1..10 left the history")
	vc = make(memory.VClock, 2)
	b.JoinVC(vc, 0, 20, 1000)
	assert.Equal(t, memory.VClock{20, 0}, vc)
	vc = make(memory.VClock, 2)
	b.JoinVC(vc, 0, histLen+10, 1000)
	assert.Equal(t, memory.VClock{histLen + 10, 0}, vc)
}

// nilStream ends at once: a woken test sequencer records the time of its
// wake-up and stops.
type nilStream struct{}

func (nilStream) Next() (*isa.Instruction, error) { return nil, nil }

// testSeq returns a bare sequencer on its own Akita engine, enough to be a
// semaphore waiter.
func testSeq() *Sequencer {
	c := &Core{Sim: &Sim{Engine: sim.NewSerialEngine()}}
	s := &Sequencer{core: c, stream: nilStream{}, pendingT: clock.Never, waitStart: -1}
	s.events.Handler = s
	return s
}

// woke runs the sequencer's engine and returns the time of its wake-up, or
// clock.Never when none was scheduled.
func woke(t *testing.T, s *Sequencer) clock.Time {
	t.Helper()
	s.core.Sim.Now = clock.Never
	require.NoError(t, s.core.Sim.Engine.Run())
	if s.core.Sim.Events == 0 {
		return clock.Never
	}
	require.Equal(t, int64(1), s.core.Sim.Events, "one wake-up event")
	return s.core.Sim.Now
}

func TestSemBoardWakesWaiters(t *testing.T) {
	type postAt struct {
		at, now clock.Time
		add     int64
	}
	tests := []struct {
		name   string
		target int64
		posts  []postAt
		want   clock.Time
	}{
		{"no post", 1, nil, clock.Never},
		{"satisfying post", 1, []postAt{{500, 0, 1}}, 500},
		{"not enough", 3, []postAt{{500, 0, 1}, {600, 0, 1}}, clock.Never},
		{"two posts reach the target", 2, []postAt{{100, 0, 1}, {300, 0, 1}}, 300},
		{"second post reaches it earlier", 2, []postAt{{500, 0, 1}, {100, 0, 1}, {200, 0, 1}}, 200},
		// An increment posted after the one that satisfied the waiter but
		// effective earlier brings the wake-up forward.
		{"later post, earlier effect", 1, []postAt{{500, 0, 1}, {100, 20, 1}}, 100},
		{"later post, later effect", 1, []postAt{{100, 0, 1}, {500, 20, 1}}, 100},
		{"effective in the past: woken now", 1, []postAt{{50, 80, 1}}, 80},
		{"large increment", 16, []postAt{{400, 0, 16}}, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewSemBoard(0, 0, 2, 1)
			s := testSeq()
			b.addWaiter(0, s, tc.target)
			for _, p := range tc.posts {
				b.Post(0, p.at, p.add, nil, p.now)
				// Posts to another semaphore wake nobody.
				b.Post(1, p.at, 100, nil, p.now)
			}
			assert.Equal(t, tc.want, woke(t, s))
			if tc.want != clock.Never {
				assert.GreaterOrEqual(t, b.ValueAt(0, tc.want, tc.want), tc.target)
			}
		})
	}
}

func TestSemBoardWaiterBookkeeping(t *testing.T) {
	b := NewSemBoard(0, 0, 1, 1)
	s1, s2 := testSeq(), testSeq()
	b.addWaiter(0, s1, 1)
	b.addWaiter(0, s2, 2)
	b.addWaiter(0, s1, 1) // registering again replaces
	require.Len(t, b.sems[0].waiters, 2)

	b.Post(0, 100, 1, nil, 0)
	assert.Equal(t, clock.Time(100), s1.pendingT, "s1 satisfied")
	assert.Equal(t, clock.Never, s2.pendingT, "s2 needs 2")
	b.Post(0, 300, 1, nil, 10)
	assert.Equal(t, clock.Time(300), s2.pendingT)

	// Once s1's wake-up has fired, it no longer waits here.
	assert.Equal(t, clock.Time(100), woke(t, s1))
	b.Post(0, 200, 1, nil, 150)
	assert.Equal(t, clock.Time(200), s2.pendingT, "s2 brought forward")
	assert.Len(t, b.sems[0].waiters, 1, "s1 dropped")
	assert.Equal(t, clock.Time(200), woke(t, s2))
	b.Post(0, 400, 1, nil, 250)
	assert.Empty(t, b.sems[0].waiters)

	// A sequencer rescheduled by something else no longer waits either.
	s3 := testSeq()
	b.addWaiter(0, s3, 100)
	b.Post(0, 600, 100, nil, 300)
	assert.Equal(t, clock.Time(600), s3.pendingT)
	s3.wakeAt(350)
	b.Post(0, 320, 100, nil, 310)
	assert.Equal(t, clock.Time(350), s3.pendingT, "not moved by a stale waiter entry")
	assert.Empty(t, b.sems[0].waiters)
}

package runner

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/isa"
)

func TestProgressLine(t *testing.T) {
	us := clock.FromNanoseconds(1000)
	cases := []struct {
		name     string
		n, total int64
		now      clock.Time
		elapsed  time.Duration
		want     string
	}{
		{"total unknown", 2_000_000, -1, 250 * us, 2 * time.Second, "trnsim: simulated 250.000 us, 2000000 instructions (1.00 M/s)\n"},
		{"a quarter done", 2_000_000, 8_000_000, 250 * us, 2 * time.Second, "trnsim: simulated 250.000 us, 2000000 of 8000000 instructions, 25.0% done (1.00 M/s), about 6s left\n"},
		{"long run", 1_000_000, 1_000_000_000, us, 4 * time.Second, "trnsim: simulated 1.000 us, 1000000 of 1000000000 instructions, 0.1% done (0.25 M/s), about 1h6m36s left\n"},
		// A count that turns out wrong never prints a share above 100%.
		{"count exceeded", 3, 2, us, 2 * time.Second, "trnsim: simulated 1.000 us, 3 instructions (0.00 M/s)\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, progressLine(tc.n, tc.total, tc.now, tc.elapsed))
		})
	}
}

func TestLaunchProgressLine(t *testing.T) {
	ms := clock.FromNanoseconds(1e6)
	assert.Equal(t, "trnsim: simulated 8.000 ms, step 1 of 128, 60000 instructions (0.03 M/s)\n",
		launchProgressLine(60_000, 8*ms, 2*time.Second, 0, 1, 128), "no step finished: no time left yet")
	assert.Equal(t, "trnsim: simulated 80.000 ms, step 9 of 128, 500000 instructions (0.25 M/s), about 30s left\n",
		launchProgressLine(500_000, 80*ms, 2*time.Second, 2*time.Second, 9, 128), "8 steps in 2 s: 120 more in 30 s")
	assert.Equal(t, "trnsim: simulated 80.000 ms, step 9 of 128, 500000 instructions (0.17 M/s), about 29s left\n",
		launchProgressLine(500_000, 80*ms, 3*time.Second, 2*time.Second, 9, 128), "a second into the ninth")
}

func TestKnownInstructions(t *testing.T) {
	src := func(count int64) isa.StreamSource { return isa.StreamSource{Count: count} }
	assert.Equal(t, int64(7), knownInstructions(&isa.Program{Streams: []isa.StreamSource{src(3), src(4)}}))
	assert.Equal(t, int64(-1), knownInstructions(&isa.Program{Streams: []isa.StreamSource{src(3), src(-1)}}))
	assert.Equal(t, int64(0), knownInstructions(&isa.Program{}))
}

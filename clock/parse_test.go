package clock_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/clock"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want clock.Time
	}{
		{"0", 0},
		{"0us", 0},
		{"50us", 50 * clock.Microsecond},
		{"50µs", 50 * clock.Microsecond},
		{"1.5ms", 1500 * clock.Microsecond},
		{" 2 s ", 2 * clock.Second},
		{"0.25s", 250 * clock.Millisecond},
		{"100ns", 100 * clock.Nanosecond},
		{"357.1428ps", 357143}, // rounded to the femtosecond
		{"1fs", 1},
		{".5ns", 500 * clock.Picosecond},
		{"9000s", 9000 * clock.Second},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := clock.Parse(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{"", "50", "us", "-1us", "+1us", "1e3us", "1/2us", "fifty us", "5 hours", "10000s", "1.2.3ms"} {
		t.Run(in, func(t *testing.T) {
			_, err := clock.Parse(in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "time")
		})
	}
}

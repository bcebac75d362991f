package report

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/isa"
)

func TestParseTraceWindow(t *testing.T) {
	us := clock.Microsecond
	tests := []struct {
		in   string
		want TraceWindow
		text string
	}{
		{"0:50us", TraceWindow{0, 50 * us}, "0:50us"},
		{"1ms:2ms", TraceWindow{clock.Millisecond, 2 * clock.Millisecond}, "1ms:2ms"},
		{":50us", TraceWindow{0, 50 * us}, "0:50us"},
		{"1.5us:", TraceWindow{1500 * clock.Nanosecond, clock.Never}, "1500ns:"},
		{"10ns:1s", TraceWindow{10 * clock.Nanosecond, clock.Second}, "10ns:1s"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			w, err := ParseTraceWindow(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, w)
			assert.Equal(t, tc.text, w.String())
			assert.False(t, w.All())
		})
	}
	all, err := ParseTraceWindow(":")
	require.NoError(t, err)
	assert.True(t, all.All())
}

func TestParseTraceWindowRejects(t *testing.T) {
	tests := []struct{ in, want string }{
		{"50us", "START:END"},
		{"2ms:1ms", "empty window"},
		{"1ms:1ms", "empty window"},
		{"x:1ms", "start of the window"},
		{"0:50", "end of the window"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParseTraceWindow(tc.in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// windowTrace is the part of a trace file the filter tests read.
type windowTrace struct {
	TraceEvents []struct {
		Ph   string  `json:"ph"`
		Cat  string  `json:"cat"`
		Ts   float64 `json:"ts"`
		Dur  float64 `json:"dur"`
		Name string  `json:"name"`
	} `json:"traceEvents"`
	OtherData map[string]any `json:"otherData"`
}

// feed sends one of each kind of event every microsecond from 0 to 99 us:
// an instruction lasting 2 us, a wait lasting 1 us and a transfer over 4
// DMA engines lasting 3 us.
func feed(f *TraceFilter) {
	mm := &isa.Instruction{Body: &isa.Body{Op: isa.OpMultiplyMoving, Engine: isa.EngineTensor}}
	dm := &isa.Instruction{Body: &isa.Body{Op: isa.OpDMACopy, Engine: isa.EngineSync}}
	us := clock.Microsecond
	for i := clock.Time(0); i < 100; i++ {
		f.Instruction(0, 0, isa.EngineTensor, mm, i*us, (i+2)*us)
		f.Wait(0, 0, isa.EngineVector, nil, isa.SemRef{ID: 1}, i*us, (i+1)*us)
		f.DMA(0, 0, 0, 4, 0, dm, 1024, i*us, (i+3)*us)
	}
}

func TestTraceFilter(t *testing.T) {
	us := clock.Microsecond
	tests := []struct {
		name   string
		window TraceWindow
		limit  int64
		// kept is the number of slices the trace must hold.
		kept int64
	}{
		// Instructions starting at 8..19 us, waits at 9..19, DMA at 7..19 (4
		// shares each): 12 + 11 + 13*4.
		{"window", TraceWindow{10 * us, 20 * us}, 0, 12 + 11 + 13*4},
		// Instructions from 96 us, waits from 97, DMA from 95.
		{"open end", TraceWindow{98 * us, clock.Never}, 0, 4 + 3 + 5*4},
		{"limit", TraceWindow{0, clock.Never}, 10, 10},
		// The limit cuts the second transfer after two of its four shares.
		{"limit inside a transfer", TraceWindow{0, clock.Never}, 8, 8},
		{"window and limit", TraceWindow{50 * us, 60 * us}, 5, 5},
		{"everything", TraceWindow{0, clock.Never}, 0, 600},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			tw := NewTraceWriter(&out, nil)
			f := &TraceFilter{Next: tw, Window: tc.window, Limit: tc.limit}
			feed(f)
			tw.Note("window", tc.window.String())
			require.NoError(t, tw.Close())
			kept, dropped := f.Counts()
			assert.Equal(t, tc.kept, kept)
			assert.Equal(t, 600-tc.kept, dropped)

			var doc windowTrace
			require.NoError(t, json.Unmarshal(out.Bytes(), &doc), "the trace is valid JSON")
			assert.Equal(t, tc.window.String(), doc.OtherData["window"])
			var slices int64
			from, to := float64(tc.window.From)/float64(us), float64(tc.window.To)/float64(us)
			for _, e := range doc.TraceEvents {
				if e.Ph != "X" {
					continue
				}
				slices++
				assert.Less(t, e.Ts, to, "%s at %g us starts after the window", e.Name, e.Ts)
				assert.GreaterOrEqual(t, e.Ts+e.Dur, from, "%s at %g us ends before the window", e.Name, e.Ts)
			}
			assert.Equal(t, tc.kept, slices)
		})
	}
}

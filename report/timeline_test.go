package report

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads"
)

const tlUs = clock.Microsecond

func tlInstr(op int32, code isa.Opcode) *isa.Instruction {
	return &isa.Instruction{Body: &isa.Body{Op: code, OpID: op}}
}

func TestMergeBars(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []TimelineBar
		gap  float64
		want []TimelineBar
	}{
		{"sorted by start", []TimelineBar{{3, 4, 0}, {1, 2, 0}}, 0, []TimelineBar{{1, 2, 0}, {3, 4, 0}}},
		{"an overlap goes to the bar that started first", []TimelineBar{{1, 3, 0}, {2, 5, 1}}, 0, []TimelineBar{{1, 3, 0}, {3, 5, 1}}},
		{"a bar inside another disappears", []TimelineBar{{1, 5, 0}, {2, 3, 1}}, 0, []TimelineBar{{1, 5, 0}}},
		{"one class within the gap merges", []TimelineBar{{1, 2, 0}, {2.05, 3, 0}}, 0.1, []TimelineBar{{1, 3, 0}}},
		{"two classes never merge", []TimelineBar{{1, 2, 0}, {2.05, 3, 1}}, 0.1, []TimelineBar{{1, 2, 0}, {2.05, 3, 1}}},
		{"farther than the gap stays apart", []TimelineBar{{1, 2, 0}, {2.5, 3, 0}}, 0.1, []TimelineBar{{1, 2, 0}, {2.5, 3, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, mergeBars(tc.in, tc.gap))
		})
	}
}

func TestTimelineRecorderWindow(t *testing.T) {
	ops := []workloads.Op{{ID: 1, Kind: "linear"}, {ID: 2, Kind: "rms_norm"}}
	for _, tc := range []struct {
		name     string
		window   TraceWindow
		capacity int
		wantTo   clock.Time
		wantHow  string
	}{
		// 40 instructions of 1 µs every 2 µs on tensor, a transfer on DMA
		// queue 3 beside each: 80 intervals over 80 µs.
		{"the whole run", TraceWindow{To: clock.Never}, 1000, 80 * tlUs, "the whole run"},
		{"an open window closes when half full", TraceWindow{To: clock.Never}, 20, 8 * tlUs, "the first 10 intervals"},
		{"a requested window", TraceWindow{From: 10 * tlUs, To: 30 * tlUs}, 1000, 30 * tlUs, "the requested window"},
		{"a requested window cut for room", TraceWindow{From: 0, To: 60 * tlUs}, 10, 10 * tlUs, "until the recorder's 10 intervals were full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := NewTimelineRecorder(tc.window, tc.capacity, ops)
			for i := range 40 {
				at := clock.Time(2*i) * tlUs
				op := int32(1 + i%2)
				rec.Instruction(0, 0, isa.EngineTensor, tlInstr(op, isa.OpMultiplyMoving), at, at+tlUs)
				rec.DMA(0, 0, 0, 1, 3, tlInstr(op, isa.OpDMACopy), 1024, at, at+tlUs/2)
				// Another core's activity is not recorded.
				rec.Instruction(0, 1, isa.EngineVector, tlInstr(op, isa.OpMultiplyMoving), at, at+tlUs)
			}
			tl := rec.Report(80 * tlUs)
			require.NotNil(t, tl)
			assert.Equal(t, tc.window.From.Seconds(), tl.FromS)
			assert.InDelta(t, tc.wantTo.Seconds(), tl.ToS, 1e-15)
			assert.Contains(t, tl.Window, tc.wantHow)
			assert.LessOrEqual(t, tl.Recorded, tc.capacity)
			assert.Equal(t, "op kind", tl.ColourBy)
			assert.Equal(t, []string{"linear", "rms_norm"}, tl.Classes)
			var names []string
			for _, row := range tl.Rows {
				names = append(names, row.Name)
				for i, b := range row.Bars {
					assert.GreaterOrEqual(t, b.S, tl.FromS, "inside the window")
					assert.LessOrEqual(t, b.E, tl.ToS, "inside the window")
					assert.Less(t, b.S, b.E)
					if i > 0 {
						assert.GreaterOrEqual(t, b.S, row.Bars[i-1].E, "no overlap in a row")
					}
				}
			}
			assert.Equal(t, []string{"tensor", "DMA q3"}, names)
		})
	}
}

func TestTimelineRecorderNothing(t *testing.T) {
	rec := NewTimelineRecorder(TraceWindow{From: 100 * tlUs, To: clock.Never}, 0, nil)
	rec.Instruction(0, 0, isa.EngineTensor, tlInstr(0, isa.OpMultiplyMoving), 0, tlUs)
	assert.Nil(t, rec.Report(50*tlUs), "a window after the run's end has nothing")
}

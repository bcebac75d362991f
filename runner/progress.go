package runner

import (
	"fmt"
	"time"

	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/isa"
)

// knownInstructions returns the program's instruction count when every
// stream knows its own in advance (isa.StreamSource.Count), else -1.
func knownInstructions(prog *isa.Program) int64 {
	total := int64(0)
	for _, s := range prog.Streams {
		if s.Count < 0 {
			return -1
		}
		total += s.Count
	}
	return total
}

// progressLine is the line printed about every two seconds of host time:
// simulated time and instructions so far, the rate, and, when the total is
// known (total > 0), the share done and the time left at the rate so far.
func progressLine(n, total int64, now clock.Time, elapsed time.Duration) string {
	rate := float64(n) / elapsed.Seconds()
	line := fmt.Sprintf("trnsim: simulated %s, %d instructions (%.2f M/s)", now, n, rate/1e6)
	if total > 0 && n > 0 && n <= total {
		left := time.Duration(float64(elapsed) * float64(total-n) / float64(n))
		line = fmt.Sprintf("trnsim: simulated %s, %d of %d instructions, %.1f%% done (%.2f M/s), about %s left",
			now, n, total, 100*float64(n)/float64(total), rate/1e6, left.Round(time.Second))
	}
	return line + "\n"
}

// launchProgressLine is progressLine for a run of several launches (an
// exact decode's steps): the step running (launch, from 1, of launches,
// started when done of the elapsed time had gone) and, once one has
// finished, the time left at the finished steps' rate.
func launchProgressLine(n int64, now clock.Time, elapsed, done time.Duration, launch, launches int) string {
	rate := float64(n) / elapsed.Seconds()
	line := fmt.Sprintf("trnsim: simulated %s, step %d of %d, %d instructions (%.2f M/s)", now, launch, launches, n, rate/1e6)
	if finished := launch - 1; finished > 0 && launch <= launches {
		left := time.Duration(float64(done)*float64(launches-finished)/float64(finished)) - (elapsed - done)
		line += fmt.Sprintf(", about %s left", max(left, 0).Round(time.Second))
	}
	return line + "\n"
}

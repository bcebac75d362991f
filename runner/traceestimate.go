package runner

import (
	"fmt"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/report"
)

// traceBytesPerInstruction is the size of a trace per simulated
// instruction: its slice with the assembly text, and its share of the
// semaphore-wait and DMA-engine slices. Measured on lowered GEMMs from the
// default (5,638 instructions, 266 B each) to 16384x16384x4096 (230,924
// instructions, 244 B each); hand-written kernels with long operands run
// larger.
const traceBytesPerInstruction = 250

// traceWarnBytes is the estimated trace size from which a run warns before
// it starts: traces this large are slow to write and to open. (A variable
// so that tests can lower it.)
var traceWarnBytes int64 = 256 << 20

// countInstructions returns how many instructions prog runs: the sum of its
// streams' counts when every stream knows its count, else counted by
// walking the streams (which costs a few percent of a traced run). It
// returns -1 if a stream fails.
func countInstructions(prog *isa.Program) int64 {
	var n int64
	known := true
	for _, src := range prog.Streams {
		known = known && src.Count >= 0
	}
	if !known && prog.OpenAll != nil {
		// One opening serves every stream (a scheduled kernel is walked
		// once, not once per stream): take an instruction of each in turn.
		streams := prog.OpenAll()
		for live := len(streams); live > 0; {
			live = 0
			for i, st := range streams {
				if st == nil {
					continue
				}
				in, err := st.Next()
				if err != nil {
					return -1
				}
				if in == nil {
					streams[i] = nil
					continue
				}
				n++
				live++
			}
		}
		return n
	}
	for _, src := range prog.Streams {
		if src.Count >= 0 {
			n += src.Count
			continue
		}
		st := src.Open()
		for {
			in, err := st.Next()
			if err != nil {
				return -1
			}
			if in == nil {
				break
			}
			n++
		}
	}
	return n
}

// traceWarning returns a warning when the trace of a run of instructions
// instructions would be large, or "".
func traceWarning(label string, instructions int64) string {
	size := instructions * traceBytesPerInstruction
	if instructions < 0 || size < traceWarnBytes {
		return ""
	}
	return fmt.Sprintf("warning: %s: the trace will be about %s (%d instructions, about %d bytes each) and tracing slows the run several times; --trace-window START:END (such as 0:50us) or --trace-limit N keeps it small",
		label, report.HumanBytes(size), instructions, traceBytesPerInstruction)
}

package memory

import (
	"github.com/trnsim/trnsim/clock"
)

// HBM is a chip's high-bandwidth memory modelled per stack as a bandwidth
// server: each DMA engine transfer that touches a stack books its bytes at
// the stack's rate, first come first served, and cannot finish before its
// booking does. One booking per engine transfer, never per byte or
// descriptor.
//
// Simplification (documented in docs/validation.md): bookings are
// serialised per stack in the order transfers start, instead of sharing the
// stack's bandwidth fluidly among concurrent transfers. Total throughput is
// right; an individual transfer that meets contention may finish up to one
// booking (bytes/stack rate, 45 ns for 32 KiB on a trn2 stack) early or
// late. Row-buffer, refresh and channel effects are not modelled: nothing
// public describes them (reference §11).
type HBM struct {
	stacks          []stack
	stackBytes      int64
	interleaveBytes int64
	latency         clock.Time
	// ReadBytes and WriteBytes count traffic.
	ReadBytes, WriteBytes int64
}

type stack struct {
	fsPerByte float64
	nextFree  clock.Time
}

// NewHBM builds an HBM of n stacks sharing totalGBps, each stackBytes large.
// interleaveBytes > 0 rotates addresses over the stacks in blocks of that
// size; 0 gives each stack a contiguous address range.
func NewHBM(n int, totalGBps float64, stackBytes, interleaveBytes int64, latency clock.Time) *HBM {
	h := &HBM{stackBytes: stackBytes, interleaveBytes: interleaveBytes, latency: latency}
	per := totalGBps / float64(n)
	for i := 0; i < n; i++ {
		// GB/s = bytes per ns; fs per byte = 1e6 / (bytes per ns).
		h.stacks = append(h.stacks, stack{fsPerByte: 1e6 / per})
	}
	return h
}

// Stacks returns the number of stacks.
func (h *HBM) Stacks() int { return len(h.stacks) }

// StackOf returns the stack that holds an address.
func (h *HBM) StackOf(addr int64) int {
	if h.interleaveBytes > 0 {
		return int((addr / h.interleaveBytes) % int64(len(h.stacks)))
	}
	s := int(addr / h.stackBytes)
	if s >= len(h.stacks) {
		s = len(h.stacks) - 1
	}
	if s < 0 {
		s = 0
	}
	return s
}

// Book reserves bytes on the stack holding addr, starting no earlier than t.
// It returns when the stack has moved them (including the access latency).
func (h *HBM) Book(addr, bytes int64, write bool, t clock.Time) clock.Time {
	if bytes <= 0 {
		return t
	}
	if write {
		h.WriteBytes += bytes
	} else {
		h.ReadBytes += bytes
	}
	st := &h.stacks[h.StackOf(addr)]
	start := clock.Max(t, st.nextFree)
	st.nextFree = start + clock.Time(float64(bytes)*st.fsPerByte)
	return st.nextFree + h.latency
}

// Package gctune sets the Go garbage collector for simulation runs.
//
// A simulation allocates a lot of short-lived data (lazily generated
// instructions) but keeps little alive (a few MiB of state). Go collects
// when the heap has grown by GOGC% over what was live, so a small live heap
// means many collections, and every collection turns on write barriers
// for its mark phase, taxing every pointer store in the simulator. A Floor
// keeps the heap goal at or above a minimum instead: with 10 MiB live and a
// 256 MiB floor the collector runs 5x less often than at GOGC=400, and a
// run whose live heap is above the floor is treated exactly as GOGC=percent
// treats it.
//
// Setting GOGC or GOMEMLIMIT in the environment turns the floor off: the
// user's setting wins.
package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultMinHeapBytes is the heap goal below which a Floor does not let the
// collector start (256 MiB).
const DefaultMinHeapBytes = 256 << 20

// DefaultPercent is the GOGC value a Floor applies above the minimum.
const DefaultPercent = 400

// initialHeapBytes is the live heap Go assumes before its first collection.
const initialHeapBytes = 4 << 20

// maxPercent bounds the GOGC value a Floor sets, whatever the live heap.
const maxPercent = 1_000_000

// Floor keeps the collector's heap goal at or above MinHeapBytes by
// re-deriving GOGC after every collection from the live heap it measured.
type Floor struct {
	minHeapBytes uint64
	percent      int

	mu       sync.Mutex
	stopped  bool
	previous int
	sample   []metrics.Sample
}

// sentinel is allocated once per collection cycle: its cleanup runs after
// the collection that found it unreachable. It holds a pointer so that it
// is never placed in the tiny allocator, whose objects may not be cleaned
// up.
type sentinel struct {
	_ *int
	_ [8]byte
}

// Start applies a floor of minHeapBytes with GOGC=percent above it, unless
// the environment sets GOGC or GOMEMLIMIT (then it changes nothing). Stop
// undoes it.
func Start(minHeapBytes uint64, percent int) *Floor {
	f := &Floor{minHeapBytes: minHeapBytes, percent: percent,
		sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		f.stopped = true
		return f
	}
	// Before the first collection Go takes the live heap to be 4 MiB.
	f.previous = debug.SetGCPercent(f.percentFor(initialHeapBytes))
	f.arm()
	return f
}

// percentFor returns the GOGC value that puts the heap goal of a live heap
// of liveBytes at the floor, or percent if that is higher.
func (f *Floor) percentFor(liveBytes uint64) int {
	p := f.percent
	if liveBytes == 0 {
		liveBytes = 1
	}
	if liveBytes < f.minHeapBytes {
		need := (f.minHeapBytes - liveBytes) * 100 / liveBytes
		if need > maxPercent {
			need = maxPercent
		}
		p = max(p, int(need))
	}
	return p
}

func (f *Floor) arm() {
	runtime.AddCleanup(new(sentinel), func(f *Floor) { f.afterCollection() }, f)
}

// afterCollection runs after each collection (on the cleanup goroutine).
func (f *Floor) afterCollection() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	metrics.Read(f.sample)
	var live uint64
	if f.sample[0].Value.Kind() == metrics.KindUint64 {
		live = f.sample[0].Value.Uint64()
	}
	debug.SetGCPercent(f.percentFor(live))
	f.arm()
}

// Stop removes the floor and restores the GOGC value found at Start.
func (f *Floor) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	f.stopped = true
	debug.SetGCPercent(f.previous)
}

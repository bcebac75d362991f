package gctune

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPercentFor(t *testing.T) {
	f := &Floor{minHeapBytes: 256 << 20, percent: 400}
	for _, tc := range []struct {
		name      string
		liveBytes uint64
		want      int
	}{
		{"tiny live heap: goal at the floor", 4 << 20, 6300},
		{"live heap of a fifth of the floor: GOGC 400 reaches it", 256 << 20 / 5, 400},
		{"live heap above the floor: GOGC percent", 1 << 30, 400},
		{"no live heap measured: bounded", 0, maxPercent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, f.percentFor(tc.liveBytes))
		})
	}
}

// currentPercent reads GOGC without changing it.
func currentPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestStartRetunesAfterEachCollectionAndStopRestores(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	before := debug.SetGCPercent(123)
	defer debug.SetGCPercent(before)

	f := Start(DefaultMinHeapBytes, DefaultPercent)
	assert.Equal(t, f.percentFor(initialHeapBytes), currentPercent(), "set for Go's assumed 4 MiB before the first collection")

	// After a collection the cleanup derives GOGC from the measured live
	// heap (a test's few MiB): far above DefaultPercent, below the bound.
	debug.SetGCPercent(1)
	deadline := time.Now().Add(10 * time.Second)
	for currentPercent() == 1 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	got := currentPercent()
	assert.Greater(t, got, DefaultPercent)
	assert.Less(t, got, maxPercent)

	f.Stop()
	assert.Equal(t, 123, currentPercent(), "Stop restores the value found at Start")
	// Collections after Stop change nothing.
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	assert.Equal(t, 123, currentPercent())
	f.Stop() // idempotent
	assert.Equal(t, 123, currentPercent())
}

func TestEnvironmentSettingWins(t *testing.T) {
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "200")
			before := debug.SetGCPercent(77)
			defer debug.SetGCPercent(before)
			f := Start(DefaultMinHeapBytes, DefaultPercent)
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
			require.Equal(t, 77, currentPercent())
			f.Stop()
			require.Equal(t, 77, currentPercent())
		})
	}
}

package main

import (
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The memory the soft heap limit is set from is known on Linux, and
// plausible: at least 256 MiB, less than a pebibyte.
func TestMemoryBytes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("read from /proc and /sys on Linux only")
	}
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc/meminfo")
	}
	b := memoryBytes()
	assert.GreaterOrEqual(t, b, int64(256<<20))
	assert.Less(t, b, int64(1)<<50)
}

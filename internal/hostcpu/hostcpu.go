// Package hostcpu reads the process's CPU time, so speed benchmarks can
// report work per CPU-second as well as per wall-second: on shared machines
// CPU time is the steadier of the two.
package hostcpu

import (
	"syscall"
	"time"
)

// Time returns the user plus system CPU time the process has used.
func Time() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

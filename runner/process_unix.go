//go:build unix

package runner

import (
	"errors"
	"syscall"
)

// processExists reports whether a process with the PID exists (in this PID
// namespace: a file left by a process of another container can be judged
// wrongly, which at worst keeps a stale file or spoils that run's commit).
func processExists(pid int) bool {
	if pid <= 0 {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

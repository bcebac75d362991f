// Package hostcpu reads the process's CPU time, so speed benchmarks can
// report work per CPU-second as well as per wall-second: on shared machines
// CPU time is the steadier of the two.
package hostcpu

import (
	"os"
	"strconv"
	"strings"
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

// ChildrenTime returns the user plus system CPU time of the process's
// children that have ended and been waited for.
func ChildrenTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// StealTime returns the machine's CPU time stolen by the hypervisor since
// boot, summed over its CPUs (the steal column of /proc/stat; 0 where
// there is none): on a shared VM it is time the cores were not idle but
// not ours either.
func StealTime() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	ticks, err := strconv.ParseInt(f[8], 10, 64)
	if err != nil {
		return 0
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// Meter accumulates a speed benchmark's simulated work and reports it per
// wall-second and per CPU-second.
type Meter struct {
	cpu0                 time.Duration
	instructions, events int64
	host                 time.Duration
}

// NewMeter starts measuring CPU time.
func NewMeter() *Meter { return &Meter{cpu0: Time()} }

// Add records one run: its instructions, events and host (wall) time.
func (m *Meter) Add(instructions, events int64, host time.Duration) {
	m.instructions += instructions
	m.events += events
	m.host += host
}

// Reporter is the part of testing.B a Meter reports through.
type Reporter interface {
	ReportMetric(n float64, unit string)
}

// Report writes instr/s, instr/cpu-s, events/s and events/instr.
func (m *Meter) Report(b Reporter) {
	cpu := (Time() - m.cpu0).Seconds()
	host := m.host.Seconds()
	b.ReportMetric(float64(m.instructions)/host, "instr/s")
	b.ReportMetric(float64(m.instructions)/cpu, "instr/cpu-s")
	b.ReportMetric(float64(m.events)/host, "events/s")
	b.ReportMetric(float64(m.events)/float64(m.instructions), "events/instr")
}

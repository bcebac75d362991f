package main

import (
	"os"
	"strconv"
	"strings"
)

// memoryBytes returns the memory this process may use: the machine's
// (/proc/meminfo's MemTotal), or its control group's limit where that is
// lower (cgroup v2 memory.max, v1 memory.limit_in_bytes); 0 where
// neither is known.
func memoryBytes() int64 {
	var total int64
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				if kib, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					total = kib << 10
				}
			}
		}
	}
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// "max" (none) and v1's huge "unlimited" value do not parse or
		// exceed the machine's.
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			total = n
		}
	}
	return total
}

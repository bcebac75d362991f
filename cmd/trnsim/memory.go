package main

import (
	"os"
	"path"
	"strconv"
	"strings"
)

// memoryBytes returns the memory this process may use: the machine's
// (/proc/meminfo's MemTotal), or its control group's limit where that is
// lower; 0 where neither is known.
func memoryBytes() int64 { return memoryBytesFrom(os.ReadFile) }

// memoryBytesFrom is memoryBytes reading files with read: MemTotal, and
// the lowest limit of the process's memory control group
// (/proc/self/cgroup: cgroup v2's memory.max, v1's
// memory.limit_in_bytes) and of the groups above it.
func memoryBytesFrom(read func(name string) ([]byte, error)) int64 {
	var total int64
	if b, err := read("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				if kib, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					total = kib << 10
				}
			}
		}
	}
	limit := func(file string) {
		b, err := read(file)
		if err != nil {
			return
		}
		// "max" (none) and v1's huge "unlimited" value do not parse or
		// exceed the machine's.
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			total = n
		}
	}
	// up reads file in dir, the group, and in every group above it.
	up := func(root, group, file string) {
		for g := path.Clean("/" + group); ; g = path.Dir(g) {
			limit(path.Join(root, g, file))
			if g == "/" {
				return
			}
		}
	}
	b, err := read("/proc/self/cgroup")
	if err != nil {
		// (The root groups, where the process's own is not known.)
		limit("/sys/fs/cgroup/memory.max")
		limit("/sys/fs/cgroup/memory/memory.limit_in_bytes")
		return total
	}
	for _, line := range strings.Split(string(b), "\n") {
		// "ID:CONTROLLERS:PATH"; v2's has ID 0 and no controllers.
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			up("/sys/fs/cgroup", f[2], "memory.max")
		case contains(strings.Split(f[1], ","), "memory"):
			up("/sys/fs/cgroup/memory", f[2], "memory.limit_in_bytes")
		}
	}
	return total
}

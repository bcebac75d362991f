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

// The limit is the lowest of the machine's memory and the limits of the
// process's own memory control group and the groups above it, v1 or v2.
func TestMemoryBytesReadsTheProcessGroup(t *testing.T) {
	const gib = int64(1) << 30
	meminfo := "MemTotal:       24000000 kB\nMemFree: 1 kB\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"no group file: the machine", map[string]string{}, 24000000 << 10},
		{"v1, the limit on the process's group", map[string]string{
			"/proc/self/cgroup": "4:memory:/process_api/abc\n1:cpu:/\n",
			"/sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes": "4294967296\n",
			"/sys/fs/cgroup/memory/memory.limit_in_bytes":                 "9223372036854771712\n"}, 4 * gib},
		{"v1, the limit on a group above", map[string]string{
			"/proc/self/cgroup":                             "4:memory:/a/b\n",
			"/sys/fs/cgroup/memory/a/memory.limit_in_bytes": "2147483648\n"}, 2 * gib},
		{"v2, max below, a limit above", map[string]string{
			"/proc/self/cgroup":                        "0::/user.slice/job\n",
			"/sys/fs/cgroup/user.slice/job/memory.max": "max\n",
			"/sys/fs/cgroup/user.slice/memory.max":     "8589934592\n"}, 8 * gib},
		{"v2, a namespace: the root group", map[string]string{
			"/proc/self/cgroup":         "0::/\n",
			"/sys/fs/cgroup/memory.max": "1073741824\n"}, gib},
		{"a limit above the machine's memory", map[string]string{
			"/proc/self/cgroup":         "0::/\n",
			"/sys/fs/cgroup/memory.max": "99999999999999\n"}, 24000000 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"/proc/meminfo": meminfo}
			for k, v := range tc.files {
				files[k] = v
			}
			read := func(name string) ([]byte, error) {
				if s, ok := files[name]; ok {
					return []byte(s), nil
				}
				return nil, os.ErrNotExist
			}
			assert.Equal(t, tc.want, memoryBytesFrom(read))
		})
	}
}

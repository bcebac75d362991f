//go:build linux

package runner

import (
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// makeNull makes a character device node for /dev/null (major 1, minor
// 3) at path. Only root can; CI runs as root, so this is never skipped
// there.
func makeNull(t *testing.T, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making a device node needs root; the FIFO cases cover this user")
	}
	const major, minor = 1, 3
	dev := (minor & 0xff) | (major&0xfff)<<8
	require.NoError(t, syscall.Mknod(path, syscall.S_IFCHR|0o666, dev),
		"root cannot make a device node in %s (no CAP_MKNOD?)", filepath.Dir(path))
}

// deviceDir returns a temporary folder where device nodes work: the test's
// own, unless its file system is mounted nodev (then one in the package's
// folder).
func deviceDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Flags&syscall.MS_NODEV == 0 {
		return dir
	}
	dir, err := os.MkdirTemp(".", ".devtest-")
	require.NoError(t, err)
	abs, err := filepath.Abs(dir)
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(abs) })
	return abs
}

// readFIFO reads what is written to the FIFO at path, in the background.
func readFIFO(t *testing.T, path string) <-chan []byte {
	t.Helper()
	ch := make(chan []byte, 1)
	go func() {
		f, err := os.Open(path) // blocks until the run opens it for writing
		if err != nil {
			ch <- nil
			return
		}
		defer f.Close()
		data, _ := io.ReadAll(f)
		ch <- data
	}()
	return ch
}

func TestNonRegularTargetsAreWrittenInPlace(t *testing.T) {
	cases := []struct {
		name string
		// make makes the target; read, if set, returns what was written.
		make func(t *testing.T, path string) (read func() []byte)
		// set points one output at the target.
		set   func(o *Options, path string)
		valid func(data []byte) bool
	}{
		{"character device as --json", func(t *testing.T, p string) func() []byte { makeNull(t, p); return nil },
			func(o *Options, p string) { o.JSON = p }, nil},
		{"character device as --trace", func(t *testing.T, p string) func() []byte { makeNull(t, p); return nil },
			func(o *Options, p string) { o.Trace = p }, nil},
		{"character device as --dump-asm, with a --csv file", func(t *testing.T, p string) func() []byte { makeNull(t, p); return nil },
			func(o *Options, p string) { o.DumpAsm, o.CSV = p, filepath.Join(filepath.Dir(p), "r.csv") }, nil},
		{"FIFO as --json", func(t *testing.T, p string) func() []byte {
			require.NoError(t, syscall.Mkfifo(p, 0o644))
			ch := readFIFO(t, p)
			return func() []byte {
				select {
				case data := <-ch:
					return data
				case <-time.After(10 * time.Second):
					t.Error("nothing was written to the FIFO")
					return nil
				}
			}
		}, func(o *Options, p string) { o.JSON = p }, json.Valid},
		{"FIFO as --trace", func(t *testing.T, p string) func() []byte {
			require.NoError(t, syscall.Mkfifo(p, 0o644))
			ch := readFIFO(t, p)
			return func() []byte {
				select {
				case data := <-ch:
					return data
				case <-time.After(10 * time.Second):
					t.Error("nothing was written to the FIFO")
					return nil
				}
			}
		}, func(o *Options, p string) { o.Trace = p }, json.Valid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := deviceDir(t)
			target := filepath.Join(dir, "target")
			read := tc.make(t, target)
			before, err := os.Lstat(target)
			require.NoError(t, err)
			var opts Options
			tc.set(&opts, target)
			out, err := Run(smallConfig(t), opts)
			require.NoError(t, err)

			after, err := os.Lstat(target)
			require.NoError(t, err)
			assert.Equal(t, before.Mode(), after.Mode(), "the target is still a %s", before.Mode().Type())
			assert.True(t, os.SameFile(before, after), "the target is the same node, not a replacement")
			noLeftovers(t, dir)
			var inPlace *Written
			for i := range out.Files {
				if out.Files[i].Path == target {
					inPlace = &out.Files[i]
				}
			}
			require.NotNil(t, inPlace, "the target is listed as written")
			assert.True(t, inPlace.InPlace)
			assert.Positive(t, inPlace.Bytes)
			if read != nil {
				data := read()
				assert.Equal(t, inPlace.Bytes, int64(len(data)))
				assert.True(t, tc.valid(data), "what the FIFO carried is complete")
			}
		})
	}
}

func TestAMagicLinkIsWrittenInPlace(t *testing.T) {
	// /proc/self/fd/N (what /dev/stdout links to) names a pipe that no path
	// reaches: it is followed as the kernel follows it, and written in
	// place.
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	got := make(chan []byte, 1)
	go func() {
		data, _ := io.ReadAll(r)
		got <- data
	}()
	path := "/proc/self/fd/" + strconv.Itoa(int(w.Fd()))
	out, err := Run(smallConfig(t), Options{JSON: path})
	require.NoError(t, err)
	w.Close()
	data := <-got
	assert.True(t, json.Valid(data), "the pipe carried the results")
	require.Len(t, out.Files, 1)
	assert.Equal(t, Written{Path: path, Bytes: int64(len(data)), InPlace: true}, out.Files[0])
}

func TestASocketIsRefusedAndLeftAlone(t *testing.T) {
	// A short folder name: socket paths are limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "trnsim")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s")
	l, err := net.Listen("unix", path)
	require.NoError(t, err)
	defer l.Close()
	lowered := watchLowering(t)
	_, err = Run(smallConfig(t), Options{JSON: path})
	require.Error(t, err)
	assert.Equal(t, "--json: cannot write "+path+": it is a socket, which trnsim cannot write (it is left as it is)", err.Error())
	assert.False(t, *lowered)
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSocket, fi.Mode().Type())
}

func TestAReadOnlyDeviceIsRefused(t *testing.T) {
	// The read-only rule (no owner write bit) holds for devices too, root
	// or not.
	dir := deviceDir(t)
	path := filepath.Join(dir, "null")
	if os.Geteuid() == 0 {
		makeNull(t, path)
	} else {
		require.NoError(t, syscall.Mkfifo(path, 0o644))
	}
	require.NoError(t, os.Chmod(path, 0o444))
	lowered := watchLowering(t)
	_, err := Run(smallConfig(t), Options{Trace: path})
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "it exists and is read-only"), err.Error())
	assert.False(t, *lowered)
}

package runner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/report"
)

// How a run writes its outputs
//
// Every output path is checked before anything is lowered or simulated
// (planOutputs), and every file is created then too (outputSet.prepare), so
// a path that cannot be written fails at once. A regular file (or a path
// where nothing exists) is written to a temporary file beside it, named
// .NAME.trnsim-partial-PID-RANDOM, and the run's temporary files are renamed
// into place together when the run succeeds (outputSet.commit): an existing
// file is first moved aside to .NAME.trnsim-old-PID-RANDOM, and if any
// rename fails the files already renamed are taken back and the moved-aside
// ones restored, so the user sees either all the old files or all the new
// ones. A device or FIFO is opened and written in place, never renamed
// over; "-" is the run's standard output, written after the files are in
// place.
//
// A temporary file left by a run that was killed (kill -9) is removed by the
// next run that writes the same target, when the process that made it (the
// PID in its name) no longer exists; nothing else is ever removed. A
// moved-aside file left by a run killed while committing may be the only
// copy of the old target: it is never removed, and the next run says so.

// role is what an output holds; roles are written in this order.
type role int

const (
	roleAsm role = iota
	roleTrace
	roleJSON
	roleCSV
	numRoles
)

// roleInfo names each role's flag and config field.
var roleInfo = [numRoles]struct{ flag, field string }{
	roleAsm:   {"--dump-asm", "outputs.asm"},
	roleTrace: {"--trace", "outputs.trace"},
	roleJSON:  {"--json", "outputs.json"},
	roleCSV:   {"--csv", "outputs.csv"},
}

// stdoutOK reports whether the role may be written to standard output.
func (r role) stdoutOK() bool { return r == roleJSON || r == roleCSV }

// outputKind is how an output reaches its target.
type outputKind int

const (
	// toFile: a regular file or a new one, written to a temporary file and
	// renamed into place.
	toFile outputKind = iota
	// inPlace: an existing device or FIFO, opened and written directly.
	inPlace
	// toStdout: "-", buffered and written to standard output after the
	// files are committed.
	toStdout
)

// tempMarker and backupMarker are what the names of a target's temporary
// and moved-aside files hold after ".NAME".
const (
	tempMarker   = ".trnsim-partial-"
	backupMarker = ".trnsim-old-"
)

// output is one file a run writes.
type output struct {
	role role
	// label says what named the path, for errors: "--json", or
	// "run.yaml:40:9: outputs.json".
	label string
	// path is the path as given (or resolved against the config's folder).
	path string
	// target is the file written: path, or the file a symbolic link at path
	// points to.
	target string
	// key is target made absolute, with its folder's symbolic links
	// resolved, for comparing outputs.
	key  string
	kind outputKind
	// old is the existing target, nil if there is none.
	old os.FileInfo

	// tmp is the temporary file (toFile), file the opened target (inPlace).
	tmp, file *os.File
	tmpName   string
	buf       bytes.Buffer // toStdout
	cw        *countWriter
	w         *bufio.Writer
	backup    string
	// note is the Written's note.
	note string
	// removed is set, under the guard's lock, once the temporary file is
	// gone.
	removed bool
}

// errorf formats an error about writing the output.
func (o *output) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: cannot write %s: %s", o.label, o.path, fmt.Sprintf(format, args...))
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Written is one output a run wrote.
type Written struct {
	// Path is the path as given; Bytes its size.
	Path  string
	Bytes int64
	// InPlace is set for a device or FIFO, written in place.
	InPlace bool
	// Note says more about the content, or is "".
	Note string
}

// String prints the output as "PATH (SIZE)" or "PATH (SIZE; NOTE)".
func (w Written) String() string {
	if w.Note != "" {
		return fmt.Sprintf("%s (%s; %s)", w.Path, report.HumanBytes(w.Bytes), w.Note)
	}
	return fmt.Sprintf("%s (%s)", w.Path, report.HumanBytes(w.Bytes))
}

// request is one output path asked for, before it is checked.
type request struct {
	role        role
	label, path string
}

// requests lists the outputs of a run: each flag of opts, or else the
// config's outputs field, in role order. For JSON and CSV, /dev/stdout is
// read as "-".
func requests(cfg *configs.RunConfig, opts Options) []request {
	flags := [numRoles]string{roleAsm: opts.DumpAsm, roleTrace: opts.Trace, roleJSON: opts.JSON, roleCSV: opts.CSV}
	fields := [numRoles]string{roleAsm: cfg.Outputs.Asm, roleTrace: cfg.Outputs.Trace, roleJSON: cfg.Outputs.JSON, roleCSV: cfg.Outputs.CSV}
	var reqs []request
	for r := range numRoles {
		switch {
		case flags[r] == "/dev/stdout" && r.stdoutOK():
			// Standard output, so that the summary moves out of its way.
			reqs = append(reqs, request{r, roleInfo[r].flag, "-"})
		case flags[r] != "":
			reqs = append(reqs, request{r, roleInfo[r].flag, flags[r]})
		case fields[r] == "-" || (fields[r] == "/dev/stdout" && r.stdoutOK()):
			reqs = append(reqs, request{r, fieldLabel(cfg, roleInfo[r].field), "-"})
		case fields[r] != "":
			reqs = append(reqs, request{r, fieldLabel(cfg, roleInfo[r].field), cfg.ResolvePath(fields[r])})
		}
	}
	return reqs
}

// fieldLabel names a config field with where it was set: "run.yaml:40:9:
// outputs.json", or "--set outputs.json".
func fieldLabel(cfg *configs.RunConfig, path string) string {
	s, ok := cfg.Sources[path]
	switch {
	case ok && s.Line > 0:
		return fmt.Sprintf("%s:%d:%d: %s", s.File, s.Line, s.Col, path)
	case ok && s.File != "":
		return s.File + " " + path
	}
	return path
}

// input is a file the run reads, which no output may replace.
type input struct {
	what string
	key  string
	fi   os.FileInfo
}

// inputs lists the files the run reads: its config and its assembly or
// tile kernel file.
func inputs(cfg *configs.RunConfig) []input {
	var ins []input
	add := func(what, path string) {
		if path == "" {
			return
		}
		fi, err := os.Stat(path)
		if err != nil {
			return
		}
		ins = append(ins, input{what, pathKey(path), fi})
	}
	if cfg.Workload.Kind == "assembly" && cfg.Workload.Assembly != nil {
		add("the assembly file the run reads", cfg.Workload.Assembly.File)
	}
	if cfg.Workload.Kind == "tile" && cfg.Workload.Tile != nil {
		add("the tile kernel the run reads", cfg.Workload.Tile.File)
	}
	if cfg.File != configs.DefaultConfigName {
		add("the run's config file", cfg.File)
	}
	return ins
}

// pathKey returns path made absolute and clean, with the symbolic links of
// its nearest existing folder resolved.
func pathKey(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = filepath.Clean(path)
	}
	rest := filepath.Base(abs)
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		if filepath.Dir(dir) == dir {
			return abs
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// planOutputs checks every output a run asks for, before anything runs: a
// path may be "-" only for JSON and CSV, and only once; no output may be
// the run's config or assembly file, or the same file as another output;
// an existing target must be a regular file, a device or a FIFO whose mode
// lets its owner write it (the same rule for root, who could write it
// anyway); the folder of a new file must be a folder, or a path that can
// become one. Nothing is written.
func planOutputs(cfg *configs.RunConfig, opts Options) ([]*output, error) {
	reqs := requests(cfg, opts)
	if len(reqs) == 0 {
		return nil, nil
	}
	ins := inputs(cfg)
	stdout := stdoutInfo(opts.Stdout)
	var outs []*output
	for _, rq := range reqs {
		o := &output{role: rq.role, label: rq.label, path: rq.path, target: rq.path}
		if rq.path == "-" {
			if !rq.role.stdoutOK() {
				return nil, o.errorf("- (standard output) is only for --json and --csv")
			}
			for _, p := range outs {
				if p.kind == toStdout {
					return nil, fmt.Errorf("%s and %s cannot both be - (standard output)", p.label, o.label)
				}
			}
			o.kind = toStdout
			outs = append(outs, o)
			continue
		}
		if err := o.check(); err != nil {
			return nil, err
		}
		for _, in := range ins {
			if o.key == in.key || (o.old != nil && os.SameFile(o.old, in.fi)) {
				return nil, o.errorf("it is %s", in.what)
			}
		}
		for _, p := range outs {
			if p.kind != toStdout && (o.key == p.key || (o.old != nil && p.old != nil && os.SameFile(o.old, p.old))) {
				return nil, o.errorf("it is also the %s output", p.label)
			}
		}
		// A shell's "> out.json" makes the target the run's standard output
		// too: the summary would go into it (a device such as /dev/null
		// takes both).
		if stdout != nil && o.old != nil && o.old.Mode()&fs.ModeDevice == 0 && os.SameFile(o.old, stdout) {
			hint := "give another file"
			if o.role.stdoutOK() {
				hint += ", or " + roleInfo[o.role].flag + " - to write it to standard output (the summary then goes to standard error)"
			}
			return nil, o.errorf("it is also the run's standard output (redirected there), where the summary goes, so one would corrupt the other; %s", hint)
		}
		outs = append(outs, o)
	}
	return outs, nil
}

// stdoutInfo returns what the run's standard output is (w, or os.Stdout
// when w is nil) when it is a file, looking through writers that wrap
// another (an Unwrap() io.Writer method); nil otherwise.
func stdoutInfo(w io.Writer) os.FileInfo {
	if w == nil {
		w = os.Stdout
	}
	for {
		switch v := w.(type) {
		case *os.File:
			fi, err := v.Stat()
			if err != nil {
				return nil
			}
			return fi
		case interface{ Unwrap() io.Writer }:
			w = v.Unwrap()
		default:
			return nil
		}
	}
}

// check looks at what is at the output's path and sets its target, key,
// kind and old file.
func (o *output) check() error {
	fi, err := os.Lstat(o.path)
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// Follow the link as the kernel does (which also follows the
		// magic links of /proc/self/fd, as /dev/stdout is one).
		fi, err = os.Stat(o.path)
		switch {
		case err != nil:
			dest, _ := os.Readlink(o.path)
			return o.errorf("it is a symbolic link to %s, which cannot be reached (%v)", dest, unwrapPath(err))
		case fi.Mode().IsRegular():
			// Replace the file the link points to, not the link.
			resolved, rerr := filepath.EvalSymlinks(o.path)
			if rerr != nil {
				return o.errorf("cannot follow its symbolic link: %v", unwrapPath(rerr))
			}
			o.target = resolved
		}
	}
	o.key = pathKey(o.target)
	switch {
	case err == nil:
		o.old = fi
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		// Nothing there yet; the folder is checked below.
	default:
		return o.errorf("%v", unwrapPath(err))
	}
	if o.old != nil {
		m := o.old.Mode()
		switch {
		case m.IsDir():
			return o.errorf("it is a folder")
		case m&fs.ModeSocket != 0:
			return o.errorf("it is a socket, which trnsim cannot write (it is left as it is)")
		case m.IsRegular():
			o.kind = toFile
		case m&(fs.ModeNamedPipe|fs.ModeDevice|fs.ModeCharDevice) != 0:
			o.kind = inPlace
		default:
			return o.errorf("it is neither a regular file, a device nor a FIFO (mode %s)", m)
		}
		if m.Perm()&0o200 == 0 {
			return o.errorf("it exists and is read-only (mode %s); trnsim does not replace a read-only file: make it writable or remove it", m)
		}
		if o.kind == inPlace {
			return nil
		}
	}
	return checkFolder(o, filepath.Dir(o.target))
}

// checkFolder checks that dir is a folder, or that the nearest existing
// path above it is one (so the folders can be made).
func checkFolder(o *output, dir string) error {
	for d := filepath.Clean(dir); ; {
		fi, err := os.Stat(d)
		switch {
		case err == nil && fi.IsDir():
			return nil
		case err == nil:
			return o.errorf("%s is a file, not a folder", d)
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return o.errorf("cannot reach folder %s: %v", d, unwrapPath(err))
		}
		parent := filepath.Dir(d)
		if parent == d {
			return nil
		}
		d = parent
	}
}

// A Guard lets a signal handler discard the outputs of the runs in
// progress. Stop removes their temporary files and the folders they made,
// waits for a commit in progress to finish, and makes every later commit
// fail; so after Stop each run's outputs are either all in place (committed
// before Stop) or none is. The zero Guard is ready to use; one Guard may
// serve several runs, one after the other or at once.
type Guard struct {
	mu      sync.Mutex
	stopped bool
	sets    map[*outputSet]struct{}
}

// Stop discards the outputs of every run in progress; it reports whether
// there were any. After Stop, runs fail with ErrStopped instead of writing
// their outputs.
func (g *Guard) Stop() (discarded bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped = true
	for s := range g.sets {
		if s.hasFiles() {
			discarded = true
		}
		s.abortLocked()
	}
	return discarded
}

// ErrStopped is returned by a run whose outputs a Guard discarded.
var ErrStopped = errors.New("stopped: the outputs were not written")

// liveTemps holds the names of this process's temporary files, so that the
// stale-file sweep of another run in this process never takes them for
// leftovers of a dead process with the same PID.
var liveTemps sync.Map

// rename is os.Rename; tests replace it to make a commit fail.
var rename = os.Rename

// outputSet is the outputs of one run, written together.
type outputSet struct {
	guard  *Guard
	outs   []*output
	stdout io.Writer
	// dirs are the folders prepare made, outermost first.
	dirs []string
	// done is set, under the guard's lock, once the set is committed or
	// aborted.
	done bool
	// noSync skips syncing the files and their folders (Options.NoSync).
	noSync bool
}

// get returns the set's output of a role, or nil.
func (s *outputSet) get(r role) *output {
	for _, o := range s.outs {
		if o.role == r {
			return o
		}
	}
	return nil
}

// usesStdout reports whether an output goes to standard output.
func (s *outputSet) usesStdout() bool {
	for _, o := range s.outs {
		if o.kind == toStdout {
			return true
		}
	}
	return false
}

// hasFiles reports whether the set has written anything to disk.
func (s *outputSet) hasFiles() bool {
	for _, o := range s.outs {
		if o.tmp != nil && !o.removed {
			return true
		}
	}
	return len(s.dirs) > 0
}

// prepare sweeps stale temporary files, makes the missing folders, creates
// every temporary file and opens every in-place target. It returns notes
// about files left by killed runs. On error nothing it made remains.
func (s *outputSet) prepare() (notes []string, err error) {
	g := s.guard
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		return nil, ErrStopped
	}
	if g.sets == nil {
		g.sets = map[*outputSet]struct{}{}
	}
	g.sets[s] = struct{}{}
	for _, o := range s.outs {
		if o.kind != toFile {
			continue
		}
		notes = append(notes, sweepStale(o.target)...)
		if err = s.makeFolders(o); err == nil {
			err = o.createTemp()
		}
		if err != nil {
			break
		}
	}
	g.mu.Unlock()
	if err != nil {
		s.abort()
		return nil, err
	}
	for _, o := range s.outs {
		switch o.kind {
		case inPlace:
			// A FIFO blocks here until a reader opens it.
			f, err := os.OpenFile(o.target, os.O_WRONLY, 0)
			if err != nil {
				s.abort()
				return nil, o.errorf("%v", unwrapPath(err))
			}
			if fi, err := f.Stat(); err != nil || fi.Mode().IsRegular() {
				f.Close()
				s.abort()
				return nil, o.errorf("it changed while trnsim opened it")
			}
			o.file = f
			o.cw = &countWriter{w: f}
			o.w = bufio.NewWriterSize(o.cw, 1<<20)
		case toStdout:
			o.cw = &countWriter{w: &o.buf}
			o.w = bufio.NewWriter(o.cw)
		}
	}
	return notes, nil
}

// makeFolders makes the folders of o's target that do not exist.
func (s *outputSet) makeFolders(o *output) error {
	var missing []string
	for d := filepath.Dir(o.target); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		d := missing[i]
		if err := os.Mkdir(d, 0o777); err != nil {
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			return o.errorf("cannot make folder %s: %v", d, unwrapPath(err))
		}
		s.dirs = append(s.dirs, d)
	}
	return nil
}

// createTemp creates o's temporary file beside its target, with the
// target's permissions when it exists.
func (o *output) createTemp() error {
	dir, base := filepath.Split(o.target)
	perm := fs.FileMode(0o666) // less the umask
	if o.old != nil {
		perm = o.old.Mode().Perm()
	}
	prefix := "." + base + tempMarker + strconv.Itoa(os.Getpid()) + "-"
	for try := 0; ; try++ {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		if err != nil {
			folder := filepath.Dir(o.target)
			return o.errorf("cannot create a file in folder %s: %v", folder, unwrapPath(err))
		}
		if o.old != nil {
			// Keep the target's exact permissions, whatever the umask.
			if err := f.Chmod(perm); err != nil {
				f.Close()
				os.Remove(name)
				return o.errorf("%v", unwrapPath(err))
			}
		}
		liveTemps.Store(name, struct{}{})
		o.tmp, o.tmpName = f, name
		o.cw = &countWriter{w: f}
		o.w = bufio.NewWriterSize(o.cw, 1<<20)
		return nil
	}
}

// sweepStale removes the temporary files of target left by processes that
// no longer exist, and returns a note for each moved-aside copy of target
// left by such a process (which it keeps).
func sweepStale(target string) (notes []string) {
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		name := e.Name()
		rest, ok := strings.CutPrefix(name, "."+base)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		var marker string
		switch {
		case strings.HasPrefix(rest, tempMarker):
			marker = tempMarker
		case strings.HasPrefix(rest, backupMarker):
			marker = backupMarker
		default:
			continue
		}
		pidText, _, ok := strings.Cut(rest[len(marker):], "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil {
			continue
		}
		path := filepath.Join(dir, name)
		if _, live := liveTemps.Load(path); live || (pid != os.Getpid() && processExists(pid)) {
			continue
		}
		if marker == tempMarker {
			os.Remove(path)
			continue
		}
		notes = append(notes, fmt.Sprintf("%s is a copy of %s that a trnsim run (PID %d) moved aside and did not restore: it was killed while writing its outputs; remove it once you no longer need it", path, target, pid))
	}
	return notes
}

// stopped reports whether the set's guard was stopped.
func (s *outputSet) stopped() bool {
	s.guard.mu.Lock()
	defer s.guard.mu.Unlock()
	return s.guard.stopped
}

// flush flushes an output's buffer.
func (s *outputSet) flush(o *output) error {
	if err := o.w.Flush(); err != nil {
		return fmt.Errorf("%s: writing %s: %v", o.label, o.path, unwrapPath(err))
	}
	return nil
}

// commit finishes the outputs: the temporary files are flushed, synced and
// closed, then renamed into place together; the in-place targets are
// flushed and closed; the standard-output ones are written to s.stdout. It
// returns what was written. On error no temporary file remains, and the
// regular targets are as they were unless the error came after they were
// all in place (writing a device or standard output).
func (s *outputSet) commit() ([]Written, error) {
	for _, o := range s.outs {
		if o.kind != toFile {
			continue
		}
		err := s.flush(o)
		if err == nil && !s.noSync {
			if serr := o.tmp.Sync(); serr != nil {
				err = fmt.Errorf("%s: writing %s: %v", o.label, o.path, unwrapPath(serr))
			}
		}
		if cerr := o.tmp.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("%s: writing %s: %v", o.label, o.path, unwrapPath(cerr))
		}
		if err != nil {
			s.abort()
			if s.stopped() {
				return nil, ErrStopped
			}
			return nil, err
		}
	}
	if err := s.renameAll(); err != nil {
		return nil, err
	}
	var written []Written
	var firstErr error
	for _, o := range s.outs {
		switch o.kind {
		case toFile:
			written = append(written, Written{Path: o.path, Bytes: o.cw.n, Note: o.note})
		case inPlace:
			err := s.flush(o)
			if cerr := o.file.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("%s: writing %s: %v", o.label, o.path, unwrapPath(cerr))
			}
			if err != nil && firstErr == nil {
				firstErr = err
			}
			written = append(written, Written{Path: o.path, Bytes: o.cw.n, InPlace: true, Note: o.note})
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	for _, o := range s.outs {
		if o.kind != toStdout {
			continue
		}
		o.w.Flush() // into o.buf: cannot fail
		if _, err := s.stdout.Write(o.buf.Bytes()); err != nil {
			return nil, fmt.Errorf("%s: writing standard output: %v", o.label, unwrapPath(err))
		}
	}
	return written, nil
}

// renameAll moves the existing targets aside, renames every temporary file
// into place and removes the moved-aside files; if a rename fails it puts
// everything back. It holds the guard's lock, so a Stop waits for it.
func (s *outputSet) renameAll() error {
	g := s.guard
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		s.abortLocked()
		return ErrStopped
	}
	var files []*output
	for _, o := range s.outs {
		if o.kind == toFile {
			files = append(files, o)
		}
	}
	var aside, placed []*output
	fail := func(err error) error {
		return s.rollback(err, aside, placed)
	}
	for _, o := range files {
		if o.old == nil {
			continue
		}
		dir, base := filepath.Split(o.target)
		prefix := "." + base + backupMarker + strconv.Itoa(os.Getpid()) + "-"
		for {
			o.backup = filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
			if _, err := os.Lstat(o.backup); errors.Is(err, fs.ErrNotExist) {
				break
			}
		}
		if err := rename(o.target, o.backup); err != nil {
			o.backup = ""
			return fail(fmt.Errorf("%s: cannot move %s aside: %v", o.label, o.path, unwrapLink(err)))
		}
		aside = append(aside, o)
	}
	for _, o := range files {
		if err := rename(o.tmpName, o.target); err != nil {
			return fail(fmt.Errorf("%s: cannot write %s: %v", o.label, o.path, unwrapLink(err)))
		}
		o.removed = true
		liveTemps.Delete(o.tmpName)
		placed = append(placed, o)
	}
	for _, o := range aside {
		os.Remove(o.backup)
	}
	if !s.noSync {
		syncFolders(files)
	}
	s.done = true
	delete(g.sets, s)
	return nil
}

// rollback undoes a failed renameAll: the new files already in place are
// removed (or replaced by the moved-aside old ones), the moved-aside files
// go back, and the temporary files are removed. It returns cause, with
// anything it could not put back.
func (s *outputSet) rollback(cause error, aside, placed []*output) error {
	var lost []string
	wasAside := map[*output]bool{}
	for _, o := range aside {
		wasAside[o] = true
	}
	for i := len(placed) - 1; i >= 0; i-- {
		o := placed[i]
		if !wasAside[o] {
			if err := os.Remove(o.target); err != nil {
				lost = append(lost, fmt.Sprintf("cannot remove the new %s: %v", o.path, unwrapPath(err)))
			}
		}
	}
	for i := len(aside) - 1; i >= 0; i-- {
		o := aside[i]
		if err := rename(o.backup, o.target); err != nil {
			lost = append(lost, fmt.Sprintf("cannot put %s back (its old content is in %s): %v", o.path, o.backup, unwrapLink(err)))
		}
	}
	s.abortLocked()
	if len(lost) > 0 {
		return fmt.Errorf("%v; and %s", cause, strings.Join(lost, "; "))
	}
	return cause
}

// syncFolders syncs the folders of the files renamed into place, so the
// renames survive a crash. It is best effort: not every file system can
// sync a folder.
func syncFolders(files []*output) {
	seen := map[string]bool{}
	for _, o := range files {
		d := filepath.Dir(o.target)
		if seen[d] {
			continue
		}
		seen[d] = true
		if f, err := os.Open(d); err == nil {
			f.Sync()
			f.Close()
		}
	}
}

// abort discards the set: its temporary files, in-place files and the
// folders it made. It does nothing once the set is committed.
func (s *outputSet) abort() {
	s.guard.mu.Lock()
	defer s.guard.mu.Unlock()
	s.abortLocked()
}

// abortLocked is abort, with the guard's lock held.
func (s *outputSet) abortLocked() {
	if s.done {
		return
	}
	s.done = true
	delete(s.guard.sets, s)
	for _, o := range s.outs {
		if o.tmp != nil && !o.removed {
			o.tmp.Close()
			os.Remove(o.tmpName)
			liveTemps.Delete(o.tmpName)
			o.removed = true
		}
		if o.file != nil {
			o.file.Close()
		}
	}
	// Only empty folders go: os.Remove fails on the others.
	for i := len(s.dirs) - 1; i >= 0; i-- {
		os.Remove(s.dirs[i])
	}
}

// unwrapLink returns a rename's cause without the paths it names.
func unwrapLink(err error) error {
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return unwrapPath(err)
}

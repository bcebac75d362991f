// Package runner is the pipeline behind `trnsim run` and `trnsim
// validate`: resolved config -> lowering -> simulation -> report, with the
// requested outputs checked before it starts and written only when it
// succeeds, all together.
package runner

import (
	"errors"
	"fmt"
	"github.com/trnsim/trnsim/gpu"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/isa/asm"
	"github.com/trnsim/trnsim/report"
	"github.com/trnsim/trnsim/workloads"
	"github.com/trnsim/trnsim/workloads/sched"
	"github.com/trnsim/trnsim/workloads/tile"
)

// Version is trnsim's version, reported in results.
const Version = "0.1.0"

// Options select a run's outputs.
type Options struct {
	// JSON, CSV, Trace and DumpAsm are output paths ("" for none); they
	// override the config's outputs section. JSON and CSV may be "-",
	// standard output.
	JSON, CSV, Trace, DumpAsm string
	// TraceWindow, if set, keeps only the trace events that overlap it;
	// TraceLimit, if > 0, only the first TraceLimit events (see
	// report.TraceFilter).
	TraceWindow *report.TraceWindow
	TraceLimit  int64
	NoRaceCheck bool
	// Progress, if set, receives a progress line about every two seconds
	// of host time.
	Progress io.Writer
	// Warnings, if set, receives warnings and notes, one line each: a trace
	// that will be large (before the simulation starts), files left by a
	// killed run.
	Warnings io.Writer
	// Stdout receives the outputs named "-" (nil: os.Stdout).
	Stdout io.Writer
	// Guard, if set, lets a signal handler discard the run's outputs.
	Guard *Guard
	// NoSync renames the outputs into place without syncing them to disk
	// first: for scratch files another process reads at once (a sweep's
	// points), where a sync is time lost and buys nothing.
	NoSync bool
	// BeforeSimulate, if set, is called once the workload is lowered,
	// just before the simulation starts; an error it returns ends the run
	// with no outputs. A sweep's next point waits there for its turn
	// (trnsim run --start-on-stdin), its start-up done while the point
	// before it runs.
	BeforeSimulate func() error
	// Timeline, if set, records the engine timeline's window for the
	// figures (report.Timeline): TimelineWindow (nil: from the start until
	// the recorder is half full) and at most TimelineCap intervals (0:
	// report.DefaultTimelineCap). Runs without it attach no recorder.
	Timeline       bool
	TimelineWindow *report.TraceWindow
	TimelineCap    int
}

// Outcome is what a run produced.
type Outcome struct {
	Report *report.Report
	Info   *workloads.Info
	Result *chip.Result
	// Files are the files written (not standard output), in the order
	// asm, trace, JSON, CSV.
	Files []Written
	// UsedStdout is set when an output went to standard output, so the
	// summary belongs elsewhere.
	UsedStdout bool
	// TraceKept and TraceDropped count the trace events written and those
	// a window or limit left out.
	TraceKept, TraceDropped int64
}

// Test seams: beforeLower, if set, is called once the outputs are prepared,
// just before the workload is lowered; beforeSimulate just before the
// simulation starts, and an error it returns ends the run.
var (
	beforeLower    func()
	beforeSimulate func() error
)

// Run lowers, simulates and reports cfg's workload. Every output is checked
// and created before the workload is lowered, and all of them are put in
// place together only when the run succeeds (see outputs.go).
func Run(cfg *configs.RunConfig, opts Options) (*Outcome, error) {
	outs, err := planOutputs(cfg, opts)
	if err != nil {
		return nil, err
	}
	if m := cfg.Workload.Model; m != nil {
		for _, name := range m.GPUs {
			if _, err := gpu.Lookup(name); err != nil {
				return nil, cfg.FieldError("workload.model.gpus", "%v", err)
			}
		}
	}
	windowed := (opts.TraceWindow != nil && !opts.TraceWindow.All()) || opts.TraceLimit > 0
	if opts.TraceLimit < 0 {
		return nil, fmt.Errorf("--trace-limit: must be 0 (no limit) or more, got %d", opts.TraceLimit)
	}
	guard := opts.Guard
	if guard == nil {
		guard = &Guard{}
	}
	stdout := opts.Stdout
	if stdout == nil {
		stdout = os.Stdout
	}
	set := &outputSet{guard: guard, outs: outs, stdout: stdout, noSync: opts.NoSync}
	if windowed && set.get(roleTrace) == nil {
		return nil, fmt.Errorf("--trace-window and --trace-limit need a trace: give --trace FILE (or outputs.trace)")
	}
	warn := func(line string) {
		if opts.Warnings != nil {
			fmt.Fprintf(opts.Warnings, "trnsim: %s\n", line)
		}
	}
	notes, err := set.prepare()
	if err != nil {
		return nil, err
	}
	defer set.abort() // does nothing once the outputs are committed
	// fail returns err, or ErrStopped when a Guard discarded the outputs
	// (which makes writes fail).
	fail := func(err error) (*Outcome, error) {
		if set.stopped() {
			return nil, ErrStopped
		}
		return nil, err
	}
	for _, n := range notes {
		warn("note: " + n)
	}

	if beforeLower != nil {
		beforeLower()
	}
	prog, info, err := workloads.Lower(cfg)
	if err != nil {
		return fail(err)
	}
	// The GPU baselines' plans (tp that divides, weights that fit)
	// before the simulation, not after it.
	if err := report.CheckGPUPlans(cfg, info); err != nil {
		return fail(err)
	}
	if cfg.Workload.Kind == "assembly" {
		// What check finds, run finds first, located in the file.
		if err := validateAssembly(cfg, prog); err != nil {
			return fail(err)
		}
	}
	if o := set.get(roleAsm); o != nil {
		if info.Launches > 1 {
			return fail(fmt.Errorf("%s: the run is %d programs, one per decode step (--exact), and one file holds one program: leave out --exact (the mean step's program) or set workload.model.tokens: 1", o.label, info.Launches))
		}
		if err := asm.Print(o.w, prog); err != nil {
			return fail(fmt.Errorf("%s: writing %s: %w", o.label, o.path, err))
		}
	}
	chipOpts := chip.Options{NoRaceCheck: opts.NoRaceCheck}
	if colls := collectiveOps(info); len(colls) > 0 {
		chipOpts.CollectiveOps = map[int32]bool{}
		for id := range colls {
			chipOpts.CollectiveOps[id] = true
		}
	}
	var tw *report.TraceWriter
	var filter *report.TraceFilter
	trace := set.get(roleTrace)
	if trace != nil {
		tw = report.NewTraceWriter(trace.w, prog)
		if colls := collectiveOps(info); len(colls) > 0 {
			tw.SetCollectives(colls)
		}
		chipOpts.Tracer = tw
		if windowed {
			filter = &report.TraceFilter{Next: tw, Window: report.TraceWindow{To: clock.Never}, Limit: opts.TraceLimit}
			if opts.TraceWindow != nil {
				filter.Window = *opts.TraceWindow
				tw.Note("window", filter.Window.String())
			}
			if opts.TraceLimit > 0 {
				tw.Note("limit", strconv.FormatInt(opts.TraceLimit, 10))
			}
			chipOpts.Tracer = filter
		} else if w := traceWarning(trace.label, countInstructions(prog)*int64(max(info.Launches, 1))); w != "" {
			warn(w)
		}
	}
	var timeline *report.TimelineRecorder
	if opts.Timeline {
		w := report.TraceWindow{To: clock.Never}
		if opts.TimelineWindow != nil {
			w = *opts.TimelineWindow
		}
		timeline = report.NewTimelineRecorder(w, opts.TimelineCap, info.Ops)
		if chipOpts.Tracer != nil {
			chipOpts.Tracer = report.TeeTracer{chipOpts.Tracer, timeline}
		} else {
			chipOpts.Tracer = timeline
		}
	}
	// launch is the launch running (chip.Launches.OnLaunch) and launchAt
	// when it started.
	launch, launchAt := 0, time.Now()
	if opts.Progress != nil {
		start := time.Now()
		last := start
		total := knownInstructions(prog)
		chipOpts.ProgressEvery = 1 << 16
		chipOpts.Progress = func(n int64, now clock.Time) {
			if t := time.Now(); t.Sub(last) >= 2*time.Second {
				last = t
				if info.Launches > 1 {
					fmt.Fprint(opts.Progress, launchProgressLine(n, now, t.Sub(start), launchAt.Sub(start), launch+1, info.Launches))
					return
				}
				fmt.Fprint(opts.Progress, progressLine(n, total, now, t.Sub(start)))
			}
		}
	}
	if beforeSimulate != nil {
		if err := beforeSimulate(); err != nil {
			return fail(err)
		}
	}
	if opts.BeforeSimulate != nil {
		if err := opts.BeforeSimulate(); err != nil {
			return fail(err)
		}
	}
	launches := chip.Launches{N: max(info.Launches, 1), First: prog, Next: info.Launch,
		OnLaunch: func(i int, p *isa.Program) {
			launch, launchAt = i, time.Now()
			if tw != nil {
				tw.SetProgram(p)
			}
		}}
	res, err := chip.RunLaunches(cfg, launches, chipOpts)
	if err != nil {
		// An op of a kernel file that the scheduler rejects while making
		// the streams is reported where it is written, as check reports
		// it, not behind the stream that asked for it.
		return fail(streamError(cfg, err))
	}
	if res.Instructions == 0 {
		// Nothing ran: a report of zeros would read as a result.
		return fail(noInstructions(cfg, info.Name))
	}
	rep, err := report.Build(cfg, info, res, Version)
	if err != nil {
		return nil, err
	}
	if timeline != nil {
		rep.Timeline = timeline.Report(res.SimTime)
	}
	out := &Outcome{Report: rep, Info: info, Result: res, UsedStdout: set.usesStdout()}
	if tw != nil {
		if filter != nil {
			out.TraceKept, out.TraceDropped = filter.Counts()
			tw.Note("events_left_out", strconv.FormatInt(out.TraceDropped, 10))
			trace.note = fmt.Sprintf("%d events kept, %d left out by --trace-window/--trace-limit", out.TraceKept, out.TraceDropped)
		}
		if err := tw.Close(); err != nil {
			return fail(fmt.Errorf("%s: writing %s: %w", trace.label, trace.path, err))
		}
	}
	if o := set.get(roleJSON); o != nil {
		if err := rep.WriteJSON(o.w); err != nil {
			return fail(fmt.Errorf("%s: writing %s: %w", o.label, o.path, err))
		}
	}
	if o := set.get(roleCSV); o != nil {
		fmt.Fprintln(o.w, report.CSVHeader())
		fmt.Fprintln(o.w, rep.CSVRow())
	}
	// Everything succeeded: put the outputs in place.
	if out.Files, err = set.commit(); err != nil {
		return fail(err)
	}
	return out, nil
}

// noInstructions is the error for a workload that lowered to no
// instructions (a tile kernel whose ops never execute, such as one whose
// only loop runs zero times).
func noInstructions(cfg *configs.RunConfig, name string) error {
	if w := cfg.Workload.Tile; cfg.Workload.Kind == "tile" && w != nil {
		src := w.File
		if src == "" {
			src = "workload.tile.source"
		}
		return fmt.Errorf("%s: kernel %s has no instructions to run: none of its ops executes", src, name)
	}
	return fmt.Errorf("the %s workload %s has no instructions to run", cfg.Workload.Kind, name)
}

func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// ConfigForAssembly builds a run config for a bare assembly file: the
// hardware is preset (or the file's .target, or trn2), plus --set overrides.
func ConfigForAssembly(path, preset string, sets []string) (*configs.RunConfig, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s: is a folder, not an assembly file", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("%s: no such file", path)
		}
		return nil, fmt.Errorf("%s: cannot read: %v", path, unwrapPath(err))
	}
	// The preset comes from --preset, else the file's .target, else trn2;
	// an unknown name is reported where the user wrote it.
	if preset != "" && !configs.IsPreset(preset) {
		return nil, fmt.Errorf("--preset %s: unknown preset %q (presets: %s)", preset, preset, strings.Join(configs.PresetNames(), ", "))
	}
	if preset == "" {
		target, line, col := asm.Directive(string(data), ".target")
		if target != "" && !configs.IsPreset(target) {
			return nil, fmt.Errorf("%s:%d:%d: .target %s: unknown preset %q (presets: %s)", path, line, col, target, target, strings.Join(configs.PresetNames(), ", "))
		}
		preset = target
	}
	if preset == "" {
		preset = "trn2"
	}
	// A run config written here, not by the user: its errors name the
	// --set or the field, never a line (which would point into the
	// assembly file). The file is named relative to the config, which is
	// named path, so that errors name it as the user did.
	yaml := fmt.Sprintf("hardware:\n  preset: %q\nworkload:\n  kind: assembly\n  assembly:\n    file: %q\n", preset, filepath.Base(path))
	cfg, err := configs.LoadBytes([]byte(yaml), path, configs.LoadOptions{Sets: sets, Generated: "implied by running an assembly file"})
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// ConfigForTile builds a run config for a bare tile-IR kernel file: the
// hardware is preset (or trn2), plus --set overrides.
func ConfigForTile(path, preset string, sets []string) (*configs.RunConfig, error) {
	if fi, err := os.Stat(path); err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("%s: no such file", path)
		}
		return nil, fmt.Errorf("%s: cannot read: %v", path, unwrapPath(err))
	} else if fi.IsDir() {
		return nil, fmt.Errorf("%s: is a folder, not a tile kernel", path)
	}
	if preset != "" && !configs.IsPreset(preset) {
		return nil, fmt.Errorf("--preset %s: unknown preset %q (presets: %s)", preset, preset, strings.Join(configs.PresetNames(), ", "))
	}
	if preset == "" {
		preset = "trn2"
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	yaml := fmt.Sprintf("hardware:\n  preset: %q\nworkload:\n  kind: tile\n  tile:\n    file: %q\n", preset, abs)
	cfg, err := configs.LoadBytes([]byte(yaml), path, configs.LoadOptions{Sets: sets, Generated: "implied by running a tile kernel"})
	if err != nil {
		return nil, err
	}
	// The kernel's messages name the file as typed, as the config's do
	// (the working directory does not change during a run).
	if w := cfg.Workload.Tile; w != nil && w.File == abs {
		w.File = path
	}
	return cfg, nil
}

// CheckTile schedules a tile-IR workload without simulating it — every
// instruction made and checked against the hardware's limits — and
// returns the kernel's canonical text with a summary of the schedule.
func CheckTile(cfg *configs.RunConfig) (string, error) {
	prog, _, err := workloads.Lower(cfg)
	if err != nil {
		return "", err
	}
	w := cfg.Workload.Tile
	src := w.Source
	if w.File != "" {
		data, err := os.ReadFile(w.File)
		if err != nil {
			return "", fmt.Errorf("%s: cannot read: %v", w.File, err)
		}
		src = string(data)
	}
	k, err := tile.Parse(src, w.File)
	if err != nil {
		return "", err
	}
	summary, err := scheduleSummary(cfg, prog, k.Name)
	if err != nil {
		return "", streamError(cfg, err)
	}
	return tile.String(k) + summary, nil
}

// scheduleSummary generates every stream of a scheduled program and
// describes it: each core's instructions per engine (a DMA counted on the
// engine that triggers it), then the buffers. A program without
// instructions is an error, as in a run.
func scheduleSummary(cfg *configs.RunConfig, prog *isa.Program, name string) (string, error) {
	counts, err := countStreams(prog)
	if err != nil {
		return "", err
	}
	perCore, total := engineCounts(prog, counts)
	if total == 0 {
		return "", noInstructions(cfg, name)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "# scheduled for %s: %s (%d instructions)\n", cfg.Hardware.Name, perCore, total)
	for _, b := range prog.Buffers {
		fmt.Fprintf(&sb, "#   %s\n", asm.FormatBuffer(b))
	}
	return sb.String(), nil
}

// engineCounts says, core by core in canonical order, how many
// instructions each engine's stream has: "core 0: tensor 24 sync 6; core
// 1: sync 6" ("chip 1 core 0: ..." on a program of several chips). Streams
// and cores without instructions are left out.
func engineCounts(prog *isa.Program, counts []int64) (string, int64) {
	idx := make([]int, len(prog.Streams))
	chips := map[int32]bool{}
	for i := range idx {
		idx[i] = i
		chips[prog.Streams[i].Key.Chip] = true
	}
	sort.SliceStable(idx, func(a, b int) bool { return prog.Streams[idx[a]].Key.Less(prog.Streams[idx[b]].Key) })
	var cores []string
	var cur strings.Builder
	last := isa.StreamKey{Chip: -1}
	total := int64(0)
	for _, i := range idx {
		key := prog.Streams[i].Key
		if counts[i] == 0 {
			continue
		}
		if key.Chip != last.Chip || key.Core != last.Core {
			if cur.Len() > 0 {
				cores = append(cores, cur.String())
				cur.Reset()
			}
			if len(chips) > 1 {
				fmt.Fprintf(&cur, "chip %d ", key.Chip)
			}
			fmt.Fprintf(&cur, "core %d:", key.Core)
			last = key
		}
		fmt.Fprintf(&cur, " %s %d", key.Engine, counts[i])
		total += counts[i]
	}
	if cur.Len() > 0 {
		cores = append(cores, cur.String())
	}
	return strings.Join(cores, "; "), total
}

// countStreams generates every stream (without simulating) and counts its
// instructions; the first error any stream reports is returned.
func countStreams(prog *isa.Program) ([]int64, error) {
	streams := prog.Open()
	counts := make([]int64, len(streams))
	done := make([]bool, len(streams))
	for left := len(streams); left > 0; {
		for i, st := range streams {
			if done[i] {
				continue
			}
			in, err := st.Next()
			if err != nil {
				return nil, err
			}
			if in == nil {
				done[i] = true
				left--
				continue
			}
			counts[i]++
		}
	}
	return counts, nil
}

// CheckLowering lowers a workload the way run does — the plan and the
// placement of every tile — without simulating, so a working set that does
// not fit is found by check as by run. It returns the lowering's choices
// and, for a tile kernel, whose lowering is its schedule, the schedule's
// summary as CheckTile gives it (every instruction generated and checked).
func CheckLowering(cfg *configs.RunConfig) (*workloads.Info, string, error) {
	if cfg.Workload.Kind != "tile" {
		info, err := workloads.Check(cfg)
		return info, "", err
	}
	prog, info, err := workloads.Lower(cfg)
	if err != nil {
		return info, "", err
	}
	summary, err := scheduleSummary(cfg, prog, info.Name)
	if err != nil {
		return nil, "", streamError(cfg, err)
	}
	return info, summary, nil
}

// targetOf returns the name after a .target directive, if any, and its
// line.
func targetOf(src string) (string, int) {
	for i, line := range strings.Split(src, "\n") {
		f := strings.Fields(strings.SplitN(line, ";", 2)[0])
		if len(f) >= 2 && f[0] == ".target" {
			return f[1], i + 1
		}
	}
	return "", 0
}

// streamError reports an error from making a kernel's streams where the
// op is written, when it is located, not behind the stream that made it.
func streamError(cfg *configs.RunConfig, err error) error {
	var oe *sched.OpError
	if errors.As(err, &oe) && oe.File != "" && oe.Pos != "" {
		return workloads.InlineError(cfg, oe)
	}
	return err
}

// CheckAssembly validates an assembly workload (from a file or inline) —
// every buffer and instruction against the hardware's limits — and returns
// the canonical text.
func CheckAssembly(cfg *configs.RunConfig) (string, error) {
	prog, _, err := workloads.Lower(cfg)
	if err != nil {
		return "", err
	}
	if err := validateAssembly(cfg, prog); err != nil {
		return "", err
	}
	return asm.String(prog)
}

// validateAssembly checks an assembly program's buffers and instructions
// against the hardware's limits, as the simulator would, and locates the
// first error as FILE:LINE:COL at the token it is about.
func validateAssembly(cfg *configs.RunConfig, prog *isa.Program) error {
	lim := cfg.Hardware.Limits()
	for _, b := range prog.Buffers {
		if err := lim.CheckBuffer(b); err != nil {
			return asmError(cfg, b.Line, "", err)
		}
	}
	for _, src := range prog.Streams {
		st := src.Open()
		for {
			in, err := st.Next()
			if err != nil {
				return err
			}
			if in == nil {
				break
			}
			if err := lim.Check(in); err != nil {
				return asmError(cfg, int(in.Line), asm.FormatInstruction(prog, in)+": ", err)
			}
		}
	}
	return nil
}

// asmError names the assembly source and locates err in line of it:
// "kernel.asm:12:30: " (what, then err). The source is read again: the
// program keeps no columns.
func asmError(cfg *configs.RunConfig, line int, what string, err error) error {
	a := cfg.Workload.Assembly
	name, src := a.File, a.Source
	if name == "" {
		name = "workload.assembly.source"
	} else if data, rerr := os.ReadFile(name); rerr == nil {
		src = string(data)
	}
	if line <= 0 {
		return fmt.Errorf("%s: %s%w", name, what, err)
	}
	text := ""
	if lines := strings.Split(src, "\n"); line <= len(lines) {
		text = lines[line-1]
	}
	return workloads.InlineError(cfg, fmt.Errorf("%s:%d:%d: %s%w", name, line, asm.ErrorColumn(text, err), what, err))
}

// Describe is chip.Describe, re-exported for the CLI.
func Describe(prog *isa.Program, in *isa.Instruction) string { return chip.Describe(prog, in) }

// collectiveOps names the workload's collective ops by op id, for the
// trace's collective tracks.
func collectiveOps(info *workloads.Info) map[int32]string {
	out := map[int32]string{}
	if info == nil {
		return out
	}
	for _, o := range info.Ops {
		switch o.Kind {
		case "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send", "recv", "broadcast":
			out[o.ID] = o.Name
		}
	}
	return out
}

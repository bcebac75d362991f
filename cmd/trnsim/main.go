// Command trnsim is the command-line front end of the trnsim Trainium
// simulator: flags in, library calls, exit codes out.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/report"
	"github.com/trnsim/trnsim/runner"
	"github.com/trnsim/trnsim/sweep"
	"github.com/trnsim/trnsim/validate"
)

func main() {
	// A simulator's heap is short-lived garbage: trade memory for speed.
	// (A much larger heap was measured slower: fewer collections, but the
	// allocations stream through memory that is no longer in cache.) The
	// GOGC environment variable, where set, is Go's as ever.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	// With a large live heap (an exact run of a big model holds gigabytes)
	// that trade would ask for five times the heap: a soft limit at half
	// the machine's memory makes the collector work harder instead of the
	// run being killed. GOMEMLIMIT, where set, is Go's as ever.
	if os.Getenv("GOMEMLIMIT") == "" {
		if b := memoryBytes(); b > 0 {
			debug.SetMemoryLimit(b / 2)
		}
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// exitError carries a specific exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

// run executes the CLI and returns the exit code; it never panics on user
// input.
func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "trnsim: internal error: %v (please report it with the input that caused it)\n", r)
			code = 3
		}
	}()
	out := &checkedWriter{w: stdout}
	root := newRoot(out, stderr)
	root.SetArgs(args)
	if cmd, err := root.ExecuteC(); err != nil {
		msg := err.Error()
		if strings.Contains(msg, " arg(s)") {
			// cobra's count of arguments: say which command and how it
			// is called.
			msg = fmt.Sprintf("%s: %s (usage: %s; see %s --help)", cmd.Name(), msg, cmd.UseLine(), cmd.CommandPath())
		}
		fmt.Fprintf(stderr, "trnsim: %s\n", msg)
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return 1
	}
	if out.err != nil {
		fmt.Fprintf(stderr, "trnsim: writing standard output: %v\n", unwrapPath(out.err))
		return 1
	}
	return 0
}

// unwrapPath returns a file error's cause without the file's name.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "trnsim",
		Short: "trnsim: a cycle-level AWS Trainium simulator",
		Long: `trnsim simulates AWS Trainium NeuronCores event by event: TensorE, VectorE,
ScalarE, GpSimd, the Sync engine, semaphores, SBUF/PSUM, DMA queues and HBM.
Run "trnsim run" for the embedded default (a BF16 GEMM on trn2).`,
		Version:       runner.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newRunCmd(stdout, stderr), newCheckCmd(stdout), newPresetsCmd(stdout), newValidateCmd(stdout, stderr), newSweepCmd(stdout, stderr), newMergeCmd(stdout), newPlotCmd(stdout), newModelsCmd(stdout))
	return root
}

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	var opts runner.Options
	var sets []string
	var preset, window string
	var quiet, sweepBase, exact, startOnStdin bool
	var gpuList, gpuOps string
	var plotDir, plotFormat, plotWindow string
	var cpuProfile, memProfile string
	cmd := &cobra.Command{
		Use:   "run [config.yaml | kernel.tile | kernel.asm]",
		Short: "Simulate a run config, a tile-IR kernel or an assembly kernel (no argument: the embedded default)",
		Long: `Simulate a run config, a tile-IR kernel (.tile) or an assembly kernel (.asm,
.s) (no argument: the embedded default) and print a summary on standard
output. A kernel file runs on the --preset given, else (assembly) the
preset its .target names, else trn2.

Every output path is checked before the simulation starts, and the outputs
are put in place together only when the run succeeds: an existing file is
replaced, a device or FIFO (such as /dev/null) is written in place, and
--json - or --csv - writes to standard output (the summary then goes to
standard error). SIGINT (Ctrl-C) or SIGTERM removes the temporary files and
exits with 130 or 143.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if window != "" {
				w, err := report.ParseTraceWindow(window)
				if err != nil {
					return fmt.Errorf("--trace-window: %v", err)
				}
				opts.TraceWindow = &w
			}
			var cfg *configs.RunConfig
			var err error
			if sweepBase {
				// A sweep's point whose base: is inline in the sweep file.
				if len(args) != 1 {
					return fmt.Errorf("--sweep-base: give the sweep file")
				}
				cfg, err = sweep.LoadInlineBase(args[0], sets)
			} else {
				cfg, err = loadInput(args, preset, sets)
			}
			if err != nil {
				return err
			}
			if exact {
				if cfg.Workload.Kind != "model" {
					return fmt.Errorf("--exact: for model workloads (this one is %s)", cfg.Workload.Kind)
				}
				cfg.Workload.Model.Exact = true
			}
			if cmd.Flags().Changed("gpu") {
				if err := applyGPUFlag(cfg, gpuList); err != nil {
					return err
				}
			}
			if err := report.CheckRun(cfg); err != nil {
				return err
			}
			if gpuOps != "" {
				return writeGPUOps(cfg, gpuOps, stdout, stderr)
			}
			formats, err := runPlotOptions(&opts, plotDir, plotFormat, plotWindow)
			if err != nil {
				return err
			}
			if !quiet {
				opts.Progress = stderr
			}
			opts.Warnings = stderr
			opts.Stdout = stdout
			opts.Guard = &runner.Guard{}
			if startOnStdin {
				in := cmd.InOrStdin()
				opts.BeforeSimulate = func() error {
					var b [1]byte
					if n, _ := io.ReadFull(in, b[:]); n != 1 {
						return errNotStarted
					}
					return nil
				}
			}
			release := catchSignals(opts.Guard, stderr)
			defer release()
			stopProfiles, err := startProfiles(cpuProfile, memProfile)
			if err != nil {
				return err
			}
			out, err := runner.Run(cfg, opts)
			if perr := stopProfiles(); err == nil && perr != nil {
				return perr
			}
			if err != nil {
				return err
			}
			summary := stdout
			if out.UsedStdout {
				summary = stderr
			}
			out.Report.WriteSummary(summary)
			if !quiet {
				for _, f := range out.Files {
					fmt.Fprintf(stderr, "trnsim: wrote %s\n", f)
				}
			}
			if plotDir != "" {
				files, err := out.Report.WriteFigures(plotDir, formats...)
				if !quiet {
					for _, f := range files {
						fmt.Fprintf(stderr, "trnsim: wrote %s\n", f)
					}
				}
				if err != nil {
					return fmt.Errorf("--plots: %w", err)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.JSON, "json", "", "write results as JSON to `FILE` (- for standard output)")
	f.StringVar(&opts.CSV, "csv", "", "write a CSV row of totals to `FILE` (- for standard output)")
	f.StringVar(&opts.Trace, "trace", "", "write a Chrome trace-event timeline (Perfetto) to `FILE`")
	f.StringVar(&window, "trace-window", "", "trace only the events that overlap simulated time `START:END`, such as 0:50us or 1ms:2ms (either may be left out)")
	f.Int64Var(&opts.TraceLimit, "trace-limit", 0, "trace only the first `N` events (0: all)")
	f.StringVar(&opts.DumpAsm, "dump-asm", "", "write the lowered program as canonical assembly to `FILE`")
	f.StringArrayVar(&sets, "set", nil, "override a config field: `dotted.path=value` (repeatable)")
	f.StringVar(&preset, "preset", "", "hardware preset for a kernel file (default: an assembly file's .target, else trn2)")
	f.BoolVar(&opts.NoRaceCheck, "no-race-check", false, "turn the data-race detector off (faster)")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress lines and no list of the files written on stderr (warnings and errors still print)")
	f.StringVar(&plotDir, "plots", "", "write the run's figures into `DIR`: roofline(s), stall breakdown, engine timeline; for models also throughput, cost and the longest ops against the GPUs (docs/plots.md)")
	f.StringVar(&plotFormat, "plot-format", "png,svg", "with --plots: the figures' `FORMATS`, png, svg or png,svg")
	f.StringVar(&plotWindow, "plot-window", "", "with --plots: the engine timeline's window of simulated time `START:END`, such as 0:50us (default: from the start, as many intervals as the recorder keeps)")
	f.StringVar(&gpuList, "gpu", "", "models: the GPU baselines, comma-separated presets (`h100,b200`; none: no comparison); overrides workload.model.gpus")
	f.StringVar(&gpuOps, "gpu-ops", "", "models: write the GPU kernel shapes for scripts/gpu-calibrate.py to `FILE` (- for standard output) and stop: nothing is simulated")
	f.BoolVar(&exact, "exact", false, "models: simulate every layer (by default six are, and the rest take the mean time of the third to the fifth), every copy of parallel.replicas (by default one, where the copies share no hardware), every rank of a copy (by default a unit, an HBM stack's cores or a chip, where the hardware and the collectives are symmetric) and every decode step, each a launch at its cache length (by default the step at the mean cache length)")
	f.BoolVar(&sweepBase, "sweep-base", false, "the argument is a sweep file: run its inline base: (how trnsim sweep runs a point)")
	_ = f.MarkHidden("sweep-base")
	f.BoolVar(&opts.NoSync, "no-sync", false, "rename the outputs into place without syncing them to disk (scratch files read at once: how trnsim sweep runs a point)")
	_ = f.MarkHidden("no-sync")
	f.BoolVar(&startOnStdin, "start-on-stdin", false, "lower the workload, then wait for a byte on standard input before simulating; end with no outputs if it closes first (how trnsim sweep starts its next point while the last runs)")
	_ = f.MarkHidden("start-on-stdin")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile of the run to `FILE` (go tool pprof; for the simulator's developers)")
	f.StringVar(&memProfile, "memprofile", "", "write a Go heap profile to `FILE` as the run ends, after a collection (go tool pprof: inuse_space is what stays live, alloc_space what the run allocated)")
	_ = f.MarkHidden("cpuprofile")
	_ = f.MarkHidden("memprofile")
	return cmd
}

// errNotStarted ends a run started with --start-on-stdin whose standard
// input closed before the byte that starts it: the sweep that started it
// stopped.
var errNotStarted = errors.New("--start-on-stdin: standard input closed before the start: the sweep that started this point stopped")

// loadInput resolves the run config from the argument: none (embedded
// default), a YAML run config, or an assembly file.
func loadInput(args []string, preset string, sets []string) (*configs.RunConfig, error) {
	if preset != "" && !configs.IsPreset(preset) {
		return nil, fmt.Errorf("--preset %s: unknown preset %q (presets: %s)", preset, preset, strings.Join(configs.PresetNames(), ", "))
	}
	if len(args) == 0 {
		if preset != "" {
			sets = append([]string{"hardware.preset=" + preset}, sets...)
		}
		return configs.LoadDefault(configs.LoadOptions{Sets: sets})
	}
	path := args[0]
	if strings.HasSuffix(path, ".asm") || strings.HasSuffix(path, ".s") {
		return runner.ConfigForAssembly(path, preset, sets)
	}
	if strings.HasSuffix(path, ".tile") {
		return runner.ConfigForTile(path, preset, sets)
	}
	if preset != "" {
		sets = append([]string{"hardware.preset=" + preset}, sets...)
	}
	return configs.Load(path, configs.LoadOptions{Sets: sets})
}

func newCheckCmd(stdout io.Writer) *cobra.Command {
	var sets []string
	var preset string
	cmd := &cobra.Command{
		Use:   "check [FILE]",
		Short: "Validate a run config, an assembly file or a tile kernel and print what it resolves to (no argument: the embedded default)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadInput(args, preset, sets)
			if err != nil {
				return err
			}
			if err := report.CheckRun(cfg); err != nil {
				return err
			}
			file := ""
			if len(args) == 1 {
				file = args[0]
			}
			if cfg.Workload.Kind == "assembly" && (strings.HasSuffix(file, ".asm") || strings.HasSuffix(file, ".s")) {
				text, err := runner.CheckAssembly(cfg)
				if err != nil {
					return err
				}
				fmt.Fprintf(stdout, "; %s: valid for %s\n", file, cfg.Hardware.Name)
				fmt.Fprint(stdout, text)
				return nil
			}
			if cfg.Workload.Kind == "tile" && strings.HasSuffix(file, ".tile") {
				text, err := runner.CheckTile(cfg)
				if err != nil {
					return err
				}
				fmt.Fprintf(stdout, "# %s: valid for %s\n", file, cfg.Hardware.Name)
				fmt.Fprint(stdout, text)
				return nil
			}
			if cfg.Workload.Kind == "assembly" {
				if _, err := runner.CheckAssembly(cfg); err != nil {
					return err
				}
				printResolved(stdout, cfg)
				fmt.Fprintf(stdout, "\n# the assembly workload is valid for %s\n", cfg.Hardware.Name)
				return nil
			}
			// The same lowering run does (the plan and the placement), so
			// what does not fit fails here too.
			info, schedule, err := runner.CheckLowering(cfg)
			if err != nil {
				return err
			}
			printResolved(stdout, cfg)
			fmt.Fprintf(stdout, "\n# the workload lowers and fits %s", cfg.Hardware.Name)
			for i, c := range info.Choices {
				sep := " "
				if i == 0 {
					sep = ": "
				}
				fmt.Fprintf(stdout, "%s%s=%d", sep, strings.TrimPrefix(c.Path, "workload.lowering."), c.Value)
			}
			fmt.Fprintln(stdout)
			fmt.Fprint(stdout, schedule)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override a config field: `dotted.path=value` (repeatable)")
	cmd.Flags().StringVar(&preset, "preset", "", "hardware preset for a kernel file (default: an assembly file's .target, else trn2)")
	return cmd
}

// printResolved prints every resolved hardware field with its source, the
// cost table, and the workload.
func printResolved(w io.Writer, cfg *configs.RunConfig) {
	name := cfg.File
	if name == "" {
		name = configs.DefaultConfigName
	}
	fmt.Fprintf(w, "# %s: valid\n# hardware %s (preset %s), values and where they come from\n", name, cfg.Hardware.Name, cfg.Hardware.Preset)
	for _, f := range configs.Fields(cfg) {
		if !strings.HasPrefix(f.Path, "hardware.") {
			continue
		}
		src := cfg.Sources[f.Path]
		fmt.Fprintf(w, "%-58s %-14s # %s\n", f.Path, f.Value, src)
	}
	fmt.Fprintf(w, "\n# cost table %s (cycles in the engine's clock; interval / latency)\n", cfg.Hardware.CostTable)
	for _, c := range cfg.Costs.Constants {
		fmt.Fprintf(w, "%-58s %-14g # [%s] %s\n", "hardware.costs.constants."+c.Name+".value", c.Value, c.Tag, c.Source)
	}
	for _, r := range cfg.Costs.Rules {
		for _, v := range r.Variants {
			when := ""
			if len(v.When) > 0 {
				when = " when " + strings.Join(v.When, ",")
			}
			lat := v.Latency
			if lat == "" {
				lat = "I"
			}
			fmt.Fprintf(w, "hardware.costs.%s.%s.%s: %s / %s%s # [%s] %s\n", r.Engine, r.Op, v.Name, v.Interval, lat, when, v.Tag, v.Source)
		}
	}
	fmt.Fprintf(w, "\n# workload\n")
	for _, f := range configs.Fields(cfg) {
		if strings.HasPrefix(f.Path, "workload.") || strings.HasPrefix(f.Path, "parallel.") || strings.HasPrefix(f.Path, "outputs.") || strings.HasPrefix(f.Path, "cost.") {
			if f.Value == "" || f.Value == "0" {
				continue
			}
			fmt.Fprintf(w, "%-58s %s\n", f.Path, f.Value)
		}
	}
}

func newPresetsCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "presets",
		Short: "List the hardware presets and instances with their headline figures",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ps, err := configs.Presets()
			if err != nil {
				return err
			}
			sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
			fmt.Fprintf(stdout, "%-6s %-4s %-6s %-10s %-12s %-13s %-11s %-12s %s\n", "preset", "NC", "cores", "TensorE", "BF16/core", "SBUF/core", "HBM", "DMA/core", "description")
			for _, p := range ps {
				h := p.Hardware
				c := &h.Core
				fmt.Fprintf(stdout, "%-6s v%-3d %-6d %-10s %-12s %-13s %-11s %-12s %s\n", p.Name, h.Generation, h.Chip.Cores,
					fmt.Sprintf("%.1f GHz", c.Tensor.ClockGHz),
					fmt.Sprintf("%.1f TFLOPS", h.PeakFLOPSPerCore(isa.BF16)/1e12),
					fmt.Sprintf("%.0f MiB", float64(c.SBUF.Partitions*c.SBUF.PartitionKiB)/1024),
					fmt.Sprintf("%.0f GB/s", h.Chip.HBM.BandwidthGBps),
					fmt.Sprintf("%.0f GB/s", float64(c.DMA.Engines)*c.DMA.EngineBandwidthGBps),
					h.Description)
			}
			fmt.Fprintf(stdout, "\n%-17s %-6s %-6s %-14s %-10s %-15s %-9s %s\n", "instance", "chip", "chips", "cores", "topology", "link", "EFA/chip", "description")
			for _, name := range configs.InstanceNames() {
				h, _, base, err := configs.Instance(name)
				if err != nil {
					return err
				}
				topo := h.Topology.Kind
				if len(h.Topology.Dims) > 1 {
					var d []string
					for _, x := range h.Topology.Dims {
						d = append(d, fmt.Sprint(x))
					}
					topo = strings.Join(d, "x")
				} else if len(h.Topology.Dims) == 1 {
					topo = fmt.Sprintf("ring %d", h.Topology.Dims[0])
				}
				if h.Chips == 1 {
					topo = "-"
				}
				cores := fmt.Sprintf("%d", h.Chips*h.Chip.Cores)
				if h.Chip.LNC > 1 {
					cores += fmt.Sprintf(" (%d LNC%d)", h.Chips*h.LogicalCoresPerChip(), h.Chip.LNC)
				}
				link := "-"
				if h.Chips > 1 {
					link = fmt.Sprintf("%.0f GB/s", h.Chip.Links.LinkBandwidthGBps)
					if ax := h.Topology.AxisBandwidthGBps; len(ax) > 0 {
						lo, hi := ax[0], ax[0]
						for _, b := range ax {
							lo, hi = min(lo, b), max(hi, b)
						}
						link = fmt.Sprintf("%.0f-%.0f GB/s", lo, hi)
					}
					if h.Topology.Kind == "switched" {
						link = fmt.Sprintf("%.0f GB/s port", float64(h.Chip.Links.Count)*h.Chip.Links.LinkBandwidthGBps)
					}
				}
				efa := "-"
				if h.EFA.ChipBandwidthGBps > 0 {
					efa = fmt.Sprintf("%g GB/s", h.EFA.ChipBandwidthGBps)
				}
				fmt.Fprintf(stdout, "%-17s %-6s %-6d %-14s %-10s %-15s %-9s %s\n", name, base, h.Chips, cores, topo, link, efa, h.Description)
			}
			return nil
		},
	}
}

func newValidateCmd(stdout, stderr io.Writer) *cobra.Command {
	var asJSON, fast bool
	var only []string
	var plotDir, plotFormat string
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Simulate the validation cases and compare with published hardware measurements",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			formats, err := validatePlotOptions(plotDir, plotFormat)
			if err != nil {
				return err
			}
			rows, err := validate.Run(validate.Options{Fast: fast, Only: only, Progress: stderr})
			if err != nil {
				return err
			}
			if plotDir != "" {
				files, err := validate.WriteFigures(plotDir, rows, formats)
				for _, f := range files {
					fmt.Fprintf(stderr, "trnsim: wrote %s\n", f)
				}
				if err != nil {
					return fmt.Errorf("--plots: %w", err)
				}
			}
			if asJSON {
				if err := validate.WriteJSON(stdout, rows); err != nil {
					return err
				}
			} else {
				validate.WriteTable(stdout, rows)
			}
			if missed := validate.Missed(rows); len(missed) > 0 {
				return &exitError{code: 1, err: fmt.Errorf("validation: %s missed its target", strings.Join(missed, ", "))}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the rows as a JSON array")
	cmd.Flags().BoolVar(&fast, "fast", false, "only the fast cases (those CI runs)")
	cmd.Flags().StringSliceVar(&only, "only", nil, "only these case ids (comma-separated)")
	cmd.Flags().StringVar(&plotDir, "plots", "", "draw predicted against measured, a figure per quantity (validation-time, validation-tflops, ...), into `DIR`")
	cmd.Flags().StringVar(&plotFormat, "plot-format", "png,svg", "with --plots: the figures' `FORMATS`, png, svg or png,svg")
	return cmd
}

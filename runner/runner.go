// Package runner is the pipeline behind `trnsim run` and `trnsim
// validate`: resolved config -> lowering -> simulation -> report, with the
// requested outputs written only when the run succeeds.
package runner

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/clock"
	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/isa/asm"
	"github.com/trnsim/trnsim/report"
	"github.com/trnsim/trnsim/workloads"
)

// Version is trnsim's version, reported in results.
const Version = "0.1.0"

// Options select a run's outputs.
type Options struct {
	// JSON, CSV, Trace and DumpAsm are output paths ("" for none); they
	// override the config's outputs section.
	JSON, CSV, Trace, DumpAsm string
	NoRaceCheck               bool
	// Progress, if set, receives a progress line about every two seconds
	// of host time.
	Progress io.Writer
}

// Outcome is what a run produced.
type Outcome struct {
	Report *report.Report
	Info   *workloads.Info
	Result *chip.Result
}

// Run lowers, simulates and reports cfg's workload.
func Run(cfg *configs.RunConfig, opts Options) (*Outcome, error) {
	o := cfg.Outputs
	pick := func(flag, fromConfig string) string {
		if flag != "" {
			return flag
		}
		if fromConfig != "" {
			return cfg.ResolvePath(fromConfig)
		}
		return ""
	}
	jsonPath, csvPath := pick(opts.JSON, o.JSON), pick(opts.CSV, o.CSV)
	tracePath, asmPath := pick(opts.Trace, o.Trace), pick(opts.DumpAsm, o.Asm)

	prog, info, err := workloads.Lower(cfg)
	if err != nil {
		return nil, err
	}
	var files []*atomicFile
	defer func() {
		for _, f := range files {
			f.abort()
		}
	}()
	if asmPath != "" {
		f, err := createAtomic(asmPath)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		if err := asm.Print(f.w, prog); err != nil {
			return nil, fmt.Errorf("writing %s: %w", asmPath, err)
		}
	}
	chipOpts := chip.Options{NoRaceCheck: opts.NoRaceCheck}
	var tw *report.TraceWriter
	if tracePath != "" {
		f, err := createAtomic(tracePath)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		tw = report.NewTraceWriter(f.w, prog)
		chipOpts.Tracer = tw
	}
	if opts.Progress != nil {
		start := time.Now()
		last := start
		total := knownInstructions(prog)
		chipOpts.ProgressEvery = 1 << 16
		chipOpts.Progress = func(n int64, now clock.Time) {
			if t := time.Now(); t.Sub(last) >= 2*time.Second {
				last = t
				fmt.Fprint(opts.Progress, progressLine(n, total, now, t.Sub(start)))
			}
		}
	}
	res, err := chip.Run(cfg, prog, chipOpts)
	if err != nil {
		return nil, err
	}
	rep, err := report.Build(cfg, info, res, Version)
	if err != nil {
		return nil, err
	}
	if tw != nil {
		if err := tw.Close(); err != nil {
			return nil, fmt.Errorf("writing %s: %w", tracePath, err)
		}
	}
	if jsonPath != "" {
		f, err := createAtomic(jsonPath)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		if err := rep.WriteJSON(f.w); err != nil {
			return nil, fmt.Errorf("writing %s: %w", jsonPath, err)
		}
	}
	if csvPath != "" {
		f, err := createAtomic(csvPath)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		fmt.Fprintln(f.w, report.CSVHeader())
		fmt.Fprintln(f.w, rep.CSVRow())
	}
	// Everything succeeded: move the outputs into place.
	for _, f := range files {
		if err := f.commit(); err != nil {
			return nil, err
		}
	}
	files = nil
	return &Outcome{Report: rep, Info: info, Result: res}, nil
}

// atomicFile is written beside its destination and renamed into place only
// when the run succeeds, so a failed run never leaves a partial result that
// looks complete.
type atomicFile struct {
	path string
	tmp  *os.File
	w    *bufio.Writer
}

func createAtomic(path string) (*atomicFile, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot write %s: %v", path, unwrapPath(err))
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".partial-*")
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %v", path, unwrapPath(err))
	}
	// CreateTemp makes the file private; results are ordinary files.
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("cannot write %s: %v", path, unwrapPath(err))
	}
	return &atomicFile{path: path, tmp: tmp, w: bufio.NewWriterSize(tmp, 1<<20)}, nil
}

func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func (f *atomicFile) commit() error {
	if err := f.w.Flush(); err != nil {
		f.abort()
		return fmt.Errorf("writing %s: %v", f.path, err)
	}
	if err := f.tmp.Close(); err != nil {
		os.Remove(f.tmp.Name())
		return fmt.Errorf("writing %s: %v", f.path, err)
	}
	if err := os.Rename(f.tmp.Name(), f.path); err != nil {
		os.Remove(f.tmp.Name())
		return fmt.Errorf("writing %s: %v", f.path, unwrapPath(err))
	}
	return nil
}

func (f *atomicFile) abort() {
	f.tmp.Close()
	os.Remove(f.tmp.Name())
}

// ConfigForAssembly builds a run config for a bare assembly file: the
// hardware is preset (or the file's .target, or trn2), plus --set overrides.
func ConfigForAssembly(path, preset string, sets []string) (*configs.RunConfig, error) {
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
		target, line := targetOf(string(data))
		if target != "" && !configs.IsPreset(target) {
			return nil, fmt.Errorf("%s:%d: .target %s: unknown preset %q (presets: %s)", path, line, target, target, strings.Join(configs.PresetNames(), ", "))
		}
		preset = target
	}
	if preset == "" {
		preset = "trn2"
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	// A run config written here, not by the user: its errors name the
	// --set or the field, never a line (which would point into the
	// assembly file).
	yaml := fmt.Sprintf("hardware:\n  preset: %q\nworkload:\n  kind: assembly\n  assembly:\n    file: %q\n", preset, abs)
	cfg, err := configs.LoadBytes([]byte(yaml), path, configs.LoadOptions{Sets: sets, Generated: "implied by running an assembly file"})
	if err != nil {
		return nil, err
	}
	return cfg, nil
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

// CheckAssembly validates an assembly workload (from a file or inline) —
// every buffer and instruction against the hardware's limits — and returns
// the canonical text.
func CheckAssembly(cfg *configs.RunConfig) (string, error) {
	prog, _, err := workloads.Lower(cfg)
	if err != nil {
		return "", err
	}
	name := cfg.Workload.Assembly.File
	if name == "" {
		name = "workload.assembly.source"
	}
	lim := cfg.Hardware.Limits()
	for _, b := range prog.Buffers {
		if err := lim.CheckBuffer(b); err != nil {
			return "", fmt.Errorf("%s:%d: %v", name, b.Line, err)
		}
	}
	for _, src := range prog.Streams {
		st := src.Open()
		for {
			in, err := st.Next()
			if err != nil {
				return "", err
			}
			if in == nil {
				break
			}
			if err := lim.Check(in); err != nil {
				return "", fmt.Errorf("%s:%d: %s: %v", name, in.Line, asm.FormatInstruction(prog, in), err)
			}
		}
	}
	return asm.String(prog)
}

// Describe is chip.Describe, re-exported for the CLI.
func Describe(prog *isa.Program, in *isa.Instruction) string { return chip.Describe(prog, in) }

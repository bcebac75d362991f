// Package workloads turns a run config's workload into an isa.Program for
// the configured hardware. It is the config layer of the software side: it
// reads the YAML config, gives the kernels (package kernels) and the
// scheduler (package sched) a typed target and typed options, and maps
// their errors back to the fields the user wrote. Workloads are a GEMM,
// elementwise ops, a kernel in the tile IR (a .tile file), or hand-written
// assembly. Every lowering choice is a config field, so sweeps can move
// it; a field left at zero is chosen and reported.
//
// The PyTorch-style op graph grows here (sub-packages graph, zoo): each op
// lowers through a kernel and carries its op id.
package workloads

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/isa/asm"
)

// Op describes one workload op, so reports can be broken down by op id.
type Op struct {
	ID   int32
	Name string
	Kind string
	// FLOPs is the op's useful arithmetic (2*M*N*K for a matmul).
	FLOPs float64
}

// Info describes a lowered workload for reports and validation.
type Info struct {
	Name string
	Kind string
	Ops  []Op
	// FLOPs is the useful arithmetic of the whole workload.
	FLOPs float64
	// DType is the workload's input dtype (for assembly, which declares
	// its own dtypes, BF16: the peak follows each matmul's dtype and mode
	// anyway).
	DType isa.DType
	// Shape is the workload's shape as resolved, in elements: gemm m, k, n;
	// elementwise rows, cols; nil for assembly.
	Shape []Dim
	// MinHBMBytes is the least HBM traffic the workload needs (every input
	// read once, every output written once); MinHBMWriteBytes the part of
	// it that is written, when the workload says (op workloads).
	MinHBMBytes, MinHBMWriteBytes int64
	// Choices lists the lowering's parameters as resolved (for reports and
	// --dump-asm headers), in a fixed order.
	Choices []Choice
	// CoresUsed is how many NeuronCores the program runs on.
	CoresUsed int
	// Notes are other lowering choices, in words.
	Notes []string
	// Model is set for model workloads.
	Model *ModelInfo
	// Launches, when more than one, is how many programs run one after
	// another, each once the one before has finished (an exact decode's
	// steps, each a launch as on the Neuron runtime): Lower's program is
	// the first, Launch(i) makes the i-th (1 <= i < Launches) with the same
	// op ids, and the figures above are all the launches' together.
	Launches int
	Launch   func(i int) (*isa.Program, error)
}

// Dim is one named size of a workload's shape, in elements.
type Dim struct {
	Name string
	Size int64
}

// Choice is one resolved lowering parameter.
type Choice struct {
	Path  string
	Value int64
	Auto  bool
}

// Lower builds the program for cfg's workload.
func Lower(cfg *configs.RunConfig) (*isa.Program, *Info, error) {
	prog, info, err := lower(cfg)
	return prog, info, InlineError(cfg, err)
}

// Check lowers cfg's workload as Lower does and returns what Lower would
// report, without keeping a program: what trnsim check and a sweep's
// check of its points need. A GEMM's kernel is made and scheduled once
// per plan and target, shared through cfg.Memo (checkSchedule).
func Check(cfg *configs.RunConfig) (*Info, error) {
	if cfg.Workload.Kind == "gemm" {
		_, info, err := gemm(cfg, true)
		return info, InlineError(cfg, err)
	}
	_, info, err := Lower(cfg)
	return info, err
}

// InlineError relocates an error located in the text of an inline kernel
// ("workload.tile.source:2:5: ...") to where that text is in the config
// file, when it is a literal block there ("run.yaml:9:11:
// workload.tile.source: ..."); other errors are returned as they are.
func InlineError(cfg *configs.RunConfig, err error) error {
	if err == nil {
		return nil
	}
	for _, field := range []string{"workload.assembly.source", "workload.tile.source"} {
		rest, ok := strings.CutPrefix(err.Error(), field+":")
		if !ok {
			continue
		}
		parts := strings.SplitN(rest, ":", 3)
		if len(parts) < 3 {
			return err
		}
		line, lerr := strconv.Atoi(parts[0])
		col, cerr := strconv.Atoi(parts[1])
		if lerr != nil || cerr != nil {
			return err
		}
		if pos, ok := cfg.TextPos(field, line, col); ok {
			return &relocated{msg: pos + ": " + field + ":" + parts[2], err: err}
		}
		return err
	}
	return err
}

// relocated is an error with its location moved; errors.As sees the
// original.
type relocated struct {
	msg string
	err error
}

func (e *relocated) Error() string { return e.msg }
func (e *relocated) Unwrap() error { return e.err }

func lower(cfg *configs.RunConfig) (*isa.Program, *Info, error) {
	w := &cfg.Workload
	switch w.Kind {
	case "gemm":
		return lowerGEMM(cfg)
	case "elementwise":
		return lowerElementwise(cfg)
	case "assembly":
		if w.Assembly.Source != "" {
			return parseAssembly(cfg, w.Assembly.Source, "workload.assembly.source")
		}
		return LoadAssembly(cfg, w.Assembly.File)
	case "tile":
		return lowerTile(cfg)
	case "model":
		return lowerModel(cfg)
	case "op":
		return lowerOp(cfg)
	}
	return nil, nil, cfg.FieldError("workload.kind", "unsupported workload kind %q", w.Kind)
}

// LoadAssembly reads a hand-written program and checks it targets the
// configured hardware.
func LoadAssembly(cfg *configs.RunConfig, path string) (*isa.Program, *Info, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: cannot read: %v", path, err)
	}
	return parseAssembly(cfg, string(data), path)
}

func parseAssembly(cfg *configs.RunConfig, src, path string) (*isa.Program, *Info, error) {
	prog, err := asm.Parse(src, path, asm.Options{PSUMBankBytes: cfg.Hardware.Limits().PSUMBankBytes()})
	if err != nil {
		return nil, nil, err
	}
	if prog.Target != "" && prog.Target != cfg.Hardware.Name && prog.Target != cfg.Hardware.Preset {
		_, line, col := asm.Directive(src, ".target")
		return nil, nil, fmt.Errorf("%s:%d:%d: the program targets %s but the hardware is %s (change .target or hardware.preset)", path, line, col, prog.Target, cfg.Hardware.Name)
	}
	info := &Info{Name: cfg.Workload.Name, Kind: "assembly", DType: isa.BF16}
	if info.Name == "" {
		info.Name = path
	}
	cores := map[[2]int32]bool{}
	for _, s := range prog.Streams {
		cores[[2]int32{s.Key.Chip, s.Key.Core}] = true
	}
	info.CoresUsed = len(cores)
	return prog, info, nil
}

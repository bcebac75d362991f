// Package kernels holds trnsim's kernels, written in the tile IR (package
// tile): the GEMM and the elementwise ops today; the model ops, attention
// and collectives join them. A kernel reads a typed target and typed
// options (never the YAML config) and reports errors by option name
// (OptionError), which the config layer maps to the fields a user wrote;
// working sets that cannot fit are the scheduler's sched.FitError.
package kernels

import "fmt"

// OptionError is a kernel option (a lowering choice) with a bad value.
type OptionError struct {
	// Option is the option's name, as the config spells it under
	// workload.lowering ("block_n").
	Option string
	Msg    string
}

func (e *OptionError) Error() string { return e.Option + ": " + e.Msg }

func optErr(option, format string, args ...any) error {
	return &OptionError{Option: option, Msg: fmt.Sprintf(format, args...)}
}

// ShapeError is a problem size a kernel cannot run (a tensor that does not
// fit the chip's HBM).
type ShapeError struct {
	// Dim is the size named ("m", "rows").
	Dim string
	Msg string
}

func (e *ShapeError) Error() string { return e.Dim + ": " + e.Msg }

// Choice is one resolved lowering option: its name, value, and whether the
// kernel chose it.
type Choice struct {
	Name  string
	Value int64
	Auto  bool
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

func roundUp(v, m int64) int64 { return ceilDiv(v, m) * m }

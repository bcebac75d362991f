// Package kernels holds trnsim's kernels, written in the tile IR (package
// tile): the GEMM and the elementwise ops today; the model ops, attention
// and collectives join them. A kernel reads a typed target and typed
// options (never the YAML config) and reports errors by option name
// (OptionError), which the config layer maps to the fields a user wrote;
// working sets that cannot fit are the scheduler's sched.FitError.
package kernels

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/sched"
)

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

// The sizes below are of non-negative values that a user may set as large
// as an int64 holds: they saturate at math.MaxInt64 instead of wrapping,
// so a huge option is a working set that does not fit, never a negative
// one that does.

// ceilDiv returns a/b rounded up, for a >= 0 and b > 0.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}

// roundUp returns v rounded up to a multiple of m (saturating).
func roundUp(v, m int64) int64 { return mul(ceilDiv(v, m), m) }

// mul returns the product of non-negative values, saturating at
// math.MaxInt64.
func mul(xs ...int64) int64 {
	p := int64(1)
	for _, x := range xs {
		if x == 0 {
			return 0
		}
		hi, lo := bits.Mul64(uint64(p), uint64(x))
		if hi != 0 || lo > math.MaxInt64 {
			p = math.MaxInt64
		} else {
			p = int64(lo)
		}
	}
	return p
}

// add returns the sum of non-negative values, saturating at math.MaxInt64.
func add(xs ...int64) int64 {
	s := int64(0)
	for _, x := range xs {
		if s > math.MaxInt64-x {
			return math.MaxInt64
		}
		s += x
	}
	return s
}

// hbmTensor is a tensor a kernel keeps in HBM: its name and elements.
type hbmTensor struct {
	name  string
	dtype isa.DType
	dims  []int64
}

// checkHBM places a kernel's HBM tensors in order, 4 KiB aligned, as the
// scheduler does, with saturating sizes: a problem too big for the chip
// (or for an int64) is a sched.FitError before any tile is built.
func checkHBM(kernel string, tg *sched.Target, ts ...hbmTensor) error {
	if tg.HBMBytes <= 0 {
		return nil
	}
	var next int64
	for _, t := range ts {
		b := mul(append([]int64{int64(t.dtype.Bytes())}, t.dims...)...)
		if end := add(next, b); end > tg.HBMBytes {
			return &sched.FitError{Kernel: kernel, Tile: t.name, Mem: isa.MemHBM, Needed: end, Available: tg.HBMBytes}
		}
		next = roundUp(add(next, b), 4096)
	}
	return nil
}

package isa

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Confidence tags, as in reference/trainium.md: confirmed, inference, third
// party, recalled, unknown; plus fitted (set from a documented fit to
// published measurements, see docs/validation.md).
var ConfidenceTags = []string{"C", "I", "3P", "R", "U", "F"}

// CostConstant is a named number a cost expression may use (MIN_II,
// pipeline latencies, the stride penalty), with its source and tag.
type CostConstant struct {
	Name   string
	Value  float64
	Source string
	Tag    string
}

// CostVariant is one row of a cost table: the conditions under which it
// applies, the issue interval and the completion latency (both in cycles of
// the engine's clock), and where the formula comes from.
type CostVariant struct {
	Name string
	// When lists condition flags that must all hold; a flag written "!flag"
	// must not hold. An empty list always matches.
	When     []string
	Interval string
	Latency  string
	Source   string
	Tag      string
}

// CostRule holds the variants for one opcode on one engine ("any" applies to
// every engine that has no rule of its own). Variants are tried in order.
type CostRule struct {
	Engine   string
	Op       string
	Variants []CostVariant
}

// CostTable is a generation's declarative per-instruction cost table.
type CostTable struct {
	Constants []CostConstant
	Rules     []CostRule
}

// Condition flags computed for every instruction.
const (
	FlagFP32        uint32 = 1 << iota // main input is FP32
	FlagFP8                            // main input is an 8-bit float
	FlagHalf                           // every operand is BF16 or FP16
	FlagPSUMIn                         // some input is in PSUM
	FlagMixedIn                        // one input in PSUM and one in SBUF
	FlagSBUFOnly                       // every operand is in SBUF
	FlagUnitStride                     // every operand has unit inner stride
	FlagSimpleALU                      // ALU ops are add/subtract/multiply
	FlagAddMax                         // ALU0 is add or max
	FlagSubMul                         // ALU0 subtract, ALU1 multiply
	FlagNEven                          // N is even
	FlagZero                           // memset value is zero
	FlagAccumulate                     // activation accumulates
	FlagPSUMOut                        // output is in PSUM
	FlagLargeStride                    // some on-chip operand's inner stride reaches STRIDE_PENALTY_BYTES
	FlagPerf2                          // FP8 double-row mode
	FlagPerf4                          // MX quad mode
	FlagHBM                            // DMA touches HBM
	FlagInt8                           // main input is an 8-bit integer (int8, uint8)
	numFlags
)

var flagNames = map[string]uint32{
	"fp32": FlagFP32, "fp8": FlagFP8, "half": FlagHalf, "psum_in": FlagPSUMIn,
	"mixed_in": FlagMixedIn, "sbuf_only": FlagSBUFOnly, "unit_stride": FlagUnitStride,
	"simple_alu": FlagSimpleALU, "add_max": FlagAddMax, "sub_mul": FlagSubMul,
	"n_even": FlagNEven, "zero": FlagZero, "accumulate": FlagAccumulate,
	"psum_out": FlagPSUMOut, "large_stride": FlagLargeStride, "perf2": FlagPerf2,
	"perf4": FlagPerf4, "hbm": FlagHBM, "int8": FlagInt8,
}

// FlagNames lists the condition flags a cost variant may name.
func FlagNames() []string {
	out := make([]string, 0, len(flagNames))
	for n := range flagNames {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

type compiledVariant struct {
	v        *CostVariant
	require  uint32
	forbid   uint32
	interval *Expr
	latency  *Expr
	fullName string
}

// CostModel is a compiled CostTable: the lookup the engines use on every
// instruction.
type CostModel struct {
	table  *CostTable
	consts map[string]float64
	rules  [NumEngines][numOpcodes][]compiledVariant
	// stride penalty (reference §3): factor applied to compute-engine
	// intervals when FlagLargeStride holds.
	stridePenalty      float64
	stridePenaltyBytes int64
}

// Constant returns a named constant of the table.
func (m *CostModel) Constant(name string) (float64, bool) {
	v, ok := m.consts[name]
	return v, ok
}

// Table returns the table the model was compiled from.
func (m *CostModel) Table() *CostTable { return m.table }

// Compile checks a table and compiles its expressions. Every opcode that an
// engine may run must have a matching rule with a catch-all variant, so no
// instruction can go uncosted.
func (t *CostTable) Compile() (*CostModel, error) {
	m := &CostModel{table: t, consts: map[string]float64{}, stridePenalty: 1}
	for _, c := range t.Constants {
		if _, dup := m.consts[c.Name]; dup {
			return nil, fmt.Errorf("costs.constants.%s: defined twice", c.Name)
		}
		if _, isVar := varNames[c.Name]; isVar {
			return nil, fmt.Errorf("costs.constants.%s: name is reserved for a variable", c.Name)
		}
		if math.IsNaN(c.Value) || math.IsInf(c.Value, 0) || c.Value < 0 {
			return nil, fmt.Errorf("costs.constants.%s: value must be a finite non-negative number, got %v", c.Name, c.Value)
		}
		m.consts[c.Name] = c.Value
	}
	if v, ok := m.consts["STRIDE_PENALTY"]; ok {
		if v < 1 {
			return nil, fmt.Errorf("costs.constants.STRIDE_PENALTY: must be >= 1, got %v", v)
		}
		m.stridePenalty = v
	}
	if v, ok := m.consts["STRIDE_PENALTY_BYTES"]; ok {
		m.stridePenaltyBytes = int64(v)
	}
	anyRules := map[Opcode][]compiledVariant{}
	for ri := range t.Rules {
		r := &t.Rules[ri]
		path := fmt.Sprintf("costs.%s.%s", r.Engine, r.Op)
		op, ok := ParseOpcode(r.Op)
		if !ok {
			return nil, fmt.Errorf("%s: unknown opcode %q", path, r.Op)
		}
		var eng Engine
		isAny := r.Engine == "any"
		if !isAny {
			eng, ok = ParseEngine(r.Engine)
			if !ok {
				return nil, fmt.Errorf("%s: unknown engine %q (engines: tensor, vector, scalar, gpsimd, sync, any)", path, r.Engine)
			}
			if !op.RunsOn(eng) {
				return nil, fmt.Errorf("%s: %s does not run on %s", path, r.Op, r.Engine)
			}
		}
		var cvs []compiledVariant
		for vi := range r.Variants {
			v := &r.Variants[vi]
			vpath := path + "." + v.Name
			cv := compiledVariant{v: v, fullName: r.Engine + "." + r.Op + "." + v.Name}
			for _, f := range v.When {
				neg := strings.HasPrefix(f, "!")
				bit, ok := flagNames[strings.TrimPrefix(f, "!")]
				if !ok {
					return nil, fmt.Errorf("%s.when: unknown condition %q (conditions: %s)", vpath, f, strings.Join(FlagNames(), ", "))
				}
				if neg {
					cv.forbid |= bit
				} else {
					cv.require |= bit
				}
			}
			var err error
			if cv.interval, err = CompileExpr(v.Interval, m.consts); err != nil {
				return nil, fmt.Errorf("%s.interval: %w", vpath, err)
			}
			if cv.interval.usesI {
				return nil, fmt.Errorf("%s.interval: I (the interval) can only be used in a latency", vpath)
			}
			lat := v.Latency
			if lat == "" {
				lat = "I"
			}
			if cv.latency, err = CompileExpr(lat, m.consts); err != nil {
				return nil, fmt.Errorf("%s.latency: %w", vpath, err)
			}
			if !validTag(v.Tag) {
				return nil, fmt.Errorf("%s.tag: %q is not one of %s", vpath, v.Tag, strings.Join(ConfidenceTags, ", "))
			}
			cvs = append(cvs, cv)
		}
		if len(cvs) == 0 {
			return nil, fmt.Errorf("%s: no variants", path)
		}
		if last := cvs[len(cvs)-1]; last.require != 0 || last.forbid != 0 {
			return nil, fmt.Errorf("%s: the last variant (%s) must have no conditions, so every instruction is costed", path, last.v.Name)
		}
		if isAny {
			anyRules[op] = cvs
			continue
		}
		if m.rules[eng][op] != nil {
			return nil, fmt.Errorf("%s: defined twice", path)
		}
		m.rules[eng][op] = cvs
	}
	for _, c := range t.Constants {
		if !validTag(c.Tag) {
			return nil, fmt.Errorf("costs.constants.%s.tag: %q is not one of %s", c.Name, c.Tag, strings.Join(ConfidenceTags, ", "))
		}
	}
	for op := Opcode(0); op < numOpcodes; op++ {
		for _, e := range AllEngines() {
			if !op.RunsOn(e) || m.rules[e][op] != nil {
				continue
			}
			if a, ok := anyRules[op]; ok {
				m.rules[e][op] = a
				continue
			}
			return nil, fmt.Errorf("costs: no rule for %s on %s (add costs.%s.%s or costs.any.%s)", op, e, e, op, op)
		}
	}
	return m, nil
}

func validTag(t string) bool {
	for _, c := range ConfidenceTags {
		if c == t {
			return true
		}
	}
	return false
}

// Flags computes the condition flags of an instruction.
func (m *CostModel) Flags(in *Instruction) uint32 {
	var f uint32
	main := in.MainInput()
	if main != nil {
		switch {
		case main.DType == FP32:
			f |= FlagFP32
		case main.DType.IsFP8():
			f |= FlagFP8
		case main.DType == INT8 || main.DType == UINT8:
			f |= FlagInt8
		}
		if main.FreeSize()%2 == 0 {
			f |= FlagNEven
		}
	}
	half, sbufOnly, unit := true, true, true
	nPSUMIn, nSBUFIn := 0, 0
	large := false
	hbm := false
	in.Operands(func(op *Operand, role OperandRole) {
		ap := &op.AP
		if !ap.DType.IsHalf() {
			half = false
		}
		if ap.Mem != MemSBUF {
			sbufOnly = false
		}
		if ap.Mem == MemHBM {
			hbm = true
		}
		isb := ap.InnerStrideBytes()
		if isb != int64(ap.DType.Bytes()) {
			unit = false
		}
		if ap.Mem.OnChip() && m.stridePenaltyBytes > 0 && isb >= m.stridePenaltyBytes {
			large = true
		}
		if role == RoleRead {
			switch ap.Mem {
			case MemPSUM:
				nPSUMIn++
			case MemSBUF:
				nSBUFIn++
			}
		} else if ap.Mem == MemPSUM {
			f |= FlagPSUMOut
		}
	})
	if half {
		f |= FlagHalf
	}
	if sbufOnly {
		f |= FlagSBUFOnly
	}
	if unit {
		f |= FlagUnitStride
	}
	if nPSUMIn > 0 {
		f |= FlagPSUMIn
		if nSBUFIn > 0 {
			f |= FlagMixedIn
		}
	}
	if large {
		f |= FlagLargeStride
	}
	if hbm {
		f |= FlagHBM
	}
	a := &in.Attrs
	if a.ALU0.IsSimpleArith() && (a.ALU1 == ALUNone || a.ALU1.IsSimpleArith()) {
		f |= FlagSimpleALU
	}
	if a.ALU0 == ALUAdd || a.ALU0 == ALUMax {
		f |= FlagAddMax
	}
	if a.ALU0 == ALUSubtract && a.ALU1 == ALUMultiply {
		f |= FlagSubMul
	}
	if a.Value == 0 {
		f |= FlagZero
	}
	if a.Accumulate != ALUNone {
		f |= FlagAccumulate
	}
	switch a.PerfMode {
	case 2:
		f |= FlagPerf2
	case 4:
		f |= FlagPerf4
	}
	return f
}

// FillEnv sets the per-instruction variables other than NS and I.
func FillEnv(in *Instruction, env *CostEnv) {
	*env = CostEnv{}
	if main := in.MainInput(); main != nil {
		env[VarN] = float64(main.FreeSize())
		env[VarP] = float64(main.PartCount)
		env[VarBytes] = float64(main.BytesPerPartition())
	}
	if len(in.Outs) > 0 {
		env[VarNOut] = float64(in.Outs[0].AP.FreeSize())
	}
	if in.Op == OpDMAGather || in.Op == OpDMAScatter {
		env[VarK] = float64(in.Ins[0].AP.FreeSize())
	}
}

// MaxCostCycles caps an instruction's interval and latency, so a formula
// that evaluates to infinity (a division by a zero variable) still gives a
// representable cost.
const MaxCostCycles = 1 << 50

// Cost is the result of costing one instruction.
type Cost struct {
	// IntervalCycles: how long the instruction occupies its engine before the
	// next may issue. LatencyCycles: from issue until the result is visible
	// and the semaphores move. Both in the engine's clock.
	IntervalCycles int64
	LatencyCycles  int64
	// StridePenalized is true when the stride penalty was applied.
	StridePenalized bool
	// Variant is the table row used, as engine.op.variant.
	Variant string
}

// Cost evaluates the instruction's interval and latency. env must have been
// filled with FillEnv (and NS for TensorE).
func (m *CostModel) Cost(in *Instruction, flags uint32, env *CostEnv) Cost {
	return m.cost(in.Op, in.Engine, flags, env)
}

func (m *CostModel) cost(op Opcode, eng Engine, flags uint32, env *CostEnv) Cost {
	vs := m.rules[eng][op]
	for i := range vs {
		cv := &vs[i]
		if flags&cv.require != cv.require || flags&cv.forbid != 0 {
			continue
		}
		interval := cv.interval.Eval(env)
		pen := false
		if flags&FlagLargeStride != 0 && m.stridePenalty > 1 && !op.IsDMA() {
			interval *= m.stridePenalty
			pen = true
		}
		interval = math.Ceil(interval)
		if interval < 1 || math.IsNaN(interval) {
			interval = 1
		}
		// A formula that divides by a zero variable gives +Inf, which has no
		// int64 value: clamp it (and any absurd value) to MaxCostCycles.
		interval = min(interval, MaxCostCycles)
		env[VarI] = interval
		lat := math.Ceil(cv.latency.Eval(env))
		if lat < interval || math.IsNaN(lat) {
			lat = interval
		}
		lat = min(lat, MaxCostCycles)
		return Cost{IntervalCycles: int64(interval), LatencyCycles: int64(lat), StridePenalized: pen,
			Variant: cv.fullName}
	}
	// Unreachable: Compile guarantees a catch-all variant.
	return Cost{IntervalCycles: 1, LatencyCycles: 1}
}

// Lookup returns the variants that apply to op on engine e, in match order.
func (m *CostModel) Lookup(e Engine, op Opcode) []CostVariant {
	var out []CostVariant
	for _, cv := range m.rules[e][op] {
		out = append(out, *cv.v)
	}
	return out
}

// CostOf costs an instruction whose stationary free size (TensorE's NS) is
// ns: FillEnv, Flags and Cost in one call. The simulator goes through a
// DecodeCache instead, which remembers all three.
func (m *CostModel) CostOf(in *Instruction, ns int64, env *CostEnv) Cost {
	FillEnv(in, env)
	env[VarNS] = float64(ns)
	return m.Cost(in, m.Flags(in), env)
}

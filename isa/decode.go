package isa

import "unsafe"

// Decoded is what the simulator derives from an instruction's body — its
// opcode, engine, placement, operands and attributes, not its waits or
// signals: the body has passed the limit checks, and its cost flags and
// cost variables are known.
type Decoded struct {
	// Flags are the cost-table conditions that hold (CostModel.Flags).
	Flags uint32
	// Env holds the cost variables other than NS and I (FillEnv).
	Env CostEnv

	model  *CostModel
	costOK bool
	costNS int64
	cost   Cost

	// The body it was decoded from: operand arrays by identity.
	outs, ins   *Operand
	nOuts, nIns int
	op          Opcode
	engine      Engine
	chip, core  int32
	attrs       Attrs
}

// Cost returns the instruction's cost for a stationary free size ns
// (TensorE's NS; 0 elsewhere), remembering the last one.
func (d *Decoded) Cost(ns int64) Cost {
	if d.costOK && d.costNS == ns {
		return d.cost
	}
	env := d.Env
	env[VarNS] = float64(ns)
	d.cost = d.model.cost(d.op, d.engine, d.Flags, &env)
	d.costNS, d.costOK = ns, true
	return d.cost
}

// decodeSlots is the size of a DecodeCache: enough for the operand sets an
// engine cycles through in a pipelined loop nest.
const decodeSlots = 512

// DecodeCache checks and decodes instructions for one engine, remembering
// the bodies it has seen. Generated streams hand out fresh instructions
// whose bodies repeat — the same shared operand slices with new waits and
// signals — so a body is recognised by the identity of its operand arrays
// (plus opcode, engine, placement and attributes), and only its waits and
// signals are checked again. This relies on the stream contract that an
// instruction, operands included, never changes once handed out. Not safe
// for concurrent use.
type DecodeCache struct {
	limits  *Limits
	model   *CostModel
	slots   []Decoded
	scratch Decoded
	// Hits and Misses count lookups.
	Hits, Misses int64
}

// NewDecodeCache returns an empty cache for the given limits and costs.
func NewDecodeCache(l *Limits, m *CostModel) *DecodeCache {
	return &DecodeCache{limits: l, model: m, slots: make([]Decoded, decodeSlots)}
}

// Decode checks in against the limits (a *LimitError on failure) and
// returns its decoding, valid until the next call.
func (c *DecodeCache) Decode(in *Instruction) (*Decoded, error) {
	var outs, ins *Operand
	if len(in.Outs) > 0 {
		outs = &in.Outs[0]
	}
	if len(in.Ins) > 0 {
		ins = &in.Ins[0]
	}
	cacheable := in.Attrs.BarrierCores == nil && (outs != nil || ins != nil)
	d := &c.scratch
	if cacheable {
		h := uintptr(unsafe.Pointer(outs))>>3*0x9E3779B1 ^ uintptr(unsafe.Pointer(ins))>>3 ^ uintptr(in.Op)<<7
		d = &c.slots[(h^h>>16)%decodeSlots]
		if d.model != nil && d.outs == outs && d.ins == ins && d.nOuts == len(in.Outs) && d.nIns == len(in.Ins) &&
			d.op == in.Op && d.engine == in.Engine && d.chip == in.Chip && d.core == in.Core && d.attrs.sameScalars(&in.Attrs) {
			c.Hits++
			if err := c.limits.checkSems(in); err != nil {
				return nil, err
			}
			return d, nil
		}
		c.Misses++
	}
	if err := c.limits.Check(in); err != nil {
		// Leave no half-filled entry behind.
		d.model = nil
		return nil, err
	}
	*d = Decoded{Flags: c.model.Flags(in), model: c.model, outs: outs, ins: ins, nOuts: len(in.Outs), nIns: len(in.Ins),
		op: in.Op, engine: in.Engine, chip: in.Chip, core: in.Core, attrs: in.Attrs}
	FillEnv(in, &d.Env)
	return d, nil
}

// sameScalars reports whether two attribute sets agree in every field but
// BarrierCores (TestAttrsSameScalarsCoversEveryField keeps it complete).
func (a *Attrs) sameScalars(b *Attrs) bool {
	return a.Start == b.Start && a.Stop == b.Stop && a.PerfMode == b.PerfMode &&
		a.ALU0 == b.ALU0 && a.ALU1 == b.ALU1 && a.Imm0 == b.Imm0 && a.Imm1 == b.Imm1 && a.Axis == b.Axis &&
		a.Func == b.Func && a.Scale == b.Scale && a.Accumulate == b.Accumulate &&
		a.Value == b.Value && a.Step == b.Step && a.Queue == b.Queue && a.DGE == b.DGE &&
		a.BarrierSem == b.BarrierSem && a.Target == b.Target
}

package asm

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/trnsim/trnsim/isa"
)

// Print writes a program in canonical form: header, buffers with their
// resolved placement, then each stream in (chip, core, engine) order, one
// instruction a line. Parsing the output gives the same program.
func Print(w io.Writer, prog *isa.Program) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, ".version %d\n", isa.AssemblyVersion)
	if prog.Target != "" {
		fmt.Fprintf(bw, ".target %s\n", prog.Target)
	}
	for _, b := range prog.Buffers {
		bw.WriteString(FormatBuffer(b))
		bw.WriteByte('\n')
	}
	curChip, curCore := int32(0), int32(0)
	for _, src := range prog.Streams {
		st := src.Open()
		for {
			in, err := st.Next()
			if err != nil {
				bw.Flush()
				return fmt.Errorf("%s: %w", src.Key, err)
			}
			if in == nil {
				break
			}
			if in.Chip != curChip || in.Core != curCore {
				fmt.Fprintf(bw, ".core %d %d\n", in.Chip, in.Core)
				curChip, curCore = in.Chip, in.Core
			}
			bw.WriteString(FormatInstruction(prog, in))
			bw.WriteByte('\n')
		}
	}
	return bw.Flush()
}

// String returns the canonical text of a program.
func String(prog *isa.Program) (string, error) {
	var sb strings.Builder
	err := Print(&sb, prog)
	return sb.String(), err
}

// FormatBuffer prints a .buffer directive with resolved placement.
func FormatBuffer(b *isa.Buffer) string {
	var sb strings.Builder
	dims := make([]string, len(b.Shape))
	for i, s := range b.Shape {
		dims[i] = strconv.FormatInt(s, 10)
	}
	fmt.Fprintf(&sb, ".buffer %s %s %s [%s]", b.Name, b.Mem, b.DType, strings.Join(dims, ", "))
	if b.Chip != 0 {
		fmt.Fprintf(&sb, " chip=%d", b.Chip)
	}
	if b.Mem == isa.MemHBM {
		fmt.Fprintf(&sb, " addr=%d", b.Offset)
		return sb.String()
	}
	if b.Core != 0 {
		fmt.Fprintf(&sb, " core=%d", b.Core)
	}
	fmt.Fprintf(&sb, " part=%d offset=%d", b.PartStart, b.Offset)
	return sb.String()
}

// FormatOperand prints an operand the way it was written.
func FormatOperand(prog *isa.Program, op *isa.Operand) string {
	return formatOperand(prog, op, 0)
}

// formatOperand prints an operand, an HBM one moved by hbmOffset bytes (an
// instruction's HBMOffset): then as a raw pattern, which says where it is.
func formatOperand(prog *isa.Program, op *isa.Operand, hbmOffset int64) string {
	name := fmt.Sprintf("buf%d", op.Buffer)
	var b *isa.Buffer
	if prog != nil && int(op.Buffer) < len(prog.Buffers) && op.Buffer >= 0 {
		b = prog.Buffers[op.Buffer]
		name = b.Name
	}
	if hbmOffset != 0 && op.AP.Mem == isa.MemHBM {
		ap := &op.AP
		base := int64(0)
		if b != nil {
			base = b.Offset
		}
		dims := []string{fmt.Sprintf("[%d, %d]", ap.PartStride, ap.PartCount)}
		for i := uint8(0); i < ap.NDims; i++ {
			dims = append(dims, fmt.Sprintf("[%d, %d]", ap.Dims[i].Stride, ap.Dims[i].Size))
		}
		off := (ap.Offset + hbmOffset - base) / int64(ap.DType.Bytes())
		return fmt.Sprintf("%s{off=%d, ap=[%s]}", name, off, strings.Join(dims, ", "))
	}
	switch op.Kind {
	case isa.ViewSlices:
		return name + "[" + isa.FormatSlices(op.Slices) + "]"
	case isa.ViewRaw:
		var parts []string
		if b == nil || b.Mem.OnChip() {
			parts = append(parts, fmt.Sprintf("p=%d:%d", op.RawPart[0], op.RawPart[1]))
		}
		parts = append(parts, fmt.Sprintf("off=%d", op.RawOff))
		dims := make([]string, len(op.RawDims))
		for i, d := range op.RawDims {
			dims[i] = fmt.Sprintf("[%d, %d]", d.Stride, d.Size)
		}
		if len(dims) > 0 {
			// A pattern without dimensions (one element) has no ap=; the
			// parser reads "ap=[]" as an error.
			parts = append(parts, "ap=["+strings.Join(dims, ", ")+"]")
		}
		return name + "{" + strings.Join(parts, ", ") + "}"
	}
	return name
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func fmtSem(in *isa.Instruction, s isa.SemRef) string {
	out := "s" + strconv.Itoa(int(s.ID))
	if s.Chip != in.Chip {
		out += fmt.Sprintf("@%d.%d", s.Chip, s.Core)
	} else if s.Core != in.Core {
		out += fmt.Sprintf("@%d", s.Core)
	}
	return out
}

// FormatInstruction prints one instruction in canonical form.
func FormatInstruction(prog *isa.Program, in *isa.Instruction) string {
	var sb strings.Builder
	writeBody(&sb, prog, in.Body, in.HBMOffset)
	for _, w := range in.Waits {
		fmt.Fprintf(&sb, " wait=%s>=%d", fmtSem(in, w.Sem), w.Value)
	}
	for _, s := range in.Signal {
		if s.Add == 1 {
			fmt.Fprintf(&sb, " signal=%s", fmtSem(in, s.Sem))
		} else {
			fmt.Fprintf(&sb, " signal=%s+%d", fmtSem(in, s.Sem), s.Add)
		}
	}
	if in.OpID != 0 {
		fmt.Fprintf(&sb, " op=%d", in.OpID)
	}
	return sb.String()
}

// FormatBody prints what an instruction does — engine, opcode, operands
// and attributes — without its waits, signals and op id: the text two
// instructions share when they share a body.
func FormatBody(prog *isa.Program, b *isa.Body) string {
	var sb strings.Builder
	writeBody(&sb, prog, b, 0)
	if b.OpID != 0 {
		fmt.Fprintf(&sb, " op=%d", b.OpID)
	}
	return sb.String()
}

func writeBody(sb *strings.Builder, prog *isa.Program, in *isa.Body, hbmOffset int64) {
	sb.WriteString(in.Engine.String())
	sb.WriteByte(' ')
	sb.WriteString(in.Op.String())
	n := 0
	in.Operands(func(op *isa.Operand, _ isa.OperandRole) {
		if n == 0 {
			sb.WriteByte(' ')
		} else {
			sb.WriteString(", ")
		}
		sb.WriteString(formatOperand(prog, op, hbmOffset))
		n++
	})
	a := &in.Attrs
	for _, key := range attrKeys[in.Op] {
		switch key {
		case "start":
			if a.Start {
				sb.WriteString(" start")
			}
		case "stop":
			if a.Stop {
				sb.WriteString(" stop")
			}
		case "perf":
			if a.PerfMode != 0 {
				fmt.Fprintf(sb, " perf=%d", a.PerfMode)
			}
		case "alu", "alu0":
			if a.ALU0 != isa.ALUNone {
				fmt.Fprintf(sb, " %s=%s", key, a.ALU0)
			}
		case "alu1":
			if a.ALU1 != isa.ALUNone {
				fmt.Fprintf(sb, " alu1=%s", a.ALU1)
			}
		case "acc":
			if a.Accumulate != isa.ALUNone {
				fmt.Fprintf(sb, " acc=%s", a.Accumulate)
			}
		case "imm0":
			if a.Imm0 != 0 {
				fmt.Fprintf(sb, " imm0=%s", fmtFloat(a.Imm0))
			}
		case "imm1":
			if a.Imm1 != 0 {
				fmt.Fprintf(sb, " imm1=%s", fmtFloat(a.Imm1))
			}
		case "axis":
			if a.Axis != 0 {
				fmt.Fprintf(sb, " axis=%d", a.Axis)
			}
		case "func":
			fmt.Fprintf(sb, " func=%s", a.Func)
		case "scale":
			if a.Scale != 1 {
				fmt.Fprintf(sb, " scale=%s", fmtFloat(a.Scale))
			}
		case "value", "base":
			if a.Value != 0 {
				fmt.Fprintf(sb, " %s=%s", key, fmtFloat(a.Value))
			}
		case "step":
			if a.Step != 0 {
				fmt.Fprintf(sb, " step=%s", fmtFloat(a.Step))
			}
		case "queue":
			fmt.Fprintf(sb, " queue=%d", a.Queue)
		case "dge":
			fmt.Fprintf(sb, " dge=%s", a.DGE)
		case "via":
			if a.Via {
				fmt.Fprintf(sb, " via=%d.%d", a.ViaChip, a.ViaCore)
			}
		case "mirror":
			if a.Via {
				fmt.Fprintf(sb, " mirror=%d.%d", a.MirrorChip, a.MirrorCore)
			}
		case "images":
			if a.Via && len(a.LinkImages) > 0 {
				ps := make([]string, 0, len(a.LinkImages)/2)
				for i := 0; i+1 < len(a.LinkImages); i += 2 {
					ps = append(ps, fmt.Sprintf("%d.%d", a.LinkImages[i], a.LinkImages[i+1]))
				}
				fmt.Fprintf(sb, " images=[%s]", strings.Join(ps, ", "))
			}
		case "sem":
			fmt.Fprintf(sb, " sem=s%d", a.BarrierSem)
		case "cores":
			cs := make([]string, len(a.BarrierCores))
			for i, c := range a.BarrierCores {
				cs[i] = fmt.Sprintf("%d.%d", c.Chip, c.Core)
			}
			fmt.Fprintf(sb, " cores=[%s]", strings.Join(cs, ", "))
		case "target":
			fmt.Fprintf(sb, " target=%d", a.Target)
		}
	}
}

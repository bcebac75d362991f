package tile

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/isa/asm"
)

// Print writes the kernel in canonical text form: the kernel line,
// parameters, kernel-level tiles, then the body, four spaces an indent;
// a loop's tiles open its body. Parsing the output gives the same kernel.
func Print(w io.Writer, k *Kernel) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "kernel %s\n", k.Name)
	for _, p := range k.Params {
		fmt.Fprintf(&sb, "param %s = %d\n", p.Name, p.Value)
	}
	for _, t := range k.Tiles {
		if t.Scope == nil {
			writeTile(&sb, t, 0)
		}
	}
	writeStmts(&sb, k.Body, 0)
	_, err := io.WriteString(w, sb.String())
	return err
}

// String returns the canonical text of a kernel.
func String(k *Kernel) string {
	var sb strings.Builder
	_ = Print(&sb, k)
	return sb.String()
}

func indent(sb *strings.Builder, n int) { sb.WriteString(strings.Repeat("    ", n)) }

func writeTile(sb *strings.Builder, t *Tile, depth int) {
	indent(sb, depth)
	dims := make([]string, len(t.Shape))
	for i, s := range t.Shape {
		if i < len(t.shapeExprs) {
			dims[i] = t.shapeExprs[i].String()
		} else {
			dims[i] = strconv.FormatInt(s, 10)
		}
	}
	fmt.Fprintf(sb, "tile %s %s %s [%s]", t.Name, t.Mem, t.DType, strings.Join(dims, ", "))
	if t.Role != Temp {
		sb.WriteString(" " + t.Role.String())
	}
	if t.Bufs != 1 {
		fmt.Fprintf(sb, " bufs=%d", t.Bufs)
	}
	if t.Core != 0 {
		fmt.Fprintf(sb, " core=%d", t.Core)
	}
	if t.Chip != 0 {
		fmt.Fprintf(sb, " chip=%d", t.Chip)
	}
	if t.Offset >= 0 {
		fmt.Fprintf(sb, " at=%d", t.Offset)
	}
	if t.Bank >= 0 {
		fmt.Fprintf(sb, " bank=%d", t.Bank)
	}
	if t.PartStart != 0 {
		fmt.Fprintf(sb, " part=%d", t.PartStart)
	}
	sb.WriteByte('\n')
}

func writeStmts(sb *strings.Builder, stmts []Stmt, depth int) {
	for _, s := range stmts {
		switch s := s.(type) {
		case *Loop:
			indent(sb, depth)
			fmt.Fprintf(sb, "for %s in range(%s, %s", s.Var.Name, s.Start, s.Stop)
			if v, ok := s.Step.Const(); !ok || v != 1 {
				fmt.Fprintf(sb, ", %s", s.Step)
			}
			fmt.Fprintf(sb, ") %s:\n", s.Kind)
			for _, t := range s.Tiles {
				writeTile(sb, t, depth+1)
			}
			if len(s.Body) == 0 && len(s.Tiles) == 0 {
				indent(sb, depth+1)
				sb.WriteString("pass\n")
			}
			writeStmts(sb, s.Body, depth+1)
		case *If:
			indent(sb, depth)
			fmt.Fprintf(sb, "if %s:\n", s.Cond)
			writeBlock(sb, s.Then, depth+1)
			if len(s.Else) > 0 {
				indent(sb, depth)
				sb.WriteString("else:\n")
				writeStmts(sb, s.Else, depth+1)
			}
		case *Op:
			indent(sb, depth)
			sb.WriteString(FormatOp(s))
			sb.WriteByte('\n')
		case *Collective:
			indent(sb, depth)
			sb.WriteString(FormatCollective(s))
			sb.WriteByte('\n')
		}
	}
}

// FormatCollective prints one collective in the text form.
func FormatCollective(c *Collective) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "collective %s %s", c.Kind, formatAccesses(append(append([]Access(nil), c.Outs...), c.Ins...)))
	if len(c.Group) > 0 {
		g := make([]string, len(c.Group))
		for i, r := range c.Group {
			g[i] = strconv.Itoa(r)
		}
		fmt.Fprintf(&sb, " group=[%s]", strings.Join(g, ", "))
	}
	if c.GroupSize > 0 {
		fmt.Fprintf(&sb, " group_size=%d", c.GroupSize)
	}
	if c.Algo != "" {
		fmt.Fprintf(&sb, " algo=%s", c.Algo)
	}
	if c.OpID != 0 {
		fmt.Fprintf(&sb, " op=%d", c.OpID)
	}
	return sb.String()
}

func writeBlock(sb *strings.Builder, stmts []Stmt, depth int) {
	if len(stmts) == 0 {
		indent(sb, depth)
		sb.WriteString("pass\n")
		return
	}
	writeStmts(sb, stmts, depth)
}

// FormatAccess prints an access in the text form.
func FormatAccess(a *Access) string {
	var sb strings.Builder
	sb.WriteString(a.Tile.Name)
	if !a.Rank.IsZero() {
		sb.WriteString("@" + a.Rank.atomString())
	}
	if len(a.Ranges) > 0 {
		parts := make([]string, len(a.Ranges))
		for i, r := range a.Ranges {
			switch {
			case r.Index:
				parts[i] = r.Start.String()
			case r.Step != 1:
				parts[i] = fmt.Sprintf("%s:%s:%d", r.Start, r.Stop, r.Step)
			default:
				parts[i] = fmt.Sprintf("%s:%s", r.Start, r.Stop)
			}
		}
		sb.WriteString("[" + strings.Join(parts, ", ") + "]")
	}
	if a.Rearrange != nil {
		sb.WriteString("<" + a.Rearrange.String() + ">")
	}
	return sb.String()
}

func formatAccesses(as []Access) string {
	parts := make([]string, len(as))
	for i := range as {
		parts[i] = FormatAccess(&as[i])
	}
	return strings.Join(parts, ", ")
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// flagText prints a start/stop flag: bare when constant true.
func flagText(key string, e Expr) string {
	if v, ok := e.Const(); ok && e.n.name == "" {
		if v != 0 {
			return " " + key
		}
		return ""
	}
	return fmt.Sprintf(" %s=(%s)", key, e)
}

// FormatOp prints one op in the text form.
func FormatOp(op *Op) string {
	var sb strings.Builder
	if op.Label != "" {
		sb.WriteString("@" + op.Label + " ")
	}
	if op.Any {
		sb.WriteString("any ")
	} else {
		sb.WriteString(op.Engine.String() + " ")
	}
	sb.WriteString(op.Opcode.String())
	all := append(append([]Access(nil), op.Outs...), op.Ins...)
	if len(all) > 0 {
		sb.WriteString(" " + formatAccesses(all))
	}
	a := &op.Attrs
	for _, key := range asm.AttrKeys(op.Opcode) {
		switch key {
		case "start":
			if !op.Start.IsZero() {
				sb.WriteString(flagText("start", op.Start))
			} else if a.Start {
				sb.WriteString(" start")
			}
		case "stop":
			if !op.Stop.IsZero() {
				sb.WriteString(flagText("stop", op.Stop))
			} else if a.Stop {
				sb.WriteString(" stop")
			}
		case "perf":
			if a.PerfMode != 0 {
				fmt.Fprintf(&sb, " perf=%d", a.PerfMode)
			}
		case "alu", "alu0":
			if a.ALU0 != isa.ALUNone {
				fmt.Fprintf(&sb, " %s=%s", key, a.ALU0)
			}
		case "alu1":
			if a.ALU1 != isa.ALUNone {
				fmt.Fprintf(&sb, " alu1=%s", a.ALU1)
			}
		case "acc":
			if a.Accumulate != isa.ALUNone {
				fmt.Fprintf(&sb, " acc=%s", a.Accumulate)
			}
		case "imm0":
			if a.Imm0 != 0 {
				fmt.Fprintf(&sb, " imm0=%s", fmtFloat(a.Imm0))
			}
		case "imm1":
			if a.Imm1 != 0 {
				fmt.Fprintf(&sb, " imm1=%s", fmtFloat(a.Imm1))
			}
		case "axis":
			if a.Axis != 0 {
				fmt.Fprintf(&sb, " axis=%d", a.Axis)
			}
		case "func":
			fmt.Fprintf(&sb, " func=%s", a.Func)
		case "scale":
			if a.Scale != 1 {
				fmt.Fprintf(&sb, " scale=%s", fmtFloat(a.Scale))
			}
		case "value", "base":
			if a.Value != 0 {
				fmt.Fprintf(&sb, " %s=%s", key, fmtFloat(a.Value))
			}
		case "step":
			if a.Step != 0 {
				fmt.Fprintf(&sb, " step=%s", fmtFloat(a.Step))
			}
		case "queue":
			if op.QueuePinned {
				fmt.Fprintf(&sb, " queue=%d", a.Queue)
			}
		case "dge":
			if op.DGESet {
				fmt.Fprintf(&sb, " dge=%s", a.DGE)
			}
		}
	}
	if op.OpID != 0 {
		fmt.Fprintf(&sb, " op=%d", op.OpID)
	}
	for _, o := range op.After {
		if o.Label != "" {
			fmt.Fprintf(&sb, " after=%s", o.Label)
		}
	}
	return sb.String()
}

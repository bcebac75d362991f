// Package tile is trnsim's kernel language: the tile IR that every kernel
// (GEMM, elementwise, and later the model ops, collectives and hand-written
// NKI-style kernels) is written in, and its text form.
//
// A kernel works on tiles — tensors in HBM, SBUF or PSUM with a shape and a
// dtype — with ops that are ISA opcodes on slices of those tiles, inside
// loops that stay loops (independent-iteration, sequential, or one
// iteration per NeuronCore). A kernel never names a semaphore or a DMA
// queue, and need not name an engine, an address or a PSUM bank: the
// scheduler (package sched) decides them. It may pin a tile's address or
// bank, pin an op's engine, and add an explicit ordering edge between two
// ops.
//
// A cores loop runs its iterations on ranks (NeuronCores numbered across
// chips); its tiles are per rank, HBM ones included, and a DMA may name
// another rank's instance of a per-rank HBM tile (x@RANK, Access.Rank).
// Collectives (all-reduce, all-gather, ...) are statements the scheduler
// expands into DMA transfers.
//
// A tile declared inside a loop is a new tile every iteration; with
// bufs=N its iterations rotate over N slots of memory (N-deep buffering),
// and the scheduler orders the reuse of a slot after the accesses of the
// iteration that used it before.
package tile

import (
	"fmt"

	"github.com/trnsim/trnsim/isa"
)

// Pos is a position in a kernel's text form (0 when built in Go).
type Pos struct {
	Line, Col int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return ""
	}
	return fmt.Sprintf("%d:%d", p.Line, p.Col)
}

// Role says what a tile is to the kernel's caller.
type Role uint8

// Tile roles.
const (
	// Temp: made and used inside the kernel.
	Temp Role = iota
	// Input: read, filled before the kernel runs.
	Input
	// Output: written, read after the kernel.
	Output
)

var roleNames = [...]string{"temp", "input", "output"}

func (r Role) String() string { return roleNames[r] }

// Tile is a tensor of the kernel. On SBUF and PSUM, Shape[0] is the
// partition dimension.
type Tile struct {
	Name  string
	Mem   isa.Memory
	DType isa.DType
	Shape []int64
	// Bufs is the number of slots a tile declared in a loop rotates over
	// (1: one slot, every iteration reuses it).
	Bufs int
	Role Role
	// Core is the rank (the NeuronCore, numbered over every chip: rank r
	// is core r % cores-per-chip of chip r / cores-per-chip) of an on-chip
	// tile declared outside every cores loop (inside one, the tile is per
	// rank).
	Core int
	// Chip is the chip whose HBM holds a kernel-level HBM tensor. An HBM
	// tile declared in a cores loop exists once per rank, in the HBM of
	// the rank's chip.
	Chip int
	// Pinned placement: Offset is the byte offset in each partition
	// (SBUF/PSUM) or the HBM address, -1 when the scheduler places the
	// tile; Bank pins a PSUM tile to a bank (-1: any). PartStart is the
	// first partition (on-chip).
	Offset    int64
	Bank      int
	PartStart int
	// Scope is the loop the tile is declared in (nil: the kernel).
	Scope *Loop
	// shapeExprs are the sizes as the text form wrote them (parameters by
	// name), for printing.
	shapeExprs []Expr
	// corePos and chipPos are where the text form gave core= and chip=
	// (their values).
	corePos, chipPos Pos
	// ID is the tile's index in Kernel.Tiles.
	ID  int
	Pos Pos
}

// PerRank reports whether the tile exists once per rank: declared in a
// cores loop or a loop inside one (HBM tiles only directly in its body).
// It is known once the kernel is finished (Kernel.Finish).
func (t *Tile) PerRank() bool { return t.Scope != nil && t.Scope.inCores }

// ChipPos returns where the text form gave chip= (0 when not given).
func (t *Tile) ChipPos() Pos { return t.chipPos }

// Bytes returns the size of one slot: per partition on chip, in total in
// HBM.
func (t *Tile) Bytes() int64 {
	n := int64(t.DType.Bytes())
	start := 0
	if t.Mem.OnChip() {
		start = 1
	}
	for _, s := range t.Shape[start:] {
		n *= s
	}
	return n
}

// Range is one dimension of an access: [Start, Stop) with Step, or the
// single index Start.
type Range struct {
	Start, Stop Expr
	Step        int64
	Index       bool
}

// R returns the range [start, stop).
func R(start, stop Expr) Range { return Range{Start: start, Stop: stop, Step: 1} }

// RS returns the range of size elements from start.
func RS(start Expr, size Expr) Range { return Range{Start: start, Stop: start.Add(size), Step: 1} }

// I returns the single index i (the dimension is dropped).
func I(i Expr) Range { return Range{Start: i, Index: true} }

// Access is an op's operand: a slice of a tile, optionally rearranged.
type Access struct {
	Tile   *Tile
	Ranges []Range
	// Rearrange, for an HBM access, reshapes and permutes the slice the
	// way the transfer walks it (see Rearrange).
	Rearrange *Rearrange
	// Rank, when set, names another rank's instance of a per-rank HBM
	// tile (a remote access, for DMAs only): the text form's x@RANK.
	Rank Expr
	Pos  Pos
	// rankPos is the '@' of a remote access in the text form.
	rankPos Pos
}

// RankPos returns where the text form wrote a remote access's '@' (0:
// none, or built in Go).
func (a *Access) RankPos() Pos { return a.rankPos }

// On returns a with its rank set: the instance of the per-rank HBM tile
// that rank holds (a remote access).
func (a Access) On(rank Expr) Access { a.Rank = rank; return a }

// Remote is a per-rank tile seen from another rank: t.On(rank).At(...).
type Remote struct {
	t    *Tile
	rank Expr
}

// On returns the instance of the per-rank HBM tile t that rank holds, for
// remote accesses: t.On(peer).At(ranges...).
func (t *Tile) On(rank Expr) Remote { return Remote{t: t, rank: rank} }

// At returns an access of the remote instance.
func (r Remote) At(ranges ...Range) Access { return r.t.At(ranges...).On(r.rank) }

// All returns an access of all of the remote instance.
func (r Remote) All() Access { return r.t.All().On(r.rank) }

// At returns an access of t; missing trailing ranges take whole
// dimensions.
func (t *Tile) At(ranges ...Range) Access { return Access{Tile: t, Ranges: ranges} }

// All returns an access of all of t.
func (t *Tile) All() Access { return Access{Tile: t} }

// Rearranged returns a with rearrangement r.
func (a Access) Rearranged(r *Rearrange) Access { a.Rearrange = r; return a }

// Rearrange reshapes and permutes a slice, einops-style: In names the
// factors of each dimension of the slice (outermost first; the one factor
// per dimension whose size is not in Sizes is inferred), Out orders every
// factor. "(t p) m -> p t m" with p=128 reads rows 128 at a time into
// partitions p, tiles t.
type Rearrange struct {
	In    [][]string
	Out   []string
	Sizes map[string]int64
	// Pos is the rearrangement's '<' in the text form.
	Pos Pos
}

// Stmt is a statement of a kernel: a *Loop, an *If, an *Op or a
// *Collective.
type Stmt interface{ stmt() }

// LoopKind says how a loop's iterations relate.
type LoopKind uint8

// Loop kinds.
const (
	// Parallel iterations are independent (NKI's affine_range).
	Parallel LoopKind = iota
	// Sequential iterations carry dependencies (sequential_range).
	Sequential
	// Cores runs iteration c on rank c (NeuronCore c % cores-per-chip of
	// chip c / cores-per-chip): its ops and tiles are rank c's.
	Cores
)

var loopKindNames = [...]string{"parallel", "sequential", "cores"}

func (k LoopKind) String() string { return loopKindNames[k] }

// Loop runs Body for Var = Start, Start+Step, ... < Stop.
type Loop struct {
	// ID numbers the kernel's loops and conditionals (set by Finish).
	ID                int
	Var               *Var
	Start, Stop, Step Expr
	Kind              LoopKind
	// Tiles are declared in the body: new every iteration.
	Tiles []*Tile
	Body  []Stmt
	Pos   Pos
	// inCores is set (by Finish) for a cores loop and the loops inside one.
	inCores bool
}

// If runs Then when Cond is non-zero, else Else.
type If struct {
	// ID numbers the kernel's loops and conditionals (set by Finish).
	ID         int
	Cond       Expr
	Then, Else []Stmt
	Pos        Pos
}

// Op is one ISA instruction per execution.
type Op struct {
	// Label names the op for ordering edges (After) and messages.
	Label  string
	Opcode isa.Opcode
	// Engine runs the op, unless Any: then the scheduler chooses among
	// the engines that can (by estimated finish time). For a DMA the
	// engine is the one that triggers it.
	Engine isa.Engine
	Any    bool
	Outs   []Access
	Ins    []Access
	// Attrs are the opcode's attributes. For a DMA, a Queue or DGE the
	// kernel sets is kept only with QueuePinned / DGE set explicitly.
	Attrs       isa.Attrs
	QueuePinned bool
	DGESet      bool
	// Start and Stop, when set, give multiply_moving's accumulation flags
	// per execution.
	Start, Stop Expr
	// OpID is the workload op the instructions belong to.
	OpID int32
	// After orders every execution after the latest execution of each op
	// listed (an explicit edge, beyond the ordering data needs).
	After []*Op
	// ID is the op's index in the kernel (set by Kernel.Finish).
	ID  int
	Pos Pos
	// enginePos is the engine's word (or any) in the text form.
	enginePos Pos
}

// Collective is a collective communication op (all-reduce, all-gather,
// ...) over the ranks in Group. Inside a cores loop (directly in its body)
// it works per rank: its operands are evaluated for each rank, and Group
// defaults to every iteration of the loop, or, with GroupSize, to the
// rank's group of GroupSize consecutive iterations (one collective per
// group: per replica of a tensor-parallel model); outside one it needs a
// Group. The scheduler expands it into DMA transfers between the ranks'
// HBM tiles.
type Collective struct {
	// Kind is one of CollectiveKinds.
	Kind  string
	Outs  []Access
	Ins   []Access
	Group []int
	// GroupSize > 0 cuts the cores loop's ranks, in order, into groups of
	// GroupSize (it must divide their number; not with Group).
	GroupSize int
	// Algo is the algorithm (one of CollectiveAlgorithms), "" for the
	// scheduler's choice by message size.
	Algo string
	OpID int32
	Pos  Pos
	// kindPos is the kind's word in the text form; groupPos the group's
	// ranks; algoPos the algo= value.
	kindPos      Pos
	groupPos     []Pos
	algoPos      Pos
	groupSizePos Pos
}

// GroupSizePos returns where the text form wrote group_size='s value (the
// collective's position when unknown).
func (c *Collective) GroupSizePos() Pos {
	if c.groupSizePos.Line > 0 {
		return c.groupSizePos
	}
	return c.Pos
}

// GroupPos returns where the text form wrote the group's i-th rank (the
// collective's position when unknown).
func (c *Collective) GroupPos(i int) Pos {
	if i < len(c.groupPos) && c.groupPos[i].Line > 0 {
		return c.groupPos[i]
	}
	return c.Pos
}

// AlgoPos returns where the text form wrote algo='s value (the
// collective's position when unknown).
func (c *Collective) AlgoPos() Pos {
	if c.algoPos.Line > 0 {
		return c.algoPos
	}
	return c.Pos
}

// The collective algorithms (docs/tile.md#collectives).
const (
	// AlgoMesh: one step, every rank writes its pieces straight to the
	// others.
	AlgoMesh = "mesh"
	// AlgoRDH: recursive halving and doubling, log2 N steps (power-of-two
	// groups).
	AlgoRDH = "rdh"
	// AlgoRing: pieces of size/N passed around the ring, 2(N-1) steps for
	// an all-reduce.
	AlgoRing = "ring"
)

// CollectiveAlgorithms lists the values of Collective.Algo (besides "").
var CollectiveAlgorithms = []string{AlgoMesh, AlgoRDH, AlgoRing}

// IsCollectiveAlgorithm reports whether a is one of CollectiveAlgorithms.
func IsCollectiveAlgorithm(a string) bool {
	for _, x := range CollectiveAlgorithms {
		if x == a {
			return true
		}
	}
	return false
}

// The kinds of collective.
const (
	// AllReduce leaves in every core's output the reduction (sum) of all
	// the cores' inputs.
	AllReduce = "all_reduce"
	// AllGather leaves in every core's output the concatenation of all
	// the cores' inputs.
	AllGather = "all_gather"
	// ReduceScatter reduces the cores' inputs and leaves one slice of the
	// result in each core's output.
	ReduceScatter = "reduce_scatter"
	// AllToAll sends slice j of core i's input to slice i of core j's
	// output.
	AllToAll = "all_to_all"
	// Send and Recv move a tile from the group's first rank to its second
	// (group=[FROM, TO]): a send is triggered by the sender, a recv by the
	// receiver.
	Send = "send"
	Recv = "recv"
	// Broadcast copies the first rank's input to every rank's output.
	Broadcast = "broadcast"
)

// CollectiveKinds lists the kinds a Collective may have.
var CollectiveKinds = []string{AllReduce, AllGather, ReduceScatter, AllToAll, Send, Recv, Broadcast}

// IsCollectiveKind reports whether kind is one of CollectiveKinds.
func IsCollectiveKind(kind string) bool {
	for _, k := range CollectiveKinds {
		if k == kind {
			return true
		}
	}
	return false
}

func (*Loop) stmt()       {}
func (*If) stmt()         {}
func (*Op) stmt()         {}
func (*Collective) stmt() {}

// Kernel is a tile-level program.
type Kernel struct {
	Name string
	// Params are the named constants of the text form, in order.
	Params []Param
	Tiles  []*Tile
	Vars   []*Var
	Body   []Stmt
	// Ops lists every op, in program order (set by Finish).
	Ops []*Op
	// Blocks counts the loops and conditionals (their IDs).
	Blocks int
	// File names the source in messages.
	File string
	// Pos is the kernel's name on its kernel line.
	Pos Pos
}

// Param is a named integer constant of the text form.
type Param struct {
	Name  string
	Value int64
	Pos   Pos
}

// New returns an empty kernel.
func New(name string) *Kernel { return &Kernel{Name: name} }

// Block is where statements are added: the kernel's body or a loop's or
// if's.
type Block struct {
	k     *Kernel
	loop  *Loop
	stmts *[]Stmt
}

// Root returns the kernel's top-level block.
func (k *Kernel) Root() *Block { return &Block{k: k, stmts: &k.Body} }

// Tile declares a tile in the block's scope: at kernel level, one tile;
// in a loop, a new tile every iteration, in bufs slots.
func (b *Block) Tile(name string, mem isa.Memory, dt isa.DType, shape []int64, bufs int) *Tile {
	t := &Tile{Name: name, Mem: mem, DType: dt, Shape: append([]int64(nil), shape...), Bufs: max(bufs, 1),
		Offset: -1, Bank: -1, Scope: b.loop, ID: len(b.k.Tiles)}
	b.k.Tiles = append(b.k.Tiles, t)
	if b.loop != nil {
		b.loop.Tiles = append(b.loop.Tiles, t)
	}
	return t
}

// Tensor declares a kernel-level HBM tensor with a role.
func (k *Kernel) Tensor(name string, dt isa.DType, role Role, shape ...int64) *Tile {
	t := k.Root().Tile(name, isa.MemHBM, dt, shape, 1)
	t.Role = role
	return t
}

// Var returns a new loop variable.
func (k *Kernel) Var(name string) *Var {
	v := &Var{Name: name, Index: len(k.Vars)}
	k.Vars = append(k.Vars, v)
	return v
}

// For appends a loop over [start, stop) with step 1 and builds its body.
func (b *Block) For(name string, start, stop Expr, kind LoopKind, body func(b *Block, v Expr)) *Loop {
	l := &Loop{Var: b.k.Var(name), Start: start, Stop: stop, Step: C(1), Kind: kind}
	*b.stmts = append(*b.stmts, l)
	if body != nil {
		body(&Block{k: b.k, loop: l, stmts: &l.Body}, l.Var.E())
	}
	return l
}

// If appends a conditional and builds its branches (els may be nil).
func (b *Block) If(cond Expr, then, els func(b *Block)) *If {
	s := &If{Cond: cond}
	*b.stmts = append(*b.stmts, s)
	if then != nil {
		then(&Block{k: b.k, loop: b.loop, stmts: &s.Then})
	}
	if els != nil {
		els(&Block{k: b.k, loop: b.loop, stmts: &s.Else})
	}
	return s
}

// When appends the statements built by then, guarded by cond, folding a
// constant condition away.
func (b *Block) When(cond Expr, then func(b *Block)) {
	if v, ok := cond.Const(); ok {
		if v != 0 {
			then(b)
		}
		return
	}
	b.If(cond, then, nil)
}

// Add appends op and returns it.
func (b *Block) Add(op *Op) *Op {
	*b.stmts = append(*b.stmts, op)
	return op
}

// Collectives returns the kernel's collectives, in program order.
func (k *Kernel) Collectives() []*Collective {
	var out []*Collective
	var walk func(stmts []Stmt)
	walk = func(stmts []Stmt) {
		for _, s := range stmts {
			switch s := s.(type) {
			case *Collective:
				out = append(out, s)
			case *Loop:
				walk(s.Body)
			case *If:
				walk(s.Then)
				walk(s.Else)
			}
		}
	}
	walk(k.Body)
	return out
}

// AddCollective appends a collective and returns it.
func (b *Block) AddCollective(c *Collective) *Collective {
	*b.stmts = append(*b.stmts, c)
	return c
}

// Kernel returns the kernel the block belongs to.
func (b *Block) Kernel() *Kernel { return b.k }

// Finish numbers the kernel's ops in program order and checks it (see
// Check). Call it once the kernel is built.
func (k *Kernel) Finish() error {
	k.Ops = k.Ops[:0]
	k.Blocks = 0
	var walk func(stmts []Stmt)
	walk = func(stmts []Stmt) {
		for _, s := range stmts {
			switch s := s.(type) {
			case *Op:
				s.ID = len(k.Ops)
				k.Ops = append(k.Ops, s)
			case *Loop:
				s.ID = k.Blocks
				k.Blocks++
				walk(s.Body)
			case *If:
				s.ID = k.Blocks
				k.Blocks++
				walk(s.Then)
				walk(s.Else)
			}
		}
	}
	walk(k.Body)
	var mark func(stmts []Stmt, in bool)
	mark = func(stmts []Stmt, in bool) {
		for _, s := range stmts {
			switch s := s.(type) {
			case *Loop:
				s.inCores = in || s.Kind == Cores
				mark(s.Body, s.inCores)
			case *If:
				mark(s.Then, in)
				mark(s.Else, in)
			}
		}
	}
	mark(k.Body, false)
	for i, t := range k.Tiles {
		t.ID = i
	}
	// An op that another orders itself after gets a label, so the text
	// form can name it.
	for _, op := range k.Ops {
		for _, a := range op.After {
			if a.Label == "" {
				a.Label = fmt.Sprintf("op%d", a.ID)
			}
		}
	}
	return k.Check()
}

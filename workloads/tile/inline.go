package tile

import (
	"fmt"
	"slices"

	"github.com/trnsim/trnsim/isa"
)

// Inline appends sub's statements to the block, so that kernels built on
// their own (a GEMM, a norm) compose into one program: each of sub's
// kernel-level HBM tensors is replaced by the tile bind gives for its name
// (the same dtype and shape), as is each kernel-level on-chip tile bind
// names (the same memory, buffers and placement too: a tile two kernels
// hand data through), and sub's other tiles and its loop variables
// join this kernel with prefix added to their names (names are unique in a
// kernel). sub is consumed: do not use it afterwards. Call Finish on the
// kernel once everything is inlined.
func (b *Block) Inline(sub *Kernel, prefix string, bind map[string]*Tile) error {
	k := b.k
	subst := map[*Tile]*Tile{}
	for _, t := range sub.Tiles {
		if t.Scope != nil {
			continue
		}
		to, ok := bind[t.Name]
		if !ok && t.Mem == isa.MemHBM {
			return fmt.Errorf("inlining %s: its tensor %s is not bound", sub.Name, t.Name)
		}
		if !ok {
			continue // (a kernel-level tile of its own)
		}
		if t.Bufs != to.Bufs || t.Offset != to.Offset {
			return fmt.Errorf("inlining %s: tile %s has %d buffers at offset %d, bound to %s with %d at %d", sub.Name, t.Name, t.Bufs, t.Offset, to.Name, to.Bufs, to.Offset)
		}
		if to.DType != t.DType || !slices.Equal(to.Shape, t.Shape) || to.Mem != t.Mem {
			return fmt.Errorf("inlining %s: tensor %s is %s%v, bound to %s %s%v", sub.Name, t.Name, t.DType, t.Shape, to.Name, to.DType, to.Shape)
		}
		subst[t] = to
	}
	for name := range bind {
		found := false
		for t := range subst {
			found = found || t.Name == name
		}
		if !found {
			return fmt.Errorf("inlining %s: it has no tensor %s", sub.Name, name)
		}
	}
	for _, t := range sub.Tiles {
		if _, bound := subst[t]; bound {
			continue
		}
		t.Name = prefix + t.Name
		k.Tiles = append(k.Tiles, t)
		if b.loop != nil && t.Scope == nil {
			// A kernel-level tile of sub is declared in this block's loop.
			t.Scope = b.loop
			b.loop.Tiles = append(b.loop.Tiles, t)
		}
	}
	for _, v := range sub.Vars {
		v.Name = prefix + v.Name
		v.Index = len(k.Vars)
		k.Vars = append(k.Vars, v)
	}
	fix := func(as []Access) {
		for i := range as {
			if to, ok := subst[as[i].Tile]; ok {
				as[i].Tile = to
			}
		}
	}
	var walk func(stmts []Stmt)
	walk = func(stmts []Stmt) {
		for _, s := range stmts {
			switch s := s.(type) {
			case *Op:
				fix(s.Outs)
				fix(s.Ins)
			case *Collective:
				fix(s.Outs)
				fix(s.Ins)
			case *Loop:
				walk(s.Body)
			case *If:
				walk(s.Then)
				walk(s.Else)
			}
		}
	}
	walk(sub.Body)
	*b.stmts = append(*b.stmts, sub.Body...)
	sub.Body, sub.Tiles, sub.Vars = nil, nil, nil
	return nil
}

package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"math"
	"sync/atomic"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
)

// ConfigHasher computes ConfigHash for a series of configs that mostly
// share their cost tables (a sweep's points: a few presets' tables, as
// embedded). It writes the same JSON that ConfigHash encodes, a part at a
// time (encoding/json encodes a struct as its fields' encodings in order,
// each as it would be alone), and keeps the encoding of the last few cost
// tables it met: a config whose table is equal to one of them, field by
// field and floats bit for bit, reuses that encoding instead of encoding
// the table again. The hash is ConfigHash's, byte for byte
// (TestConfigHasherMatchesConfigHash).
//
// The zero value is ready to use; a ConfigHasher is safe for concurrent
// use.
type ConfigHasher struct {
	costs atomic.Pointer[[]encodedCosts] // newest first; replaced, never written
}

// encodedCosts is a cost table (a copy of its own) and its JSON encoding.
type encodedCosts struct {
	table *isa.CostTable
	json  []byte
}

// hasherTables bounds the cost tables a ConfigHasher keeps.
const hasherTables = 8

// Hash returns ConfigHash(cfg).
func (h *ConfigHasher) Hash(cfg *configs.RunConfig) string {
	par, prices := hashedParallel(cfg), hashedPrices(cfg)
	d := sha256.New()
	// As in ConfigHash, where json.Marshal fails the hash is of no data.
	if err := h.encode(d, cfg, par, prices); err != nil {
		d.Reset()
	}
	sum := d.Sum(nil)
	return hex.EncodeToString(sum[:8])
}

// encode writes what ConfigHash's json.Marshal returns: {"H":..,"C":..,
// "W":..} with ,"P":.. and ,"Pr":.. when they are not omitted. Each part
// is encoded from a value, as the struct's fields are (not addressable).
func (h *ConfigHasher) encode(d hash.Hash, cfg *configs.RunConfig, par *configs.Parallel, prices map[string]float64) error {
	part := func(name string, v any) error {
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		d.Write([]byte(name))
		d.Write(data)
		return nil
	}
	if err := part(`{"H":`, cfg.Hardware); err != nil {
		return err
	}
	costs, err := h.costJSON(cfg.Costs)
	if err != nil {
		return err
	}
	d.Write([]byte(`,"C":`))
	d.Write(costs)
	if err := part(`,"W":`, cfg.Workload); err != nil {
		return err
	}
	if par != nil {
		if err := part(`,"P":`, par); err != nil {
			return err
		}
	}
	if prices != nil {
		if err := part(`,"Pr":`, prices); err != nil {
			return err
		}
	}
	d.Write([]byte("}"))
	return nil
}

// costJSON returns json.Marshal(t), from a kept encoding when t equals a
// table met before.
func (h *ConfigHasher) costJSON(t *isa.CostTable) ([]byte, error) {
	if t == nil {
		return json.Marshal(t)
	}
	old := h.costs.Load()
	if old != nil {
		for _, e := range *old {
			if equalCostTables(e.table, t) {
				return e.json, nil
			}
		}
	}
	data, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	kept := []encodedCosts{{cloneCostTable(t), data}}
	if old != nil {
		kept = append(kept, (*old)[:min(len(*old), hasherTables-1)]...)
	}
	// (Another goroutine's table may be dropped in a race: it is encoded
	// again when next met.)
	h.costs.Store(&kept)
	return data, nil
}

// equalCostTables reports whether a and b encode to the same JSON: every
// field equal, floats bit for bit (-0 is not 0 to encoding/json) and lists
// nil or not alike (nil encodes as null, empty as []).
// TestEqualCostTablesKnowsEveryField fails when the isa types gain a field
// this does not compare.
func equalCostTables(a, b *isa.CostTable) bool {
	if (a.Constants == nil) != (b.Constants == nil) || len(a.Constants) != len(b.Constants) ||
		(a.Rules == nil) != (b.Rules == nil) || len(a.Rules) != len(b.Rules) {
		return false
	}
	for i := range a.Constants {
		x, y := &a.Constants[i], &b.Constants[i]
		if x.Name != y.Name || math.Float64bits(x.Value) != math.Float64bits(y.Value) || x.Source != y.Source || x.Tag != y.Tag {
			return false
		}
	}
	for i := range a.Rules {
		x, y := &a.Rules[i], &b.Rules[i]
		if x.Engine != y.Engine || x.Op != y.Op || (x.Variants == nil) != (y.Variants == nil) || len(x.Variants) != len(y.Variants) {
			return false
		}
		for j := range x.Variants {
			v, w := &x.Variants[j], &y.Variants[j]
			if v.Name != w.Name || v.Interval != w.Interval || v.Latency != w.Latency || v.Source != w.Source || v.Tag != w.Tag ||
				(v.When == nil) != (w.When == nil) || len(v.When) != len(w.When) {
				return false
			}
			for k := range v.When {
				if v.When[k] != w.When[k] {
					return false
				}
			}
		}
	}
	return true
}

// cloneCostTable returns a copy of t that shares no list with it, nil
// lists kept nil.
func cloneCostTable(t *isa.CostTable) *isa.CostTable {
	out := &isa.CostTable{}
	if t.Constants != nil {
		out.Constants = append([]isa.CostConstant{}, t.Constants...)
	}
	if t.Rules != nil {
		out.Rules = make([]isa.CostRule, len(t.Rules))
		for i, r := range t.Rules {
			if r.Variants != nil {
				vs := make([]isa.CostVariant, len(r.Variants))
				for j, v := range r.Variants {
					if v.When != nil {
						v.When = append([]string{}, v.When...)
					}
					vs[j] = v
				}
				r.Variants = vs
			}
			out.Rules[i] = r
		}
	}
	return out
}

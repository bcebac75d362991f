package configs

import (
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/trnsim/trnsim/isa"
)

// The embedded preset and cost-table files are constants of the binary, so
// their parse is generated into it (embedded_nodes.go) and the cost tables
// built from them are memoised for the process: a sweep validates
// thousands of points, each loading its preset and cost table, and
// parsing them again each time was most of its cost. Callers get a node
// tree nothing writes to (decoding only reads it) and their own copy of a
// cost table; a table left as embedded shares one compiled model (a
// CostModel is only read once compiled).
var (
	embeddedTables sync.Map // name -> *isa.CostTable
	embeddedModels sync.Map // name -> *isa.CostModel
)

// parseEmbedded returns an embedded file's parse: its tree as generated
// into the binary (embedded_nodes.go: parsing the presets and cost tables
// was the seventh of a short run's host instructions; every embedded
// preset, cost table and instance file has one,
// TestEmbeddedNodesAreUpToDate), else data parsed.
func parseEmbedded(file string, data []byte) (*yaml.Node, error) {
	if root, ok := embeddedTrees[file]; ok {
		return root, nil
	}
	return parseYAML(data, file)
}

// cachedCostTable returns a copy of the named embedded cost table, built
// once per process.
func cachedCostTable(name string) (*isa.CostTable, error) {
	if t, ok := embeddedTables.Load(name); ok {
		return cloneCostTable(t.(*isa.CostTable)), nil
	}
	t, err := loadCostTable(name, 0)
	if err != nil {
		return nil, err
	}
	embeddedTables.Store(name, t)
	return cloneCostTable(t), nil
}

// cachedCostModel returns the compiled model of the named embedded cost
// table as embedded (no overrides), compiled once per process.
func cachedCostModel(name string) (*isa.CostModel, error) {
	if m, ok := embeddedModels.Load(name); ok {
		return m.(*isa.CostModel), nil
	}
	if _, err := cachedCostTable(name); err != nil {
		return nil, err
	}
	t, _ := embeddedTables.Load(name)
	m, err := t.(*isa.CostTable).Compile()
	if err != nil {
		return nil, err
	}
	embeddedModels.Store(name, m)
	return m, nil
}

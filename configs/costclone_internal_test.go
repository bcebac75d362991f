package configs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A cost table's copy equals the table, and changing the copy (a
// condition, a variant appended to a rule, a rule's cost) leaves the table
// and every other copy as they were.
func TestCloneCostTableIsDeep(t *testing.T) {
	for _, name := range CostTableNames() {
		t.Run(name, func(t *testing.T) {
			table, err := LoadCostTable(name)
			require.NoError(t, err)
			a, b := cloneCostTable(table), cloneCostTable(table)
			require.Equal(t, table, a)
			for i := range a.Rules {
				r := &a.Rules[i]
				for j := range r.Variants {
					r.Variants[j].Interval = "changed"
					if len(r.Variants[j].When) > 0 {
						r.Variants[j].When[0] = "changed"
						r.Variants[j].When = append(r.Variants[j].When, "added")
					}
				}
				r.Variants = append(r.Variants, r.Variants[0])
			}
			assert.Equal(t, table, b)
			c, _ := LoadCostTable(name)
			assert.Equal(t, table, c)
		})
	}
}

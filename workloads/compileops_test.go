package workloads

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/lowergraph"
	"github.com/trnsim/trnsim/workloads/tile"
)

// A model's tile that does not fit SBUF is named with the op it belongs
// to (lowergraph names an inlined op's tiles op<id>_...), not only by the
// tile's internal name.
func TestModelFitErrorNamesTheOp(t *testing.T) {
	cfg, err := configs.LoadDefault(configs.LoadOptions{})
	require.NoError(t, err)
	for _, tc := range []struct {
		tile, want string
	}{
		{"op3_k1_ares", "placing tile op3_k1_ares of op model.layers.0.mlp.down_proj (linear)"},
		{"op9_k1_ares", "placing tile op9_k1_ares)"}, // an id no op has: the tile alone
		{"scratch", "placing tile scratch)"},
	} {
		k := tile.New("model")
		x := k.Root().Tile(tc.tile, isa.MemSBUF, isa.BF16, []int64{128, 1 << 20}, 1)
		k.Root().Add(&tile.Op{Opcode: isa.OpMemset, Engine: isa.EngineGpSimd, Outs: []tile.Access{x.All()}, Attrs: isa.Attrs{Value: 0}})
		require.NoError(t, k.Finish())
		_, err = compileOps(cfg, k, modelFit, []lowergraph.Op{{ID: 3, Name: "model.layers.0.mlp.down_proj", Kind: "linear"}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
}

package runner

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/trnsim/trnsim/isa"
)

// engineCounts names the core of every count, and the chip when there are
// several.
func TestEngineCountsNameTheCore(t *testing.T) {
	key := func(chip, core int32, e isa.Engine) isa.StreamSource {
		return isa.StreamSource{Key: isa.StreamKey{Chip: chip, Core: core, Engine: e}}
	}
	tests := []struct {
		name    string
		streams []isa.StreamSource
		counts  []int64
		want    string
		total   int64
	}{
		{"one core", []isa.StreamSource{key(0, 0, isa.EngineTensor), key(0, 0, isa.EngineSync)}, []int64{24, 6},
			"core 0: tensor 24 sync 6", 30},
		{"two cores, out of order", []isa.StreamSource{key(0, 1, isa.EngineSync), key(0, 0, isa.EngineScalar), key(0, 1, isa.EngineScalar), key(0, 0, isa.EngineSync)},
			[]int64{1, 1, 1, 1}, "core 0: scalar 1 sync 1; core 1: scalar 1 sync 1", 4},
		{"an idle stream and an idle core", []isa.StreamSource{key(0, 0, isa.EngineVector), key(0, 0, isa.EngineSync), key(0, 1, isa.EngineSync)},
			[]int64{0, 2, 0}, "core 0: sync 2", 2},
		{"two chips", []isa.StreamSource{key(0, 0, isa.EngineSync), key(1, 0, isa.EngineSync)}, []int64{3, 4},
			"chip 0 core 0: sync 3; chip 1 core 0: sync 4", 7},
		{"nothing", []isa.StreamSource{key(0, 0, isa.EngineSync)}, []int64{0}, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, total := engineCounts(&isa.Program{Streams: tc.streams}, tc.counts)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.total, total)
		})
	}
}

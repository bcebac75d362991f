package memory

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/trnsim/trnsim/isa"
)

// A chip's HBM records stay bounded however many places a program
// touches: the cells touched longest ago are forgotten, and a race between
// recent accesses is still found.
func TestHBMRecordsStayBounded(t *testing.T) {
	d := NewRaceDetector()
	buf := &isa.Buffer{Name: "A", Mem: isa.MemHBM, DType: isa.BF16, Shape: []int64{1 << 20, 64}, Core: -1}
	d.SetBuffers([]*isa.Buffer{buf})
	rows := func(r0, r1 int64) isa.Region {
		reg := isa.Region{Buffer: 0, Box: true, NDims: 2, ByteLo: r0 * 128, ByteHi: r1 * 128}
		reg.Lo[0], reg.Hi[0], reg.Lo[1], reg.Hi[1] = r0, r1, 0, 64
		return reg
	}
	vc := VClock{0, 0}
	// Agent 0 reads 20,000 row blocks, one after another.
	for i := int64(0); i < 20000; i++ {
		vc[0] = uint32(i + 1)
		reg := rows(i*hbmRowBlock, (i+1)*hbmRowBlock)
		_, _, found := d.checkHBM(&reg, 0, vc[0], false, vc)
		assert.False(t, found)
		assert.LessOrEqual(t, d.hbm[0].cells, hbmLiveCells)
	}
	// Agent 1 writes the last block agent 0 read, knowing none of it: a race.
	reg := rows(19999*hbmRowBlock, 20000*hbmRowBlock)
	other := VClock{0, 1}
	r, agent, found := d.checkHBM(&reg, 1, 1, true, other)
	assert.True(t, found)
	assert.Equal(t, int32(0), agent)
	assert.Equal(t, uint32(20000), r.epoch)
	// Knowing agent 0's reads, it does not race.
	other[0] = 20000
	_, _, found = d.checkHBM(&reg, 1, 2, true, other)
	assert.False(t, found)
}

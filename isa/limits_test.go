package isa

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// trn2Limits are the limits of one trn2 chip (NeuronCore-v3), written by hand
// (configs.Hardware.Limits derives the same from the presets).
func trn2Limits() *Limits {
	return &Limits{
		Generation: 3, Chips: 1, CoresPerChip: 2, Semaphores: 256,
		Partitions: 128, SBUFPartitionBytes: 224 * 1024, PSUMPartitionBytes: 16 * 1024, PSUMBanks: 8,
		ArrayRows: 128, ArrayCols: 128, MovingFreeMax: 512, MovingFreeMaxHalf: 512,
		FP8DoubleRow:      true,
		VectorFreeMaxSBUF: 65536, VectorFreeMaxPSUM: 4096, BNStatsFreeMax: 512, VectorTransposeMax: 32,
		APSizeMax: 65535, APStrideMin: -32768, APStrideMax: 32767,
		DMAEngines: 16, DMAQueues: 16, HardwareDGE: true,
	}
}

// trn1Limits are NeuronCore-v2's: no hardware DGE, no FP8 double row.
func trn1Limits() *Limits {
	l := trn2Limits()
	l.Generation = 2
	l.SBUFPartitionBytes = 192 * 1024
	l.HardwareDGE = false
	l.FP8DoubleRow = false
	return l
}

// trn3Limits are NeuronCore-v4's: matmuls may span PSUM banks, larger
// moving tiles, MX quad, indirect hardware DGE.
func trn3Limits() *Limits {
	l := trn2Limits()
	l.Generation = 4
	l.MovingFreeMax, l.MovingFreeMaxHalf = 4096, 8192
	l.MatmulMayCrossBanks = true
	l.MXQuad = true
	l.DMAIndirectHWDGE = true
	return l
}

// bigPSUM gives l 64 KiB of PSUM per partition.
func bigPSUM(l *Limits) *Limits {
	l.PSUMPartitionBytes = 64 * 1024
	return l
}

// bo describes a buffer: memory, dtype, shape, first partition, byte offset
// and core.
type bo struct {
	mem    Memory
	dt     DType
	shape  []int64
	part   int32
	offset int64
	core   int32
}

func sbufB(dt DType, shape ...int64) bo { return bo{mem: MemSBUF, dt: dt, shape: shape} }
func psumB(dt DType, shape ...int64) bo { return bo{mem: MemPSUM, dt: dt, shape: shape} }
func hbmB(dt DType, shape ...int64) bo  { return bo{mem: MemHBM, dt: dt, shape: shape, core: -1} }

func (b bo) at(offset int64) bo  { b.offset = offset; return b }
func (b bo) onCore(c int32) bo   { b.core = c; return b }
func (b bo) fromPart(p int32) bo { b.part = p; return b }

// v views the buffer (the whole buffer without slices).
func (b bo) v(t *testing.T, slices ...Slice) Operand {
	t.Helper()
	buf := &Buffer{Name: "b", Mem: b.mem, DType: b.dt, Shape: b.shape, PartStart: b.part, Offset: b.offset, Core: b.core}
	var op Operand
	var err error
	if len(slices) == 0 {
		op, err = buf.Whole(0)
	} else {
		op, err = buf.View(0, slices...)
	}
	require.NoError(t, err)
	return op
}

func rng(a, b int64) Slice { return Slice{Start: a, Stop: b, Step: 1} }

func TestLimitsCheck(t *testing.T) {
	type mk func(t *testing.T) *Instruction
	one := func(e Engine, op Opcode, attrs Attrs, outs []Operand, ins ...Operand) *Instruction {
		return &Instruction{Body: &Body{Engine: e, Op: op, Attrs: attrs, Outs: outs, Ins: ins}}
	}
	outs := func(ops ...Operand) []Operand { return ops }
	copyOn := func(e Engine, dst, src Operand) *Instruction {
		return one(e, OpTensorCopy, Attrs{}, outs(dst), src)
	}
	// Partition-range copies: n partitions starting at s, on VectorE.
	partCopy := func(s, n int64) mk {
		return func(t *testing.T) *Instruction {
			return copyOn(EngineVector, sbufB(BF16, 128, 64).v(t, rng(s, s+n)), sbufB(BF16, 128, 64).v(t, rng(s, s+n)))
		}
	}
	matmul := func(dst, mov Operand) *Instruction {
		return one(EngineTensor, OpMultiplyMoving, Attrs{}, outs(dst), mov)
	}
	dma := func(e Engine, attrs Attrs, dst, src Operand) *Instruction {
		return one(e, OpDMACopy, attrs, outs(dst), src)
	}
	cases := []struct {
		name   string
		limits *Limits
		in     mk
		want   string // "" when the instruction is legal
	}{
		// Engines, cores and operand counts.
		{"legal copy", trn2Limits(), func(t *testing.T) *Instruction {
			return copyOn(EngineVector, sbufB(BF16, 128, 512).v(t), sbufB(BF16, 128, 512).v(t))
		}, ""},
		{"wrong engine", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineVector, OpMultiplyMoving, Attrs{}, outs(psumB(FP32, 128, 512).v(t)), sbufB(BF16, 128, 512).v(t))
		}, "multiply_moving cannot run on vector (it runs on tensor)"},
		{"core does not exist", trn2Limits(), func(t *testing.T) *Instruction {
			in := copyOn(EngineVector, sbufB(BF16, 128, 8).v(t), sbufB(BF16, 128, 8).v(t))
			in.Core = 2
			return in
		}, "chip 0 core 2 does not exist (config: 1 chips x 2 cores)"},
		{"too few outputs", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineVector, OpTensorCopy, Attrs{}, nil, sbufB(BF16, 128, 8).v(t))
		}, "tensor_copy takes 1 output operand(s), got 0"},
		{"too many inputs", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineVector, OpTensorCopy, Attrs{}, outs(sbufB(BF16, 128, 8).v(t)), sbufB(BF16, 128, 8).v(t), sbufB(BF16, 128, 8).v(t))
		}, "tensor_copy takes 1 input operand(s), got 2"},
		{"optional inputs", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineScalar, OpActivation, Attrs{}, outs(sbufB(BF16, 128, 8).v(t)))
		}, "activation takes 1 to 3 input operands, got 0"},
		{"operand on another core", trn2Limits(), func(t *testing.T) *Instruction {
			return copyOn(EngineVector, sbufB(BF16, 128, 8).v(t), sbufB(BF16, 128, 8).onCore(1).v(t))
		}, "sbuf operand belongs to chip 0 core 1, not the issuing core"},
		{"compute engine reads HBM", trn2Limits(), func(t *testing.T) *Instruction {
			return copyOn(EngineVector, sbufB(BF16, 128, 8).v(t), hbmB(BF16, 128, 8).v(t))
		}, "vector cannot access HBM directly; use a DMA transfer"},
		{"bytes beyond the partition", trn2Limits(), func(t *testing.T) *Instruction {
			return copyOn(EngineVector, sbufB(BF16, 128, 8).at(224*1024-8).v(t), sbufB(BF16, 128, 8).v(t))
		}, "sbuf bytes 229368:229384 outside the 229376 bytes of a partition"},
		{"partitions beyond the memory", trn2Limits(), func(t *testing.T) *Instruction {
			return copyOn(EngineVector, sbufB(BF16, 64, 8).fromPart(96).v(t), sbufB(BF16, 128, 8).v(t, rng(0, 64)))
		}, "partitions 96:160 outside 0:128"},

		// Semaphores.
		{"semaphore out of range", trn2Limits(), func(t *testing.T) *Instruction {
			in := one(EngineSync, OpSemInc, Attrs{}, nil)
			in.Signal = []SemSignal{{Sem: SemRef{ID: 256}, Add: 1}}
			return in
		}, "semaphore s256 out of range (config has 256 per core)"},
		{"remote semaphore on a missing core", trn2Limits(), func(t *testing.T) *Instruction {
			in := one(EngineSync, OpSemWait, Attrs{}, nil)
			in.Waits = []SemWait{{Sem: SemRef{Chip: 1, ID: 3}, Value: 1}}
			return in
		}, "semaphore s3 names chip 1 core 0, which does not exist"},
		{"negative wait", trn2Limits(), func(t *testing.T) *Instruction {
			in := one(EngineSync, OpSemWait, Attrs{}, nil)
			in.Waits = []SemWait{{Sem: SemRef{ID: 3}, Value: -1}}
			return in
		}, "wait value -1 is negative"},
		{"zero signal", trn2Limits(), func(t *testing.T) *Instruction {
			in := one(EngineSync, OpSemInc, Attrs{}, nil)
			in.Signal = []SemSignal{{Sem: SemRef{ID: 3}}}
			return in
		}, "signal increment 0 must be positive"},
		{"barrier on a missing core", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineSync, OpBarrier, Attrs{BarrierSem: 7, Target: 2, BarrierCores: []SemRef{{Core: 1, ID: 7}, {Core: 5, ID: 7}}}, nil)
		}, "semaphore s7 names chip 0 core 5, which does not exist"},

		// TensorE: stationary and moving tiles.
		{"moving free 512", trn2Limits(), func(t *testing.T) *Instruction {
			return matmul(psumB(FP32, 128, 512).v(t), sbufB(BF16, 128, 512).v(t))
		}, ""},
		{"moving free above 512", trn2Limits(), func(t *testing.T) *Instruction {
			return matmul(psumB(FP32, 128, 513).v(t), sbufB(BF16, 128, 513).v(t))
		}, "moving free size 513 exceeds the limit of 512"},
		{"moving free 4096 on trn3", trn3Limits(), func(t *testing.T) *Instruction {
			return matmul(psumB(FP32, 128, 4096).v(t), sbufB(BF16, 128, 4096).v(t))
		}, ""},
		{"moving free 8192 to bf16 on trn3", trn3Limits(), func(t *testing.T) *Instruction {
			return matmul(psumB(BF16, 128, 8192).v(t), sbufB(BF16, 128, 8192).v(t))
		}, ""},
		// (A larger PSUM, so the tile limit and not the PSUM size is hit.)
		{"moving free above 4096 to fp32 on trn3", bigPSUM(trn3Limits()), func(t *testing.T) *Instruction {
			return matmul(psumB(FP32, 128, 4097).v(t), sbufB(BF16, 128, 4097).v(t))
		}, "moving free size 4097 exceeds the limit of 4096"},
		{"moving free above 8192 to bf16 on trn3", bigPSUM(trn3Limits()), func(t *testing.T) *Instruction {
			return matmul(psumB(BF16, 128, 8193).v(t), sbufB(BF16, 128, 8193).v(t))
		}, "moving free size 8193 exceeds the limit of 8192"},
		{"moving from psum", trn2Limits(), func(t *testing.T) *Instruction {
			return matmul(psumB(FP32, 128, 64).v(t), psumB(BF16, 128, 64).at(4096).v(t))
		}, "multiply_moving reads its moving tile from SBUF, not psum"},
		{"matmul into sbuf", trn2Limits(), func(t *testing.T) *Instruction {
			return matmul(sbufB(FP32, 128, 64).v(t), sbufB(BF16, 128, 64).v(t))
		}, "multiply_moving writes PSUM, not sbuf"},
		{"output free differs", trn2Limits(), func(t *testing.T) *Instruction {
			return matmul(psumB(FP32, 128, 32).v(t), sbufB(BF16, 128, 64).v(t))
		}, "multiply_moving output free size 32 differs from moving free size 64"},
		{"output partitions exceed array columns", func() *Limits { l := trn2Limits(); l.ArrayCols = 64; return l }(), func(t *testing.T) *Instruction {
			return matmul(psumB(FP32, 128, 64).v(t), sbufB(BF16, 64, 64).v(t))
		}, "multiply_moving output has 128 partitions; the PE array has 64 columns"},
		{"moving partitions exceed array rows", func() *Limits { l := trn2Limits(); l.ArrayRows = 64; return l }(), func(t *testing.T) *Instruction {
			return matmul(psumB(FP32, 128, 64).v(t), sbufB(BF16, 128, 64).v(t))
		}, "moving tile has 128 partitions; the PE array has 64 rows"},
		{"output crosses a psum bank", trn2Limits(), func(t *testing.T) *Instruction {
			return matmul(psumB(FP32, 128, 512).at(1024).v(t), sbufB(BF16, 128, 512).v(t))
		}, "multiply_moving output bytes 1024:3072 cross a PSUM bank boundary (2048 bytes per bank)"},
		{"output fills one bank exactly", trn2Limits(), func(t *testing.T) *Instruction {
			return matmul(psumB(FP32, 128, 512).at(2048).v(t), sbufB(BF16, 128, 512).v(t))
		}, ""},
		{"output may cross banks on trn3", trn3Limits(), func(t *testing.T) *Instruction {
			return matmul(psumB(FP32, 128, 512).at(1024).v(t), sbufB(BF16, 128, 512).v(t))
		}, ""},
		{"stationary 128x128", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineTensor, OpLoadStationary, Attrs{}, nil, sbufB(BF16, 128, 128).v(t))
		}, ""},
		{"stationary wider than the array", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineTensor, OpLoadStationary, Attrs{}, nil, sbufB(BF16, 128, 129).v(t))
		}, "stationary free size 129 exceeds 128 (the PE array's 128 columns)"},
		{"stationary taller than the array", func() *Limits { l := trn2Limits(); l.ArrayRows = 64; return l }(), func(t *testing.T) *Instruction {
			return one(EngineTensor, OpLoadStationary, Attrs{}, nil, sbufB(BF16, 128, 64).v(t))
		}, "stationary tile has 128 partitions; the PE array has 64 rows"},
		{"fp8 double row takes 256 columns", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineTensor, OpLoadStationary, Attrs{PerfMode: 2}, nil, sbufB(FP8E4, 128, 256).v(t))
		}, ""},
		{"fp8 double row beyond 256 columns", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineTensor, OpLoadStationary, Attrs{PerfMode: 2}, nil, sbufB(FP8E4, 128, 257).v(t))
		}, "stationary free size 257 exceeds 256 (the PE array's 128 columns)"},
		{"fp8 double row on trn1", trn1Limits(), func(t *testing.T) *Instruction {
			return one(EngineTensor, OpLoadStationary, Attrs{PerfMode: 2}, nil, sbufB(FP8E4, 128, 128).v(t))
		}, "FP8 double-row mode (perf=2) is NeuronCore-v3 only (this hardware has no fp8_double_row)"},
		{"fp8 double row on bf16 tiles", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineTensor, OpLoadStationary, Attrs{PerfMode: 2}, nil, sbufB(BF16, 128, 128).v(t))
		}, "FP8 double-row mode (perf=2) takes fp8e4 or fp8e5 tiles, not bf16 (fp8e3 runs at the BF16 rate: perf=0)"},
		{"fp8e3 has no double row", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineTensor, OpLoadStationary, Attrs{PerfMode: 2}, nil, sbufB(FP8E3, 128, 128).v(t))
		}, "FP8 double-row mode (perf=2) takes fp8e4 or fp8e5 tiles, not fp8e3 (fp8e3 runs at the BF16 rate: perf=0)"},
		{"double-row multiply on bf16", trn2Limits(), func(t *testing.T) *Instruction {
			in := matmul(psumB(FP32, 128, 512).v(t), sbufB(BF16, 128, 512).v(t))
			in.Attrs.PerfMode = 2
			return in
		}, "FP8 double-row mode (perf=2) takes fp8e4 or fp8e5 tiles, not bf16 (fp8e3 runs at the BF16 rate: perf=0)"},
		{"mx quad on trn2", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineTensor, OpLoadStationary, Attrs{PerfMode: 4}, nil, sbufB(FP8E4, 128, 128).v(t))
		}, "MX quad mode (perf=4) needs NeuronCore-v4"},
		{"mx quad on trn3 without MX dtypes", trn3Limits(), func(t *testing.T) *Instruction {
			return one(EngineTensor, OpLoadStationary, Attrs{PerfMode: 4}, nil, sbufB(FP8E4, 128, 512).v(t))
		}, "MX quad mode (perf=4) needs MX tiles (MXFP8/MXFP4 with scales), which trnsim's ISA does not have yet"},
		{"stationary from psum", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineTensor, OpLoadStationary, Attrs{}, nil, psumB(BF16, 128, 128).v(t))
		}, "load_stationary reads SBUF, not psum"},

		// Transposes.
		{"tensor transpose", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineTensor, OpTranspose, Attrs{}, outs(psumB(BF16, 64, 128).v(t)), sbufB(BF16, 128, 64).v(t))
		}, ""},
		{"tensor transpose shape", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineTensor, OpTranspose, Attrs{}, outs(psumB(BF16, 128, 64).v(t)), sbufB(BF16, 128, 64).v(t))
		}, "transpose output [128, 64] is not the transpose of input [128, 64]"},
		{"tensor transpose memories", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineTensor, OpTranspose, Attrs{}, outs(sbufB(BF16, 64, 128).v(t)), sbufB(BF16, 128, 64).at(1024).v(t))
		}, "TensorE transpose reads SBUF and writes PSUM"},
		{"tensor transpose too wide", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineTensor, OpTranspose, Attrs{}, outs(psumB(BF16, 128, 128).v(t)), sbufB(BF16, 128, 256).v(t))
		}, "TensorE transpose input [128, 256] exceeds the 128x128 array"},
		{"vector transpose 32x32", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineVector, OpTranspose, Attrs{}, outs(sbufB(BF16, 32, 32).v(t)), sbufB(BF16, 32, 32).at(64).v(t))
		}, ""},
		{"vector transpose beyond 32x32", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineVector, OpTranspose, Attrs{}, outs(sbufB(BF16, 64, 64).v(t)), sbufB(BF16, 64, 64).at(256).v(t))
		}, "VectorE transpose input [64, 64] exceeds 32x32"},

		// VectorE/ScalarE/GpSimd free sizes.
		{"bn_stats 512", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineVector, OpBNStats, Attrs{}, outs(sbufB(FP32, 128, 6).v(t)), sbufB(BF16, 128, 512).at(64).v(t))
		}, ""},
		{"bn_stats above 512", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineVector, OpBNStats, Attrs{}, outs(sbufB(FP32, 128, 6).v(t)), sbufB(BF16, 128, 513).at(64).v(t))
		}, "bn_stats free size 513 exceeds 512"},
		{"free size from psum", trn2Limits(), func(t *testing.T) *Instruction {
			return copyOn(EngineScalar, sbufB(BF16, 128, 4097).v(t), psumB(BF16, 128, 4097).v(t))
		}, "free size 4097 from PSUM exceeds 4096"},
		{"free size from sbuf", trn2Limits(), func(t *testing.T) *Instruction {
			// Two dimensions, each within the access-pattern fields.
			return copyOn(EngineVector, sbufB(BF16, 128, 65537).v(t), sbufB(FP8E4, 128, 2, 65537).v(t, rng(0, 128), rng(0, 2), rng(0, 65537)))
		}, "access-pattern size 65537 exceeds 65535"},
		{"access-pattern stride", trn2Limits(), func(t *testing.T) *Instruction {
			return copyOn(EngineVector, sbufB(BF16, 128, 2).v(t), sbufB(BF16, 128, 2, 40000).at(64).v(t, rng(0, 128), rng(0, 2), Slice{Start: 0, Index: true}))
		}, "access-pattern stride 40000 outside [-32768, 32767]"},
		{"gpsimd on psum", trn2Limits(), func(t *testing.T) *Instruction {
			return copyOn(EngineGpSimd, sbufB(FP32, 128, 64).v(t), psumB(FP32, 128, 64).v(t))
		}, "GpSimd cannot access PSUM"},
		{"gpsimd on psum when allowed", func() *Limits { l := trn2Limits(); l.GpSimdPSUMAccess = true; return l }(), func(t *testing.T) *Instruction {
			return copyOn(EngineGpSimd, sbufB(FP32, 128, 64).v(t), psumB(FP32, 128, 64).v(t))
		}, ""},

		// Partition start rules: 65-128 partitions start at 0; 33-64 at 0
		// or 64; up to 32 within one 32-partition quadrant.
		{"128 from 0", trn2Limits(), partCopy(0, 128), ""},
		{"65 from 0", trn2Limits(), partCopy(0, 65), ""},
		{"65 from 1", trn2Limits(), partCopy(1, 65), "an access of 65 partitions must start at partition 0, not 1"},
		{"96 from 32", trn2Limits(), partCopy(32, 96), "an access of 96 partitions must start at partition 0, not 32"},
		{"64 from 64", trn2Limits(), partCopy(64, 64), ""},
		{"33 from 64", trn2Limits(), partCopy(64, 33), ""},
		{"33 from 32", trn2Limits(), partCopy(32, 33), "an access of 33 partitions must start at partition 0 or 64, not 32"},
		{"64 from 32", trn2Limits(), partCopy(32, 64), "an access of 64 partitions must start at partition 0 or 64, not 32"},
		{"32 from 96", trn2Limits(), partCopy(96, 32), ""},
		{"32 from 32", trn2Limits(), partCopy(32, 32), ""},
		{"16 from 16", trn2Limits(), partCopy(16, 16), ""},
		{"1 from 127", trn2Limits(), partCopy(127, 1), ""},
		{"32 from 16", trn2Limits(), partCopy(16, 32), "an access of 32 partitions starting at 16 crosses a 32-partition quadrant"},
		{"4 from 30", trn2Limits(), partCopy(30, 4), "an access of 4 partitions starting at 30 crosses a 32-partition quadrant"},

		// DMA.
		{"dma queue 15", trn2Limits(), func(t *testing.T) *Instruction {
			return dma(EngineSync, Attrs{Queue: 15}, sbufB(BF16, 128, 64).v(t), hbmB(BF16, 128, 64).v(t))
		}, ""},
		{"dma queue 16", trn2Limits(), func(t *testing.T) *Instruction {
			return dma(EngineSync, Attrs{Queue: 16}, sbufB(BF16, 128, 64).v(t), hbmB(BF16, 128, 64).v(t))
		}, "DMA queue 16 out of range (0..15)"},
		{"negative dma queue", trn2Limits(), func(t *testing.T) *Instruction {
			return dma(EngineSync, Attrs{Queue: -1}, sbufB(BF16, 128, 64).v(t), hbmB(BF16, 128, 64).v(t))
		}, "DMA queue -1 out of range (0..15)"},
		{"hardware dge on trn2", trn2Limits(), func(t *testing.T) *Instruction {
			return dma(EngineScalar, Attrs{DGE: DGEHardware}, sbufB(BF16, 128, 64).v(t), hbmB(BF16, 128, 64).v(t))
		}, ""},
		{"hardware dge on trn1", trn1Limits(), func(t *testing.T) *Instruction {
			return dma(EngineSync, Attrs{DGE: DGEHardware}, sbufB(BF16, 128, 64).v(t), hbmB(BF16, 128, 64).v(t))
		}, "hardware DGE (dge=hw) needs NeuronCore-v3 or later"},
		{"hardware dge from vector", trn2Limits(), func(t *testing.T) *Instruction {
			return dma(EngineVector, Attrs{DGE: DGEHardware}, sbufB(BF16, 128, 64).v(t), hbmB(BF16, 128, 64).v(t))
		}, "hardware DGE is triggered from the sync or scalar sequencer, not vector"},
		{"hardware dge gather on trn2", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineSync, OpDMAGather, Attrs{DGE: DGEHardware}, outs(sbufB(BF16, 128, 64).v(t)), hbmB(BF16, 1024, 64).v(t), sbufB(INT32, 128, 1).at(1024).v(t))
		}, "hardware DGE cannot do indirect (gather/scatter) transfers; use dge=sw"},
		{"hardware dge gather on trn3", trn3Limits(), func(t *testing.T) *Instruction {
			return one(EngineSync, OpDMAGather, Attrs{DGE: DGEHardware}, outs(sbufB(BF16, 128, 64).v(t)), hbmB(BF16, 1024, 64).v(t), sbufB(INT32, 128, 1).at(1024).v(t))
		}, ""},
		{"software dge on gpsimd", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineGpSimd, OpDMAGather, Attrs{DGE: DGESoftware}, outs(sbufB(BF16, 128, 64).v(t)), hbmB(BF16, 1024, 64).v(t), sbufB(INT32, 128, 1).at(1024).v(t))
		}, ""},
		{"software dge on sync", trn2Limits(), func(t *testing.T) *Instruction {
			return dma(EngineSync, Attrs{DGE: DGESoftware}, sbufB(BF16, 128, 64).v(t), hbmB(BF16, 128, 64).v(t))
		}, "software DGE (dge=sw) runs on gpsimd, not sync"},
		{"gather index dtype", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineGpSimd, OpDMAGather, Attrs{DGE: DGESoftware}, outs(sbufB(BF16, 128, 64).v(t)), hbmB(BF16, 1024, 64).v(t), sbufB(FP32, 128, 1).at(1024).v(t))
		}, "dma_gather index tensor must be an integer dtype, not fp32"},
		{"scatter index in hbm", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineGpSimd, OpDMAScatter, Attrs{DGE: DGESoftware}, outs(hbmB(BF16, 1024, 64).v(t)), sbufB(BF16, 128, 64).v(t), hbmB(INT32, 128, 1).at(1<<20).v(t))
		}, "dma_scatter index tensor must be in SBUF, not hbm"},
		{"dma copy size mismatch", trn2Limits(), func(t *testing.T) *Instruction {
			return dma(EngineSync, Attrs{}, sbufB(BF16, 128, 64).v(t), hbmB(BF16, 128, 32).v(t))
		}, "dma_copy moves 4096 elements into 8192"},
		{"dma copy psum", trn2Limits(), func(t *testing.T) *Instruction {
			return dma(EngineSync, Attrs{}, hbmB(FP32, 128, 64).v(t), psumB(FP32, 128, 64).v(t))
		}, ""},
		{"dma transpose psum", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineSync, OpDMATranspose, Attrs{}, outs(sbufB(BF16, 64, 128).v(t)), psumB(BF16, 128, 64).v(t))
		}, "dma_transpose cannot use PSUM"},
		{"dma transpose 1-byte dtype", trn2Limits(), func(t *testing.T) *Instruction {
			return one(EngineSync, OpDMATranspose, Attrs{}, outs(sbufB(FP8E4, 64, 128).v(t)), hbmB(FP8E4, 128, 64).v(t))
		}, "dma_transpose supports 2- and 4-byte dtypes, not fp8e4"},
		{"dma partitions outside", trn2Limits(), func(t *testing.T) *Instruction {
			return dma(EngineSync, Attrs{}, sbufB(BF16, 64, 64).fromPart(96).v(t), hbmB(BF16, 64, 64).v(t))
		}, "partitions 96:160 outside 0:128"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in(t)
			err := tc.limits.Check(in)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			le, ok := err.(*LimitError)
			require.True(t, ok, "error is %T", err)
			assert.Same(t, in, le.Inst)
		})
	}
}

func TestLimitsPSUMBankBytes(t *testing.T) {
	assert.Equal(t, int64(2048), trn2Limits().PSUMBankBytes())
}

func TestLimitsCheckBuffer(t *testing.T) {
	cases := []struct {
		name string
		b    Buffer
		want string
	}{
		{"sbuf", Buffer{Name: "a", Mem: MemSBUF, DType: BF16, Shape: []int64{128, 1024}}, ""},
		{"hbm", Buffer{Name: "h", Mem: MemHBM, DType: BF16, Shape: []int64{1 << 20, 1024}, Core: -1}, ""},
		{"unknown dtype", Buffer{Name: "a", Mem: MemSBUF, DType: DType(99), Shape: []int64{1}}, "buffer a: unknown dtype"},
		{"no shape", Buffer{Name: "a", Mem: MemSBUF, DType: BF16}, "buffer a: shape must have at least one dimension"},
		{"zero dimension", Buffer{Name: "a", Mem: MemSBUF, DType: BF16, Shape: []int64{128, 0}}, "buffer a: dimension 1 is 0; sizes must be positive"},
		{"missing chip", Buffer{Name: "a", Mem: MemHBM, DType: BF16, Shape: []int64{1}, Chip: 1, Core: -1}, "buffer a: chip 1 does not exist (config has 1)"},
		{"negative address", Buffer{Name: "h", Mem: MemHBM, DType: BF16, Shape: []int64{1}, Core: -1, Offset: -1}, "buffer h: negative address"},
		{"missing core", Buffer{Name: "a", Mem: MemSBUF, DType: BF16, Shape: []int64{128, 1}, Core: 2}, "buffer a: core 2 does not exist (config has 2 per chip)"},
		{"partitions outside", Buffer{Name: "a", Mem: MemSBUF, DType: BF16, Shape: []int64{64, 1}, PartStart: 65}, "buffer a: partitions 65:129 outside 0:128"},
		{"too big for sbuf", Buffer{Name: "a", Mem: MemSBUF, DType: FP32, Shape: []int64{128, 57345}}, "buffer a: bytes 0:229380 per partition do not fit sbuf (229376 bytes per partition)"},
		{"last psum bank", Buffer{Name: "p", Mem: MemPSUM, DType: FP32, Shape: []int64{128, 512}, Offset: 14 * 1024}, ""},
		{"past the end of psum", Buffer{Name: "p", Mem: MemPSUM, DType: FP32, Shape: []int64{128, 512}, Offset: 15 * 1024}, "buffer p: bytes 15360:17408 per partition do not fit psum (16384 bytes per partition)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := trn2Limits().CheckBuffer(&tc.b)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

// IsDMA tests a range of opcodes; the table says which are DMA transfers.
func TestIsDMAMatchesTheTable(t *testing.T) {
	for o := Opcode(0); o < numOpcodes+2; o++ {
		want := o < numOpcodes && opTable[o].IsDMA
		assert.Equal(t, want, o.IsDMA(), "%s", o)
	}
}

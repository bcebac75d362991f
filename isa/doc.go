// Package isa defines the contract between trnsim's software side (workloads,
// lowering, hand-written kernels) and its hardware side (chip, engines,
// memory, DMA): instructions, operands and access patterns, semaphores,
// programs made of lazily generated per-engine instruction streams, the tile
// limits an instruction must respect, and the per-instruction cost tables
// (issue interval and completion latency) as pure functions.
//
// The text assembly lives in the sub-package isa/asm.
package isa

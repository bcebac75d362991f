// Package gpu is the GPU baseline: the same op graph a Trainium run
// simulates (package graph), timed op by op on a GPU from its sourced
// specs and a few calibration constants shared by every device — a
// roofline per op with the effects that make GPUs miss peak: wave and tile
// quantisation over the SMs, matmul and streaming efficiency, fused
// attention's efficiency, and kernel launch overhead
// (docs/gpu.md; ../shared/reference/gpu.md for the facts).
package gpu

import (
	"fmt"
	"sort"
	"strings"

	"github.com/trnsim/trnsim/isa"
)

// Device is a GPU's sourced specs.
type Device struct {
	Name, Title string
	SMs         int
	// PeakTFLOPS are dense tensor-core peaks by dtype (bf16 also stands
	// for fp16; fp32 is TF32 tensor math, as PyTorch's matmuls use it).
	PeakTFLOPS map[isa.DType]float64
	// HBMGBps and HBMGB are the memory's bandwidth and capacity.
	HBMGBps, HBMGB float64
	// NVLinkGBps is the per-GPU NVLink bandwidth, both directions
	// together (NVIDIA's figure; 0: no NVLink). Half of it is the line
	// rate each way.
	NVLinkGBps float64
	// BusBwGBps is the bus bandwidth NCCL achieves over NVLink at large
	// messages (nccl-tests' busBw: the bytes each GPU moves each way per
	// second). H100's is measured (gpu.md §2.3 [S22]); the others take
	// H100's share of its line rate [I] (see busBw).
	BusBwGBps float64
	// BusBwSource says where BusBwGBps comes from.
	BusBwSource string
	PowerW      float64
	// TileM, TileN are the matmul CTA tile the wave model counts.
	TileM, TileN int64
	// Source cites the figures.
	Source string
}

// GPUsPerNode is how many GPUs one NVLink domain holds: an HGX/DGX node,
// the 8 GPUs of p4d, p4de, p5, p5en and p6-b200 (gpu.md §4.1). A plan's
// tensor parallelism stays within it; gpu.md has no inter-node GPU
// network figures, so multi-GPU plans stop at one 8-GPU instance.
const GPUsPerNode = 8

// h100BusBwGBps is NCCL's achieved bus bandwidth on H100 NVLink4: ~370
// GB/s of the 450 GB/s line rate each way (gpu.md §2.3, the NCCL
// maintainer in nccl-tests #212 [S22]; measured).
const h100BusBwGBps, h100LineGBps = 370.0, 450.0

// busBw is the achieved bus bandwidth of a GPU whose NVLink moves
// nvlinkGBps both ways together: H100's measured share of its line rate
// (370 of 450 GB/s, 82%) of its own line rate (nvlinkGBps / 2) [I: gpu.md
// §2.3 measures H100 only].
func busBw(nvlinkGBps float64) float64 { return nvlinkGBps / 2 * h100BusBwGBps / h100LineGBps }

const busBwInferred = "[I] H100's measured 370/450 GB/s share (gpu.md §2.3 [S22]) of this GPU's line rate, half its NVLink figure"

// devices are the presets, from ../shared/reference/gpu.md §1.1 (the
// ml-engineering table citing NVIDIA's product pages [S6], Lockwood's
// per-chip pages [S1,S3,S7]) and §2.1 for the A800 PCIe [S14].
var devices = map[string]Device{
	"a100-40gb": {Name: "a100-40gb", Title: "A100 SXM 40GB", SMs: 108, PeakTFLOPS: map[isa.DType]float64{isa.BF16: 312, isa.FP16: 312, isa.FP32: 156},
		HBMGBps: 1555, HBMGB: 40, NVLinkGBps: 600, BusBwGBps: busBw(600), BusBwSource: busBwInferred, PowerW: 400, TileM: 128, TileN: 128,
		Source: "gpu.md §1.1 [S1,S2,S6]; NVLink3 600 GB/s [S2,S8]; 1,555 GB/s for the 40 GB part (gpu.md §4.3)"},
	"a100-80gb": {Name: "a100-80gb", Title: "A100 SXM 80GB", SMs: 108, PeakTFLOPS: map[isa.DType]float64{isa.BF16: 312, isa.FP16: 312, isa.FP32: 156},
		HBMGBps: 2039, HBMGB: 80, NVLinkGBps: 600, BusBwGBps: busBw(600), BusBwSource: busBwInferred, PowerW: 400, TileM: 128, TileN: 128, Source: "gpu.md §1.1 [S1,S2,S6]; NVLink3 600 GB/s [S2,S8]"},
	"a800-pcie": {Name: "a800-pcie", Title: "A800 80GB PCIe", SMs: 108, PeakTFLOPS: map[isa.DType]float64{isa.BF16: 312, isa.FP16: 312, isa.FP32: 156},
		HBMGBps: 1935, HBMGB: 80, NVLinkGBps: 0, PowerW: 300, TileM: 128, TileN: 128,
		Source: "gpu.md §2.1-2.2 [S14]: A100 silicon, 312 TFLOPS FP16 peak, 1,935 GB/s, 300 W PCIe; no NVLink in the preset (tp 1 only)"},
	"h100": {Name: "h100", Title: "H100 SXM", SMs: 132, PeakTFLOPS: map[isa.DType]float64{isa.BF16: 989, isa.FP16: 989, isa.FP32: 494.5, isa.FP8E4: 1979, isa.FP8E5: 1979},
		HBMGBps: 3350, HBMGB: 80, NVLinkGBps: 900, BusBwGBps: h100BusBwGBps, BusBwSource: "gpu.md §2.3 [S22]: NCCL's ~370 GB/s busBw of the 450 GB/s line rate (measured)", PowerW: 700, TileM: 128, TileN: 256, Source: "gpu.md §1.1 [S3,S6]; NVLink4 900 GB/s [S3,S8]"},
	"h200": {Name: "h200", Title: "H200 SXM", SMs: 132, PeakTFLOPS: map[isa.DType]float64{isa.BF16: 989, isa.FP16: 989, isa.FP32: 494.5, isa.FP8E4: 1979, isa.FP8E5: 1979},
		HBMGBps: 4800, HBMGB: 141, NVLinkGBps: 900, BusBwGBps: busBw(900), BusBwSource: busBwInferred, PowerW: 700, TileM: 128, TileN: 256, Source: "gpu.md §1.1 [S4,S6]; NVLink 900 GB/s [S4]"},
	"b200": {Name: "b200", Title: "B200 SXM", SMs: 148, PeakTFLOPS: map[isa.DType]float64{isa.BF16: 2250, isa.FP16: 2250, isa.FP32: 1125, isa.FP8E4: 4500, isa.FP8E5: 4500},
		HBMGBps: 8000, HBMGB: 180, NVLinkGBps: 1800, BusBwGBps: busBw(1800), BusBwSource: busBwInferred, PowerW: 1000, TileM: 128, TileN: 256,
		Source: "gpu.md §1.1 [S5,S6,S7]: 8.0 TB/s spec (7.67 TB/s bus-derived), 180 GB usable, 148 SMs; NVLink5 1.8 TB/s [S7,S9]"},
}

// Devices lists the preset names.
func Devices() []string {
	var out []string
	for n := range devices {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns a preset by name.
func Lookup(name string) (Device, error) {
	d, ok := devices[name]
	if !ok {
		return Device{}, fmt.Errorf("unknown GPU %q (GPUs: %s)", name, strings.Join(Devices(), ", "))
	}
	return d, nil
}

// Peak returns the dense peak FLOP/s for matmuls in dt (bf16's for a
// dtype the device has no tensor rate for; fp8 where it has none runs at
// bf16's).
func (d Device) Peak(dt isa.DType) float64 {
	if p, ok := d.PeakTFLOPS[dt]; ok {
		return p * 1e12
	}
	return d.PeakTFLOPS[isa.BF16] * 1e12
}

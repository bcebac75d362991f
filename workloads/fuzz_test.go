package workloads

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/trnsim/trnsim/chip"
	"github.com/trnsim/trnsim/configs"
)

// FuzzLowering lowers and simulates GEMM and elementwise workloads over
// shape, dtype, preset and every lowering field, race check on. A config
// may be refused, but only with a configuration error that names a field
// (never an internal error or a panic); one that lowers must run to the end
// (no race, no deadlock, no internal error), in no less simulated time
// than its physical bound: every FLOP at the TensorE peak, and the least
// bytes (each input read once, the output written once) at the chip's HBM
// bandwidth.
//
// The seeds run in `go test ./...`; the long run (docs/performance.md):
//
//	go test ./workloads -run '^$' -fuzz FuzzLowering -fuzztime 10m -parallel 1
func FuzzLowering(f *testing.F) {
	// kind, preset, dtype, layout, m, k, n, then the lowering fields.
	f.Add(uint8(0), uint8(0), uint8(0), uint8(0), uint16(320), uint16(448), uint16(1100), uint16(2), uint16(2), uint16(4), uint16(2), uint16(0), uint16(0), uint16(0), uint16(0), uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), uint16(0))
	f.Add(uint8(0), uint8(2), uint8(4), uint8(1), uint16(1000), uint16(700), uint16(900), uint16(0), uint16(0), uint16(0), uint16(0), uint16(0), uint16(0), uint16(0), uint16(0), uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), uint16(0))
	f.Add(uint8(0), uint8(3), uint8(1), uint8(1), uint16(129), uint16(257), uint16(513), uint16(1), uint16(1), uint16(2), uint16(1), uint16(1), uint16(1), uint16(1), uint16(8), uint8(1), uint8(2), uint8(1), uint8(2), uint8(1), uint16(0))
	f.Add(uint8(0), uint8(1), uint8(2), uint8(0), uint16(64), uint16(2048), uint16(300), uint16(0), uint16(0), uint16(0), uint16(0), uint16(3), uint16(2), uint16(3), uint16(2), uint8(2), uint8(3), uint8(2), uint8(1), uint8(2), uint16(0))
	f.Add(uint8(1), uint8(0), uint8(0), uint8(0), uint16(300), uint16(5000), uint16(0), uint16(0), uint16(0), uint16(0), uint16(0), uint16(0), uint16(0), uint16(2), uint16(0), uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), uint16(700))
	f.Add(uint8(1), uint8(3), uint8(1), uint8(0), uint16(129), uint16(33), uint16(5), uint16(0), uint16(0), uint16(0), uint16(0), uint16(0), uint16(0), uint16(1), uint16(0), uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), uint16(0x8003))
	f.Fuzz(func(t *testing.T, kind, preset, dtype, layout uint8, m, k, n, tileN, blockM, blockN, blockK, bufs, resBufs, queues, banks uint16,
		dge, evac, transpose, order, acc uint8, free uint16) {
		sets := fuzzSets(kind, preset, dtype, layout, m, k, n, tileN, blockM, blockN, blockK, bufs, resBufs, queues, banks, dge, evac, transpose, order, acc, free)
		checkLowering(t, sets)
	})
}

func pick(list []string, i uint8) string { return list[int(i)%len(list)] }

// size maps a fuzzed size to 0 (automatic) or a multiple of unit, or,
// with the top bit set, to the awkward raw value below it.
func size(v uint16, unit int) int {
	if v&0x8000 != 0 {
		return int(v & 0x7fff % 5000)
	}
	return int(v%17) * unit
}

func fuzzSets(kind, preset, dtype, layout uint8, m, k, n, tileN, blockM, blockN, blockK, bufs, resBufs, queues, banks uint16,
	dge, evac, transpose, order, acc uint8, free uint16) []string {
	dim := func(v uint16) int { return 1 + int(v)%2048 }
	sets := []string{"hardware.preset=" + pick(configs.PresetNames(), preset)}
	low := func(field string, v int) { sets = append(sets, fmt.Sprintf("workload.lowering.%s=%d", field, v)) }
	if kind%2 == 0 {
		sets = append(sets, "workload.gemm.dtype="+pick([]string{"bf16", "fp16", "fp32", "tf32", "fp8e4"}, dtype),
			"workload.gemm.a_layout="+pick([]string{"km", "mk"}, layout),
			fmt.Sprintf("workload.gemm.m=%d", dim(m)), fmt.Sprintf("workload.gemm.k=%d", dim(k)), fmt.Sprintf("workload.gemm.n=%d", dim(n)))
		if o := pick([]string{"", "bf16", "fp32"}, layout/2); o != "" {
			sets = append(sets, "workload.gemm.out_dtype="+o)
		}
		low("tile_n", size(tileN, 64))
		low("block_m", size(blockM, 128))
		low("block_n", size(blockN, 256))
		low("block_k", size(blockK, 128))
		low("buffers", int(bufs%5))
		low("result_buffers", int(resBufs%4))
		low("psum_banks", int(banks%10))
		sets = append(sets, "workload.lowering.evacuate="+pick([]string{"", "vector", "scalar", "alternate", "auto"}, evac),
			"workload.lowering.transpose="+pick([]string{"", "auto", "dma", "tensor"}, transpose),
			"workload.lowering.loop_order="+pick([]string{"", "nkm", "nmk"}, order),
			"workload.lowering.accumulate_dtype="+pick([]string{"", "fp32", "bf16", "fp16"}, acc))
	} else {
		ops := []string{"exp", "gelu", "silu", "relu", "tanh", "sigmoid", "copy", "square", "sqrt", "rsqrt", "add", "subtract", "multiply", "max"}
		sets = append(sets, "workload.elementwise.op="+pick(ops, layout),
			"workload.elementwise.dtype="+pick([]string{"bf16", "fp16", "fp32"}, dtype),
			fmt.Sprintf("workload.elementwise.rows=%d", dim(m)), fmt.Sprintf("workload.elementwise.cols=%d", 1+int(k)%8192))
		if e := pick([]string{"", "scalar", "vector", "gpsimd"}, evac); e != "" {
			sets = append(sets, "workload.elementwise.engine="+e)
		}
		low("elementwise_free", size(free, 64))
	}
	low("dma_queues", int(queues%5))
	sets = append(sets, "workload.lowering.dge="+pick([]string{"", "auto", "none", "hw"}, dge))
	return sets
}

// checkLowering loads, lowers and runs one config (see FuzzLowering).
func checkLowering(t *testing.T, sets []string) {
	t.Helper()
	kind := "gemm"
	if strings.HasPrefix(sets[1], "workload.elementwise.") {
		kind = "elementwise"
	}
	cfg, err := configs.LoadBytes([]byte("workload: {kind: "+kind+"}\n"), "fuzz.yaml", configs.LoadOptions{Sets: sets})
	if err != nil {
		requireUserError(t, sets, err)
		return
	}
	prog, info, err := Lower(cfg)
	if err != nil {
		requireUserError(t, sets, err)
		return
	}
	res, err := chip.Run(cfg, prog, chip.Options{})
	if err != nil {
		t.Fatalf("%s: the run failed: %v", strings.Join(sets, " "), err)
	}
	simS := float64(res.SimTime) * 1e-15
	if info.FLOPs > 0 {
		if bound := info.FLOPs / tensorPeak(cfg, info); simS < bound*0.999 {
			t.Fatalf("%s: %.3f us is faster than the TensorE peak allows (%.3f us)", strings.Join(sets, " "), simS*1e6, bound*1e6)
		}
	}
	if bound := float64(info.MinHBMBytes) / (cfg.Hardware.Chip.HBM.BandwidthGBps * 1e9); simS < bound*0.999 {
		t.Fatalf("%s: %.3f us is faster than HBM allows for its bytes (%.3f us)", strings.Join(sets, " "), simS*1e6, bound*1e6)
	}
}

// requireUserError fails unless err is a configuration error naming a
// field, and not an internal one.
func requireUserError(t *testing.T, sets []string, err error) {
	t.Helper()
	var ce *configs.Error
	if !errors.As(err, &ce) || strings.Contains(err.Error(), "internal") {
		t.Fatalf("%s: not a configuration error: %v", strings.Join(sets, " "), err)
	}
}

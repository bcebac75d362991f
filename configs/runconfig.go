package configs

import (
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/trnsim/trnsim/internal/memo"
	"github.com/trnsim/trnsim/isa"
)

// RunConfig is one YAML file with four fixed sections: the hardware, the
// workload, the parallel layout (reserved for multi-chip runs) and the
// outputs. After Load it is fully resolved: the preset with every override
// applied, the cost table compiled, and the source of every value recorded.
type RunConfig struct {
	Hardware Hardware `yaml:"hardware"`
	Workload Workload `yaml:"workload"`
	Parallel Parallel `yaml:"parallel"`
	Outputs  Outputs  `yaml:"outputs"`
	// Pricing is the cost section: the user's instance prices.
	Pricing Pricing `yaml:"cost"`

	// File is the config's path ("" for the embedded default).
	File string `yaml:"-"`
	// Costs is the resolved cost table, Cost its compiled form.
	Costs *isa.CostTable `yaml:"-"`
	Cost  *isa.CostModel `yaml:"-"`
	// Sources maps every resolved dotted path to where its value came from.
	Sources map[string]Source `yaml:"-"`
	// Memo, if set, is shared by the configs a process lowers one after
	// another (a sweep's points): work they repeat, such as the GEMM plan
	// search's estimates, is done once. It never changes a result.
	Memo *memo.Memo `yaml:"-" json:"-"`
	// sets are the --set arguments, quoted by errors about their values.
	sets []string
}

// Workload says what to simulate. Kind selects one of the sections.
type Workload struct {
	// Kind is gemm, elementwise, tile, assembly or model.
	Kind string `yaml:"kind"`
	// Name labels the workload in reports.
	Name        string               `yaml:"name"`
	GEMM        *GEMMWorkload        `yaml:"gemm"`
	Elementwise *ElementwiseWorkload `yaml:"elementwise"`
	Assembly    *AssemblyWorkload    `yaml:"assembly"`
	Tile        *TileWorkload        `yaml:"tile"`
	Model       *ModelWorkload       `yaml:"model"`
	Op          *OpWorkload          `yaml:"op"`
	Lowering    Lowering             `yaml:"lowering"`
}

// WorkloadKinds lists the supported workload kinds.
var WorkloadKinds = []string{"gemm", "elementwise", "assembly", "tile", "model", "op"}

// OpWorkload is one op or small block of the model graph, lowered as the
// models are (docs/models.md#single-ops): a norm, an activation, softmax,
// a SwiGLU block, a matmul with a residual and an RMSNorm, or attention.
type OpWorkload struct {
	// Name is layer_norm, rms_norm, silu, gelu, softmax ([m, n] input),
	// swiglu (silu(x Wg) * (x Wu): x [m, k], weights [k, n]),
	// matmul_add_rms_norm (rmsnorm(x W + r): x [m, k], W [k, n]) or
	// attention (batch, seq, heads, kv_heads, head_dim, causal).
	Name    string `yaml:"name"`
	M       int64  `yaml:"m" check:"nonneg"`
	N       int64  `yaml:"n" check:"nonneg"`
	K       int64  `yaml:"k" check:"nonneg"`
	Batch   int64  `yaml:"batch" check:"nonneg"`
	Seq     int64  `yaml:"seq" check:"nonneg"`
	Heads   int64  `yaml:"heads" check:"nonneg"`
	KVHeads int64  `yaml:"kv_heads" check:"nonneg"`
	HeadDim int64  `yaml:"head_dim" check:"nonneg"`
	Causal  bool   `yaml:"causal"`
	DType   string `yaml:"dtype"`
}

// OpNames lists the op workloads.
var OpNames = []string{"layer_norm", "rms_norm", "silu", "gelu", "softmax", "swiglu", "matmul_add_rms_norm", "attention"}

// ModelWorkload is a transformer's inference on one NeuronCore
// (docs/models.md): a zoo model by name, or a Hugging Face config.json.
type ModelWorkload struct {
	// Name is a zoo model (trnsim models lists them); HFConfig the path of
	// a config.json, relative to this file. Give one.
	Name     string `yaml:"name"`
	HFConfig string `yaml:"hf_config"`
	// Mode is prefill (a prompt of Seq tokens) or decode (one token after
	// Context positions in the KV cache, for each of Tokens).
	Mode    string `yaml:"mode"`
	Batch   int64  `yaml:"batch" check:"nonneg"`
	Seq     int64  `yaml:"seq" check:"nonneg"`
	Context int64  `yaml:"context" check:"nonneg"`
	Tokens  int64  `yaml:"tokens" check:"nonneg"`
	// Layers, if set, simulates the first Layers layers only (plus the
	// embedding and the head).
	Layers int64 `yaml:"layers" check:"nonneg"`
	// WeightsDType is the matmul weights' dtype: bf16, int8 (weight-only,
	// dequantised on chip) or fp8e4 (FP8 double-row matmuls where TensorE
	// has them, dequantised elsewhere).
	WeightsDType string `yaml:"weights_dtype"`
	// Exact simulates every layer, copy, rank and decode step; by default
	// six identical layers are simulated and the rest take the inner ones'
	// mean time, copies of parallel.replicas that share no hardware take
	// one's, the ranks of a copy on symmetric hardware a unit's
	// (symmetric-core reuse), and a decode the mean-length step's.
	Exact bool `yaml:"exact"`
	// RoutingSkew is how unevenly a mixture of experts' token picks spread
	// over its experts: 0 (the default) evenly; s > 0 expert i's share in
	// proportion to (i+1)^-s (a Zipf law: 1 makes the first expert take
	// about twice the second's). Which tokens pick which expert is data the
	// simulator does not have; this is the assumption it runs under.
	RoutingSkew float64 `yaml:"routing_skew" check:"nonneg"`
	// GPUs are the GPU baselines the run is compared with (gpu presets;
	// default h100 and b200; [none] turns the comparison off).
	GPUs []string `yaml:"gpus"`
	// GPUCalibration is a calibration file written by
	// scripts/gpu-calibrate.py (docs/gpu.md), relative to this file: its
	// constants replace the GPU model's defaults for the device it was
	// measured on.
	GPUCalibration string `yaml:"gpu_calibration"`
	// GPUPlan, if set, is the GPU baselines' plan: tp GPUs of one
	// NVLink domain per copy (1 to 8), replicas copies (default: the
	// Trainium run's). Unset, each GPU takes the smallest tp whose
	// per-GPU weights and KV cache fit its HBM (docs/gpu.md).
	GPUPlan *GPUPlan `yaml:"gpu_plan"`
}

// GPUPlan is a GPU baseline's plan: tensor parallelism within one node
// and data-parallel replicas.
type GPUPlan struct {
	TP       int `yaml:"tp" check:"pos"`
	Replicas int `yaml:"replicas" check:"pos"`
}

// MaxGPUPlanTP is the most GPUs a GPU plan's tensor parallelism spans:
// one 8-GPU HGX node (gpu.GPUsPerNode; multi-node GPU plans are not
// modelled).
const MaxGPUPlanTP = 8

// GEMMWorkload is C[M,N] = A[M,K] @ B[K,N].
type GEMMWorkload struct {
	M int64 `yaml:"m" check:"pos"`
	K int64 `yaml:"k" check:"pos"`
	N int64 `yaml:"n" check:"pos"`
	// DType of A and B (bf16, fp16, fp32, fp8e4, ...); OutDType of C
	// (defaults to DType).
	DType    string `yaml:"dtype"`
	OutDType string `yaml:"out_dtype"`
	// ALayout is how A sits in HBM: "km" (A stored transposed as [K, M], the
	// NKI lhsT convention: tiles load straight into the stationary layout) or
	// "mk" (row-major [M, K], loaded with transposing DMAs).
	ALayout string `yaml:"a_layout"`
	// Batch is the number of independent GEMMs of this shape (a batched
	// matmul, each with its own A, B and C); 0 or 1: one.
	Batch int64 `yaml:"batch" check:"nonneg"`
	// WeightsDType is B's dtype in HBM when it is quantised (int8, fp8e4,
	// fp8e5, fp8e3): B streams at that width and is dequantised to DType
	// on chip, with per-column scales; default DType (no dequantisation).
	WeightsDType string `yaml:"weights_dtype"`
}

// ElementwiseWorkload applies one elementwise op to a [Rows, Cols] tensor
// (two tensors for binary ops).
type ElementwiseWorkload struct {
	// Op: exp, gelu, silu, relu, tanh, sigmoid, copy (unary, ScalarE by
	// default) or add, subtract, multiply, max (binary, VectorE).
	Op    string `yaml:"op"`
	Rows  int64  `yaml:"rows" check:"pos"`
	Cols  int64  `yaml:"cols" check:"pos"`
	DType string `yaml:"dtype"`
	// Engine overrides the engine: scalar, vector or gpsimd.
	Engine string `yaml:"engine"`
}

// TileWorkload runs a kernel written in the tile IR (docs/tile.md), from a
// file or given inline; the scheduler orders, places and synchronises it.
type TileWorkload struct {
	// File is the kernel's path, relative to the run config.
	File string `yaml:"file"`
	// Source is the kernel's text itself (instead of File).
	Source string `yaml:"source"`
	// Params set the kernel's parameters (its `param NAME = ...` lines) by
	// name, so that sweeps can move them: workload.tile.params.N=4096.
	Params TileParams `yaml:"params"`
}

// TileParams are a tile kernel's parameter values by name.
type TileParams struct {
	Values map[string]int64
	// Order is the names in the order they were given.
	Order []string
}

func (p *TileParams) decodeNode(d *decoder, n *yaml.Node, path string) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	pairs, err := d.mappingPairs(n, path)
	if err != nil {
		return err
	}
	if p.Values == nil {
		p.Values = map[string]int64{}
	}
	for _, kv := range pairs {
		k, v := kv[0], kv[1]
		kp := path + "." + k.Value
		var x int64
		if err := d.decode(v, reflect.ValueOf(&x).Elem(), kp); err != nil {
			return err
		}
		if _, ok := p.Values[k.Value]; !ok {
			p.Order = append(p.Order, k.Value)
		}
		p.Values[k.Value] = x
	}
	return nil
}

// AssemblyWorkload runs a hand-written program, from a file or given inline.
type AssemblyWorkload struct {
	// File is the assembly path, relative to the run config.
	File string `yaml:"file"`
	// Source is the assembly text itself (instead of File).
	Source string `yaml:"source"`
}

// Lowering holds the lowering's choices, so they can be swept. Zero means
// "choose automatically".
type Lowering struct {
	// TileN is the moving free size of each matmul (<= the hardware limit).
	TileN int `yaml:"tile_n" check:"nonneg"`
	// BlockM, BlockN, BlockK are the GEMM block sizes in elements: each block
	// of A (K x M) and B (K x N) is loaded into SBUF once per use.
	BlockM int `yaml:"block_m" check:"nonneg"`
	BlockN int `yaml:"block_n" check:"nonneg"`
	BlockK int `yaml:"block_k" check:"nonneg"`
	// Buffers is the SBUF buffering depth of input blocks: 1 single, 2
	// double, ...
	Buffers int `yaml:"buffers" check:"nonneg"`
	// ResultBuffers is how many result blocks (per M block, in loop order
	// nkm) rotate in SBUF, so storing one overlaps computing the next.
	ResultBuffers int `yaml:"result_buffers" check:"nonneg"`
	// DMAQueues is how many DMA queues each engine that triggers
	// transfers spreads them over.
	DMAQueues int `yaml:"dma_queues" check:"nonneg"`
	// PSUMBanks is how many PSUM banks the lowering may use.
	PSUMBanks int `yaml:"psum_banks" check:"nonneg"`
	// DGE is the descriptor generation for DMAs: none, hw or auto.
	DGE string `yaml:"dge"`
	// Evacuate is the engine that copies PSUM results out: vector, scalar,
	// alternate, or auto (the scheduler chooses by estimated finish time).
	Evacuate string `yaml:"evacuate"`
	// Transpose is how A stored [M, K] (a_layout: mk) is transposed into
	// the stationary layout: dma (DMA transposes, 2- and 4-byte dtypes),
	// tensor (TensorE transposes through PSUM), or auto (dma where it can).
	Transpose string `yaml:"transpose"`
	// MatmulMode is TensorE's matmul mode for the GEMM: normal, double_row
	// (FP8 double-row, fp8e4/fp8e5 on NeuronCore-v3: twice the FLOPs of a
	// BF16 pair in its time) or auto (double_row where the hardware and
	// dtype allow it).
	MatmulMode string `yaml:"matmul_mode"`
	// ElementwiseFree is the free size of each elementwise instruction.
	ElementwiseFree int `yaml:"elementwise_free" check:"nonneg"`
	// LoopOrder is the GEMM block loop order: nkm (K blocks outside M
	// blocks, every M block's result kept in SBUF, B loaded once: the NKI
	// tutorial's kernel) or nmk (one result block at a time, B reloaded per
	// M block). Empty: whichever moves fewer bytes and fits.
	LoopOrder string `yaml:"loop_order"`
	// AccumulateDType is the dtype of SBUF result blocks when K spans
	// several blocks: fp32 (default) or, to save SBUF, bf16/fp16.
	AccumulateDType string `yaml:"accumulate_dtype"`
	// Dequantize is the engine that converts quantised weights
	// (workload.gemm.weights_dtype): vector, scalar, gpsimd, alternate
	// (ScalarE and GpSimd by turns), alternate_scalar (ScalarE two K tiles
	// of three), or auto (the scheduler, per conversion). Empty: the plan
	// search chooses by estimated time.
	Dequantize string `yaml:"dequantize"`
}

// Outputs says what to write besides the summary on standard output. Paths
// are relative to the run config's folder (the embedded default: the working
// directory).
type Outputs struct {
	// JSON writes results.json-style output; CSV one row of totals; Trace a
	// Chrome trace-event timeline; Asm the lowered program.
	JSON  string `yaml:"json"`
	CSV   string `yaml:"csv"`
	Trace string `yaml:"trace"`
	Asm   string `yaml:"asm"`
}

// Parallel is how a model's inference is spread over cores and chips.
type Parallel struct {
	// TP is how many ranks (logical cores, hardware.chip.lnc physical
	// cores each) one copy of the model is split over, Megatron-style.
	TP int `yaml:"tp" check:"pos"`
	// Replicas is how many data-parallel copies of the model run side by
	// side, each on its own TP ranks.
	Replicas int `yaml:"replicas" check:"pos"`
	// CollectiveAlgorithm is auto (by message size, as the Neuron runtime
	// chooses: mesh, recursive halving/doubling, ring), ring, rdh or mesh.
	CollectiveAlgorithm string `yaml:"collective_algorithm"`
}

// CollectiveAlgorithms are the values parallel.collective_algorithm takes.
var CollectiveAlgorithms = []string{"auto", "ring", "rdh", "mesh"}

// Ranks returns the logical cores the plan uses: TP x Replicas.
func (p *Parallel) Ranks() int { return max(p.TP, 1) * max(p.Replicas, 1) }

func reflectValue(ptr any) reflect.Value { return reflect.ValueOf(ptr).Elem() }

// SetArgs returns the --set arguments whose path is prefix or lies under
// it, as "path=value" with the path relative to prefix, in the order they
// were given (for reports that say what a --set changed).
func (c *RunConfig) SetArgs(prefix string) []string {
	var out []string
	for _, s := range c.sets {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			continue
		}
		p, v := strings.TrimSpace(s[:eq]), strings.TrimSpace(s[eq+1:])
		switch {
		case p == prefix:
			out = append(out, p[strings.LastIndexByte(p, '.')+1:]+"="+v)
		case strings.HasPrefix(p, prefix+"."):
			out = append(out, strings.TrimPrefix(p, prefix+".")+"="+v)
		}
	}
	return out
}

package workloads

import (
	"fmt"
	"math"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/graph"
	"github.com/trnsim/trnsim/workloads/lowergraph"
	"github.com/trnsim/trnsim/workloads/nn"
)

// opFit blames what does not fit on the op's sizes.
var opFit = map[isa.Memory][]string{
	isa.MemSBUF: {"hardware.core.sbuf.partition_kib", "workload.op.n", "workload.op.k", "workload.op.seq"},
	isa.MemPSUM: {"hardware.core.psum.partition_kib", "hardware.core.psum.banks"},
	isa.MemHBM:  {"workload.op.m", "workload.op.n", "workload.op.k", "workload.op.seq", "hardware.chip.hbm.stack_gib"},
}

// opGraph builds the graph of an op workload.
func opGraph(o *configs.OpWorkload) (*graph.Graph, []Dim, error) {
	dt, _ := isa.ParseDType(o.DType)
	b := graph.NewBuilder()
	var dims []Dim
	switch o.Name {
	case "layer_norm", "rms_norm", "silu", "gelu", "softmax":
		dims = []Dim{{"m", o.M}, {"n", o.N}}
		x := b.Input("x", []int64{o.M, o.N}, dt)
		var y *graph.Tensor
		switch o.Name {
		case "layer_norm":
			y = nn.NewLayerNorm(b, "norm", o.N, true, 1e-5, dt).Forward(b, x)
		case "rms_norm":
			y = nn.NewRMSNorm(b, "norm", o.N, 1e-6, dt).Forward(b, x)
		case "silu":
			y = nn.Act(b, "silu", nn.ActSiLU, x)
		case "gelu":
			y = nn.Act(b, "gelu", nn.ActGELU, x)
		case "softmax":
			y = b.Add(graph.Softmax, "softmax", graph.Attrs{Axis: -1}, x)
		}
		b.Output(y)
	case "swiglu":
		dims = []Dim{{"m", o.M}, {"k", o.K}, {"n", o.N}}
		x := b.Input("x", []int64{o.M, o.K}, dt)
		gate := nn.NewLinear(b, "gate_proj", o.K, o.N, false, dt, dt).Forward(b, x)
		up := nn.NewLinear(b, "up_proj", o.K, o.N, false, dt, dt).Forward(b, x)
		b.Output(b.Add(graph.SwiGLU, "act_fn", graph.Attrs{}, gate, up))
	case "matmul_add_rms_norm":
		dims = []Dim{{"m", o.M}, {"k", o.K}, {"n", o.N}}
		x := b.Input("x", []int64{o.M, o.K}, dt)
		r := b.Input("residual", []int64{o.M, o.N}, dt)
		h := nn.NewLinear(b, "proj", o.K, o.N, false, dt, dt).Forward(b, x)
		h = b.Add(graph.AddOp, "residual_add", graph.Attrs{}, h, r)
		b.Output(nn.NewRMSNorm(b, "norm", o.N, 1e-6, dt).Forward(b, h))
	case "attention":
		dims = []Dim{{"batch", o.Batch}, {"seq", o.Seq}, {"heads", o.Heads}, {"kv_heads", o.KVHeads}, {"head_dim", o.HeadDim}}
		q := b.Input("q", []int64{o.Batch, o.Seq, o.Heads * o.HeadDim}, dt)
		k := b.Input("k", []int64{o.Batch, o.Seq, o.KVHeads * o.HeadDim}, dt)
		v := b.Input("v", []int64{o.Batch, o.Seq, o.KVHeads * o.HeadDim}, dt)
		heads := func(name string, t *graph.Tensor, h int64) *graph.Tensor {
			t = nn.Reshape(b, name+".view", t, o.Batch, o.Seq, h, o.HeadDim)
			return nn.Permute(b, name+".transpose", t, 0, 2, 1, 3)
		}
		att := b.Add(graph.SDPA, "attn", graph.Attrs{Causal: o.Causal, Scale: 1 / math.Sqrt(float64(o.HeadDim))},
			heads("q", q, o.Heads), heads("k", k, o.KVHeads), heads("v", v, o.KVHeads))
		att = nn.Permute(b, "attn.transpose", att, 0, 2, 1, 3)
		b.Output(nn.Reshape(b, "attn.view", att, o.Batch, o.Seq, o.Heads*o.HeadDim))
	default:
		return nil, nil, fmt.Errorf("unknown op %q", o.Name)
	}
	g, err := b.Graph()
	return g, dims, err
}

func lowerOp(cfg *configs.RunConfig) (*isa.Program, *Info, error) {
	o := cfg.Workload.Op
	g, dims, err := opGraph(o)
	if err != nil {
		return nil, nil, cfg.FieldError("workload.op", "%v", err)
	}
	res, err := lowergraph.Lower(g, graphTarget(cfg), o.Name, lowergraph.Options{})
	if err != nil {
		return nil, nil, cfg.FieldError("workload.op", "%v", err)
	}
	p, err := compileOps(cfg, res.Kernel, opFit, res.Ops)
	if err != nil {
		return nil, nil, err
	}
	dt, _ := isa.ParseDType(o.DType)
	name := cfg.Workload.Name
	if name == "" {
		name = fmt.Sprintf("%s %s", o.Name, o.DType)
	}
	var writes int64
	for _, t := range g.Tensors {
		if t.Role == graph.Output {
			writes += t.Bytes()
		}
	}
	info := &Info{Name: name, Kind: "op", DType: dt, CoresUsed: len(p.Cores), FLOPs: float64(g.FLOPs()), MinHBMBytes: g.MinHBMBytes(),
		MinHBMWriteBytes: writes, Shape: dims, Notes: res.Notes, Choices: []Choice{queueChoice(cfg)}}
	for _, op := range res.Ops {
		info.Ops = append(info.Ops, Op{ID: op.ID, Name: op.Name, Kind: op.Kind, FLOPs: float64(op.FLOPs)})
	}
	return p.Program, info, nil
}

package nn

import (
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/graph"
)

// MLPConfig is a transformer's feed-forward block: gated (SwiGLU: gate,
// up and down projections, as Llama's) or plain (up, activation, down, as
// GPT-2's and BERT's).
type MLPConfig struct {
	Hidden, Intermediate int64
	Gated                bool
	Act                  Activation
	Bias                 bool
	// Names of the projections: gate_proj, up_proj, down_proj (Llama),
	// c_fc and c_proj (GPT-2), intermediate.dense and output.dense (BERT).
	GateName, UpName, DownName string
}

// MLP is the block's parameters.
type MLP struct {
	Cfg            MLPConfig
	Gate, Up, Down *Linear
}

// NewMLP makes the projections.
func NewMLP(b *graph.Builder, c MLPConfig, wdt, adt isa.DType) *MLP {
	m := &MLP{Cfg: c}
	if c.Gated {
		m.Gate = NewLinear(b, c.GateName, c.Hidden, c.Intermediate, c.Bias, wdt, adt)
	}
	m.Up = NewLinear(b, c.UpName, c.Hidden, c.Intermediate, c.Bias, wdt, adt)
	m.Down = NewLinear(b, c.DownName, c.Intermediate, c.Hidden, c.Bias, wdt, adt)
	return m
}

// Forward is down(act(gate(x)) * up(x)), or down(act(up(x))).
func (m *MLP) Forward(b *graph.Builder, x *graph.Tensor) *graph.Tensor {
	up := m.Up.Forward(b, x)
	var h *graph.Tensor
	if m.Cfg.Gated {
		gate := m.Gate.Forward(b, x)
		if m.Cfg.Act == ActSiLU {
			h = b.Add(graph.SwiGLU, "act_fn", graph.Attrs{}, gate, up)
		} else {
			h = b.Add(graph.MulOp, "act_mul", graph.Attrs{}, Act(b, "act_fn", m.Cfg.Act, gate), up)
		}
	} else {
		h = Act(b, "act_fn", m.Cfg.Act, up)
	}
	return m.Down.Forward(b, h)
}

// MoEConfig is a sparse mixture-of-experts block (Mixtral's): a router
// scores Experts gated MLPs per token, the top TopK run, and their outputs
// are summed by the router's softmaxed weights.
type MoEConfig struct {
	Hidden, Intermediate, Experts, TopK int64
	Act                                 Activation
	// ReduceRanks > 1: the experts' intermediate dim is this rank's slice
	// and the outputs are summed over the ranks.
	ReduceRanks int64
	// RoutingSkew is the routing assumption (graph.Attrs.RoutingSkew).
	RoutingSkew float64
}

// MoE is the block's parameters: the router ("gate" in Mixtral) and the
// experts' weights stacked [experts, ...].
type MoE struct {
	Cfg            MoEConfig
	Router         *Linear
	Gate, Up, Down *graph.Tensor
}

// NewMoE makes the router and the stacked expert weights (Mixtral's
// experts.N.w1, w3 and w2).
func NewMoE(b *graph.Builder, c MoEConfig, wdt, adt isa.DType) *MoE {
	m := &MoE{Cfg: c}
	m.Router = NewLinear(b, "gate", c.Hidden, c.Experts, false, wdt, adt)
	b.Scope("experts", func() {
		m.Gate = b.Param("w1", []int64{c.Experts, c.Intermediate, c.Hidden}, wdt)
		m.Up = b.Param("w3", []int64{c.Experts, c.Intermediate, c.Hidden}, wdt)
		m.Down = b.Param("w2", []int64{c.Experts, c.Hidden, c.Intermediate}, wdt)
	})
	return m
}

// Forward routes x [batch, seq, hidden] through the experts.
func (m *MoE) Forward(b *graph.Builder, x *graph.Tensor) *graph.Tensor {
	c := m.Cfg
	shape := x.Shape
	tokens := Reshape(b, "tokens", x, shape[0]*shape[1], c.Hidden)
	logits := m.Router.Forward(b, tokens)
	probs := b.Add(graph.Softmax, "router_softmax", graph.Attrs{Axis: -1}, logits)
	top := b.AddMulti(graph.TopK, "router_topk", graph.Attrs{TopK: c.TopK}, probs)
	out := b.Add(graph.MoEExperts, "experts", graph.Attrs{Experts: c.Experts, TopK: c.TopK, RoutingSkew: c.RoutingSkew}, tokens, top[0], top[1], m.Gate, m.Up, m.Down)
	if c.ReduceRanks > 1 {
		out = b.Add(graph.AllReduce, "experts.all_reduce", graph.Attrs{Ranks: c.ReduceRanks}, out)
	}
	return Reshape(b, "view", out, shape...)
}

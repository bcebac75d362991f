// Package graph is the op graph models are written in, in PyTorch's
// vocabulary: tensors with shapes, dtypes and roles (parameter,
// activation, KV cache, input, output), ops from a registry of kinds
// (Linear, MatMul, Embedding, norms, activations, RoPE, attention, KV-cache
// appends, top-k, mixture-of-experts), shape inference whose errors name
// the op and both shapes, and FLOPs and least HBM bytes per op and for the
// whole graph. Package nn composes it into modules; kernels lower it.
package graph

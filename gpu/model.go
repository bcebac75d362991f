package gpu

import (
	"fmt"
	"math"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/graph"
)

// Calibration is the model's constants, shared by every device: only the
// sourced specs differ per device. Default derives each from one stated
// row of gpu.md (see Fit); the other rows check it (Checks).
type Calibration struct {
	// MatmulEff is a large, well-tiled matmul's share of the tensor
	// peak in the waves it fills.
	MatmulEff float64
	// StreamEff is a streaming kernel's share of HBM bandwidth (norms,
	// elementwise ops, copies, cache appends, decode attention).
	StreamEff float64
	// GEMVEff is the share of HBM bandwidth a matmul reaches when
	// streaming its weights bounds it (skinny GEMMs, decode).
	GEMVEff float64
	// AttnEff is fused (FlashAttention-style) attention's share of the
	// tensor peak when compute bounds it.
	AttnEff float64
	// LaunchUs is the cost of each kernel beyond its work: launch and the
	// gap between kernels [I: 2 µs, CUDA graphs and back-to-back kernels;
	// no row of gpu.md isolates it].
	LaunchUs float64
}

// Bound names what decides an op's time on the GPU.
type Bound string

// The bounds.
const (
	BoundCompute Bound = "compute"
	BoundMemory  Bound = "memory"
	BoundLaunch  Bound = "launch"
	BoundNVLink  Bound = "nvlink" // a collective between the plan's GPUs
	BoundNone    Bound = "none"   // a view: no kernel
)

// OpTime is one op's estimate.
type OpTime struct {
	Name, Kind string
	TimeS      float64
	Bound      Bound
	// FLOPs and Bytes are what the estimate counted (a collective's
	// Bytes are its message).
	FLOPs, Bytes float64
	// Algorithm and Protocol are a collective's, the fastest NCCL has
	// for its message (CollectiveTime); empty for other ops.
	Algorithm Algorithm
	Protocol  string
}

// Estimate is a graph's time on one GPU: its ops one after another, as
// one stream runs the kernels.
type Estimate struct {
	Device Device
	Ops    []OpTime
	TimeS  float64
	// LaunchS is the part of TimeS that is kernel launches; CommS the
	// collectives' (NVLink: the graph of one tensor-parallel rank waits
	// for each, so none overlaps) and Collectives their count.
	LaunchS, CommS float64
	Collectives    int
}

// matmulShape is a matmul op's rows, contraction, columns and batch.
func matmulShape(o *graph.Op) (m, k, n, batch int64) {
	switch o.Kind {
	case graph.Linear:
		x, w := o.Inputs[0], o.Inputs[1]
		return x.Elements() / w.Shape[1], w.Shape[1], w.Shape[0], 1
	case graph.MatMul:
		a, b := o.Inputs[0], o.Inputs[1]
		r := len(a.Shape)
		m, k, n = a.Shape[r-2], a.Shape[r-1], b.Shape[r-1]
		return m, k, n, a.Elements() / (m * k)
	}
	return 0, 0, 0, 0
}

// waveEff is the share of SM time a grid of tiles uses: tiles over
// waves × SMs (a tile count just over a multiple of the SMs pays for an
// almost empty wave).
func (d Device) waveEff(tiles int64) float64 {
	if tiles <= 0 {
		return 1
	}
	waves := (tiles + int64(d.SMs) - 1) / int64(d.SMs)
	return float64(tiles) / float64(waves*int64(d.SMs))
}

// MatmulTime is a GEMM's time: the larger of its FLOPs at the peak times
// MatmulEff in the waves its tiles fill (tile quantisation included: edge
// tiles are whole; a matmul of few rows takes a tile of as few rows as
// the tensor cores allow, 16), and its bytes at GEMVEff of the bandwidth,
// plus a launch.
func (c Calibration) MatmulTime(d Device, m, k, n, batch int64, dt, out isa.DType) (float64, Bound) {
	// Few rows get a kernel with a shorter tile, down to the tensor
	// cores' 16-row MMA (small-M and GEMV kernels); otherwise the CTA tile.
	tileM := d.TileM
	for tileM > 16 && tileM/2 >= m {
		tileM /= 2
	}
	tm, tn := (m+tileM-1)/tileM, (n+d.TileN-1)/d.TileN
	tiles := tm * tn * batch
	// Padded work: the edge tiles run whole.
	flops := 2 * float64(tm*tileM) * float64(tn*d.TileN) * float64(k) * float64(batch)
	compute := flops / (d.Peak(dt) * c.MatmulEff * d.waveEff(tiles))
	bytes := float64(batch) * (float64(m*k+k*n)*float64(dt.Bytes()) + float64(m*n)*float64(out.Bytes()))
	memory := bytes / (d.HBMGBps * 1e9 * c.GEMVEff)
	launch := c.LaunchUs * 1e-6
	if compute >= memory {
		return launch + compute, BoundCompute
	}
	return launch + memory, BoundMemory
}

// StreamTime is a streaming kernel's time for its bytes.
func (c Calibration) StreamTime(d Device, bytes float64) (float64, Bound) {
	t := bytes / (d.HBMGBps * 1e9 * c.StreamEff)
	launch := c.LaunchUs * 1e-6
	if t < launch {
		return launch + t, BoundLaunch
	}
	return launch + t, BoundMemory
}

// AttentionTime is fused attention: its FLOPs at AttnEff of the peak, or
// its q, k, v and output bytes streamed.
func (c Calibration) AttentionTime(d Device, flops, bytes float64, dt isa.DType) (float64, Bound) {
	compute := flops / (d.Peak(dt) * c.AttnEff)
	memory := bytes / (d.HBMGBps * 1e9 * c.StreamEff)
	launch := c.LaunchUs * 1e-6
	if compute >= memory {
		return launch + compute, BoundCompute
	}
	return launch + memory, BoundMemory
}

// Estimate times every op of g on d.
func (c Calibration) Estimate(g *graph.Graph, d Device) (*Estimate, error) {
	e := &Estimate{Device: d}
	for _, o := range g.Ops {
		ot := OpTime{Name: o.Name, Kind: string(o.Kind), FLOPs: float64(o.FLOPs()), Bytes: float64(o.MinHBMBytes())}
		switch o.Kind {
		case graph.Reshape, graph.Permute, graph.Split:
			ot.Bound, ot.Bytes = BoundNone, 0 // views (a split of the last position or of q, k, v is a strided view)
		case graph.Linear, graph.MatMul:
			m, k, n, batch := matmulShape(o)
			dt := o.Inputs[1].DType
			ot.TimeS, ot.Bound = c.MatmulTime(d, m, k, n, batch, dt, o.Outputs[0].DType)
			if o.Kind == graph.Linear && o.Inputs[2] != nil {
				ot.TimeS += 0 // the bias is the GEMM's epilogue (cuBLASLt)
			}
		case graph.MoEExperts:
			// Each expert reached runs its three projections on its share.
			x := o.Inputs[0]
			groups, projs := expertMatmuls(o)
			dt := o.Inputs[3].DType
			for _, gr := range groups { // the experts of one share: one batched matmul
				for _, kn := range projs {
					tt, _ := c.MatmulTime(d, gr.Share, kn[0], kn[1], gr.Experts, dt, x.DType)
					ot.TimeS += tt
				}
			}
			ot.Bound = BoundMemory
			if ot.FLOPs/(d.Peak(dt)*c.MatmulEff) > ot.Bytes/(d.HBMGBps*1e9*c.GEMVEff) {
				ot.Bound = BoundCompute
			}
		case graph.SDPA:
			ot.TimeS, ot.Bound = c.AttentionTime(d, ot.FLOPs, ot.Bytes, o.Inputs[0].DType)
		case graph.AllReduce, graph.AllGather:
			// NCCL between the rank's GPUs: an all-reduce's buffer, an
			// all-gather's gathered result.
			msg := o.Inputs[0]
			if o.Kind == graph.AllGather {
				msg = o.Outputs[0]
			}
			ct, err := d.CollectiveTime(Collective(o.Kind), float64(msg.Bytes()), int(o.Attrs.Ranks))
			if err != nil {
				return nil, fmt.Errorf("%s (%s): %w", o.Name, o.Kind, err)
			}
			ot.TimeS, ot.Bound, ot.Bytes, ot.Algorithm, ot.Protocol = ct.TimeS, BoundNVLink, ct.Bytes, ct.Algorithm, ct.Protocol
			e.CommS += ct.TimeS
			e.Collectives++
		default:
			if _, known := map[graph.Kind]bool{graph.Embedding: true, graph.LayerNorm: true, graph.RMSNorm: true, graph.Softmax: true,
				graph.GELU: true, graph.SiLU: true, graph.ReLU: true, graph.Tanh: true, graph.SwiGLU: true, graph.AddOp: true,
				graph.MulOp: true, graph.RoPE: true, graph.KVAppend: true, graph.TopK: true}[o.Kind]; !known {
				return nil, fmt.Errorf("%s (%s): no GPU model for this op kind", o.Name, o.Kind)
			}
			ot.TimeS, ot.Bound = c.StreamTime(d, ot.Bytes)
		}
		switch {
		case ot.Bound == BoundNone || ot.Bound == BoundNVLink:
		case o.Kind == graph.MoEExperts:
			e.LaunchS += 3 * c.LaunchUs * 1e-6 // three grouped GEMMs
		default:
			e.LaunchS += c.LaunchUs * 1e-6
		}
		e.Ops = append(e.Ops, ot)
		e.TimeS += ot.TimeS
	}
	if math.IsNaN(e.TimeS) || math.IsInf(e.TimeS, 0) {
		return nil, fmt.Errorf("internal error: GPU estimate %v", e.TimeS)
	}
	return e, nil
}

// expertGroup is the experts reached that receive one share of the
// tokens' picks.
type expertGroup struct{ Share, Experts int64 }

// expertMatmuls returns a mixture-of-experts op's experts reached, grouped
// by their share of the tokens' picks (graph.Op.ExpertShares: one group
// under balanced routing), largest first, and the [K, N] of each one's three
// projections (gate and up, then down).
func expertMatmuls(o *graph.Op) ([]expertGroup, [3][2]int64) {
	h, f := o.Inputs[0].Shape[1], o.Inputs[3].Shape[1]
	var groups []expertGroup
	for _, sh := range o.ExpertShares() {
		if n := len(groups); n > 0 && groups[n-1].Share == sh {
			groups[n-1].Experts++
			continue
		}
		groups = append(groups, expertGroup{Share: sh, Experts: 1})
	}
	return groups, [3][2]int64{{h, f}, {h, f}, {f, h}}
}

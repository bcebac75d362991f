package gpu

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/graph"
)

// CalibrationFormat is the format field of a calibration file written by
// scripts/gpu-calibrate.py (docs/gpu.md#calibrating-on-a-real-gpu).
const CalibrationFormat = "trnsim-gpu-calibration/1"

// OpsFormat is the format field of the op-shapes file trnsim run
// --gpu-ops writes for the script.
const OpsFormat = "trnsim-gpu-ops/1"

// CalibrationFile is a calibration measured on one GPU: the constants the
// baseline model uses for that device instead of Default's.
type CalibrationFile struct {
	Format string `json:"format"`
	// Example, when set, says the file is an example, not a measurement
	// (the committed examples/gpu-calibration-h100.json).
	Example string `json:"example,omitempty"`
	// Device is what it was measured on.
	Device CalibrationDevice `json:"device"`
	// Workload names the run config whose shapes were timed; Measured
	// when (free text, the script writes UTC ISO 8601).
	Workload string `json:"workload,omitempty"`
	Measured string `json:"measured,omitempty"`
	// Constants are the fitted constants; Fit says how each was obtained
	// (fitted on which rows, or kept at the default).
	Constants CalibrationConstants `json:"constants"`
	Fit       map[string]string    `json:"fit,omitempty"`
	// Timings are the raw per-shape timings the constants were solved
	// from (optional).
	Timings []Timing `json:"timings,omitempty"`
	// Path is the file read (not in the file).
	Path string `json:"-"`
}

// CalibrationDevice is the GPU a calibration was measured on: a preset
// name (Devices) and the software that ran it.
type CalibrationDevice struct {
	Name string `json:"name"`
	// GPU is the name the driver reports (torch.cuda.get_device_name);
	// Torch, CUDA and Driver the versions.
	GPU    string `json:"gpu,omitempty"`
	Torch  string `json:"torch,omitempty"`
	CUDA   string `json:"cuda,omitempty"`
	Driver string `json:"driver,omitempty"`
}

// CalibrationConstants are Calibration's fields as a file spells them.
type CalibrationConstants struct {
	MatmulEff float64 `json:"matmul_eff"`
	StreamEff float64 `json:"stream_eff"`
	GEMVEff   float64 `json:"gemv_eff"`
	AttnEff   float64 `json:"attn_eff"`
	LaunchUs  float64 `json:"launch_us"`
}

// Calibration returns the constants as a Calibration.
func (c CalibrationConstants) Calibration() Calibration {
	return Calibration{MatmulEff: c.MatmulEff, StreamEff: c.StreamEff, GEMVEff: c.GEMVEff, AttnEff: c.AttnEff, LaunchUs: c.LaunchUs}
}

// Constants returns a Calibration's constants as a file spells them.
func (c Calibration) Constants() CalibrationConstants {
	return CalibrationConstants{MatmulEff: c.MatmulEff, StreamEff: c.StreamEff, GEMVEff: c.GEMVEff, AttnEff: c.AttnEff, LaunchUs: c.LaunchUs}
}

// OpShape is one kernel shape of a graph as the model times it, with how
// many of the graph's ops have it (Count; Op names the first). A timing
// is an OpShape with its measured mean time.
type OpShape struct {
	Op    string `json:"op"`
	Count int    `json:"count"`
	// Kind is the model's class: matmul, attention, stream or launch (an
	// empty kernel, for LaunchUs); GraphKind the graph op's kind.
	Kind      string `json:"kind"`
	GraphKind string `json:"graph_kind,omitempty"`
	// Matmul: M x K times K x N, Batch times; DType the weights' (the
	// operands'), OutDType the result's.
	M        int64  `json:"m,omitempty"`
	K        int64  `json:"k,omitempty"`
	N        int64  `json:"n,omitempty"`
	Batch    int64  `json:"batch,omitempty"`
	DType    string `json:"dtype,omitempty"`
	OutDType string `json:"out_dtype,omitempty"`
	// Attention: q [batch, heads, q_len, head_dim], k and v [batch,
	// kv_heads, kv_len, head_dim]; Past positions before the queries.
	Heads   int64 `json:"heads,omitempty"`
	KVHeads int64 `json:"kv_heads,omitempty"`
	QLen    int64 `json:"q_len,omitempty"`
	KVLen   int64 `json:"kv_len,omitempty"`
	HeadDim int64 `json:"head_dim,omitempty"`
	Past    int64 `json:"past,omitempty"`
	Causal  bool  `json:"causal,omitempty"`
	// Stream: the graph op's input and output shapes (for the script to
	// run the real op; it copies the same bytes for kinds it lacks).
	Inputs  [][]int64 `json:"inputs,omitempty"`
	Outputs [][]int64 `json:"outputs,omitempty"`
	// FLOPs and Bytes are what the model counts for the shape.
	FLOPs float64 `json:"flops,omitempty"`
	Bytes float64 `json:"bytes,omitempty"`
	// TimeS is a timing's measured mean time per kernel, launch included
	// (0 in an ops file); Source says where a timing comes from when it
	// is not a measurement by the script.
	TimeS  float64 `json:"time_s,omitempty"`
	Source string  `json:"source,omitempty"`
}

// Timing is a measured OpShape.
type Timing = OpShape

// OpsFile is what trnsim run --gpu-ops writes: a workload's kernel shapes
// for scripts/gpu-calibrate.py, with the reference shapes Fit's rows use
// and the presets' specs the script fits against.
type OpsFile struct {
	Format    string                `json:"format"`
	Version   string                `json:"trnsim_version"`
	Workload  string                `json:"workload"`
	Config    string                `json:"config"`
	Defaults  CalibrationConstants  `json:"defaults"`
	Devices   map[string]DeviceSpec `json:"devices"`
	Ops       []OpShape             `json:"ops"`
	Reference []OpShape             `json:"reference"`
	// Skipped are the graph's ops the baseline does not time as kernels
	// (views) or that one GPU does not run (collectives).
	Skipped int `json:"skipped"`
}

// DeviceSpec is a preset's specs as the script reads them.
type DeviceSpec struct {
	Title      string             `json:"title"`
	SMs        int                `json:"sms"`
	TileM      int64              `json:"tile_m"`
	TileN      int64              `json:"tile_n"`
	PeakTFLOPS map[string]float64 `json:"peak_tflops"`
	HBMGBps    float64            `json:"hbm_gbps"`
}

// Specs returns every preset's specs for an ops file.
func Specs() map[string]DeviceSpec {
	out := map[string]DeviceSpec{}
	for name, d := range devices {
		peaks := map[string]float64{}
		for dt, p := range d.PeakTFLOPS {
			peaks[dt.String()] = p
		}
		out[name] = DeviceSpec{Title: d.Title, SMs: d.SMs, TileM: d.TileM, TileN: d.TileN, PeakTFLOPS: peaks, HBMGBps: d.HBMGBps}
	}
	return out
}

// Shapes returns the shape of every op of g, deduplicated in order of
// first appearance, and how many ops were skipped.
func Shapes(g *graph.Graph) ([]OpShape, int) {
	var out []OpShape
	index := map[string]int{}
	skipped := 0
	add := func(s OpShape) {
		s.Count = 1
		key := s.key()
		if i, ok := index[key]; ok {
			out[i].Count++
			return
		}
		index[key] = len(out)
		out = append(out, s)
	}
	for _, o := range g.Ops {
		base := OpShape{Op: o.Name, GraphKind: string(o.Kind), FLOPs: float64(o.FLOPs()), Bytes: float64(o.MinHBMBytes())}
		switch o.Kind {
		case graph.Linear, graph.MatMul:
			m, k, n, batch := matmulShape(o)
			s := base
			s.Kind, s.M, s.K, s.N, s.Batch = "matmul", m, k, n, batch
			s.DType, s.OutDType = o.Inputs[1].DType.String(), o.Outputs[0].DType.String()
			add(s)
		case graph.MoEExperts:
			x := o.Inputs[0]
			groups, projs := expertMatmuls(o)
			for gi, gr := range groups {
				share, touched := gr.Share, gr.Experts
				for i, kn := range projs {
					s := base
					s.Op = fmt.Sprintf("%s.expert_matmul_%d", o.Name, i)
					if len(groups) > 1 {
						s.Op = fmt.Sprintf("%s.expert_matmul_%d_%d", o.Name, gi, i)
					}
					s.Kind, s.M, s.K, s.N, s.Batch = "matmul", share, kn[0], kn[1], touched
					s.DType, s.OutDType = o.Inputs[3].DType.String(), x.DType.String()
					s.FLOPs = 2 * float64(share*kn[0]*kn[1]*touched)
					s.Bytes = float64(touched) * float64(share*kn[0]+kn[0]*kn[1]+share*kn[1]) * float64(o.Inputs[3].DType.Bytes())
					add(s)
				}
			}
		case graph.SDPA:
			q, k := o.Inputs[0], o.Inputs[1]
			s := base
			s.Kind, s.Batch, s.Heads, s.QLen, s.HeadDim = "attention", q.Shape[0], q.Shape[1], q.Shape[2], q.Shape[3]
			s.KVHeads, s.KVLen, s.Past, s.Causal, s.DType = k.Shape[1], k.Shape[2], o.Attrs.Past, o.Attrs.Causal, q.DType.String()
			add(s)
		case graph.Reshape, graph.Permute, graph.Split:
			skipped++
		default:
			if !streamKinds[o.Kind] {
				skipped++ // collectives and kinds one GPU's kernels do not model
				continue
			}
			s := base
			s.Kind, s.DType = "stream", o.Outputs[0].DType.String()
			for _, in := range o.Inputs {
				if in != nil {
					s.Inputs = append(s.Inputs, in.Shape)
				}
			}
			for _, t := range o.Outputs {
				s.Outputs = append(s.Outputs, t.Shape)
			}
			add(s)
		}
	}
	return out, skipped
}

// streamKinds are the ops Estimate times as streaming kernels.
var streamKinds = map[graph.Kind]bool{graph.Embedding: true, graph.LayerNorm: true, graph.RMSNorm: true, graph.Softmax: true,
	graph.GELU: true, graph.SiLU: true, graph.ReLU: true, graph.Tanh: true, graph.SwiGLU: true, graph.AddOp: true,
	graph.MulOp: true, graph.RoPE: true, graph.KVAppend: true, graph.TopK: true}

// key identifies a shape for deduplication (everything but the names and
// the count).
func (s OpShape) key() string {
	c := s
	c.Op, c.Count, c.TimeS, c.Source = "", 0, 0, ""
	b, _ := json.Marshal(c)
	return string(b)
}

// ReferenceShapes are the shapes of Fit's rows, so a calibration can fit
// every constant even when the workload has no op of a class (a decode
// has no compute-bound matmul): the MAMF GEMM, a large copy, the skinny
// GEMM and a long FlashAttention run, plus an empty kernel for LaunchUs.
func ReferenceShapes() []OpShape {
	copyBytes := 2 * float64(int64(1)<<30) // a 1 GiB copy: read and written
	attn := OpShape{Op: "reference.flash_attention", Count: 1, Kind: "attention", GraphKind: string(graph.SDPA),
		Batch: 4, Heads: 16, KVHeads: 16, QLen: 4096, KVLen: 4096, HeadDim: 128, DType: "bf16",
		Source: "gpu.md §2.4 [S17] FlashAttention-3's shape class: 16 heads of 128, 16k tokens a batch, no mask"}
	attn.FLOPs = float64(attn.Batch*attn.Heads*attn.QLen*attn.KVLen) * float64(2*attn.HeadDim+2*attn.HeadDim+5)
	attn.Bytes = float64(4*attn.Batch*attn.Heads*attn.QLen*attn.HeadDim) * 2
	return []OpShape{
		{Op: "reference.launch", Count: 1, Kind: "launch", Source: "an empty kernel: launch and the gap between kernels"},
		{Op: "reference.mamf_gemm", Count: 1, Kind: "matmul", GraphKind: string(graph.MatMul), M: 2048, K: 13312, N: 2048, Batch: 1, DType: "bf16", OutDType: "bf16",
			FLOPs: 2 * 2048 * 13312 * 2048, Bytes: float64(2048*13312+13312*2048+2048*2048) * 2, Source: "gpu.md §2.1 [S6]: the H100 BF16 MAMF shape"},
		{Op: "reference.copy", Count: 1, Kind: "stream", GraphKind: "copy", DType: "bf16", Inputs: [][]int64{{1 << 29}}, Outputs: [][]int64{{1 << 29}},
			Bytes: copyBytes, Source: "gpu.md §2.2: a device-to-device copy, bytes read plus written"},
		{Op: "reference.skinny_gemm", Count: 1, Kind: "matmul", GraphKind: string(graph.Linear), M: 16, K: 4096, N: 14336, Batch: 1, DType: "bf16", OutDType: "bf16",
			FLOPs: 2 * 16 * 4096 * 14336, Bytes: float64(16*4096+4096*14336+16*14336) * 2, Source: "gpu.md §2.1 [S18]: CUTLASS #1139's 16x14336x4096 (BF16 here: FP8 matmuls need torch._scaled_mm)"},
		attn,
	}
}

// minWorkShare is how much of a timing must be work, not launch, for it
// to count in a fit: at least as long as a launch again.
const minWorkShare = 2.0

// FitTimings solves the constants from timings on d, the way Fit solves
// Default's from gpu.md's rows, generalised to many rows: LaunchUs is the
// empty kernels' mean time; then each efficiency is the one at which the
// model reproduces the total time of the rows it decides (count-weighted:
// the sum of their work at full efficiency over the sum of their times
// less a launch each), the rows classed by the bound the model gives them
// with the constants so far (start, then the last pass's), to a fixed
// point. A constant without a usable row (none longer than twice the
// launch) keeps start's value; notes say, per constant, which.
// scripts/gpu-calibrate.py implements the same fit.
func FitTimings(d Device, rows []Timing, start Calibration) (Calibration, map[string]string, error) {
	c := start
	notes := map[string]string{}
	var launchSum, launchN float64
	for _, r := range rows {
		if r.Kind == "launch" && r.TimeS > 0 {
			launchSum += r.TimeS * float64(max(r.Count, 1))
			launchN += float64(max(r.Count, 1))
		}
	}
	if launchN > 0 {
		c.LaunchUs = launchSum / launchN * 1e6
		notes["launch_us"] = fmt.Sprintf("the mean of %.0f empty kernels", launchN)
	} else {
		notes["launch_us"] = "kept: no empty-kernel timing"
	}
	unit := Calibration{MatmulEff: 1, StreamEff: 1, GEMVEff: 1, AttnEff: 1}
	huge := Calibration{MatmulEff: math.Inf(1), StreamEff: math.Inf(1), GEMVEff: math.Inf(1), AttnEff: math.Inf(1)}
	type sums struct {
		work, time float64
		rows       int
	}
	for range 20 {
		var mm, gemv, stream, attn sums
		launch := c.LaunchUs * 1e-6
		for _, r := range rows {
			if r.TimeS <= 0 || r.TimeS < minWorkShare*launch {
				continue
			}
			w := float64(max(r.Count, 1))
			net := (r.TimeS - launch) * w
			switch r.Kind {
			case "matmul":
				dt, out, err := rowDTypes(r)
				if err != nil {
					return Calibration{}, nil, err
				}
				// The work at full efficiency: compute alone (memory
				// free), memory alone.
				cu, mu := huge, huge
				cu.MatmulEff, mu.GEMVEff = 1, 1
				a, _ := cu.MatmulTime(d, r.M, r.K, r.N, max(r.Batch, 1), dt, out)
				b, _ := mu.MatmulTime(d, r.M, r.K, r.N, max(r.Batch, 1), dt, out)
				if a/c.MatmulEff >= b/c.GEMVEff {
					mm.work, mm.time, mm.rows = mm.work+a*w, mm.time+net, mm.rows+1
				} else {
					gemv.work, gemv.time, gemv.rows = gemv.work+b*w, gemv.time+net, gemv.rows+1
				}
			case "attention":
				dt, _, err := rowDTypes(r)
				if err != nil {
					return Calibration{}, nil, err
				}
				a := r.FLOPs / d.Peak(dt)
				b := r.Bytes / (d.HBMGBps * 1e9)
				if a/c.AttnEff >= b/c.StreamEff {
					attn.work, attn.time, attn.rows = attn.work+a*w, attn.time+net, attn.rows+1
				} else {
					stream.work, stream.time, stream.rows = stream.work+b*w, stream.time+net, stream.rows+1
				}
			case "stream":
				b, _ := unit.StreamTime(d, r.Bytes)
				b -= unit.LaunchUs * 1e-6
				stream.work, stream.time, stream.rows = stream.work+b*w, stream.time+net, stream.rows+1
			case "launch":
			default:
				return Calibration{}, nil, fmt.Errorf("%s: unknown kind %q (kinds: matmul, attention, stream, launch)", r.Op, r.Kind)
			}
		}
		next := c
		for _, f := range []struct {
			name string
			s    sums
			into *float64
		}{{"matmul_eff", mm, &next.MatmulEff}, {"gemv_eff", gemv, &next.GEMVEff}, {"stream_eff", stream, &next.StreamEff}, {"attn_eff", attn, &next.AttnEff}} {
			if f.s.rows == 0 || f.s.time <= 0 || f.s.work <= 0 {
				notes[f.name] = "kept: no timing it decides longer than twice the launch"
				*f.into = fieldOf(start, f.name)
				continue
			}
			*f.into = f.s.work / f.s.time
			notes[f.name] = fmt.Sprintf("fitted on %d shapes (%.4g s of their time)", f.s.rows, f.s.time)
		}
		if next == c {
			break
		}
		c = next
	}
	return c, notes, nil
}

func fieldOf(c Calibration, name string) float64 {
	switch name {
	case "matmul_eff":
		return c.MatmulEff
	case "gemv_eff":
		return c.GEMVEff
	case "stream_eff":
		return c.StreamEff
	case "attn_eff":
		return c.AttnEff
	}
	return c.LaunchUs
}

// rowDTypes parses a row's dtypes (the output's defaults to the input's).
func rowDTypes(r Timing) (isa.DType, isa.DType, error) {
	dt, ok := isa.ParseDType(r.DType)
	if !ok {
		return 0, 0, fmt.Errorf("%s: unknown dtype %q", r.Op, r.DType)
	}
	out := dt
	if r.OutDType != "" {
		if out, ok = isa.ParseDType(r.OutDType); !ok {
			return 0, 0, fmt.Errorf("%s: unknown out_dtype %q", r.Op, r.OutDType)
		}
	}
	return dt, out, nil
}

// LoadCalibration reads and checks a calibration file. Every error names
// the file and, where it is about one, the field.
func LoadCalibration(path string) (*CalibrationFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such file", path)
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: cannot read: %v", path, err)
	}
	f, err := ParseCalibration(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.Path = path
	return f, nil
}

// ParseCalibration decodes and checks a calibration file's text: the
// format, no unknown fields, a device among the presets, and constants
// that are positive finite numbers.
func ParseCalibration(data []byte) (*CalibrationFile, error) {
	top, err := strictObject(data, "", []string{"format", "example", "device", "workload", "measured", "constants", "fit", "timings"})
	if err != nil {
		return nil, err
	}
	f := &CalibrationFile{}
	var format string
	if raw, ok := top["format"]; !ok {
		return nil, fmt.Errorf("format: missing (want %q)", CalibrationFormat)
	} else if err := json.Unmarshal(raw, &format); err != nil || format != CalibrationFormat {
		return nil, fmt.Errorf("format: want %q, got %s", CalibrationFormat, strings.TrimSpace(string(raw)))
	}
	f.Format = format
	for _, s := range []struct {
		key  string
		into *string
	}{{"example", &f.Example}, {"workload", &f.Workload}, {"measured", &f.Measured}} {
		if raw, ok := top[s.key]; ok {
			if err := json.Unmarshal(raw, s.into); err != nil {
				return nil, fmt.Errorf("%s: expected a string, got %s", s.key, strings.TrimSpace(string(raw)))
			}
		}
	}
	// The device.
	raw, ok := top["device"]
	if !ok {
		return nil, fmt.Errorf("device: missing (a GPU preset name and the software: {\"name\": \"h100\", ...})")
	}
	dev, err := strictObject(raw, "device", []string{"name", "gpu", "torch", "cuda", "driver"})
	if err != nil {
		return nil, err
	}
	for _, s := range []struct {
		key  string
		into *string
	}{{"name", &f.Device.Name}, {"gpu", &f.Device.GPU}, {"torch", &f.Device.Torch}, {"cuda", &f.Device.CUDA}, {"driver", &f.Device.Driver}} {
		if raw, ok := dev[s.key]; ok {
			if err := json.Unmarshal(raw, s.into); err != nil {
				return nil, fmt.Errorf("device.%s: expected a string, got %s", s.key, strings.TrimSpace(string(raw)))
			}
		}
	}
	if f.Device.Name == "" {
		return nil, fmt.Errorf("device.name: missing (GPUs: %s)", strings.Join(Devices(), ", "))
	}
	if _, err := Lookup(f.Device.Name); err != nil {
		return nil, fmt.Errorf("device.name: %v", err)
	}
	// The constants.
	raw, ok = top["constants"]
	if !ok {
		return nil, fmt.Errorf("constants: missing (matmul_eff, stream_eff, gemv_eff, attn_eff, launch_us)")
	}
	names := []string{"matmul_eff", "stream_eff", "gemv_eff", "attn_eff", "launch_us"}
	cons, err := strictObject(raw, "constants", names)
	if err != nil {
		return nil, err
	}
	vals := map[string]float64{}
	for _, n := range names {
		raw, ok := cons[n]
		if !ok {
			return nil, fmt.Errorf("constants.%s: missing", n)
		}
		var v float64
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("constants.%s: expected a number, got %s", n, strings.TrimSpace(string(raw)))
		}
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("constants.%s: must be greater than 0, got %v", n, v)
		}
		vals[n] = v
	}
	f.Constants = CalibrationConstants{MatmulEff: vals["matmul_eff"], StreamEff: vals["stream_eff"], GEMVEff: vals["gemv_eff"], AttnEff: vals["attn_eff"], LaunchUs: vals["launch_us"]}
	if raw, ok := top["fit"]; ok {
		if err := json.Unmarshal(raw, &f.Fit); err != nil {
			return nil, fmt.Errorf("fit: expected an object of strings, got %s", clip(raw))
		}
	}
	if raw, ok := top["timings"]; ok {
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, fmt.Errorf("timings: expected a list, got %s", clip(raw))
		}
		for i, it := range items {
			path := fmt.Sprintf("timings[%d]", i)
			if _, err := strictObject(it, path, timingFields); err != nil {
				return nil, err
			}
			var t Timing
			if err := json.Unmarshal(it, &t); err != nil {
				return nil, fmt.Errorf("%s: %v", path, err)
			}
			if !(t.TimeS > 0) || math.IsInf(t.TimeS, 0) {
				return nil, fmt.Errorf("%s.time_s: must be greater than 0, got %v", path, t.TimeS)
			}
			if !calibContains([]string{"matmul", "attention", "stream", "launch"}, t.Kind) {
				return nil, fmt.Errorf("%s.kind: unknown kind %q (kinds: matmul, attention, stream, launch)", path, t.Kind)
			}
			f.Timings = append(f.Timings, t)
		}
	}
	return f, nil
}

// timingFields are a timing row's fields (OpShape's JSON names).
var timingFields = []string{"op", "count", "kind", "graph_kind", "m", "k", "n", "batch", "dtype", "out_dtype", "heads", "kv_heads", "q_len", "kv_len",
	"head_dim", "past", "causal", "inputs", "outputs", "flops", "bytes", "time_s", "source"}

// strictObject decodes a JSON object, rejecting keys not in allowed (the
// error names the first, under path).
func strictObject(data []byte, path string, allowed []string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil || m == nil {
		where := "the file"
		if path != "" {
			where = path
		}
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("invalid JSON at byte %d: %v", se.Offset, se)
		case err != nil && !errors.As(err, &te):
			return nil, fmt.Errorf("invalid JSON: %v", err)
		}
		return nil, fmt.Errorf("%s: expected a JSON object, got %s", where, clip(data))
	}
	if dec.More() {
		return nil, fmt.Errorf("invalid JSON: more than one value")
	}
	var unknown []string
	for k := range m {
		if !calibContains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		p := unknown[0]
		if path != "" {
			p = path + "." + p
		}
		known := append([]string(nil), allowed...)
		sort.Strings(known)
		return nil, fmt.Errorf("%s: unknown field (known fields: %s)", p, strings.Join(known, ", "))
	}
	return m, nil
}

func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	if s == "" {
		s = "nothing"
	}
	return s
}

func calibContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// For returns the calibration to use on device name: the file's constants
// when it was measured on that device, else def.
func (f *CalibrationFile) For(name string, def Calibration) Calibration {
	if f == nil || f.Device.Name != name {
		return def
	}
	c, k := def, f.Constants
	c.MatmulEff, c.StreamEff, c.GEMVEff, c.AttnEff, c.LaunchUs = k.MatmulEff, k.StreamEff, k.GEMVEff, k.AttnEff, k.LaunchUs
	return c
}

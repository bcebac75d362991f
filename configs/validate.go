package configs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/trnsim/trnsim/isa"
)

// FieldError returns an error for a resolved field that points at the line
// that set it (or the preset it came from). Later stages (lowering) use it so
// their errors name the field too.
func (c *RunConfig) FieldError(path, format string, args ...any) error {
	return c.errAtPath(path, format, args...)
}

// validateHardware checks every `check` rule (so presets and custom hardware
// are held to the same rules as overrides) and the rules between fields.
func (c *RunConfig) validateHardware() error {
	var first error
	hv := reflect.ValueOf(&c.Hardware).Elem()
	walkLeaves(hv, "hardware", "", func(path string, v reflect.Value, rule string) {
		if first != nil {
			return
		}
		if err := checkTag(rule, v); err != nil {
			first = c.errAtPath(path, "%v", err)
		}
	})
	if first != nil {
		return first
	}
	h := &c.Hardware
	co := &h.Core
	type rule struct {
		bad  bool
		path string
		msg  string
	}
	bank := int64(co.PSUM.PartitionKiB) * 1024 / int64(co.PSUM.Banks)
	rules := []rule{
		{h.Name == "", "hardware.name", "must not be empty"},
		{h.Generation < 2 || h.Generation > 4, "hardware.generation", fmt.Sprintf("must be 2 (NeuronCore-v2), 3 or 4, got %d", h.Generation)},
		{co.Tensor.ArrayRows > co.SBUF.Partitions, "hardware.core.tensor.array_rows", fmt.Sprintf("%d rows exceed the %d SBUF partitions the contraction runs over", co.Tensor.ArrayRows, co.SBUF.Partitions)},
		{co.Tensor.ArrayCols > co.SBUF.Partitions, "hardware.core.tensor.array_cols", fmt.Sprintf("%d columns exceed the %d PSUM partitions the output lands in", co.Tensor.ArrayCols, co.SBUF.Partitions)},
		{(int64(co.PSUM.PartitionKiB)*1024)%int64(co.PSUM.Banks) != 0, "hardware.core.psum.banks", fmt.Sprintf("%d banks do not divide %d KiB evenly", co.PSUM.Banks, co.PSUM.PartitionKiB)},
		{!co.Tensor.MatmulMayCrossBanks && int64(co.Tensor.MovingFreeMax)*4 > bank, "hardware.core.tensor.moving_free_max", fmt.Sprintf("%d FP32 results do not fit one %d-byte PSUM bank (psum.partition_kib %d / psum.banks %d; set matmul_may_cross_banks to allow it)", co.Tensor.MovingFreeMax, bank, co.PSUM.PartitionKiB, co.PSUM.Banks)},
		{co.DMA.Engines > co.SBUF.Partitions || co.SBUF.Partitions%co.DMA.Engines != 0, "hardware.core.dma.engines", fmt.Sprintf("%d engines must divide the %d partitions evenly (each engine serves a block of partitions)", co.DMA.Engines, co.SBUF.Partitions)},
		{co.DMA.Arbitration != "round_robin" && co.DMA.Arbitration != "qos", "hardware.core.dma.arbitration", fmt.Sprintf("must be round_robin or qos, got %q", co.DMA.Arbitration)},
		{co.DMA.Arbitration == "qos" && co.DMA.QoSClasses < 1, "hardware.core.dma.qos_classes", "qos arbitration needs at least one class"},
		{co.DMA.HardwareDGEBlocks > 0 && co.DMA.HardwareDGENs <= 0, "hardware.core.dma.hardware_dge_ns", "must be greater than 0 when hardware_dge_blocks is set"},
		{co.AP.StrideMin > 0, "hardware.core.access_pattern.stride_min", fmt.Sprintf("must not be positive, got %d", co.AP.StrideMin)},
		{!contains(TopologyKinds, h.Topology.Kind), "hardware.topology.kind", fmt.Sprintf("must be one of %s, got %q", strings.Join(TopologyKinds, ", "), h.Topology.Kind)},
		{h.Chip.LNC != 1 && h.Chip.LNC != 2, "hardware.chip.lnc", fmt.Sprintf("must be 1 or 2, got %d", h.Chip.LNC)},
		{h.Chip.LNC == 2 && h.Generation < 3, "hardware.chip.lnc", "logical cores of 2 physical cores exist on Trainium2 and later (NeuronCore-v3+), not on NeuronCore-v2"},
		{h.Chip.Cores%h.Chip.LNC != 0, c.userSetOf("hardware.chip.lnc", "hardware.chip.cores"), fmt.Sprintf("lnc %d does not divide the chip's %d cores", h.Chip.LNC, h.Chip.Cores)},
		{h.Nodes > 1 && h.EFA.ChipBandwidthGBps <= 0, c.userSetOf("hardware.nodes", "hardware.efa.chip_bandwidth_gbps"), fmt.Sprintf("%d nodes need an EFA network between them, but hardware.efa.chip_bandwidth_gbps is 0%s", h.Nodes, efaWhy(c))},
		{co.Power.StartFraction > 1, "hardware.core.power.start_fraction", "must be at most 1"},
		{co.Semaphores > 1<<20, "hardware.core.semaphores", "more than 2^20 semaphores per core is not supported"},
		{co.DMA.QueuesPerEngine > 64, "hardware.core.dma.queues_per_engine", fmt.Sprintf("more than 64 queues per engine is not supported, got %d", co.DMA.QueuesPerEngine)},
		{co.SBUF.Partitions > 4096, "hardware.core.sbuf.partitions", "more than 4096 partitions is not supported"},
		// (Each factor is bounded first, so the product cannot overflow.)
		{h.Chips > maxChips, "hardware.chips", fmt.Sprintf("more than %d chips is not supported (routes between every pair of chips are kept), got %d", maxChips, h.Chips)},
		{h.Chip.Cores > 1<<16, "hardware.chip.cores", fmt.Sprintf("more than 65536 cores per chip is not supported, got %d", h.Chip.Cores)},
		{h.Chips*h.Chip.Cores > 1<<16, c.userSetOf("hardware.chip.cores", "hardware.chips"),
			fmt.Sprintf("%d chips x %d cores = %d cores in total; more than 65536 is not supported", h.Chips, h.Chip.Cores, h.Chips*h.Chip.Cores)},
	}
	for _, r := range rules {
		if r.bad {
			return c.errAtPath(r.path, "%s", r.msg)
		}
	}
	return c.validateTopology()
}

// efaWhy says where a zero EFA bandwidth came from: the preset, or the
// user.
func efaWhy(c *RunConfig) string {
	if _, ok := c.UserSet("hardware.efa.chip_bandwidth_gbps"); ok {
		return ""
	}
	return fmt.Sprintf(" (%s has none)", c.Hardware.Name)
}

// maxChips bounds a system's chips: the fabric keeps a route, and the
// scheduler a hop count, for every pair (1024 chips: 64 trn2.48xlarge
// nodes).
const maxChips = 1024

// TopologyKinds are the arrangements of a node's chips.
var TopologyKinds = []string{"none", "ring", "2d_torus", "3d_torus", "switched", "custom"}

// validateTopology checks the topology against the chips of one node.
func (c *RunConfig) validateTopology() error {
	h := &c.Hardware
	t := &h.Topology
	perNode := h.ChipsPerNode()
	axes := map[string]int{"ring": 1, "2d_torus": 2, "3d_torus": 3}[t.Kind]
	if _, kindSet := c.UserSet("hardware.topology.kind"); kindSet {
		// A kind the user set replaces the preset's arrangement: its dims
		// and axis bandwidths go too, unless the user gave them.
		if _, ok := c.UserSet("hardware.topology.dims"); !ok {
			t.Dims = nil
		}
		if _, ok := c.UserSet("hardware.topology.axis_bandwidth_gbps"); !ok {
			t.AxisBandwidthGBps = nil
		}
	}
	if len(t.Dims) > 0 {
		if axes == 0 {
			return c.errAtPath("hardware.topology.dims", "only ring, 2d_torus and 3d_torus take dims, not %s", t.Kind)
		}
		if len(t.Dims) != axes {
			return c.errAtPath("hardware.topology.dims", "%s takes %d dims, got %d", t.Kind, axes, len(t.Dims))
		}
		prod := 1
		for i, d := range t.Dims {
			if d < 1 {
				return c.errAtPath("hardware.topology.dims", "dim %d is %d; dims must be positive", i, d)
			}
			prod *= d
		}
		if prod != perNode {
			return c.errAtPath(c.userSetOf("hardware.topology.dims", "hardware.chips"), "dims %v make %d chips, but a node has %d (hardware.chips %d / hardware.nodes %d)", t.Dims, prod, perNode, h.Chips, h.Nodes)
		}
	}
	if n := len(t.AxisBandwidthGBps); n > 0 {
		if axes == 0 || n != axes {
			return c.errAtPath("hardware.topology.axis_bandwidth_gbps", "%s has %d axes, got %d bandwidths", t.Kind, axes, n)
		}
		for i, b := range t.AxisBandwidthGBps {
			if b <= 0 {
				return c.errAtPath("hardware.topology.axis_bandwidth_gbps", "axis %d: bandwidth must be positive, got %g", i, b)
			}
		}
	}
	if len(t.Links) > 0 && t.Kind != "custom" {
		return c.errAtPath("hardware.topology.links", "only a custom topology takes links, not %s", t.Kind)
	}
	for i, l := range t.Links {
		if l.A >= perNode || l.B >= perNode || l.A == l.B {
			return c.errAtPath("hardware.topology.links", "link %d joins chips %d and %d; a node has chips 0 to %d and a link joins two different chips", i, l.A, l.B, perNode-1)
		}
	}
	if t.Kind != "none" && t.Kind != "custom" && perNode > 1 && h.Chip.Links.LinkBandwidthGBps <= 0 && len(t.AxisBandwidthGBps) == 0 {
		return c.errAtPath("hardware.chip.links.link_bandwidth_gbps", "must be positive for a %s of %d chips", t.Kind, perNode)
	}
	if t.Kind == "custom" {
		// Every link has a bandwidth, and every chip of a node reaches
		// every other.
		adj := make([][]int, perNode)
		for i, l := range t.Links {
			if l.BandwidthGBps <= 0 && h.Chip.Links.LinkBandwidthGBps <= 0 {
				return c.errAtPath(c.userSetOf("hardware.chip.links.link_bandwidth_gbps", "hardware.topology.links"), "link %d (chips %d-%d) has no bandwidth: give it bandwidth_gbps or set hardware.chip.links.link_bandwidth_gbps", i, l.A, l.B)
			}
			adj[l.A] = append(adj[l.A], l.B)
			adj[l.B] = append(adj[l.B], l.A)
		}
		seen := make([]bool, perNode)
		stack := []int{0}
		seen[0] = true
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, y := range adj[x] {
				if !seen[y] {
					seen[y] = true
					stack = append(stack, y)
				}
			}
		}
		for chip, ok := range seen {
			if !ok {
				return c.errAtPath("hardware.topology.links", "chip %d is not connected to chip 0 by the custom topology's links (every chip of a node must reach every other)", chip)
			}
		}
	}
	return nil
}

// validateParallel checks the parallel plan against the workload and the
// hardware (what the model must divide is checked when it is built).
func (c *RunConfig) validateParallel() error {
	p := &c.Parallel
	if p.TP == 0 {
		p.TP = 1
	}
	if p.Replicas == 0 {
		p.Replicas = 1
	}
	if p.CollectiveAlgorithm == "" {
		p.CollectiveAlgorithm = "auto"
	}
	if !contains(CollectiveAlgorithms, p.CollectiveAlgorithm) {
		return c.errAtPath("parallel.collective_algorithm", "must be one of %s, got %q", strings.Join(CollectiveAlgorithms, ", "), p.CollectiveAlgorithm)
	}
	if p.Ranks() > 1 && c.Workload.Kind != "model" {
		return c.errAtPath(c.userSetOf("parallel.replicas", "parallel.tp"), "tensor parallelism and replicas apply to model workloads; workload.kind is %s (kernels name their cores themselves)", c.Workload.Kind)
	}
	h := &c.Hardware
	logical := h.Chips * h.LogicalCoresPerChip()
	if need := p.Ranks(); need > logical {
		return c.errAtPath(c.userSetOf("parallel.replicas", "parallel.tp"), "tp %d x replicas %d = %d logical cores, but the hardware has %d (hardware.chips %d x %d cores / lnc %d): %d short",
			p.TP, p.Replicas, need, logical, h.Chips, h.Chip.Cores, h.Chip.LNC, need-logical)
	}
	return nil
}

// fromPreset reports whether a value came from a chip or instance preset
// rather than from the user.
func (s Source) fromPreset() bool {
	return strings.HasPrefix(s.File, "preset ") || strings.HasPrefix(s.File, "instance ")
}

// deriveChips sets hardware.chips from an instance and its nodes, and
// checks the two agree when both are given.
func (c *RunConfig) deriveChips(instance string, chipsPerNode int) error {
	h := &c.Hardware
	if instance == "" {
		if h.Chips%h.Nodes != 0 {
			return c.errAtPath(c.userSetOf("hardware.chips", "hardware.nodes"), "%d nodes do not divide hardware.chips %d evenly", h.Nodes, h.Chips)
		}
		return nil
	}
	if h.Instance != instance {
		return c.errAtPath("hardware.instance", "set twice: %s and %s", instance, h.Instance)
	}
	want := chipsPerNode * h.Nodes
	if p, ok := c.UserSet("hardware.chips"); ok && h.Chips != want {
		return c.errAtPath(p, "%d chips do not match hardware.instance %s x hardware.nodes %d = %d chips (leave hardware.chips out: the instance implies it)", h.Chips, instance, h.Nodes, want)
	}
	h.Chips = want
	return nil
}

// setUnder returns the first field at or under path (in path order) that a
// --set gave, or "".
func (c *RunConfig) setUnder(path string) string {
	var found []string
	for p, s := range c.Sources {
		if s.File == SetFile && (p == path || strings.HasPrefix(p, path+".")) {
			found = append(found, p)
		}
	}
	if len(found) == 0 {
		return ""
	}
	sort.Strings(found)
	return found[0]
}

// UserSet returns the first of paths whose value the user set (in the run
// config or by --set) rather than a preset or a default.
func (c *RunConfig) UserSet(paths ...string) (string, bool) {
	for _, p := range paths {
		if s, ok := c.Sources[p]; ok && !s.fromPreset() {
			return p, true
		}
	}
	return "", false
}

// userSetOf returns the first of paths whose value the user set (in the
// run config or by --set) rather than a preset, else the last one: a rule
// between fields is blamed on the field the user changed.
func (c *RunConfig) userSetOf(paths ...string) string {
	for _, p := range paths {
		if s, ok := c.Sources[p]; ok && !s.fromPreset() {
			return p
		}
	}
	return paths[len(paths)-1]
}

// unaryOps and binaryOps are the elementwise ops a workload may name.
var (
	unaryOps  = []string{"exp", "gelu", "silu", "relu", "tanh", "sigmoid", "copy", "square", "sqrt", "rsqrt"}
	binaryOps = []string{"add", "subtract", "multiply", "max"}
)

func (c *RunConfig) validateWorkload(node *yaml.Node, d *decoder) error {
	w := &c.Workload
	if w.Kind == "" {
		at := node
		if at == nil {
			return &Error{File: c.fileName(), Path: "workload.kind", Msg: fmt.Sprintf("required (kinds: %s)", strings.Join(WorkloadKinds, ", "))}
		}
		return d.errAt(at, "workload.kind", "required (kinds: %s)", strings.Join(WorkloadKinds, ", "))
	}
	if !contains(WorkloadKinds, w.Kind) {
		return c.errAtPath("workload.kind", "unsupported workload kind %q (kinds: %s)", w.Kind, strings.Join(WorkloadKinds, ", "))
	}
	present := map[string]bool{"gemm": w.GEMM != nil, "elementwise": w.Elementwise != nil, "assembly": w.Assembly != nil, "tile": w.Tile != nil, "model": w.Model != nil, "op": w.Op != nil}
	for _, k := range WorkloadKinds {
		if present[k] && k != w.Kind {
			// Blame whichever of the two a --set gave (the kind of an
			// assembly run is implied, not written by the user).
			at := "workload.kind"
			if p := c.setUnder("workload." + k); p != "" {
				at = p
			}
			return c.errAtPath(at, "workload.%s is given but kind is %q", k, w.Kind)
		}
	}
	if !present[w.Kind] {
		return c.errAtPath("workload.kind", "kind %q needs a workload.%s section", w.Kind, w.Kind)
	}
	// required reports a missing field at the section that should hold it
	// (when that section is in the file).
	required := func(path, hint string) error {
		if _, set := c.Sources[path]; set {
			// Written, as 0 or "": said so where it was written.
			switch path[strings.LastIndexByte(path, '.')+1:] {
			case "name", "mode", "op", "file":
				return c.errAtPath(path, "must not be empty%s", hint)
			}
			return c.errAtPath(path, "must be greater than 0%s, got 0", hint)
		}
		if sec := childOf(node, w.Kind); sec != nil {
			return d.errAt(sec, path, "required%s", hint)
		}
		return c.errAtPath(path, "required%s", hint)
	}
	switch w.Kind {
	case "gemm":
		g := w.GEMM
		for _, f := range []struct {
			v    int64
			name string
		}{{g.M, "m"}, {g.K, "k"}, {g.N, "n"}} {
			if f.v == 0 {
				return required("workload.gemm."+f.name, "")
			}
		}
		if g.DType == "" {
			g.DType = "bf16"
		}
		if g.OutDType == "" {
			g.OutDType = g.DType
		}
		if g.ALayout == "" {
			g.ALayout = "km"
		}
		if err := c.checkDType("workload.gemm.dtype", g.DType, true); err != nil {
			return err
		}
		if err := c.checkDType("workload.gemm.out_dtype", g.OutDType, true); err != nil {
			return err
		}
		if g.ALayout != "km" && g.ALayout != "mk" {
			return c.errAtPath("workload.gemm.a_layout", "must be km (A stored as [K, M]) or mk (A stored as [M, K]), got %q", g.ALayout)
		}
		if g.WeightsDType == "" {
			g.WeightsDType = g.DType
		}
		if g.WeightsDType != g.DType {
			if !contains(quantisedDTypes, g.WeightsDType) {
				return c.errAtPath("workload.gemm.weights_dtype", "quantised weights are %s (or dtype, %s, for none), got %q", strings.Join(quantisedDTypes, ", "), g.DType, g.WeightsDType)
			}
			if !contains([]string{"bf16", "fp16", "fp32"}, g.DType) {
				return c.errAtPath("workload.gemm.weights_dtype", "quantised weights are dequantised to bf16, fp16 or fp32, not dtype %s", g.DType)
			}
			if g.Batch > 1 {
				return c.errAtPath("workload.gemm.weights_dtype", "quantised weights (and their scales) take one GEMM, not a batch of %d", g.Batch)
			}
		} else if w.Lowering.Dequantize != "" {
			return c.errAtPath("workload.lowering.dequantize", "converts quantised weights; set workload.gemm.weights_dtype (int8, fp8e4, ...) too")
		}
	case "elementwise":
		e := w.Elementwise
		if e.Op == "" {
			return required("workload.elementwise.op", fmt.Sprintf(" (ops: %s, %s)", strings.Join(unaryOps, ", "), strings.Join(binaryOps, ", ")))
		}
		if !contains(unaryOps, e.Op) && !contains(binaryOps, e.Op) {
			return c.errAtPath("workload.elementwise.op", "unsupported op %q (ops: %s, %s)", e.Op, strings.Join(unaryOps, ", "), strings.Join(binaryOps, ", "))
		}
		if e.Rows == 0 {
			return required("workload.elementwise.rows", "")
		}
		if e.Cols == 0 {
			return required("workload.elementwise.cols", "")
		}
		if e.DType == "" {
			e.DType = "bf16"
		}
		if err := c.checkDType("workload.elementwise.dtype", e.DType, true); err != nil {
			return err
		}
		if e.Engine != "" && !contains([]string{"scalar", "vector", "gpsimd"}, e.Engine) {
			return c.errAtPath("workload.elementwise.engine", "must be scalar, vector or gpsimd, got %q", e.Engine)
		}
		if e.Engine == "" {
			e.Engine = "scalar"
			if contains(binaryOps, e.Op) {
				e.Engine = "vector"
			}
		}
		if e.Engine == "scalar" && contains(binaryOps, e.Op) {
			return c.errAtPath("workload.elementwise.engine", "ScalarE reads one input tensor; %s needs vector or gpsimd", e.Op)
		}
		if e.Engine != "scalar" && contains(unaryOps, e.Op) && e.Op != "copy" {
			return c.errAtPath("workload.elementwise.engine", "activation functions run on scalar, not %s", e.Engine)
		}
	case "assembly":
		if err := c.fileOrSource(required, "workload.assembly", &w.Assembly.File, w.Assembly.Source, "the text", "the assembly"); err != nil {
			return err
		}
	case "tile":
		if err := c.fileOrSource(required, "workload.tile", &w.Tile.File, w.Tile.Source, "the kernel", "the kernel"); err != nil {
			return err
		}
	case "model":
		if err := c.validateModel(required); err != nil {
			return err
		}
	case "op":
		if err := c.validateOp(required); err != nil {
			return err
		}
	}
	if err := c.checkLoweringUse(); err != nil {
		return err
	}
	l := &w.Lowering
	if l.DGE != "" && !contains([]string{"none", "hw", "auto"}, l.DGE) {
		return c.errAtPath("workload.lowering.dge", "must be none, hw or auto, got %q", l.DGE)
	}
	if l.DGE == "hw" && c.Hardware.Core.DMA.HardwareDGEBlocks == 0 {
		return c.errAtPath("workload.lowering.dge", "hardware DGE needs NeuronCore-v3 or later (this hardware has no DGE blocks)")
	}
	if l.LoopOrder != "" && l.LoopOrder != "nkm" && l.LoopOrder != "nmk" {
		return c.errAtPath("workload.lowering.loop_order", "must be nkm or nmk, got %q", l.LoopOrder)
	}
	if l.AccumulateDType != "" {
		if err := c.checkDType("workload.lowering.accumulate_dtype", l.AccumulateDType, true); err != nil {
			return err
		}
	}
	if l.Evacuate != "" && !contains([]string{"vector", "scalar", "alternate", "auto"}, l.Evacuate) {
		return c.errAtPath("workload.lowering.evacuate", "must be vector, scalar, alternate or auto, got %q", l.Evacuate)
	}
	if l.Transpose != "" && !contains([]string{"dma", "tensor", "auto"}, l.Transpose) {
		return c.errAtPath("workload.lowering.transpose", "must be dma, tensor or auto, got %q", l.Transpose)
	}
	if l.Dequantize != "" && !contains(DequantizeEngines, l.Dequantize) {
		return c.errAtPath("workload.lowering.dequantize", "must be %s, got %q", strings.Join(DequantizeEngines, ", "), l.Dequantize)
	}
	if l.MatmulMode != "" && !contains([]string{"normal", "double_row", "auto"}, l.MatmulMode) {
		return c.errAtPath("workload.lowering.matmul_mode", "must be normal, double_row or auto, got %q", l.MatmulMode)
	}
	return nil
}

// quantisedDTypes are the dtypes quantised GEMM weights take.
var quantisedDTypes = []string{"int8", "fp8e4", "fp8e5", "fp8e3"}

// DequantizeEngines are the values workload.lowering.dequantize takes.
var DequantizeEngines = []string{"vector", "scalar", "gpsimd", "alternate", "alternate_scalar", "auto"}

// loweringReads lists the workload.lowering fields each workload kind
// reads (nil: every field but those listed in loweringNotRead).
var loweringReads = map[string][]string{
	"elementwise": {"buffers", "dge", "dma_queues", "elementwise_free"},
	"tile":        {"dge", "dma_queues"},
	"assembly":    {},
	"model":       {"dge", "dma_queues"},
	"op":          {"dge", "dma_queues"},
}

var loweringNotRead = map[string][]string{"gemm": {"elementwise_free"}}

// checkLoweringUse rejects a lowering field that the workload's kind does
// not read, set to anything but its automatic zero: it would be ignored
// without a word.
func (c *RunConfig) checkLoweringUse() error {
	kind := c.Workload.Kind
	reads, listed := loweringReads[kind]
	v := reflect.ValueOf(c.Workload.Lowering)
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if v.Field(i).IsZero() {
			continue
		}
		name := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if (listed && contains(reads, name)) || (!listed && !contains(loweringNotRead[kind], name)) {
			continue
		}
		why := "it reads " + strings.Join(reads, ", ")
		switch {
		case kind == "assembly":
			why = "the program runs as written"
		case kind == "tile":
			why = "the kernel's tiles and loops are its own; it reads " + strings.Join(reads, ", ")
		case !listed:
			why = "it is for elementwise workloads"
		}
		return c.errAtPath("workload.lowering."+name, "%s workloads do not read it (%s)", kind, why)
	}
	return nil
}

// inputFile checks that a file a workload reads can be read: it exists and
// is not a folder.
func inputFile(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: no such file", path)
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("%s: cannot read: %v", path, err)
	case st.IsDir():
		return fmt.Errorf("%s: is a folder, not a file", path)
	}
	return nil
}

func (c *RunConfig) fileName() string {
	if c.File == "" {
		return DefaultConfigName
	}
	return c.File
}

// ResolvePath makes a path from the config relative to the config's folder.
func (c *RunConfig) ResolvePath(p string) string {
	if filepath.IsAbs(p) || c.File == "" || c.File == DefaultConfigName {
		return p
	}
	return filepath.Join(filepath.Dir(c.File), p)
}

func (c *RunConfig) checkDType(path, name string, floatOnly bool) error {
	dt, ok := isa.ParseDType(name)
	if !ok {
		return c.errAtPath(path, "unknown dtype %q (dtypes: %s)", name, strings.Join(isa.DTypeNames(), ", "))
	}
	if floatOnly && !dt.IsFloat() {
		return c.errAtPath(path, "must be a floating-point dtype, got %s", name)
	}
	return nil
}

// fileOrSource checks a workload given by a file or inline at path (file
// and source fields), resolving the file against the config's folder;
// required reports a missing field. what and name word the errors ("give
// the text in ...", "give the assembly in file or in source").
func (c *RunConfig) fileOrSource(required func(path, hint string) error, path string, file *string, source, what, name string) error {
	switch {
	case *file == "" && source == "":
		return required(path+".file", " (or give "+what+" in "+path+".source)")
	case *file != "" && source != "":
		return c.errAtPath(path+".source", "give %s in file or in source, not both", name)
	case source != "":
		return nil
	}
	*file = c.ResolvePath(*file)
	if err := inputFile(*file); err != nil {
		return c.errAtPath(path+".file", "%s", err)
	}
	return nil
}

// validateModel checks workload.model and fills its defaults: batch 1,
// tokens 1 (decode), weights in bf16.
func (c *RunConfig) validateModel(required func(path, hint string) error) error {
	m := c.Workload.Model
	switch {
	case m.Name == "" && m.HFConfig == "":
		return required("workload.model.name", " (a zoo model, see trnsim models; or give hf_config: a config.json)")
	case m.Name != "" && m.HFConfig != "":
		return c.errAtPath("workload.model.hf_config", "give name or hf_config, not both")
	case m.HFConfig != "":
		m.HFConfig = c.ResolvePath(m.HFConfig)
		if err := inputFile(m.HFConfig); err != nil {
			return c.errAtPath("workload.model.hf_config", "%s", err)
		}
	}
	// batch and tokens default to 1 where not written; written as 0 they
	// are an error (as a GEMM's m is).
	for _, f := range []struct {
		v    int64
		name string
	}{{m.Batch, "batch"}, {m.Tokens, "tokens"}} {
		if _, set := c.Sources["workload.model."+f.name]; set && f.v == 0 && (f.name == "batch" || m.Mode == "decode") {
			return c.errAtPath("workload.model."+f.name, "must be greater than 0, got 0 (leave it out for 1)")
		}
	}
	if m.Batch == 0 {
		m.Batch = 1
	}
	switch m.Mode {
	case "":
		return required("workload.model.mode", " (prefill or decode)")
	case "prefill":
		if m.Seq == 0 {
			return required("workload.model.seq", " (the prompt length)")
		}
		for _, f := range []struct {
			v    int64
			name string
		}{{m.Context, "context"}, {m.Tokens, "tokens"}} {
			if f.v != 0 {
				return c.errAtPath("workload.model."+f.name, "is for decode; prefill reads seq")
			}
		}
	case "decode":
		if m.Context == 0 {
			return required("workload.model.context", " (the KV-cache length when decoding starts)")
		}
		if m.Seq != 0 {
			return c.errAtPath("workload.model.seq", "is for prefill; decode reads context and tokens")
		}
		if m.Tokens == 0 {
			m.Tokens = 1
		}
	case "train":
		return c.errAtPath("workload.model.mode", "train comes with the training issue; modes: prefill, decode")
	default:
		return c.errAtPath("workload.model.mode", "must be prefill or decode, got %q", m.Mode)
	}
	if m.WeightsDType == "" {
		m.WeightsDType = "bf16"
	}
	if m.GPUCalibration != "" {
		// The file's contents are checked by package gpu (report.CheckRun).
		m.GPUCalibration = c.ResolvePath(m.GPUCalibration)
		if err := inputFile(m.GPUCalibration); err != nil {
			return c.errAtPath("workload.model.gpu_calibration", "%s", err)
		}
	}
	if p := m.GPUPlan; p != nil {
		switch {
		case p.TP == 0:
			return required("workload.model.gpu_plan.tp", " (the GPUs one copy is split over, 1 to 8)")
		case p.TP > MaxGPUPlanTP:
			return c.errAtPath("workload.model.gpu_plan.tp", "%d is more than the %d GPUs of one NVLink domain (an HGX node); multi-node GPU plans are not modelled (no inter-node GPU network figures)", p.TP, MaxGPUPlanTP)
		}
	}
	switch {
	case len(m.GPUs) == 0:
		m.GPUs = []string{"h100", "b200"}
	case len(m.GPUs) == 1 && m.GPUs[0] == "none":
		m.GPUs = nil
	}
	if !contains([]string{"bf16", "fp8e4", "int8"}, m.WeightsDType) {
		return c.errAtPath("workload.model.weights_dtype", "must be bf16, fp8e4 or int8, got %q", m.WeightsDType)
	}
	return nil
}

// validateOp checks workload.op: the fields its op needs, and no others.
func (c *RunConfig) validateOp(required func(path, hint string) error) error {
	o := c.Workload.Op
	if o.Name == "" {
		return required("workload.op.name", " (ops: "+strings.Join(OpNames, ", ")+")")
	}
	if !contains(OpNames, o.Name) {
		return c.errAtPath("workload.op.name", "unknown op %q (ops: %s)", o.Name, strings.Join(OpNames, ", "))
	}
	if o.DType == "" {
		o.DType = "bf16"
	}
	if err := c.checkDType("workload.op.dtype", o.DType, true); err != nil {
		return err
	}
	needs := map[string][]string{"swiglu": {"m", "k", "n"}, "matmul_add_rms_norm": {"m", "k", "n"}, "attention": {"seq", "heads", "head_dim"}}
	need, ok := needs[o.Name]
	if !ok {
		need = []string{"m", "n"}
	}
	vals := map[string]int64{"m": o.M, "n": o.N, "k": o.K, "batch": o.Batch, "seq": o.Seq, "heads": o.Heads, "kv_heads": o.KVHeads, "head_dim": o.HeadDim}
	for _, f := range need {
		if vals[f] == 0 {
			return required("workload.op."+f, " (for "+o.Name+")")
		}
	}
	allowed := append([]string(nil), need...)
	if o.Name == "attention" {
		allowed = append(allowed, "batch", "kv_heads")
		if o.Batch == 0 {
			o.Batch = 1
		}
		if o.KVHeads == 0 {
			o.KVHeads = o.Heads
		}
	}
	for _, f := range []string{"m", "n", "k", "batch", "seq", "heads", "kv_heads", "head_dim"} {
		if vals[f] != 0 && !contains(allowed, f) {
			return c.errAtPath("workload.op."+f, "%s does not read it (it reads %s)", o.Name, strings.Join(allowed, ", "))
		}
	}
	if o.Causal && o.Name != "attention" {
		return c.errAtPath("workload.op.causal", "is for attention")
	}
	return nil
}

package gpu

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/graph"
	"github.com/trnsim/trnsim/workloads/nn"
	"github.com/trnsim/trnsim/workloads/zoo"
)

// Small all-reduces over 8 GPUs take the tree (fewer latency steps),
// large ones the ring (fewer bytes); over 2 GPUs the two have the same
// steps and the ring always wins. An all-gather has only the ring.
func TestCollectiveCrossover(t *testing.T) {
	h100 := devices["h100"]
	for _, tc := range []struct {
		kind  Collective
		bytes float64
		ranks int
		want  Algorithm
	}{
		{AllReduce, 4 << 10, 8, Tree},
		{AllReduce, 64 << 10, 8, Tree},
		{AllReduce, 256 << 20, 8, Ring},
		{AllReduce, 1 << 30, 8, Ring},
		{AllReduce, 4 << 10, 2, Ring},
		{AllReduce, 256 << 20, 2, Ring},
		{AllReduce, 4 << 10, 4, Tree},
		{AllGather, 4 << 10, 8, Ring},
	} {
		t.Run(fmt.Sprintf("%s/%g/%d", tc.kind, tc.bytes, tc.ranks), func(t *testing.T) {
			ct, err := h100.CollectiveTime(tc.kind, tc.bytes, tc.ranks)
			require.NoError(t, err)
			assert.Equal(t, tc.want, ct.Algorithm, "%s %s %.2f us", ct.Algorithm, ct.Protocol, ct.TimeS*1e6)
		})
	}
	// Small messages pick the low-latency protocol, large the full
	// bandwidth one.
	small, err := h100.CollectiveTime(AllReduce, 16<<10, 2)
	require.NoError(t, err)
	large, err := h100.CollectiveTime(AllReduce, 256<<20, 2)
	require.NoError(t, err)
	assert.Equal(t, "LL", small.Protocol)
	assert.Equal(t, "Simple", large.Protocol)
	// A large ring all-reduce runs at the measured bus bandwidth:
	// 2(n-1)/n of the bytes at 370 GB/s, plus Simple's base latency and
	// its 2(n-1) steps.
	assert.InEpsilon(t, (8.4+2*3.4)*1e-6+256<<20/370e9, large.TimeS, 1e-9)
	// One GPU moves nothing.
	one, err := h100.CollectiveTime(AllReduce, 1<<20, 1)
	require.NoError(t, err)
	assert.Zero(t, one.TimeS)
}

// No collective beats the bytes it must send at NVLink's line rate, and
// each is at least the latency of its first step.
func TestCollectiveLineRateBound(t *testing.T) {
	for _, name := range []string{"a100-80gb", "h100", "h200", "b200"} {
		d := devices[name]
		for _, kind := range []Collective{AllReduce, AllGather} {
			for _, ranks := range []int{2, 3, 4, 8} {
				for _, bytes := range []float64{256, 64 << 10, 16 << 20, 1 << 30} {
					ct, err := d.CollectiveTime(kind, bytes, ranks)
					require.NoError(t, err)
					assert.GreaterOrEqual(t, ct.TimeS, d.LineRateTime(kind, bytes, ranks), "%s %s %d ranks %g B", name, kind, ranks, bytes)
					assert.Greater(t, ct.TimeS, 6e-6, "%s: at least a base latency", name)
				}
			}
		}
	}
	// The inferred bus bandwidths keep H100's share of the line rate.
	assert.InDelta(t, 370.0, devices["h100"].BusBwGBps, 1e-9)
	assert.InDelta(t, 370.0/450*300, devices["a100-80gb"].BusBwGBps, 1e-9)
	assert.InDelta(t, 370.0/450*900, devices["b200"].BusBwGBps, 1e-9)
	assert.Zero(t, devices["a800-pcie"].BusBwGBps)
}

// Collectives a node cannot run are errors that say why.
func TestCollectiveErrors(t *testing.T) {
	for _, tc := range []struct {
		dev   string
		kind  Collective
		ranks int
		want  string
	}{
		{"h100", AllReduce, 16, "one NVLink domain holds 8"},
		{"a800-pcie", AllReduce, 2, "no NVLink"},
		{"h100", "broadcast", 2, `no NCCL model for the collective "broadcast"`},
	} {
		_, err := devices[tc.dev].CollectiveTime(tc.kind, 1024, tc.ranks)
		assert.ErrorContains(t, err, tc.want)
	}
}

// decodeGraph is a zoo model's decode step split tp ways.
func decodeGraph(t *testing.T, model string, wdt isa.DType, tp int) *graph.Graph {
	t.Helper()
	m, err := zoo.Get(model)
	require.NoError(t, err)
	g, err := m.Build(zoo.BuildOptions{Pass: nn.Pass{Batch: 1, Seq: 1, Past: 1024, ActDType: isa.BF16, KVCache: true}, WeightDType: wdt, TP: int64(tp)})
	require.NoError(t, err)
	return g
}

// A TP2 rank holds half of TP1's weights and cache; its pass counts its
// collectives (two all-reduces a layer, the embedding's, the head's
// all-gather), every op's time summed.
func TestTensorParallelRank(t *testing.T) {
	h100 := devices["h100"]
	g1, g2 := decodeGraph(t, "llama-3-8b", isa.BF16, 1), decodeGraph(t, "llama-3-8b", isa.BF16, 2)
	w1, kv1 := RankMemory(g1)
	w2, kv2 := RankMemory(g2)
	assert.InEpsilon(t, 0.5, float64(w2)/float64(w1), 0.01, "weights %d -> %d", w1, w2)
	assert.InEpsilon(t, 0.5, float64(kv2)/float64(kv1), 1e-9)
	e1, err := Default.Estimate(g1, h100)
	require.NoError(t, err)
	e2, err := Default.Estimate(g2, h100)
	require.NoError(t, err)
	assert.Zero(t, e1.CommS)
	assert.Zero(t, e1.Collectives)
	assert.Equal(t, 2*32+2, e2.Collectives)
	var sum, comm float64
	for _, o := range e2.Ops {
		sum += o.TimeS
		if o.Bound == BoundNVLink {
			comm += o.TimeS
			assert.NotEmpty(t, o.Algorithm, o.Name)
		}
	}
	assert.InEpsilon(t, sum, e2.TimeS, 1e-12)
	assert.InEpsilon(t, comm, e2.CommS, 1e-12)
	assert.Greater(t, e2.CommS, 0.0)
	// Decode streams half the weights per GPU: faster, though not twice.
	assert.Less(t, e2.TimeS, e1.TimeS)
	assert.Greater(t, e2.TimeS, e1.TimeS/2)
}

// The default rule takes the smallest tp that fits: Llama-3-70B in BF16
// (141 GB of weights) needs two H100s or H200s and fits one B200; a
// model that fits no node is an error that says multi-node plans are not
// modelled.
func TestChoosePlan(t *testing.T) {
	m, err := zoo.Get("llama-3-70b")
	require.NoError(t, err)
	build := func(tp int) (*graph.Graph, int64, error) {
		g, err := m.Build(zoo.BuildOptions{Pass: nn.Pass{Batch: 1, Seq: 1, Past: 1024, ActDType: isa.BF16, KVCache: true}, WeightDType: isa.BF16, TP: int64(tp)})
		if err != nil {
			return nil, 0, err
		}
		w, kv := RankMemory(g)
		return g, w + kv, nil
	}
	for _, tc := range []struct {
		dev string
		tp  int
	}{{"h100", 2}, {"h200", 2}, {"b200", 1}, {"a100-40gb", 4}} {
		p, g, bytes, err := ChoosePlan(devices[tc.dev], build, 3)
		require.NoError(t, err, tc.dev)
		assert.Equal(t, Plan{TP: tc.tp, Replicas: 3, Derived: true}, p, tc.dev)
		assert.Equal(t, 3*tc.tp, p.GPUs())
		assert.NotNil(t, g)
		assert.LessOrEqual(t, bytes, devices[tc.dev].HBMBytes())
	}
	huge := func(int) (*graph.Graph, int64, error) { return nil, 1e12, nil }
	_, _, _, err = ChoosePlan(devices["h100"], huge, 1)
	assert.ErrorContains(t, err, "does not fit 8 h100 GPUs of one node")
	assert.ErrorContains(t, err, "multi-node GPU plans are not modelled")
	_, _, _, err = ChoosePlan(devices["a800-pcie"], huge, 1)
	assert.ErrorContains(t, err, "no NVLink")
}

// A plan the user gives is checked: tp within one node, NVLink, and the
// rank's bytes within HBM.
func TestCheckPlan(t *testing.T) {
	for _, tc := range []struct {
		dev   string
		p     Plan
		bytes int64
		want  string
	}{
		{"h100", Plan{TP: 2, Replicas: 1}, 40e9, ""},
		{"h100", Plan{TP: 0}, 0, "tp must be greater than 0"},
		{"h100", Plan{TP: -1}, 0, "tp must be greater than 0"},
		{"h100", Plan{TP: 9}, 0, "one NVLink domain, 8 GPUs"},
		{"a800-pcie", Plan{TP: 2}, 0, "no NVLink"},
		{"h100", Plan{TP: 1, Replicas: -1}, 0, "replicas must not be negative"},
		{"h100", Plan{TP: 1}, 81e9, "tp 1 does not fit h100: 81.0 GB"},
	} {
		err := CheckPlan(devices[tc.dev], tc.p, tc.bytes)
		if tc.want == "" {
			assert.NoError(t, err)
			continue
		}
		assert.ErrorContains(t, err, tc.want)
	}
}

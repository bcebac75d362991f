package report_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/report"
	"github.com/trnsim/trnsim/runner"
)

// The GPU plan: by default the smallest tp that fits (one GPU for a
// small model), or the user's workload.model.gpu_plan: a TP2 plan holds
// half the weights per GPU, counts its all-reduces in the pass, its MFU,
// MBU and cost over both GPUs, and says so in the summary; a plan the
// model does not divide by is an error naming the field.
func TestGPUPlan(t *testing.T) {
	text := "hardware: {preset: trn2}\nworkload:\n  kind: model\n  model: {name: llama-3.2-1b, mode: decode, context: 512, layers: 2, gpus: [h100]}\n"
	cfg, info, res := runModel(t, text)
	build := func(plan *configs.GPUPlan) (report.GPUReport, string, error) {
		cfg.Workload.Model.GPUPlan = plan
		r, err := report.Build(cfg, info, res, "test")
		if err != nil {
			return report.GPUReport{}, "", err
		}
		require.Len(t, r.GPU, 1)
		var out bytes.Buffer
		r.WriteSummary(&out)
		return r.GPU[0], out.String(), nil
	}
	one, sum1, err := build(nil)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 1, 1}, []int{one.GPUs, one.TP, one.Replicas})
	assert.Equal(t, "the smallest tp whose weights and KV cache fit one GPU's HBM", one.PlanRule)
	assert.Zero(t, one.CommS)
	assert.Contains(t, sum1, "vs GPU             H100 SXM (tp 1, the smallest that fits): time per token")

	two, sum2, err := build(&configs.GPUPlan{TP: 2})
	require.NoError(t, err)
	assert.Equal(t, []int{2, 2, 1}, []int{two.GPUs, two.TP, two.Replicas})
	assert.Equal(t, "workload.model.gpu_plan", two.PlanRule)
	assert.InEpsilon(t, 0.5, float64(two.MemoryPerGPUBytes)/float64(one.MemoryPerGPUBytes), 0.02)
	// Two all-reduces a layer, the embedding's, the head's all-gather.
	assert.Equal(t, 2*2+2, two.Collectives)
	assert.Greater(t, two.CommS, 0.0)
	assert.InDelta(t, 100*two.CommS/two.TimeS, two.CommPct, 1e-9)
	assert.Equal(t, "ring/LL", two.CollectiveAlgorithm)
	var sum float64
	for _, o := range two.Ops {
		sum += o.TimeS
	}
	assert.InEpsilon(t, sum, two.TimeS, 1e-12, "the collectives are in the pass")
	assert.InDelta(t, 2*55.04/8, two.USDPerHour, 1e-9)
	assert.InDelta(t, 1/two.TimeS, two.TokensPerS, 1e-6*two.TokensPerS)
	// MBU over both GPUs: half the per-GPU bytes in less than the time,
	// so above half of TP1's but no more than 100.
	assert.Greater(t, two.MBUPct, one.MBUPct/2)
	assert.LessOrEqual(t, two.MBUPct, 100.0)
	assert.Contains(t, sum2, "vs GPU             2x H100 SXM (tp 2, gpu_plan): time per token")
	assert.Contains(t, sum2, "NVLink")

	rep, _, err := build(&configs.GPUPlan{TP: 1, Replicas: 3})
	require.NoError(t, err)
	assert.Equal(t, 3, rep.GPUs)
	assert.InDelta(t, 3/rep.TimeS, rep.TokensPerS, 1e-6*rep.TokensPerS)
	assert.InEpsilon(t, one.USDPerMillionTokens, rep.USDPerMillionTokens, 1e-9, "replicas cost as much per token")

	_, _, err = build(&configs.GPUPlan{TP: 3})
	assert.ErrorContains(t, err, "workload.model.gpu_plan.tp: h100: llama-3.2-1b: num_attention_heads 32 does not divide by tp 3")
	// A run finds it before it simulates.
	_, err = runner.Run(cfg, runner.Options{})
	assert.ErrorContains(t, err, "workload.model.gpu_plan.tp: h100: llama-3.2-1b: num_attention_heads 32 does not divide by tp 3")
}

// workload.model.gpu_plan is checked with the config: tp within 1..8.
func TestGPUPlanConfig(t *testing.T) {
	for _, tc := range []struct{ plan, want string }{
		{"{tp: 0}", "workload.model.gpu_plan.tp: must be greater than 0, got 0"},
		{"{tp: -2}", "workload.model.gpu_plan.tp: must be greater than 0, got -2"},
		{"{tp: 16}", "workload.model.gpu_plan.tp: 16 is more than the 8 GPUs of one NVLink domain"},
		{"{replicas: 2}", "workload.model.gpu_plan.tp: required"},
		{"{tp: 2, replicas: 0}", "workload.model.gpu_plan.replicas: must be greater than 0, got 0"},
		{"{tp: 2, pp: 2}", "workload.model.gpu_plan.pp: unknown field"},
	} {
		text := "hardware: {preset: trn2}\nworkload:\n  kind: model\n  model: {name: llama-3.2-1b, mode: decode, context: 512, gpu_plan: " + tc.plan + "}\n"
		_, err := configs.LoadBytes([]byte(text), "m.yaml", configs.LoadOptions{})
		assert.ErrorContains(t, err, tc.want, tc.plan)
	}
}

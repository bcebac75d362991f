package validate

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/trnsim/trnsim/configs"
)

func TestEveryCaseLoadsWithASource(t *testing.T) {
	cases, err := Cases()
	require.NoError(t, err)
	require.NotEmpty(t, cases)
	seen := map[string]bool{}
	for _, c := range cases {
		t.Run(c.ID, func(t *testing.T) {
			assert.False(t, seen[c.ID], "ids are unique")
			seen[c.ID] = true
			assert.NotEmpty(t, c.Title)
			assert.Regexp(t, `\[(C|I|3P|R|U)\]`, c.Source, "the source carries a confidence tag")
			if len(c.Range) == 0 {
				assert.Greater(t, c.Measured, 0.0)
			} else {
				require.Len(t, c.Range, 2, "a range is [low, high]")
				assert.Less(t, c.Range[0], c.Range[1])
				assert.Zero(t, c.TargetPct, "a row has a range or a target, not both")
			}
			assert.Contains(t, []string{"simulated_time", "peak_pct", "engine_busy_pct", "dma_active_pct", "time_per_instruction", "time_per_step", "model_ttft", "model_tpot", "inferences_per_s", "dma_engine0_active", "hbm_read_bytes", "hbm_write_bytes"}, c.Metric)
			data, err := yaml.Marshal(&c.Config)
			require.NoError(t, err)
			_, err = configs.LoadBytes(data, c.ID, configs.LoadOptions{})
			require.NoError(t, err)
		})
	}
	// The targets the issues set.
	targets := map[string]float64{}
	for _, c := range cases {
		targets[c.ID] = c.TargetPct
	}
	assert.Equal(t, 15.0, targets["K1"])
	assert.Equal(t, 10.0, targets["K6"])
}

func TestFastRowsMeetTheirTargetsAndBounds(t *testing.T) {
	rows, err := Run(Options{Fast: true})
	require.NoError(t, err)
	require.NotEmpty(t, rows)
	for _, r := range rows {
		if r.TargetPct > 0 || len(r.Range) > 0 {
			require.NotNil(t, r.Pass, "%s has a target", r.ID)
			assert.True(t, *r.Pass, "%s: predicted %g, measured %g (%+.1f%%)", r.ID, r.Predicted, r.Measured, r.ErrorPct)
		} else {
			assert.Nil(t, r.Pass, "%s has no target: reported only", r.ID)
		}
		if strings.HasSuffix(r.Unit, "s") && r.Bound > 0 {
			assert.GreaterOrEqual(t, r.Predicted, r.Bound*(1-1e-9), "%s beats its physical bound", r.ID)
		}
	}
	assert.Empty(t, Missed(rows))
}

func TestUnknownCaseIsAnError(t *testing.T) {
	_, err := Run(Options{Only: []string{"K1", "NOPE"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unknown case id in --only")
}

func TestMissedListsFailingTargetedRows(t *testing.T) {
	yes, no := true, false
	rows := []Row{{ID: "A", Pass: &yes}, {ID: "B", Pass: &no}, {ID: "C", Pass: &yes}, {ID: "D"}}
	assert.Equal(t, []string{"B"}, Missed(rows))
}

// A row with no target is neither a pass nor a miss: "pass" is null in
// JSON, and the table says "report".
func TestRowsWithoutTargetHaveNullPass(t *testing.T) {
	yes := true
	rows := []Row{{ID: "T", TargetPct: 10, Pass: &yes}, {ID: "R"}}
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, rows))
	var got []map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &got))
	require.Len(t, got, 2)
	assert.Equal(t, true, got[0]["pass"])
	v, present := got[1]["pass"]
	assert.True(t, present, "pass is written for every row")
	assert.Nil(t, v, "a row without a target has pass: null")

	buf.Reset()
	WriteTable(&buf, rows)
	assert.Regexp(t, `(?m)^T .* PASS\s*$`, buf.String())
	assert.Regexp(t, `(?m)^R .* report\s*$`, buf.String())

	// The real cases: every untargeted row is null.
	all, err := Run(Options{Fast: true})
	require.NoError(t, err)
	buf.Reset()
	require.NoError(t, WriteJSON(&buf, all))
	require.NoError(t, json.Unmarshal(buf.Bytes(), &got))
	for i, r := range all {
		if r.TargetPct == 0 && len(r.Range) == 0 {
			assert.Nil(t, got[i]["pass"], r.ID)
		} else {
			assert.NotNil(t, got[i]["pass"], r.ID)
		}
	}
}

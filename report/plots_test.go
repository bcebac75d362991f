package report_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/gpu"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/report"
	"github.com/trnsim/trnsim/runner"
)

// runFor runs a config's text with the options given.
func runFor(t *testing.T, text string, opts runner.Options) *runner.Outcome {
	t.Helper()
	cfg, err := configs.LoadBytes([]byte(text), "p.yaml", configs.LoadOptions{})
	require.NoError(t, err)
	out, err := runner.Run(cfg, opts)
	require.NoError(t, err)
	return out
}

const decode2 = "hardware: {preset: trn2}\nworkload:\n  kind: model\n  model: {name: llama-3.2-1b, mode: decode, context: 256, layers: 2}\n"

// A GEMM's point on the Trainium roofline is its 2MKN FLOPs over its least
// HBM bytes (A and B read once, C written once), at the FLOPs over the
// simulated time, under the roofline of one core's TensorE peak and its
// share of the chip's HBM bandwidth.
func TestRooflineGEMMPoint(t *testing.T) {
	for _, tc := range []struct {
		preset  string
		m, k, n int64
	}{
		{"trn2", 512, 1024, 1024},
		{"trn2", 128, 4096, 512},
		{"trn1", 256, 512, 2048},
	} {
		t.Run(fmt.Sprintf("%s %dx%dx%d", tc.preset, tc.m, tc.k, tc.n), func(t *testing.T) {
			out := runFor(t, fmt.Sprintf("hardware: {preset: %s}\nworkload:\n  kind: gemm\n  gemm: {m: %d, k: %d, n: %d, dtype: bf16}\n", tc.preset, tc.m, tc.k, tc.n), runner.Options{})
			r := out.Report
			require.Len(t, r.Roofline, 1, "a GEMM has no GPU baselines")
			d := r.Roofline[0]
			cfg, err := configs.LoadDefault(configs.LoadOptions{Sets: []string{"hardware.preset=" + tc.preset}})
			require.NoError(t, err)
			h := &cfg.Hardware
			assert.Equal(t, "trainium", d.Key)
			assert.InDelta(t, h.PeakFLOPSPerCore(isa.BF16), d.PeakFLOPS, d.PeakFLOPS*1e-9, "one core's BF16 peak")
			assert.InDelta(t, h.Chip.HBM.BandwidthGBps*1e9/float64(h.Chip.Cores), d.HBMBytesPerS, 1, "one core's share of HBM")
			require.Len(t, d.Points, 1)
			p := d.Points[0]
			flops := 2 * float64(tc.m*tc.k*tc.n)
			bytes := float64(2 * (tc.m*tc.k + tc.k*tc.n + tc.m*tc.n))
			assert.Equal(t, flops, p.FLOPs)
			assert.Equal(t, bytes, p.Bytes)
			assert.InDelta(t, flops/bytes, p.Intensity, 1e-9)
			assert.InDelta(t, flops/r.SimulatedTimeS, p.FLOPS, p.FLOPS*1e-9)
			assert.InDelta(t, min(d.PeakFLOPS, p.Intensity*d.HBMBytesPerS), p.AttainableFLOPS, 1)
			assert.LessOrEqual(t, p.FLOPS, p.AttainableFLOPS, "no op beats its roofline")
		})
	}
}

// A model's rooflines: the Trainium core's and each GPU's, with the GPU's
// ceilings from its preset, the ops by kind, no GPU op above its roofline
// (a Trainium op may be: its least bytes count the activations a fused
// lowering keeps on chip), and every op either placed or counted as left
// out.
func TestRooflineModel(t *testing.T) {
	r := runFor(t, decode2, runner.Options{}).Report
	require.Len(t, r.Roofline, 1+len(r.GPU))
	for i, d := range r.Roofline {
		total := d.LeftOut
		for _, p := range d.Points {
			total += p.Ops
			assert.Greater(t, p.Intensity, 0.0, p.Name)
			if i > 0 {
				assert.LessOrEqual(t, p.FLOPS, p.AttainableFLOPS*(1+1e-9), "%s %s", d.Key, p.Name)
			}
			assert.InDelta(t, p.FLOPs/p.Bytes, p.Intensity, p.Intensity*1e-12)
			assert.InDelta(t, p.FLOPs/p.TimeS, p.FLOPS, p.FLOPS*1e-12)
		}
		if i == 0 {
			assert.Equal(t, len(r.Ops), total, "every simulated op placed or left out")
			continue
		}
		g := r.GPU[i-1]
		dev, err := gpu.Lookup(g.GPU)
		require.NoError(t, err)
		tp := float64(max(g.TP, 1))
		assert.Equal(t, g.GPU, d.Key)
		assert.Equal(t, dev.Peak(isa.BF16)*tp, d.PeakFLOPS)
		assert.Equal(t, dev.HBMGBps*1e9*tp, d.HBMBytesPerS)
		assert.Equal(t, len(g.Ops), total, "every GPU op placed or left out")
		assert.True(t, d.ByKind, "more ops than a roofline shows one by one")
		kinds := map[string]bool{}
		for _, p := range d.Points {
			kinds[p.Kind] = true
		}
		assert.True(t, kinds["linear"], "%v", kinds)
	}
}

// Each engine's shares of the run are not negative and add up to 100%.
func TestStallShares(t *testing.T) {
	for name, text := range map[string]string{
		"gemm":  "hardware: {preset: trn2}\nworkload:\n  kind: gemm\n  gemm: {m: 1024, k: 2048, n: 2048, dtype: bf16}\n",
		"model": decode2,
	} {
		t.Run(name, func(t *testing.T) {
			r := runFor(t, text, runner.Options{}).Report
			shares := r.Shares()
			require.Len(t, shares, len(isa.AllEngines()))
			for _, s := range shares {
				sum := s.BusyPct + s.IdlePct + s.UnaccountedPct
				for c, v := range s.StallPct {
					assert.GreaterOrEqual(t, v, 0.0, "%s %s", s.Engine, c)
					assert.NotEqual(t, "power_throttle", c, "within busy time, not beside it")
					sum += v
				}
				assert.GreaterOrEqual(t, s.UnaccountedPct, 0.0)
				assert.LessOrEqual(t, s.ThrottledPct, s.BusyPct)
				assert.InDelta(t, 100, sum, 1e-6, s.Engine)
				assert.Less(t, s.OverlapPct, 1.0, "the simulator's stalls overlap busy time by little")
				assert.InDelta(t, r.Engines[s.Engine].BusyPct, s.BusyPct, 1e-9)
			}
			if name == "gemm" {
				assert.Equal(t, 0.0, shares[len(shares)-2].BusyPct, "gpsimd does nothing in a GEMM")
			}
		})
	}
}

// The timeline is recorded only when asked for; its bars lie inside its
// window, in time order, never overlapping in a row, within the cap.
func TestRunTimeline(t *testing.T) {
	gemm := "hardware: {preset: trn2}\nworkload:\n  kind: gemm\n  gemm: {m: 1024, k: 2048, n: 2048, dtype: bf16}\n"
	assert.Nil(t, runFor(t, gemm, runner.Options{}).Report.Timeline, "no recorder without figures")
	window, err := report.ParseTraceWindow("20us:60us")
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		opts runner.Options
		cap  int
	}{
		{"the whole run", runner.Options{Timeline: true}, report.DefaultTimelineCap},
		{"a small cap", runner.Options{Timeline: true, TimelineCap: 300}, 300},
		{"a window", runner.Options{Timeline: true, TimelineWindow: &window}, report.DefaultTimelineCap},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runFor(t, gemm, tc.opts).Report
			tl := r.Timeline
			require.NotNil(t, tl)
			assert.LessOrEqual(t, tl.Recorded, tc.cap)
			assert.LessOrEqual(t, tl.ToS, r.SimulatedTimeS)
			assert.Less(t, tl.FromS, tl.ToS)
			if tc.opts.TimelineWindow != nil {
				assert.InDelta(t, 20e-6, tl.FromS, 1e-15)
				assert.InDelta(t, 60e-6, tl.ToS, 1e-15)
			}
			if tc.cap == 300 {
				assert.Less(t, tl.ToS, r.SimulatedTimeS, "the cap closes the window early")
			}
			names := map[string]bool{}
			for _, row := range tl.Rows {
				names[row.Name] = true
				for i, b := range row.Bars {
					assert.GreaterOrEqual(t, b.S, tl.FromS)
					assert.LessOrEqual(t, b.E, tl.ToS)
					assert.Less(t, b.S, b.E)
					assert.Less(t, b.C, len(tl.Classes))
					if i > 0 {
						assert.GreaterOrEqual(t, b.S, row.Bars[i-1].E, "%s: no overlap", row.Name)
					}
				}
			}
			assert.True(t, names["tensor"], "%v", names)
			assert.True(t, names["DMA q0"], "%v", names)
			assert.Equal(t, "opcode", tl.ColourBy, "a GEMM is one op")
		})
	}
}

// Every run figure is written as PNG and SVG; a results.json read back
// draws the same bytes.
func TestRunFiguresRoundTrip(t *testing.T) {
	out := runFor(t, "hardware: {preset: trn2}\nworkload:\n  kind: gemm\n  gemm: {m: 1024, k: 2048, n: 2048, dtype: bf16}\n", runner.Options{Timeline: true})
	dir := t.TempDir()
	files, err := out.Report.WriteFigures(dir, "png", "svg")
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		if filepath.Ext(f) == ".png" {
			_, err := png.Decode(bytes.NewReader(data))
			require.NoError(t, err, f)
			continue
		}
		dec := xml.NewDecoder(bytes.NewReader(data))
		for {
			_, err := dec.Token()
			if err == io.EOF {
				break
			}
			require.NoError(t, err, f)
		}
	}
	assert.ElementsMatch(t, []string{"roofline-trainium.png", "roofline-trainium.svg", "stalls.png", "stalls.svg", "timeline.png", "timeline.svg"}, names)
	var buf bytes.Buffer
	require.NoError(t, out.Report.WriteJSON(&buf))
	var back report.Report
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	again := t.TempDir()
	files2, err := back.WriteFigures(again, "png", "svg")
	require.NoError(t, err)
	require.Len(t, files2, len(files))
	for i := range files {
		a, _ := os.ReadFile(files[i])
		b, _ := os.ReadFile(files2[i])
		assert.True(t, bytes.Equal(a, b), "%s redrawn from results.json", names[i])
	}
}

// A kernel written by hand is one point: its FLOPs over the HBM bytes it
// moved, in the simulated time; its timeline is coloured by opcode.
func TestRooflineKernel(t *testing.T) {
	cfg, err := runner.ConfigForTile("../examples/matmul.tile", "", nil)
	require.NoError(t, err)
	out, err := runner.Run(cfg, runner.Options{Timeline: true})
	require.NoError(t, err)
	r := out.Report
	require.Len(t, r.Roofline, 1)
	require.Len(t, r.Roofline[0].Points, 1)
	p := r.Roofline[0].Points[0]
	assert.True(t, p.BytesMoved)
	assert.Equal(t, float64(r.HBM.ReadBytes+r.HBM.WriteBytes), p.Bytes)
	assert.Greater(t, p.FLOPs, 0.0)
	assert.Equal(t, r.SimulatedTimeS, p.TimeS)
	assert.LessOrEqual(t, p.FLOPS, p.AttainableFLOPS)
	require.NotNil(t, r.Timeline)
	assert.Equal(t, "opcode", r.Timeline.ColourBy)
	assert.Contains(t, r.Timeline.Classes, "multiply_moving")
}

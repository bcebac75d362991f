package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/cost"
	"github.com/trnsim/trnsim/gpu"
)

// CostReport is a model run's cost and energy against its GPU baselines
// (results.json's cost section; docs/gpu.md#cost): each option's price,
// energy per token and whole instance, and what equal hourly spend buys.
type CostReport struct {
	// Options are the Trainium cores used, then each GPU baseline.
	Options []CostOption `json:"options"`
	// EqualSpend is, per GPU, what one GPU-hour's price buys on Trainium.
	EqualSpend []EqualSpend `json:"equal_spend,omitempty"`
	// UserPrices are the run config's cost.prices ("instance=USD/h").
	UserPrices []string `json:"user_prices,omitempty"`
	// EnergyNote and ScalingNote say how the energy and instance figures
	// are meant.
	EnergyNote  string `json:"energy_note"`
	ScalingNote string `json:"scaling_note"`
}

// CostOption is one side's price, energy and instance.
type CostOption struct {
	// Name labels the option; Accelerator is its chip's preset (trn2,
	// h100, ...); Units the NeuronCores or GPUs the run uses, Unit which.
	Name        string `json:"name"`
	Accelerator string `json:"accelerator"`
	Units       int    `json:"units"`
	Unit        string `json:"unit"`
	// Instance is the instance it is priced by (empty: no price), with
	// its Accelerators (chips or GPUs) and its price, the table's or the
	// user's (PriceOrigin "table" or "user"; PriceNote the table row's
	// kind, source and date, or the table's price a user's replaced).
	Instance           string  `json:"instance,omitempty"`
	Accelerators       int     `json:"instance_accelerators,omitempty"`
	InstanceUSDPerHour float64 `json:"instance_usd_per_hour,omitempty"`
	PriceOrigin        string  `json:"price_origin,omitempty"`
	PriceNote          string  `json:"price_note,omitempty"`
	// USDPerAcceleratorHour is a chip's or GPU's hour; USDPerHour the
	// units' share of the instance; USDPerMillionTokens at TokensPerS.
	USDPerAcceleratorHour float64 `json:"usd_per_accelerator_hour,omitempty"`
	USDPerHour            float64 `json:"usd_per_hour,omitempty"`
	TokensPerS            float64 `json:"tokens_per_s"`
	USDPerMillionTokens   float64 `json:"usd_per_million_tokens,omitempty"`
	// Energy at rated power: PowerW the units' share (a chip's watts
	// times cores used over cores per chip; a GPU's times GPUs), from
	// AcceleratorW (PowerTag, PowerSource); none where no reference gives
	// the chip's power (PowerSource then says so).
	AcceleratorW       float64 `json:"accelerator_power_w,omitempty"`
	PowerTag           string  `json:"power_tag,omitempty"`
	PowerSource        string  `json:"power_source"`
	PowerW             float64 `json:"power_w,omitempty"`
	JoulesPerToken     float64 `json:"joules_per_token,omitempty"`
	WhPerMillionTokens float64 `json:"wh_per_million_tokens,omitempty"`
	// PerInstance is the whole instance's throughput and cost.
	PerInstance *InstanceCost `json:"per_instance,omitempty"`
}

// InstanceCost is a whole instance: the run scaled to it by replicas.
type InstanceCost struct {
	Replicas            int     `json:"replicas"`
	Instances           int     `json:"instances"`
	TokensPerS          float64 `json:"tokens_per_s"`
	USDPerHour          float64 `json:"usd_per_hour"`
	USDPerMillionTokens float64 `json:"usd_per_million_tokens"`
	// Scaling says how (replicas of the part simulated).
	Scaling string `json:"scaling"`
}

// EqualSpend is what one GPU-hour's price buys: that many Trainium chips
// (and cores) for the hour, and the throughput each side gives for it.
type EqualSpend struct {
	GPU                string  `json:"gpu"`
	USDPerHour         float64 `json:"usd_per_hour"`
	TrainiumChips      float64 `json:"trainium_chips"`
	TrainiumCores      float64 `json:"trainium_cores"`
	GPUTokensPerS      float64 `json:"gpu_tokens_per_s"`
	TrainiumTokensPerS float64 `json:"trainium_tokens_per_s"`
	// Ratio is Trainium's tokens/s over the GPU's for the spend.
	Ratio float64 `json:"trainium_over_gpu"`
}

const scalingNote = "instance figures scale the simulated cores or GPU plan to the whole instance by replicas (as many copies as fit, side by side, each at the simulated tokens/s: an assumption, one copy is simulated), and pay for the whole instance, idle units included; equal spend scales throughput linearly with accelerators"

// priceBook is the run's prices: the table with cost.prices applied (they
// were checked when the config was loaded; should they not be, the table
// itself, and buildCost reports the error).
func priceBook(cfg *configs.RunConfig) cost.Book {
	b, err := cost.NewBook(cfg.Pricing.Prices.Values)
	if err != nil {
		return cost.Book{}
	}
	return b
}

// checkPrices checks cost.prices against the price table (configs checked
// the values) and returns the book; an error names the field.
func checkPrices(cfg *configs.RunConfig) (cost.Book, error) {
	p := cfg.Pricing.Prices
	names := append([]string(nil), p.Order...)
	if len(names) != len(p.Values) {
		names = names[:0]
		for n := range p.Values {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	for _, n := range names {
		if _, err := cost.NewBook(map[string]float64{n: p.Values[n]}); err != nil {
			if _, lerr := cost.Lookup(n); lerr != nil {
				err = lerr
			}
			return cost.Book{}, cfg.FieldError("cost.prices."+n, "%v", err)
		}
	}
	return cost.NewBook(p.Values)
}

// trainiumPrice is the instance the Trainium run is priced by: its
// hardware.instance when the table has it, else its chip's instance.
func trainiumPrice(cfg *configs.RunConfig, b cost.Book) (cost.Price, bool) {
	h := &cfg.Hardware
	if h.Instance != "" {
		if p, err := b.Lookup(h.Instance); err == nil && p.Accelerator == h.Preset {
			return p, true
		}
	}
	return b.ForAccelerator(h.Preset)
}

// gpuCalibration loads workload.model.gpu_calibration (nil without one);
// errors name the config field and the file's.
func gpuCalibration(cfg *configs.RunConfig) (*gpu.CalibrationFile, error) {
	m := cfg.Workload.Model
	if m == nil || m.GPUCalibration == "" {
		return nil, nil
	}
	f, err := gpu.LoadCalibration(m.GPUCalibration)
	if err != nil {
		return nil, cfg.FieldError("workload.model.gpu_calibration", "%v", err)
	}
	return f, nil
}

// CheckRun checks what a run's cost and GPU comparison read, before it
// simulates: the user's prices name instances of the table, the GPU
// baselines are presets, and the calibration file loads.
func CheckRun(cfg *configs.RunConfig) error {
	if _, err := checkPrices(cfg); err != nil {
		return err
	}
	m := cfg.Workload.Model
	if cfg.Workload.Kind != "model" || m == nil {
		return nil
	}
	for i, name := range m.GPUs {
		if _, err := gpu.Lookup(name); err != nil {
			return cfg.FieldError(fmt.Sprintf("workload.model.gpus[%d]", i), "%v (or [none])", err)
		}
	}
	_, err := gpuCalibration(cfg)
	return err
}

// GPUCalibrationReport says which calibration a run's GPU baselines used.
type GPUCalibrationReport struct {
	// File is the calibration file; Device the GPU it applies to (the
	// others use the defaults); Used whether that GPU is a baseline.
	File      string                   `json:"file"`
	Device    gpu.CalibrationDevice    `json:"device"`
	Example   string                   `json:"example,omitempty"`
	Measured  string                   `json:"measured,omitempty"`
	Constants gpu.CalibrationConstants `json:"constants"`
	Defaults  gpu.CalibrationConstants `json:"defaults"`
	Used      bool                     `json:"used"`
}

// buildCalibration fills the calibration's report.
func buildCalibration(cfg *configs.RunConfig, r *Report) error {
	f, err := gpuCalibration(cfg)
	if err != nil || f == nil {
		return err
	}
	c := &GPUCalibrationReport{File: f.Path, Device: f.Device, Example: f.Example, Measured: f.Measured, Constants: f.Constants, Defaults: gpu.Default.Constants()}
	for _, g := range r.GPU {
		c.Used = c.Used || g.GPU == f.Device.Name
	}
	r.GPUCalibration = c
	return nil
}

// buildCost fills the cost section of a model run with GPU baselines or
// a price.
func buildCost(cfg *configs.RunConfig, r *Report) error {
	m := r.Model
	if m == nil || m.TokensPerS <= 0 {
		return nil
	}
	book, err := checkPrices(cfg)
	if err != nil {
		return err
	}
	h := &cfg.Hardware
	coresPerChip := max(h.Chip.Cores, 1)
	cores := planCores(r.CoresUsed, m)
	cr := &CostReport{UserPrices: book.User(), EnergyNote: cost.EnergyNote, ScalingNote: scalingNote}
	trn := CostOption{Name: fmt.Sprintf("%s, %s", h.Preset, plural(int64(cores), "NeuronCore")), Accelerator: h.Preset, Units: cores, Unit: "NeuronCores", TokensPerS: m.TokensPerS}
	var trnChipHour float64
	if p, ok := trainiumPrice(cfg, book); ok {
		setPrice(&trn, p, float64(cores)/float64(coresPerChip))
		trnChipHour = p.PerAccelerator()
		s := cost.ScaleToInstance(p.Accelerators*coresPerChip, cores, m.TokensPerS)
		trn.PerInstance = instanceCost(s, p, cores, "NeuronCores")
	}
	if pw, ok := cost.ChipPower(h.Preset); ok {
		setPower(&trn, pw, pw.Watts*float64(cores)/float64(coresPerChip))
	} else {
		trn.PowerSource = fmt.Sprintf("no reference gives %s's chip power (AWS does not publish it, gpu.md §4.4)", h.Preset)
	}
	cr.Options = append(cr.Options, trn)
	for _, g := range r.GPU {
		d, err := gpu.Lookup(g.GPU)
		if err != nil {
			return err
		}
		n := max(g.GPUs, 1)
		o := CostOption{Name: gpuPlanName(g), Accelerator: g.GPU, Units: n, Unit: "GPUs", TokensPerS: g.TokensPerS}
		if p, ok := book.ForAccelerator(g.GPU); ok {
			setPrice(&o, p, float64(n))
			s := cost.ScaleToInstance(p.Accelerators, n, g.TokensPerS)
			o.PerInstance = instanceCost(s, p, n, "GPUs")
			if trnChipHour > 0 && trn.USDPerHour > 0 && o.USDPerHour > 0 {
				spend := p.PerAccelerator()
				e := EqualSpend{GPU: g.GPU, USDPerHour: spend, TrainiumChips: spend / trnChipHour, TrainiumCores: spend / trnChipHour * float64(coresPerChip),
					GPUTokensPerS: g.TokensPerS / o.USDPerHour * spend, TrainiumTokensPerS: m.TokensPerS / trn.USDPerHour * spend}
				e.Ratio = e.TrainiumTokensPerS / e.GPUTokensPerS
				cr.EqualSpend = append(cr.EqualSpend, e)
			}
		}
		if d.PowerW > 0 {
			setPower(&o, cost.Power{Watts: d.PowerW, Tag: "S", Source: "the GPU preset's rated power (gpu/devices.go: " + d.Source + ")"}, d.PowerW*float64(n))
		}
		cr.Options = append(cr.Options, o)
	}
	r.Cost = cr
	return nil
}

// gpuPlanName names a GPU option: "H100 SXM" or "2x H100 SXM".
func gpuPlanName(g GPUReport) string {
	if g.GPUs > 1 {
		return fmt.Sprintf("%dx %s", g.GPUs, g.Title)
	}
	return g.Title
}

// setPrice fills an option's price; accelerators is the share of chips
// or GPUs it uses.
func setPrice(o *CostOption, p cost.Price, accelerators float64) {
	o.Instance, o.Accelerators, o.InstanceUSDPerHour = p.Name, p.Accelerators, p.USDPerHour
	o.PriceOrigin, o.PriceNote = p.UsedFor(), p.Origin()
	o.USDPerAcceleratorHour = p.PerAccelerator()
	o.USDPerHour = p.PerAccelerator() * accelerators
	o.USDPerMillionTokens = cost.PerMillionTokens(o.USDPerHour, o.TokensPerS)
}

// setPower fills an option's energy from its accelerator's power and the
// watts of the share it uses.
func setPower(o *CostOption, p cost.Power, watts float64) {
	o.AcceleratorW, o.PowerTag, o.PowerSource, o.PowerW = p.Watts, p.Tag, p.Source, watts
	o.JoulesPerToken = cost.JoulesPerToken(watts, o.TokensPerS)
	o.WhPerMillionTokens = cost.WhPerMillionTokens(o.JoulesPerToken)
}

func instanceCost(s cost.PerInstance, p cost.Price, used int, unit string) *InstanceCost {
	if s.TokensPerS <= 0 {
		return nil
	}
	return &InstanceCost{Replicas: s.Replicas, Instances: s.Instances, TokensPerS: s.TokensPerS, USDPerHour: p.USDPerHour,
		USDPerMillionTokens: cost.PerMillionTokens(p.USDPerHour, s.TokensPerS), Scaling: s.Describe(used, unit)}
}

// writeCost prints the cost, energy and instance lines.
func (r *Report) writeCost(line func(k, format string, args ...any)) {
	if c := r.GPUCalibration; c != nil {
		what := "fitted from a timing table"
		switch {
		case c.Example != "":
			what = "an example, not a measurement"
		case c.Measured != "":
			what = "measured " + c.Measured
			if c.Device.GPU != "" {
				what += " on " + c.Device.GPU
			}
		}
		use := "used for " + c.Device.Name
		if !c.Used {
			use = "not used: " + c.Device.Name + " is not a baseline"
		}
		k := c.Constants
		line("GPU calibration", "%s (%s; %s): matmul %.3f, stream %.3f, GEMV %.3f, attention %.3f, launch %.2f µs", c.File, what, use, k.MatmulEff, k.StreamEff, k.GEMVEff, k.AttnEff, k.LaunchUs)
	}
	cr := r.Cost
	if cr == nil {
		return
	}
	seen := map[string]bool{}
	for _, o := range cr.Options {
		if o.Instance == "" || seen[o.Instance] {
			continue
		}
		k := ""
		if len(seen) == 0 {
			k = "prices"
		}
		seen[o.Instance] = true
		origin := "the table's: " + o.PriceNote
		if o.PriceOrigin == "user" {
			origin = "yours (cost.prices); " + strings.TrimPrefix(strings.TrimSuffix(o.PriceNote, ")"), "the user's price (cost.prices; ")
		}
		line(k, "%s $%.2f/h, %s", o.Instance, o.InstanceUSDPerHour, origin)
	}
	for i, o := range cr.Options {
		k := ""
		if i == 0 {
			k = "energy"
		}
		if o.JoulesPerToken <= 0 {
			line(k, "%s: unknown: %s", o.Name, o.PowerSource)
			continue
		}
		power := fmt.Sprintf("%.0f W", o.PowerW)
		if o.Unit == "NeuronCores" {
			if chips := o.PowerW / o.AcceleratorW; chips >= 1 && chips == math.Trunc(chips) {
				power += fmt.Sprintf(", %s at %.0f W", plural(int64(chips), "chip"), o.AcceleratorW)
			} else {
				power += fmt.Sprintf(", the cores' share of a %.0f W chip", o.AcceleratorW)
			}
		}
		if o.PowerTag != "" && o.PowerTag != "S" {
			power += " [" + o.PowerTag + "]"
		}
		line(k, "%s: %s J/token, %s Wh per million tokens (%s)", o.Name, sig3(o.JoulesPerToken), sig3(o.WhPerMillionTokens), power)
	}
	line("", "(at rated power, TDP/TGP, accelerators only: an estimate, real draw is usually lower)")
	for i, o := range cr.Options {
		k := ""
		if i == 0 {
			k = "per instance"
		}
		if p := o.PerInstance; p != nil {
			line(k, "%s: %.0f tokens/s at $%.2f/h, $%.3f per million tokens (%s)", o.Instance, p.TokensPerS, p.USDPerHour, p.USDPerMillionTokens, p.Scaling)
		}
	}
	for i, e := range cr.EqualSpend {
		k := ""
		if i == 0 {
			k = "equal spend"
		}
		line(k, "$%.2f/h, one %s-hour, buys %.2f %s chips (%.1f NeuronCores): %.0f tokens/s against the GPU's %.0f (%.2fx)",
			e.USDPerHour, strings.ToUpper(e.GPU), e.TrainiumChips, cr.Options[0].Accelerator, e.TrainiumCores, e.TrainiumTokensPerS, e.GPUTokensPerS, e.Ratio)
	}
}

// sig3 writes v to three significant digits without an exponent (7560,
// 0.00602), as people read energy and money.
func sig3(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) >= 1e15 || math.Abs(v) < 1e-9 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	// Rounded to three digits first, so 999.6 becomes 1000, not 999.6.
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	return strconv.FormatFloat(r, 'f', max(0, 2-int(math.Floor(math.Log10(math.Abs(r))))), 64)
}

// usdPerHour writes an hourly price: cents from a dollar up ($17.88),
// four decimals below one (a core's share, $0.6719).
func usdPerHour(v float64) string {
	if v >= 0.99995 { // (what %.4f would print as 1.0000)
		return fmt.Sprintf("$%.2f/h", v)
	}
	return fmt.Sprintf("$%.4f/h", v)
}

// Package cost is the price table: AWS instances with their
// accelerators, on-demand (or, where there is none, the labelled Capacity
// Block) USD per hour, each with its source and date
// (../shared/reference/gpu.md §4.1), the user's prices in its place
// (Book), the Trainium chips' power where a reference gives it, and the
// cost and energy of work from a price, a power and a throughput, scaled
// to a whole instance (docs/gpu.md#cost).
package cost

import (
	"fmt"
	"sort"
	"strings"
)

// Instance is an instance type's price.
type Instance struct {
	Name string
	// Accelerators are the chips (GPUs, Trainium or Inferentia chips);
	// Accelerator names the chip's preset (a GPU preset, or trn1, inf2,
	// trn2).
	Accelerators int
	Accelerator  string
	USDPerHour   float64
	// Kind says what the price is: on-demand, or a Capacity Block rate
	// where the instance has no on-demand list price.
	Kind, Source, Date string
}

// instances are gpu.md §4.1's rows (us-east-1, Linux, after the mid-2025
// GPU price cut).
var instances = []Instance{
	{Name: "p4d.24xlarge", Accelerators: 8, Accelerator: "a100-40gb", USDPerHour: 21.957642, Kind: "on-demand",
		Source: "gpu.md §4.1: AWS Price List API, SKU H7NGEAC6UEHNTKSJ [S46]", Date: "2026-07-28"},
	{Name: "p4de.24xlarge", Accelerators: 8, Accelerator: "a100-80gb", USDPerHour: 27.44705, Kind: "on-demand", Source: "gpu.md §4.1 [S47]", Date: "2026"},
	{Name: "p5.48xlarge", Accelerators: 8, Accelerator: "h100", USDPerHour: 55.04, Kind: "on-demand", Source: "gpu.md §4.1 [S46,S47]", Date: "2026-07-28"},
	{Name: "p5en.48xlarge", Accelerators: 8, Accelerator: "h200", USDPerHour: 63.296, Kind: "on-demand", Source: "gpu.md §4.1 [S47,S48]", Date: "2026"},
	{Name: "p6-b200.48xlarge", Accelerators: 8, Accelerator: "b200", USDPerHour: 113.9328, Kind: "on-demand", Source: "gpu.md §4.1: DoiT/Vantage listings [S48]", Date: "2026"},
	{Name: "trn1.32xlarge", Accelerators: 16, Accelerator: "trn1", USDPerHour: 21.50, Kind: "on-demand", Source: "gpu.md §4.1: AWS Price List API [S54,S46]", Date: "2026-09-01"},
	// The trn1 preset is priced by trn1.32xlarge (the first trn1 row);
	// these two are for hardware.instance and the user's prices.
	{Name: "trn1n.32xlarge", Accelerators: 16, Accelerator: "trn1", USDPerHour: 24.78, Kind: "on-demand", Source: "gpu.md §4.1: AWS Price List API [S46]", Date: "2026"},
	{Name: "trn1.2xlarge", Accelerators: 1, Accelerator: "trn1", USDPerHour: 1.34375, Kind: "on-demand", Source: "gpu.md §4.1: AWS Price List API [S54]", Date: "2026-09-01"},
	{Name: "inf2.48xlarge", Accelerators: 12, Accelerator: "inf2", USDPerHour: 12.98127, Kind: "on-demand (us-east-2)", Source: "gpu.md §4.1 [S54]", Date: "2026"},
	{Name: "trn2.48xlarge", Accelerators: 16, Accelerator: "trn2", USDPerHour: 35.76, Kind: "Capacity Block (no on-demand list price)",
		Source: "gpu.md §4.1: one observed 24-h Capacity Block, ap-south-2, $858.26 [S54]", Date: "2026"},
}

// ForAccelerator returns the instance an accelerator preset is priced by.
func ForAccelerator(preset string) (Instance, bool) {
	for _, in := range instances {
		if in.Accelerator == preset {
			return in, true
		}
	}
	return Instance{}, false
}

// Lookup returns an instance by name.
func Lookup(name string) (Instance, error) {
	for _, in := range instances {
		if in.Name == name {
			return in, nil
		}
	}
	var names []string
	for _, in := range instances {
		names = append(names, in.Name)
	}
	sort.Strings(names)
	return Instance{}, fmt.Errorf("unknown instance %q (instances: %s)", name, strings.Join(names, ", "))
}

// PerAccelerator is an instance's price per accelerator-hour.
func (in Instance) PerAccelerator() float64 { return in.USDPerHour / float64(in.Accelerators) }

// PerMillionTokens is the cost of a million tokens at tokensPerS on
// hardware that costs usdPerHour.
func PerMillionTokens(usdPerHour, tokensPerS float64) float64 {
	if tokensPerS <= 0 {
		return 0
	}
	return usdPerHour / 3600 / tokensPerS * 1e6
}

package cost

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Price is an instance's price as a run uses it: the table's row, or the
// user's rate (a reserved or negotiated price) in its place.
type Price struct {
	Instance
	// User marks the user's rate (the run config's cost.prices);
	// TableUSDPerHour is then the table's price it replaced.
	User            bool
	TableUSDPerHour float64
}

// Origin says where the price comes from, for reports: the user's rate,
// or the table's kind, source and date.
func (p Price) Origin() string {
	if p.User {
		return fmt.Sprintf("the user's price (cost.prices; the table's is $%.4g/h)", p.TableUSDPerHour)
	}
	return fmt.Sprintf("%s, %s, %s", p.Kind, p.Source, p.Date)
}

// Book is the price table with the user's prices in place of its rows.
// The zero Book is the table as it is.
type Book struct {
	user map[string]float64
}

// Names lists the table's instances, sorted.
func Names() []string {
	var names []string
	for _, in := range instances {
		names = append(names, in.Name)
	}
	sort.Strings(names)
	return names
}

// NewBook checks the user's prices (USD per instance-hour by instance
// name) and returns the table with them applied. An unknown instance, or
// a price that is not a positive finite number, is an error naming it.
func NewBook(user map[string]float64) (Book, error) {
	names := make([]string, 0, len(user))
	for n := range user {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := Lookup(n); err != nil {
			return Book{}, err
		}
		if v := user[n]; !(v > 0) || math.IsInf(v, 0) {
			return Book{}, fmt.Errorf("%s: the price must be a positive number of USD per instance-hour, got %v", n, v)
		}
	}
	b := Book{user: map[string]float64{}}
	for n, v := range user {
		b.user[n] = v
	}
	return b, nil
}

// price applies the user's rate, if any, to a row.
func (b Book) price(in Instance) Price {
	p := Price{Instance: in}
	if v, ok := b.user[in.Name]; ok {
		p.User, p.TableUSDPerHour, p.USDPerHour = true, in.USDPerHour, v
	}
	return p
}

// Lookup returns an instance's price by name.
func (b Book) Lookup(name string) (Price, error) {
	in, err := Lookup(name)
	if err != nil {
		return Price{}, err
	}
	return b.price(in), nil
}

// ForAccelerator returns the price of the instance an accelerator preset
// is priced by (the table's first row with that accelerator).
func (b Book) ForAccelerator(preset string) (Price, bool) {
	in, ok := ForAccelerator(preset)
	if !ok {
		return Price{}, false
	}
	return b.price(in), true
}

// User lists the user's prices as "instance=$/h", sorted (for reports).
func (b Book) User() []string {
	var out []string
	for n, v := range b.user {
		out = append(out, fmt.Sprintf("%s=%g", n, v))
	}
	sort.Strings(out)
	return out
}

// UsedFor says how an instance's price is reported: "the table's" or
// "the user's".
func (p Price) UsedFor() string {
	if p.User {
		return "user"
	}
	return "table"
}

// PerInstance is an instance's throughput from a simulated part of it.
// A part of used units (NeuronCores, GPUs) of an instance of capacity
// units runs as replicas: as many whole copies as fit, side by side, each
// at the part's tokens/s (the copies do not slow each other: an
// assumption, as the simulation runs one). A part larger than the
// instance spans Instances of them, each with its share of the tokens.
type PerInstance struct {
	Replicas, Instances int
	TokensPerS          float64
}

// ScaleToInstance scales tokensPerS of a part of used units to an
// instance of capacity units (both positive; otherwise the zero value).
func ScaleToInstance(capacity, used int, tokensPerS float64) PerInstance {
	if capacity <= 0 || used <= 0 || !(tokensPerS > 0) {
		return PerInstance{}
	}
	if used <= capacity {
		r := capacity / used
		return PerInstance{Replicas: r, Instances: 1, TokensPerS: tokensPerS * float64(r)}
	}
	n := (used + capacity - 1) / capacity
	return PerInstance{Replicas: 1, Instances: n, TokensPerS: tokensPerS / float64(n)}
}

// Describe says how the instance's throughput was scaled ("16 replicas of
// the 8 cores simulated", "the run spans 2 instances").
func (s PerInstance) Describe(used int, unit string) string {
	if s.Instances > 1 {
		return fmt.Sprintf("the %d %s simulated span %d instances: each its share", used, unit, s.Instances)
	}
	what := fmt.Sprintf("the %d %s", used, unit)
	if used == 1 {
		what = "the one " + strings.TrimSuffix(unit, "s")
	}
	return fmt.Sprintf("%d replicas of %s simulated, side by side", s.Replicas, what)
}

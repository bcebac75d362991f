package configs

import (
	"math"
	"reflect"
	"sort"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Pricing is the run config's cost section: the user's prices (reserved
// or negotiated rates) in place of the price table's (docs/gpu.md#cost).
// Loading checks the values; the names are checked against package
// cost's table by its user (report.CheckRun), as configs imports only isa.
type Pricing struct {
	// Prices are USD per instance-hour by instance name
	// (cost: {prices: {p5.48xlarge: 40.0}}).
	Prices InstancePrices `yaml:"prices"`
}

// InstancePrices are USD per instance-hour by instance name, in the order
// given. An instance name has dots, so a nested mapping's keys are joined
// with dots: --set cost.prices.p5.48xlarge=40 names p5.48xlarge.
type InstancePrices struct {
	Values map[string]float64
	// Order is the names in the order they were given.
	Order []string
}

func (p *InstancePrices) decodeNode(d *decoder, n *yaml.Node, path string) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	return p.decodeLevel(d, n, path, "")
}

// decodeLevel decodes one mapping of prices, prefix the name so far.
func (p *InstancePrices) decodeLevel(d *decoder, n *yaml.Node, path, prefix string) error {
	pairs, err := d.mappingPairs(n, joinPath(path, prefix))
	if err != nil {
		return err
	}
	for _, kv := range pairs {
		k, v := kv[0], kv[1]
		name := joinPath(prefix, k.Value)
		kp := joinPath(path, name)
		if v.Kind == yaml.MappingNode {
			if err := p.decodeLevel(d, v, path, name); err != nil {
				return err
			}
			continue
		}
		var x float64
		if err := d.decode(v, reflect.ValueOf(&x).Elem(), kp); err != nil {
			return err
		}
		if !(x > 0) || math.IsInf(x, 0) {
			return d.errAt(v, kp, "must be a positive price in USD per instance-hour, got %s", strconv.FormatFloat(x, 'g', -1, 64))
		}
		if p.Values == nil {
			p.Values = map[string]float64{}
		}
		if _, ok := p.Values[name]; !ok {
			p.Order = append(p.Order, name)
		}
		p.Values[name] = x
	}
	return nil
}

// priceFields are the cost section's leaves for Fields.
func priceFields(c *RunConfig) []Field {
	names := append([]string(nil), c.Pricing.Prices.Order...)
	if len(names) != len(c.Pricing.Prices.Values) {
		names = names[:0]
		for n := range c.Pricing.Prices.Values {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	var out []Field
	for _, n := range names {
		out = append(out, Field{Path: "cost.prices." + n, Value: strconv.FormatFloat(c.Pricing.Prices.Values[n], 'g', -1, 64)})
	}
	return out
}

package configs

import (
	"fmt"
	"reflect"
	"strconv"
)

// Field is one resolved leaf of a run config: its dotted path and value.
type Field struct {
	Path  string
	Value string
}

// Fields lists every leaf of the resolved config (hardware, workload,
// parallel, outputs, then the cost section's prices) in declaration
// order, the way `trnsim check` prints them.
func Fields(c *RunConfig) []Field {
	var out []Field
	v := reflect.ValueOf(c).Elem()
	for _, sec := range []string{"hardware", "workload", "parallel", "outputs"} {
		var sv reflect.Value
		switch sec {
		case "hardware":
			sv = v.FieldByName("Hardware")
		case "workload":
			sv = v.FieldByName("Workload")
		case "parallel":
			sv = v.FieldByName("Parallel")
		case "outputs":
			sv = v.FieldByName("Outputs")
		}
		walkLeaves(sv, sec, "", func(path string, fv reflect.Value, _ string) {
			out = append(out, Field{Path: path, Value: formatValue(fv)})
		})
	}
	out = append(out, priceFields(c)...)
	return out
}

// Value returns the resolved value of a leaf by its dotted path.
func (c *RunConfig) Value(path string) (string, bool) {
	for _, f := range Fields(c) {
		if f.Path == path {
			return f.Value, true
		}
	}
	return "", false
}

func formatValue(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	}
	return fmt.Sprint(v.Interface())
}

package configs

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// walkLeavesByReflection is walkLeaves as it was before its walk was
// planned once per type: the reference the plans are held to.
func walkLeavesByReflection(v reflect.Value, path, rule string, fn func(path string, v reflect.Value, rule string)) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Addr().Type().Implements(nodeDecoderType) {
			return
		}
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("yaml")
			if tag == "" || tag == "-" || !f.IsExported() {
				continue
			}
			walkLeavesByReflection(v.Field(i), joinPath(path, strings.Split(tag, ",")[0]), f.Tag.Get("check"), fn)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			walkLeavesByReflection(v.Elem(), path, rule, fn)
		}
	default:
		fn(path, v, rule)
	}
}

func TestLeafPlansWalkAsReflectionDoes(t *testing.T) {
	var configs []*RunConfig
	for _, p := range PresetNames() {
		cfg, err := LoadBytes([]byte("hardware: {preset: "+p+"}\nworkload: {kind: gemm, gemm: {m: 64, k: 64, n: 64}}\n"), "test.yaml", LoadOptions{})
		require.NoError(t, err, p)
		configs = append(configs, cfg)
	}
	for _, i := range InstanceNames() {
		cfg, err := LoadBytes([]byte("hardware: {instance: "+i+"}\nworkload: {kind: model, model: {name: llama-3-8b, mode: prefill, batch: 1, seq: 128}}\n"), "test.yaml", LoadOptions{})
		require.NoError(t, err, i)
		configs = append(configs, cfg)
	}
	// Every workload section at once (what no load gives), the zero config
	// and one with lists of structs.
	all := &RunConfig{Workload: Workload{Kind: "gemm", GEMM: &GEMMWorkload{M: 1}, Elementwise: &ElementwiseWorkload{},
		Assembly: &AssemblyWorkload{File: "a.s"}, Tile: &TileWorkload{Source: "x"}, Model: &ModelWorkload{GPUs: []string{"h100"}}, Op: &OpWorkload{Name: "silu"}}}
	links := &RunConfig{}
	links.Hardware.Topology.Links = []CustomLink{{A: 0, B: 1}}
	configs = append(configs, all, &RunConfig{}, links)
	for i, cfg := range configs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			v := reflect.ValueOf(cfg).Elem()
			for _, sec := range []string{"Hardware", "Workload", "Parallel", "Outputs", "Pricing"} {
				type leaf struct {
					Path, Rule string
					Value      any
					Addr       uintptr
				}
				var want, got []leaf
				walkLeavesByReflection(v.FieldByName(sec), strings.ToLower(sec), "", func(path string, fv reflect.Value, rule string) {
					want = append(want, leaf{path, rule, fv.Interface(), fv.UnsafeAddr()})
				})
				walkLeaves(v.FieldByName(sec), strings.ToLower(sec), "", func(path string, fv reflect.Value, rule string) {
					got = append(got, leaf{path, rule, fv.Interface(), fv.UnsafeAddr()})
				})
				assert.Equal(t, want, got, sec)
			}
		})
	}
}

package kernels

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/trnsim/trnsim/internal/memo"
	"github.com/trnsim/trnsim/isa"
	"github.com/trnsim/trnsim/workloads/sched"
)

// setSomething gives v, settable or not, a value other than its zero.
func setSomething(t *testing.T, v reflect.Value) {
	v = reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
	switch v.Kind() {
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint8:
		v.SetUint(3)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.String:
		v.SetString("x")
	case reflect.Array:
		setSomething(t, v.Index(0))
	case reflect.Struct:
		setSomething(t, v.Field(0))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	default:
		t.Fatalf("no value for a %s", v.Kind())
	}
}

// A plan's state, what the memo keys estimates on, covers every field an
// estimate may read: a field added to GEMMPlan without it fails here.
func TestPlanStateCoversEveryField(t *testing.T) {
	ignored := map[string]bool{"auto": true, "opID": true} // the report's, never an estimate's
	typ := reflect.TypeOf(GEMMPlan{})
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if ignored[f.Name] {
			continue
		}
		var p GEMMPlan
		setSomething(t, reflect.ValueOf(&p).Elem().Field(i))
		require.NotEqual(t, planState{}, p.state(), "GEMMPlan.%s is not in planState", f.Name)
	}
}

// The target's key covers every field but the SBUF size, the chip routes
// and the memo itself.
func TestTargetKeyCoversEveryField(t *testing.T) {
	ignored := map[string]bool{"ChipHops": true, "ChipLatencyNs": true, "Memo": true}
	base := func() *sched.Target { return &sched.Target{Limits: &isa.Limits{}} }
	zero := keyOfTarget(base())
	typ := reflect.TypeOf(sched.Target{})
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if ignored[f.Name] || f.Name == "Limits" {
			continue
		}
		tg := base()
		setSomething(t, reflect.ValueOf(tg).Elem().Field(i))
		require.NotEqual(t, zero, keyOfTarget(tg), "Target.%s is not in targetKey", f.Name)
	}
	lt := reflect.TypeOf(isa.Limits{})
	for i := 0; i < lt.NumField(); i++ {
		tg := base()
		setSomething(t, reflect.ValueOf(tg.Limits).Elem().Field(i))
		if lt.Field(i).Name == "SBUFPartitionBytes" {
			require.Equal(t, zero, keyOfTarget(tg), "the SBUF size is what the searches sharing a key differ in")
			continue
		}
		require.NotEqual(t, zero, keyOfTarget(tg), "Limits.%s is not in targetKey", lt.Field(i).Name)
	}
}

// A nil memo keeps nothing; a memo keeps one value per key.
func TestMemoKeepsOneValuePerKey(t *testing.T) {
	var none *memo.Memo
	n := 0
	build := func() any { n++; return n }
	require.Equal(t, 1, none.Get("k", build))
	require.Equal(t, 2, none.Get("k", build))
	m := memo.New()
	require.Equal(t, 3, m.Get("k", build))
	require.Equal(t, 3, m.Get("k", build))
	require.Equal(t, 4, m.Get("j", build))
	require.Equal(t, 2, m.Len())
}

// Package memotest helps test memo keys: which fields of a struct a key
// misses.
package memotest

import (
	"reflect"
	"slices"
	"unsafe"
)

// MissedFields returns the names of the fields of the struct s points to
// that key does not see: with each field in turn changed (and put back
// after), key's value stays what it is for s as given. skip names fields
// left out on purpose. A test of a memo key calls it, so that a field
// added later and left out of the key fails that test. It sees only the
// struct's own fields (a key's other inputs need tests of their own); a
// nested struct or array changes in its first field or element only, and
// fields of other kinds (interfaces, functions, channels) and empty ones
// do not change: they are reported as missed.
func MissedFields(s any, key func() any, skip ...string) []string {
	v := reflect.ValueOf(s).Elem()
	base := key()
	var missed []string
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Name
		if slices.Contains(skip, name) {
			continue
		}
		f := reflect.NewAt(v.Field(i).Type(), unsafe.Pointer(v.Field(i).UnsafeAddr())).Elem()
		old := reflect.New(f.Type()).Elem()
		old.Set(f)
		change(f)
		if key() == base {
			missed = append(missed, name)
		}
		f.Set(old)
	}
	return missed
}

// change sets v to a value other than the one it has.
func change(v reflect.Value) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 3)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 1.5)
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Array:
		if v.Len() > 0 {
			change(v.Index(0))
		}
	case reflect.Struct:
		if v.NumField() > 0 {
			change(reflect.NewAt(v.Field(0).Type(), unsafe.Pointer(v.Field(0).UnsafeAddr())).Elem())
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
	}
}

// Package memo holds work that several lowerings in one process share: a
// sweep's points, or the layers of one model, that plan the same kernel
// again. A value is made once per key and kept; the memo is bounded, and
// what it gives is what making the value again would give, so results do
// not depend on what it holds or on the order points are lowered in.
package memo

import (
	"reflect"
	"slices"
	"sync"
	"unsafe"
)

// DefaultEntries is how many values a memo made by New keeps before it
// starts again empty.
const DefaultEntries = 1 << 12

// Memo maps comparable keys to values made once. Safe for concurrent use;
// a nil *Memo keeps nothing (Get makes the value every time).
type Memo struct {
	mu      sync.Mutex
	entries map[any]any
	limit   int
}

// New returns an empty memo that keeps up to DefaultEntries values.
func New() *Memo { return &Memo{entries: map[any]any{}, limit: DefaultEntries} }

// Get returns the value kept for key, or makes it with build and keeps it.
// The key must be comparable, and the value must be what build would give
// for that key whenever it runs (a value that is itself filled as it is
// used must guard itself). build runs outside the memo's lock.
func (m *Memo) Get(key any, build func() any) any {
	if m == nil {
		return build()
	}
	m.mu.Lock()
	v, ok := m.entries[key]
	m.mu.Unlock()
	if ok {
		return v
	}
	v = build()
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.entries[key]; ok {
		return old // made meanwhile by another caller: one value per key
	}
	if len(m.entries) >= m.limit {
		clear(m.entries)
	}
	m.entries[key] = v
	return v
}

// Len is how many values the memo keeps.
func (m *Memo) Len() int {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}

// MissedFields returns the names of the fields of the struct s points to
// that key does not see: with each field in turn changed (and put back
// after), key's value stays what it is for s as given. skip names fields
// left out on purpose. A test of a memo key calls it, so that a field
// added later and left out of the key fails that test.
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
		change(v.Index(0))
	case reflect.Struct:
		change(reflect.NewAt(v.Field(0).Type(), unsafe.Pointer(v.Field(0).UnsafeAddr())).Elem())
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
	}
}

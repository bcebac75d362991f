// Package memo holds work that several lowerings in one process share: a
// sweep's points, or the layers of one model, that plan the same kernel
// again. A value is made once per key and kept; the memo is bounded, and
// what it gives is what making the value again would give, so results do
// not depend on what it holds or on the order points are lowered in.
package memo

import "sync"

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

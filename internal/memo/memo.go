// Package memo holds work that several lowerings in one process share: a
// sweep's points, or the layers of one model, that plan the same kernel
// again. A value is made once per key and kept; the memo is bounded, and
// what it gives is what making the value again would give, so results do
// not depend on what it holds or on the order points are lowered in.
package memo

import "sync"

// DefaultEntries is how many values a memo keeps at most: the newest
// half of them, and those of the half before that a caller asked for
// again (a GEMM plan search's shared estimates are some tens of KiB).
const DefaultEntries = 1 << 11

// Memo maps comparable keys to values made once. Safe for concurrent use;
// a nil *Memo keeps nothing (Get makes the value every time), and the zero
// Memo is an empty one. It keeps two generations of values: when the newer
// holds half the limit, the older is dropped and the newer takes its
// place, so what a sweep's neighbouring points share stays and the rest
// goes.
type Memo struct {
	mu       sync.Mutex
	cur, old map[any]any
	limit    int
}

// New returns an empty memo that keeps up to DefaultEntries values.
func New() *Memo { return &Memo{limit: DefaultEntries} }

// Get returns the value kept for key, or makes it with build and keeps it.
// The key must be comparable, and the value must be what build would give
// for that key whenever it runs (a value that is itself filled as it is
// used must guard itself). build runs outside the memo's lock.
func (m *Memo) Get(key any, build func() any) any {
	if m == nil {
		return build()
	}
	m.mu.Lock()
	v, ok := m.lookup(key)
	m.mu.Unlock()
	if ok {
		return v
	}
	v = build()
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.lookup(key); ok {
		return old // made meanwhile by another caller: one value per key
	}
	m.keep(key, v)
	return v
}

// lookup finds key's value, moving it to the newer generation.
func (m *Memo) lookup(key any) (any, bool) {
	if v, ok := m.cur[key]; ok {
		return v, true
	}
	v, ok := m.old[key]
	if ok {
		delete(m.old, key)
		m.keep(key, v)
	}
	return v, ok
}

// keep adds key's value to the newer generation, starting a new one when
// it is full.
func (m *Memo) keep(key, v any) {
	limit := m.limit
	if limit <= 0 {
		limit = DefaultEntries
	}
	if m.cur == nil || len(m.cur) >= max(limit/2, 1) {
		m.old, m.cur = m.cur, map[any]any{}
	}
	m.cur[key] = v
}

// Len is how many values the memo keeps.
func (m *Memo) Len() int {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.cur) + len(m.old)
}

package forecast

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// The live path: the detector judges every second and must not wait on a
// database, while a key's hourly series changes once an hour. So the
// series the forecasts read are kept in a Cache, which the wiring
// refreshes from a Series (the history store) now and then, away from the
// detector's tick; the detector reads the cache.

// Cache holds keys' series between refreshes. It is safe for concurrent
// use.
type Cache struct {
	mu   sync.RWMutex
	keys map[cacheKey][]Point
}

type cacheKey struct{ table, index, class, key string }

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{keys: map[cacheKey][]Point{}} }

// Points returns the cached series of a key; nil when none was fetched.
// The slice is shared and must not be modified.
func (c *Cache) Points(table, index, class, key string) []Point {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.keys[cacheKey{table, index, class, key}]
}

// Refresh asks src for the series of each query and replaces the cache
// with the answers: keys not asked for are dropped. A query that fails
// keeps its key's previous series, and the first error is returned.
func (c *Cache) Refresh(ctx context.Context, src Series, qs []Query) error {
	next := make(map[cacheKey][]Point, len(qs))
	var first error
	for _, q := range qs {
		id := cacheKey{q.Table, q.Index, q.Class, q.Key}
		pts, err := src.BusiestSeconds(ctx, q)
		if err != nil {
			if first == nil {
				first = fmt.Errorf("series of %s/%s %s key: %w", q.Table, q.Index, q.Class, err)
			}
			pts = c.Points(q.Table, q.Index, q.Class, q.Key)
		}
		next[id] = pts
	}
	c.mu.Lock()
	c.keys = next
	c.mu.Unlock()
	return first
}

// Memory is a Series held in memory: points added by key, answered
// between two times. It is the Series of tests and of a daemon without a
// history store.
type Memory struct {
	mu   sync.RWMutex
	keys map[cacheKey][]Point
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return &Memory{keys: map[cacheKey][]Point{}} }

// Add records a key's busiest second of the step starting at at: the
// larger of what it had and units.
func (m *Memory) Add(table, index, class, key string, at time.Time, units float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := cacheKey{table, index, class, key}
	pts := m.keys[id]
	i, found := slices.BinarySearchFunc(pts, at, func(p Point, t time.Time) int { return p.Time.Compare(t) })
	if found {
		pts[i].Units = max(pts[i].Units, units)
		return
	}
	m.keys[id] = slices.Insert(pts, i, Point{Time: at, Units: units})
}

// BusiestSeconds returns the key's points in [q.From, q.To).
func (m *Memory) BusiestSeconds(_ context.Context, q Query) ([]Point, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []Point
	for _, p := range m.keys[cacheKey{q.Table, q.Index, q.Class, q.Key}] {
		if !p.Time.Before(q.From) && p.Time.Before(q.To) {
			out = append(out, p)
		}
	}
	return out, nil
}

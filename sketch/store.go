// Package sketch keeps, per table, fixed-size summaries of a sliding window
// of traffic: the heaviest partition keys per class (count-min with
// conservative update plus top-K) and the number of distinct partition keys
// (HyperLogLog). It knows keys, classes, units and time, nothing of AWS.
package sketch

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/hotkeyd/hotkeyd/ingest"
)

// Config sizes the sketches. Memory per table is fixed by it, whatever the
// number of distinct keys.
type Config struct {
	// Window is the sliding window the shares are computed over. Zero means
	// one window that never expires (hotkeyd analyze over whole files).
	Window time.Duration
	// SubWindows is the number of slots the window is cut into; traffic
	// expires one slot at a time.
	SubWindows int
	// Tracked is the number of heavy partition keys tracked per table and class.
	Tracked int
}

// DefaultConfig returns the defaults: a 60 s window of 12 × 5 s slots and
// 100 keys tracked per table and class.
func DefaultConfig() Config {
	return Config{Window: 60 * time.Second, SubWindows: 12, Tracked: 100}
}

// Store holds the sketches of every table. It implements ingest.Sink.
//
// PLACEHOLDER: an exact, unwindowed map used only until the real sketches
// land; it has unbounded memory and ignores Window.
type Store struct {
	cfg    Config
	now    func() time.Time
	mu     sync.Mutex
	tables map[[2]string]*exactTable
}

type exactTable struct {
	start, end time.Time
	events     uint64
	units      [ingest.NumClasses]float64
	evs        [ingest.NumClasses]uint64
	keys       [ingest.NumClasses]map[string]float64
	distinct   map[string]struct{}
}

// NewStore returns a Store sized by cfg. now is the clock used for live
// windows; tests pass a virtual one.
func NewStore(cfg Config, now func() time.Time) (*Store, error) {
	if now == nil {
		now = time.Now
	}
	return &Store{cfg: cfg, now: now, tables: map[[2]string]*exactTable{}}, nil
}

// Put adds a batch of Events. It is safe for concurrent use.
func (s *Store) Put(ctx context.Context, batch []ingest.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range batch {
		e := &batch[i]
		id := [2]string{e.Table, e.Index}
		t := s.tables[id]
		if t == nil {
			t = &exactTable{distinct: map[string]struct{}{}}
			for c := range t.keys {
				t.keys[c] = map[string]float64{}
			}
			s.tables[id] = t
		}
		if e.Throttled {
			continue
		}
		if t.start.IsZero() || e.Time.Before(t.start) {
			t.start = e.Time
		}
		if e.Time.After(t.end) {
			t.end = e.Time
		}
		t.events++
		t.units[e.Class] += e.Units
		t.evs[e.Class]++
		if e.PK != "" {
			t.keys[e.Class][e.PK] += e.Units
			t.distinct[e.PK] = struct{}{}
		}
	}
	return nil
}

// Snapshot returns the current picture of every table.
func (s *Store) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	var snap Snapshot
	for id, t := range s.tables {
		ts := TableSnapshot{Table: id[0], Index: id[1], Start: t.start, End: t.end, Events: t.events, DistinctKeys: uint64(len(t.distinct))}
		for c := range t.keys {
			cs := ClassStats{Events: t.evs[c], Units: t.units[c]}
			for k, u := range t.keys[c] {
				cs.Top = append(cs.Top, KeyStat{Key: k, Units: u, Share: u / t.units[c]})
			}
			sort.Slice(cs.Top, func(i, j int) bool { return cs.Top[i].Units > cs.Top[j].Units })
			if len(cs.Top) > s.cfg.Tracked {
				cs.Top = cs.Top[:s.cfg.Tracked]
			}
			ts.Classes[c] = cs
		}
		snap.Tables = append(snap.Tables, ts)
		if snap.Start.IsZero() || t.start.Before(snap.Start) {
			snap.Start = t.start
		}
		if t.end.After(snap.End) {
			snap.End = t.end
		}
	}
	sort.Slice(snap.Tables, func(i, j int) bool {
		a, b := snap.Tables[i], snap.Tables[j]
		if a.Table != b.Table {
			return a.Table < b.Table
		}
		return a.Index < b.Index
	})
	return snap
}

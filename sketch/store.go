// Package sketch keeps, per table, fixed-size summaries of a sliding window
// of traffic: the heaviest partition keys per class (count-min with
// conservative update plus exactly counted candidates), the number of
// distinct partition keys (HyperLogLog, exact below 1000), records per
// stream shard and the most throttled keys. It knows keys, classes, units
// and time, nothing of AWS.
//
// # Memory
//
// A table (or index) costs at most Config.Footprint bytes, fixed by the
// configuration and independent of the number of distinct keys. At
// DefaultConfig that is about 0.98 MiB, both classes and the whole window
// (see docs/bench/sketch.md for the breakdown); a table that saw one class,
// few keys or no stream shards costs much less, as the parts are allocated
// on first use. The number of tables is bounded by Config.MaxTables (1000 by
// default, so at most about 1 GiB); events of further tables are dropped and
// counted by Store.Dropped.
//
// # Accuracy
//
// Per-class totals (events, units) are exact. A key's units are an upper
// bound that overcounts by at most KeyStat.Error, itself at most ε = e/Width
// of the class's window units with probability 1-δ, δ = e^-Depth (ε ≈ 0.27 %,
// δ ≈ 1.8 % at defaults), and exact for a key that has been among the
// counted candidates for a whole window. Distinct keys are exact below 1000
// per slot and union, and within about 0.81 % (one standard error) above.
//
// # Windows
//
// In live mode (Config.Window > 0) the window is a ring of SubWindows slots;
// an event goes to the slot of its arrival time, read from the clock given
// to NewStore at Put (sources' record times can be coarse: DynamoDB Local
// rounds them to the minute). A slot expires whole once the window has
// moved past it, so a key hot two windows ago is gone. In analyze mode
// (Window == 0) there is one window that never expires, bounded by the
// earliest and latest event times.
package sketch

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hotkeyd/hotkeyd/ingest"
)

// Store holds the sketches of every table. It implements ingest.Sink; Put
// and Snapshot are safe for concurrent use.
//
// There is no store-wide lock on the hot path: the table index is an
// immutable map swapped on the rare insertion of a new table, and each
// table has its own mutex, held by Put for a run of consecutive events of
// that table and by Snapshot while it copies that table out.
type Store struct {
	cfg  Config
	now  func() time.Time
	slot time.Duration // 0 in analyze mode

	tables  atomic.Pointer[map[tableID]*table]
	addMu   sync.Mutex // serialises insertions into tables
	dropped atomic.Uint64
}

// NewStore returns a Store sized by cfg (zero fields take the defaults).
// now is the clock of live windows; nil means time.Now, tests pass a
// virtual one.
func NewStore(cfg Config, now func() time.Time) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sketch config: %w", err)
	}
	cfg = cfg.withDefaults()
	if now == nil {
		now = time.Now
	}
	s := &Store{cfg: cfg, now: now}
	if cfg.Window > 0 {
		s.slot = cfg.Window / time.Duration(cfg.SubWindows)
	}
	m := map[tableID]*table{}
	s.tables.Store(&m)
	return s, nil
}

// Config returns the configuration in use, defaults filled in.
func (s *Store) Config() Config { return s.cfg }

// Dropped returns the number of events not counted since the Store was
// made: events of tables beyond Config.MaxTables and events with an
// unknown class.
func (s *Store) Dropped() uint64 { return s.dropped.Load() }

// Tables returns the number of tables and indexes tracked.
func (s *Store) Tables() int { return len(*s.tables.Load()) }

func (s *Store) epoch(now time.Time) int64 {
	if s.slot == 0 {
		return 0
	}
	return now.UnixNano() / int64(s.slot)
}

// Put adds a batch of Events, each to the current slot of its table's
// window. It never blocks for long: it holds one table's lock at a time.
func (s *Store) Put(ctx context.Context, batch []ingest.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	epoch := s.epoch(s.now())
	for i := 0; i < len(batch); {
		id := tableID{batch[i].Table, batch[i].Index}
		j := i + 1
		for j < len(batch) && batch[j].Table == id.table && batch[j].Index == id.index {
			j++
		}
		t := s.table(id, epoch)
		if t == nil {
			s.dropped.Add(uint64(j - i))
			i = j
			continue
		}
		var bad uint64
		t.mu.Lock()
		t.advance(epoch)
		for k := i; k < j; k++ {
			if batch[k].Class >= ingest.NumClasses {
				bad++
				continue
			}
			t.add(&batch[k])
		}
		t.mu.Unlock()
		if bad > 0 {
			s.dropped.Add(bad)
		}
		i = j
	}
	return nil
}

// table returns the table id, creating it unless MaxTables are tracked.
func (s *Store) table(id tableID, epoch int64) *table {
	if t := (*s.tables.Load())[id]; t != nil {
		return t
	}
	s.addMu.Lock()
	defer s.addMu.Unlock()
	old := *s.tables.Load()
	if t := old[id]; t != nil {
		return t
	}
	if len(old) >= s.cfg.MaxTables {
		return nil
	}
	m := make(map[tableID]*table, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	t := newTable(id, &s.cfg, epoch)
	m[id] = t
	s.tables.Store(&m)
	return t
}

// Snapshot returns the current picture of every table: immutable, sharing
// nothing with the live sketches. It locks one table at a time, briefly.
func (s *Store) Snapshot() Snapshot {
	now := s.now()
	epoch := s.epoch(now)
	tables := *s.tables.Load()
	snap := Snapshot{Tables: make([]TableSnapshot, 0, len(tables))}
	var slotSeconds float64
	if s.slot > 0 {
		slotSeconds = s.slot.Seconds()
		snap.Start = time.Unix(0, (epoch-int64(s.cfg.SubWindows)+1)*int64(s.slot))
		snap.End = now
	}
	var scratch []keyStat
	for _, t := range tables {
		var ts TableSnapshot
		var first, last time.Time
		t.mu.Lock()
		t.advance(epoch)
		ts, scratch = t.snapshot(s.cfg.Tracked, slotSeconds, scratch)
		first, last = t.first, t.last
		t.mu.Unlock()
		if s.slot > 0 {
			ts.Start, ts.End = snap.Start, snap.End
		} else {
			ts.Start, ts.End = first, last
			analyzeRates(&ts)
			if !first.IsZero() && (snap.Start.IsZero() || first.Before(snap.Start)) {
				snap.Start = first
			}
			if last.After(snap.End) {
				snap.End = last
			}
		}
		snap.Tables = append(snap.Tables, ts)
	}
	sort.Slice(snap.Tables, func(i, j int) bool {
		a, b := &snap.Tables[i], &snap.Tables[j]
		if a.Table != b.Table {
			return a.Table < b.Table
		}
		return a.Index < b.Index
	})
	return snap
}

// analyzeRates sets PeakUnitsPerSecond over whole files: the units over the
// covered duration, at least one second.
func analyzeRates(ts *TableSnapshot) {
	d := ts.End.Sub(ts.Start).Seconds()
	if d < 1 {
		d = 1
	}
	for c := range ts.Classes {
		ts.Classes[c].PeakUnitsPerSecond = ts.Classes[c].Units / d
	}
}

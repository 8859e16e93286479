package sketch

import (
	"cmp"
	"slices"

	"github.com/zeebo/xxh3"
)

// Which tables are tracked once Config.MaxTables are.
//
// Input can name any number of tables (a client of the ingest endpoint, a
// buggy log), and most of a junk flood's names carry an event or two. A
// table is tracked in place of another only when it is busier: a table
// that is not tracked wins the place of the least busy tracked one when
// that one is idle (no events or throttled calls in the window) or had
// fewer events in the window than the newcomer brings. The newcomer's
// events are those of the Put that brings it, plus the events of its
// earlier refused Puts (and its own traffic, if it was tracked before and
// evicted) in the current window. So a table with traffic always keeps
// its place against names that come once, names that come once churn
// only among themselves, and a real table that arrives during a flood of
// them gets in with its second event at most.
//
// The least busy tables are found by ranking every tracked table by its
// events in the window, then by how long ago it last counted anything; the
// ranking is made again at most once a second of the Store's clock (or
// once used up), so a flood of new names costs one ranking a second, not
// one per name.

// admission is the Store's state for choosing which table to drop. It is
// guarded by Store.addMu.
type admission struct {
	ranked   []*table // tracked tables, least busy first, as of rankedAt
	next     int      // ranked[next] is the next victim considered
	rankedAt int64    // the clock second (live) or Put sequence (analyze) of the ranking
	// refused holds the events of tables not tracked (refused, or
	// evicted with their traffic) in the current window, by name hash;
	// cleared every window and when it holds 4 × MaxTables names.
	refused      map[uint64]uint64
	refusedEpoch int64
	onEvict      func(table, index string)
}

// OnEvict sets f to be called with the name of every table (index) the
// Store stops tracking, e.g. to drop its metric series; f must not call
// the Store. It must be called before the first Put.
func (s *Store) OnEvict(f func(table, index string)) { s.adm.onEvict = f }

func idHash(id tableID) uint64 {
	return xxh3.HashString(id.table) ^ xxh3.HashString(id.index)*0x9e3779b97f4a7c15
}

// admit decides whether the table id, not tracked and bringing weight
// events, takes the place of the least busy tracked table; if so, that
// one is evicted, and admit returns the events the newcomer had refused
// before (its credit). It is called with addMu held and MaxTables tracked.
func (s *Store) admit(id tableID, at clock, weight uint64) (ok bool, credit uint64) {
	a := &s.adm
	if a.refused == nil || len(a.refused) >= 4*s.cfg.MaxTables ||
		(s.slot > 0 && at.epoch-a.refusedEpoch >= int64(s.cfg.SubWindows)) {
		a.refused = map[uint64]uint64{}
		a.refusedEpoch = at.epoch
	}
	h := idHash(id)
	credit = a.refused[h]
	weight += credit
	v := s.victim(at)
	if v == nil {
		a.refused[h] = weight
		return false, 0
	}
	v.mu.Lock()
	v.advance(at.epoch, at.sec)
	traffic := s.weight(v, at)
	if traffic > 0 && traffic >= weight {
		v.mu.Unlock()
		a.refused[h] = weight
		return false, 0
	}
	v.evicted = true
	v.mu.Unlock()
	a.next++
	delete(a.refused, h)
	if traffic > 0 {
		// If it comes back, it competes with the traffic it had.
		a.refused[idHash(v.id)] = traffic
	}
	s.tables.Delete(v.id)
	s.ntables.Add(-1)
	s.reorder(v, false)
	s.evicted.Add(1)
	if a.onEvict != nil {
		a.onEvict(v.id.table, v.id.index)
	}
	return true, credit
}

// weight is what a tracked table weighs against a newcomer: its traffic
// in the window, and, for a window after it got in, the events it had
// refused before (so that the newcomer that just won a place is not the
// next one out). It is called with t.mu held.
func (s *Store) weight(t *table, at clock) uint64 {
	w := t.traffic()
	if t.credit > 0 && (s.slot == 0 || at.epoch-t.creditEpoch < int64(s.cfg.SubWindows)) {
		w += t.credit
	}
	return w
}

// victim returns the least busy tracked table, ranking the tables again
// when the ranking is used up or older than a second (live) or than 1024
// Puts (whole files).
func (s *Store) victim(at clock) *table {
	a := &s.adm
	now := at.sec
	if s.slot == 0 {
		now = int64(s.putSeq.Load() >> 10)
	}
	if now != a.rankedAt || a.next >= len(a.ranked) {
		s.rank(at)
		a.rankedAt = now
	}
	// evicted is written with addMu held, as it is now.
	for a.next < len(a.ranked) && a.ranked[a.next].evicted {
		a.next++
	}
	if a.next < len(a.ranked) {
		return a.ranked[a.next]
	}
	return nil
}

// rank orders the tracked tables least busy first: by their events in the
// window (idle ones first), then by how long ago they last counted.
func (s *Store) rank(at clock) {
	a := &s.adm
	type ranked struct {
		t       *table
		traffic uint64
		active  uint64
	}
	var all []ranked
	s.each(func(_ tableID, t *table) {
		t.mu.Lock()
		if !t.evicted {
			t.advance(at.epoch, at.sec)
			all = append(all, ranked{t, s.weight(t, at), t.active})
		}
		t.mu.Unlock()
	})
	slices.SortFunc(all, func(x, y ranked) int {
		return cmp.Or(cmp.Compare(x.traffic, y.traffic), cmp.Compare(x.active, y.active))
	})
	a.ranked = a.ranked[:0]
	for _, r := range all {
		a.ranked = append(a.ranked, r.t)
	}
	a.next = 0
}

// traffic is what the table counted in the window: its events of both
// classes and its throttled calls. It is called with t.mu held.
func (t *table) traffic() uint64 {
	n := t.events()
	for _, th := range t.throttles {
		if th != nil {
			n += th.events()
		}
	}
	return n
}

package sketch

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/zeebo/xxh3"
)

// Which tables are tracked once Config.MaxTables are.
//
// Input can name any number of tables (a client of the ingest endpoint, a
// buggy log), and a flood of made-up names can carry many events each: one
// body of 3 MB holds 3000 names of 20 events. Three rules decide.
//
// A table the config declares (Store.Declare) is always tracked: its place
// is reserved out of MaxTables, the other tables share the rest, and it is
// never evicted.
//
// Among the others, a table that is not tracked wins the place of the
// least busy tracked one when that one is idle (no events or throttled
// calls in the window); or when its traffic over the last seconds is far
// above that table's: in the rateSeconds (8) seconds of the Store's clock
// up to now, it came in at least rateMinSeconds (3) of them, and its
// events per second since its first of them are more than rateFactor (8)
// times the least busy table's, over those seconds or over the window,
// whichever is higher; or when it brought more events than that table had
// in the window, in more seconds of the Store's clock (arrivals) than it
// had events in. The newcomer's events and seconds are those of the Put
// that brings it, plus those of its earlier refused Puts (and its own, if
// it was tracked before and evicted) in the current window.
//
// So a real table of 200 events a second gets in on its third second
// against names that tick at one event a second, however long they have
// ticked; a table with traffic keeps its place against any number of
// names that come in one burst, however many events each carries (a burst
// is one second); names that come once, or tick, churn only among
// themselves and idle tables; and a table that keeps coming at a rate
// like the others' gets in once it has come in more seconds, with more
// events, than the least busy tracked table. In analyze mode (whole files,
// no clock) the events alone decide: the busiest tables of the input are
// counted.
//
// The least busy tables are found by ranking every tracked table by its
// events in the window, then by how long ago it last counted anything; the
// ranking is made again at most once a second of the Store's clock (or
// once used up), so a flood of new names costs one ranking a second, not
// one per name.

// The rate rule of admission: a newcomer whose events per second, over at
// least rateMinSeconds of the last rateSeconds seconds (table.go), are more
// than rateFactor times the least busy tracked table's takes its place.
const (
	rateMinSeconds = 3
	rateFactor     = 8
)

// admission is the Store's state for choosing which table to drop. It is
// guarded by Store.addMu.
type admission struct {
	ranked   []*table // tracked tables, least busy first, as of rankedAt
	next     int      // ranked[next] is the next victim considered
	rankedAt int64    // the clock second (live) or Put sequence (analyze) of the ranking
	// refused holds the claims of tables not tracked (refused, or evicted
	// with their traffic) in the current window, by name hash; cleared
	// every window, and of the names that came in one second only when it
	// holds 4 × MaxTables names.
	refused      map[uint64]claim
	refusedEpoch int64
	onEvict      func(table, index string)
	// declared are the tables and indexes the config declares (Declare),
	// tracked whatever their traffic; ndeclared of them are tracked now.
	declared  map[tableID]bool
	ndeclared int
}

// claim is what a table not tracked brought in the current window: its
// events, and the seconds of the Store's clock they came in, the last of
// them last; and, for the rate rule, its events since the first second of
// its recent run (rateFrom) and the seconds they came in.
type claim struct {
	events      uint64
	seconds     uint32
	last        int64
	rateFrom    int64
	rateEvents  uint64
	rateSeconds uint32
}

// add counts a Put of weight events at the second sec into c.
func (c *claim) add(sec int64, weight uint64) {
	c.events += weight
	if c.rateSeconds == 0 || sec-c.rateFrom >= rateSeconds || sec < c.rateFrom {
		c.rateFrom, c.rateEvents, c.rateSeconds = sec, 0, 0
	}
	c.rateEvents += weight
	if c.seconds == 0 || c.last != sec {
		c.seconds++
		c.rateSeconds++
		c.last = sec
	}
}

// outpaces reports whether c's recent traffic is far above that of a
// table with recent events in the last rateSeconds seconds and window
// events in the window (the rate rule). It is for live windows only.
func (c *claim) outpaces(now int64, recent, window uint64, windowSeconds int64) bool {
	if c.rateSeconds < rateMinSeconds {
		return false // one burst, or two: not yet a rate
	}
	span := uint64(now - c.rateFrom + 1)
	// c.rateEvents/span > rateFactor × max(recent/rateSeconds, window/windowSeconds)
	return c.rateEvents*rateSeconds > rateFactor*recent*span &&
		c.rateEvents*uint64(windowSeconds) > rateFactor*window*span
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
// one is evicted, and admit returns what the newcomer had brought before
// this Put (its credit). It is called with addMu held and MaxTables
// tracked.
func (s *Store) admit(id tableID, at clock, weight uint64) (ok bool, credit claim) {
	a := &s.adm
	if a.refused == nil || (s.slot > 0 && at.epoch-a.refusedEpoch >= int64(s.cfg.SubWindows)) {
		a.refused = map[uint64]claim{}
		a.refusedEpoch = at.epoch
	}
	if len(a.refused) >= 4*s.cfg.MaxTables {
		// A flood of names: forget those that came in one second only,
		// keeping the claims of tables that keep coming.
		maps.DeleteFunc(a.refused, func(_ uint64, c claim) bool { return c.seconds <= 1 })
		if len(a.refused) >= 4*s.cfg.MaxTables {
			clear(a.refused)
		}
	}
	h := idHash(id)
	before := a.refused[h]
	c := before
	c.add(at.sec, weight)
	v := s.victim(at)
	if v == nil {
		a.refused[h] = c
		return false, claim{}
	}
	v.mu.Lock()
	v.advance(at.epoch, at.sec)
	traffic, seconds := s.weight(v, at)
	own := v.traffic() // without its credit: what it counted
	wins := traffic == 0 || (c.events > traffic && (s.slot == 0 || uint64(c.seconds) > seconds))
	if !wins && s.slot > 0 {
		wins = c.outpaces(at.sec, v.recentEvents(at.sec), traffic, s.windowSeconds())
	}
	if !wins {
		v.mu.Unlock()
		a.refused[h] = c
		return false, claim{}
	}
	v.evicted = true
	v.mu.Unlock()
	a.next++
	delete(a.refused, h)
	if traffic > 0 {
		// If it comes back, it competes with the traffic it had.
		a.refused[idHash(v.id)] = claim{events: traffic, seconds: uint32(min(seconds, math.MaxUint32)), last: v.lastArrival}
	}
	if s.slot == 0 {
		// Whole files: what it counted is in no report.
		s.dropped.Add(own)
		s.untracked.Add(own)
	}
	s.drop(v)
	// This Put's second is the new table's first arrival: the credit is
	// the seconds before it.
	credit = before
	if credit.seconds > 0 && credit.last == at.sec {
		credit.seconds--
	}
	return true, credit
}

// windowSeconds is the live window's length in whole seconds, at least 1.
func (s *Store) windowSeconds() int64 {
	return max(int64(s.cfg.Window/time.Second), 1)
}

// drop stops tracking v, evicted already. It is called with addMu held.
func (s *Store) drop(v *table) {
	s.tables.Delete(v.id)
	s.ntables.Add(-1)
	s.reorder(v, false)
	s.evicted.Add(1)
	if s.adm.onEvict != nil {
		s.adm.onEvict(v.id.table, v.id.index)
	}
}

// Declare sets the tables and indexes ("TABLE" or "TABLE/INDEX") the
// config declares: each is tracked whatever its traffic and never
// evicted, its place reserved out of Config.MaxTables (the first
// MaxTables names in sorted order, if more are given; the config refuses
// more). Tables no longer declared compete like any other from then on;
// if the others now hold more places than are left to them, the least
// busy of them are evicted at once. It is safe to call at any time (a
// reload).
func (s *Store) Declare(names []string) {
	ids := make([]tableID, 0, len(names))
	for _, n := range names {
		table, index, _ := strings.Cut(n, "/")
		ids = append(ids, tableID{table, index})
	}
	slices.SortFunc(ids, compareIDs)
	ids = slices.Compact(ids)
	ids = ids[:min(len(ids), s.cfg.MaxTables)]
	s.addMu.Lock()
	defer s.addMu.Unlock()
	a := &s.adm
	a.declared = make(map[tableID]bool, len(ids))
	for _, id := range ids {
		a.declared[id] = true
	}
	a.ndeclared = 0
	s.each(func(id tableID, t *table) {
		t.mu.Lock()
		t.declared = a.declared[id]
		if t.declared {
			a.ndeclared++
		}
		t.mu.Unlock()
	})
	a.ranked, a.next = a.ranked[:0], 0 // rank again without the declared
	at := s.clockAt(s.now())
	for s.undeclared() > s.cfg.MaxTables-len(a.declared) {
		v := s.victim(at)
		if v == nil {
			break
		}
		v.mu.Lock()
		v.evicted = true
		v.mu.Unlock()
		a.next++
		s.drop(v)
	}
}

// undeclared is the number of tracked tables the config does not
// declare. It is called with addMu held.
func (s *Store) undeclared() int { return int(s.ntables.Load()) - s.adm.ndeclared }

// weight is what a tracked table weighs against a newcomer: its traffic
// in the window and the seconds of the Store's clock it came in (live
// mode), and, for a window after it got in, the events it had refused
// before and their seconds (so that the newcomer that just won a place is
// not the next one out). It is called with t.mu held.
func (s *Store) weight(t *table, at clock) (events, seconds uint64) {
	events = t.traffic()
	for _, a := range t.arrivals {
		if a.epoch > at.epoch-int64(s.cfg.SubWindows) && a.epoch <= at.epoch {
			seconds += uint64(a.seconds)
		}
	}
	if (t.credit > 0 || t.creditSecs > 0) && (s.slot == 0 || at.epoch-t.creditEpoch < int64(s.cfg.SubWindows)) {
		events += t.credit
		seconds += t.creditSecs
	}
	return events, seconds
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
		if !t.evicted && !t.declared {
			t.advance(at.epoch, at.sec)
			events, _ := s.weight(t, at)
			all = append(all, ranked{t, events, t.active})
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

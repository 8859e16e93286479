package sketch

import (
	"maps"
	"slices"
	"time"
)

// Watermarks tells a live Store how far its sources have read in event
// time.
type Watermarks interface {
	// Watermark returns the event time up to which source (an Event.Source
	// value) has delivered its events: every live lane of it (a stream
	// shard, a file) has passed it, and a lane that is caught up and idle
	// does not hold it back. ok is false when the source is unknown; the
	// Store then uses its clock.
	Watermark(source string) (t time.Time, ok bool)
}

// SetWatermarks makes the Store judge each table's seconds by the
// watermarks of the sources that fed it. It must be called before the
// first Put. Without it a live Store judges by its clock, as if every
// source were caught up.
func (s *Store) SetWatermarks(w Watermarks) { s.wm = w }

// LateEvents returns, by Event.Source, the events that were older than
// their table's window when they arrived: they count in no window and
// never in a peak (hotkeyd_events_total, which counts before the Store,
// still has them).
func (s *Store) LateEvents() map[string]uint64 {
	s.lateMu.Lock()
	defer s.lateMu.Unlock()
	return maps.Clone(s.late)
}

// addLate counts n late events of source.
func (s *Store) addLate(source string, n uint64) {
	s.lateMu.Lock()
	if s.late == nil {
		s.late = map[string]uint64{}
	}
	s.late[source] += n
	s.lateMu.Unlock()
}

// marks are the sources' watermarks as one snapshot reads them: each
// source is asked once however many tables it fed (a watermark is a walk
// over the source's lanes under its lock).
type marks struct {
	wm   Watermarks
	seen map[string]mark
}

type mark struct {
	t  time.Time
	ok bool
}

func (m *marks) of(source string) (time.Time, bool) {
	if v, ok := m.seen[source]; ok {
		return v.t, v.ok
	}
	if m.seen == nil {
		m.seen = map[string]mark{}
	}
	t, ok := m.wm.Watermark(source)
	m.seen[source] = mark{t, ok}
	return t, ok
}

// judged returns the time up to which a table fed by sources is judged:
// the earliest of their watermarks, or the clock's now when none is known.
// It is called with the table's lock held; the Watermarks take their own.
func (s *Store) judged(sources []string, now time.Time, m *marks) time.Time {
	if s.wm == nil {
		return now
	}
	var j time.Time
	for _, src := range sources {
		w, ok := m.of(src)
		if !ok {
			continue
		}
		if j.IsZero() || w.Before(j) {
			j = w
		}
	}
	if j.IsZero() {
		return now
	}
	return j
}

// Pulse is what makes a live Store's tables due for a new picture
// (SnapshotSince): the clock's second, the second of each source's
// watermark, the tables evicted. Events alone do not: a table's picture
// waits for its next second to close. Two equal Pulses taken at two
// moments mean that no table's judged second moved and none went in
// between: a new SnapshotSince would keep every table but those that came
// meanwhile. Comparing Pulses costs the same however many tables there
// are.
type Pulse struct {
	evicted uint64
	clock   int64
	marks   uint64 // the sources' watermark seconds, mixed
}

// Pulse returns the Store's Pulse now.
func (s *Store) Pulse() Pulse {
	p := Pulse{evicted: s.evicted.Load(), clock: s.now().Unix()}
	if s.wm == nil {
		return p
	}
	for _, src := range *s.sources.Load() {
		w, ok := s.wm.Watermark(src)
		if !ok {
			continue
		}
		p.marks = p.marks*0x9E3779B97F4A7C15 + uint64(w.Unix()) + 1
	}
	return p
}

// noteSources adds the sources a table just learnt of to the Store's list,
// which Pulse reads.
func (s *Store) noteSources(srcs []string) {
	s.srcMu.Lock()
	defer s.srcMu.Unlock()
	cur := *s.sources.Load()
	var add []string
	for _, src := range srcs {
		if !slices.Contains(cur, src) && !slices.Contains(add, src) {
			add = append(add, src)
		}
	}
	if len(add) > 0 {
		next := append(slices.Clip(cur), add...)
		s.sources.Store(&next)
	}
}

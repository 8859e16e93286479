package export

import (
	"math"
	"sync"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/ingest"
)

// MaxHistorySeconds bounds the seconds History keeps per table, whatever
// the window: the live page draws at most the last ten minutes.
const MaxHistorySeconds = 600

// HistoryConfig sizes a History.
type HistoryConfig struct {
	// Window is the detector's window: History keeps its seconds, at most
	// MaxHistorySeconds.
	Window time.Duration
	// Top is the number of top keys per class the report lists; History
	// records twice as many each second (at least 20), so that a key that
	// climbs into the top has its past seconds too.
	Top int
}

// History keeps the daemon's last seconds, table by table: each second's
// units per class and per tracked key, as the sketches count them
// (report.TableSecond, from detect.LastSeconds). The detector tick records
// every evaluation's seconds; the API reads the series of the current report's top keys
// (/api/v1/hotkeys/history), so that the live page shows the past minute
// as soon as it opens.
//
// Memory is bounded: per table (at most the store's MaxTables) a ring of
// Window seconds (at most MaxHistorySeconds), each holding the classes'
// units and at most Keys() = 2 × max(Top, 10) keys per class, about 60 KB
// per table at the defaults (60 s, top 10). The keys' strings are the
// snapshot's.
// History is safe for concurrent use.
type History struct {
	cfg     HistoryConfig
	seconds int
	keep    int

	mu     sync.Mutex
	tables map[entryID]*secondRing
}

type entryID struct{ table, index string }

// secondRing is one table's last seconds, oldest first from head.
type secondRing struct {
	secs []histSecond
	next int   // slot the next second goes to
	n    int   // slots filled
	last int64 // Unix second of the newest slot
}

// histSecond is one second of a table: at is its Unix second, 0 when the
// second is unknown (no snapshot saw it).
type histSecond struct {
	at      int64
	classes [ingest.NumClasses]float64
	keys    []histKey
}

type histKey struct {
	key   string
	class ingest.Class
	units float64
}

// NewHistory returns an empty History.
func NewHistory(cfg HistoryConfig) *History {
	secs := int(cfg.Window / time.Second)
	secs = min(max(secs, 1), MaxHistorySeconds)
	return &History{cfg: cfg, seconds: secs, keep: 2 * max(cfg.Top, 10), tables: map[entryID]*secondRing{}}
}

// Keys returns how many of each class's heaviest keys a second should
// hold (detect.LastSeconds): twice the report's top keys, at least 20, so
// that a key that climbs into the top has its past seconds too.
func (h *History) Keys() int { return h.keep }

// Record adds each table's last complete second (detect.LastSeconds). A
// second seen before is written again (two ticks in one second); seconds
// no evaluation saw stay unknown; tables no longer there are forgotten.
func (h *History) Record(secs []report.TableSecond) {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := make(map[entryID]bool, len(secs))
	for i := range secs {
		ts := &secs[i]
		id := entryID{ts.Table, ts.Index}
		seen[id] = true
		if ts.At.IsZero() {
			continue
		}
		r := h.tables[id]
		if r == nil {
			r = &secondRing{secs: make([]histSecond, h.seconds)}
			h.tables[id] = r
		}
		if s := r.slot(ts.At.Unix()); s != nil {
			h.fill(s, ts)
		}
	}
	for id := range h.tables {
		if !seen[id] {
			delete(h.tables, id)
		}
	}
}

// slot returns the slot of Unix second sec, advancing the ring to it (the
// seconds skipped become unknown), or nil for a second older than the
// newest.
func (r *secondRing) slot(sec int64) *histSecond {
	if r.n > 0 && sec < r.last {
		return nil
	}
	if r.n > 0 && sec == r.last {
		return &r.secs[(r.next-1+len(r.secs))%len(r.secs)]
	}
	gap := int64(1)
	if r.n > 0 {
		gap = min(sec-r.last, int64(len(r.secs)))
	}
	for range gap {
		s := &r.secs[r.next]
		s.at = 0
		s.keys = s.keys[:0]
		r.next = (r.next + 1) % len(r.secs)
		r.n = min(r.n+1, len(r.secs))
	}
	r.last = sec
	s := &r.secs[(r.next-1+len(r.secs))%len(r.secs)]
	s.at = sec
	return s
}

// fill writes one table's second into s: the classes' units and those
// of the first keep keys of each class's ranking.
func (h *History) fill(s *histSecond, ts *report.TableSecond) {
	s.keys = s.keys[:0]
	s.classes = [ingest.NumClasses]float64{}
	for _, cs := range ts.Classes {
		c, ok := ingest.ParseClass(cs.Class)
		if !ok {
			continue
		}
		s.classes[c] = cs.Units
		for _, k := range cs.Keys[:min(len(cs.Keys), h.keep)] {
			s.keys = append(s.keys, histKey{key: k.Key, class: c, units: k.Units})
		}
	}
}

// Series returns the series that go with rep (report.BuildSeries): for
// each of its tables the recorded seconds (oldest first) of the classes
// and of the top keys, in the order of the table's top_keys; a second no
// evaluation saw, and a key's second it was not among the recorded keys,
// are NaN. Keys are as in rep; mask them with KeyMasker.MaskSeries.
// top > 0 keeps that many keys per class.
func (h *History) Series(rep report.Report, top int) report.Series {
	h.mu.Lock()
	defer h.mu.Unlock()
	return report.BuildSeries(rep, top, func(table, index string) report.Steps {
		if r := h.tables[entryID{table, index}]; r != nil {
			return r
		}
		return nil
	})
}

// Span returns the ring's seconds: the first, one second a step, how many.
func (r *secondRing) Span() (time.Time, int64, int) {
	return time.Unix(r.last-int64(r.n)+1, 0), 1, r.n
}

// Step returns the ring's i-th second, oldest first: what an unknown
// second holds, and a key's second when it was not among the recorded
// keys, is NaN.
func (r *secondRing) Step(i int, key func(key string, class int, units float64)) report.StepUnits {
	nan := [ingest.NumClasses]float64{math.NaN(), math.NaN()}
	s := &r.secs[(r.next-r.n+i+len(r.secs))%len(r.secs)]
	if s.at == 0 {
		return report.StepUnits{Classes: nan, Absent: nan}
	}
	for _, k := range s.keys {
		key(k.key, int(k.class), k.units)
	}
	return report.StepUnits{Classes: s.classes, Absent: nan}
}

package export

import (
	"math"
	"sync"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// MaxRecentSeconds bounds the seconds Recent keeps per table, whatever
// the window: the live page draws at most the last ten minutes.
const MaxRecentSeconds = 600

// RecentConfig sizes a Recent.
type RecentConfig struct {
	// Window is the detector's window: Recent keeps its seconds, at most
	// MaxRecentSeconds.
	Window time.Duration
	// Top is the number of top keys per class the report lists
	// (report.Settings.Top); Recent records report.ChartKeys(Top) of them
	// each second.
	Top int
}

// Recent keeps the daemon's last seconds, table by table: each second's
// units per class and per tracked key, as the sketches count them
// (report.TableSecond: the daemon's tick records every evaluation's last
// seconds, which the detector gives it); the API reads the series of the
// current report's top keys (/api/v1/hotkeys/history), so that the live
// page shows the past minute as soon as it opens. It is the live page's
// memory of the last minutes, not the history kept on disk (package
// history).
//
// Memory follows the traffic: per table (at most the store's MaxTables) a
// ring of Window seconds (at most MaxRecentSeconds) of 40 bytes each (the
// classes' units, the second's key list, where its units are), the key
// lists, and the units of the keys that had some. A second's key list (at
// most Keys() = 2 × max(Top, 10) keys per class, 24 bytes each) is the
// previous second's when the ranking did not change, and only the keys
// with units in the second take room: 16 bytes each, or 8 bytes a listed
// key when half of them or more have some. At the defaults (60 s, top 10: 40
// keys), measured by TestRecentMemory with the window full: an idle table
// 4 KB, one key a class with units every second 7 KB, all 40 keys 28 KB,
// all 40 with a ranking that changes every second 91 KB (141 KB each when
// every second held its 40 keys whole). The keys' strings are the
// snapshot's.
// Recent is safe for concurrent use.
type Recent struct {
	cfg     RecentConfig
	seconds int
	keep    int

	mu     sync.Mutex
	tables map[entryID]*secondRing
	gen    uint64 // Record's calls, to find the tables a call did not name
}

type entryID struct{ table, index string }

// secondRing is one table's last seconds, oldest first from head.
type secondRing struct {
	secs []histSecond
	next int    // slot the next second goes to
	n    int    // slots filled
	last int64  // Unix second of the newest slot
	seen uint64 // the Recent's gen when Record last named the table

	// keys is the newest second's key list, which the next second shares
	// when its ranking is the same; spare is a list no second holds any
	// more, kept while the ranking changes to be the next one.
	keys, spare *keyList
	// units holds the seconds' units of their keys, oldest second first,
	// from head, in a ring that grows and shrinks with them.
	units []uint64
	head  int // position of the oldest second's first word
	used  int // words in use
}

// histSecond is one second of a table: at is its Unix second, 0 when the
// second is unknown (no snapshot saw it). Its keys' units are the n words
// of the ring's units from first: when n is the number of keys, each
// key's units in order (math.Float64bits); otherwise pairs of the index
// of a key with units and its units, in order of index, every other key
// having none (0).
type histSecond struct {
	at      int64
	classes [traffic.NumClasses]float64
	keys    *keyList
	first   uint32
	n       uint32
}

// keyList is the keys a second recorded, in the order of the rankings.
type keyList struct {
	keys []listKey
	refs int // the seconds that hold it
}

type listKey struct {
	key   string
	class traffic.Class
}

// NewRecent returns an empty Recent.
func NewRecent(cfg RecentConfig) *Recent {
	secs := int(cfg.Window / time.Second)
	secs = min(max(secs, 1), MaxRecentSeconds)
	return &Recent{cfg: cfg, seconds: secs, keep: report.ChartKeys(cfg.Top), tables: map[entryID]*secondRing{}}
}

// Keys returns how many of each class's heaviest keys a second should
// hold (what the tick asks the detector for): report.ChartKeys of the
// report's top.
func (h *Recent) Keys() int { return h.keep }

// Record adds each table's last complete second (detect.LastSeconds). A
// second seen before is written again (two ticks in one second), but for
// an idle second, which only adds the seconds of no traffic up to it in
// constant time; seconds no evaluation saw stay unknown; tables no longer
// there are forgotten.
func (h *Recent) Record(secs []report.TableSecond) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gen++
	for i := range secs {
		ts := &secs[i]
		id := entryID{ts.Table, ts.Index}
		r := h.tables[id]
		if ts.At.IsZero() {
			if r != nil {
				r.seen = h.gen
			}
			continue
		}
		if r == nil {
			r = &secondRing{secs: make([]histSecond, h.seconds)}
			h.tables[id] = r
		}
		r.seen = h.gen
		if ts.Idle {
			r.idle(ts.At.Unix())
			continue
		}
		if s := r.slot(ts.At.Unix()); s != nil {
			r.fill(s, ts, h.keep)
		}
	}
	for id, r := range h.tables {
		if r.seen != h.gen {
			delete(h.tables, id)
		}
	}
}

// idle records that the seconds after the newest up to sec had no
// traffic: each is a second of no units over the newest second's keys. It
// costs the same however many keys the table has.
func (r *secondRing) idle(sec int64) {
	if r.n > 0 && sec <= r.last {
		return
	}
	from := sec
	if r.n > 0 {
		from = max(r.last+1, sec-int64(len(r.secs))+1)
	}
	for x := from; x <= sec; x++ {
		s := r.slot(x)
		s.classes = [traffic.NumClasses]float64{}
		r.release(s)
		if r.keys != nil {
			s.keys = r.keys
			s.keys.refs++
		}
	}
}

// slot returns the slot of Unix second sec, advancing the ring to it (the
// seconds skipped become unknown), or nil for a second older than the
// newest. The slot's units are dropped: fill writes them again.
func (r *secondRing) slot(sec int64) *histSecond {
	if r.n > 0 && sec < r.last {
		return nil
	}
	if r.n > 0 && sec == r.last {
		s := &r.secs[(r.next-1+len(r.secs))%len(r.secs)]
		r.used -= int(s.n) // the newest second's units are the last words
		s.n = 0
		return s
	}
	gap := int64(1)
	if r.n > 0 {
		gap = min(sec-r.last, int64(len(r.secs)))
	}
	for range gap {
		s := &r.secs[r.next]
		if r.n == len(r.secs) { // the oldest second leaves
			r.head = (r.head + int(s.n)) % max(len(r.units), 1)
			r.used -= int(s.n)
		}
		r.release(s)
		*s = histSecond{}
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
func (r *secondRing) fill(s *histSecond, ts *report.TableSecond, keep int) {
	s.classes = [traffic.NumClasses]float64{}
	nonzero, same, j := 0, r.keys != nil, 0
	for _, cs := range ts.Classes {
		c, ok := traffic.ParseClass(cs.Class)
		if !ok {
			continue
		}
		s.classes[c] = cs.Units
		for _, k := range cs.Keys[:min(len(cs.Keys), keep)] {
			same = same && j < len(r.keys.keys) && r.keys.keys[j] == listKey{k.Key, c}
			if math.Float64bits(k.Units) != 0 {
				nonzero++
			}
			j++
		}
	}
	r.release(s)
	switch {
	case same && j == len(r.keys.keys):
		r.spare = nil // the ranking holds: no list to make
	case r.spare != nil && cap(r.spare.keys) >= j:
		r.keys, r.spare = r.spare, nil
		clear(r.keys.keys[:cap(r.keys.keys)])
		r.keys.keys = r.keys.keys[:0]
	default:
		r.keys = &keyList{keys: make([]listKey, 0, j)}
	}
	if len(r.keys.keys) != j {
		for _, cs := range ts.Classes {
			if c, ok := traffic.ParseClass(cs.Class); ok {
				for _, k := range cs.Keys[:min(len(cs.Keys), keep)] {
					r.keys.keys = append(r.keys.keys, listKey{k.Key, c})
				}
			}
		}
	}
	s.keys = r.keys
	s.keys.refs++
	dense := 2*nonzero >= j
	words := 2 * nonzero
	if dense {
		words = j
	}
	r.reserve(words)
	if nonzero == 0 {
		return
	}
	s.first = uint32((r.head + r.used) % len(r.units))
	s.n = uint32(words)
	at := int(s.first)
	put := func(w uint64) {
		r.units[at] = w
		if at++; at == len(r.units) {
			at = 0
		}
	}
	i := 0
	for _, cs := range ts.Classes {
		if _, ok := traffic.ParseClass(cs.Class); !ok {
			continue
		}
		for _, k := range cs.Keys[:min(len(cs.Keys), keep)] {
			switch u := math.Float64bits(k.Units); {
			case dense:
				put(u)
			case u != 0:
				put(uint64(i))
				put(u)
			}
			i++
		}
	}
	r.used += words
}

// release drops s's hold on its key list: a list no second holds is
// the spare.
func (r *secondRing) release(s *histSecond) {
	if s.keys == nil {
		return
	}
	if s.keys.refs--; s.keys.refs == 0 && s.keys != r.keys {
		r.spare = s.keys
	}
	s.keys = nil
}

// reserve makes room for words more words of units: the ring grows to a
// quarter past what it needs, and shrinks to that when less than a quarter
// of it would be used (an idle table's ring empties as its busy seconds
// leave the window).
func (r *secondRing) reserve(words int) {
	need := r.used + words
	if need <= len(r.units) && (len(r.units) <= 64 || 4*need > len(r.units)) {
		return
	}
	var units []uint64
	if need > 0 {
		units = make([]uint64, need+need/4)
	}
	// Copy the seconds' units in order, from position 0.
	at := 0
	for i := range r.n {
		s := &r.secs[(r.next-r.n+i+len(r.secs))%len(r.secs)]
		for w := range int(s.n) {
			units[at+w] = r.units[(int(s.first)+w)%len(r.units)]
		}
		s.first = uint32(at)
		at += int(s.n)
	}
	r.units, r.head = units, 0
}

// Series returns the series that go with rep (report.BuildSeries): for
// each of its tables the recorded seconds (oldest first) of the classes
// and of the top keys, in the order of the table's top_keys; a second no
// evaluation saw, and a key's second it was not among the recorded keys,
// are NaN. Keys are as in rep; mask them with KeyMasker.MaskSeries.
// top > 0 keeps that many keys per class.
func (h *Recent) Series(rep report.Report, top int) report.Series {
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
	nan := [traffic.NumClasses]float64{math.NaN(), math.NaN()}
	s := &r.secs[(r.next-r.n+i+len(r.secs))%len(r.secs)]
	if s.at == 0 {
		return report.StepUnits{Classes: nan, Absent: nan}
	}
	if s.keys == nil {
		return report.StepUnits{Classes: s.classes, Absent: nan}
	}
	keys := s.keys.keys
	word := func(w int) uint64 { return r.units[(int(s.first)+w)%len(r.units)] }
	dense := int(s.n) == len(keys)
	w := 0
	for j, k := range keys {
		var u uint64
		switch {
		case dense:
			u = word(j)
		case w < int(s.n) && word(w) == uint64(j):
			u = word(w + 1)
			w += 2
		}
		key(k.key, int(k.class), math.Float64frombits(u))
	}
	return report.StepUnits{Classes: s.classes, Absent: nan}
}

package sketch

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Merge adds everything other counted into s, table by table, as if s had
// been given other's events too: the stores of several workers (analyze
// on every core) or readers, merged at the end. other may be in use and
// keeps counting; Merge only moves its tables to the current slot, as a
// Snapshot does, and copies each out under its lock. Both must have the
// same shape (window, slots, candidates, count-min size, HyperLogLog
// precision, recent seconds).
//
// What adds up, and how exact it is:
//
//   - class totals, per-slot counts, accesses, stream shards and throttled
//     calls add; the earliest and latest event times are kept;
//   - count-min cells add, generation by generation;
//   - candidate sets merge key by key: a key counted by both adds its
//     counts; a key counted by one gets the other's count-min estimates as
//     estimates (in Error); past Candidates keys the smallest are evicted
//     into the count-min sketch. A key both inputs counted exactly stays
//     exact, so the keys reported are exact wherever they were;
//   - distinct keys merge slot by slot: exact sets unite, HyperLogLog
//     registers take the maximum;
//   - over whole files (analyze mode) a class's seconds add up second by
//     second, whatever the inputs' times: exact;
//   - keys' per-second rings merge by second: the seconds still in either
//     ring, and each input's first second, add up; seconds that only one
//     input still holds keep their peak. So inputs that split time between
//     them (byte ranges of one log) merge exactly, and inputs of the same
//     seconds keep the larger peak of the two. A key's seconds are
//     counted from when it became a candidate of its input. hotkeyd
//     analyze counts the seconds of the keys it reports again, exactly,
//     when its inputs did not run in time or a key's count started from
//     an estimate (parallel.Outcome).
//
// Tables beyond Config.MaxTables are admitted or dropped and counted, as by
// Put, with their events as their weight.
func (s *Store) Merge(other *Store) error {
	if s == other {
		return errors.New("merge a store into itself")
	}
	if err := s.cfg.sameShape(other.cfg); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	at := s.clockAt(s.now())
	if o := other.clockAt(other.now()); o.epoch > at.epoch || (o.epoch == at.epoch && o.sec > at.sec) {
		at = o
	}
	other.each(func(id tableID, ot *table) {
		ot.mu.Lock()
		if ot.evicted {
			ot.mu.Unlock()
			return
		}
		ot.advance(at.epoch, at.sec)
		b := ot.clone()
		ot.mu.Unlock()
		t := s.table(id, at, b.events())
		if t == nil {
			s.dropped.Add(b.traffic())
			s.untracked.Add(b.traffic())
			return
		}
		t.mu.Lock()
		if t.evicted {
			t.mu.Unlock()
			s.dropped.Add(b.traffic())
			s.untracked.Add(b.traffic())
			return
		}
		t.advance(at.epoch, at.sec)
		t.merge(b)
		t.gen++
		t.mu.Unlock()
	})
	s.dropped.Add(other.dropped.Load())
	s.untracked.Add(other.untracked.Load())
	return nil
}

// sameShape reports the first field in which c and o size their sketches
// differently.
func (c Config) sameShape(o Config) error {
	c, o = c.withDefaults(), o.withDefaults()
	switch {
	case c.Window != o.Window || c.SubWindows != o.SubWindows:
		return fmt.Errorf("window %v/%d against %v/%d", c.Window, c.SubWindows, o.Window, o.SubWindows)
	case c.Candidates != o.Candidates:
		return fmt.Errorf("candidates %d against %d", c.Candidates, o.Candidates)
	case c.Depth != o.Depth || c.Width != o.Width:
		return fmt.Errorf("count-min %d×%d against %d×%d", c.Depth, c.Width, o.Depth, o.Width)
	case c.HLLPrecision != o.HLLPrecision:
		return fmt.Errorf("hll precision %d against %d", c.HLLPrecision, o.HLLPrecision)
	case c.RecentSeconds != o.RecentSeconds:
		return fmt.Errorf("recent seconds %d against %d", c.RecentSeconds, o.RecentSeconds)
	}
	return nil
}

// clone copies the table, sharing nothing with it. It is called with t.mu
// held.
func (t *table) clone() *table {
	c := &table{
		id:    t.id,
		cfg:   t.cfg,
		epoch: t.epoch,
		cur:   t.cur,
		sc:    t.sc,
		sec:   t.sec,
		first: t.first,
		last:  t.last,
		exact: t.exact.clone(),
	}
	for i := range t.classes {
		a, b := &t.classes[i], &c.classes[i]
		*b = *a
		b.units, b.events, b.peak, b.ring = slices.Clone(a.units), slices.Clone(a.events), slices.Clone(a.peak), slices.Clone(a.ring)
		if a.cms != nil {
			m := *a.cms
			m.cells = slices.Clone(a.cms.cells)
			b.cms = &m
		}
		if a.cand != nil {
			b.cand = a.cand.clone()
		}
	}
	if t.distinct != nil {
		c.distinct = t.distinct.clone()
	}
	if t.shards != nil {
		c.shards = t.shards.clone()
	}
	for i, th := range t.throttles {
		if th != nil {
			c.throttles[i] = th.clone()
		}
	}
	return c
}

// merge adds b, a clone at the same slot and second, into t. It is called
// with t.mu held.
func (t *table) merge(b *table) {
	if b.sec > t.sec {
		t.sec = b.sec
	}
	if !b.first.IsZero() && (t.first.IsZero() || b.first.Before(t.first)) {
		t.first = b.first
	}
	if b.last.After(t.last) {
		t.last = b.last
	}
	if t.exact != nil {
		t.exact.absorb(b.exact)
	}
	if b.shards != nil {
		if t.shards == nil {
			t.shards = newNamedCounts(t.cfg.MaxShards, t.cfg.SubWindows, false).withSeconds()
		}
		t.shards.absorb(b.shards)
		t.shards.absorbSeconds(b.shards, &t.sc)
	}
	for c, th := range b.throttles {
		if th == nil {
			continue
		}
		if t.throttles[c] == nil {
			t.throttles[c] = newThrottle(t.cfg.SubWindows)
		}
		t.throttles[c].absorb(th, t.cfg)
	}
	// The distinct keys first: while a table counts every key exactly, its
	// candidates are its distinct keys, and merging may evict some.
	if t.distinct != nil || b.distinct != nil || t.mergeOverflows(b) {
		t.ensureDistinct()
		b.ensureDistinct()
		t.distinct.absorb(b.distinct)
	}
	t.distinctDirty = true
	for c := range t.classes {
		t.mergeClass(&t.classes[c], &b.classes[c])
	}
}

// mergeOverflows reports whether merging b overflows a candidate set of t.
func (t *table) mergeOverflows(b *table) bool {
	for c := range t.classes {
		x, y := t.classes[c].cand, b.classes[c].cand
		if x == nil || y == nil {
			continue
		}
		n := x.n
		for id := range y.n {
			if x.find(y.rec[id].hash, y.keys[id]) < 0 {
				n++
			}
		}
		if n > x.max {
			return true
		}
	}
	return false
}

// ensureDistinct makes the per-slot distinct-key sets from the candidates
// when the table has none yet.
func (t *table) ensureDistinct() {
	if t.distinct != nil {
		return
	}
	t.distinct = newDistinct(t.cfg.SubWindows, t.cfg.HLLPrecision)
	for c := range t.classes {
		if cand := t.classes[c].cand; cand != nil {
			cand.addDistinct(t.distinct)
		}
	}
}

// mergeClass adds class b into class a.
func (t *table) mergeClass(a, b *classSketch) {
	for s := range a.units {
		a.units[s] += b.units[s]
		a.events[s] += b.events[s]
		a.peak[s] = max(a.peak[s], b.peak[s])
	}
	if b.seen {
		mergeSeconds(a.ring, &a.sec, &a.headSec, &a.headUnits, a.seen, b.ring, b.sec, b.headSec, b.headUnits, func(x int64, v float64) {
			if s := t.sc.slotOf(x); s >= 0 {
				a.peak[s] = max(a.peak[s], v)
			}
		})
		a.seen = true
	}
	if b.cand == nil || b.cand.n == 0 {
		return
	}
	if a.cand == nil {
		a.cand = newCandidates(t.cfg.Candidates, t.cfg.SubWindows, t.cfg.keyRing())
	}
	entries := t.mergeEntries(a, b)
	switch {
	case b.cms == nil:
	case a.cms == nil:
		a.cms = b.cms
	default:
		a.cms.absorb(b.cms)
	}
	slices.SortFunc(entries, func(x, y entryView) int {
		if tx, ty := x.total(), y.total(); tx != ty {
			return cmp.Compare(ty, tx)
		}
		return strings.Compare(x.key, y.key)
	})
	t.keepEntries(a, entries)
}

// mergeEntries returns every key of the candidates of a and b, split into
// what the count-min sketch bounds (estimates) and what only the entry
// counted (exact), with the other input's estimates for a key it did not
// count: taken before the cells add up.
func (t *table) mergeEntries(a, b *classSketch) []entryView {
	entries := a.cand.views(nil)
	byKey := make(map[string]int, len(entries))
	for i := range entries {
		byKey[entries[i].key] = i
	}
	matched := make([]bool, len(entries))
	for _, v := range b.cand.views(nil) {
		if i, ok := byKey[v.key]; ok {
			entries[i].add(&v)
			matched[i] = true
			continue
		}
		if a.cms != nil {
			v.addEstimates(a.cms, t.cur, t.cfg.SubWindows)
		}
		entries = append(entries, v)
	}
	if b.cms != nil {
		for i := range matched {
			if !matched[i] {
				entries[i].addEstimates(b.cms, t.cur, t.cfg.SubWindows)
			}
		}
	}
	return entries
}

// keepEntries makes the heaviest of entries, ranked, class a's candidates;
// the exact traffic of the others goes into their count-min generations,
// as on eviction by Put.
func (t *table) keepEntries(a *classSketch, entries []entryView) {
	keep := min(len(entries), t.cfg.Candidates)
	if keep < len(entries) && a.cms == nil {
		a.cms = newGenCMS(t.cfg.Depth, t.cfg.Width, t.generation())
	}
	for i := keep; i < len(entries); i++ {
		cur, prev := entries[i].exactParts(t.cur)
		if cur > 0 {
			a.cms.add(entries[i].hash, cur)
		}
		if prev > 0 {
			a.cms.addPrev(entries[i].hash, prev)
		}
	}
	cand := newCandidates(t.cfg.Candidates, t.cfg.SubWindows, t.cfg.keyRing())
	cand.resize(grownCapacity(keep, t.cfg.Candidates))
	for i := range keep {
		cand.insertView(&entries[i], a.cms, t.cur, &t.sc)
	}
	a.cand = cand
	if a.cms != nil {
		a.noiseCur, a.noisePrev = a.cms.noise()
	}
}

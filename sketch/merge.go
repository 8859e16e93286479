package sketch

import (
	"cmp"
	"errors"
	"fmt"
	"math"
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
			s.dropped.Add(b.events())
			return
		}
		t.mu.Lock()
		if t.evicted {
			t.mu.Unlock()
			s.dropped.Add(b.events())
			return
		}
		t.advance(at.epoch, at.sec)
		t.merge(b)
		t.gen++
		t.mu.Unlock()
	})
	s.dropped.Add(other.dropped.Load())
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

// events counts the traffic events in the table's window.
func (t *table) events() uint64 {
	var n uint64
	for c := range t.classes {
		for _, e := range t.classes[c].events {
			n += e
		}
	}
	return n
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

func (c *candidates) clone() *candidates {
	d := *c
	d.rec = slices.Clone(c.rec)
	d.keys = slices.Clone(c.keys)
	d.xpos = slices.Clone(c.xpos)
	d.xring = slices.Clone(c.xring)
	d.xrec = slices.Clone(c.xrec)
	d.col = make([][]slotCount, len(c.col))
	for s, col := range c.col {
		d.col[s] = slices.Clip(slices.Clone(col))
	}
	d.free = slices.Clone(c.free)
	d.heap = slices.Clone(c.heap)
	d.index = slices.Clone(c.index)
	return &d
}

func (d *distinct) clone() *distinct {
	c := &distinct{precision: d.precision, slots: make([]distinctSlot, len(d.slots))}
	for i, sl := range d.slots {
		c.slots[i] = distinctSlot{set: slices.Clone(sl.set), n: sl.n}
		if sl.hll != nil {
			c.slots[i].hll = sl.hll.Clone()
		}
	}
	return c
}

func (n *namedCounts) clone() *namedCounts {
	c := *n
	c.index = make(map[string]int32, len(n.index))
	for k, v := range n.index {
		c.index[k] = v
	}
	c.names = slices.Clone(n.names)
	c.counts = slices.Clone(n.counts)
	c.inherit = slices.Clone(n.inherit)
	c.floor = slices.Clone(n.floor)
	c.lastSec, c.inSec, c.peaks = slices.Clone(n.lastSec), slices.Clone(n.inSec), slices.Clone(n.peaks)
	c.lastID = -1
	return &c
}

// absorbSeconds adds the busiest seconds of o, the same names counted
// elsewhere, after absorb: a slot's busiest second is the busier of both
// (a shard is read by one reader at a time), and the newest seconds add
// up when they are the same one.
func (n *namedCounts) absorbSeconds(o *namedCounts, sc *secClock) {
	if !n.seconds || !o.seconds {
		return
	}
	for oid, name := range o.names {
		id, ok := n.index[name]
		if !ok {
			continue
		}
		row, orow := n.peaks[int(id)*n.slots:(int(id)+1)*n.slots], o.peaks[oid*o.slots:(oid+1)*o.slots]
		for s := range row {
			row[s] = max(row[s], orow[s])
		}
		switch ol, oc := o.lastSec[oid], o.inSec[oid]; {
		case oc == 0:
		case n.inSec[id] == 0 || ol > n.lastSec[id]:
			if n.inSec[id] > 0 {
				n.fold(int(id), n.lastSec[id], n.inSec[id], sc)
			}
			n.lastSec[id], n.inSec[id] = ol, oc
		case ol == n.lastSec[id]:
			n.inSec[id] = satAdd16(n.inSec[id], oc)
		default:
			n.fold(int(id), ol, oc, sc)
		}
	}
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

// addDistinct adds each entry's hash to the distinct-key set of every slot
// it has traffic in.
func (c *candidates) addDistinct(d *distinct) {
	for id := range c.n {
		h := c.rec[id].hash
		for s := range c.slots {
			if c.get(id, s).events > 0 {
				d.add(s, h)
			}
		}
	}
}

// absorb adds o's keys, slot by slot: exact sets unite, HyperLogLog
// registers take the maximum.
func (d *distinct) absorb(o *distinct) {
	for s := range d.slots {
		a, b := &d.slots[s], &o.slots[s]
		if b.hll != nil {
			if a.hll == nil {
				h := b.hll.Clone()
				for _, v := range a.set {
					if v != 0 {
						h.InsertHash(v)
					}
				}
				a.hll, a.set, a.n = h, nil, 0
				continue
			}
			_ = a.hll.Merge(b.hll) // same precision by Config.sameShape
			continue
		}
		for _, v := range b.set {
			if v != 0 {
				d.add(s, v)
			}
		}
	}
}

// absorb adds o's counts, name by name, as add would have. With takeOver,
// the bounds add up: a name one side counts and the other does not may
// have had up to the other's floor there, which its count (and what it
// inherited) takes on; a name neither counts, up to both floors.
func (n *namedCounts) absorb(o *namedCounts) {
	n.untracked += o.untracked
	if n.takeOver && o.bound() > 0 {
		for id, name := range n.names {
			if _, ok := o.index[name]; ok {
				continue
			}
			row, inh := n.row(id), n.inherit[id*n.slots:(id+1)*n.slots]
			for s, f := range o.floor {
				row[s] = satAdd(row[s], f)
				inh[s] = satAdd(inh[s], f)
			}
		}
	}
	var floor []uint32
	if n.takeOver {
		floor = slices.Clone(n.floor)
	}
	for oid, name := range o.names {
		id, ok := n.index[name]
		if !ok {
			if id = n.insert(name); id < 0 {
				n.untracked += o.sum(oid)
				continue
			}
		}
		row := n.row(int(id))
		for s, v := range o.row(oid) {
			row[s] = satAdd(row[s], v)
		}
		if n.takeOver {
			inh := n.inherit[int(id)*n.slots : (int(id)+1)*n.slots]
			for s, v := range o.inherit[oid*o.slots : (oid+1)*o.slots] {
				inh[s] = satAdd(inh[s], v)
			}
		}
	}
	for s := range floor {
		n.floor[s] = max(n.floor[s], satAdd(floor[s], o.floor[s]))
	}
	n.lastID = -1
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

// absorb adds o's cells, generation by generation (both are at the same
// generation).
func (m *genCMS) absorb(o *genCMS) {
	for g := range 2 { // 0: current, 1: previous
		mh, oh := (m.cur+g)&1, (o.cur+g)&1
		if !o.written[oh] {
			continue
		}
		for k := 0; k < len(m.cells); k += 2 {
			m.cells[k+mh] = satAdd(m.cells[k+mh], o.cells[k+oh])
		}
		m.written[mh] = true
	}
}

// entryView is one candidate taken apart for merging: per slot, the units
// the count-min sketch bounds (est) and those only the entry counted
// (exact), with the rest of its counts.
type entryView struct {
	hash               uint64
	key                string
	est, exact, events []uint64
	sk                 []uint32
	peak               []secUnits
	sec, headSec       int64
	ring               []secUnits
	headUnits          secUnits
	// folds are the complete seconds the merge added up, for the peaks of
	// their slots.
	folds []secPoint[secUnits]
}

// views appends every entry of c, taken apart.
func (c *candidates) views(dst []entryView) []entryView {
	for id := range c.n {
		dst = append(dst, c.view(id))
	}
	return dst
}

// view takes entry id apart.
func (c *candidates) view(id int) entryView {
	r := &c.rec[id]
	v := entryView{
		hash: r.hash, key: c.keys[id],
		est: make([]uint64, c.slots), exact: make([]uint64, c.slots),
		events: make([]uint64, c.slots), sk: make([]uint32, c.slots), peak: make([]secUnits, c.slots),
		sec: r.sec,
	}
	v.headSec, v.headUnits = c.head(id)
	v.ring = make([]secUnits, c.ringMask+1)
	copy(v.ring, c.seconds(id, v.ring))
	estMask, entry, entryQ := c.est(id)
	for j := range c.slots {
		k := c.get(id, j)
		u, e := c.unitsAt(id, j), uint64(0)
		switch {
		case estMask&(1<<j) != 0:
			e = u
		case entry == j:
			e = min(uint64(entryQ), u)
		}
		v.est[j], v.exact[j] = e, u-e
		v.events[j], v.sk[j], v.peak[j] = c.eventsAt(id, j), k.sk, k.peak
	}
	return v
}

func (v *entryView) total() uint64 {
	var n uint64
	for j := range v.est {
		n += v.est[j] + v.exact[j]
	}
	return n
}

// add adds o, the same key's entry in the other input.
func (v *entryView) add(o *entryView) {
	for j := range v.est {
		v.est[j] += o.est[j]
		v.exact[j] += o.exact[j]
		v.events[j] += o.events[j]
		v.sk[j] |= o.sk[j]
		v.peak[j] = max(v.peak[j], o.peak[j])
	}
	mergeSeconds(v.ring, &v.sec, &v.headSec, &v.headUnits, true, o.ring, o.sec, o.headSec, o.headUnits, func(x int64, u secUnits) { v.folds = append(v.folds, secPoint[secUnits]{x, u}) })
}

// addEstimates adds the count-min estimates of m, the other input's, for a
// key it did not count exactly: the current generation's booked to the
// current slot, the previous one's to that generation's last slot while
// it overlaps the window (as on admission).
func (v *entryView) addEstimates(m *genCMS, cur, slots int) {
	c, p := m.estimates(v.hash)
	v.est[cur] += uint64(c)
	if last := slots - 1; cur != last {
		v.est[last] += uint64(p)
	}
}

// exactParts is candidates.exactParts for a view: the exact units of the
// current generation (slots 0..cur) and of the previous one.
func (v *entryView) exactParts(cur int) (curQ, prevQ uint32) {
	var sums [2]uint64
	for j, x := range v.exact {
		if j <= cur {
			sums[0] += x
		} else {
			sums[1] += x
		}
	}
	return uint32(min(sums[0], math.MaxUint32)), uint32(min(sums[1], math.MaxUint32))
}

// insertView adds a view as a new entry of a set that has room. An entry
// keeps one slot that mixes estimate and exact units (its entry slot); any
// further mixed slot has its exact units written into the count-min
// generation of the slot and is flagged an estimate whole, so that the
// sketch bounds every unit the entry does not count exactly.
func (c *candidates) insertView(v *entryView, m *genCMS, cur int, sc *secClock) {
	id := c.n
	c.n++
	c.heap = append(c.heap, int32(id))
	r := &c.rec[id]
	*r = candRec{hash: v.hash, heapPos: int32(id), sec: v.sec}
	c.keys[id] = v.key
	// A merged entry takes an extension: it may span slots and seconds.
	x := c.ext(id)
	for j := range c.slots {
		est, exact := v.est[j], v.exact[j]
		switch {
		case est == 0:
		case exact == 0:
			x.estMask |= 1 << j
		case x.entry < 0:
			x.entry, x.entryQ = int8(j), uint32(min(est, math.MaxUint32))
		default:
			q := uint32(min(exact, math.MaxUint32))
			if j <= cur {
				m.add(v.hash, q)
			} else {
				m.addPrev(v.hash, q)
			}
			x.estMask |= 1 << j
		}
		if v.sk[j] != 0 || v.peak[j] != 0 {
			*c.at(id, j) = slotCount{sk: v.sk[j], peak: v.peak[j]}
		}
		c.setCounts(id, j, est+exact, v.events[j])
		r.total += est + exact
	}
	for _, f := range v.folds {
		if s := sc.slotOf(f.sec); s >= 0 && f.v > c.get(id, s).peak {
			c.at(id, s).peak = f.v
		}
	}
	copy(c.ringOf(id), v.ring)
	delete(c.big, id) // the ring holds the merged seconds
	x.headSec, x.headUnits = v.headSec, v.headUnits
	c.reindex(id)
	c.up(id)
}

// mergeSeconds merges the per-second ring and head of another input (ob,
// on, oh, ou) into a ring (ring, newest, head, headUnits; has says whether
// it holds anything yet) by second: the seconds either holds add up, the
// result keeps the newer newest second and the earlier head, and every
// second that is complete in the result is folded, with its sum, by fold
// (folding is a maximum, so seconds folded before cost nothing).
func mergeSeconds[T secUnits | float64](ring []T, newest, head *int64, headUnits *T, has bool, ob []T, on, oh int64, ou T, fold func(int64, T)) {
	mask := int64(len(ring) - 1)
	var pts []secPoint[T]
	if has {
		pts = secPoints(pts, ring, *newest, mask, *head, *headUnits)
	}
	own := len(pts)
	for _, p := range secPoints(nil, ob, on, mask, oh, ou) {
		i := slices.IndexFunc(pts[:own], func(q secPoint[T]) bool { return q.sec == p.sec })
		if i < 0 {
			pts = append(pts, p)
			continue
		}
		pts[i].v = sum(pts[i].v, p.v)
	}
	n, h := on, oh
	if has {
		n, h = max(*newest, on), min(*head, oh)
	}
	clear(ring)
	var hv T
	for _, p := range pts {
		if p.sec > n-mask-1 && p.sec <= n {
			ring[p.sec&mask] = p.v
		}
		if p.sec == h {
			hv = p.v
		}
		if p.sec < n {
			fold(p.sec, p.v)
		}
	}
	*newest, *head, *headUnits = n, h, hv
}

// secPoint is one second's units.
type secPoint[T secUnits | float64] struct {
	sec int64
	v   T
}

// secPoints appends the seconds a ring holds, and its head second when the
// ring no longer does.
func secPoints[T secUnits | float64](dst []secPoint[T], ring []T, newest, mask, head int64, headUnits T) []secPoint[T] {
	for x := newest - mask; x <= newest; x++ {
		dst = append(dst, secPoint[T]{x, ring[x&mask]})
	}
	if head <= newest-mask-1 || head > newest {
		dst = append(dst, secPoint[T]{head, headUnits})
	}
	return dst
}

// sum adds.
func sum[T secUnits | float64](a, b T) T { return a + b }

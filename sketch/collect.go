package sketch

import (
	"math"
	"time"

	"github.com/axiomhq/hyperloglog"
)

// Snapshot returns the current picture of every table: immutable, sharing
// nothing with the live sketches. It locks one table at a time, briefly.
func (s *Store) Snapshot() Snapshot {
	snap, _ := s.collect(false, false, nil, nil)
	return snap
}

// SnapshotSince is Snapshot for a caller that keeps what it made of each
// table's picture, such as the live detector: held returns the Version of
// the table's picture the caller holds (0 when none), and whether it must
// see each of the table's judged seconds even when its counts did not
// change. A table whose picture the caller holds and that is not due
// again gets a Kept entry, without counts, and costs the same whatever its
// keys. A picture is due again when
//
//   - its window's start moved (a slot left a full window) while it held
//     traffic,
//   - a second closed (the table's judged second moved) and the table got
//     events since, or the seconds it judges as recent held traffic, or
//     the caller asked for every second,
//   - traffic left its window, or
//   - it got events and its judged second has not moved for two seconds
//     of the clock (a source holding it back),
//
// so that a table's results stay as they were until its window moves or
// its next second closes, and an idle table is copied out once. Its
// window's end (and so the rates over the window) in the picture is the
// one it had then. Live mode only: in analyze mode it is Snapshot. It is
// called by one goroutine at a time; Snapshot may run beside it.
//
// The entries are written into buf's array when it holds enough room
// (the caller's previous snapshot, which it no longer reads): a snapshot
// of idle tables then allocates nothing.
func (s *Store) SnapshotSince(held func(table, index string) (version uint64, everySecond bool), buf []TableSnapshot) Snapshot {
	if s.slot == 0 {
		held = nil
	}
	snap, _ := s.collect(false, false, held, buf)
	return snap
}

// collect takes the snapshot, and with parts each table's part of a
// Summary (parallel to the snapshot's tables), with its registers or not.
// With held (live mode), it is SnapshotSince's.
func (s *Store) collect(parts, registers bool, held func(table, index string) (uint64, bool), buf []TableSnapshot) (Snapshot, []TablePart) {
	now := s.now()
	at := s.clockAt(now)
	if n := s.Tables(); cap(buf) < n {
		buf = make([]TableSnapshot, 0, n)
	}
	snap := Snapshot{Tables: buf[:0]}
	var tps []TablePart
	c := collector{s: s, now: now, wms: marks{wm: s.wm}, held: held, parts: parts, registers: registers}
	for _, t := range *s.order.Load() {
		ts, tp, ok := c.table(t)
		if !ok {
			continue
		}
		if s.slot > 0 {
			if snap.Start.IsZero() || ts.Start.Before(snap.Start) {
				snap.Start = ts.Start
			}
		} else if !ts.Start.IsZero() && (snap.Start.IsZero() || ts.Start.Before(snap.Start)) {
			snap.Start = ts.Start
		}
		if ts.End.After(snap.End) {
			snap.End = ts.End
		}
		snap.Tables = append(snap.Tables, ts)
		if parts {
			tps = append(tps, tp)
		}
	}
	if s.slot > 0 && len(snap.Tables) == 0 {
		snap.Start = time.Unix(0, (at.epoch-int64(s.cfg.SubWindows)+1)*int64(s.slot))
		if snap.Start.Before(s.started) {
			snap.Start = s.started
		}
		snap.End = now
	}
	// Entries past the tables, from a longer snapshot of buf, let go of
	// what they held.
	clear(snap.Tables[len(snap.Tables):cap(snap.Tables)])
	// The order of the tables is the snapshot's: by table, then index.
	return snap, tps
}

// collector copies the tables out for collect, one at a time, reading each
// source's watermark once for every table and reusing its scratch space.
type collector struct {
	s                *Store
	now              time.Time
	wms              marks
	held             func(table, index string) (uint64, bool)
	parts, registers bool
	sw               secWindow
	scratch          []keyStat
}

// table copies t out: its snapshot, with its window's bounds, and with
// parts its part of a Summary; false for a table the Store dropped.
func (c *collector) table(t *table) (ts TableSnapshot, tp TablePart, ok bool) {
	s := c.s
	var start, end time.Time
	t.mu.Lock()
	if t.evicted {
		t.mu.Unlock()
		return ts, tp, false
	}
	if s.slot > 0 {
		c.sw, start, end = s.head(t, c.now, &c.wms)
	} else {
		c.sw = t.analyzeSeconds(s.cfg.RecentSeconds)
	}
	sw := &c.sw
	if c.parts && s.slot > 0 {
		// A summary carries the seconds before its last one that a key's
		// ring holds, so that a replica reading none of the table's
		// shards sees every second between two board rounds.
		sw.tail = max(min(keyLateSeconds, sw.ref-1-sw.from), 0)
	}
	var merged *hyperloglog.Sketch
	n := uint64(0)
	if c.held != nil {
		ts = c.keep(t)
	}
	if !ts.Kept {
		ts, c.scratch = t.snapshot(s.cfg.Tracked, sw, c.scratch)
		n, merged = t.distinctMerge()
		if c.parts {
			tp = t.part(sw, c.registers)
		}
		if c.held != nil {
			ts.Version = t.pic.version
		}
	}
	first, last := t.first, t.last
	t.mu.Unlock()
	if merged != nil {
		n = merged.Estimate()
		t.setDistinct(n)
	}
	if !ts.Kept {
		ts.DistinctKeys = n
	}
	if sw.ref > sw.recentFrom {
		ts.RecentSpan = time.Duration(sw.ref-sw.recentFrom) * time.Second
		ts.LastSecond = time.Unix(sw.ref-1, 0)
	}
	if s.slot > 0 {
		ts.Start, ts.End = start, end
	} else {
		ts.Start, ts.End = first, last
		analyzeRates(&ts)
	}
	return ts, tp, true
}

// keep returns the Kept entry of a table whose picture the caller of
// SnapshotSince holds and that is not due again, or else nothing, with
// the table's picture renewed. It is called with t.mu held.
func (c *collector) keep(t *table) TableSnapshot {
	cur := picture{gen: t.gen, from: c.sw.from, ref: c.sw.ref, clock: c.now.Unix(), recent: t.newest() >= c.sw.recentFrom}
	v, every := c.held(t.id.table, t.id.index)
	if v != 0 && v == t.pic.version && !t.pic.due(cur, every) {
		return TableSnapshot{Table: t.id.table, Index: t.id.index, Version: v, Kept: true}
	}
	if t.pic.version != 0 && cur.ref > t.pic.ref+1 {
		// The judged second jumped: the seconds between the previous
		// picture's last second (ref-1) and this one's are carried,
		// those of the window.
		c.sw.tail = cur.ref - 1 - max(t.pic.ref, c.sw.from)
	}
	cur.version, cur.traffic = c.s.versions.Add(1), t.holdsTraffic()
	t.pic = cur
	return TableSnapshot{}
}

// analyzeRates sets RateSpan and PeakUnitsPerSecond over whole files: the
// seconds from the first event's to the last's, both counted, and the
// units over them.
func analyzeRates(ts *TableSnapshot) {
	// From the Unix seconds: Sub saturates at 292 years, and a duration
	// holds 292 years of seconds only.
	d := float64(ts.End.Unix()-ts.Start.Unix()) + 1
	if ts.Start.IsZero() {
		d = 1
	}
	ts.RateSpan = time.Duration(min(d, float64(math.MaxInt64/int64(time.Second)))) * time.Second
	for c := range ts.Classes {
		ts.Classes[c].PeakUnitsPerSecond = ts.Classes[c].Units / d
	}
}

// head moves a live table's window to its head, the later of its newest
// event and the watermark of the sources that fed it (the clock's now
// without watermarks), and returns the seconds a snapshot reads and the
// window's bounds: peaks over the window's seconds, recent and last units
// over the complete seconds before the watermark (a second is judged once
// every source of the table has passed it). The window starts at its
// oldest slot, or later when the table was not watched that long (the
// earlier of the Store's start and the table's first event). It is called
// with t.mu held.
func (s *Store) head(t *table, now time.Time, m *marks) (sw secWindow, start, end time.Time) {
	j := s.judged(t.sources, now, m)
	jSec := j.Unix()
	if t.fresh {
		// No event yet: the window stands at the watermark.
		if ep, ok := t.sc.epochOf(jSec); ok {
			t.begin(ep, jSec)
		}
	}
	if ep, ok := t.sc.epochOf(jSec); ok {
		t.advance(ep, jSec)
	}
	from := max(floorDiv((t.epoch-int64(s.cfg.SubWindows)+1)*int64(s.slot), int64(time.Second)), t.began)
	start = time.Unix(from, 0)
	end = time.Unix(t.sec, 0)
	if j.After(end) {
		end = j
	}
	sw = secWindow{from: from, to: t.sec, ref: jSec, recentFrom: max(jSec-int64(s.cfg.RecentSeconds), from)}
	return sw, start, end
}

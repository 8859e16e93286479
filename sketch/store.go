// Package sketch keeps, per table, small summaries of a sliding window of
// traffic: the heaviest partition keys per class (a count-min sketch with
// conservative update in front of a set of exactly counted candidates),
// their per-second peaks and recent units, the number of distinct
// partition keys (HyperLogLog, exact below 1000), records per stream shard
// and the most throttled keys. It knows keys, classes, units and time,
// nothing of AWS.
//
// # Heavy hitters
//
// Per table and class, up to Candidates keys (384) are counted exactly,
// slot by slot, in a min-heap on their window totals; the Tracked heaviest
// (100) are reported. Until the candidate set first fills, every key of
// the class is a candidate: the class is counted exactly, and the set
// grows with its keys. A key that finds the set full goes into a count-min
// sketch (Depth 5 × Width 4096, made then, one 64-bit xxh3 hash split into
// the rows by double hashing, conservative update) kept for two tumbling
// generations of one window each. It becomes a candidate, evicting the
// smallest, when its estimate over the generations that overlap the window
// beats the smallest candidate by more than the sketch's typical noise (the
// median estimate of never-seen keys). Its counts then start from the
// sketch's estimates, flagged as such until they leave the window, and its
// traffic skips the sketch until it is evicted and written back. Why this
// shape, and what it was measured against, is in docs/bench/sketch.md.
//
// # Accuracy
//
// Per-class totals (events, units) are exact. A key's units never
// undercount and overcount by at most KeyStat.Error: the count-min
// estimates its counts started from, at most ε = e/Width of a generation's
// units each with probability 1-δ, δ = e^-Depth (ε ≈ 0.066 %, δ ≈ 0.67 % at
// defaults); a key that has been a candidate for a whole window, or whose
// class never had more keys than Candidates, is exact. Units are counted in
// quarter units (0.5 RCU is exact). A key's units and accesses in a slot
// are 32-bit counters that carry into 64 bits when full (a whole log is
// one slot in analyze mode), so no key's count saturates however long
// the window; its units in one second, and a count-min cell, hold up to
// 2^30 units, more than any table serves in a second or than the keys
// outside the candidates bring to one cell (TestCountersDoNotSaturate). Distinct keys are exact below 1000 and
// within about 0.81 % (one standard error) above.
//
// # Seconds
//
// Each candidate and each class keeps its units per second for the last
// RecentSeconds+1 seconds (a ring of 4 at the default 3) and, per slot,
// the units of its busiest complete second: ClassStats.PeakSecondUnits and
// KeyStat.PeakUnitsPerSecond are the busiest second of the window,
// RecentUnits the units of the last RecentSeconds complete seconds
// (TableSnapshot.RecentSpan) and LastSecondUnits those of
// TableSnapshot.LastSecond, from which a live view draws units per second.
// Class figures are exact; a key's are exact when its Error is 0, and
// otherwise count its traffic from when it became a candidate (never more
// than the truth, at most Error less). Everything counts by event time,
// the second of Event.Time, whatever the order of arrival. In a live
// window a class keeps every second of the window (up to 4096), so events
// of a table read from several shards or hosts at their own pace add up
// second by second; a key keeps 8 seconds, so its events may come up to 7
// seconds out of order from one batch to the next (a key lives in one
// stream shard, read in order; a key logged by several hosts comes as late
// as the slowest log; within a batch any order, as Put sorts a batch by
// time) and an older one counts in its slot but in no second. Whole files: a class
// keeps its units of every second of the input (analyze.go), so its
// figures are exact whatever the order of the events: logs of the same
// seconds add up. A key keeps its ring: events up to RecentSeconds out of
// order are counted in their own second; an older one starts the ring
// over at its second (hotkeyd analyze counts its reported keys' seconds
// again when its input does not run in time).
//
// # Memory
//
// A table (or index) costs at most Config.Footprint bytes: 1 046 190 bytes
// (0.998 MiB) at DefaultConfig, both classes and the whole window, whatever
// the keys (count-min 320 KiB, candidates 335 KiB with keys of up to
// MaxKeyBytes and 8 seconds of per-second counts, distinct keys 208 KiB,
// 512 shards 81 KiB with their busiest seconds, throttled keys 31 KiB (64 a class), plus 4 % allocator overhead; TestFootprint fills tables to every
// bound and checks the heap against it). A partition key longer than
// MaxKeyBytes (96) is held, counted and reported as its first bytes, "…"
// and its 64-bit hash in hex, 96 bytes in all, so that the 2 KiB keys
// DynamoDB allows cost what short ones do (a table of 400 keys of 2 KiB:
// 0.75 MB, 2.2 MB before; TestLongKeysFootprint); keys DynamoDB would
// refuse are refused before (traffic.CheckEvent, key_too_long). A table's memory
// follows its keys (Config.FootprintFor): at most about 0.45 KiB per key
// and class while its classes are counted exactly (9.7 KB for one key, 14
// KB for 10, 114 KB for 100, 260 KB for 300, measured with 64-byte keys in
// both classes and every slot), then the count-min sketch and the per-slot
// distinct-key sets are made, up to the bound; as the window empties, the
// candidate sets shrink and the sketch and sets are given back
// (TestFootprintSizes, TestFootprintShrinks). A key pays for the slots it
// has traffic in only (its counts are kept sparsely, 16 bytes a slot), a
// key seen in one slot and one second keeps their place in its record
// (the positions, per-second ring and estimate flags of a busier key are
// an extension of 88 bytes), a key read and written is held once, and
// candidate sets grow by half: a table of 200 keys read and written in one
// slot, the common small table, costs 52 KB (88 KB with the extension
// for every key, 196 KB with counts for every slot;
// TestFootprintSmallTable). The number of tables is bounded by
// Config.MaxTables (300 by default, so at most about 321 MiB); past it, a table is tracked
// only in place of an idle one or one it beats in traffic over time (evict.go), and the events of
// tables not tracked are dropped and counted by Store.Dropped. The
// process's memory as a function of its tables and their keys is
// Config.MemoryFor, bounded by Config.MemoryBudget (docs/limits.md).
//
// # Windows
//
// In live mode (Config.Window > 0) the window is a ring of SubWindows slots
// in event time: an event goes to the slot of its Event.Time (an event
// without one: the clock given to NewStore, at Put). Each table's window
// ends at its head, the later of its newest event and the watermark of
// the sources that fed it (SetWatermarks; without, the clock), so a
// backlog read in seconds is counted as it happened and an idle table's
// window still slides. The seconds a snapshot judges (LastSecond, the
// recent units) stop at that watermark: a second is judged once every
// source of the table has passed it. An event older than its table's
// window is late: counted in LateEvents, in no window. A slot expires
// whole once the window has moved past it, so a key hot two windows ago
// is gone. In analyze mode (Window == 0) there is one window that never
// expires, bounded by the earliest and latest event times.
//
// # Merging
//
// Store.Merge adds one store into another, as if it had seen the other's
// events too: stores counted by several workers over parts of one input
// merge into the store of the whole input, exact wherever the parts were
// (see Merge for what adds up how).
//
// # Concurrency
//
// Put, Snapshot and Merge are safe for concurrent use. There is no
// store-wide lock on the hot path: each table has its own mutex, held by
// Put for a run of consecutive events of that table and by Snapshot while
// it copies that table out, so readers of different tables run in
// parallel; readers of one table take turns. Snapshot shares nothing with
// the live sketches and caches the distinct-key estimate until the table
// changes.
package sketch

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/axiomhq/hyperloglog"
	"github.com/zeebo/xxh3"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// Store holds the sketches of every table. It implements traffic.Sink; Put
// and Snapshot are safe for concurrent use.
//
// The table index is a sync.Map: looking up a table takes no lock, and a
// table that comes or goes (evict.go) does not copy the index.
type Store struct {
	cfg  Config
	now  func() time.Time
	slot time.Duration // 0 in analyze mode
	// started is when the Store began watching (live mode). A window never
	// reaches back before it: traffic a freshly started daemon never saw
	// must not dilute its rates over the first window.
	started time.Time

	tables  sync.Map // tableID → *table
	ntables atomic.Int64
	// order lists the tables sorted by table then index, as snapshots list
	// them; replaced whole (under addMu) when a table comes or goes.
	order   atomic.Pointer[[]*table]
	addMu   sync.Mutex // serialises insertions into and evictions from tables
	adm     admission  // guarded by addMu
	putSeq  atomic.Uint64
	dropped atomic.Uint64
	// versions numbers the pictures SnapshotSince copies out, across
	// tables, so that a table made again never repeats a version.
	versions atomic.Uint64
	evicted  atomic.Uint64
	hashes   sync.Pool // *[]uint64, key hashes of a run

	wm Watermarks // nil: the clock judges (SetWatermarks)
	// sources lists every Event.Source a table was fed by (Pulse reads
	// their watermarks); srcMu serialises its writers.
	sources atomic.Pointer[[]string]
	srcMu   sync.Mutex
	lateMu  sync.Mutex
	late    map[string]uint64 // late events by source (LateEvents)
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
	s.sources.Store(&[]string{})
	s.order.Store(&[]*table{})
	s.hashes.New = func() any { b := make([]uint64, 0, 1024); return &b }
	if cfg.Window > 0 {
		s.slot = cfg.Window / time.Duration(cfg.SubWindows)
		s.started = now()
	}
	return s, nil
}

// Config returns the configuration in use, defaults filled in.
func (s *Store) Config() Config { return s.cfg }

// Dropped returns the number of events not counted since the Store was
// made: events of tables that could not be tracked (Config.MaxTables),
// events with an unknown class and units that are not a number.
func (s *Store) Dropped() uint64 { return s.dropped.Load() }

// Tables returns the number of tables and indexes tracked.
func (s *Store) Tables() int { return int(s.ntables.Load()) }

// Tracked reports whether the table (or index) is tracked now.
func (s *Store) Tracked(table, index string) bool {
	_, ok := s.tables.Load(tableID{table, index})
	return ok
}

// Evicted returns the number of tables (or indexes) dropped from tracking
// to make room for a busier one.
func (s *Store) Evicted() uint64 { return s.evicted.Load() }

func (s *Store) epoch(now time.Time) int64 {
	if s.slot == 0 {
		return 0
	}
	return now.UnixNano() / int64(s.slot)
}

// Put adds a batch of Events, each to the current slot of its table's
// window. It holds one table's lock at a time, once per table in the batch.
func (s *Store) Put(ctx context.Context, batch []traffic.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := s.now()
	at := s.clockAt(now)
	if s.slot > 0 {
		inTimeOrder(batch)
	}
	// A run of consecutive events of one table (a stream reader's batch is
	// all one table) is added under one lock.
	i := 0
	for i < len(batch) {
		j := i + runLen(batch[i:])
		if j-i < minRun && j < len(batch) {
			break // interleaved tables: group them instead
		}
		s.putRun(tableID{batch[i].Table, batch[i].Index}, batch[i:j], nil, at)
		i = j
	}
	if i < len(batch) {
		s.putGrouped(batch[i:], at)
	}
	return nil
}

// inTimeOrder sorts a live batch by event time when it is not in order
// already (a shuffled log posted at once, a merge of several hosts' lines):
// a key's per-second ring takes events only a few seconds out of order, a
// batch in order any. The Store owns the batch (traffic.Sink), so it sorts
// it in place; a batch in order, as a stream shard's is, costs one pass.
// Events without a time (now) sort last.
func inTimeOrder(batch []traffic.Event) {
	sec := func(e *traffic.Event) int64 {
		if e.Time.IsZero() {
			return math.MaxInt64
		}
		return e.Time.Unix()
	}
	prev := int64(math.MinInt64)
	for k := range batch {
		x := sec(&batch[k])
		if x < prev {
			slices.SortStableFunc(batch, func(a, b traffic.Event) int { return cmp.Compare(sec(&a), sec(&b)) })
			return
		}
		prev = x
	}
}

// clock is where a Put or Snapshot stands in time: the slot number and the
// second of the Store's clock (live mode; both 0 in analyze mode).
type clock struct {
	epoch, sec int64
}

func (s *Store) clockAt(now time.Time) clock {
	if s.slot == 0 {
		return clock{}
	}
	return clock{epoch: s.epoch(now), sec: floorDiv(now.UnixNano(), int64(time.Second))}
}

// runLen is the number of events at the start of batch that are of the
// first event's table and index. The inner loop compares the names' data
// pointers and lengths only, without a call, so that it runs in registers:
// the events of one batch usually share their table name's bytes.
func runLen(batch []traffic.Event) int {
	table, index := batch[0].Table, batch[0].Index
	tp, ip := unsafe.StringData(table), unsafe.StringData(index)
	j := 1
	for {
		for j < len(batch) {
			e := &batch[j]
			if unsafe.StringData(e.Table) != tp || len(e.Table) != len(table) || unsafe.StringData(e.Index) != ip || len(e.Index) != len(index) {
				break
			}
			j++
		}
		if j == len(batch) || batch[j].Table != table || batch[j].Index != index {
			return j
		}
		j++
	}
}

// minRun is the run length below which Put groups a batch by table
// instead of locking per run.
const minRun = 64

// putRun adds events (or, with idx, the events batch[idx[k]]) of one table.
func (s *Store) putRun(id tableID, events []traffic.Event, idx []int32, at clock) {
	n := len(events)
	if idx != nil {
		n = len(idx)
	}
	t := s.table(id, at, uint64(n))
	if t == nil {
		s.dropped.Add(uint64(n))
		return
	}
	// Hash the keys before taking the lock: readers of one table hash in
	// parallel.
	hp := s.hashes.Get().(*[]uint64)
	hs := slices.Grow((*hp)[:0], n)[:n]
	if idx == nil {
		for k := range hs {
			hs[k] = keyHash(events[k].PK)
		}
	} else {
		for k := range hs {
			hs[k] = keyHash(events[idx[k]].PK)
		}
	}
	t.mu.Lock()
	if t.evicted {
		// Evicted since it was looked up: these events go with it.
		t.mu.Unlock()
		s.dropped.Add(uint64(n))
		s.hashes.Put(hp)
		return
	}
	t.active = s.putSeq.Add(1)
	t.gen++
	if s.slot == 0 {
		t.advance(at.epoch, at.sec)
	} else {
		t.arrived(at, s.cfg.SubWindows)
	}
	known := len(t.sources)
	bad := t.addEvents(events, idx, hs, at.sec)
	late := t.late
	t.late = nil
	var learnt []string
	if len(t.sources) != known {
		learnt = slices.Clone(t.sources[known:])
	}
	t.mu.Unlock()
	if learnt != nil {
		s.noteSources(learnt)
	}
	for _, l := range late {
		s.addLate(l.source, l.n)
	}
	*hp = hs
	s.hashes.Put(hp)
	if bad > 0 {
		s.dropped.Add(bad)
	}
}

// keyHash is the 64-bit hash every structure of a table shares: the
// candidate index, the count-min columns, the distinct-key sets. The empty
// key (no key) hashes to 0 and is never looked up.
func keyHash(pk string) uint64 {
	if pk == "" {
		return 0
	}
	return xxh3.HashString(pk)
}

// putGrouped adds a batch whose tables interleave (a log of several
// tables): it collects each table's event indexes first, then adds each
// table's events under one lock.
func (s *Store) putGrouped(batch []traffic.Event, at clock) {
	type group struct {
		id  tableID
		idx []int32
	}
	var groups []group
	var byID map[tableID]int // past a few tables, a linear search costs more
	last := -1
	for k := range batch {
		e := &batch[k]
		if last >= 0 && groups[last].id.table == e.Table && groups[last].id.index == e.Index {
			groups[last].idx = append(groups[last].idx, int32(k))
			continue
		}
		id := tableID{e.Table, e.Index}
		last = -1
		if byID != nil {
			if g, ok := byID[id]; ok {
				last = g
			}
		} else {
			for g := range groups {
				if groups[g].id == id {
					last = g
					break
				}
			}
		}
		if last < 0 {
			groups = append(groups, group{id: id})
			last = len(groups) - 1
			if byID != nil {
				byID[id] = last
			} else if len(groups) > 8 {
				byID = make(map[tableID]int, 2*len(groups))
				for g := range groups {
					byID[groups[g].id] = g
				}
			}
		}
		groups[last].idx = append(groups[last].idx, int32(k))
	}
	for _, g := range groups {
		s.putRun(g.id, batch, g.idx, at)
	}
}

// table returns the table id, creating it while fewer than MaxTables are
// tracked and otherwise in place of a less busy one (admit); nil when the
// table is not tracked. weight is the number of events it brings.
func (s *Store) table(id tableID, at clock, weight uint64) *table {
	if t, ok := s.tables.Load(id); ok {
		return t.(*table)
	}
	s.addMu.Lock()
	defer s.addMu.Unlock()
	if t, ok := s.tables.Load(id); ok {
		return t.(*table)
	}
	var credit claim
	if int(s.ntables.Load()) >= s.cfg.MaxTables {
		ok := false
		if ok, credit = s.admit(id, at, weight); !ok {
			return nil
		}
	}
	t := newTable(id, &s.cfg, at.epoch, at.sec, s.slot)
	if s.slot > 0 {
		t.began = s.started.Unix()
	}
	t.credit, t.creditSecs, t.creditEpoch = credit.events, uint64(credit.seconds), at.epoch
	s.tables.Store(id, t)
	s.ntables.Add(1)
	s.reorder(t, true)
	return t
}

// compareIDs orders tables by table, then index.
func compareIDs(a, b tableID) int {
	return cmp.Or(strings.Compare(a.table, b.table), strings.Compare(a.index, b.index))
}

// reorder adds t to the sorted order of the tables, or takes it out. It
// is called with s.addMu held.
func (s *Store) reorder(t *table, add bool) {
	cur := *s.order.Load()
	i, found := slices.BinarySearchFunc(cur, t.id, func(e *table, id tableID) int { return compareIDs(e.id, id) })
	var next []*table
	switch {
	case add && !found:
		next = slices.Insert(slices.Clone(cur), i, t)
	case !add && found && cur[i] == t:
		next = slices.Delete(slices.Clone(cur), i, i+1)
	default:
		return
	}
	s.order.Store(&next)
}

// each calls f with every table tracked.
func (s *Store) each(f func(id tableID, t *table)) {
	s.tables.Range(func(k, v any) bool {
		f(k.(tableID), v.(*table))
		return true
	})
}

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

// picture is what SnapshotSince last copied out of a table: its version
// and what it was due by.
type picture struct {
	version uint64
	gen     uint64 // table.gen then
	from    int64  // the window's first second
	ref     int64  // the judged second (secWindow.ref)
	clock   int64  // the clock's second
	// recent says the table had traffic in a second it judged as recent,
	// or later: its recent figures change when its judged second moves.
	recent bool
	// traffic says its window held traffic: when it holds none, where the
	// window starts changes nothing it shows.
	traffic bool
}

// due reports whether a table now at cur must be copied out again for a
// caller holding p (see SnapshotSince).
func (p *picture) due(cur picture, everySecond bool) bool {
	switch {
	case cur.from != p.from && p.traffic:
		return true
	case cur.ref != p.ref && (cur.gen != p.gen || p.recent || everySecond):
		return true
	case cur.gen != p.gen && cur.clock >= p.clock+2:
		return true
	}
	return false
}

// newest returns the newest second with traffic of a live table.
func (t *table) newest() int64 {
	return max(t.classes[traffic.Read].sec, t.classes[traffic.Write].sec)
}

// holdsTraffic reports whether the table's window holds any access or
// throttled call.
func (t *table) holdsTraffic() bool {
	for s := range t.cfg.SubWindows {
		if t.slotHasTraffic(s) {
			return true
		}
	}
	return false
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

// analyzeSeconds is the secWindow of whole files: peaks over every second,
// recent units over the seconds up to the latest event's. It is called with
// t.mu held.
func (t *table) analyzeSeconds(recent int) secWindow {
	sw := secWindow{from: math.MinInt64, to: math.MaxInt64, ref: t.sec + 1}
	sw.recentFrom = sw.ref - int64(recent)
	if !t.first.IsZero() {
		sw.recentFrom = max(sw.recentFrom, t.first.Unix())
	}
	return sw
}

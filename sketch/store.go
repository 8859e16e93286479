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
// Config.MaxTables (300 by default, so at most about 321 MiB), of which the tables the config
// declares (Declare) hold reserved places; past it, a table is tracked only in place of an idle
// one, of one whose recent traffic is far below its own, or of one it beats in traffic over time
// (evict.go), and the events of tables not tracked are dropped and counted by Store.Dropped. The
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
	// untracked counts the events of tables not tracked (Untracked).
	untracked atomic.Uint64
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

// Untracked returns the events (and throttled calls) not counted because
// their table or index was not tracked (Config.MaxTables): those refused,
// and, over whole files (analyze mode), those of tables evicted for busier
// ones, which no report holds. They are part of Dropped.
func (s *Store) Untracked() uint64 { return s.untracked.Load() }

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
	// A run of consecutive events of one table (a stream reader's batch is
	// all one table) is added under one lock. A live batch's first run is
	// found in the pass that checks its time order.
	first := 0
	if s.slot > 0 && len(batch) > 0 {
		first = orderedRun(batch)
	}
	i := 0
	for i < len(batch) {
		j := first
		if j == 0 {
			j = runLen(batch[i:])
		}
		j, first = i+j, 0
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

// orderedRun sorts a live batch by event time when it is not in order
// already (a shuffled log posted at once, a merge of several hosts' lines)
// and returns the length of its first run of one table and index
// (runLen). A key's per-second ring takes events only a few seconds out
// of order, a batch in order any. The Store owns the batch (traffic.Sink),
// so it sorts it in place; a batch in order, as a stream shard's is, costs
// one pass, which finds the first run too (as runLen does: data pointers
// and lengths, names compared only where they differ). Events without a
// time (now) sort last.
func orderedRun(batch []traffic.Event) int {
	table, index := batch[0].Table, batch[0].Index
	tp, ip := unsafe.StringData(table), unsafe.StringData(index)
	prev := int64(math.MinInt64)
	k := 0
	for {
		// The inner loop calls nothing, so that it runs in registers.
		for k < len(batch) {
			e := &batch[k]
			if unsafe.StringData(e.Table) != tp || len(e.Table) != len(table) || unsafe.StringData(e.Index) != ip || len(e.Index) != len(index) {
				break
			}
			x := eventSec(e)
			if x < prev {
				return sortByTime(batch)
			}
			prev = x
			k++
		}
		if k == len(batch) || !sameTable(&batch[k], table, index) {
			break
		}
		x := eventSec(&batch[k])
		if x < prev {
			return sortByTime(batch)
		}
		prev = x
		k++
	}
	run := k
	for ; k < len(batch); k++ {
		x := eventSec(&batch[k])
		if x < prev {
			return sortByTime(batch)
		}
		prev = x
	}
	return run
}

// sortByTime sorts a live batch by time (eventSec), stably, and returns
// its first run (runLen).
func sortByTime(batch []traffic.Event) int {
	slices.SortStableFunc(batch, func(a, b traffic.Event) int { return cmp.Compare(eventSec(&a), eventSec(&b)) })
	return runLen(batch)
}

// eventSec is the second an event sorts by in a live batch: its time's,
// or, for an event without a time, after every other. (The zero Time
// compares by value first: three compares, not IsZero's branches.)
func eventSec(e *traffic.Event) int64 {
	if e.Time == (time.Time{}) || e.Time.IsZero() {
		return math.MaxInt64
	}
	return e.Time.Unix()
}

// sameTable reports whether e is of table and index, for names whose bytes
// are not the first event's.
//
//go:noinline
func sameTable(e *traffic.Event, table, index string) bool {
	return e.Table == table && e.Index == index
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
		s.untracked.Add(uint64(n))
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
		s.untracked.Add(uint64(n))
		s.hashes.Put(hp)
		return
	}
	t.active = s.putSeq.Add(1)
	t.gen++
	if s.slot == 0 {
		t.advance(at.epoch, at.sec)
	} else {
		t.arrived(at, s.cfg.SubWindows, uint64(n))
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

// table returns the table id, creating it when the config declares it,
// while the others hold fewer than their places (MaxTables less the
// declared) and otherwise in place of a less busy one (admit); nil when
// the table is not tracked. weight is the number of events it brings.
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
	declared := s.adm.declared[id]
	if !declared && s.undeclared() >= s.cfg.MaxTables-len(s.adm.declared) {
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
	t.declared = declared
	if declared {
		s.adm.ndeclared++
	}
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

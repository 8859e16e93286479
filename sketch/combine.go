package sketch

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/axiomhq/hyperloglog"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// Replica is one replica's Summary, named by its worker id.
type Replica struct {
	Worker  string
	Summary *Summary
}

// Combined is the window of several replicas that read disjoint parts of
// the traffic (each stream shard is read by one), added up, with which
// replica carries what: the replica that raises a diagnosis is the one
// whose shards carry its key.
type Combined struct {
	Snapshot
	holders map[tableID]*holders
	workers map[string]bool
}

// Has reports whether the replica named worker is one of those combined.
func (c *Combined) Has(worker string) bool { return c.workers[worker] }

// holders says which replica carries a table's keys and shards, and which
// raises its table-wide causes.
type holders struct {
	table  string
	keys   [traffic.NumClasses]map[string]held
	shards map[string]held
}

// held is the replica that counted the most of a key or shard, and how
// much.
type held struct {
	worker string
	n      float64
}

func (h *held) offer(worker string, n float64) {
	if h.worker == "" || n > h.n || (n == h.n && worker < h.worker) {
		h.worker, h.n = worker, n
	}
}

// TableReplica returns the replica that raises the table-wide causes of a
// table (or index): the one reading the lowest stream shard with records
// in the window, or without shards the lowest worker id with traffic;
// empty when no replica has the table.
func (c *Combined) TableReplica(table, index string) string {
	if h := c.holders[tableID{table, index}]; h != nil {
		return h.table
	}
	return ""
}

// KeyReplica returns the replica that counted the most units of a key of
// the class in its top keys: the one whose shards carry it. Empty when none
// did.
func (c *Combined) KeyReplica(table, index string, class traffic.Class, key string) string {
	if h := c.holders[tableID{table, index}]; h != nil && class < traffic.NumClasses {
		return h.keys[class][key].worker
	}
	return ""
}

// ShardReplica returns the replica that read the most records of a stream
// shard in the window; empty when none did.
func (c *Combined) ShardReplica(table, index, shard string) string {
	if h := c.holders[tableID{table, index}]; h != nil {
		return h.shards[shard].worker
	}
	return ""
}

// Combine adds the summaries of the replicas (this one, self, first) into
// one window, as one process reading all their traffic would see it:
//
//   - class totals, events, recent and last-second units, shard records and
//     throttled calls add up;
//   - top keys merge by key: units, errors, events and recent units add;
//     a key's busiest second and sort keys are the largest of the
//     replicas' (a key lives in one shard, read by one replica at a time);
//     the tracked heaviest are kept;
//   - a class's busiest sub-window is the largest sum of the replicas'
//     units in slots of the same number; its busiest second the largest sum
//     of their per-slot peaks: never below the truth, above it only when
//     replicas peaked in different seconds of a slot;
//   - distinct keys are the HyperLogLog union of the registers; a table
//     only one replica has keeps its own count; a replica that sent no
//     registers adds its count;
//   - the seconds before the last one (TableSnapshot.Tail) add up by
//     second, the classes' over the seconds every replica with the table
//     carries, a key's over the replicas that list it, when every replica
//     with the table is at the same last second (a table one replica
//     reads); otherwise the table gets none.
//
// The window's bounds, and the recent span of the tables self has, are
// self's. Summaries whose slot length differs from self's add their peaks
// as they are.
func Combine(self Replica, peers []Replica, tracked int) *Combined {
	return new(Combiner).Combine(self, peers, tracked)
}

// Combiner combines summaries again and again (every detector tick),
// remembering each table's distinct-key union: a HyperLogLog estimate costs
// about half a millisecond at precision 14, and the registers change only
// when a replica publishes. It is not safe for concurrent use.
type Combiner struct {
	unions map[tableID]union
}

// union is a table's distinct keys from the registers it was computed of.
type union struct {
	from []distinctInput
	n    uint64
}

// distinctInput is one replica's distinct keys of a table: its count and
// its registers, known by identity (the same slice is the same registers).
type distinctInput struct {
	n    uint64
	regs *byte
	size int
}

// Combine is the package's Combine, with the unions of the registers that
// did not change since the last call reused.
func (cb *Combiner) Combine(self Replica, peers []Replica, tracked int) *Combined {
	all := append([]Replica{self}, peers...)
	out := &Combined{holders: map[tableID]*holders{}, workers: map[string]bool{}}
	out.Start, out.End = self.Summary.Start, self.Summary.End
	tables := map[tableID]*merging{}
	var order []tableID
	ref := self.Summary
	for ri, r := range all {
		s := r.Summary
		if s == nil {
			continue
		}
		out.workers[r.Worker] = true
		for i := range s.Tables {
			ts := &s.Tables[i]
			id := tableID{ts.Table, ts.Index}
			a := tables[id]
			if a == nil {
				a = newMerging(ts.Table, ts.Index)
				tables[id] = a
				order = append(order, id)
				out.holders[id] = newHolders()
			}
			var part *TablePart
			if i < len(s.Parts) {
				part = &s.Parts[i]
			}
			a.add(ri == 0, r.Worker, ts, part, s.SlotNanos, ref, out.holders[id])
		}
	}
	for _, id := range order {
		a := tables[id]
		ts := a.finish(ref, tracked, out)
		if a.from > 1 {
			ts.DistinctKeys = cb.union(id, a.distinct, a.regBytes)
		}
		h := out.holders[id]
		h.table = a.lowBy
		if h.table == "" {
			h.table = a.anyBy
		}
		out.Tables = append(out.Tables, *ts)
	}
	for id := range cb.unions {
		if tables[id] == nil || tables[id].from < 2 {
			delete(cb.unions, id)
		}
	}
	slices.SortFunc(out.Tables, func(x, y TableSnapshot) int {
		if c := strings.Compare(x.Table, y.Table); c != 0 {
			return c
		}
		return strings.Compare(x.Index, y.Index)
	})
	return out
}

func newHolders() *holders {
	h := &holders{shards: map[string]held{}}
	for c := range h.keys {
		h.keys[c] = map[string]held{}
	}
	return h
}

func newMerging(table, index string) *merging {
	a := &merging{ts: TableSnapshot{Table: table, Index: index}, shards: map[string]uint64{}, shardPeaks: map[string]uint64{}}
	for c := range a.slots {
		a.slots[c] = map[int64]*[2]float64{}
		a.keys[c] = map[string]*KeyStat{}
	}
	return a
}

// add adds a replica's table ts, and its part when it sent one, of a
// summary whose slots are slotNanos long; self says the replica is this
// one, ref is this one's summary. h notes which replica carries what.
func (a *merging) add(self bool, worker string, ts *TableSnapshot, part *TablePart, slotNanos int64, ref *Summary, h *holders) {
	a.from++
	if !ts.Start.IsZero() && (a.start.IsZero() || ts.Start.Before(a.start)) {
		a.start = ts.Start
	}
	if ts.End.After(a.end) {
		a.end = ts.End
	}
	if self || (!a.have && a.ts.RecentSpan == 0) {
		a.ts.RecentSpan, a.ts.LastSecond = ts.RecentSpan, ts.LastSecond
		a.have = a.have || self
	}
	a.ts.Events += ts.Events
	a.ts.ThrottledEvents += ts.ThrottledEvents
	a.lasts = append(a.lasts, unixOrZero(ts.LastSecond))
	if ts.Events+ts.ThrottledEvents > 0 && (a.anyBy == "" || worker < a.anyBy) {
		a.anyBy = worker
	}
	for c := range ts.Classes {
		in := &ts.Classes[c]
		a.addClass(c, in, part, slotNanos, ref)
		a.tails[c] = append(a.tails[c], in.TailUnits)
		a.addKeys(c, in.Top, worker, h)
		a.throttle[c].add(&in.Throttled)
	}
	for _, sh := range ts.Shards {
		a.shards[sh.Shard] += sh.Records
		// One replica reads a shard at a time: its busiest second is the
		// busiest any replica saw.
		a.shardPeaks[sh.Shard] = max(a.shardPeaks[sh.Shard], sh.PeakRecords)
		h.shards[sh.Shard] = offered(h.shards[sh.Shard], worker, float64(sh.Records))
		if sh.Records > 0 && (a.lowShard == "" || sh.Shard < a.lowShard || (sh.Shard == a.lowShard && worker < a.lowBy)) {
			a.lowShard, a.lowBy = sh.Shard, worker
		}
	}
	a.addDistinct(ts.DistinctKeys, part)
}

// addClass adds a replica's totals of class c, and its per-slot series to
// align later (finish).
func (a *merging) addClass(c int, in *ClassStats, part *TablePart, slotNanos int64, ref *Summary) {
	st := &a.ts.Classes[c]
	st.Events += in.Events
	st.Units += in.Units
	st.RecentUnits += in.RecentUnits
	st.LastSecondUnits += in.LastSecondUnits
	st.PeakUnitsPerSecond = max(st.PeakUnitsPerSecond, in.PeakUnitsPerSecond)
	st.PeakSecondUnits = max(st.PeakSecondUnits, in.PeakSecondUnits)
	switch {
	case ref.SlotNanos == 0:
	case part != nil && slotNanos == ref.SlotNanos && len(part.SlotUnits[c]) == len(part.SlotPeaks[c]):
		a.series[c] = append(a.series[c], series{part.Slot, part.SlotUnits[c], part.SlotPeaks[c]})
	default:
		// No slots to align: the peaks add as they are, in the table's
		// newest slot.
		a.series[c] = append(a.series[c], series{atHead,
			[]float64{in.PeakUnitsPerSecond * time.Duration(ref.SlotNanos).Seconds()}, []float64{in.PeakSecondUnits}})
	}
}

// addKeys merges a replica's top keys of class c by key.
func (a *merging) addKeys(c int, top []KeyStat, worker string, h *holders) {
	for _, k := range top {
		h.keys[c][k.Key] = offered(h.keys[c][k.Key], worker, k.Units)
		m := a.keys[c][k.Key]
		if m == nil {
			cp := k
			cp.TailUnits = slices.Clone(k.TailUnits)
			a.keys[c][k.Key] = &cp
			continue
		}
		m.TailUnits = addTails(m.TailUnits, k.TailUnits)
		m.Units += k.Units
		m.Error += k.Error
		m.Events += k.Events
		m.RecentUnits += k.RecentUnits
		m.LastSecondUnits += k.LastSecondUnits
		m.SortKeys = max(m.SortKeys, k.SortKeys)
		m.PeakUnitsPerSecond = max(m.PeakUnitsPerSecond, k.PeakUnitsPerSecond)
	}
}

// finish returns the table added up: its window, its classes' peaks from
// their aligned slots, its tracked heaviest keys and throttled keys, and
// its shards, busiest first. ref is this replica's summary.
func (a *merging) finish(ref *Summary, tracked int, out *Combined) *TableSnapshot {
	ts := &a.ts
	ts.Start, ts.End = a.start, a.end
	if ts.End.IsZero() {
		ts.Start, ts.End = out.Start, out.End
	}
	a.alignSlots(ref.Slot)
	for c := range ts.Classes {
		st := &ts.Classes[c]
		if ref.SlotNanos > 0 {
			secs := time.Duration(ref.SlotNanos).Seconds()
			for _, v := range a.slots[c] {
				st.PeakUnitsPerSecond = max(st.PeakUnitsPerSecond, v[0]/secs)
				st.PeakSecondUnits = max(st.PeakSecondUnits, v[1])
			}
		}
		st.Top = make([]KeyStat, 0, len(a.keys[c]))
		for _, k := range a.keys[c] {
			st.Top = append(st.Top, *k)
		}
		st.Top = heaviest(st.Top, tracked, compareKeyStats)
		if len(st.Top) == 0 {
			st.Top = nil
		}
		st.Throttled = a.throttle[c].stats(tracked)
	}
	for sh, n := range a.shards {
		ts.Shards = append(ts.Shards, ShardStat{Shard: sh, Records: n, PeakRecords: a.shardPeaks[sh]})
	}
	ts.Shards = heaviest(ts.Shards, 0, compareShardStats)
	a.finishTail()
	return ts
}

// finishTail adds the replicas' seconds before the table's last one by
// second. Their tails line up only when every replica with the table has
// the same last second (the table's): then each class's tail is the sum of
// theirs over the seconds every one of them carries, and a key's the sum
// over the replicas that list it. Replicas at different last seconds (a
// table whose shards several replicas read, each at its own pace) give no
// tail: their seconds do not add up to whole seconds of the table.
func (a *merging) finishTail() {
	ts := &a.ts
	ts.Tail = 0
	aligned := len(a.lasts) > 0 && a.lasts[0] != 0 && a.lasts[0] == unixOrZero(ts.LastSecond)
	for _, l := range a.lasts {
		aligned = aligned && l == a.lasts[0]
	}
	for c := range ts.Classes {
		st := &ts.Classes[c]
		st.TailUnits = nil
		if aligned {
			for i, t := range a.tails[c] {
				if i == 0 {
					st.TailUnits = slices.Clone(t)
					continue
				}
				st.TailUnits = addTails(st.TailUnits, t)
			}
		}
		ts.Tail = max(ts.Tail, len(st.TailUnits))
		for j := range st.Top {
			if !aligned {
				st.Top[j].TailUnits = nil
			}
		}
	}
}

// addTails adds two tails of seconds ending at the same second, over the
// seconds both carry, into a (reused).
func addTails(a, b []float64) []float64 {
	n := min(len(a), len(b))
	a = a[len(a)-n:]
	for i := range n {
		a[i] += b[len(b)-n+i]
	}
	if n == 0 {
		return nil
	}
	return a
}

// unixOrZero is t's Unix second, 0 for the zero time.
func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// alignSlots adds the replicas' per-slot series into sums by slot number.
// Replicas' windows end at their own heads, in event time: the table's
// ends at the newest (at slot refSlot, this replica's, when no series says
// where), and slots of the same number add up.
func (a *merging) alignSlots(refSlot int64) {
	head := int64(math.MinInt64)
	for c := range a.series {
		for _, sr := range a.series[c] {
			if sr.newest != atHead {
				head = max(head, sr.newest)
			}
		}
	}
	if head == math.MinInt64 {
		head = refSlot
	}
	for c := range a.series {
		for _, sr := range a.series[c] {
			newest := sr.newest
			if newest == atHead {
				newest = head
			}
			addSlots(a.slots[c], newest, head, sr.units, sr.peaks)
		}
	}
}

// series is a replica's per-slot units and peaks of a table's class,
// whose newest slot is newest (atHead: the table's newest).
type series struct {
	newest       int64
	units, peaks []float64
}

// atHead places a series without slots at the table's newest slot.
const atHead = math.MaxInt64

// merging is one table of Combine on its way.
type merging struct {
	ts     TableSnapshot
	start  time.Time // the earliest window start of the replicas'
	end    time.Time // the latest window end
	series [traffic.NumClasses][]series
	have   bool // self has the table
	from   int  // replicas with the table
	slots  [traffic.NumClasses]map[int64]*[2]float64
	keys   [traffic.NumClasses]map[string]*KeyStat
	shards map[string]uint64
	// shardPeaks are the shards' busiest seconds, in records.
	shardPeaks map[string]uint64
	throttle   [traffic.NumClasses]throttleSum
	distinct   []distinctInput
	regBytes   [][]byte
	lowShard   string
	lowBy      string
	anyBy      string
	// lasts are the replicas' last seconds of the table (Unix), and
	// tails their classes' seconds before it (TableSnapshot.Tail).
	lasts []int64
	tails [traffic.NumClasses][][]float64
}

// addDistinct notes a replica's distinct keys of the table: its count, and
// its registers if it sent some.
func (a *merging) addDistinct(n uint64, part *TablePart) {
	a.ts.DistinctKeys = satAdd64(a.ts.DistinctKeys, n)
	in := distinctInput{n: n}
	var regs []byte
	if part != nil && len(part.Registers) > 0 {
		regs = part.Registers
		in.regs, in.size = &regs[0], len(regs)
	}
	a.distinct = append(a.distinct, in)
	a.regBytes = append(a.regBytes, regs)
}

// union returns the distinct keys of a table several replicas have: the
// estimate of the union of their registers, plus the counts of those that
// sent none (or registers of another precision); the last result when the
// inputs are the same.
func (cb *Combiner) union(id tableID, in []distinctInput, regs [][]byte) uint64 {
	if u, ok := cb.unions[id]; ok && slices.Equal(u.from, in) {
		return u.n
	}
	var merged *hyperloglog.Sketch
	var extra uint64
	for i, r := range regs {
		var sk hyperloglog.Sketch
		switch {
		case r == nil || sk.UnmarshalBinary(r) != nil:
			extra = satAdd64(extra, in[i].n)
		case merged == nil:
			merged = &sk
		case merged.Merge(&sk) != nil:
			extra = satAdd64(extra, in[i].n)
		}
	}
	n := extra
	if merged != nil {
		n = satAdd64(merged.Estimate(), extra)
	}
	if cb.unions == nil {
		cb.unions = map[tableID]union{}
	}
	cb.unions[id] = union{from: in, n: n}
	return n
}

// offered is h offered to worker's count n.
func offered(h held, worker string, n float64) held {
	h.offer(worker, n)
	return h
}

// addSlots adds a replica's per-slot units and peaks, whose newest slot is
// newest, into sums by slot number, for the window whose newest slot is
// ref: slots that left it are dropped, slots ahead of it (a clock ahead)
// count as its newest.
func addSlots(sums map[int64]*[2]float64, newest, ref int64, units, peaks []float64) {
	n := len(units)
	for i := range n {
		e := newest - int64(n-1-i)
		if e > ref {
			e = ref
		}
		if e <= ref-int64(n) {
			continue
		}
		v := sums[e]
		if v == nil {
			v = &[2]float64{}
			sums[e] = v
		}
		v[0] += units[i]
		v[1] += peaks[i]
	}
}

// throttleSum adds up the replicas' throttled calls of a table's class.
// The bounds of a key add too: a replica that does not list it may have
// counted up to its Error of it.
type throttleSum struct {
	st   ThrottleStats
	keys map[string]*throttleKey
}

type throttleKey struct {
	KeyCount
	listedErr uint64 // the Error of the replicas that listed the key
}

func (ts *throttleSum) add(in *ThrottleStats) {
	ts.st.Events += in.Events
	for c, n := range in.Causes {
		ts.st.Causes[c] += n
	}
	ts.st.Error += in.Error
	for _, k := range in.Keys {
		if ts.keys == nil {
			ts.keys = map[string]*throttleKey{}
		}
		m := ts.keys[k.Key]
		if m == nil {
			m = &throttleKey{KeyCount: KeyCount{Key: k.Key}}
			ts.keys[k.Key] = m
		}
		m.Count += k.Count
		m.Max += k.Max
		m.listedErr += in.Error
	}
}

// stats returns the sum, with at most tracked keys (all when tracked is
// not positive).
func (ts *throttleSum) stats(tracked int) ThrottleStats {
	st := ts.st
	st.Keys = nil
	for _, m := range ts.keys {
		k := m.KeyCount
		k.Max += st.Error - m.listedErr
		st.Keys = append(st.Keys, k)
	}
	st.Keys, st.Error = rankKeyCounts(st.Keys, tracked, st.Error)
	st.clampBounds()
	return st
}

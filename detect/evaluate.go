package detect

import (
	"cmp"
	"math"
	"slices"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Evaluate analyses one snapshot with the given settings, as one window
// (hotkeyd analyze judges a whole input this way). It is a pure function:
// no clock, no I/O, and the same snapshot and settings always give the same
// report, diagnoses and findings in a stable order (most severe first).
// Report.Rejected is left for the caller.
func Evaluate(snap sketch.Snapshot, s Settings) report.Report {
	return evaluate(snap, s, false)
}

// evaluate is Evaluate; live also judges each key on the last few seconds
// (see recentShare), which only means something on a live window.
func evaluate(snap sketch.Snapshot, s Settings, live bool) report.Report {
	r := report.Report{Start: snap.Start, End: snap.End, Tables: make([]report.TableReport, 0, len(snap.Tables)), Settings: s.Report()}
	for i := range snap.Tables {
		t := newTable(&snap.Tables[i], baseOf(snap.Tables, i), s, live)
		r.Events += t.Events
		r.Tables = append(r.Tables, t.evaluate())
	}
	return r
}

// table is one TableSnapshot with the settings and derived numbers the
// rules share.
type table struct {
	*sketch.TableSnapshot
	// base is, for an index, its table's snapshot: an index short of
	// write capacity holds back the table's writes, which it is judged
	// against when the input counts none of its own. Nil for a table.
	base *sketch.TableSnapshot
	s    Settings
	live bool
	// seconds is the time the window's rates are means over
	// (TableSnapshot.RateSpan), at least one second: a window of one
	// instant (all events with one timestamp) is taken as one second
	// rather than dividing by zero.
	seconds float64
	// rankedTop caches ranked per class: the report's one ranking of keys.
	rankedTop [traffic.NumClasses][]sketch.KeyStat
	// throttled is, per class, each listed key's throttled calls, within
	// bounds (sketch.ThrottleStats).
	throttled [traffic.NumClasses]map[string]sketch.KeyCount
	// throttles explains each class's throttled calls (throttle.go), once
	// throttleDone says it was computed.
	throttles    [traffic.NumClasses]*throttling
	throttleDone [traffic.NumClasses]bool
	// noScale leaves the scale view out (Tracker.noScale).
	noScale bool
}

// newTable wraps a TableSnapshot for the rules, with its base table's
// when it is an index's (nil otherwise, or when the snapshot has none).
// Evaluate and the Tracker both see a table through it, so a share or a
// rate is computed one way.
func newTable(ts, base *sketch.TableSnapshot, s Settings, live bool) *table {
	seconds := ts.RateSpan
	if seconds == 0 {
		seconds = ts.End.Sub(ts.Start)
	}
	t := &table{TableSnapshot: ts, base: base, s: s, live: live, seconds: max(seconds.Seconds(), 1)}
	for c := range ts.Classes {
		if keys := ts.Classes[c].Throttled.Keys; len(keys) > 0 {
			t.throttled[c] = make(map[string]sketch.KeyCount, len(keys))
			for _, k := range keys {
				t.throttled[c][k.Key] = k
			}
		}
	}
	return t
}

func (t *table) evaluate() report.TableReport {
	tr := report.TableReport{
		Table:                 t.Table,
		Index:                 t.Index,
		Events:                t.Events,
		ReadUnits:             t.Classes[traffic.Read].Units,
		WriteUnits:            t.Classes[traffic.Write].Units,
		DistinctPartitionKeys: t.DistinctKeys,
		Classes:               t.classes(),
		TopKeys:               t.topKeys(),
	}
	tr.ThrottledKeys, tr.ThrottledBound = t.throttledKeys()
	tr.Shards = t.shardRecords()
	var fs []report.Finding
	for c := range traffic.Class(traffic.NumClasses) {
		fs = append(fs, t.keyFindings(c)...)
		fs = t.keyRangeFindings(c, fs)
		if f, ok := t.capacityFinding(c); ok {
			fs = append(fs, f)
		}
	}
	if f, ok := t.lowCardinality(); ok {
		fs = append(fs, f)
	}
	if f, ok := t.timeOrdered(); ok {
		fs = append(fs, f)
	}
	fs = append(fs, t.hotPartitions()...)
	tr.Diagnoses, tr.Findings = t.diagnose(fs)
	tr.Quiet = t.quiet(tr.Diagnoses, nil)
	return tr
}

// shardRecords returns the busiest Top stream shards' records, most
// first, and the rest's as one report.OtherShards entry.
func (t *table) shardRecords() []report.ShardRecords {
	if len(t.Shards) == 0 {
		return nil
	}
	top := max(t.s.Top, 1)
	out := make([]report.ShardRecords, 0, min(len(t.Shards), top+1))
	var rest uint64
	for i, sh := range t.Shards { // most first (sketch.TableSnapshot)
		if i < top {
			out = append(out, report.ShardRecords{Shard: sh.Shard, Records: sh.Records})
		} else {
			rest += sh.Records
		}
	}
	if len(t.Shards) > top {
		out = append(out, report.ShardRecords{Shard: report.OtherShards, Records: rest})
	}
	return out
}

// limit is one partition's ceiling for class c, in units per second.
func (t *table) limit(c traffic.Class) float64 {
	if c == traffic.Write {
		return t.s.WriteLimit
	}
	return t.s.ReadLimit
}

// rate converts units in the window to units per second over the window's
// duration, at least one second (a table that just appeared must not turn
// a handful of events into a huge rate).
func (t *table) rate(units float64) float64 { return units / t.seconds }

// active reports whether class c is above the traffic floor; share-based
// rules stay silent below it. The floor is on the mean rate over the
// window: any single access is a busiest second of its own units, so a
// peak says nothing of how little traffic there is.
func (t *table) active(c traffic.Class) bool {
	cs := &t.Classes[c]
	return cs.Units > 0 && cs.Events >= t.s.MinEvents && t.rate(cs.Units) >= t.s.MinUnitsPerSecond
}

// share is a key's fraction of its class's units, 0 to 1: the one
// definition of a key's share, which the report carries to every output.
func (t *table) share(c traffic.Class, k *sketch.KeyStat) float64 {
	total := t.Classes[c].Units
	if total <= 0 {
		return 0
	}
	return math.Min(k.Units/total, 1)
}

// ranked returns the class's tracked keys heaviest first, ties by key. The
// slice is shared: callers must not modify it.
func (t *table) ranked(c traffic.Class) []sketch.KeyStat {
	if t.rankedTop[c] != nil || len(t.Classes[c].Top) == 0 {
		return t.rankedTop[c]
	}
	// Stores already rank their keys; copy and sort only if this one did
	// not (the snapshot is shared and must not be modified).
	order := func(a, b sketch.KeyStat) int {
		if a.Units != b.Units {
			return cmp.Compare(b.Units, a.Units)
		}
		return cmp.Compare(a.Key, b.Key)
	}
	top := t.Classes[c].Top
	if !slices.IsSortedFunc(top, order) {
		top = slices.Clone(top)
		slices.SortFunc(top, order)
	}
	t.rankedTop[c] = top
	return top
}

func (t *table) topKeys() []report.TopKey {
	n := 0
	for c := range traffic.Class(traffic.NumClasses) {
		n += min(len(t.ranked(c)), max(t.s.Top, 0))
	}
	// Sized once: the published report keeps it until the next tick.
	out := make([]report.TopKey, 0, n)
	for c := range traffic.Class(traffic.NumClasses) {
		top := t.ranked(c)
		for i := range top[:min(len(top), max(t.s.Top, 0))] {
			k := &top[i]
			out = append(out, report.TopKey{Key: k.Key, KeyText: report.KeyText(k.Key), Class: c.String(), Units: k.Units, Share: t.share(c, k),
				UnitsPerSecond: t.rate(k.Units), PeakUnitsPerSecond: t.keyPeak(k)})
		}
	}
	return out
}

// classes reports both classes' traffic, reads first.
func (t *table) classes() []report.ClassReport {
	out := make([]report.ClassReport, 0, traffic.NumClasses)
	for c := range traffic.Class(traffic.NumClasses) {
		cs := &t.Classes[c]
		out = append(out, report.ClassReport{
			Class: c.String(), Events: cs.Events, Units: cs.Units,
			UnitsPerSecond: t.rate(cs.Units), PeakUnitsPerSecond: t.classPeak(c), Limit: t.limit(c),
			Throttled: cs.Throttled.Events,
		})
	}
	return out
}

// sortFindings orders findings most severe first, then by share (highest
// first), kind, class and key, so reports and golden files are stable.
func sortFindings(fs []report.Finding) { slices.SortStableFunc(fs, compareFindings) }

func compareFindings(a, b report.Finding) int {
	return cmp.Or(
		cmp.Compare(a.Severity.Rank(), b.Severity.Rank()),
		cmp.Compare(b.Share, a.Share),
		cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.Class, b.Class),
		cmp.Compare(a.Key, b.Key),
	)
}

// sortDiagnoses orders diagnoses most severe first, then by the hottest
// key's peak against its ceiling, its share, cause, class and first key.
func sortDiagnoses(ds []report.Diagnosis) { slices.SortStableFunc(ds, compareDiagnoses) }

func compareDiagnoses(a, b report.Diagnosis) int {
	return cmp.Or(
		cmp.Compare(a.Severity.Rank(), b.Severity.Rank()),
		cmp.Compare(b.PeakUnitsPerSecond/b.Limit, a.PeakUnitsPerSecond/a.Limit),
		cmp.Compare(b.Share, a.Share),
		cmp.Compare(a.Cause, b.Cause),
		cmp.Compare(a.Class, b.Class),
		cmp.Compare(a.Key(), b.Key()),
	)
}

// throttledOf is the throttled calls of key in class c the window is sure
// of: the lower bound of its count, 0 for a key not listed.
func (t *table) throttledOf(c traffic.Class, key string) uint64 {
	return t.throttled[c][key].Count
}

// throttledKeys lists the table's most throttled keys, both classes
// together, each within the bounds its counts are known in, and the bound
// of any key not listed. A key is listed only when it is known to have had
// more throttled calls than any key the window could not count (its Count
// above the classes' Error): a count that cannot be told from the error is
// not a ranking.
func (t *table) throttledKeys() ([]report.ThrottledKey, uint64) {
	var bound uint64
	for c := range t.Classes {
		bound += t.Classes[c].Throttled.Error
	}
	all := map[string]*report.ThrottledKey{}
	for c := range t.Classes {
		st := &t.Classes[c].Throttled
		for _, k := range st.Keys {
			a := all[k.Key]
			if a == nil {
				a = &report.ThrottledKey{Key: k.Key, KeyText: report.KeyText(k.Key)}
				all[k.Key] = a
			}
			a.Count += k.Count
			a.CountMax += k.Max
		}
	}
	if len(all) == 0 {
		return nil, bound
	}
	keys := make([]report.ThrottledKey, 0, len(all))
	for key, a := range all {
		// In a class that does not list the key, it may have had up to
		// that class's Error.
		for c := range t.Classes {
			if _, listed := t.throttled[c][key]; !listed {
				a.CountMax += t.Classes[c].Throttled.Error
			}
		}
		keys = append(keys, *a)
	}
	slices.SortFunc(keys, func(a, b report.ThrottledKey) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(b.CountMax, a.CountMax), cmp.Compare(a.Key, b.Key))
	})
	out := make([]report.ThrottledKey, 0, min(len(keys), max(t.s.Top, 0)))
	unlisted := bound
	for _, k := range keys {
		if k.Count <= bound || len(out) >= max(t.s.Top, 0) {
			unlisted = max(unlisted, k.CountMax)
			continue
		}
		out = append(out, k)
	}
	for i := range out {
		if out[i].CountMax == out[i].Count {
			out[i].CountMax = 0 // exact
		}
	}
	return out, unlisted
}

// baseOf returns the base table's entry of tables[i] when it is an index's
// (tables are sorted by table then index, the base table first), nil
// otherwise.
func baseOf(tables []sketch.TableSnapshot, i int) *sketch.TableSnapshot {
	if tables[i].Index == "" {
		return nil
	}
	j, ok := slices.BinarySearchFunc(tables, tables[i].Table, func(ts sketch.TableSnapshot, name string) int {
		return cmp.Or(cmp.Compare(ts.Table, name), cmp.Compare(ts.Index, ""))
	})
	if !ok {
		return nil
	}
	return &tables[j]
}

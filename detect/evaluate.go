package detect

import (
	"cmp"
	"math"
	"slices"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// Evaluate analyses one snapshot with the given settings. It is a pure
// function: no clock, no I/O, and the same snapshot and settings always give
// the same report, findings in a stable order (critical first, then by
// share, kind, class and key). Report.Rejected is left for the caller.
func Evaluate(snap sketch.Snapshot, s Settings) report.Report {
	r := report.Report{Start: snap.Start, End: snap.End, Tables: make([]report.TableReport, 0, len(snap.Tables))}
	for i := range snap.Tables {
		t := &snap.Tables[i]
		r.Events += t.Events
		r.Tables = append(r.Tables, evaluateTable(t, s))
	}
	return r
}

// table is one TableSnapshot with the settings and derived numbers the
// rules share.
type table struct {
	*sketch.TableSnapshot
	s Settings
	// seconds is the window's duration, at least one second: a window of
	// one instant (all events with one timestamp) is taken as one second
	// rather than dividing by zero.
	seconds float64
	// rankedTop caches ranked per class: the report's one ranking of keys.
	rankedTop [ingest.NumClasses][]sketch.KeyStat
}

// newTable wraps a TableSnapshot for the rules. Evaluate and the Tracker
// both see a table through it, so a share or a rate is computed one way.
func newTable(ts *sketch.TableSnapshot, s Settings) *table {
	return &table{TableSnapshot: ts, s: s, seconds: max(ts.End.Sub(ts.Start).Seconds(), 1)}
}

func evaluateTable(ts *sketch.TableSnapshot, s Settings) report.TableReport {
	t := newTable(ts, s)
	tr := report.TableReport{
		Table:                 ts.Table,
		Index:                 ts.Index,
		Events:                ts.Events,
		ReadUnits:             ts.Classes[ingest.Read].Units,
		WriteUnits:            ts.Classes[ingest.Write].Units,
		DistinctPartitionKeys: ts.DistinctKeys,
		TopKeys:               t.topKeys(),
		Findings:              []report.Finding{},
	}
	for _, k := range ts.Throttled[:min(len(ts.Throttled), max(s.Top, 0))] {
		tr.ThrottledKeys = append(tr.ThrottledKeys, report.ThrottledKey{Key: k.Key, Count: k.Count})
	}
	for c := range ingest.Class(ingest.NumClasses) {
		tr.Findings = append(tr.Findings, t.keyFindings(c)...)
	}
	if f, ok := t.lowCardinality(); ok {
		tr.Findings = append(tr.Findings, f)
	}
	if f, ok := t.timeOrdered(); ok {
		tr.Findings = append(tr.Findings, f)
	}
	tr.Findings = append(tr.Findings, t.hotPartitions()...)
	sortFindings(tr.Findings)
	return tr
}

// limit is one partition's ceiling for class c, in units per second.
func (t *table) limit(c ingest.Class) float64 {
	if c == ingest.Write {
		return t.s.WriteLimit
	}
	return t.s.ReadLimit
}

// rate converts units in the window to units per second over the window's
// duration, at least one second (a table that just appeared must not turn
// a handful of events into a huge rate).
func (t *table) rate(units float64) float64 { return units / t.seconds }

// peak is the class's peak rate: the store's sub-window peak when it has
// one, the window's mean otherwise.
func (t *table) peak(c ingest.Class) float64 {
	cs := &t.Classes[c]
	return max(cs.PeakUnitsPerSecond, t.rate(cs.Units))
}

// active reports whether class c is above the traffic floor; share-based
// rules stay silent below it.
func (t *table) active(c ingest.Class) bool {
	cs := &t.Classes[c]
	return cs.Units > 0 && cs.Events >= t.s.MinEvents && t.peak(c) >= t.s.MinUnitsPerSecond
}

// share is a key's fraction of its class's units, 0 to 1: the one
// definition of a key's share, which the report carries to every output.
func (t *table) share(c ingest.Class, k *sketch.KeyStat) float64 {
	total := t.Classes[c].Units
	if total <= 0 {
		return 0
	}
	return math.Min(k.Units/total, 1)
}

// nearCeiling reports whether a rate is within LimitFraction of the
// partition ceiling of class c.
func (t *table) nearCeiling(c ingest.Class, rate float64) bool {
	return rate >= t.s.LimitFraction*t.limit(c)
}

func (t *table) severity(c ingest.Class, rate float64) report.Severity {
	if t.nearCeiling(c, rate) {
		return report.SeverityCritical
	}
	return report.SeverityWarning
}

// ranked returns the class's tracked keys heaviest first, ties by key. The
// slice is shared: callers must not modify it.
func (t *table) ranked(c ingest.Class) []sketch.KeyStat {
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
	out := []report.TopKey{}
	for c := range ingest.Class(ingest.NumClasses) {
		top := t.ranked(c)
		for i := range top[:min(len(top), max(t.s.Top, 0))] {
			k := &top[i]
			out = append(out, report.TopKey{Key: k.Key, Class: c.String(), Units: k.Units, Share: t.share(c, k), UnitsPerSecond: t.rate(k.Units)})
		}
	}
	return out
}

// sortFindings orders findings critical first, then by share (highest
// first), kind, class and key, so reports and golden files are stable.
func sortFindings(fs []report.Finding) { slices.SortStableFunc(fs, compareFindings) }

func compareFindings(a, b report.Finding) int {
	rank := func(sev report.Severity) int {
		if sev == report.SeverityCritical {
			return 0
		}
		return 1
	}
	return cmp.Or(
		cmp.Compare(rank(a.Severity), rank(b.Severity)),
		cmp.Compare(b.Share, a.Share),
		cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.Class, b.Class),
		cmp.Compare(a.Key, b.Key),
	)
}

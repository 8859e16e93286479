package detect

import (
	"cmp"
	"slices"
	"sync"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// Tracker adds live-mode hysteresis to Evaluate, so that one noisy window
// does not alarm and a key hovering near the threshold does not flap:
//
//   - a finding is flagged once Evaluate has reported it HoldEvaluations
//     times in a row;
//   - a flagged hot_key stays flagged until its share falls below
//     ClearThreshold (or its class falls below the traffic floor);
//   - a flagged partition_limit stays flagged until the key's rate falls
//     below ClearLimitFraction of the ceiling;
//   - a flagged table-wide finding (low_cardinality, time_ordered_key,
//     hot_partition) stays flagged until Evaluate has not reported it for
//     HoldEvaluations evaluations in a row;
//   - everything of a table that left the snapshot is cleared.
//
// The Tracker has no clock: one call to Evaluate is one evaluation, and the
// caller's ticker sets the pace. It is safe for concurrent use (the detector
// tick evaluates while the exporter lists flags).
type Tracker struct {
	s Settings

	mu      sync.Mutex
	states  map[findingID]*tracked
	flagged []report.Flag
}

// findingID identifies a finding across evaluations.
type findingID struct {
	table, index string
	kind         report.Kind
	class, key   string
}

// idOf identifies a finding. A table-wide finding (low_cardinality,
// time_ordered_key: at most one per table) is the same finding when its
// example key or class changes, e.g. when a date key rolls over at
// midnight; it must not start a new hold and leave the old one behind.
func idOf(table, index string, f report.Finding) findingID {
	switch f.Kind {
	case report.KindLowCardinality, report.KindTimeOrderedKey:
		return findingID{table: table, index: index, kind: f.Kind}
	}
	return findingID{table: table, index: index, kind: f.Kind, class: f.Class, key: f.Key}
}

type tracked struct {
	streak  int // consecutive evaluations Evaluate reported it
	absent  int // consecutive evaluations it was not reported, while flagged
	flagged bool
	last    report.Finding
}

// NewTracker returns a Tracker with nothing flagged. s should be valid
// (Settings.Validate).
func NewTracker(s Settings) *Tracker {
	return &Tracker{s: s, states: map[findingID]*tracked{}}
}

// Evaluate runs Evaluate on snap, advances the hysteresis by one evaluation,
// and returns the report with, per table, only the flagged findings, and
// what changed: the findings raised in this evaluation in report order,
// then those cleared, by table, index and report order.
func (tr *Tracker) Evaluate(snap sketch.Snapshot) (report.Report, []report.Change) {
	raw := Evaluate(snap, tr.s)
	tables := map[[2]string]*table{}
	for i := range snap.Tables {
		ts := &snap.Tables[i]
		tables[[2]string{ts.Table, ts.Index}] = newTable(ts, tr.s)
	}

	tr.mu.Lock()
	defer tr.mu.Unlock()
	seen := map[findingID]bool{}
	var changes []report.Change
	for _, t := range raw.Tables {
		for _, f := range t.Findings {
			id := idOf(t.Table, t.Index, f)
			seen[id] = true
			st := tr.states[id]
			if st == nil {
				st = &tracked{}
				tr.states[id] = st
			}
			st.streak++
			st.absent = 0
			st.last = f
			if st.streak >= tr.s.HoldEvaluations && !st.flagged {
				st.flagged = true
				changes = append(changes, report.Change{Flag: report.Flag{Table: t.Table, Index: t.Index, Finding: f}})
			}
		}
	}
	var cleared []report.Change
	for id, st := range tr.states {
		if seen[id] {
			continue
		}
		t := tables[[2]string{id.table, id.index}]
		if !st.flagged || t == nil || !tr.holds(t, id, st) {
			if st.flagged {
				cleared = append(cleared, report.Change{Flag: report.Flag{Table: id.table, Index: id.index, Finding: st.last}, Cleared: true})
			}
			delete(tr.states, id)
		}
	}
	slices.SortFunc(cleared, func(a, b report.Change) int { return compareFlags(a.Flag, b.Flag) })
	changes = append(changes, cleared...)

	byTable := map[[2]string][]report.Finding{}
	tr.flagged = tr.flagged[:0]
	for id, st := range tr.states {
		if !st.flagged {
			continue
		}
		tid := [2]string{id.table, id.index}
		byTable[tid] = append(byTable[tid], st.last)
		tr.flagged = append(tr.flagged, report.Flag{Table: id.table, Index: id.index, Finding: st.last})
	}
	slices.SortFunc(tr.flagged, compareFlags)
	for i := range raw.Tables {
		t := &raw.Tables[i]
		fs := byTable[[2]string{t.Table, t.Index}]
		if fs == nil {
			fs = []report.Finding{}
		}
		sortFindings(fs)
		t.Findings = fs
	}
	return raw, changes
}

// compareFlags orders flags by table, index, then in report order.
func compareFlags(a, b report.Flag) int {
	return cmp.Or(cmp.Compare(a.Table, b.Table), cmp.Compare(a.Index, b.Index), compareFindings(a.Finding, b.Finding))
}

// holds decides whether a flagged finding that Evaluate did not report this
// time stays flagged (the hysteresis band), updating its numbers.
func (tr *Tracker) holds(t *table, id findingID, st *tracked) bool {
	c, ok := ingest.ParseClass(id.class)
	switch id.kind {
	case report.KindHotKey, report.KindPartitionLimit:
		if !ok {
			return false
		}
		var k *sketch.KeyStat
		for i := range t.Classes[c].Top {
			if t.Classes[c].Top[i].Key == id.key {
				k = &t.Classes[c].Top[i]
			}
		}
		if k == nil {
			return false
		}
		share, rate := t.share(c, k), t.rate(k.Units)
		if id.kind == report.KindHotKey && (!t.active(c) || share < tr.s.ClearThreshold) {
			return false
		}
		if id.kind == report.KindPartitionLimit && rate < tr.s.ClearLimitFraction*t.limit(c) {
			return false
		}
		st.last.Share, st.last.UnitsPerSecond = share, rate
		if id.kind == report.KindHotKey {
			st.last.Severity = t.severity(c, rate)
		}
		return true
	default:
		st.absent++
		return st.absent < tr.s.HoldEvaluations
	}
}

// Flagged returns the findings flagged by the last Evaluate, sorted by
// table, index, then in report order. The slice is the caller's.
func (tr *Tracker) Flagged() []report.Flag {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.flagged)
}

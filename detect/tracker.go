package detect

import (
	"cmp"
	"slices"
	"sync"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Tracker adds live-mode judgement to Evaluate, so that a key that turns
// hot is flagged within seconds, one noisy window does not alarm, and a
// key hovering near a threshold does not flap. It flags diagnoses, the unit
// an operator is alerted on:
//
//   - each evaluation also judges every key on its share of the last few
//     seconds (fast onset, see recentShare);
//   - a diagnosis is flagged once Evaluate has reported it HoldEvaluations
//     times in a row; a diagnosis that takes over the findings of another
//     (a low_cardinality explaining a hot key already held) continues that
//     one's streak, and the one it replaces is cleared once it is flagged;
//   - a flagged key diagnosis (hot_key, partition_limit) stays flagged
//     until the key's share, of the window and of the last seconds, falls
//     below ClearThreshold (or its class below the traffic floor) and its
//     peak below ClearLimitFraction of the ceiling; its cause stays
//     partition_limit down to ClearLimitFraction too;
//   - a flagged diagnosis's severity rises at once and falls only below
//     the clear band (ClearLimitFraction for critical, ClearWarnFraction for
//     warning);
//   - a flagged table-wide diagnosis (low_cardinality, time_ordered_key,
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
	states  map[diagID]*tracked
	flagged []report.Flag
}

// diagID identifies a diagnosis across evaluations: a key's diagnosis is
// the same whether its cause is hot_key or partition_limit; a table-wide
// one (low_cardinality, time_ordered_key: at most one per table) is the
// same when its keys or class change, e.g. when a date key rolls over at
// midnight; a hot_partition is its shard's.
type diagID struct {
	table, index string
	cause        report.Kind
	class, key   string
}

// idOf identifies the diagnosis a finding is the root of, or would be as
// its own root cause.
func idOf(table, index string, kind report.Kind, class, key string) diagID {
	switch kind {
	case report.KindHotKey, report.KindPartitionLimit:
		return diagID{table: table, index: index, cause: report.KindHotKey, class: class, key: key}
	case report.KindLowCardinality, report.KindTimeOrderedKey:
		return diagID{table: table, index: index, cause: kind}
	}
	return diagID{table: table, index: index, cause: kind, key: key}
}

func diagIDOf(table, index string, d report.Diagnosis) diagID {
	return idOf(table, index, d.Cause, d.Class, d.Key())
}

type tracked struct {
	streak   int // consecutive evaluations Evaluate reported it
	absent   int // consecutive evaluations it was not reported, while flagged
	flagged  bool
	last     report.Diagnosis
	findings []report.Finding // the evidence of last
	// by is, while it is not reported as its own diagnosis, the diagnosis
	// now explaining its findings.
	by *diagID
}

// NewTracker returns a Tracker with nothing flagged. s should be valid
// (Settings.Validate).
func NewTracker(s Settings) *Tracker {
	return &Tracker{s: s, states: map[diagID]*tracked{}}
}

// Evaluate runs Evaluate on snap (judging the last few seconds too),
// advances the hysteresis by one evaluation, and returns the report with,
// per table, only the flagged diagnoses and the findings they explain, and
// what changed: the diagnoses raised or changed in this evaluation in
// report order, then those cleared, by table, index and report order.
func (tr *Tracker) Evaluate(snap sketch.Snapshot) (report.Report, []report.Change) {
	raw := evaluate(snap, tr.s, true)
	tables := map[[2]string]*table{}
	for i := range snap.Tables {
		ts := &snap.Tables[i]
		tables[[2]string{ts.Table, ts.Index}] = newTable(ts, tr.s, true)
	}

	tr.mu.Lock()
	defer tr.mu.Unlock()
	seen := map[diagID]bool{}
	pending := map[[2]string][]report.Diagnosis{}
	var changes, cleared []report.Change
	for ti := range raw.Tables {
		rt := &raw.Tables[ti]
		tid := [2]string{rt.Table, rt.Index}
		t := tables[tid]
		for _, d := range rt.Diagnoses {
			id := diagIDOf(rt.Table, rt.Index, d)
			seen[id] = true
			st := tr.states[id]
			if st == nil {
				st = &tracked{}
				tr.states[id] = st
			}
			// A diagnosis that explains findings held under another
			// continues that one's streak, and marks it taken over.
			for _, e := range d.Explains {
				oid := idOf(rt.Table, rt.Index, e.Kind, e.Class, e.Key)
				if o := tr.states[oid]; oid != id && o != nil && !seen[oid] {
					st.streak = max(st.streak, o.streak)
					o.by = &id
				}
			}
			st.streak++
			st.absent = 0
			st.by = nil
			if st.flagged {
				d = tr.hold(t, st.last, d)
			}
			was := st.last
			st.last, st.findings = d, explained(rt.Findings, d)
			switch {
			case st.streak >= tr.s.HoldEvaluations && !st.flagged:
				st.flagged = true
				changes = append(changes, report.Change{Flag: report.Flag{Table: rt.Table, Index: rt.Index, Diagnosis: d}})
			case st.flagged && (was.Cause != d.Cause || was.Severity != d.Severity || was.Fix.Kind != d.Fix.Kind):
				w := was
				changes = append(changes, report.Change{Flag: report.Flag{Table: rt.Table, Index: rt.Index, Diagnosis: d}, Was: &w})
			case !st.flagged && d.Severity.Pages():
				pending[tid] = append(pending[tid], d)
			}
		}
	}
	for id, st := range tr.states {
		if seen[id] {
			continue
		}
		t := tables[[2]string{id.table, id.index}]
		keep := st.flagged && t != nil
		if keep && st.by != nil {
			// Taken over: cleared once the diagnosis that explains it now
			// is flagged, held until then.
			if o := tr.states[*st.by]; o != nil && o.flagged {
				keep = false
			}
		}
		if keep {
			keep = tr.holds(t, id, st)
		}
		if !keep {
			if st.flagged {
				cleared = append(cleared, report.Change{Flag: report.Flag{Table: id.table, Index: id.index, Diagnosis: st.last}, Cleared: true})
			}
			delete(tr.states, id)
		}
	}
	slices.SortFunc(cleared, func(a, b report.Change) int { return compareFlags(a.Flag, b.Flag) })
	slices.SortStableFunc(changes, func(a, b report.Change) int { return compareFlags(a.Flag, b.Flag) })
	changes = append(changes, cleared...)

	type flaggedOf struct {
		ds []report.Diagnosis
		fs []report.Finding
	}
	byTable := map[[2]string]*flaggedOf{}
	tr.flagged = tr.flagged[:0]
	for id, st := range tr.states {
		if !st.flagged {
			continue
		}
		tid := [2]string{id.table, id.index}
		if byTable[tid] == nil {
			byTable[tid] = &flaggedOf{}
		}
		byTable[tid].ds = append(byTable[tid].ds, st.last)
		byTable[tid].fs = append(byTable[tid].fs, st.findings...)
		tr.flagged = append(tr.flagged, report.Flag{Table: id.table, Index: id.index, Diagnosis: st.last})
	}
	slices.SortFunc(tr.flagged, compareFlags)
	for i := range raw.Tables {
		rt := &raw.Tables[i]
		tid := [2]string{rt.Table, rt.Index}
		rt.Diagnoses, rt.Findings = []report.Diagnosis{}, []report.Finding{}
		if f := byTable[tid]; f != nil {
			rt.Diagnoses, rt.Findings = f.ds, f.fs
			sortDiagnoses(rt.Diagnoses)
			sortFindings(rt.Findings)
		}
		rt.Quiet = tables[tid].quiet(rt.Diagnoses, pending[tid])
	}
	return raw, changes
}

// explained returns the findings of fs that d explains.
func explained(fs []report.Finding, d report.Diagnosis) []report.Finding {
	var out []report.Finding
	for _, f := range fs {
		if slices.Contains(d.Explains, report.Explained{Kind: f.Kind, Key: f.Key, Class: f.Class}) {
			out = append(out, f)
		}
	}
	return out
}

// compareFlags orders flags by table, index, then in report order.
func compareFlags(a, b report.Flag) int {
	return cmp.Or(cmp.Compare(a.Table, b.Table), cmp.Compare(a.Index, b.Index), compareDiagnoses(a.Diagnosis, b.Diagnosis))
}

// hold applies the hysteresis of a flagged diagnosis that Evaluate reported
// again: its severity falls only below the clear band, and a key's cause
// stays partition_limit while its peak is above ClearLimitFraction.
func (tr *Tracker) hold(t *table, was, d report.Diagnosis) report.Diagnosis {
	c, _ := traffic.ParseClass(d.Class)
	d.Severity = d.Severity.Max(t.heldSeverity(c, was.Severity, d.PeakUnitsPerSecond, d.Throttled))
	if was.Cause == report.KindPartitionLimit && d.Cause == report.KindHotKey && d.PeakUnitsPerSecond >= tr.s.ClearLimitFraction*t.limit(c) {
		d.Cause = report.KindPartitionLimit
	}
	return d
}

// holds decides whether a flagged diagnosis that Evaluate did not report
// this time stays flagged (the hysteresis band), updating its numbers.
func (tr *Tracker) holds(t *table, id diagID, st *tracked) bool {
	if id.cause != report.KindHotKey {
		st.absent++
		return st.absent < tr.s.HoldEvaluations
	}
	c, ok := traffic.ParseClass(id.class)
	if !ok {
		return false
	}
	k := t.keyStat(c, id.key)
	if k == nil {
		return false
	}
	share, peak := t.share(c, k), t.keyPeak(k)
	recent, fresh := t.recentShare(c, k)
	limit := t.limit(c)
	byShare := t.active(c) && (share >= tr.s.ClearThreshold || fresh && recent >= tr.s.ClearThreshold)
	byPeak := peak >= tr.s.ClearLimitFraction*limit
	if !byShare && !byPeak {
		return false
	}
	d := &st.last
	d.Share, d.PeakUnitsPerSecond, d.Throttled = share, peak, t.throttledOf(c, id.key)
	d.Severity = t.heldSeverity(c, d.Severity, peak, d.Throttled)
	if d.Cause == report.KindPartitionLimit && !byPeak {
		d.Cause = report.KindHotKey
	}
	for i := range st.findings {
		f := &st.findings[i]
		if f.Key == id.key && f.Class == id.class {
			f.Share, f.PeakUnitsPerSecond, f.UnitsPerSecond = share, peak, t.rate(k.Units)
			f.Severity = t.keySeverity(c, id.key, peak)
		}
	}
	return true
}

// Flagged returns the diagnoses flagged by the last Evaluate, sorted by
// table, index, then in report order. The slice is the caller's.
func (tr *Tracker) Flagged() []report.Flag {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.flagged)
}

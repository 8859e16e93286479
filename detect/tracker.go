package detect

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Tracker adds live-mode judgement to Evaluate, so that a key that turns
// hot is flagged within seconds, one noisy second does not alarm, and a
// key hovering near a threshold does not flap. It flags diagnoses, the unit
// an operator is alerted on:
//
//   - each evaluation also judges every key on its share of the last few
//     seconds (fast onset, see recentShare);
//   - a diagnosis is flagged once every evaluation of its table has
//     reported it over Hold of event time: from the table's judged second
//     it first appeared in to one at least Hold later (two consecutive
//     seconds at the default of 1 s). A diagnosis that takes over the
//     findings of another (a low_cardinality explaining a hot key already
//     held) continues that one's streak, and the one it replaces is
//     cleared once it is flagged;
//   - a flagged key diagnosis (hot_key, partition_limit) stays flagged
//     until the key's share, of the window and of the last seconds, falls
//     below ClearThreshold (or its class below the traffic floor) and its
//     peak below ClearLimitFraction of the ceiling; its cause stays
//     partition_limit down to ClearLimitFraction too;
//   - a flagged diagnosis's severity rises at once and falls only below
//     the clear band (ClearLimitFraction for critical, ClearWarnFraction for
//     warning);
//   - a flagged table-wide diagnosis (low_cardinality, time_ordered_key,
//     hot_partition) stays flagged until Evaluate has not reported it over
//     Hold of event time;
//   - everything of a table that left the snapshot is cleared.
//
// The Tracker has no clock: event time is each table's own, the end of the
// last second its snapshot judged (TableSnapshot.LastSecond), or its
// window's end before it has one. Evaluating the same window twice moves
// nothing.
//
// Work follows change: the Tracker keeps each table's evaluation, and an
// entry of the snapshot that says its table is as the Tracker last saw it
// (TableSnapshot.Kept, at the Version Held returns) is not evaluated again;
// its report and hysteresis stay as they were. Held asks for every judged
// second of a table whose hysteresis is under way (a diagnosis held but
// not flagged yet, or a table-wide one absent but not cleared yet), so
// that it progresses with its table's event time.
//
// Evaluate and Held are called by one goroutine, the detector tick;
// Flagged is safe to call from any goroutine meanwhile.
type Tracker struct {
	s Settings // the goroutine that calls Evaluate only; next replaces it
	// next holds SetSettings's settings until the next Evaluate takes
	// them.
	next atomic.Pointer[Settings]
	// series answers the judged keys' hourly series for their forecasts
	// (SetForecastSeries); nil gives headroom and the scale view alone.
	series atomic.Pointer[KeySeries]
	// noScale leaves the 10× / 100× view out of the reports: the
	// baseline BenchmarkScaleView measures what the view adds to a tick
	// against. Never set outside that benchmark.
	noScale bool

	// Touched by the goroutine that calls Evaluate only.
	tables map[tableKey]*tableState
	mark   uint64 // Evaluate's calls, to find the tables a call did not list
	rev    uint64 // the last revision given to a table's report
	evals  uint64 // tables evaluated so far (Evaluations)
	revs   []uint64
	// last and lastEvents are the tables and events of the last report.
	last       []report.TableReport
	lastEvents uint64

	mu      sync.Mutex
	flagged []report.Flag
}

// tableKey names a table or index across evaluations.
type tableKey struct{ table, index string }

// tableState is what the Tracker keeps of one table between evaluations.
type tableState struct {
	// version is the snapshot entry's version last evaluated (0: none,
	// or one that cannot be kept); at its event time.
	version uint64
	at      time.Time
	// out is the table's report as last published, rev its revision.
	out report.TableReport
	rev uint64
	// diags holds the hysteresis of the table's diagnoses; flags are the
	// flagged ones in report order.
	diags map[diagID]*tracked
	flags []report.Flag
	mark  uint64
}

// diagID identifies a diagnosis across evaluations: a key's diagnosis is
// the same whether its cause is hot_key or partition_limit; a table-wide
// one (low_cardinality, time_ordered_key: at most one per table) is the
// same when its keys or class change, e.g. when a date key rolls over at
// midnight; a hot_partition is its shard's.
type diagID struct {
	cause      report.Kind
	class, key string
}

// idOf identifies the diagnosis a finding is the root of, or would be as
// its own root cause.
func idOf(kind report.Kind, class, key string) diagID {
	switch kind {
	case report.KindCapacity:
		return diagID{cause: kind, class: class}
	case report.KindHotKey, report.KindPartitionLimit:
		return diagID{cause: report.KindHotKey, class: class, key: key}
	case report.KindLowCardinality, report.KindTimeOrderedKey:
		return diagID{cause: kind}
	}
	return diagID{cause: kind, key: key}
}

func diagIDOf(d report.Diagnosis) diagID {
	return idOf(d.Cause, d.Class, d.Key())
}

type tracked struct {
	// since is the event time of the first evaluation of the current
	// streak (the evaluations that reported it); absentSince, while it is
	// flagged and not reported, that of the first evaluation without it.
	since, absentSince time.Time
	flagged            bool
	last               report.Diagnosis
	findings           []report.Finding // the evidence of last
	// by is, while it is not reported as its own diagnosis, the diagnosis
	// now explaining its findings.
	by *diagID
}

// NewTracker returns a Tracker with nothing flagged. s should be valid
// (Settings.Validate).
func NewTracker(s Settings) *Tracker {
	return &Tracker{s: s, tables: map[tableKey]*tableState{}}
}

// Held returns the version of the table's snapshot entry the Tracker
// evaluated last (0 when it holds none), and whether it needs every judged
// second of the table even when nothing else changed: its hysteresis is
// under way. It is what a store's incremental snapshot asks
// (sketch.Store.SnapshotSince). Called by the goroutine that calls
// Evaluate.
func (tr *Tracker) Held(table, index string) (version uint64, everySecond bool) {
	st := tr.tables[tableKey{table, index}]
	if st == nil {
		return 0, false
	}
	if tr.next.Load() != nil {
		// New settings: every table is judged again.
		return 0, st.underWay()
	}
	return st.version, st.underWay()
}

// SetSettings makes the next Evaluate judge by s (valid, as for
// NewTracker): what is flagged and the hysteresis under way are kept and
// judged by s from then on, so that a diagnosis still above a new
// threshold stays flagged and one below its clear threshold clears. Every
// table is judged again: a kept entry (sketch.Store.SnapshotSince) at the
// next Evaluate, the others at the one after. It is a reload's way to
// change the thresholds without losing the window, and may be called from
// any goroutine.
func (tr *Tracker) SetSettings(s Settings) {
	tr.next.Store(&s)
}

// underWay reports whether a diagnosis of the table is held but not yet
// flagged, or flagged, table-wide and absent but not yet cleared.
func (st *tableState) underWay() bool {
	for _, d := range st.diags {
		if !d.flagged || !d.absentSince.IsZero() {
			return true
		}
	}
	return false
}

// Evaluations returns how many table entries Evaluate has evaluated so
// far; an entry it kept is not counted. Called by the goroutine that calls
// Evaluate.
func (tr *Tracker) Evaluations() uint64 { return tr.evals }

// Revisions returns, for each table of the report Evaluate returned last,
// a number that changes whenever the table's report does: what a renderer
// caches a table's output by. The slice is shared and must not be
// modified. Called by the goroutine that calls Evaluate.
func (tr *Tracker) Revisions() []uint64 { return tr.revs }

// Evaluate runs Evaluate on each table of snap that changed (judging the
// last few seconds too), advances its hysteresis to the table's event
// time, and returns the report with, per table, only the flagged
// diagnoses and the findings they explain, and what changed: the
// diagnoses raised or changed in this evaluation in report order, then
// those cleared, by table, index and report order. A table whose entry is
// Kept keeps its report and hysteresis as they were.
func (tr *Tracker) Evaluate(snap sketch.Snapshot) (report.Report, []report.Change) {
	renewed := false
	if s := tr.next.Swap(nil); s != nil {
		tr.s, renewed = *s, true
	}
	rep := report.Report{Start: snap.Start, End: snap.End, Settings: tr.s.Report()}
	if !renewed && tr.kept(snap) {
		// Every table as it was: the last report's tables stand (a
		// published report is never modified).
		rep.Tables, rep.Events = tr.last, tr.lastEvents
		return rep, nil
	}
	tr.mark++
	rep.Tables = make([]report.TableReport, len(snap.Tables))
	var changes, cleared []report.Change
	moved := false
	tr.revs = make([]uint64, len(snap.Tables))
	for i := range snap.Tables {
		ts := &snap.Tables[i]
		key := tableKey{ts.Table, ts.Index}
		st := tr.tables[key]
		if st == nil {
			st = &tableState{diags: map[diagID]*tracked{}, out: report.TableReport{Table: ts.Table, Index: ts.Index}}
			tr.tables[key] = st
		}
		st.mark = tr.mark
		// A kept entry carries no counts: it is only ever the version
		// Held returned (sketch.Store.SnapshotSince), whose report stands.
		if !ts.Kept {
			var c, cl []report.Change
			c, cl = tr.evaluateTable(st, ts, baseOf(snap.Tables, i))
			changes, cleared = append(changes, c...), append(cleared, cl...)
			moved = true
		} else if renewed {
			// Judged by the settings before: asked for whole next time.
			st.version = 0
		}
		rep.Tables[i] = st.out
		rep.Events += st.out.Events
		tr.revs[i] = st.rev
	}
	for key, st := range tr.tables {
		if st.mark == tr.mark {
			continue
		}
		// The table left the snapshot: everything of it is cleared.
		for _, f := range st.flags {
			cleared = append(cleared, report.Change{Flag: f, Cleared: true})
		}
		delete(tr.tables, key)
		moved = true
	}
	tr.last, tr.lastEvents = rep.Tables, rep.Events
	slices.SortFunc(cleared, func(a, b report.Change) int { return compareFlags(a.Flag, b.Flag) })
	slices.SortStableFunc(changes, func(a, b report.Change) int { return compareFlags(a.Flag, b.Flag) })
	changes = append(changes, cleared...)
	if moved {
		var flagged []report.Flag
		for i := range snap.Tables {
			flagged = append(flagged, tr.tables[tableKey{snap.Tables[i].Table, snap.Tables[i].Index}].flags...)
		}
		tr.mu.Lock()
		tr.flagged = flagged
		tr.mu.Unlock()
	}
	return rep, changes
}

// kept reports whether every entry of snap is kept and its tables are
// those of the last report, in its order: nothing to evaluate, and the
// last report's tables stand.
func (tr *Tracker) kept(snap sketch.Snapshot) bool {
	if len(snap.Tables) == 0 || len(snap.Tables) != len(tr.last) || len(tr.tables) != len(tr.last) {
		return false
	}
	for i := range snap.Tables {
		ts := &snap.Tables[i]
		if !ts.Kept || ts.Table != tr.last[i].Table || ts.Index != tr.last[i].Index {
			return false
		}
	}
	return true
}

// eventTime is how far a table's entry judges in event time: the end of
// its last complete second, or its window's end before it has one.
func eventTime(ts *sketch.TableSnapshot) time.Time {
	if !ts.LastSecond.IsZero() {
		return ts.LastSecond.Add(time.Second)
	}
	return ts.End
}

// evaluateTable evaluates one table's entry, with its base table's when
// it is an index's, and advances its hysteresis: it returns the diagnoses
// raised or changed, and those cleared.
func (tr *Tracker) evaluateTable(st *tableState, ts, base *sketch.TableSnapshot) (changes, cleared []report.Change) {
	tr.evals++
	if base != nil && base.Kept {
		base = nil // a kept entry carries no counts
	}
	t := newTable(ts, base, tr.s, true)
	t.noScale = tr.noScale
	rt := t.evaluate()
	t.foresee(&rt, tr.forecastSeries())
	at := eventTime(ts)
	if at.Before(st.at) {
		at = st.at // event time never goes back
	}
	st.version, st.at = ts.Version, at
	flag := func(d report.Diagnosis) report.Flag {
		return report.Flag{Table: rt.Table, Index: rt.Index, Diagnosis: d}
	}
	seen := map[diagID]bool{}
	var pending []report.Diagnosis
	for _, d := range rt.Diagnoses {
		change, pends := tr.advance(t, st, seen, d, rt.Findings, at)
		switch {
		case change != nil:
			change.Flag = flag(change.Diagnosis)
			changes = append(changes, *change)
		case pends:
			pending = append(pending, d)
		}
	}
	for _, d := range tr.clear(t, st, seen, at) {
		cleared = append(cleared, report.Change{Flag: flag(d), Cleared: true})
	}
	st.flags = st.flags[:0:0]
	ds, fs := []report.Diagnosis{}, []report.Finding{}
	for _, dt := range st.diags {
		if dt.flagged {
			ds = append(ds, dt.last)
			fs = append(fs, dt.findings...)
		}
	}
	sortDiagnoses(ds)
	sortFindings(fs)
	for _, d := range ds {
		st.flags = append(st.flags, flag(d))
	}
	rt.Diagnoses, rt.Findings = ds, fs
	rt.Quiet = t.quiet(rt.Diagnoses, pending)
	tr.rev++
	st.out, st.rev = rt, tr.rev
	return changes, cleared
}

// advance follows diagnosis d of this evaluation (at event time at) in
// the table's state: its streak, the diagnoses it takes over, the hold of
// a flagged one. It returns the change to announce (its Flag's Diagnosis
// set, the rest to fill), or whether d pages without being flagged yet.
func (tr *Tracker) advance(t *table, st *tableState, seen map[diagID]bool, d report.Diagnosis, findings []report.Finding, at time.Time) (*report.Change, bool) {
	id := diagIDOf(d)
	seen[id] = true
	dt := st.diags[id]
	if dt == nil {
		dt = &tracked{since: at}
		st.diags[id] = dt
	}
	// A diagnosis that explains findings held under another continues
	// that one's streak, and marks it taken over.
	for _, e := range d.Explains {
		oid := idOf(e.Kind, e.Class, e.Key)
		if o := st.diags[oid]; oid != id && o != nil && !seen[oid] {
			if o.since.Before(dt.since) {
				dt.since = o.since
			}
			o.by = &id
		}
	}
	dt.absentSince = time.Time{}
	dt.by = nil
	if dt.flagged {
		d = tr.hold(t, dt.last, d)
	}
	was := dt.last
	dt.last, dt.findings = d, explained(findings, d)
	switch {
	case !dt.flagged && at.Sub(dt.since) >= tr.s.Hold:
		dt.flagged = true
		return &report.Change{Flag: report.Flag{Diagnosis: d}}, false
	case dt.flagged && (was.Cause != d.Cause || was.Severity != d.Severity || was.Fix.Kind != d.Fix.Kind):
		return &report.Change{Flag: report.Flag{Diagnosis: d}, Was: &was}, false
	}
	return nil, !dt.flagged && d.Severity.Pages()
}

// clear drops the diagnoses of the table's state that this evaluation
// did not see (seen), once they no longer hold (a taken-over one once its
// successor is flagged), and returns those that were flagged: cleared.
func (tr *Tracker) clear(t *table, st *tableState, seen map[diagID]bool, at time.Time) []report.Diagnosis {
	var cleared []report.Diagnosis
	for id, dt := range st.diags {
		if seen[id] {
			continue
		}
		keep := dt.flagged
		if keep && dt.by != nil {
			// Taken over: cleared once the diagnosis that explains it now
			// is flagged, held until then.
			if o := st.diags[*dt.by]; o != nil && o.flagged {
				keep = false
			}
		}
		if keep {
			keep = tr.holds(t, id, dt, at)
		}
		if !keep {
			if dt.flagged {
				cleared = append(cleared, dt.last)
			}
			delete(st.diags, id)
		}
	}
	return cleared
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
	if d.Cause == report.KindCapacity {
		d.Severity = d.Severity.Max(t.heldCapacitySeverity(was.Severity, d.Share))
		return d
	}
	if d.Cause == report.KindForecast {
		return d // judged on its trend, not its peak
	}
	d.Severity = d.Severity.Max(t.heldSeverity(c, was.Severity, d.PeakUnitsPerSecond, t.keyRangeOf(c, d.Keys)))
	if was.Cause == report.KindPartitionLimit && d.Cause == report.KindHotKey && d.PeakUnitsPerSecond >= tr.s.ClearLimitFraction*t.limit(c) {
		d.Cause = report.KindPartitionLimit
	}
	return d
}

// holds decides whether a flagged diagnosis that Evaluate did not report
// this time, at event time at, stays flagged (the hysteresis band),
// updating its numbers.
func (tr *Tracker) holds(t *table, id diagID, st *tracked, at time.Time) bool {
	if id.cause != report.KindHotKey {
		if st.absentSince.IsZero() {
			st.absentSince = at
		}
		return at.Sub(st.absentSince) < tr.s.Hold
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
	clear := tr.s.clearThreshold()
	byShare := t.active(c) && (share >= clear || fresh && recent >= clear)
	byPeak := peak >= tr.s.ClearLimitFraction*limit
	if !byShare && !byPeak {
		return false
	}
	d := &st.last
	d.Share, d.PeakUnitsPerSecond, d.Throttled = share, peak, t.throttledOf(c, id.key)
	d.Severity = t.heldSeverity(c, d.Severity, peak, t.keyRangeThrottled(c, id.key))
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

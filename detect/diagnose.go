package detect

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/internal/plural"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// diagnose turns a table's findings into diagnoses, one per root cause,
// each explaining the findings it causes:
//
//  1. hot_key and partition_limit on one key and class are one cause, the
//     key (cause partition_limit when its peak is at the limit);
//  2. a time_ordered_key explains the hot keys that are its dates, in
//     either class;
//  3. a low_cardinality explains the hot keys that are its handful of
//     values (in either class), or, when there are too few keys for the
//     traffic, every hot key of its class; and a time_ordered_key explains
//     a low_cardinality whose values are mostly dates;
//  4. a hot_partition is explained by a hot write key whose writes account
//     for it (without them the shard would not be hot), one key per shard;
//  5. every other finding is its own root cause: a capacity finding (the
//     class throttled across its keys for the table's or index's
//     capacity) among them, one per class, whatever key diagnoses the
//     class also has;
//  6. a key hot in both classes whose two fixes are the same kind (a
//     collection read by Query and written: calculated_suffix twice) is one
//     diagnosis, with the larger shard count: one change to the key design
//     fixes both. Different fixes (a celebrity's collection written, its
//     profile item read: calculated_suffix and cache) stay two.
//
// A diagnosis's severity is the most severe of the findings it explains,
// i.e. of its hottest key. It returns the diagnoses and the findings, both
// sorted; each finding carries its diagnosis's fix as recommendation.
func (t *table) diagnose(fs []report.Finding) ([]report.Diagnosis, []report.Finding) {
	sortFindings(fs)
	if len(fs) == 0 {
		return []report.Diagnosis{}, []report.Finding{}
	}
	// root[i] is the finding whose diagnosis explains finding i: itself
	// for a root cause. A key's findings have its first finding as root.
	root := make([]int, len(fs))
	lc, to := -1, -1
	byKey := map[classKey]int{}
	var shards []int
	for i := range fs {
		root[i] = i
		switch fs[i].Kind {
		case report.KindHotKey, report.KindPartitionLimit:
			id := classKey{fs[i].Class, fs[i].Key}
			if first, ok := byKey[id]; ok {
				root[i] = first
			} else {
				byKey[id] = i
			}
		case report.KindLowCardinality:
			lc = i
		case report.KindTimeOrderedKey:
			to = i
		case report.KindHotPartition:
			shards = append(shards, i)
		}
	}
	if lc >= 0 && to >= 0 && t.mostlyDates(fs[lc].Evidence.Keys) {
		root[lc] = to
	}
	for i := range fs {
		if root[i] != i || (fs[i].Kind != report.KindHotKey && fs[i].Kind != report.KindPartitionLimit) {
			continue
		}
		_, date := t.timeKey(fs[i].Key)
		switch {
		case to >= 0 && date:
			root[i] = to
		case lc >= 0 && t.lowCardinalityExplains(&fs[lc], &fs[i]):
			root[i] = root[lc]
		}
	}
	t.explainShards(fs, root, shards, byKey)
	// Resolve chains (a hot key explained by a low_cardinality explained
	// by a time_ordered_key) to their root.
	for i := range root {
		for root[root[i]] != root[i] {
			root[i] = root[root[i]]
		}
	}

	var ds []report.Diagnosis
	at := map[int]int{} // root finding -> index in ds
	for i := range fs {
		if root[i] == i {
			at[i] = len(ds)
			ds = append(ds, t.diagnosis(&fs[i], fs, root, i))
		}
	}
	ds, into := mergeClasses(ds)
	for i := range fs {
		d := &ds[into[at[root[i]]]]
		fix := d.Fix
		fs[i].Recommendation = &fix
	}
	sortDiagnoses(ds)
	return ds, fs
}

// mergeClasses makes one diagnosis of a key's read and write diagnoses when
// their fixes are the same kind (rule 6). The diagnosis kept is the more
// severe, then the one whose fix needs more keys, then the writes', with
// the findings of both. into maps each index of ds to its index in the
// result.
func mergeClasses(ds []report.Diagnosis) (out []report.Diagnosis, into []int) {
	into = make([]int, len(ds))
	byKey := map[string]int{} // key -> index in out of its key diagnosis
	for i, d := range ds {
		if d.Cause != report.KindHotKey && d.Cause != report.KindPartitionLimit {
			into[i] = len(out)
			out = append(out, d)
			continue
		}
		j, seen := byKey[d.Key()]
		if !seen || out[j].Fix.Kind != d.Fix.Kind || out[j].Class == d.Class {
			byKey[d.Key()] = len(out)
			into[i] = len(out)
			out = append(out, d)
			continue
		}
		kept, other := out[j], d
		if c := cmp.Or(cmp.Compare(kept.Severity.Rank(), other.Severity.Rank()), cmp.Compare(other.Fix.SuffixCount, kept.Fix.SuffixCount)); c > 0 ||
			c == 0 && other.Class == traffic.Write.String() {
			kept, other = other, kept
		}
		kept.Explains = append(kept.Explains, other.Explains...)
		out[j] = kept
		into[i] = j
	}
	return out, into
}

// classKey identifies a key within a class.
type classKey struct{ class, key string }

// mostlyDates reports whether at least half of keys are dates.
func (t *table) mostlyDates(keys []string) bool {
	n := 0
	for _, k := range keys {
		if _, ok := t.timeKey(k); ok {
			n++
		}
	}
	return len(keys) > 0 && 2*n >= len(keys)
}

// lowCardinalityExplains reports whether a low_cardinality finding is the
// cause of a key's finding: the key is one of its handful of values, or the
// table has too few keys for its traffic and the key is of that class.
func (t *table) lowCardinalityExplains(lc, f *report.Finding) bool {
	return slices.Contains(lc.Evidence.Keys, f.Key) || t.tooFewKeys(lc) && f.Class == lc.Class
}

// explainShards finds, for each hot shard (hottest first), the heaviest
// hot write key not yet taken whose writes account for the shard: with
// them removed the shard would not be hot. A key lives in one partition,
// so it explains at most one shard.
func (t *table) explainShards(fs []report.Finding, root []int, shards []int, byKey map[classKey]int) {
	total, _, ok := t.shardTotals()
	if !ok || len(shards) == 0 {
		return
	}
	taken := map[int]bool{}
	writes := t.ranked(traffic.Write)
	for _, s := range shards {
		records := fs[s].Evidence.Records
		for j := range writes {
			i, hot := byKey[classKey{traffic.Write.String(), writes[j].Key}]
			if !hot || taken[i] {
				continue
			}
			ev := min(writes[j].Events, records)
			rest := total - ev
			if !t.shardHot(records-ev, rest, float64(rest)/float64(len(t.Shards))) {
				root[s] = i
				taken[i] = true
				break
			}
		}
	}
}

// diagnosis builds the diagnosis of root cause fs[r], explaining every
// finding whose root is r.
func (t *table) diagnosis(f *report.Finding, fs []report.Finding, root []int, r int) report.Diagnosis {
	c, _ := traffic.ParseClass(f.Class)
	d := report.Diagnosis{Cause: f.Kind, Class: f.Class, Limit: t.limit(c), Severity: report.SeverityInfo, Explains: []report.Explained{}}
	key := f.Kind == report.KindHotKey || f.Kind == report.KindPartitionLimit
	for i := range fs {
		if root[i] != r {
			continue
		}
		d.Severity = d.Severity.Max(fs[i].Severity)
		d.Explains = append(d.Explains, report.Explained{Kind: fs[i].Kind, Key: fs[i].Key, Class: fs[i].Class})
		if key && fs[i].Kind == report.KindPartitionLimit && fs[i].Key == f.Key && fs[i].Class == f.Class {
			// The key's peak is at the limit: that is the cause.
			d.Cause = report.KindPartitionLimit
		}
	}
	switch f.Kind {
	case report.KindHotKey, report.KindPartitionLimit:
		t.keyDiagnosis(c, f, &d)
	case report.KindLowCardinality:
		d.Keys = slices.Clone(f.Evidence.Keys)
		t.hottestOf(c, &d)
		hottest := &t.ranked(c)[0]
		d.Fix = t.adviseGSI(f, hottest)
		d.After = t.afterGSI(c, d.Keys, d.Fix)
		what := fmt.Sprintf("%d values (%s) carry %s of the %s's %ss", len(d.Keys), strings.Join(d.Keys, ", "), pct(f.Share), t.noun(), c)
		if t.tooFewKeys(f) {
			what = fmt.Sprintf("%s %s too few for the %d partitions the %s's peak of %s %s/s needs",
				plural.Count(f.Evidence.DistinctPartitionKeys, "distinct partition key"), plural.Noun(f.Evidence.DistinctPartitionKeys, "is", "are"),
				f.Evidence.RequiredPartitions, t.noun(), num(f.Evidence.PeakUnitsPerSecond), unitName(c))
		}
		d.Summary = what + t.risk(&d)
	case report.KindTimeOrderedKey:
		d.Keys = slices.Clone(f.Evidence.Keys)
		t.hottestOf(c, &d)
		if m, ok := t.timeKey(f.Key); ok {
			d.Fix = adviseRekey(f.Key, m)
		}
		d.After = t.afterRekey(c)
		d.Summary = fmt.Sprintf("The partition keys are %ss: %s of the %s's %ss go to date-shaped keys, all current traffic to the newest",
			shapeNoun(f.Evidence.Shape), pct(f.Share), t.noun(), c) + t.risk(&d)
	case report.KindCapacity:
		cp := *t.throttling(c).capacity
		d.Keys = []string{}
		d.Capacity = &cp
		d.Share, d.PeakUnitsPerSecond, d.Throttled = f.Share, f.PeakUnitsPerSecond, cp.Throttled
		d.Fix = t.adviseCapacity(c, &cp)
		d.Summary = t.capacitySummary(c, &cp, d.Severity)
	case report.KindHotPartition:
		d.Keys = []string{f.Key}
		d.Share, d.PeakUnitsPerSecond = f.Share, f.PeakUnitsPerSecond
		d.Fix = t.adviseShard(f.Key, f.Share, f.UnitsPerSecond)
		d.Summary = fmt.Sprintf("Stream shard %s, one physical partition, carries %s of the %s's stream records at %s records/s, and no hot key accounts for it",
			f.Key, pct(f.Share), t.noun(), num(f.UnitsPerSecond)) + t.risk(&d)
	}
	if t.Index != "" && c == traffic.Write && d.Severity.Pages() {
		d.Summary += backPressure
	}
	return d
}

// keyDiagnosis fills the diagnosis of a hot key or a key at its
// partition's limit: its numbers, its fix and what the fix leaves. A key
// the class does not rank (throttled in its key range without a served
// call the window tracks) is judged on its refused calls (refusedKey).
func (t *table) keyDiagnosis(c traffic.Class, f *report.Finding, d *report.Diagnosis) {
	d.Keys = []string{f.Key}
	d.Share, d.PeakUnitsPerSecond, d.Throttled = f.Share, f.PeakUnitsPerSecond, t.throttledOf(c, f.Key)
	k := t.keyStat(c, f.Key)
	if k == nil {
		kr := t.throttling(c).keyRange[f.Key]
		d.Fix = t.adviseRefusedKey(c, f.Key, kr)
		d.After = t.afterKey(c, f.Key, d.Fix)
		d.Summary = capitalize(t.keyRangeEvidence(c, quoteKey(f.Key), kr)) + t.refusedDemand(c) + t.severityMeaning(d.Severity)
		return
	}
	d.Fix = t.adviseKey(c, k, f.Share, f.PeakUnitsPerSecond)
	d.After = t.afterKey(c, f.Key, d.Fix)
	d.Summary = fmt.Sprintf("%s takes %s of the %s's %ss", quoteKey(f.Key), pct(f.Share), t.noun(), c) + t.risk(d)
}

// backPressure ends the summary of an index's write diagnosis that pages:
// why it matters when the table itself looks healthy. An index's writes
// are the table's writes (DynamoDB makes them), and a global index short
// of write capacity throttles the table's writes ("GSI write throttling
// and back pressure" in the DynamoDB developer guide).
const backPressure = " The table's own keys may look healthy: every table write that puts, moves or deletes an item's entry is a write of this index, and when an index partition throttles, DynamoDB throttles the table's writes too (back-pressure)."

// keyStat finds a tracked key of class c.
func (t *table) keyStat(c traffic.Class, key string) *sketch.KeyStat {
	top := t.ranked(c)
	for i := range top {
		if top[i].Key == key {
			return &top[i]
		}
	}
	return nil
}

// hottestOf sets a table-wide diagnosis's numbers from its keys in class c:
// the largest share and busiest second among them, and their throttled
// calls.
func (t *table) hottestOf(c traffic.Class, d *report.Diagnosis) {
	for _, key := range d.Keys {
		if k := t.keyStat(c, key); k != nil {
			d.Share = math.Max(d.Share, t.share(c, k))
			d.PeakUnitsPerSecond = math.Max(d.PeakUnitsPerSecond, t.keyPeak(k))
		}
		d.Throttled += t.throttledOf(c, key)
	}
}

// risk ends a diagnosis's summary with its peak against the ceiling and
// what the severity means.
func (t *table) risk(d *report.Diagnosis) string {
	c, _ := traffic.ParseClass(d.Class)
	s := fmt.Sprintf(", peaking at %s %s/s, %s of one partition's %s %s/s",
		num(d.PeakUnitsPerSecond), unitName(c), pct(d.PeakUnitsPerSecond/d.Limit), num(d.Limit), unitName(c))
	keyRange := t.keyRangeOf(c, d.Keys)
	switch {
	case keyRange > 0 && len(d.Keys) == 1:
		if th := t.throttling(c); th != nil {
			s += "; " + t.keyRangeEvidence(c, "", th.keyRange[d.Keys[0]])
		}
	case keyRange > 0:
		s += fmt.Sprintf(", with %d calls throttled in their key ranges", keyRange)
	case d.Throttled > 0:
		s += fmt.Sprintf(", with %d throttled calls, no more than the other keys' share: the %s's capacity, not the key", d.Throttled, t.noun())
	}
	return s + t.severityMeaning(d.Severity)
}

// severityMeaning ends a key diagnosis's summary with what its severity
// means.
func (t *table) severityMeaning(sev report.Severity) string {
	switch sev {
	case report.SeverityCritical:
		return fmt.Sprintf(": critical, throttling is here or close (from %s of the ceiling, or throttled in its key range).", pct(t.s.LimitFraction))
	case report.SeverityWarning:
		return fmt.Sprintf(": warning, past %s of the ceiling.", pct(t.s.WarnFraction))
	}
	return fmt.Sprintf(": info, below the %s of the ceiling that warns; a design note, never paged.", pct(t.s.WarnFraction))
}

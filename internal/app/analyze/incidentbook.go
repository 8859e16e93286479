package analyze

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

// incidentBook turns the Tracker's flags, evaluation after evaluation,
// into incidents by the rules of the daemon's history
// (history/incidents.go): a flag not yet open opens an incident at its
// table's event time; an open one takes its worst severity and cause, its
// highest peak, and the keys, summary and fix of its worst moment; one no
// longer flagged ends at the event time of the evaluation that cleared
// it. One still open at the end of the input has no end.
type incidentBook struct {
	open map[incKey]*report.Incident
	done []report.Incident
}

// incKey names a diagnosis across evaluations as the history does: a
// key's hot_key and partition_limit are one; capacity is one per class;
// low_cardinality and time_ordered_key one per table entry.
type incKey struct {
	table, index, cause, class, key string
}

func incKeyOf(f report.Flag) incKey {
	d := f.Diagnosis
	k := incKey{table: f.Table, index: f.Index, cause: string(d.Cause), class: d.Class, key: d.Key()}
	switch d.Cause {
	case report.KindHotKey, report.KindPartitionLimit:
		k.cause = string(report.KindHotKey)
	case report.KindCapacity:
		k.key = ""
	case report.KindLowCardinality, report.KindTimeOrderedKey:
		k.class, k.key = "", ""
	}
	return k
}

// severityRank orders severities: an incident keeps the worst it reached.
func severityRank(s report.Severity) int {
	switch s {
	case report.SeverityInfo:
		return 1
	case report.SeverityWarning:
		return 2
	case report.SeverityCritical:
		return 3
	}
	return 0
}

// see takes the flags of one evaluation, at event time at.
func (b *incidentBook) see(flags []report.Flag, at time.Time) {
	seen := make(map[incKey]bool, len(flags))
	for _, f := range flags {
		k := incKeyOf(f)
		seen[k] = true
		inc := b.open[k]
		if inc == nil {
			inc = newIncident(k, f, at)
			b.open[k] = inc
		}
		update(inc, f.Diagnosis)
	}
	for k, inc := range b.open {
		if seen[k] {
			continue
		}
		end := at
		inc.End = &end
		b.done = append(b.done, *inc)
		delete(b.open, k)
	}
}

func newIncident(k incKey, f report.Flag, at time.Time) *report.Incident {
	d := f.Diagnosis
	// The history's id (history/incidents.go): the same incident has the
	// same id here and in the daemon's history.
	h := xxh3.HashString128(fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%s\x00%d", k.table, k.index, k.cause, k.class, k.key, at.UnixMilli())).Bytes()
	return &report.Incident{ID: hex.EncodeToString(h[:8]), Table: f.Table, Index: f.Index, Cause: string(d.Cause), Class: d.Class,
		Severity: string(d.Severity), Start: at}
}

// update takes an evaluation of the incident's diagnosis: the worst
// severity and cause, the highest peak, and the summary, fix and keys of
// its worst moment.
func update(inc *report.Incident, d report.Diagnosis) {
	was := report.Severity(inc.Severity)
	worse := severityRank(d.Severity) > severityRank(was)
	if worse || d.PeakUnitsPerSecond > inc.Peak || inc.Summary == "" {
		if worse || severityRank(d.Severity) == severityRank(was) {
			inc.Severity = string(d.Severity)
			if d.Cause == report.KindPartitionLimit || inc.Cause != string(report.KindPartitionLimit) {
				inc.Cause = string(d.Cause)
			}
			inc.Summary, inc.Fix, inc.FixKind = d.Summary, d.Fix.Text, string(d.Fix.Kind)
			inc.Keys = slices.Clone(d.Keys)
		}
		inc.Peak = max(inc.Peak, d.PeakUnitsPerSecond)
	}
}

// byEntry returns the incidents, closed and open, of each table entry:
// by start, then cause, class and keys.
func (b *incidentBook) byEntry() map[entryKey][]report.Incident {
	all := b.done
	for _, inc := range b.open {
		all = append(all, *inc)
	}
	out := map[entryKey][]report.Incident{}
	for _, inc := range all {
		if inc.Keys == nil {
			inc.Keys = []string{}
		}
		k := entryKey{inc.Table, inc.Index}
		out[k] = append(out[k], inc)
	}
	for _, incs := range out {
		slices.SortFunc(incs, func(a, b report.Incident) int {
			return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.Cause, b.Cause), cmp.Compare(a.Class, b.Class),
				cmp.Compare(strings.Join(a.Keys, "\x00"), strings.Join(b.Keys, "\x00")))
		})
	}
	return out
}

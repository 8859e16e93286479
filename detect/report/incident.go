package report

import (
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/zeebo/xxh3"
)

// The rules that make incidents of the detector's flags, one set for the
// daemon's history (package history) and analyze alike, so that the same
// traffic makes the same incidents, with the same ids, in both.

// IncidentKey names a diagnosis across evaluations as the detector's
// Tracker does: hot_key and partition_limit of one key and class are one
// diagnosis, whose cause changes with its peak; capacity is one per
// class; low_cardinality and time_ordered_key one per table entry.
type IncidentKey struct {
	Table, Index, Cause, Class, Key string
}

// IncidentKeyOf returns the key of flag f's diagnosis.
func IncidentKeyOf(f Flag) IncidentKey {
	d := f.Diagnosis
	k := IncidentKey{Table: f.Table, Index: f.Index, Cause: string(d.Cause), Class: d.Class, Key: d.Key()}
	switch d.Cause {
	case KindHotKey, KindPartitionLimit:
		k.Cause = string(KindHotKey)
	case KindCapacity:
		k.Key = ""
	case KindLowCardinality, KindTimeOrderedKey:
		k.Class, k.Key = "", ""
	}
	return k
}

// NewIncident opens the incident of flag f raised at at (kept as given:
// the caller says in which zone). Its id is a hash of its key and its
// start, the same wherever the incident is made; its figures come with
// its first Update.
func NewIncident(f Flag, at time.Time) Incident {
	d := f.Diagnosis
	k := IncidentKeyOf(f)
	h := xxh3.HashString128(fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%s\x00%d", k.Table, k.Index, k.Cause, k.Class, k.Key, at.UnixMilli())).Bytes()
	return Incident{ID: hex.EncodeToString(h[:8]), Table: f.Table, Index: f.Index, Cause: string(d.Cause), Class: d.Class,
		Severity: string(d.Severity), Start: at}
}

// Update takes an evaluation of the incident's diagnosis: the worst
// severity and cause, the highest peak, and the summary, fix and keys of
// its worst moment. It reports whether the incident changed.
func (inc *Incident) Update(d Diagnosis) bool {
	was := Severity(inc.Severity).Rank()
	worse := d.Severity.Rank() < was
	if !worse && d.PeakUnitsPerSecond <= inc.Peak && inc.Summary != "" {
		return false
	}
	if worse || d.Severity.Rank() == was {
		inc.Severity = string(d.Severity)
		if d.Cause == KindPartitionLimit || inc.Cause != string(KindPartitionLimit) {
			inc.Cause = string(d.Cause)
		}
		inc.Summary, inc.Fix, inc.FixKind = d.Summary, d.Fix.Text, string(d.Fix.Kind)
		inc.Keys = slices.Clone(d.Keys)
	}
	inc.Peak = max(inc.Peak, d.PeakUnitsPerSecond)
	return true
}

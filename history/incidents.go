package history

import (
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/zeebo/xxh3"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

// incKey names a diagnosis across evaluations as the detector's Tracker
// does: hot_key and partition_limit of one key and class are one
// diagnosis, whose cause changes with its peak; capacity is one per
// class; low_cardinality and time_ordered_key one per table.
type incKey struct {
	table, index, cause, class, key string
}

func keyOf(f report.Flag) incKey {
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

// openIncident is an incident not cleared yet.
type openIncident struct {
	key      incKey
	inc      Incident
	lastSeen time.Time // event time it was last flagged
	dirty    bool      // changed since last written
	deadline time.Time // an orphan's: closed at lastSeen past it
}

// severityRank orders severities and causes: what an incident keeps is
// the worst it reached.
var severityRank = map[string]int{string(report.SeverityInfo): 1, string(report.SeverityWarning): 2, string(report.SeverityCritical): 3}

// trackIncidents opens an incident for each new flag, updates the open
// ones (severity, peak, keys) and closes those no longer flagged, at
// their table's event time.
func (s *Store) trackIncidents(flags []report.Flag, b *batch) {
	seen := make(map[incKey]bool, len(flags))
	for _, f := range flags {
		k := keyOf(f)
		seen[k] = true
		at := s.eventTime(f.Table, f.Index)
		oi := s.open[k]
		fresh := oi == nil
		if fresh {
			oi = s.orphans[k]
			if oi != nil {
				delete(s.orphans, k)
				s.log.Info("incident continues after a restart", zap.String("table", f.Table), zap.String("cause", k.cause), zap.String("id", oi.inc.ID))
			} else {
				oi = newIncident(f, at)
				s.m.incidents.WithLabelValues(oi.inc.Cause, oi.inc.Severity).Inc()
			}
			s.open[k] = oi
			oi.dirty = true
		}
		oi.update(f.Diagnosis, at)
		if fresh {
			s.write(oi, b) // written at once: a hard kill keeps its start
		}
	}
	for k, oi := range s.open {
		if seen[k] {
			continue
		}
		end := s.eventTime(k.table, k.index)
		oi.inc.End = &end
		s.write(oi, b)
		delete(s.open, k)
	}
	now := s.opts.Now()
	for k, oi := range s.orphans {
		if now.After(oi.deadline) {
			end := oi.lastSeen
			oi.inc.End = &end
			s.write(oi, b)
			delete(s.orphans, k)
			s.log.Info("incident left open by the last run closed at its last sighting", zap.String("table", k.table), zap.String("cause", k.cause), zap.String("id", oi.inc.ID), zap.Time("end", end))
		}
	}
}

// eventTime is a table's event time: the end of its newest judged
// second; the wall clock before it has one.
func (s *Store) eventTime(table, index string) time.Time {
	if tc := s.tables[entry{table, index}]; tc != nil && !tc.eventTime.IsZero() {
		return tc.eventTime
	}
	return s.opts.Now().UTC().Truncate(time.Second)
}

func newIncident(f report.Flag, at time.Time) *openIncident {
	d := f.Diagnosis
	k := keyOf(f)
	h := xxh3.HashString128(fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%s\x00%d", k.table, k.index, k.cause, k.class, k.key, at.UnixMilli())).Bytes()
	inc := Incident{ID: hex.EncodeToString(h[:8]), Table: f.Table, Index: f.Index, Cause: string(d.Cause), Class: d.Class,
		Severity: string(d.Severity), Start: at.UTC()}
	return &openIncident{key: k, inc: inc, lastSeen: at}
}

// update takes an evaluation of the incident's diagnosis: the worst
// severity and cause, the highest peak, and the summary, fix and keys of
// its worst moment.
func (oi *openIncident) update(d report.Diagnosis, at time.Time) {
	inc := &oi.inc
	oi.lastSeen = at
	worse := severityRank[string(d.Severity)] > severityRank[inc.Severity]
	if worse || d.PeakUnitsPerSecond > inc.Peak || inc.Summary == "" {
		oi.dirty = true
		if worse || severityRank[string(d.Severity)] == severityRank[inc.Severity] {
			inc.Severity = string(d.Severity)
			if d.Cause == report.KindPartitionLimit || inc.Cause != string(report.KindPartitionLimit) {
				inc.Cause = string(d.Cause)
			}
			inc.Summary, inc.Fix, inc.FixKind = d.Summary, d.Fix.Text, string(d.Fix.Kind)
			inc.Keys = append([]string(nil), d.Keys...)
		}
		inc.Peak = max(inc.Peak, d.PeakUnitsPerSecond)
	}
}

// write queues the incident's row.
func (s *Store) write(oi *openIncident, b *batch) {
	s.seq++
	inc := oi.inc
	inc.Keys = slices.Clone(inc.Keys)
	b.incidents = append(b.incidents, inc)
	b.meta = append(b.meta, incMeta{key: oi.key, lastSeen: oi.lastSeen, seq: s.seq})
	s.unwritten[inc.ID] = unwrittenIncident{inc: inc, seq: s.seq}
	oi.dirty = false
}

// incidentsSeen writes the open incidents changed since last written,
// with their last sighting: once a minute of the clock.
func (s *Store) incidentsSeen(b *batch) {
	for _, oi := range s.open {
		s.write(oi, b)
	}
}

// written forgets the forms of incidents a batch wrote (or failed to:
// they are then lost, as the cells are).
func (s *Store) written(b batch) {
	if len(b.meta) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range b.meta {
		id := b.incidents[i].ID
		if u, ok := s.unwritten[id]; ok && u.seq == m.seq {
			delete(s.unwritten, id)
		}
	}
}

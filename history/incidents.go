package history

import (
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

// openIncident is an incident not cleared yet.
type openIncident struct {
	key      report.IncidentKey
	inc      Incident
	lastSeen time.Time // event time it was last flagged
	dirty    bool      // changed since last written
	deadline time.Time // an orphan's: closed at lastSeen past it
}

// trackIncidents opens an incident for each new flag, updates the open
// ones (severity, peak, keys) and closes those no longer flagged, at
// their table's event time.
func (s *Store) trackIncidents(flags []report.Flag, b *batch) {
	seen := make(map[report.IncidentKey]bool, len(flags))
	for _, f := range flags {
		k := report.IncidentKeyOf(f)
		seen[k] = true
		at := s.eventTime(f.Table, f.Index)
		oi := s.open[k]
		fresh := oi == nil
		if fresh {
			oi = s.orphans[k]
			if oi != nil {
				delete(s.orphans, k)
				s.log.Info("incident continues after a restart", zap.String("table", f.Table), zap.String("cause", k.Cause), zap.String("id", oi.inc.ID))
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
		end := s.eventTime(k.Table, k.Index)
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
			s.log.Info("incident left open by the last run closed at its last sighting", zap.String("table", k.Table), zap.String("cause", k.Cause), zap.String("id", oi.inc.ID), zap.Time("end", end))
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
	return &openIncident{key: report.IncidentKeyOf(f), inc: Incident(report.NewIncident(f, at.UTC())), lastSeen: at}
}

// update takes an evaluation of the incident's diagnosis: the worst
// severity and cause, the highest peak, and the summary, fix and keys of
// its worst moment.
func (oi *openIncident) update(d report.Diagnosis, at time.Time) {
	oi.lastSeen = at
	if (*report.Incident)(&oi.inc).Update(d) {
		oi.dirty = true
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

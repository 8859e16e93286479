package analyze

import (
	"cmp"
	"slices"
	"strings"
	"time"

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
	open map[report.IncidentKey]*report.Incident
	done []report.Incident
}

// see takes the flags of one evaluation, at event time at.
func (b *incidentBook) see(flags []report.Flag, at time.Time) {
	seen := make(map[report.IncidentKey]bool, len(flags))
	for _, f := range flags {
		k := report.IncidentKeyOf(f)
		seen[k] = true
		inc := b.open[k]
		if inc == nil {
			n := report.NewIncident(f, at)
			inc = &n
			b.open[k] = inc
		}
		inc.Update(f.Diagnosis)
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

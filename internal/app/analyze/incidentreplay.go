package analyze

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/history/view"
	"github.com/hotkeyd/hotkeyd/internal/app/config"
	"github.com/hotkeyd/hotkeyd/judge"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// maxEvaluations bounds the detector's evaluations of a replay: an input
// that spans more seconds is judged every step seconds, the fewest that
// keep under it (a day: every 5 s), as a daemon ticking that often would.
const maxEvaluations = 20000

// incRow is one record with its figures.
type incRow struct {
	incRec
	incAgg
}

// judgeIncidents replays the log's seconds in event time into a live
// window judged by the daemon's Tracker, and returns the incidents of each
// table entry, oldest first. It returns none when the log holds none or
// overflowed (over).
func judgeIncidents(ctx context.Context, l *incidentLog, p config.Pipeline) (incs map[entryKey][]report.Incident, over bool, err error) {
	if l == nil || l.over {
		return nil, l != nil, nil
	}
	rows := l.sorted()
	if len(rows) == 0 {
		return nil, false, nil
	}
	scfg := p.Sketch
	if scfg.Window <= 0 {
		scfg.Window = sketch.DefaultWindow
	}
	var now time.Time
	store, err := sketch.NewStore(scfg, func() time.Time { return now })
	if err != nil {
		return nil, false, fmt.Errorf("incidents: %w", err)
	}
	tr := detect.NewTracker(p.Detect)
	judged := judge.Alone(store, tr) // the daemon's evaluator
	book := incidentBook{open: map[incKey]*report.Incident{}}
	sks := sortKeyNames()
	first, last := rows[0].sec, rows[len(rows)-1].sec
	step := max(1, (last-first+maxEvaluations)/maxEvaluations)
	// After idle seconds without an event, every diagnosis has cleared:
	// the window has forgotten the last events and the hold has run.
	idle := int64((scfg.Window+p.Detect.Hold)/time.Second) + int64(scfg.RecentSeconds) + 2*step + 1
	var batch []traffic.Event
	i, lastEvent := 0, first
	for at := first + step - 1; ; {
		batch = batch[:0]
		for ; i < len(rows) && rows[i].sec <= at; i++ {
			batch = l.events(rows[i], batch, &sks)
			lastEvent = rows[i].sec
		}
		now = time.Unix(at+1, 0)
		if err := store.Put(ctx, batch); err != nil {
			return nil, false, fmt.Errorf("incidents: %w", err)
		}
		judged.Evaluate()
		book.see(tr.Flagged(), now.UTC())
		if i == len(rows) {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		next := at + step
		if at-lastEvent >= idle && rows[i].sec > next {
			// Nothing to judge until the next event: on to its step.
			next += (rows[i].sec - next + step - 1) / step * step
		}
		at = next
	}
	return book.byEntry(), false, nil
}

// sorted returns the log's records in the order they are replayed: by
// second, then by names (table entry, class, throttling, key, shard), so
// that the replay is the same whatever the parts' ids.
func (l *incidentLog) sorted() []incRow {
	rank := make([]uint32, len(l.names))
	order := make([]uint32, len(l.names))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(a, b uint32) int { return cmp.Compare(l.names[a], l.names[b]) })
	for r, id := range order {
		rank[id] = uint32(r)
	}
	rows := make([]incRow, 0, len(l.recs))
	for r, a := range l.recs {
		rows = append(rows, incRow{r, a})
	}
	slices.SortFunc(rows, func(a, b incRow) int {
		return cmp.Or(cmp.Compare(a.sec, b.sec), cmp.Compare(rank[a.entry], rank[b.entry]), cmp.Compare(a.class, b.class),
			cmpBool(a.throttled, b.throttled), cmp.Compare(a.reason, b.reason), cmp.Compare(rank[a.pk], rank[b.pk]), cmp.Compare(rank[a.shard], rank[b.shard]))
	})
	return rows
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// events appends the calls of one record: the first carries its units,
// the first few its sort keys (one each, setting the record's bits), the
// rest neither.
func (l *incidentLog) events(r incRow, out []traffic.Event, sks *[32]string) []traffic.Event {
	e := l.entryOf(r.entry)
	ev := traffic.Event{Table: e.table, Index: e.index, PK: l.names[r.pk], Shard: l.names[r.shard], Class: r.class,
		Time: time.Unix(r.sec, 0), Throttled: r.throttled, ThrottleReason: r.reason, Source: "analyze"}
	sk := sortKeysOf(r.sk, sks)
	for n := range r.calls {
		ev.Units, ev.SK = 0, ""
		if n == 0 {
			ev.Units = float64(r.quanta) / quantum
		}
		if int(n) < len(sk) {
			ev.SK = sk[n]
		}
		out = append(out, ev)
	}
	return out
}

// sortKeyNames returns, for each bit of the sketch's estimate of a key's
// sort keys, a sort key that sets it.
func sortKeyNames() [32]string {
	var all [32]string
	for i, found := 0, 0; found < len(all); i++ {
		s := "sk" + strconv.Itoa(i)
		if b := xxh3.HashString(s) >> 59; all[b] == "" {
			all[b] = s
			found++
		}
	}
	return all
}

// addIncidents judges the incidents of the log and gives each table entry
// of r its own; a note says so when the input held too many (second, key)
// records for them to be judged.
func addIncidents(ctx context.Context, r *report.Report, l *incidentLog, p config.Pipeline) error {
	incs, over, err := judgeIncidents(ctx, l, p)
	if err != nil {
		return err
	}
	if over {
		r.Notes = append(r.Notes, fmt.Sprintf("incidents were not judged: the input holds more than %d distinct seconds of keys (each second of each key of each table), the most analyze keeps for them; analyze parts of it (a few hours each) to have them", maxIncidentRecords))
	}
	for i := range r.Tables {
		t := &r.Tables[i]
		t.Incidents = incs[entryKey{t.Table, t.Index}]
	}
	return nil
}

// incidentsOf returns the report's incidents, every table entry's, in
// the shape the HTML page lists (that of GET /api/v1/incidents).
func incidentsOf(r report.Report) *export.Incidents {
	out := &export.Incidents{Incidents: []view.Incident{}}
	for _, t := range r.Tables {
		for _, inc := range t.Incidents {
			out.Incidents = append(out.Incidents, view.Incident(inc))
		}
	}
	return out
}

package analyze

import (
	"cmp"
	"context"
	"fmt"
	"math/bits"
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

// maxCountedSpan bounds the span, in seconds, whose events are counted
// into place by second (8 bytes a second); a longer one is sorted.
const maxCountedSpan = 1 << 22

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
	sks := sortKeyNames()
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
	first, last := int64(rows[0].sec), int64(rows[len(rows)-1].sec)
	step := max(1, (last-first+maxEvaluations)/maxEvaluations)
	// After idle seconds without an event, every diagnosis has cleared:
	// the window has forgotten the last events and the hold has run.
	idle := int64((scfg.Window+p.Detect.Hold)/time.Second) + int64(scfg.RecentSeconds) + 2*step + 1
	var batch []traffic.Event
	i, lastEvent := 0, first
	for at := first + step - 1; ; {
		batch = batch[:0]
		for ; i < len(rows) && int64(rows[i].sec) <= at; i++ {
			batch = append(batch, l.event(rows[i], &sks))
			lastEvent = int64(rows[i].sec)
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
		if sec := int64(rows[i].sec); at-lastEvent >= idle && sec > next {
			// Nothing to judge until the next event: on to its step.
			next += (sec - next + step - 1) / step * step
		}
		at = next
	}
	return book.byEntry(), false, nil
}

// sorted returns the log's events in the order they are replayed: by
// second, then by the hashes of their names (table entry, key, shard),
// class, throttling and figures, so that the replay is the same whatever
// the parts' ids and the order of the lines. The seconds are counted
// into place (the input's span is bounded: outliers are left out), the
// events of one second sorted.
func (l *incidentLog) sorted() []incEvent {
	evs := l.events
	if len(evs) == 0 {
		return nil
	}
	hash := make([]uint64, len(l.names))
	for id, s := range l.names {
		hash[id] = xxh3.HashString(s)
	}
	lo, hi := evs[0].sec, evs[0].sec
	for _, ev := range evs {
		lo, hi = min(lo, ev.sec), max(hi, ev.sec)
	}
	cmpEvents := func(a, b incEvent) int {
		// Early returns: cmp.Or would compare every field every time.
		if c := cmp.Compare(a.sec, b.sec); c != 0 {
			return c
		}
		if c := cmp.Compare(hash[a.entry], hash[b.entry]); c != 0 {
			return c
		}
		if c := cmp.Compare(hash[a.pk], hash[b.pk]); c != 0 {
			return c
		}
		if a.pk != b.pk {
			return cmp.Compare(l.names[a.pk], l.names[b.pk]) // a hash collision
		}
		return cmp.Or(cmp.Compare(a.class, b.class), cmp.Compare(hash[a.shard], hash[b.shard]), cmpBool(a.throttled, b.throttled),
			cmp.Compare(a.reason, b.reason), cmp.Compare(a.quanta, b.quanta), cmp.Compare(a.sk, b.sk))
	}
	l.events = nil
	if hi-lo > maxCountedSpan {
		slices.SortFunc(evs, cmpEvents)
		return evs
	}
	// A counting sort by second: where each second's events start.
	at := make([]int, int(hi-lo)+2)
	for _, ev := range evs {
		at[ev.sec-lo+1]++
	}
	for i := 1; i < len(at); i++ {
		at[i] += at[i-1]
	}
	out := make([]incEvent, len(evs))
	next := slices.Clone(at)
	for _, ev := range evs {
		out[next[ev.sec-lo]] = ev
		next[ev.sec-lo]++
	}
	for i := 0; i+1 < len(at); i++ {
		slices.SortFunc(out[at[i]:at[i+1]], cmpEvents)
	}
	return out
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

// event is the Event that ev stands for: its units as the sketch counted
// them, a sort key that sets its bit.
func (l *incidentLog) event(ev incEvent, sks *[32]string) traffic.Event {
	e := l.entryOf(ev.entry)
	out := traffic.Event{Table: e.table, Index: e.index, PK: l.names[ev.pk], Shard: l.names[ev.shard], Class: ev.class,
		Units: float64(ev.quanta) / quantum, Time: time.Unix(int64(ev.sec), 0), Throttled: ev.throttled, ThrottleReason: ev.reason, Source: "analyze"}
	if ev.sk != 0 {
		out.SK = sks[bits.TrailingZeros32(ev.sk)]
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
		r.Notes = append(r.Notes, fmt.Sprintf("incidents were not judged: the input holds more than %d events with a time, the most analyze keeps for them; analyze parts of it (a few hours each) to have them", maxIncidentEvents))
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

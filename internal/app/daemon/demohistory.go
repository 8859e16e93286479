package daemon

import (
	"context"
	"fmt"
	"math"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/history"
	demosource "github.com/hotkeyd/hotkeyd/ingest/demo"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// The demo's planted history: demoHistorySpan of the workload's steady
// traffic (demosource.Rates) up to the minute the demo starts, in which
// the celebrity user of orders was hot for one episode only, an incident
// closed since; it is hot again live. The page then shows a heatmap and
// an incident from its first second.
const (
	demoHistorySpan = 6 * time.Hour
	// demoEpisodeStart and demoEpisodeEnd bound the celebrity's episode,
	// before the end of the planted history.
	demoEpisodeStart = 5 * time.Hour
	demoEpisodeEnd   = 4*time.Hour + 30*time.Minute
	// demoChunk is the event time written per opening of the store: the
	// store is written by Close, with no writer running, and its queue
	// holds about one batch per minute of event time (256 in all). No
	// chunk boundary falls in the episode.
	demoChunk = 2 * time.Hour
)

// plantDemoHistory writes the demo's back-dated history into the history
// database, through the store's own Record, when the database has
// nothing of the demo's tables yet: a second demo on the same
// --history.path plants nothing again. It runs before the daemon opens
// the store for itself; a failure leaves the history as it is, logged.
func (d *Daemon) plantDemoHistory(ctx context.Context, opts history.Options) {
	end := time.Now().UTC().Truncate(time.Minute)
	start := end.Add(-demoHistorySpan)
	opts.Log, opts.Metrics, opts.Registerer = nil, nil, nil // the live store's alone
	rates := demoRates()
	for from := start; from.Before(end); from = from.Add(demoChunk) {
		st, err := history.Open(ctx, opts)
		if err != nil {
			d.log.Warn("demo history not planted", zap.Error(err))
			return
		}
		if from.Equal(start) {
			has, err := hasDemoTables(ctx, st, end)
			if err != nil || has {
				st.Close()
				if err != nil {
					d.log.Warn("demo history not planted", zap.Error(err))
				}
				return
			}
		}
		to := from.Add(demoChunk)
		if to.After(end) {
			to = end
		}
		for at := from; at.Before(to); at = at.Add(time.Second) {
			st.Record(demoEvaluation(at, at.Sub(end), rates(at)))
		}
		if err := st.Close(); err != nil {
			d.log.Warn("demo history not planted whole", zap.Error(err))
			return
		}
	}
	d.log.Info("demo history planted: the workload's tables and their planted keys, and one closed incident",
		zap.Time("from", start), zap.Time("to", end), zap.Int("entries", len(demoEntries(end))),
		// The incident is named by its table and cause, not its key: the
		// log is one of the places --keys hash and redact keep keys out of.
		zap.String("incident", "orders hot_key"),
		zap.Time("incident_start", end.Add(-demoEpisodeStart)), zap.Time("incident_end", end.Add(-demoEpisodeEnd)))
}

// hasDemoTables says whether the store holds any cell of the demo's
// tables over its retention.
func hasDemoTables(ctx context.Context, st *history.Store, end time.Time) (bool, error) {
	keep := history.DefaultResolutions[len(history.DefaultResolutions)-1].Keep
	for _, e := range demoEntries(end) {
		a, err := st.Cells(ctx, history.Query{Table: e.table, Index: e.index, From: end.Add(-keep), To: end.Add(time.Hour)})
		if err != nil {
			return false, fmt.Errorf("read the history of %s: %w", e.table, err)
		}
		for _, s := range a.Series {
			if len(s.Cells) > 0 {
				return true, nil
			}
		}
	}
	return false, nil
}

// demoEntries lists the demo's tables and indexes, in the order of its
// rates.
func demoEntries(at time.Time) []demoEntry {
	var out []demoEntry
	seen := map[demoEntry]bool{}
	for _, r := range demosource.Rates(at) {
		e := demoEntry{r.Table, r.Index}
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

// demoEntry names a table or index.
type demoEntry struct{ table, index string }

// demoRates returns demosource.Rates for a second, read again only when
// its day changes (the one thing that changes them).
func demoRates() func(at time.Time) []demosource.Rate {
	var day time.Time
	var rates []demosource.Rate
	return func(at time.Time) []demosource.Rate {
		if d := at.UTC().Truncate(24 * time.Hour); rates == nil || !d.Equal(day) {
			day, rates = d, demosource.Rates(at)
		}
		return rates
	}
}

// demoEvaluation is the evaluation of the demo's second at, ago before
// the end of the planted history (negative), of rates: every table's
// steady traffic, and the celebrity's writes and diagnosis in its episode
// only.
func demoEvaluation(at time.Time, ago time.Duration, rates []demosource.Rate) history.Evaluation {
	episode := ago >= -demoEpisodeStart && ago < -demoEpisodeEnd
	var ev history.Evaluation
	idx := map[demoEntry]int{}
	for _, r := range rates {
		if r.Table == "orders" && r.Index == "" && r.Class == traffic.Write && !episode {
			r = withoutKey(r, demosource.CelebrityUser)
		}
		e := demoEntry{r.Table, r.Index}
		i, ok := idx[e]
		if !ok {
			i = len(ev.Seconds)
			idx[e] = i
			ev.Snapshot.Tables = append(ev.Snapshot.Tables, sketch.TableSnapshot{Table: r.Table, Index: r.Index,
				Start: at.Add(-59 * time.Second), End: at.Add(time.Second), LastSecond: at})
			ev.Seconds = append(ev.Seconds, report.TableSecond{Table: r.Table, Index: r.Index, At: at,
				Classes: []report.ClassSecond{{Class: report.Classes[0]}, {Class: report.Classes[1]}}})
		}
		addRate(&ev.Snapshot.Tables[i], &ev.Seconds[i], r)
	}
	if episode {
		ev.Flags = []report.Flag{celebrityFlag(rates)}
	}
	return ev
}

// addRate adds one class's second: the window as the rate held for its
// minute, the second's units and keys.
func addRate(ts *sketch.TableSnapshot, sec *report.TableSecond, r demosource.Rate) {
	const span = 60 // seconds of the window, Start to End
	cs := &ts.Classes[r.Class]
	cs.Units, cs.Events = r.Units*span, uint64(math.Round(r.Events*span))
	cs.Throttled.Events = uint64(math.Round(r.Throttled * span))
	ts.Events += cs.Events
	ts.ThrottledEvents += cs.Throttled.Events
	c := &sec.Classes[r.Class]
	c.Units = r.Units
	for _, k := range r.Keys {
		c.Keys = append(c.Keys, report.KeySecond{Key: k.Key, Units: k.Units})
		cs.Top = append(cs.Top, sketch.KeyStat{Key: k.Key, Units: k.Units * span})
	}
}

// withoutKey is r without key's traffic.
func withoutKey(r demosource.Rate, key string) demosource.Rate {
	out := r
	out.Keys = nil
	for _, k := range r.Keys {
		if k.Key == key {
			out.Units -= k.Units
			out.Events -= k.Units / r.Units * r.Events
			continue
		}
		out.Keys = append(out.Keys, k)
	}
	return out
}

// celebrityFlag is the diagnosis of the orders' celebrity user the demo
// plants (demosource.Planted) at its rate, as its episode flags it.
func celebrityFlag(rates []demosource.Rate) report.Flag {
	var p demosource.Plant
	for _, q := range demosource.Planted() {
		if q.Table == "orders" && q.Index == "" && q.Key == demosource.CelebrityUser {
			p = q
		}
	}
	var units float64
	for _, r := range rates {
		for _, k := range r.Keys {
			if r.Table == p.Table && r.Index == p.Index && r.Class == p.Class && k.Key == p.Key {
				units = k.Units
			}
		}
	}
	return report.Flag{Table: p.Table, Index: p.Index, Diagnosis: report.Diagnosis{
		Cause: report.Kind(p.Cause), Class: p.Class.String(), Keys: []string{p.Key}, Severity: report.Severity(p.Severity),
		PeakUnitsPerSecond: units, Summary: fmt.Sprintf("%s: %s (%.0f WCU/s)", p.Key, p.Why, units),
		Fix: report.Recommendation{Kind: report.AdviceKind(p.Fix), Text: "spread " + p.Key + "'s writes over a calculated suffix of its partition key"}}}
}

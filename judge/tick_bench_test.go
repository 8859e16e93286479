package judge_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/history"
	"github.com/hotkeyd/hotkeyd/judge"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// tickRig is the daemon's detector tick on a virtual clock: a store of
// tables fed once, a Tracker alone, the live page's history, the history
// on disk, the report published to a Collector served beside a registry.
type tickRig struct {
	now     time.Time
	store   *sketch.Store
	tracker *detect.Tracker
	judge   judge.Evaluator
	history *export.Recent
	cells   *history.Store
	live    *export.Live
	metrics http.Handler
	// secs are the previous evaluation's last seconds, written over.
	secs []report.TableSecond
}

// newTickRig feeds tables tables of keys keys, each read and written
// once, into a window of window.
func newTickRig(tb testing.TB, tables, keys int, window time.Duration) *tickRig {
	r := &tickRig{now: time.Unix(1_700_000_000, 0)}
	cfg := sketch.DefaultConfig()
	cfg.Window = window
	cfg.MaxTables = tables
	var err error
	if r.store, err = sketch.NewStore(cfg, func() time.Time { return r.now }); err != nil {
		tb.Fatal(err)
	}
	for ti := range tables {
		var batch []traffic.Event
		for k := range keys {
			for _, c := range []traffic.Class{traffic.Read, traffic.Write} {
				batch = append(batch, traffic.Event{Table: fmt.Sprintf("table-%04d", ti), PK: fmt.Sprintf("KEY#%06d", k), Class: c, Units: 1})
			}
		}
		if err := r.store.Put(context.Background(), batch); err != nil {
			tb.Fatal(err)
		}
	}
	r.tracker = detect.NewTracker(detect.DefaultSettings())
	r.judge = judge.Alone(r.store, r.tracker)
	r.history = export.NewRecent(export.RecentConfig{Window: window, Top: 10})
	// The history's writer is not run: the tick's recording is measured,
	// not the writing of the cells it hands over (history's
	// BenchmarkRecord), whose allocations would be counted as the tick's.
	if r.cells, err = history.Open(context.Background(), history.Options{Dir: tb.TempDir(), Now: func() time.Time { return r.now }}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = r.cells.Close() })
	r.live = export.NewLive(func() time.Time { return r.now })
	r.metrics = export.NewExposition(prometheus.NewRegistry(), export.NewCollector(r.live, export.CollectorConfig{})).Handler(promhttp.HandlerOpts{EnableOpenMetrics: true})
	return r
}

// second runs one second of the daemon's tick as the daemon's evaluate
// does: the clock moves a second, the tick evaluates, records the last
// seconds for the page and the history, and publishes.
func (r *tickRig) second() judge.Judgement {
	r.now = r.now.Add(time.Second)
	j := r.judge.Evaluate()
	r.secs = detect.LastSecondsInto(r.secs, j.Snapshot, r.history.Keys())
	r.history.Record(r.secs)
	r.cells.Record(history.Evaluation{Snapshot: j.Snapshot, Seconds: r.secs, Earlier: detect.EarlierSeconds(j.Snapshot, r.history.Keys()),
		Flags: r.tracker.Flagged()})
	r.live.Publish(j.Report, j.Revisions)
	return j
}

// scrape asks /metrics, as a Go client does (the text format, gzip).
func (r *tickRig) scrape(tb testing.TB) {
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := httptest.NewRecorder()
	r.metrics.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || rec.Body.Len() == 0 {
		tb.Fatalf("GET /metrics: %d, %d bytes", rec.Code, rec.Body.Len())
	}
}

// BenchmarkIdleTick measures what the detector tick and a scrape cost
// once 1000 tables of 200 keys were fed and nothing arrives, while the
// window fills (the store started with the feed), as in membench's idle
// run: "second" is one second of the daemon's tick, "scrape" one answer of
// /metrics in the text format, gzipped (membench scrapes every 5 s).
// "held-second" is a second of the tick when nothing changes at all: the
// tables hold their traffic in a window of an hour that has not filled,
// their recent seconds are past, the history wrote their minute, and no
// table is evaluated again; it should allocate next to nothing (the
// garbage collector's work while idle).
//
//	go test -run '^$' -bench IdleTick -benchtime 20x ./judge/
func BenchmarkIdleTick(b *testing.B) {
	b.Run("held-second", func(b *testing.B) {
		r := newTickRig(b, 1000, 200, time.Hour)
		// The fed seconds close and leave the recent ones, and the
		// history writes the fed minute's cells.
		for range 61 + sketch.DefaultConfig().RecentSeconds {
			r.second()
		}
		evals := r.tracker.Evaluations()
		b.ReportAllocs()
		for b.Loop() {
			r.second()
		}
		b.ReportMetric(float64(r.tracker.Evaluations()-evals)/float64(b.N), "evaluations/op")
	})
	r := newTickRig(b, 1000, 200, time.Minute)
	for range 5 { // the fed seconds close
		r.second()
	}
	b.Run("second", func(b *testing.B) {
		evals := r.tracker.Evaluations()
		b.ReportAllocs()
		for b.Loop() {
			r.second()
		}
		b.ReportMetric(float64(r.tracker.Evaluations()-evals)/float64(b.N), "evaluations/op")
	})
	b.Run("scrape", func(b *testing.B) {
		r.scrape(b) // the tables' text is made: the scrapes measured are idle ones
		b.ReportAllocs()
		for b.Loop() {
			r.scrape(b)
		}
	})
}

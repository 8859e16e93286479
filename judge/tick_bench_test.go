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
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/judge"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// tickRig is the daemon's detector tick on a virtual clock: a store of
// tables fed once, a Tracker alone, the live page's history, the report
// published to a Collector served beside a registry.
type tickRig struct {
	now     time.Time
	store   *sketch.Store
	tracker *detect.Tracker
	judge   judge.Evaluator
	history *export.Recent
	live    *export.Live
	metrics http.Handler
}

// newTickRig feeds tables tables of keys keys, each read and written once.
func newTickRig(tb testing.TB, tables, keys int) *tickRig {
	r := &tickRig{now: time.Unix(1_700_000_000, 0)}
	cfg := sketch.DefaultConfig()
	cfg.Window = time.Minute
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
	r.history = export.NewRecent(export.RecentConfig{Window: time.Minute, Top: 10})
	r.live = export.NewLive(func() time.Time { return r.now })
	r.metrics = export.NewExposition(prometheus.NewRegistry(), export.NewCollector(r.live, export.CollectorConfig{})).Handler(promhttp.HandlerOpts{EnableOpenMetrics: true})
	return r
}

// second runs one second of the daemon's tick: the clock moves a second,
// the tick evaluates, records and publishes.
func (r *tickRig) second() judge.Judgement {
	r.now = r.now.Add(time.Second)
	j := r.judge.Evaluate()
	r.history.Record(detect.LastSeconds(j.Snapshot, r.history.Keys()))
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
//
//	go test -run '^$' -bench IdleTick -benchtime 20x ./judge/
func BenchmarkIdleTick(b *testing.B) {
	r := newTickRig(b, 1000, 200)
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
		b.ReportAllocs()
		for b.Loop() {
			r.scrape(b)
		}
	})
}

package export

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// scrapeState is the largest report /metrics serves by default: 300
// tables (max_tables) whose top 10 keys of each class are exported.
func scrapeState() *Live {
	var snap sketch.Snapshot
	for ti := range 300 {
		ts := sketch.TableSnapshot{Table: fmt.Sprintf("table-%03d", ti), Start: t0, End: t0.Add(time.Minute), DistinctKeys: 3000}
		for c := range ts.Classes {
			cs := sketch.ClassStats{Units: 1e6}
			for k := range 100 {
				cs.Top = append(cs.Top, sketch.KeyStat{Key: fmt.Sprintf("USER#%d-%d", c, k), Units: float64(10_000 - k)})
			}
			ts.Classes[c] = cs
		}
		snap.Tables = append(snap.Tables, ts)
	}
	live := NewLive(nil)
	live.Update(detect.Evaluate(snap, detect.DefaultSettings()))
	return live
}

// BenchmarkScrape measures /metrics over the largest default report, as
// Prometheus asks (OpenMetrics, gzip): one scrape at a time (a new
// report each time, so that every table's series are built, or the same
// report, whose series are kept), and rounds of 50 at once, which share
// one gathering and one encoding.
//
//	go test ./export -run '^$' -bench Scrape -benchmem
func BenchmarkScrape(b *testing.B) {
	live := scrapeState()
	reg, err := NewRegistry(BuildInfo{})
	if err != nil {
		b.Fatal(err)
	}
	s, err := NewServer(nopLogger(), ServerConfig{Gatherer: NewExposition(reg, NewCollector(live, CollectorConfig{})), Registerer: reg, Live: live, Readiness: NewReadiness()})
	if err != nil {
		b.Fatal(err)
	}
	scrape := func(b *testing.B) int {
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
		req.Header.Set("Accept-Encoding", "gzip")
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Errorf("GET /metrics: %d", w.Code)
		}
		return w.Body.Len()
	}
	b.Run("new-report", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			live.Update(live.Load().Report)
			n = scrape(b)
		}
		b.ReportMetric(float64(n), "gzip-bytes")
	})
	b.Run("same-report", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			scrape(b)
		}
	})
	b.Run("50-at-once", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			live.Update(live.Load().Report)
			var wg sync.WaitGroup
			for range 50 {
				wg.Go(func() { scrape(b) })
			}
			wg.Wait()
		}
	})
}

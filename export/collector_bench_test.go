package export

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// bigState is 50 tables with 100 tracked keys per class, as a busy account
// would have.
func bigState() report.Report {
	var snap sketch.Snapshot
	for ti := range 50 {
		ts := sketch.TableSnapshot{Table: fmt.Sprintf("table-%02d", ti), Start: t0, End: t0.Add(time.Minute), DistinctKeys: 1_000_000}
		for c := range ts.Classes {
			cs := sketch.ClassStats{Units: 1e6}
			for k := range 100 {
				cs.Top = append(cs.Top, sketch.KeyStat{Key: fmt.Sprintf("USER#%d-%d", c, k), Units: float64(10_000 - k)})
			}
			ts.Classes[c] = cs
		}
		snap.Tables = append(snap.Tables, ts)
	}
	rep := detect.Evaluate(snap, detect.DefaultSettings())
	for i := range rep.Tables {
		rep.Tables[i].Findings = []report.Finding{
			{Kind: "hot_key", Key: "USER#1-0", Class: traffic.Write.String(), Recommendation: &report.Recommendation{Kind: "write_sharding"}},
		}
	}
	return rep
}

// BenchmarkCollect measures a scrape of the Collector in hash mode, which
// builds (and masks) the metrics: after a detector tick and again on the
// same State (nothing is cached between scrapes).
func BenchmarkCollect(b *testing.B) {
	rep := bigState()
	m := mustMasker(b, KeysHash, "k")
	drain := func(c *Collector) int {
		ch := make(chan prometheus.Metric, 4096)
		c.Collect(ch)
		close(ch)
		n := 0
		for range ch {
			n++
		}
		return n
	}
	b.Run("after-tick", func(b *testing.B) {
		live := NewLive(nil)
		c := NewCollector(live, CollectorConfig{Masker: m})
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			live.Update(rep)
			n = drain(c)
		}
		b.ReportMetric(float64(n), "series")
	})
	b.Run("cached", func(b *testing.B) {
		live := NewLive(nil)
		live.Update(rep)
		c := NewCollector(live, CollectorConfig{Masker: m})
		drain(c)
		b.ReportAllocs()
		for b.Loop() {
			drain(c)
		}
	})
}

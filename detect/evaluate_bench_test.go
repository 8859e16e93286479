package detect

import (
	"fmt"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// benchSnapshot is a daemon-sized snapshot: tables × 2 classes × 100
// tracked keys, a few of them time-shaped, with stream shards.
func benchSnapshot(tables int) sketch.Snapshot {
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	snap := sketch.Snapshot{Start: start, End: start.Add(time.Minute)}
	for ti := range tables {
		ts := sketch.TableSnapshot{Table: fmt.Sprintf("table-%04d", ti), Start: snap.Start, End: snap.End, DistinctKeys: 5000}
		for c := range traffic.Class(traffic.NumClasses) {
			cs := &ts.Classes[c]
			for k := range 100 {
				u := 6000.0 / float64(k+1)
				key := fmt.Sprintf("USER#%d", k)
				if k%10 == 0 {
					key = fmt.Sprintf("EVENTS#2026-11-%02d", 1+k/10)
				}
				cs.Top = append(cs.Top, sketch.KeyStat{Key: key, Units: u, Events: uint64(u), SortKeys: uint64(k % 3)})
				cs.Units += u
				cs.Events += uint64(u)
			}
			ts.Events += cs.Events
		}
		for s := range 8 {
			ts.Shards = append(ts.Shards, sketch.ShardStat{Shard: fmt.Sprintf("shardId-%04d", s), Records: uint64(1000 / (s + 1))})
		}
		snap.Tables = append(snap.Tables, ts)
	}
	return snap
}

// BenchmarkEvaluate measures one evaluation of a 100-table snapshot, what
// the daemon pays per tick.
func BenchmarkEvaluate(b *testing.B) {
	snap := benchSnapshot(100)
	s := DefaultSettings()
	b.ReportAllocs()
	for b.Loop() {
		Evaluate(snap, s)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/table")
}

// BenchmarkTracker adds the hysteresis bookkeeping to BenchmarkEvaluate.
func BenchmarkTracker(b *testing.B) {
	snap := benchSnapshot(100)
	tr := NewTracker(DefaultSettings())
	b.ReportAllocs()
	for b.Loop() {
		tr.Evaluate(snap)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/table")
}

// BenchmarkMatchTime measures the time-shape recogniser on a mix of keys.
func BenchmarkMatchTime(b *testing.B) {
	keys := []string{"USER#123456", "EVENTS#2026-11-22", "1795341600", "PENDING", "2026-11-22T10:00:00Z", "ORDER#1000000123"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		MatchTime(keys[i%len(keys)])
	}
}

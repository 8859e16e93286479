package detect

import (
	"testing"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// TestHotPartitionBusiestSecond checks that a hot shard's severity is
// judged on its busiest second, as a key's is, and on its mean rate when
// the snapshot has no busiest second (a summary from an older replica).
func TestHotPartitionBusiestSecond(t *testing.T) {
	for _, tc := range []struct {
		name     string
		peak     uint64 // shard a's busiest second, in records
		wantPeak float64
		want     report.Severity
	}{
		// 9000 records in 60 s: 150 a second on average.
		{"no busiest second: the mean", 0, 150, report.SeverityInfo},
		{"a burst of 900 in one second", 900, 900, report.SeverityCritical},
		{"a burst of 600", 600, 600, report.SeverityWarning},
		{"busiest second below the mean is the mean", 100, 150, report.SeverityInfo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshotOf(60, map[string]float64{"K1": 20, "K2": 20})
			snap.Tables[0].Shards = []sketch.ShardStat{{Shard: "a", Records: 9000, PeakRecords: tc.peak}, {Shard: "b", Records: 100, PeakRecords: 5}, {Shard: "c", Records: 100, PeakRecords: 5}}
			var found bool
			for _, f := range Evaluate(snap, DefaultSettings()).Tables[0].Findings {
				if f.Kind != report.KindHotPartition {
					continue
				}
				if f.Key != "a" {
					t.Errorf("shard %s flagged: %+v", f.Key, f)
					continue
				}
				found = true
				if f.Severity != tc.want || f.PeakUnitsPerSecond != tc.wantPeak || f.UnitsPerSecond != 150 {
					t.Errorf("finding %s at %v/s (busiest %v/s), want %s at 150/s (busiest %v/s)", f.Severity, f.UnitsPerSecond, f.PeakUnitsPerSecond, tc.want, tc.wantPeak)
				}
			}
			if !found {
				t.Errorf("no hot_partition finding for shard a")
			}
		})
	}
}

package detect

import (
	"fmt"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/internal/plural"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// hotPartitions finds stream shards, i.e. physical partitions, that carry
// an outsized share of the table's stream records: at least Threshold of
// them and at least ShardFactor times the mean shard. A table needs two
// shards and MinEvents records before shards are compared at all.
//
// A shard holds many keys, and the snapshot does not say which; diagnose
// looks for a hot key whose writes account for the shard. The severity is
// judged, as a key's, on the shard's busiest second in the window: its
// records in that second (a record is one write of at least one WCU, so
// this is a floor of its WCU/s); the mean rate when the snapshot has no
// busiest second (a summary from an older replica).
func (t *table) hotPartitions() []report.Finding {
	total, mean, ok := t.shardTotals()
	if !ok {
		return nil
	}
	var out []report.Finding
	for _, sh := range t.Shards {
		if !t.shardHot(sh.Records, total, mean) {
			continue
		}
		share := float64(sh.Records) / float64(total)
		rate := t.rate(float64(sh.Records))
		peak := max(float64(sh.PeakRecords), rate)
		out = append(out, report.Finding{
			Kind:               report.KindHotPartition,
			Key:                sh.Shard,
			Class:              traffic.Write.String(),
			Severity:           t.severity(traffic.Write, peak, 0),
			Share:              share,
			UnitsPerSecond:     rate,
			PeakUnitsPerSecond: peak,
			Evidence: &report.Evidence{
				Summary: fmt.Sprintf("Stream shard %s carries %s of the %s's %s, %s× the mean of its %d shards.",
					sh.Shard, pct(share), t.noun(), plural.Count(total, "stream record"), num(float64(sh.Records)/mean), len(t.Shards)),
				WindowSeconds: t.seconds,
				Records:       sh.Records,
				MeanRecords:   mean,
				Limit:         t.s.WriteLimit,
			},
		})
	}
	return out
}

// shardTotals returns the stream records of the window and the mean per
// shard, and whether there are enough shards and records to compare them.
func (t *table) shardTotals() (total uint64, mean float64, ok bool) {
	for _, sh := range t.Shards {
		total += sh.Records
	}
	if len(t.Shards) < 2 || total == 0 || total < t.s.MinEvents {
		return 0, 0, false
	}
	return total, float64(total) / float64(len(t.Shards)), true
}

// shardHot is the hot_partition rule for a shard of records out of total.
func (t *table) shardHot(records, total uint64, mean float64) bool {
	return total > 0 && float64(records)/float64(total) >= t.s.Threshold && float64(records) >= t.s.ShardFactor*mean
}

package detect

import (
	"fmt"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/ingest"
)

// hotPartitions finds stream shards, i.e. physical partitions, that carry
// an outsized share of the table's stream records: at least Threshold of
// them and at least ShardFactor times the mean shard. A table needs two
// shards and MinEvents records before shards are compared at all.
//
// A shard holds many keys, and the snapshot does not say which; the advice
// names the table's heaviest write key, the likeliest tenant.
func (t *table) hotPartitions() []report.Finding {
	var total uint64
	for _, sh := range t.Shards {
		total += sh.Records
	}
	if len(t.Shards) < 2 || total == 0 || total < t.s.MinEvents {
		return nil
	}
	mean := float64(total) / float64(len(t.Shards))
	var out []report.Finding
	for _, sh := range t.Shards {
		share := float64(sh.Records) / float64(total)
		if share < t.s.Threshold || float64(sh.Records) < t.s.ShardFactor*mean {
			continue
		}
		// A stream record is one write of at least one WCU.
		rate := t.rate(float64(sh.Records))
		out = append(out, report.Finding{
			Kind:           report.KindHotPartition,
			Key:            sh.Shard,
			Class:          ingest.Write.String(),
			Severity:       t.severity(ingest.Write, rate),
			Share:          share,
			UnitsPerSecond: rate,
			Recommendation: t.adviseShard(sh.Shard, share, rate, mean),
			Evidence: &report.Evidence{
				Summary: fmt.Sprintf("Stream shard %s carries %s of the %s's %d stream records, %s× the mean of its %d shards.",
					sh.Shard, pct(share), t.noun(), total, num(float64(sh.Records)/mean), len(t.Shards)),
				WindowSeconds: t.seconds,
				Records:       sh.Records,
				MeanRecords:   mean,
				Limit:         t.s.WriteLimit,
			},
		})
	}
	return out
}

// adviseShard recommends write sharding for the heaviest write key, the
// likeliest cause of a hot partition.
func (t *table) adviseShard(shard string, share, rate, mean float64) *report.Recommendation {
	n := t.suffixCount(ingest.Write, rate)
	key := "<key>"
	if top := t.ranked(ingest.Write); len(top) > 0 {
		key = top[0].Key
	}
	return &report.Recommendation{
		Kind:        report.AdviceWriteSharding,
		SuffixCount: n,
		Example:     suffixExample(key, n),
		Text: fmt.Sprintf("One physical partition (shard %s) takes %s of the writes: spread its heaviest keys, starting with %s, over %d keys with a random suffix (%s); reads must then fan out over %s.",
			shard, pct(share), quoteKey(key), n, suffixExample(key, n), allKeys(n)),
	}
}

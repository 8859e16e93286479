package detect

import (
	"fmt"
	"math"
	"strings"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/ingest"
)

// lowCardinality finds a table whose partition key has too few values for
// its traffic, in either of two ways:
//
//   - distinct partition keys < CardinalityFactor × required partitions,
//     where required = ceil(peak WCU/s / WriteLimit) or ceil(peak RCU/s /
//     ReadLimit), whichever is larger: the keys cannot even spread over the
//     partitions the traffic needs;
//   - between 2 and HandfulKeys keys carry at least HandfulShare of a
//     class's units: a status-like key (PENDING, SHIPPED, ...). One key alone
//     is a hot_key, not a cardinality problem.
//
// At most one finding per table; classes below the traffic floor are not
// judged.
func (t *table) lowCardinality() (report.Finding, bool) {
	distinct := t.DistinctKeys
	// Writes first: a write-concentrated key is the one that throttles.
	// Judging each class by the partitions its own peak needs is the same
	// as judging the table by the larger of the two.
	for _, c := range []ingest.Class{ingest.Write, ingest.Read} {
		if !t.active(c) || distinct == 0 {
			continue
		}
		required := ceilInt(t.peak(c) / t.limit(c))
		top := t.ranked(c)
		if len(top) == 0 {
			continue
		}
		total := t.Classes[c].Units
		ev := &report.Evidence{
			WindowSeconds:         t.seconds,
			ClassUnits:            total,
			DistinctPartitionKeys: distinct,
			RequiredPartitions:    required,
			PeakUnitsPerSecond:    t.peak(c),
			Limit:                 t.limit(c),
		}
		var share float64
		switch {
		case float64(distinct) < t.s.CardinalityFactor*float64(required):
			n := min(len(top), t.s.HandfulKeys)
			for i := range top[:n] {
				share += top[i].Units / total
				ev.Keys = append(ev.Keys, top[i].Key)
			}
			ev.Summary = fmt.Sprintf("%d distinct partition keys for a peak of %s %s/s, which needs %d partitions: at least %s× as many keys are needed to use them.",
				distinct, num(t.peak(c)), unitName(c), required, num(t.s.CardinalityFactor))
		default:
			n := 0
			for n < len(top) && n < t.s.HandfulKeys && share < t.s.HandfulShare {
				share += top[n].Units / total
				n++
			}
			if n < 2 || share < t.s.HandfulShare {
				continue
			}
			for i := range top[:n] {
				ev.Keys = append(ev.Keys, top[i].Key)
			}
			ev.Summary = fmt.Sprintf("%d partition keys (%s) carry %s of the %s's %s units: a status-like key.",
				n, strings.Join(ev.Keys, ", "), pct(share), t.noun(), c)
		}
		share = math.Min(share, 1)
		hottest := top[0]
		rate := t.rate(hottest.Units)
		return report.Finding{
			Kind:           report.KindLowCardinality,
			Class:          c.String(),
			Severity:       t.severity(c, rate),
			Share:          share,
			UnitsPerSecond: t.peak(c),
			Recommendation: t.adviseGSI(c, hottest.Key, t.share(c, &hottest), rate, ev),
			Evidence:       ev,
		}, true
	}
	return report.Finding{}, false
}

// adviseGSI recommends re-keying on a high-cardinality attribute and moving
// the low-cardinality one to a global secondary index, sharded over N
// suffixes when its hottest value would be a hot key there too. On an index
// entry the key already is a GSI's: shard it.
func (t *table) adviseGSI(c ingest.Class, hottest string, share, rate float64, ev *report.Evidence) *report.Recommendation {
	r := &report.Recommendation{Kind: report.AdviceGSI}
	sharded := share >= t.s.Threshold || t.nearCeiling(c, rate)
	if sharded {
		r.SuffixCount = t.suffixCount(c, rate)
		r.Example = suffixExample(hottest, r.SuffixCount)
	}
	few := fmt.Sprintf("Only %d partition key values carry this traffic", ev.DistinctPartitionKeys)
	if ev.DistinctPartitionKeys == 1 {
		few = "One partition key value carries all this traffic"
	}
	if len(ev.Keys) > 0 && ev.RequiredPartitions > 0 && float64(ev.DistinctPartitionKeys) >= t.s.CardinalityFactor*float64(ev.RequiredPartitions) {
		few = fmt.Sprintf("%d values (%s) carry nearly all traffic", len(ev.Keys), strings.Join(ev.Keys, ", "))
	}
	switch {
	case t.Index != "" && sharded:
		r.Text = fmt.Sprintf("%s of the %s index: write its key attribute with a suffix, %s, and query %s, so the index's hottest value %s no longer lands on one partition.",
			few, t.Index, r.Example, allKeys(r.SuffixCount), quoteKey(hottest))
	case t.Index != "":
		r.Text = fmt.Sprintf("%s of the %s index: add a high-cardinality attribute to its key or write its key attribute with a suffix and query all suffixes.",
			few, t.Index)
	case sharded:
		r.Text = fmt.Sprintf("%s: make a high-cardinality attribute (the item's own id) the partition key and move this attribute to a GSI, sharded as %s because its hottest value would be hot there too.",
			few, r.Example)
	default:
		r.Text = fmt.Sprintf("%s: make a high-cardinality attribute (the item's own id) the partition key and move this attribute to a GSI for the queries that need it.", few)
	}
	return r
}

package detect

import (
	"fmt"
	"math"
	"strings"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/internal/plural"
	"github.com/hotkeyd/hotkeyd/traffic"
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
	for _, c := range []traffic.Class{traffic.Write, traffic.Read} {
		if !t.active(c) || distinct == 0 {
			continue
		}
		required := ceilInt(t.classPeak(c) / t.limit(c))
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
			PeakUnitsPerSecond:    t.classPeak(c),
			Limit:                 t.limit(c),
		}
		var share float64
		judged := top // the keys whose peaks set the severity
		switch {
		case float64(distinct) < t.s.CardinalityFactor*float64(required):
			// Too few keys for the partitions the peak needs: every key
			// of the class is a symptom.
			n := min(len(top), t.s.HandfulKeys)
			for i := range top[:n] {
				share += top[i].Units / total
				ev.Keys = append(ev.Keys, top[i].Key)
			}
			ev.Summary = fmt.Sprintf("%s for a peak of %s %s/s, which needs %d partitions: at least %s× as many keys are needed to use them.",
				plural.Count(distinct, "distinct partition key"), num(t.classPeak(c)), unitName(c), required, num(t.s.CardinalityFactor))
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
			judged = top[:n]
			ev.Summary = fmt.Sprintf("%d partition keys (%s) carry %s of the %s's %s units: a status-like key.",
				n, strings.Join(ev.Keys, ", "), pct(share), t.noun(), c)
		}
		share = math.Min(share, 1)
		hottest := &top[0]
		sev := report.SeverityInfo
		for i := range judged {
			sev = sev.Max(t.keySeverity(c, judged[i].Key, t.keyPeak(&judged[i])))
		}
		return report.Finding{
			Kind:               report.KindLowCardinality,
			Class:              c.String(),
			Severity:           sev,
			Share:              share,
			UnitsPerSecond:     t.rate(hottest.Units),
			PeakUnitsPerSecond: t.keyPeak(hottest),
			Evidence:           ev,
		}, true
	}
	return report.Finding{}, false
}

// tooFewKeys reports whether a low_cardinality finding is the first kind:
// fewer distinct keys than the partitions the traffic needs, rather than a
// handful of status-like values.
func (t *table) tooFewKeys(f *report.Finding) bool {
	ev := f.Evidence
	return ev != nil && ev.RequiredPartitions > 0 && float64(ev.DistinctPartitionKeys) < t.s.CardinalityFactor*float64(ev.RequiredPartitions)
}

package detect

import (
	"fmt"
	"slices"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// This file is the rule of keys throttled in their key range
// (partition_limit): a key whose calls its partition refused (throttle.go
// tells it from the capacity's throttling) is at the limit, whatever its
// share or the units the input gives it.

// keyRangeFindings adds a partition_limit finding for each key throttled
// in its key range that no rule found hot: a key refused at its
// partition's ceiling is at the limit, whatever its share or the units the
// input gives it (CloudTrail counts one per item).
func (t *table) keyRangeFindings(c traffic.Class, fs []report.Finding) []report.Finding {
	th := t.throttling(c)
	if th == nil || len(th.keyRange) == 0 {
		return fs
	}
	keys := make([]string, 0, len(th.keyRange))
	for key := range th.keyRange {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		if slices.ContainsFunc(fs, func(f report.Finding) bool { return f.Key == key && f.Class == c.String() }) {
			continue
		}
		k := t.keyStat(c, key)
		var share, rate, peak, units float64
		var sortKeys uint64
		if k != nil {
			share, rate, peak, units, sortKeys = t.share(c, k), t.rate(k.Units), t.keyPeak(k), k.Units, k.SortKeys
		}
		kr := th.keyRange[key]
		fs = append(fs, report.Finding{
			Kind: report.KindPartitionLimit, Key: key, Class: c.String(), Severity: report.SeverityCritical,
			Share: share, UnitsPerSecond: rate, PeakUnitsPerSecond: peak,
			Evidence: &report.Evidence{
				Summary:            t.keyRangeEvidence(c, quoteKey(key), kr) + ".",
				WindowSeconds:      t.seconds,
				Units:              units,
				ClassUnits:         t.Classes[c].Units,
				Limit:              t.limit(c),
				SortKeys:           sortKeys,
				PeakUnitsPerSecond: peak,
				Throttled:          kr.throttled,
				KeyRangeThrottled:  kr.throttled,
			},
		})
	}
	return fs
}

// keyRangeEvidence says why a key's throttling is its key range's, of
// the key named by subject (empty: the sentence's subject already), with
// its served and refused calls: a key the class does not rank had at most
// as many served calls as the least of those it ranks (none when it ranks
// every key).
func (t *table) keyRangeEvidence(c traffic.Class, subject string, kr keyRangeThrottle) string {
	if subject != "" {
		subject += " is "
	}
	refused := count(kr.throttled) + " of its " + c.String() + "s refused"
	switch {
	case kr.bound:
		refused += fmt.Sprintf(" and at most %s served (it is not among the %s's tracked keys: %s or more of its calls refused)",
			count(kr.served), t.noun(), pct(float64(kr.throttled)/float64(max(kr.calls, 1))))
	case kr.served == 0:
		refused += " and none served"
	case !kr.reason:
		refused = count(kr.throttled) + " of its " + count(kr.calls) + " " + c.String() + "s refused (" +
			pct(float64(kr.throttled)/float64(max(kr.calls, 1))) + ")"
	}
	if kr.reason {
		return subject + "throttled in its key range, as the throttling reasons say (KeyRangeThroughputExceeded): " + refused
	}
	return subject + "throttled in its key range: " + refused + ", against " + pct(kr.others) + " of the other keys'"
}

// refusedDemand says, of a key throttled in its key range with no served
// call the window tracks, what its refused calls tell of its demand: its
// partition refused them at its ceiling (DynamoDB serves at most 3,000
// read units and 1,000 write units a second in one partition,
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html),
// so it asks for at least that.
func (t *table) refusedDemand(c traffic.Class) string {
	return fmt.Sprintf("; its partition refused them at its ceiling, so it asks for at least one partition's %s %s/s",
		num(t.limit(c)), unitName(c))
}

// keyRangeOf is the throttled calls of keys in class c that are their key
// ranges'.
func (t *table) keyRangeOf(c traffic.Class, keys []string) uint64 {
	var n uint64
	for _, k := range keys {
		n += t.keyRangeThrottled(c, k)
	}
	return n
}

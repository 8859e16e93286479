package detect

import (
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// This file validates a fix by simulation, as DynamoDB's key design guide
// asks: the class's recorded keys are replayed with the diagnosed keys
// spread (or cached away), and the largest share and busiest second any
// key would then have are judged by the same rules as today's traffic.
//
// A key spread over parts keeps its per-second shape: a part with a
// fraction w of the key's items takes w of its units and of its busiest
// second. The keys outside the tracked top are lighter than every tracked
// key, so they cannot be the heaviest after a fix either.

// spread says what a fix does to one key: its heaviest part's fraction of
// the key's traffic (1/N for an even split), or 0 when the key's traffic
// leaves the table (a cache serves it).
type spread map[string]float64

// simulate replays class c with the keys of sp spread, and returns the
// largest share of the class's units and the highest per-second peak any
// key (or part of a key) would have.
func (t *table) simulate(c traffic.Class, sp spread) (maxShare, peak float64) {
	total := t.Classes[c].Units
	top := t.ranked(c)
	for i := range top {
		if w, ok := sp[top[i].Key]; ok && w == 0 {
			total -= top[i].Units
		}
	}
	if total <= 0 {
		return 0, 0
	}
	for i := range top {
		k := &top[i]
		w, ok := sp[k.Key]
		if !ok {
			w = 1
		}
		maxShare = max(maxShare, k.Units*w/total)
		peak = max(peak, t.keyPeak(k)*w)
	}
	return min(maxShare, 1), peak
}

// hashSpread is the heaviest bucket's fraction when n items of even
// traffic are spread over buckets by hash(item) mod buckets, as a
// calculated suffix does: the items are replayed as n synthetic sort keys.
// With few items the split is uneven (3 items over 2 keys: 2/3 on one);
// with no item count known, the split is taken as even.
func hashSpread(items uint64, buckets int) float64 {
	if buckets < 1 {
		return 1
	}
	if items == 0 {
		return 1 / float64(buckets)
	}
	n := min(items, 10000) // past that, the split is even to a few per mille
	counts := make([]uint64, buckets)
	var b []byte
	for i := range n {
		h := fnv.New64a()
		b = strconv.AppendUint(append(b[:0], "SK#"...), i, 10)
		_, _ = h.Write(b)
		counts[h.Sum64()%uint64(buckets)]++
	}
	var most uint64
	for _, c := range counts {
		most = max(most, c)
	}
	return float64(most) / float64(n)
}

// after judges a simulated state: how is says what was done, in words.
func (t *table) after(c traffic.Class, keys int, maxShare, peak float64, how string) *report.After {
	limit := t.limit(c)
	a := &report.After{
		Keys:               keys,
		MaxShare:           maxShare,
		PeakUnitsPerSecond: peak,
		UnderThreshold:     maxShare < t.s.Threshold,
		UnderCeiling:       peak < t.s.LimitFraction*limit,
		Severity:           t.severity(c, peak, 0),
	}
	threshold := "under the " + pct(t.s.Threshold) + " threshold"
	if !a.UnderThreshold {
		threshold = "still above the " + pct(t.s.Threshold) + " threshold"
	}
	ceiling := "under the ceiling"
	if !a.UnderCeiling {
		ceiling = "still near the ceiling"
	}
	a.Summary = fmt.Sprintf("%s, the heaviest key of the %s's %s would have %s of them and peak at %s %s/s, %s of one partition's ceiling: %s and %s (%s).",
		how, t.noun(), c.String()+"s", pct(maxShare), num(peak), unitName(c), pct(peak/limit), threshold, ceiling, a.Severity)
	return a
}

// afterKey is what the fix of a hot key does to its class.
func (t *table) afterKey(c traffic.Class, key string, fix report.Recommendation) *report.After {
	switch fix.Kind {
	case report.AdviceCache:
		share, peak := t.simulate(c, spread{key: 0})
		return t.after(c, 0, share, peak, fmt.Sprintf("With %s served from a cache", quoteKey(key)))
	case report.AdviceSparseIndex:
		share, peak := t.simulate(c, spread{key: 0})
		return t.after(c, 0, share, peak, fmt.Sprintf("With the items of %s left out of the index", quoteKey(key)))
	case report.AdviceWriteSharding:
		n := fix.SuffixCount
		share, peak := t.simulate(c, spread{key: 1 / float64(n)})
		return t.after(c, n, share, peak, fmt.Sprintf("Spread over %d keys at random", n))
	case report.AdviceCalculatedSuffix:
		n := fix.SuffixCount
		items := t.sortKeys(key)
		share, peak := t.simulate(c, spread{key: hashSpread(items, n)})
		how := fmt.Sprintf("Spread over %d keys by hash", n)
		if items > 0 {
			how = fmt.Sprintf("Spread over %d keys by hash of its %s sort keys", n, about(items))
		}
		return t.after(c, n, share, peak, how)
	}
	return nil
}

// afterRekey is what re-keying date keys on the entity id does: each date
// key's traffic spreads over its items (sort keys), the best the recorded
// traffic can tell of the entities under it. Nil when no date key has
// more than one sort key: the traffic cannot tell.
func (t *table) afterRekey(c traffic.Class) *report.After {
	sp := spread{}
	var most uint64
	for i := range t.ranked(c) {
		k := &t.ranked(c)[i]
		if _, ok := t.timeKey(k.Key); !ok {
			continue
		}
		if items := t.sortKeys(k.Key); items > 1 {
			sp[k.Key] = 1 / float64(items)
			most = max(most, items)
		}
	}
	if len(sp) == 0 {
		return nil
	}
	share, peak := t.simulate(c, sp)
	return t.after(c, int(most), share, peak, "Re-keyed on the entity id (each item of a date key its own key)")
}

// afterGSI is what moving a status-like key to a GSI does: in the table,
// each value's traffic spreads over its items (the new partition key is
// the item id); in the GSI the values keep their traffic, each sharded
// over N keys when the fix says so. The state is the worse of the
// two. On an index the fix shards the index key: every value over N keys.
// Nil when the values have no sort keys: the traffic cannot tell
// how their items spread.
func (t *table) afterGSI(c traffic.Class, keys []string, fix report.Recommendation) *report.After {
	if t.Index != "" {
		if fix.Kind == report.AdviceSparseIndex && len(keys) > 0 {
			return t.afterKey(c, keys[0], fix)
		}
		sp := spread{}
		for _, k := range keys {
			sp[k] = hashSpread(t.sortKeys(k), fix.SuffixCount)
		}
		share, peak := t.simulate(c, sp)
		return t.after(c, fix.SuffixCount, share, peak, fmt.Sprintf("With the index key sharded over %d suffixes", fix.SuffixCount))
	}
	table := spread{}
	for _, k := range keys {
		if items := t.sortKeys(k); items > 1 {
			table[k] = 1 / float64(items)
		}
	}
	if len(table) == 0 {
		return nil
	}
	share, peak := t.simulate(c, table)
	index := spread{}
	how := "Keyed on the item id, with this attribute in an unsharded GSI"
	if n := fix.SuffixCount; n > 0 {
		for _, k := range keys {
			index[k] = hashSpread(t.sortKeys(k), n)
		}
		how = fmt.Sprintf("Keyed on the item id, with this attribute sharded over %d suffixes in the GSI", n)
	}
	gShare, gPeak := t.simulate(c, index)
	return t.after(c, fix.SuffixCount, max(share, gShare), max(peak, gPeak), how)
}

package detect

import (
	"fmt"
	"strings"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// This file picks a diagnosis's one fix from the shape of the traffic:
//
//   - a key of an index: shard the index key (calculated_suffix) — an index
//     is read by Query, never as one item; its writes (every table write
//     that puts, moves or deletes an item's entry) spread the same way, over
//     a suffixed copy of the key attribute the index is keyed on — or, when
//     the index's own reads show its queries hardly ever ask for the hot
//     value, keep that value's items out of the index (sparse_index);
//   - a single item read hot (one sort key read, or no sort key anywhere):
//     cache — spreading the key does not spread reads of one item;
//   - a hot item collection (many sort keys, or reads without a sort key
//     of a key written under many: Queries): calculated_suffix;
//   - a single item written hot (no or one sort key): write_sharding;
//   - a status-like key: gsi (on an index: shard the index key);
//   - a date key: rekey.
//
// The shard count is N = max(2, ceil(peak / (limit × Headroom))), from the
// hottest key's busiest second.

// suffixCount is the number of keys a hot key is spread over so that each
// peaks at most at Headroom of a partition's ceiling.
func (t *table) suffixCount(c traffic.Class, peak float64) int {
	return max(2, ceilInt(peak/(t.limit(c)*t.s.Headroom)))
}

// suffixExample is the key rewritten with suffixes 0 .. n-1, e.g.
// "USER#1#0 .. USER#1#3".
func suffixExample(key string, n int) string {
	return fmt.Sprintf("%s#0 .. %s#%d", key, key, n-1)
}

// sortKeys is the most distinct sort keys seen under a key in any class of
// the table: more than one means the key is an item collection.
func (t *table) sortKeys(key string) uint64 {
	var n uint64
	for c := range t.Classes {
		for i := range t.Classes[c].Top {
			if t.Classes[c].Top[i].Key == key {
				n = max(n, t.Classes[c].Top[i].SortKeys)
			}
		}
	}
	return n
}

// readsOneItem reports whether the reads of a key go to a single item: one
// sort key read, or no sort key known anywhere under the key (a table
// without sort key). Reads without a sort key of a key written under many
// are Queries over its collection.
func (t *table) readsOneItem(k *sketch.KeyStat) bool {
	return k.SortKeys == 1 || k.SortKeys == 0 && t.sortKeys(k.Key) <= 1
}

// adviseKey picks the fix for a hot key of class c with the given peak.
func (t *table) adviseKey(c traffic.Class, k *sketch.KeyStat, share, peak float64) report.Recommendation {
	who := t.subject(k.Key)
	n := t.suffixCount(c, peak)
	switch {
	case t.Index != "":
		return t.adviseIndexKey(c, k.Key, peak)
	case c == traffic.Read && t.readsOneItem(k):
		return report.Recommendation{
			Kind: report.AdviceCache,
			Text: fmt.Sprintf("%s is one item read at up to %s RCU/s (%s of reads): serve it from DAX or an application cache, because spreading the key does not spread reads of one item.",
				capitalize(who), num(peak), pct(share)),
		}
	case c == traffic.Write && k.SortKeys <= 1:
		return report.Recommendation{
			Kind:        report.AdviceWriteSharding,
			SuffixCount: n,
			Example:     suffixExample(k.Key, n),
			Text: fmt.Sprintf("Write %s as %s with a random suffix so that its peak of %s WCU/s spreads over %d partitions; reads must then fan out over %s and combine the results.",
				who, suffixExample(k.Key, n), num(peak), n, allKeys(n)),
		}
	}
	items := "its items"
	if sk := t.sortKeys(k.Key); sk > 0 {
		items = fmt.Sprintf("its items (%s sort keys)", about(sk))
	}
	reads := "a read of one item computes its suffix and stays a single request, and only a query over the whole collection fans out over " + allKeys(n)
	if c == traffic.Read && k.SortKeys == 0 {
		reads = "a Query over the collection reads " + allKeys(n) + " and merges the results, each reading a share of the items"
	}
	return report.Recommendation{
		Kind:        report.AdviceCalculatedSuffix,
		SuffixCount: n,
		Example:     suffixExample(k.Key, n),
		Text: fmt.Sprintf("Store the items of %s under %s with suffix = hash(sort key) mod %d: %s spread over %d partitions, %s.",
			who, suffixExample(k.Key, n), n, items, n, reads),
	}
}

// adviseRefusedKey picks the fix of a key throttled in its key range that
// the class does not rank (its calls refused, none or few served): the
// key's own fix, as for a hot key, sized for the demand its refusals
// show, at least one partition's ceiling (refusedDemand).
func (t *table) adviseRefusedKey(c traffic.Class, key string, kr keyRangeThrottle) report.Recommendation {
	k := &sketch.KeyStat{Key: key, SortKeys: t.sortKeys(key)}
	peak := t.limit(c)
	n := t.suffixCount(c, peak)
	refused := fmt.Sprintf("%s refused in its key range", count(kr.throttled))
	switch {
	case t.Index != "":
		return t.adviseIndexKey(c, key, peak)
	case c == traffic.Read && t.readsOneItem(k):
		return report.Recommendation{
			Kind: report.AdviceCache,
			Text: fmt.Sprintf("%s is one item whose reads its partition refused at its ceiling of %s RCU/s (%s): serve it from DAX or an application cache, because spreading the key does not spread reads of one item.",
				capitalize(t.subject(key)), num(peak), refused),
		}
	case c == traffic.Write && k.SortKeys <= 1:
		return report.Recommendation{
			Kind:        report.AdviceWriteSharding,
			SuffixCount: n,
			Example:     suffixExample(key, n),
			Text: fmt.Sprintf("Write %s as %s with a random suffix so that its writes, refused at one partition's ceiling of %s WCU/s (%s), spread over %d partitions; reads must then fan out over %s and combine the results.",
				t.subject(key), suffixExample(key, n), num(peak), refused, n, allKeys(n)),
		}
	}
	return t.adviseKey(c, k, 0, peak)
}

// adviseIndexKey picks the fix of a hot key of an index: keep its items
// out of the index when the index's queries do not ask for it
// (sparseFits), else shard the index key — the base items write the
// attribute the index is keyed on with a suffix computed from their own
// key, and Queries of the index read every suffix.
func (t *table) adviseIndexKey(c traffic.Class, key string, peak float64) report.Recommendation {
	if readShare, ok := t.sparseFits(c, key); ok {
		return report.Recommendation{
			Kind: report.AdviceSparseIndex,
			Text: fmt.Sprintf("Make the %s index sparse for %s: its items take %s of the index's writes (%s WCU/s at peak) but only %s of its reads. Write the attribute the index is keyed on only on the items its queries look for (leave it out, or remove it, while an item is %s), so that those items' writes no longer reach the index.",
				t.Index, quoteKey(key), pct(t.share(c, t.keyStat(c, key))), num(peak), pct(readShare), quoteKey(key)),
		}
	}
	n := t.suffixCount(c, peak)
	r := report.Recommendation{Kind: report.AdviceCalculatedSuffix, SuffixCount: n, Example: suffixExample(key, n)}
	if c == traffic.Write {
		r.Text = fmt.Sprintf("Spread the %s index key: give each item a copy of the attribute the index is keyed on, written as %s with suffix = hash(the item's table key) mod %d, key the index on the copy, and query %s of the index and merge the results, so that %s's peak of %s WCU/s of index writes spreads over %d partitions (or key the index on an attribute of more values, when its queries allow).",
			t.Index, suffixExample(key, n), n, allKeys(n), quoteKey(key), num(peak), n)
		return r
	}
	r.Text = fmt.Sprintf("Shard the %s index key: write the attribute as %s with suffix = hash(the item's table key) mod %d, and query %s of the index and merge the results, so that %s and its peak of %s %s/s spread over %d partitions.",
		t.Index, suffixExample(key, n), n, allKeys(n), quoteKey(key), num(peak), unitName(c), n)
	return r
}

// sparseFits reports whether an index's hot write key is one its queries
// hardly read, and that share of the index's reads: the index has reads
// above the traffic floor (Query calls of the index, from a log or
// CloudTrail), and the key takes under a tenth of its share of the writes,
// and under the threshold, of them. Without reads the traffic cannot tell,
// and the index key is spread instead.
func (t *table) sparseFits(c traffic.Class, key string) (float64, bool) {
	if t.Index == "" || c != traffic.Write || !t.active(traffic.Read) {
		return 0, false
	}
	w := t.keyStat(traffic.Write, key)
	if w == nil {
		return 0, false
	}
	var readShare float64
	if r := t.keyStat(traffic.Read, key); r != nil {
		readShare = t.share(traffic.Read, r)
	}
	return readShare, readShare < t.s.Threshold && readShare < t.share(traffic.Write, w)/10
}

// adviseGSI recommends re-keying on a high-cardinality attribute and moving
// the low-cardinality one to a global secondary index, sharded over N
// suffixes when its hottest value would be hot or at risk there too. On an
// index the key already is a GSI's: shard it.
func (t *table) adviseGSI(f *report.Finding, hottest *sketch.KeyStat) report.Recommendation {
	c, _ := traffic.ParseClass(f.Class)
	ev := f.Evidence
	peak := t.keyPeak(hottest)
	if t.Index != "" {
		return t.adviseIndexKey(c, hottest.Key, peak)
	}
	r := report.Recommendation{Kind: report.AdviceGSI}
	few := fmt.Sprintf("Only %d partition key values carry this traffic", ev.DistinctPartitionKeys)
	if ev.DistinctPartitionKeys == 1 {
		few = "One partition key value carries all this traffic"
	}
	if !t.tooFewKeys(f) {
		few = fmt.Sprintf("%d values (%s) carry nearly all traffic", len(ev.Keys), strings.Join(ev.Keys, ", "))
	}
	if t.gsiSharded(c, hottest) {
		r.SuffixCount = t.suffixCount(c, peak)
		r.Example = suffixExample(hottest.Key, r.SuffixCount)
		r.Text = fmt.Sprintf("%s: make a high-cardinality attribute (the item's own id) the partition key and move this attribute to a GSI, sharded as %s because its hottest value would be hot there too.",
			few, r.Example)
		return r
	}
	r.Text = fmt.Sprintf("%s: make a high-cardinality attribute (the item's own id) the partition key and move this attribute to a GSI for the queries that need it.", few)
	return r
}

// gsiSharded reports whether the GSI a status-like key moves to must be
// sharded: its hottest value would be a hot key there, or at risk of the
// ceiling (an index partition has the same ceilings, and every write of
// the value is a write of the index).
func (t *table) gsiSharded(c traffic.Class, hottest *sketch.KeyStat) bool {
	return t.share(c, hottest) >= t.s.Threshold || t.severity(c, t.keyPeak(hottest), 0).Pages()
}

// adviseRekey recommends the entity id as partition key and the time in the
// sort key, with the key rewritten as an example.
func adviseRekey(key string, m TimeMatch) report.Recommendation {
	prefix, when, rest := key[:m.Start], key[m.Start:m.End], key[m.End:]
	example := fmt.Sprintf("pk %s<entity id>, sk %s%s", prefix, when, rest)
	return report.Recommendation{
		Kind:    report.AdviceRekey,
		Example: example,
		Text: fmt.Sprintf("Keys like %s put all current traffic on the newest %s's partition: make the entity id the partition key and move the time into the sort key (%s), then query one entity by time range.",
			quoteKey(key), shapeNoun(m.Shape), example),
	}
}

// adviseShard recommends write sharding for the heaviest write key, the
// likeliest tenant of a hot shard that no hot key accounts for.
func (t *table) adviseShard(shard string, share, rate float64) report.Recommendation {
	key := "<key>"
	peak := rate
	if top := t.ranked(traffic.Write); len(top) > 0 {
		key, peak = top[0].Key, max(rate, t.keyPeak(&top[0]))
	}
	n := t.suffixCount(traffic.Write, peak)
	return report.Recommendation{
		Kind:        report.AdviceWriteSharding,
		SuffixCount: n,
		Example:     suffixExample(key, n),
		Text: fmt.Sprintf("One physical partition (shard %s) takes %s of the writes, and no single key accounts for it: spread its heaviest keys, starting with %s, over %d keys with a random suffix (%s); reads must then fan out over %s.",
			shard, pct(share), quoteKey(key), n, suffixExample(key, n), allKeys(n)),
	}
}

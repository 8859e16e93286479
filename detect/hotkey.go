package detect

import (
	"fmt"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// keyFindings applies the two per-key rules to class c:
//
//   - hot_key: the key's share of the class's units is at least Threshold,
//     and the class is above the traffic floor;
//   - partition_limit: the key's rate is at least LimitFraction of one
//     partition's ceiling, whatever its share. No floor: such a rate is
//     never idle.
//
// A key can get both: the share says the design concentrates traffic, the
// ceiling says throttling is close, and alerts can tell them apart by kind.
func (t *table) keyFindings(c ingest.Class) []report.Finding {
	var out []report.Finding
	active := t.active(c)
	for _, k := range t.ranked(c) {
		share := t.share(c, &k)
		rate := t.rate(k.Units)
		hot := active && share >= t.s.Threshold
		ceiling := t.nearCeiling(c, rate)
		if !hot && !ceiling {
			break // keys are ranked: no lighter key is hot or near the ceiling
		}
		ev := &report.Evidence{
			WindowSeconds: t.seconds,
			Units:         k.Units,
			ClassUnits:    t.Classes[c].Units,
			Limit:         t.limit(c),
			SortKeys:      k.SortKeys,
		}
		if hot {
			e := *ev
			e.Summary = fmt.Sprintf("%s carries %s of the %s's %s units (threshold %s), %s %s/s.",
				quoteKey(k.Key), pct(share), t.noun(), c, pct(t.s.Threshold), num(rate), unitName(c))
			out = append(out, report.Finding{
				Kind: report.KindHotKey, Key: k.Key, Class: c.String(),
				Severity: t.severity(c, rate), Share: share, UnitsPerSecond: rate,
				Recommendation: t.adviseKey(c, &k, share, rate), Evidence: &e,
			})
		}
		if ceiling {
			e := *ev
			e.Summary = fmt.Sprintf("%s runs at %s %s/s, %s of one partition's %s %s/s ceiling (alarm at %s).",
				quoteKey(k.Key), num(rate), unitName(c), pct(rate/t.limit(c)), num(t.limit(c)), unitName(c), pct(t.s.LimitFraction))
			out = append(out, report.Finding{
				Kind: report.KindPartitionLimit, Key: k.Key, Class: c.String(),
				Severity: report.SeverityCritical, Share: share, UnitsPerSecond: rate,
				Recommendation: t.adviseKey(c, &k, share, rate), Evidence: &e,
			})
		}
	}
	return out
}

// noun names the entry in sentences: "table" or "index".
func (t *table) noun() string {
	if t.Index != "" {
		return "index"
	}
	return "table"
}

// suffixCount is the number of keys a hot key is spread over so that each
// runs at most Headroom of a partition's ceiling:
// N = max(2, ceil(rate / (limit × headroom))).
func (t *table) suffixCount(c ingest.Class, rate float64) int {
	n := ceilInt(rate / (t.limit(c) * t.s.Headroom))
	return max(2, n)
}

// adviseKey picks the fix for a hot key:
//
//   - cache: a read-hot single item (one sort key, or none known) — spreading
//     the key does not spread reads of one item;
//   - calculated_suffix: a hot item collection (many sort keys) — the suffix
//     is hash(sort key) mod N, so a point read still knows its one key;
//   - write_sharding: otherwise (a write-hot single item such as a counter) —
//     a random suffix, and reads fan out over the N keys.
func (t *table) adviseKey(c ingest.Class, k *sketch.KeyStat, share, rate float64) *report.Recommendation {
	who := t.subject(k.Key)
	switch {
	case c == ingest.Read && k.SortKeys <= 1:
		return &report.Recommendation{
			Kind: report.AdviceCache,
			Text: fmt.Sprintf("%s is one item read at %s RCU/s (%s of reads): serve it from DAX or an application cache, because spreading the key does not spread reads of one item.",
				capitalize(who), num(rate), pct(share)),
		}
	case k.SortKeys > 1:
		n := t.suffixCount(c, rate)
		return &report.Recommendation{
			Kind:        report.AdviceCalculatedSuffix,
			SuffixCount: n,
			Example:     suffixExample(k.Key, n),
			Text: fmt.Sprintf("Store the items of %s under %s with suffix = hash(sort key) mod %d: its %s sort keys spread over %d partitions, a read of one item computes its suffix and stays a single request, and only a query over the whole collection fans out over %s.",
				who, suffixExample(k.Key, n), n, about(k.SortKeys), n, allKeys(n)),
		}
	default:
		n := t.suffixCount(c, rate)
		return &report.Recommendation{
			Kind:        report.AdviceWriteSharding,
			SuffixCount: n,
			Example:     suffixExample(k.Key, n),
			Text: fmt.Sprintf("Write %s as %s with a random suffix so its %s %s/s spread over %d partitions; reads must then fan out over %s and combine the results.",
				who, suffixExample(k.Key, n), num(rate), unitName(c), n, allKeys(n)),
		}
	}
}

// subject names a key in advice, saying when it is an index's key.
func (t *table) subject(key string) string {
	if t.Index != "" {
		return fmt.Sprintf("the %s index key %s", t.Index, quoteKey(key))
	}
	return "key " + quoteKey(key)
}

// suffixExample is the key rewritten with suffixes 0 .. n-1, e.g.
// "USER#1#0 .. USER#1#3".
func suffixExample(key string, n int) string {
	return fmt.Sprintf("%s#0 .. %s#%d", key, key, n-1)
}

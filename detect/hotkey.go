package detect

import (
	"fmt"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// keyFindings applies the two per-key rules to class c:
//
//   - hot_key: the key's share of the class's units is at least Threshold,
//     and the class is above the traffic floor. Live, a key whose share of
//     the last few seconds is at least Threshold is hot too, so a key that
//     has just turned hot is seen before the window's share catches up;
//   - partition_limit: the key's busiest second is at least LimitFraction
//     of one partition's ceiling, whatever its share. No floor: such a rate
//     is never idle.
//
// A key can get both; diagnose makes them one diagnosis.
func (t *table) keyFindings(c traffic.Class) []report.Finding {
	var out []report.Finding
	active := t.active(c)
	// Keys are ranked by units, but a lighter key can have the busier
	// second or the larger recent share: every tracked key is judged.
	for i := range t.ranked(c) {
		k := &t.ranked(c)[i]
		share := t.share(c, k)
		recent, fresh := t.recentShare(c, k)
		rate, peak := t.rate(k.Units), t.keyPeak(k)
		hot := active && (share >= t.s.Threshold || fresh && recent >= t.s.Threshold)
		ceiling := t.nearCeiling(c, peak)
		if !hot && !ceiling {
			continue
		}
		sev := t.keySeverity(c, k.Key, peak)
		ev := &report.Evidence{
			WindowSeconds:      t.seconds,
			Units:              k.Units,
			ClassUnits:         t.Classes[c].Units,
			Limit:              t.limit(c),
			SortKeys:           k.SortKeys,
			PeakUnitsPerSecond: peak,
			Throttled:          t.throttledOf(c, k.Key),
			KeyRangeThrottled:  t.keyRangeThrottled(c, k.Key),
		}
		if hot {
			e := *ev
			e.Summary = fmt.Sprintf("%s carries %s of the %s's %s units (threshold %s), %s %s/s, peak %s %s/s.",
				quoteKey(k.Key), pct(share), t.noun(), c, pct(t.s.Threshold), num(rate), unitName(c), num(peak), unitName(c))
			if share < t.s.Threshold {
				e.Summary = fmt.Sprintf("%s carries %s of the %s's %s units over the last seconds (threshold %s), %s of the window's, peak %s %s/s.",
					quoteKey(k.Key), pct(recent), t.noun(), c, pct(t.s.Threshold), pct(share), num(peak), unitName(c))
			}
			out = append(out, report.Finding{
				Kind: report.KindHotKey, Key: k.Key, Class: c.String(), Severity: sev,
				Share: share, UnitsPerSecond: rate, PeakUnitsPerSecond: peak, Evidence: &e,
			})
		}
		if ceiling {
			e := *ev
			e.Summary = fmt.Sprintf("%s peaks at %s %s/s, %s of one partition's %s %s/s ceiling (alarm at %s).",
				quoteKey(k.Key), num(peak), unitName(c), pct(peak/t.limit(c)), num(t.limit(c)), unitName(c), pct(t.s.LimitFraction))
			out = append(out, report.Finding{
				Kind: report.KindPartitionLimit, Key: k.Key, Class: c.String(), Severity: sev,
				Share: share, UnitsPerSecond: rate, PeakUnitsPerSecond: peak, Evidence: &e,
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

// subject names a key in advice, saying when it is an index's key.
func (t *table) subject(key string) string {
	if t.Index != "" {
		return fmt.Sprintf("the %s index key %s", t.Index, quoteKey(key))
	}
	return "key " + quoteKey(key)
}

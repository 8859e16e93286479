package detect

import (
	"fmt"
	"math"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/ingest"
)

// timeOrdered finds a table whose partition keys are dates or timestamps.
// It is judged on traffic, not on one value: of the units of the class's
// tracked (heaviest) keys, the share on keys that MatchTime recognises must
// reach TimeOrderedShare. The tracked keys are the sample because they are
// what the sketches know by name; with keys of even traffic they are a
// fair sample, and with skewed traffic they are the keys that matter. The
// finding's Share is that fraction. Such a design sends all current traffic to the newest
// value's partition, however many partitions the table has.
//
// A bare epoch number is also a plausible numeric id, so it counts only
// when it lies within EpochMaxSkewDays of the window's end (when the window
// has one): a timestamp key records about now, an id does not.
//
// At most one finding per table, for the class with the larger time-shaped
// share (writes on a tie).
func (t *table) timeOrdered() (report.Finding, bool) {
	var best report.Finding
	found := false
	for _, c := range []ingest.Class{ingest.Write, ingest.Read} {
		if !t.active(c) {
			continue
		}
		var total, units float64
		var keys []string
		var first TimeMatch
		var firstUnits float64
		for _, k := range t.ranked(c) {
			total += k.Units
			m, ok := MatchTime(k.Key)
			if !ok || !t.plausible(m) {
				continue
			}
			if len(keys) == 0 {
				first, firstUnits = m, k.Units
			}
			units += k.Units
			if len(keys) < 5 {
				keys = append(keys, k.Key)
			}
		}
		if len(keys) == 0 {
			continue
		}
		share := math.Min(units/total, 1)
		if share < t.s.TimeOrderedShare || (found && share <= best.Share) {
			continue
		}
		rate := t.rate(firstUnits)
		best = report.Finding{
			Kind:           report.KindTimeOrderedKey,
			Key:            keys[0],
			Class:          c.String(),
			Severity:       t.severity(c, rate),
			Share:          share,
			UnitsPerSecond: rate,
			Recommendation: adviseRekey(keys[0], first),
			Evidence: &report.Evidence{
				Summary: fmt.Sprintf("%s of the %s units of the %s's heaviest keys go to keys shaped like %ss (heaviest %s).",
					pct(share), c, t.noun(), shapeNoun(first.Shape), quoteKey(keys[0])),
				WindowSeconds: t.seconds,
				Units:         units,
				ClassUnits:    t.Classes[c].Units,
				Keys:          keys,
				Shape:         first.Shape,
			},
		}
		found = true
	}
	return best, found
}

// plausible reports whether a match is taken for a time: always for
// formatted dates, and for bare epoch numbers only near the window.
func (t *table) plausible(m TimeMatch) bool {
	if m.Shape != ShapeEpochSeconds && m.Shape != ShapeEpochMillis {
		return true
	}
	if t.s.EpochMaxSkewDays == 0 || t.End.IsZero() {
		return true
	}
	skew := math.Abs(t.End.Sub(m.Time).Hours() / 24)
	return skew <= t.s.EpochMaxSkewDays
}

// adviseRekey recommends the entity id as partition key and the time in the
// sort key, with the key rewritten as an example.
func adviseRekey(key string, m TimeMatch) *report.Recommendation {
	prefix, when, rest := key[:m.Start], key[m.Start:m.End], key[m.End:]
	example := fmt.Sprintf("pk %s<entity id>, sk %s%s", prefix, when, rest)
	return &report.Recommendation{
		Kind:    report.AdviceRekey,
		Example: example,
		Text: fmt.Sprintf("Keys like %s put all current traffic on the newest %s's partition: make the entity id the partition key and move the time into the sort key (%s), then query one entity by time range.",
			quoteKey(key), shapeNoun(m.Shape), example),
	}
}

// shapeNoun names a shape in a sentence.
func shapeNoun(shape string) string {
	switch shape {
	case ShapeDate, ShapeCompactDate:
		return "date"
	case ShapeMonth:
		return "month"
	case ShapeEpochSeconds, ShapeEpochMillis:
		return "epoch timestamp"
	}
	return "timestamp"
}

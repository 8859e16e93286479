package detect

import (
	"fmt"
	"math"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/traffic"
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
	for _, c := range []traffic.Class{traffic.Write, traffic.Read} {
		if !t.active(c) {
			continue
		}
		var total, units, firstUnits, firstPeak float64
		var keys []string
		var first TimeMatch
		sev := report.SeverityInfo
		for i := range t.ranked(c) {
			k := &t.ranked(c)[i]
			total += k.Units
			m, ok := t.timeKey(k.Key)
			if !ok {
				continue
			}
			peak := t.keyPeak(k)
			if len(keys) == 0 {
				first, firstUnits, firstPeak = m, k.Units, peak
			}
			units += k.Units
			// Each date key takes all traffic of its time: the severity
			// is that of the busiest of them, the newest as a rule.
			sev = sev.Max(t.keySeverity(c, k.Key, peak))
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
		best = report.Finding{
			Kind:               report.KindTimeOrderedKey,
			Key:                keys[0],
			Class:              c.String(),
			Severity:           sev,
			Share:              share,
			UnitsPerSecond:     t.rate(firstUnits),
			PeakUnitsPerSecond: firstPeak,
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

// timeKey reports whether a partition key is taken for a date or timestamp,
// and where its time part is.
func (t *table) timeKey(key string) (TimeMatch, bool) {
	m, ok := MatchTime(key)
	return m, ok && t.plausible(m)
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

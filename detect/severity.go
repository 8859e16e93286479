package detect

import (
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// severity judges a peak of class c against one partition's ceiling:
// critical from LimitFraction or when the key was throttled in its key
// range in the window (keyRange: its throttled calls that are its
// partition's, not the table's capacity's), warning from WarnFraction,
// info below. A share alone is never urgent: a key with a third of 2 WCU/s
// throttles nobody, and a key throttled with all the others because the
// table is short of capacity is no hotter for it.
func (t *table) severity(c traffic.Class, peak float64, keyRange uint64) report.Severity {
	switch limit := t.limit(c); {
	case keyRange > 0 || peak >= t.s.LimitFraction*limit:
		return report.SeverityCritical
	case peak >= t.s.WarnFraction*limit:
		return report.SeverityWarning
	}
	return report.SeverityInfo
}

// keySeverity is the severity of a key's busiest second, or critical when
// it was throttled in its key range.
func (t *table) keySeverity(c traffic.Class, key string, peak float64) report.Severity {
	return t.severity(c, peak, t.keyRangeThrottled(c, key))
}

// nearCeiling reports whether a peak is within LimitFraction of the
// partition ceiling of class c: the partition_limit rule.
func (t *table) nearCeiling(c traffic.Class, peak float64) bool {
	return peak >= t.s.LimitFraction*t.limit(c)
}

// heldSeverity is the severity a flagged diagnosis keeps in live mode: it
// rises as soon as its peak does, and falls only below the clear band
// (ClearLimitFraction for critical, ClearWarnFraction for warning), so a
// peak hovering at a boundary does not flap. A key throttled in its key
// range stays critical.
func (t *table) heldSeverity(c traffic.Class, was report.Severity, peak float64, keyRange uint64) report.Severity {
	now := t.severity(c, peak, keyRange)
	if now.Rank() <= was.Rank() {
		return now
	}
	limit := t.limit(c)
	switch {
	case was == report.SeverityCritical && peak >= t.s.ClearLimitFraction*limit:
		return report.SeverityCritical
	case was.Rank() <= report.SeverityWarning.Rank() && peak >= t.s.ClearWarnFraction*limit:
		return report.SeverityWarning
	}
	return now
}

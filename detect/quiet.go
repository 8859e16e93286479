package detect

import (
	"fmt"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/internal/plural"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// quiet explains a silence: when the table's heaviest key (by share, of
// either class) is at or above the threshold but no diagnosis is at warning
// or above, it says why — the class is under the traffic floor, the key is
// info only (its peak is far from the ceiling), or (live) a diagnosis at
// warning or above is still being held. pending, when not nil, is the live
// detector's diagnoses that Evaluate made but that are not flagged yet.
func (t *table) quiet(ds, pending []report.Diagnosis) *report.Quiet {
	if hasPaging(ds) {
		return nil
	}
	var best *report.Quiet
	for c := range traffic.Class(traffic.NumClasses) {
		top := t.ranked(c)
		if len(top) == 0 {
			continue
		}
		k := &top[0]
		share := t.share(c, k)
		if share < t.s.Threshold || best != nil && share <= best.Share {
			continue
		}
		best = &report.Quiet{Key: k.Key, Class: c.String(), Share: share, PeakUnitsPerSecond: t.keyPeak(k), Limit: t.limit(c)}
	}
	if best == nil {
		return nil
	}
	c, _ := traffic.ParseClass(best.Class)
	cs := &t.Classes[c]
	ceiling := fmt.Sprintf("its peak of %s %s/s is %s of one partition's %s %s/s",
		num(best.PeakUnitsPerSecond), unitName(c), pct(best.PeakUnitsPerSecond/best.Limit), num(best.Limit), unitName(c))
	switch {
	case !t.active(c):
		best.Reason = report.QuietTrafficFloor
		best.Text = fmt.Sprintf("%s carries %s of the %s's %ss, but the %ss (%s, %s %s/s) are under the traffic floor of %s and %s %s/s, where a share is noise; %s.",
			quoteKey(best.Key), pct(best.Share), t.noun(), c, c, plural.Count(cs.Events, "event"), num(t.rate(cs.Units)), unitName(c),
			plural.Count(t.s.MinEvents, "event"), num(t.s.MinUnitsPerSecond), unitName(c), ceiling)
	case hasPaging(pending):
		best.Reason = report.QuietHolding
		best.Text = fmt.Sprintf("%s carries %s of the %s's %ss and %s; its diagnosis must hold for %s of event time before it is flagged.",
			quoteKey(best.Key), pct(best.Share), t.noun(), c, ceiling, t.s.Hold)
	default:
		best.Reason = report.QuietInfoOnly
		best.Text = fmt.Sprintf("%s carries %s of the %s's %ss, above the %s threshold, but %s, under the %s that warns: info only, never paged.",
			quoteKey(best.Key), pct(best.Share), t.noun(), c, pct(t.s.Threshold), ceiling, pct(t.s.WarnFraction))
	}
	return best
}

// hasPaging reports whether any diagnosis is at warning or above.
func hasPaging(ds []report.Diagnosis) bool {
	for _, d := range ds {
		if d.Severity.Pages() {
			return true
		}
	}
	return false
}

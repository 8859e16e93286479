package detect

import (
	"math"

	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// This file is the one place that reads rates from a snapshot: a key's and
// a class's busiest second, and (live) their units over the last seconds.
// Every rule asks it, so a rate is read one way.
//
// A busiest second is never below the mean over the window (the mean is an
// average of the seconds), so the mean is the floor of every peak: it
// stands in where the counting cannot tell a key's busiest second (a key
// counted exactly only since it entered the candidates may miss some of
// its earlier units, never more than the truth).

// keyPeak is a key's busiest second in the window, in units per second.
func (t *table) keyPeak(k *sketch.KeyStat) float64 {
	return max(k.PeakUnitsPerSecond, t.rate(k.Units))
}

// classPeak is the class's busiest second in the window.
func (t *table) classPeak(c traffic.Class) float64 {
	cs := &t.Classes[c]
	return max(cs.PeakSecondUnits, cs.PeakUnitsPerSecond, t.rate(cs.Units))
}

// recentShare is, in live mode, a key's share of its class's units over
// the last complete second or over the last few (TableSnapshot.RecentSpan),
// whichever is larger, and whether the snapshot tells it: the fast onset
// of a key that has just turned hot, before its share of the whole window
// catches up. Each stretch must pass the traffic floor on its own
// (MinUnitsPerSecond, and MinEvents estimated from the window's units per
// event), so that a share of a handful of accesses is never taken for a
// hot key.
func (t *table) recentShare(c traffic.Class, k *sketch.KeyStat) (float64, bool) {
	if !t.live {
		return 0, false
	}
	cs := &t.Classes[c]
	share, ok := 0.0, false
	judge := func(key, class, seconds float64) {
		if seconds < 1 || class <= 0 || cs.Units <= 0 || class/seconds < t.s.MinUnitsPerSecond ||
			class*float64(cs.Events)/cs.Units < float64(t.s.MinEvents) {
			return
		}
		share, ok = math.Max(share, math.Min(key/class, 1)), true
	}
	if !t.LastSecond.IsZero() {
		judge(k.LastSecondUnits, cs.LastSecondUnits, 1)
	}
	judge(k.RecentUnits, cs.RecentUnits, t.RecentSpan.Seconds())
	return share, ok
}

package detect

import (
	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// This file is the one place that reads rates from a snapshot: a key's and
// a class's busiest second, and (live) their units over the last few
// seconds. Every rule asks it, so a rate is read one way.
//
// A busiest second is never below the mean over the window (the mean is an
// average of the seconds), so the mean is the floor of every peak, and the
// peak where the counting cannot tell one.

// keyPeak is a key's busiest second in the window, in units per second. The
// counting does not keep a per-second peak per key yet, so this is the
// key's mean rate over the window.
func (t *table) keyPeak(k *sketch.KeyStat) float64 {
	return t.rate(k.Units)
}

// classPeak is the class's busiest stretch: the store's sub-window peak
// when it has one, the window's mean otherwise.
func (t *table) classPeak(c ingest.Class) float64 {
	cs := &t.Classes[c]
	return max(cs.PeakUnitsPerSecond, t.rate(cs.Units))
}

// recentShare is, in live mode, a key's share of its class's units over
// the last few complete seconds, and whether the snapshot tells it (with
// enough traffic in those seconds to judge a share on): the fast onset of
// a key that has just turned hot, before its share of the whole window
// catches up. The counting does not report recent units yet.
func (t *table) recentShare(c ingest.Class, k *sketch.KeyStat) (float64, bool) {
	return 0, false
}

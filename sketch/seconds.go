package sketch

import (
	"math"
	"time"
)

// Per-second counts. Every candidate key and every class keeps a ring of
// its units in the last few seconds (the newest second it saw and the ones
// before it) beside per-slot peaks: when a second completes (a later
// second arrives), its units are folded into the peak of the slot the
// second lies in, so the peak over the window is the largest peak of the
// live slots and of the seconds still in the ring, and it expires with its
// slot. A late addition to a second still in the ring folds it again (a
// peak only grows). The ring gives the units of the last complete seconds
// (Config.RecentSeconds) for judging onset.
//
// Everything counts by event time. In a live window a class's ring holds
// every second of the window (Config.classRing) and a key's 8 seconds
// (Config.keyRing): an event of a second older than its ring counts in its
// slot and in no second, never starting the ring over. Over whole files
// (analyze) a class's seconds are kept whole (analyze.go) and a key's ring
// starts over at an older second; analyze counts its reported keys'
// seconds again when its input does not run in time.

// secUnits is a key's units in one second, in quanta. A float32: exact up
// to 2^24 quanta (4 194 304 units in a second, over 1 000 times what one
// partition serves) and within 1e-7 of the sum beyond, never saturating,
// in the 4 bytes a uint32 took (which stopped at 2^30 units).
type secUnits = float32

// secClock places seconds in the slots of a window, for folding completed
// seconds into slot peaks.
type secClock struct {
	slotNanos int64 // slot length; 0 in analyze mode (one slot)
	epoch     int64 // slot number of the current slot
	slots     int
}

// slotOf returns the ring slot second x lies in (the slot of its start),
// or -1 when that slot has left the window.
func (sc *secClock) slotOf(x int64) int {
	if sc.slotNanos == 0 {
		return 0
	}
	if x > math.MaxInt64/int64(time.Second) || x < math.MinInt64/int64(time.Second) {
		return -1
	}
	ep := floorDiv(x*int64(time.Second), sc.slotNanos)
	if ep > sc.epoch || ep <= sc.epoch-int64(sc.slots) {
		return -1
	}
	return slotIndex(ep, sc.slots)
}

// epochOf returns the slot number second x lies in (the slot of its
// start), false when x is too far from 1970 to count in nanoseconds.
func (sc *secClock) epochOf(x int64) (int64, bool) {
	if x > math.MaxInt64/int64(time.Second) || x < math.MinInt64/int64(time.Second) {
		return 0, false
	}
	return floorDiv(x*int64(time.Second), sc.slotNanos), true
}

// floorDiv divides rounding towards minus infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// secWindow says which seconds a snapshot reads: [from, to] for peaks, the
// recent span [recentFrom, ref-1] and the last complete second ref-1.
type secWindow struct {
	from, to   int64
	recentFrom int64
	ref        int64
}

// read returns the peak, the recent units and the last complete second's
// units of a ring whose newest second is newest.
func read[T secUnits | float64](sw *secWindow, ring []T, newest, mask int64) (peak, recent, last T) {
	for x := newest - mask; x <= newest; x++ {
		v := ring[x&mask]
		if x >= sw.from && x <= sw.to {
			peak = max(peak, v)
		}
		if x >= sw.recentFrom && x < sw.ref {
			recent = sum(recent, v)
		}
		if x == sw.ref-1 {
			last = v
		}
	}
	return peak, recent, last
}

// addSecond adds units in second sec to the class's per-second ring.
func (cs *classSketch) addSecond(sec int64, units float64, sc *secClock) {
	mask := int64(len(cs.ring) - 1)
	if sec == cs.sec {
		cs.ring[sec&mask] += units
		return
	}
	if sc.slotNanos != 0 && sec <= cs.sec-mask-1 {
		// A live window's second older than the ring (only past
		// maxClassRing seconds): counted in its slot, in no second.
		return
	}
	fold := func(x int64, v float64) {
		if s := sc.slotOf(x); s >= 0 {
			cs.peak[s] = max(cs.peak[s], v)
		}
		if x == cs.headSec {
			cs.headUnits = v
		}
	}
	if !ringAdvance(cs.ring, &cs.sec, sec, mask, fold) {
		cs.ring[sec&mask] += units
		cs.headSec = min(cs.headSec, sec)
		fold(sec, cs.ring[sec&mask])
		return
	}
	cs.ring[sec&mask] = units
	if !cs.seen || sec < cs.headSec {
		cs.headSec, cs.headUnits, cs.seen = sec, units, true
	}
}

package sketch

import (
	"math"
	"math/bits"
	"slices"
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
	// tail is how many complete seconds before the last one the snapshot
	// carries besides it (TableSnapshot.Tail): 0 but when the judged
	// second jumped since the caller's previous picture (collector.keep).
	tail int64
}

// tailOf returns the units of the tail seconds sw carries, oldest first,
// from a ring whose newest second is newest: the seconds before the last
// complete one that the ring knows, so the result ends at ref-2 and starts
// no earlier than the ring's oldest second (a second newer than the ring's
// newest had none; one older than the ring holds is not known and left
// out). Nil when sw carries no tail or the ring knows none of it.
func tailOf[T secUnits | float64](sw *secWindow, ring []T, newest, mask int64) []float64 {
	if sw.tail <= 0 {
		return nil
	}
	first := max(sw.ref-1-sw.tail, newest-mask)
	last := sw.ref - 2
	if first > last {
		return nil
	}
	out := make([]float64, last-first+1)
	for x := first; x <= min(last, newest); x++ {
		out[x-first] = float64(ring[x&mask])
	}
	return out
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

// ringLen is the length of the per-second rings for recentSeconds: the
// current second and the complete ones before it, rounded up to a power of
// two.
func ringLen(recentSeconds int) int { return 1 << bits.Len(uint(recentSeconds)) }

// ringAdvance moves a per-second ring whose newest second is *newest to
// sec, when sec is newer, or when it is older than the ring holds (then the
// ring starts over at sec: one log read after another, each counted second
// by second). It calls done for the seconds that complete and clears the
// entries it reuses; it reports false, changing nothing, when sec is an
// older second still in the ring.
func ringAdvance[T secUnits | float64](ring []T, newest *int64, sec, mask int64, done func(int64, T)) bool {
	old := *newest
	if sec < old && sec > old-mask-1 {
		return false
	}
	done(old, ring[old&mask])
	if sec > old && sec-old <= mask {
		for x := old + 1; x <= sec; x++ {
			ring[x&mask] = 0
		}
	} else {
		clear(ring)
	}
	*newest = sec
	return true
}

func slotIndex(epoch int64, slots int) int {
	i := int(epoch % int64(slots))
	if i < 0 {
		i += slots
	}
	return i
}

// mergeSeconds merges the per-second ring and head of another input (ob,
// on, oh, ou) into a ring (ring, newest, head, headUnits; has says whether
// it holds anything yet) by second: the seconds either holds add up, the
// result keeps the newer newest second and the earlier head, and every
// second that is complete in the result is folded, with its sum, by fold
// (folding is a maximum, so seconds folded before cost nothing).
func mergeSeconds[T secUnits | float64](ring []T, newest, head *int64, headUnits *T, has bool, ob []T, on, oh int64, ou T, fold func(int64, T)) {
	mask := int64(len(ring) - 1)
	var pts []secPoint[T]
	if has {
		pts = secPoints(pts, ring, *newest, mask, *head, *headUnits)
	}
	own := len(pts)
	for _, p := range secPoints(nil, ob, on, mask, oh, ou) {
		i := slices.IndexFunc(pts[:own], func(q secPoint[T]) bool { return q.sec == p.sec })
		if i < 0 {
			pts = append(pts, p)
			continue
		}
		pts[i].v = sum(pts[i].v, p.v)
	}
	n, h := on, oh
	if has {
		n, h = max(*newest, on), min(*head, oh)
	}
	clear(ring)
	var hv T
	for _, p := range pts {
		if p.sec > n-mask-1 && p.sec <= n {
			ring[p.sec&mask] = p.v
		}
		if p.sec == h {
			hv = p.v
		}
		if p.sec < n {
			fold(p.sec, p.v)
		}
	}
	*newest, *head, *headUnits = n, h, hv
}

// secPoint is one second's units.
type secPoint[T secUnits | float64] struct {
	sec int64
	v   T
}

// secPoints appends the seconds a ring holds, and its head second when the
// ring no longer does.
func secPoints[T secUnits | float64](dst []secPoint[T], ring []T, newest, mask, head int64, headUnits T) []secPoint[T] {
	for x := newest - mask; x <= newest; x++ {
		dst = append(dst, secPoint[T]{x, ring[x&mask]})
	}
	if head <= newest-mask-1 || head > newest {
		dst = append(dst, secPoint[T]{head, headUnits})
	}
	return dst
}

// sum adds.
func sum[T secUnits | float64](a, b T) T { return a + b }

// clock is where a Put or Snapshot stands in time: the slot number and the
// second of the Store's clock (live mode; both 0 in analyze mode).
type clock struct {
	epoch, sec int64
}

// floorMod is a modulo b, b > 0, in [0, b).
func floorMod(a, b int64) int64 { return (a%b + b) % b }

package analyze

import (
	"bytes"
	"encoding/binary"
	"math"
	"time"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/internal/app/config"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Replaying a busy table costs about as much as counting it, and most
// tables of a log have no incident at all. A table (with its indexes) is
// not replayed when the detector provably raises nothing in it, whatever
// the moment (and what is never raised never needs clearing): no throttled
// call, no stream shard, no key that reads as a time, no key's busiest
// second near LimitFraction of the ceiling, and in every window and every
// recent span an evaluation could judge while the class passes the
// traffic floor, every key's share under the threshold and keys enough
// for the class's peak. A key's units over a span are bounded by the sum
// of each second's heaviest key's; screenMargin covers the sketch's
// estimates, which may overcount a key by 0.07 % of the window's units.

// screenMargin is taken off the threshold and off LimitFraction: the
// screen passes a table only clearly under them.
const screenMargin = 0.01

// secondStat is one second of one class of one table entry: its units
// (quarter units), events, distinct keys and heaviest key's units.
type secondStat struct {
	sec             int64
	units, heavy    uint64
	events, distinc uint32
	// keys are its keys' units, by their hashes (incOrder.hash: one a
	// key of the entry).
	keys []keyUnits
}

// keyUnits is one key's units in one second.
type keyUnits struct {
	hash, units uint64
}

// quiet reports whether the detector flags nothing in g (one table and
// its indexes, loaded and sorted), so that it needs no replay.
//
// Judged once a second (step 1) with a hold of a second or more, a key is
// flagged only when reported by two evaluations in a row: one span alone
// over the threshold is then let through.
func (l *incidentLog) quiet(g *incGroup, p config.Pipeline, step int64) bool {
	s := p.Detect
	// Nothing raised, nothing to clear: the threshold, not the clear one.
	share := s.Threshold - screenMargin
	if share <= 0 || s.HandfulKeys <= 0 || s.HandfulShare/float64(s.HandfulKeys) <= share {
		return false
	}
	stats, ok := secondStats(g)
	if !ok {
		return false
	}
	window := p.Sketch.Window
	if window <= 0 {
		window = sketch.DefaultWindow
	}
	span := int64(window / time.Second)
	recent := int64(p.Sketch.RecentSeconds)
	if recent <= 0 {
		recent = sketch.DefaultRecentSeconds
	}
	// The replay's last evaluation judges the step that holds the
	// group's last second, and none after (replay).
	end := g.last + step - 1
	for key, ss := range stats {
		limit := s.WriteLimit
		if key.class == traffic.Read {
			limit = s.ReadLimit
		}
		if !quietClass(ss, span, recent, end, share, limit, s, step == 1 && s.Hold >= time.Second) {
			return false
		}
	}
	return true
}

// quietClass checks one class of one table entry: every window and every
// recent span (the last recent seconds) an evaluation could judge.
// Evaluated at a time e from second j's to the next event's (to end at
// most, the replay's last evaluation), a span of L seconds holds the event
// seconds after e − L (after the first, at the start): the spans ending at
// j start from the first second after ss[j].sec − L to the first after
// eMax − L.
func quietClass(ss []secondStat, span, recent, end int64, share, limit float64, s detect.Settings, tolerant bool) bool {
	from := func(j int, after int64) int { // the first of ss[..j] after a second
		i := j
		for i > 0 && ss[i-1].sec > after {
			i--
		}
		return i
	}
	hotBefore := false
	win := windowSums{sums: map[uint64]uint64{}}
	for j := range ss {
		if float64(ss[j].heavy)/quantum >= (s.LimitFraction-screenMargin)*limit {
			return false
		}
		eMax := min(ss[j].sec+span, end)
		if j+1 < len(ss) {
			eMax = ss[j+1].sec - 1
		}
		// A window holds up to one slot more than its span.
		longest := from(j, ss[j].sec-span-span/12-1)
		win.slide(ss, longest, j)
		var events, maxUnits uint64
		var maxDistinct uint32
		// perUnit bounds the window's events per quarter unit, by which
		// the detector estimates a span's events (detect/peaks.go): a
		// span of fewer is not judged on its own.
		perUnit := 0.0
		for k := longest; k <= j; k++ {
			events += uint64(ss[k].events)
			maxUnits, maxDistinct = max(maxUnits, ss[k].units), max(maxDistinct, ss[k].distinc)
			if ss[k].units > 0 {
				perUnit = max(perUnit, float64(ss[k].events)/float64(ss[k].units))
			} else {
				perUnit = math.Inf(1)
			}
		}
		judged := func(units uint64) bool { return float64(units)*perUnit >= float64(s.MinEvents) }
		if events < s.MinEvents {
			hotBefore = false
			continue // under the traffic floor: no window here is judged
		}
		required := math.Ceil(float64(maxUnits) / quantum / limit)
		if 0.95*float64(maxDistinct) < s.CardinalityFactor*max(required, 1)+1 {
			return false
		}
		last, floored := flooredFrom(ss, longest, from(j, eMax-span), j, s.MinEvents)
		// A share counts only in an evaluation whose window is over the
		// traffic floor: one from ss[longest..last] on.
		hot := floored && (hotWindow(ss, longest, last, j, share) && win.hot(ss, last, j, share) ||
			!quietRecent(ss, from(j, ss[j].sec-recent), from(j, eMax-recent), j, share, judged) ||
			judged(ss[j].units) && float64(ss[j].heavy) >= share*float64(ss[j].units)) // the last second alone
		// A key is flagged once reported by evaluations a hold apart
		// and by every one between: by two in a row at least. The
		// evaluations from second j to the next event's are one in a
		// row when j's traffic is followed at once by more.
		if hot && (!tolerant || hotBefore || eMax > ss[j].sec) {
			return false
		}
		hotBefore = hot
	}
	return true
}

// hotWindow reports whether a key's share of a window ss[i..j], for i
// from first to last, could reach share: a key's units are at most the
// seconds' heaviest keys'.
func hotWindow(ss []secondStat, first, last, j int, share float64) bool {
	var units, heavy uint64
	for k := j; k >= first; k-- {
		units += ss[k].units
		heavy += ss[k].heavy
		if k <= last && units > 0 && float64(heavy) >= share*float64(units) {
			return true
		}
	}
	return false
}

// flooredFrom returns the last i, from first to last, whose window
// ss[i..j] holds minEvents events or more; false if none does: windows
// under the traffic floor are not judged on their shares.
func flooredFrom(ss []secondStat, first, last, j int, minEvents uint64) (int, bool) {
	var events uint64
	for k := j; k >= first; k-- {
		events += uint64(ss[k].events)
		if k <= last && events >= minEvents {
			return k, true
		}
	}
	return 0, false
}

// windowSums holds every key's units over ss[lo..hi], the longest window
// ending at hi, by their hashes (keys that share a hash add up: more, never
// less), and top, at least the heaviest key's: a window that ends at hi
// and starts from lo on holds no more of any key.
type windowSums struct {
	sums   map[uint64]uint64
	lo, hi int
	top    uint64
	filled bool
}

// slide moves the window to ss[lo..hi]: lo and hi never go back. top stays
// an upper bound as keys leave.
func (w *windowSums) slide(ss []secondStat, lo, hi int) {
	for ; !w.filled || w.hi < hi; w.filled = true {
		if w.filled {
			w.hi++
		}
		for _, ku := range ss[w.hi].keys {
			n := w.sums[ku.hash] + ku.units
			w.sums[ku.hash] = n
			w.top = max(w.top, n)
		}
	}
	for ; w.lo < lo; w.lo++ {
		for _, ku := range ss[w.lo].keys {
			if n := w.sums[ku.hash] - ku.units; n > 0 {
				w.sums[ku.hash] = n
			} else {
				delete(w.sums, ku.hash)
			}
		}
	}
}

// hot reports whether a key's share of a window ss[i..j], for i from the
// window's lo to last, could reach share: a key holds at most its units
// over ss[lo..j], a window at least the units of ss[last..j].
func (w *windowSums) hot(ss []secondStat, last, j int, share float64) bool {
	var units uint64
	for k := last; k <= j; k++ {
		units += ss[k].units
	}
	if units == 0 {
		return true
	}
	if float64(w.top) < share*float64(units) {
		return false
	}
	w.top = 0
	for _, n := range w.sums {
		w.top = max(w.top, n)
	}
	return float64(w.top) >= share*float64(units)
}

// quietRecent reports whether every key's share of the spans ss[i..j],
// for i from first to last, is under share where the span is judged.
func quietRecent(ss []secondStat, first, last, j int, share float64, judged func(units uint64) bool) bool {
	sums := map[uint64]uint64{}
	var units, heaviest uint64
	for k := j; k >= first; k-- {
		units += ss[k].units
		for _, ku := range ss[k].keys {
			sums[ku.hash] += ku.units
			heaviest = max(heaviest, sums[ku.hash])
		}
		if k <= last && judged(units) && float64(heaviest) >= share*float64(units) {
			return false
		}
	}
	return true
}

// classKey names one class of one table entry.
type classKey struct {
	entry uint16
	class traffic.Class
}

// secondStats adds g's records up by class of table entry and second;
// false when a record rules the screen out (throttled, of a stream shard,
// a key that reads as a time).
func secondStats(g *incGroup) (map[classKey][]secondStat, bool) {
	out := map[classKey][]secondStat{}
	// The run of records of one key in one second: its key, units, and
	// the second it adds to.
	var prev []byte
	var run uint64
	var runOf classKey
	var runSec int64
	var runHash uint64
	runAt := -1
	flush := func() {
		if runAt < 0 {
			return
		}
		st := &out[runOf][runAt]
		st.distinc++
		st.heavy = max(st.heavy, run)
		st.keys = append(st.keys, keyUnits{runHash, run})
	}
	for pos := 0; pos < len(g.recs); pos += incHead + int(g.recs[pos+15]) {
		rec := g.recs[pos:]
		if rec[12]&incThrottled != 0 || binary.LittleEndian.Uint16(rec[10:]) != 0 {
			return nil, false
		}
		key := classKey{binary.LittleEndian.Uint16(rec[8:]), traffic.Class(rec[12] & incClass)}
		sec := int64(binary.LittleEndian.Uint32(rec))
		ss := out[key]
		if len(ss) == 0 || ss[len(ss)-1].sec != sec {
			ss = append(ss, secondStat{sec: sec})
			out[key] = ss
		}
		st := &ss[len(ss)-1]
		q := uint64(binary.LittleEndian.Uint32(rec[4:]))
		st.units += q
		st.events++
		pk := rec[incHead : incHead+int(rec[15])]
		if len(pk) == 0 {
			continue // keyless: in the units only
		}
		if runAt >= 0 && key == runOf && sec == runSec && bytes.Equal(pk, prev) {
			run += q
			continue
		}
		flush()
		if _, ok := detect.MatchTime(string(pk)); ok {
			return nil, false
		}
		prev, run, runOf, runSec, runAt, runHash = pk, q, key, sec, len(ss)-1, g.hash(rec)
	}
	flush()
	return out, true
}

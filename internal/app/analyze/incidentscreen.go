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
	// from and to are where the second's records are in the group's
	// (of every class: secondKeys reads this one's).
	from, to uint32
}

// keyUnits is one key's units in one second.
type keyUnits struct {
	hash, units uint64
}

// secondKeys reads one class's keys of a second from the group's records,
// where a bound does not settle a span (quietClass): the keys' units of
// every second are as many as the records, and are not kept.
type secondKeys struct {
	g   *incGroup
	key classKey
	buf []keyUnits
}

// of returns the units of each key of st's second by its hash
// (incGroup.hash: one a key of the entry), valid until the next call.
func (r *secondKeys) of(st *secondStat) []keyUnits {
	r.buf = r.buf[:0]
	var prev []byte
	recs := r.g.recs
	for pos := int(st.from); pos < int(st.to); pos += incHead + int(recs[pos+15]) {
		rec := recs[pos:]
		n := int(rec[15])
		if n == 0 || (classKey{binary.LittleEndian.Uint16(rec[8:]), traffic.Class(rec[12] & incClass)}) != r.key {
			continue
		}
		pk, q := rec[incHead:incHead+n], uint64(binary.LittleEndian.Uint32(rec[4:]))
		if len(r.buf) > 0 && bytes.Equal(pk, prev) {
			r.buf[len(r.buf)-1].units += q
			continue
		}
		r.buf = append(r.buf, keyUnits{r.g.hash(rec), q})
		prev = pk
	}
	return r.buf
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
		keys := &secondKeys{g: g, key: key}
		if !quietClass(ss, keys, span, recent, end, share, limit, s, step == 1 && s.Hold >= time.Second) {
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
func quietClass(ss []secondStat, keys *secondKeys, span, recent, end int64, share, limit float64, s detect.Settings, tolerant bool) bool {
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
		hot := floored && (hotWindow(ss, longest, last, j, share) && win.slide(ss, keys, longest, j).hot(ss, last, j, share) ||
			!quietRecent(ss, keys, from(j, ss[j].sec-recent), from(j, eMax-recent), j, share, judged) ||
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

// slide moves the window to ss[lo..hi] and returns it: lo and hi never
// go back. top stays an upper bound as keys leave. A window past the last
// one is made anew: the window is slid only where a bound does not settle
// a span (quietClass).
func (w *windowSums) slide(ss []secondStat, keys *secondKeys, lo, hi int) *windowSums {
	if !w.filled || lo > w.hi {
		clear(w.sums)
		w.lo, w.hi, w.top, w.filled = lo, lo, 0, true
		w.add(keys.of(&ss[lo]))
	}
	for w.hi < hi {
		w.hi++
		w.add(keys.of(&ss[w.hi]))
	}
	for ; w.lo < lo; w.lo++ {
		for _, ku := range keys.of(&ss[w.lo]) {
			if n := w.sums[ku.hash] - ku.units; n > 0 {
				w.sums[ku.hash] = n
			} else {
				delete(w.sums, ku.hash)
			}
		}
	}
	return w
}

// add adds one second's keys to the window.
func (w *windowSums) add(keys []keyUnits) {
	for _, ku := range keys {
		n := w.sums[ku.hash] + ku.units
		w.sums[ku.hash] = n
		w.top = max(w.top, n)
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
// for i from first to last, is under share where the span is judged: at
// once when the seconds' heaviest keys' units added up are under it (a key
// holds no more), else by every key's units.
func quietRecent(ss []secondStat, keys *secondKeys, first, last, j int, share float64, judged func(units uint64) bool) bool {
	var units, heavy uint64
	bounded := true
	for k := j; k >= first && bounded; k-- {
		units += ss[k].units
		heavy += ss[k].heavy
		bounded = k > last || !judged(units) || float64(heavy) < share*float64(units)
	}
	if bounded {
		return true
	}
	sums := map[uint64]uint64{}
	var heaviest uint64
	units = 0
	for k := j; k >= first; k-- {
		units += ss[k].units
		for _, ku := range keys.of(&ss[k]) {
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
// a key that reads as a time). Each second's keys are read again from the
// records where they are needed (secondKeys).
func secondStats(g *incGroup) (map[classKey][]secondStat, bool) {
	out := map[classKey][]secondStat{}
	// The run of records of one key in one second: its units, and the
	// second it adds to.
	var run uint64
	var runOf classKey
	runAt := -1
	flush := func() {
		if runAt >= 0 {
			st := &out[runOf][runAt]
			st.distinc++
			st.heavy = max(st.heavy, run)
		}
	}
	pos := 0
	ok := walkRuns(g, func(rec []byte, key classKey, sec int64, starts bool) bool {
		ss := out[key]
		if len(ss) == 0 || ss[len(ss)-1].sec != sec {
			ss = append(ss, secondStat{sec: sec, from: uint32(pos)})
			out[key] = ss
		}
		n := incHead + int(rec[15])
		st := &ss[len(ss)-1]
		st.to = uint32(pos + n)
		pos += n
		q := uint64(binary.LittleEndian.Uint32(rec[4:]))
		st.units += q
		st.events++
		switch {
		case starts:
			flush()
			if _, ok := detect.MatchTime(string(rec[incHead:n])); ok {
				return false
			}
			run, runOf, runAt = q, key, len(ss)-1
		case rec[15] > 0:
			run += q
		}
		return true
	})
	if !ok {
		return nil, false
	}
	flush()
	return out, true
}

// walkRuns calls f with each record of g (sorted), its class of table
// entry and second, and whether it starts a run of records of one key in
// one second (false for the rest of the run and for a keyless record, in
// the units only), until f returns false; false when f did, or a record
// rules the screen out (throttled, of a stream shard).
func walkRuns(g *incGroup, f func(rec []byte, key classKey, sec int64, starts bool) bool) bool {
	var prev []byte
	var prevKey classKey
	prevSec := int64(-1)
	for pos := 0; pos < len(g.recs); pos += incHead + int(g.recs[pos+15]) {
		rec := g.recs[pos:]
		if rec[12]&incThrottled != 0 || binary.LittleEndian.Uint16(rec[10:]) != 0 {
			return false
		}
		key := classKey{binary.LittleEndian.Uint16(rec[8:]), traffic.Class(rec[12] & incClass)}
		sec := int64(binary.LittleEndian.Uint32(rec))
		pk := rec[incHead : incHead+int(rec[15])]
		starts := len(pk) > 0 && !(sec == prevSec && key == prevKey && bytes.Equal(pk, prev))
		if starts {
			prev, prevKey, prevSec = pk, key, sec
		}
		if !f(rec, key, sec, starts) {
			return false
		}
	}
	return true
}

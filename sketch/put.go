package sketch

import (
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/zeebo/xxh3"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// maxEventUnits is the most units an event may carry: the most one
// DynamoDB call consumes of one table (traffic.MaxUnits). Totals of such
// events stay far from the float limit.
const maxEventUnits = max(traffic.MaxBatchGetUnits, traffic.MaxBatchWriteUnits)

// noiseEvery is how many updates of a class pass between refreshes of its
// noise floor (62 probes of 4 cells each: well under 0.1 ns per update).
const noiseEvery = 4096

// addEvents adds a run of this table's events (or, with idx, the events
// events[idx[k]]) whose key hashes are hs. A live window counts each event
// in the slot and the second of its time (now, a Unix second, for an event
// without one), moving its head ahead for newer events and counting those
// older than the window as late (t.late). It returns the number of events
// it drops: of an unknown class, or a day past now.
//
// This is the counting core's hot loop: one pass, the common case (a
// traffic event whose key is a candidate) in the loop, its key's lookup
// included, and in addKey; the rest (throttled calls, shards, the first
// key of a class, keys that are not candidates, a new second) in functions
// of their own, so that the compiler keeps the loop's state in registers.
// The class totals add up in registers for each run of events of one
// second. The events of a batch share their source's bytes, so sources
// compare by pointer and length first, without a call (as runLen does). Splitting the counting of a key out of the loop (addKey) costs
// about 25 instructions an update (cachegrind, BenchmarkPut: 541 → 566),
// the price of no function over 80 lines (docs/bench/sketch.md).
func (t *table) addEvents(events []traffic.Event, idx []int32, hs []uint64, now int64) (bad uint64) {
	var units [traffic.NumClasses]float64
	var counts [traffic.NumClasses]uint64
	analyze := t.cfg.Window == 0
	s := t.cur
	// sec is the second of the events whose totals add up in units and
	// counts; noSecond until a live event placed one.
	sec := int64(noSecond)
	if analyze {
		sec = 0
	}
	var src string
	for k, h := range hs {
		var e *traffic.Event
		if idx == nil {
			e = &events[k]
		} else {
			e = &events[idx[k]]
		}
		c := e.Class
		if c >= traffic.NumClasses {
			bad++
			continue
		}
		var es int64
		if analyze {
			es = t.eventSecond(e)
		} else {
			es = now
			if !e.Time.IsZero() {
				es = e.Time.Unix()
			}
			if len(e.Source) != len(src) || unsafe.StringData(e.Source) != unsafe.StringData(src) && e.Source != src {
				src = e.Source
				t.noteSource(src)
			}
			if es != sec {
				t.addTotals(units, counts, sec, s)
				units, counts = [traffic.NumClasses]float64{}, [traffic.NumClasses]uint64{}
				var p placing
				if s, p = t.enter(es, now, src); p != placed {
					sec = noSecond
					if p == placedAhead {
						bad++
					}
					continue
				}
				sec = es
			}
		}
		u := e.Units
		if e.Throttled || e.Shard != "" || !(u >= 0 && u <= maxEventUnits) {
			var traffic bool
			if u, traffic = t.addSpecial(e, s, es); !traffic {
				if !e.Throttled {
					bad++
				}
				continue
			}
		}
		if analyze {
			t.classes[c].addSecond(es, u, &t.sc)
			if !e.Time.IsZero() {
				t.exact.add(c, es, u)
			}
		}
		units[c] += u
		counts[c]++
		if e.PK == "" {
			continue
		}
		cand := t.classes[c].cand
		if cand == nil {
			cand = t.newCandidates(c)
		}
		t.addKey(cand, cand.find(h, e.PK), e, h, u, s, es)
	}
	t.addTotals(units, counts, sec, s)
	return bad
}

// addKey counts u units of e, an event with a key (hashed to h), in slot
// s and second es: exactly when the key is the candidate id of cand, else
// as a miss (id < 0).
//
// A candidate is counted exactly and skips the count-min sketch (an
// "augmented sketch", Roy et al. 2016): its traffic is written back when it
// is evicted, so the sketch stays an upper bound for every key that is not
// a candidate, the heaviest keys do not add to the noise of the others, and
// most accesses of a skewed workload cost one lookup. A hit is counted here
// rather than in methods of the candidates: a call would cost more than the
// counting (every register is reloaded after it).
func (t *table) addKey(cand *candidates, id int, e *traffic.Event, h uint64, u float64, s int, es int64) {
	q := toQuanta(u)
	var skBit uint32
	if e.SK != "" {
		skBit = sortKeyBit(e.SK, xxh3.HashString)
	}
	if id < 0 {
		t.miss(&t.classes[e.Class], e.PK, h, q, skBit, es)
		return
	}
	r := &cand.rec[id]
	var kc *slotCount
	if p := cand.posOf(id, s); p != 0 {
		kc = &cand.col[s][p-1]
	} else {
		kc = cand.place(id, s)
	}
	first := kc.events == 0
	r.total += uint64(q)
	if n := kc.units + q; n >= q {
		kc.units = n
	} else {
		cand.addOver(id, s, q)
	}
	if kc.events != math.MaxUint32 {
		kc.events++
	} else {
		cand.countOver(id, s)
	}
	kc.sk |= skBit
	if r.sec == es {
		if r.ext == 0 {
			cand.addNewest(id, &r.secQ, q)
		} else {
			cand.addNewest(id, &cand.xring[int(r.ext-1)*int(cand.ringMask+1)+int(es&cand.ringMask)], q)
		}
	} else {
		cand.second(id, es, q, &t.sc)
	}
	if pos := int(r.heapPos); 2*pos+1 < len(cand.heap) {
		cand.down(pos)
	}
	// A candidate already counted in this slot is in the slot's
	// distinct-key set: skip it.
	if first && t.distinct != nil {
		t.distinct.add(s, h)
		t.distinctDirty = true
	}
}

// placing is how the events of a new second of a live window are let in
// (enter).
type placing uint8

const (
	placed      placing = iota // counted in their slot
	placedLate                 // older than the window
	placedAhead                // further past now than maxAheadSeconds
)

// enter readies a live window for the events of a new second es (place)
// and returns its slot, or why they are not counted: late (counted in
// t.late, as events of src), or so far ahead that they must not move the
// window (a time no reader lets through: the daemon refuses times minutes
// ahead).
//
//go:noinline
func (t *table) enter(es, now int64, src string) (int, placing) {
	if es > now+maxAheadSeconds {
		return 0, placedAhead
	}
	s, ok := t.place(es)
	if !ok {
		t.addLate(src)
		return 0, placedLate
	}
	return s, placed
}

// noSecond marks "no second yet" in addEvents.
const noSecond = math.MinInt64

// maxAheadSeconds is how far past the Store's clock a live event's time
// may be: a window never moves further ahead (a backstop; the daemon's
// event check refuses times a few minutes ahead as bad_time). Such
// events are dropped and counted in Store.Dropped.
const maxAheadSeconds = 24 * 60 * 60

// place readies a live window to count an event of second es: it starts
// the window there (the table's first event), moves the head ahead to it
// when it is newer, and returns its slot, or false when es is older than
// the window (late) or too far from 1970 to place.
//
//go:noinline
func (t *table) place(es int64) (int, bool) {
	ep, ok := t.sc.epochOf(es)
	if !ok {
		return 0, false
	}
	if t.fresh {
		t.begin(ep, es)
	}
	t.began = min(t.began, es)
	t.advance(ep, es)
	if ep <= t.epoch-int64(t.cfg.SubWindows) {
		return 0, false
	}
	return slotIndex(ep, t.cfg.SubWindows), true
}

// begin starts a live window at the slot ep and second es of its first
// event.
func (t *table) begin(ep, es int64) {
	t.fresh = false
	t.epoch, t.cur, t.sec = ep, slotIndex(ep, t.cfg.SubWindows), es
	t.sc.epoch = ep
	for c := range t.classes {
		t.classes[c].sec, t.classes[c].headSec = es, es
	}
}

// noteSource remembers that source fed the table.
//
//go:noinline
func (t *table) noteSource(source string) {
	if !slices.Contains(t.sources, source) {
		t.sources = append(t.sources, strings.Clone(source))
	}
}

// addLate counts a late event of source.
//
//go:noinline
func (t *table) addLate(source string) {
	if n := len(t.late); n > 0 && t.late[n-1].source == source {
		t.late[n-1].n++
		return
	}
	t.late = append(t.late, lateCount{source: source, n: 1})
}

// addSpecial counts what an event has besides its units and key, in slot
// s and second sec, the event's: a throttled call (never traffic), a stream shard's
// record. It returns the
// units to count and whether the event is traffic: an event whose units
// are not a number one call can consume is not (readers and the daemon
// check them, traffic.CheckEvent; here a NaN or a 1e308 must not reach
// the totals all the same).
//
//go:noinline
func (t *table) addSpecial(e *traffic.Event, s int, sec int64) (units float64, traffic bool) {
	if e.Throttled {
		t.addThrottled(e, s)
		return 0, false
	}
	units = e.Units
	if !(units >= 0 && units <= maxEventUnits) {
		return 0, false
	}
	if e.Shard != "" {
		t.addShard(e.Shard, s, sec)
	}
	return units, true
}

// newCandidates makes class c's candidate set, on its first key.
//
//go:noinline
func (t *table) newCandidates(c traffic.Class) *candidates {
	cand := newCandidates(t.cfg.Candidates, t.cfg.SubWindows, t.cfg.keyRing())
	t.classes[c].cand = cand
	return cand
}

// addTotals adds a run's class totals to slot s and, in live mode, to the
// second sec.
func (t *table) addTotals(units [traffic.NumClasses]float64, events [traffic.NumClasses]uint64, sec int64, s int) {
	for c := range t.classes {
		if events[c] == 0 {
			continue
		}
		cs := &t.classes[c]
		cs.units[s] += units[c]
		cs.events[s] += events[c]
		if t.cfg.Window > 0 {
			cs.addSecond(sec, units[c], &t.sc)
		}
	}
}

// eventSecond returns the second an event counts in over whole files: its
// own time's, or for an event without a time the newest second seen. It
// keeps the earliest and latest event times.
func (t *table) eventSecond(e *traffic.Event) int64 {
	if e.Time.IsZero() {
		return t.sec
	}
	if t.first.IsZero() || e.Time.Before(t.first) {
		t.first = e.Time
	}
	if e.Time.After(t.last) {
		t.last = e.Time
		t.sec = e.Time.Unix()
	}
	return e.Time.Unix()
}

// miss counts an access of a key that is not a candidate: it becomes one,
// or goes into the count-min sketch.
func (t *table) miss(cs *classSketch, key string, h uint64, q, skBit uint32, sec int64) {
	s := t.cur
	cand := cs.cand
	// The previous generation still overlaps the window unless the current
	// slot is the last of the current generation.
	prevSlot := t.cfg.SubWindows - 1
	if s == prevSlot {
		prevSlot = -1
	}
	if !cand.full() {
		t.admitNew(cs, key, h, q, skBit, sec, prevSlot)
		return
	}
	if cs.cms == nil || t.distinct == nil {
		t.overflow(cs)
	}
	// Admission discounts the typical noise of an estimate: a key whose
	// estimate is mostly the noise of the keys it shares cells with would
	// evict a key with exact counts and churn the bottom of the set. Which
	// keys are admitted changes no bound: every estimate stays an upper
	// bound and its Error says by how much at most.
	if cs.sinceNoise++; cs.sinceNoise >= noiseEvery {
		cs.sinceNoise = 0
		cs.noiseCur, cs.noisePrev = cs.cms.noise()
	}
	floor := uint64(cs.noiseCur)
	if prevSlot >= 0 {
		floor += uint64(cs.noisePrev)
	}
	// Before this access: the key stays out when its estimate does not
	// beat the smallest candidate by more than the noise.
	curEst, prevEst, added := cs.cms.observe(h, q, prevSlot >= 0, cand.minTotal()+floor)
	if added {
		t.distinct.add(s, h)
		t.distinctDirty = true
		return
	}
	if prevSlot < 0 {
		prevEst = 0
	}
	t.evict(cs)
	t.distinct.add(s, h)
	t.distinctDirty = true
	// The key becomes a candidate with this access, counted exactly from
	// here: the sketch's estimates bound only its earlier traffic.
	cand.admit(h, t.heldKey(cs, h, key), s, q, skBit, satAdd(curEst, q), prevEst, prevSlot, sec)
}

// admitNew admits a key to a candidate set that is not full: with no
// traffic before this access when the class has no count-min sketch (every
// key of the class in the window is a candidate), or with the sketch's
// estimates.
func (t *table) admitNew(cs *classSketch, key string, h uint64, q, skBit uint32, sec int64, prevSlot int) {
	s := t.cur
	if t.distinct != nil {
		t.distinct.add(s, h)
		t.distinctDirty = true
	}
	curEst, prevEst := uint32(0), uint32(0)
	if cs.cms != nil {
		curEst, prevEst = cs.cms.estimates(h)
		if prevSlot < 0 {
			prevEst = 0
		}
	}
	cs.cand.admit(h, t.heldKey(cs, h, key), s, q, skBit, satAdd(curEst, q), prevEst, prevSlot, sec)
}

// heldKey returns the copy of key, hashed to h, that class cs holds: the
// other class's when it holds the key, so that a key read and written is
// held once; else a new one (the package's heldKey).
func (t *table) heldKey(cs *classSketch, h uint64, key string) string {
	for c := range t.classes {
		o := t.classes[c].cand
		if &t.classes[c] == cs || o == nil {
			continue
		}
		if id := o.find(h, key); id >= 0 {
			return o.keys[id]
		}
	}
	return heldKey(key, h)
}

// evict writes the exact traffic of the smallest candidate, the next to be
// evicted, back into its count-min generations.
func (t *table) evict(cs *classSketch) {
	vh, vCur, vPrev := cs.cand.exactParts(cs.cand.minID(), t.cur)
	if vCur > 0 {
		cs.cms.add(vh, vCur)
	}
	if vPrev > 0 {
		cs.cms.addPrev(vh, vPrev)
	}
}

// overflow readies a class whose candidate set is full for keys beyond it:
// the count-min sketch of the class and the table's per-slot distinct-key
// sets, filled with the candidates' keys of each slot.
func (t *table) overflow(cs *classSketch) {
	if cs.cms == nil {
		cs.cms = newGenCMS(t.cfg.Depth, t.cfg.Width, t.generation())
		cs.noiseCur, cs.noisePrev, cs.sinceNoise = 0, 0, 0
	}
	if t.distinct != nil {
		return
	}
	t.distinct = newDistinct(t.cfg.SubWindows, t.cfg.HLLPrecision)
	t.distinctDirty = true
	for c := range t.classes {
		cand := t.classes[c].cand
		if cand == nil {
			continue
		}
		for id := range cand.n {
			h := cand.rec[id].hash
			for s := range cand.slots {
				if cand.get(id, s).events > 0 {
					t.distinct.add(s, h)
				}
			}
		}
	}
}

func (t *table) addThrottled(e *traffic.Event, s int) {
	th := t.throttles[e.Class]
	if th == nil {
		th = newThrottle(t.cfg.SubWindows)
		t.throttles[e.Class] = th
	}
	th.add(e, s, t.cfg)
}

func (t *table) addShard(shard string, s int, sec int64) {
	if t.shards == nil {
		t.shards = newNamedCounts(t.cfg.MaxShards, t.cfg.SubWindows, false).withSeconds()
	}
	t.shards.addAt(shard, s, sec, &t.sc)
}

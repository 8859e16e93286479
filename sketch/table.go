package sketch

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/axiomhq/hyperloglog"
	"github.com/zeebo/xxh3"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// tableID names a table or one of its indexes.
type tableID struct{ table, index string }

// table holds one table's (or index's) sketches. Its mutex guards all of
// them; Put holds it for a run of the table's events, Snapshot while it
// copies the table out.
//
// A table starts exact: each class's candidate set counts every key and
// the distinct keys are the candidates. The count-min sketch of a class is
// made when its candidate set first fills (Config.Candidates keys in the
// window), the per-slot distinct-key sets when either class's does; both
// are given back once the window no longer holds traffic they counted.
type table struct {
	mu  sync.Mutex
	id  tableID
	cfg *Config

	epoch int64 // slot number (time / slot length) of the current slot
	cur   int   // ring index of the current slot
	sc    secClock
	sec   int64 // newest second: the head of a live window, or events' (analyze)

	// Live windows run on event time. fresh is set until the first event
	// places the window's head; began is the earliest second the window
	// may reach back to (the earlier of the Store's start and the table's
	// first event); sources are the Event.Source values that fed the
	// table, whose watermarks say which seconds are complete (judged).
	fresh   bool
	began   int64
	sources []string
	late    []lateCount // late events of the current Put, by source

	classes [traffic.NumClasses]classSketch

	// distinct is nil while every key in the window is a candidate: the
	// distinct keys are then the candidates.
	distinct      *distinct
	distinctDirty bool
	distinctCache uint64
	distinctEpoch int64 // slot of the last HyperLogLog estimate
	distinctDone  bool  // an estimate was made

	shards *namedCounts
	// throttles holds each class's throttled calls; nil for a class never
	// throttled.
	throttles [traffic.NumClasses]*throttle

	// first and last are the earliest and latest event times, kept in
	// analyze mode only (live windows are bounded by the clock).
	first, last time.Time
	// exact is each class's units of every second, in analyze mode
	// (analyze.go).
	exact *exactSeconds

	// gen counts the changes to the table's counts: each Put of its
	// events, each merge into it, each slot with traffic leaving its
	// window. pic is the picture SnapshotSince last copied out.
	gen uint64
	pic picture

	// active is the Store's sequence number of the last Put that counted
	// here; evicted is set once the Store dropped the table; credit and
	// creditSecs are the events it had refused before it got in, and the
	// seconds they came in, at creditEpoch; arrivals are the seconds in
	// which Puts brought it events, by slot, the last at lastArrival
	// (live windows; evict.go).
	active      uint64
	evicted     bool
	credit      uint64
	creditSecs  uint64
	creditEpoch int64
	arrivals    []arrival
	lastArrival int64
}

// lateCount is a source's late events in one Put.
type lateCount struct {
	source string
	n      uint64
}

// classSketch is one class's window in one table.
type classSketch struct {
	units  []float64 // per slot, exact
	events []uint64  // per slot, exact
	peak   []float64 // per slot: units of the busiest complete second
	ring   []float64 // units per second, the last ringLen seconds
	sec    int64     // newest second of ring
	// headSec is the class's first second and headUnits its units once it
	// has left the ring (see candidates.headSec); seen says there is one.
	headSec   int64
	headUnits float64
	seen      bool
	cms       *genCMS // nil until the candidates first fill
	cand      *candidates
	// noiseCur and noisePrev are the count-min noise floors, refreshed
	// every noiseEvery updates and at each generation flip.
	noiseCur, noisePrev uint32
	sinceNoise          int
}

// maxEventUnits is the most units an event may carry: the most one
// DynamoDB call consumes of one table (traffic.MaxUnits). Totals of such
// events stay far from the float limit.
const maxEventUnits = max(traffic.MaxBatchGetUnits, traffic.MaxBatchWriteUnits)

// noiseEvery is how many updates of a class pass between refreshes of its
// noise floor (62 probes of 4 cells each: well under 0.1 ns per update).
const noiseEvery = 4096

func newTable(id tableID, cfg *Config, epoch, sec int64, slot time.Duration) *table {
	s := cfg.SubWindows
	t := &table{
		id:    id,
		cfg:   cfg,
		epoch: epoch,
		cur:   slotIndex(epoch, s),
		sc:    secClock{slotNanos: int64(slot), epoch: epoch, slots: s},
		sec:   sec,
		fresh: cfg.Window > 0,
		began: sec,
	}
	rl := cfg.classRing()
	for c := range t.classes {
		cs := &t.classes[c]
		cs.units = make([]float64, s)
		cs.events = make([]uint64, s)
		cs.peak = make([]float64, s)
		cs.ring = make([]float64, rl)
		cs.sec = sec
		// A live window's seconds start with the table's; whole files' with
		// the first event's.
		cs.headSec, cs.seen = sec, cfg.Window > 0
	}
	if cfg.Window == 0 {
		t.exact = newExactSeconds()
	}
	return t
}

func slotIndex(epoch int64, slots int) int {
	i := int(epoch % int64(slots))
	if i < 0 {
		i += slots
	}
	return i
}

// advance moves the current slot to epoch, expiring the slots passed over,
// and the newest second to sec. A clock that goes back keeps the current
// slot and second.
func (t *table) advance(epoch, sec int64) {
	t.sec = max(t.sec, sec)
	if epoch <= t.epoch {
		return
	}
	s := t.cfg.SubWindows
	steps := epoch - t.epoch
	if steps > int64(s) {
		steps = int64(s)
	}
	for i := int64(1); i <= steps; i++ {
		t.clearSlot(slotIndex(t.epoch+i, s))
	}
	t.epoch = epoch
	t.cur = slotIndex(epoch, s)
	t.sc.epoch = epoch
	gen := t.generation()
	for c := range t.classes {
		cs := &t.classes[c]
		if cs.cms == nil || gen <= cs.cms.gen {
			continue
		}
		cs.cms.advance(gen)
		if cs.cms.empty() {
			// Nothing in the window lives only in the sketch any more.
			cs.cms = nil
			continue
		}
		cs.noiseCur, cs.noisePrev = cs.cms.noise()
	}
	if t.distinct != nil && t.classes[traffic.Read].cms == nil && t.classes[traffic.Write].cms == nil {
		// Every key in the window is a candidate again.
		t.distinct = nil
		t.distinctDirty = true
	}
}

// generation is the count-min generation of the current slot: generations
// are windows aligned on slot numbers that are multiples of SubWindows, so
// ring slot SubWindows-1 is the last slot of a generation.
func (t *table) generation() int64 {
	s := int64(t.cfg.SubWindows)
	g := t.epoch / s
	if t.epoch < 0 && t.epoch%s != 0 {
		g--
	}
	return g
}

// slotHasTraffic reports whether slot s holds an access or a throttled
// call.
func (t *table) slotHasTraffic(s int) bool {
	if t.classes[traffic.Read].events[s] != 0 || t.classes[traffic.Write].events[s] != 0 {
		return true
	}
	for _, th := range t.throttles {
		if th != nil && th.inSlot(s) {
			return true
		}
	}
	return false
}

func (t *table) clearSlot(s int) {
	if t.slotHasTraffic(s) {
		t.gen++ // traffic leaves the window
	}
	for c := range t.classes {
		cs := &t.classes[c]
		cs.units[s] = 0
		cs.events[s] = 0
		cs.peak[s] = 0
		if cs.cand != nil {
			cs.cand.expire(s)
		}
	}
	if t.distinct != nil {
		t.distinct.clear(s)
	}
	t.distinctDirty = true
	if t.shards != nil {
		t.shards.clear(s)
	}
	for _, th := range t.throttles {
		if th != nil {
			th.clear(s)
		}
	}
}

// addEvents adds a run of this table's events (or, with idx, the events
// events[idx[k]]) whose key hashes are hs. A live window counts each event
// in the slot and the second of its time (now, a Unix second, for an event
// without one), moving its head ahead for newer events and counting those
// older than the window as late (t.late). It returns the number of events
// it drops: of an unknown class, or a day past now.
//
// This is the counting core's hot loop: one pass, the common case (a
// traffic event with a key) in the loop and addKey, the rest (throttled
// calls, shards, the first key of a class, keys that are not candidates, a
// new second) in functions of their own, so that the compiler keeps the
// loop's state in registers. The class totals add up in registers for each
// run of events of one second.
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
			if e.Source != src {
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
		if e.PK != "" {
			t.addKey(c, e, h, u, s, es)
		}
	}
	t.addTotals(units, counts, sec, s)
	return bad
}

// addKey counts u units of an event of class c with a key (e's, hashed to
// h) in slot s and second es.
//
// A candidate is counted exactly and skips the count-min sketch (an
// "augmented sketch", Roy et al. 2016): its traffic is written back when it
// is evicted, so the sketch stays an upper bound for every key that is not
// a candidate, the heaviest keys do not add to the noise of the others, and
// most accesses of a skewed workload cost one lookup. A hit is counted here
// rather than in methods of the candidates: a call would cost more than the
// counting (every register is reloaded after it).
func (t *table) addKey(c traffic.Class, e *traffic.Event, h uint64, u float64, s int, es int64) {
	cand := t.classes[c].cand
	if cand == nil {
		cand = t.newCandidates(c)
	}
	q := toQuanta(u)
	var skBit uint32
	if e.SK != "" {
		skBit = sortKeyBit(e.SK, xxh3.HashString)
	}
	id := cand.find(h, e.PK)
	if id < 0 {
		t.miss(&t.classes[c], e.PK, h, q, skBit, es)
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

// satAdd adds without wrapping.
func satAdd(a, b uint32) uint32 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxUint32
}

// toQuanta converts units to counter quanta, rounding to the nearest
// quarter unit and saturating.
func toQuanta(units float64) uint32 {
	q := units*quantum + 0.5
	if q >= math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(q)
}

// distinctMerge returns the distinct-key count when it is cached or exact,
// or a merged HyperLogLog whose estimate the caller computes outside the
// lock and stores with setDistinct. In live mode the HyperLogLog estimate
// is refreshed at most once per slot: it costs about half a millisecond and
// snapshots come every second. It is called with t.mu held.
func (t *table) distinctMerge() (uint64, *hyperloglog.Sketch) {
	if t.distinct == nil {
		return t.candidateKeys(), nil
	}
	if !t.distinctDirty {
		return t.distinctCache, nil
	}
	if t.cfg.Window > 0 && t.distinctDone && t.distinctEpoch == t.epoch && t.distinct.sketched() {
		return t.distinctCache, nil
	}
	n, merged := t.distinct.merge()
	if merged == nil {
		t.distinctCache, t.distinctDirty = n, false
		return n, nil
	}
	t.distinctDirty = false
	t.distinctEpoch, t.distinctDone = t.epoch, true
	return 0, merged
}

// candidateKeys counts the distinct keys of both classes' candidates, the
// distinct keys of the window while every key is a candidate.
func (t *table) candidateKeys() uint64 {
	r, w := t.classes[traffic.Read].cand, t.classes[traffic.Write].cand
	switch {
	case r == nil && w == nil:
		return 0
	case r == nil:
		return uint64(w.n)
	case w == nil:
		return uint64(r.n)
	}
	n := uint64(r.n)
	for id := range w.n {
		if r.find(w.rec[id].hash, w.keys[id]) < 0 {
			n++
		}
	}
	return n
}

// setDistinct stores an estimate made outside the lock.
func (t *table) setDistinct(n uint64) {
	t.mu.Lock()
	t.distinctCache = n
	t.mu.Unlock()
}

// snapshot copies the table out. sw says which seconds count. It is called
// with t.mu held.
func (t *table) snapshot(tracked int, sw *secWindow, scratch []keyStat) (TableSnapshot, []keyStat) {
	ts := TableSnapshot{Table: t.id.table, Index: t.id.index}
	slotSeconds := time.Duration(t.sc.slotNanos).Seconds()
	for c := range t.classes {
		cs := &t.classes[c]
		st := &ts.Classes[c]
		var peak, slotPeak float64
		for s := range cs.units {
			st.Units += cs.units[s]
			st.Events += cs.events[s]
			peak = max(peak, cs.peak[s])
			slotPeak = max(slotPeak, cs.units[s])
		}
		if slotSeconds > 0 {
			st.PeakUnitsPerSecond = slotPeak / slotSeconds
		}
		p, recent, last := read(sw, cs.ring, cs.sec, int64(len(cs.ring)-1))
		st.PeakSecondUnits = max(peak, p)
		st.RecentUnits, st.LastSecondUnits = recent, last
		ts.Events += st.Events
		if cs.cand == nil {
			continue
		}
		scratch = cs.cand.collect(scratch[:0], sw, tracked)
		st.Top = topOf(scratch, tracked)
	}
	ts.DistinctKeys = t.distinctCache
	if t.exact != nil {
		t.exact.fill(&ts, sw)
	}
	if t.shards != nil {
		for _, kc := range t.shards.collect() {
			ts.Shards = append(ts.Shards, ShardStat{Shard: kc.Key, Records: kc.Count, PeakRecords: uint64(t.shards.peak(int(t.shards.index[kc.Key]), &t.sc))})
		}
	}
	for c, th := range t.throttles {
		if th != nil {
			// Over whole files every key counted is listed: analyze
			// counts again those whose count it cannot tell.
			n := tracked
			if t.cfg.Window == 0 {
				n = -1
			}
			ts.Classes[c].Throttled = th.stats(n)
			ts.ThrottledEvents += ts.Classes[c].Throttled.Events
		}
	}
	return ts, scratch
}

// topOf ranks the candidates and converts the heaviest to KeyStats.
func topOf(all []keyStat, tracked int) []KeyStat {
	slices.SortFunc(all, func(a, b keyStat) int {
		if a.units != b.units {
			return cmp.Compare(b.units, a.units)
		}
		return strings.Compare(a.key, b.key)
	})
	n := 0
	for n < len(all) && n < tracked && all[n].units > 0 {
		n++
	}
	if n == 0 {
		return nil
	}
	top := make([]KeyStat, n)
	for i := range top {
		a := &all[i]
		top[i] = KeyStat{
			Key:                a.key,
			Units:              float64(a.units) / quantum,
			Error:              float64(a.err) / quantum,
			Events:             a.events,
			SortKeys:           a.sortKeys,
			PeakUnitsPerSecond: float64(a.peak) / quantum,
			RecentUnits:        float64(a.recent) / quantum,
			LastSecondUnits:    float64(a.last) / quantum,
		}
	}
	return top
}

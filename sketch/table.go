package sketch

import (
	"sync"
	"time"

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
	// recent holds the events Puts brought in each of the last
	// rateSeconds seconds of the Store's clock (live windows), by second;
	// declared is set while the config declares the table (never
	// evicted), written with the Store's addMu held.
	recent   [rateSeconds]secEvents
	declared bool
}

// rateSeconds is the seconds of the Store's clock over which admission
// weighs a table's recent traffic (evict.go).
const rateSeconds = 8

// secEvents is the events Puts brought a table in one second of the
// Store's clock.
type secEvents struct {
	sec    int64
	events uint64
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

// arrival counts the seconds of one slot in which Puts brought a table
// events.
type arrival struct {
	epoch   int64
	seconds uint32
}

// arrived notes that a Put at brought t events (live mode). It is called
// with t.mu held.
func (t *table) arrived(at clock, slots int, events uint64) {
	r := &t.recent[floorMod(at.sec, rateSeconds)]
	if r.sec != at.sec {
		*r = secEvents{sec: at.sec}
	}
	r.events += events
	if t.arrivals != nil && at.sec == t.lastArrival {
		return
	}
	if t.arrivals == nil {
		t.arrivals = make([]arrival, slots)
	}
	t.lastArrival = at.sec
	a := &t.arrivals[slotIndex(at.epoch, slots)]
	if a.epoch != at.epoch {
		*a = arrival{epoch: at.epoch}
	}
	a.seconds++
}

// recentEvents is the events Puts brought t in the rateSeconds seconds up
// to now (live mode). It is called with t.mu held.
func (t *table) recentEvents(now int64) uint64 {
	var n uint64
	for _, r := range t.recent {
		if r.sec > now-rateSeconds && r.sec <= now {
			n += r.events
		}
	}
	return n
}

// traffic is what the table counted in the window: its events of both
// classes and its throttled calls. It is called with t.mu held.
func (t *table) traffic() uint64 {
	n := t.events()
	for _, th := range t.throttles {
		if th != nil {
			n += th.events()
		}
	}
	return n
}

// events counts the traffic events in the table's window.
func (t *table) events() uint64 {
	var n uint64
	for c := range t.classes {
		for _, e := range t.classes[c].events {
			n += e
		}
	}
	return n
}

// picture is what SnapshotSince last copied out of a table: its version
// and what it was due by.
type picture struct {
	version uint64
	gen     uint64 // table.gen then
	from    int64  // the window's first second
	ref     int64  // the judged second (secWindow.ref)
	clock   int64  // the clock's second
	// recent says the table had traffic in a second it judged as recent,
	// or later: its recent figures change when its judged second moves.
	recent bool
	// traffic says its window held traffic: when it holds none, where the
	// window starts changes nothing it shows.
	traffic bool
}

// due reports whether a table now at cur must be copied out again for a
// caller holding p (see SnapshotSince).
func (p *picture) due(cur picture, everySecond bool) bool {
	switch {
	case cur.from != p.from && p.traffic:
		return true
	case cur.ref != p.ref && (cur.gen != p.gen || p.recent || everySecond):
		return true
	case cur.gen != p.gen && cur.clock >= p.clock+2:
		return true
	}
	return false
}

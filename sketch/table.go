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

	"github.com/hotkeyd/hotkeyd/ingest"
)

// tableID names a table or one of its indexes.
type tableID struct{ table, index string }

// table holds one table's (or index's) sketches. Its mutex guards all of
// them; Put holds it for a run of the table's events, Snapshot while it
// copies the table out.
type table struct {
	mu  sync.Mutex
	id  tableID
	cfg *Config

	epoch int64 // slot number (time / slot length) of the current slot
	cur   int   // ring index of the current slot

	classes [ingest.NumClasses]classSketch

	distinct      *distinct
	distinctDirty bool
	distinctCache uint64
	distinctEpoch int64 // slot of the last HyperLogLog estimate
	distinctDone  bool  // an estimate was made

	shards         *namedCounts
	throttled      *namedCounts
	throttledSlots []uint64

	// first and last are the earliest and latest event times, kept in
	// analyze mode only (live windows are bounded by the clock).
	first, last time.Time
}

// classSketch is one class's window in one table.
type classSketch struct {
	units  []float64 // per slot, exact
	events []uint64  // per slot, exact
	cms    *genCMS
	cand   *candidates
	// noiseCur and noisePrev are the count-min noise floors, refreshed
	// every noiseEvery updates and at each generation flip.
	noiseCur, noisePrev uint32
	sinceNoise          int
}

// noiseEvery is how many updates of a class pass between refreshes of its
// noise floor (62 probes of 4 cells each: well under 0.1 ns per update).
const noiseEvery = 4096

func newTable(id tableID, cfg *Config, epoch int64) *table {
	s := cfg.SubWindows
	t := &table{
		id:             id,
		cfg:            cfg,
		epoch:          epoch,
		cur:            slotIndex(epoch, s),
		distinct:       newDistinct(s, cfg.HLLPrecision),
		throttledSlots: make([]uint64, s),
	}
	for c := range t.classes {
		t.classes[c].units = make([]float64, s)
		t.classes[c].events = make([]uint64, s)
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

// advance moves the current slot to epoch, expiring the slots passed over.
// A clock that goes back keeps the current slot.
func (t *table) advance(epoch int64) {
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
	gen := t.generation()
	for c := range t.classes {
		if cs := &t.classes[c]; cs.cms != nil && gen > cs.cms.gen {
			cs.cms.advance(gen)
			cs.noiseCur, cs.noisePrev = cs.cms.noise()
		}
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

func (t *table) clearSlot(s int) {
	for c := range t.classes {
		cs := &t.classes[c]
		cs.units[s] = 0
		cs.events[s] = 0
		if cs.cand != nil {
			cs.cand.expire(s)
		}
	}
	t.distinct.clear(s)
	t.distinctDirty = true
	if t.shards != nil {
		t.shards.clear(s)
	}
	if t.throttled != nil {
		t.throttled.clear(s)
	}
	t.throttledSlots[s] = 0
}

// addTotals adds a run's class totals to the current slot.
func (t *table) addTotals(units [ingest.NumClasses]float64, events [ingest.NumClasses]uint64) {
	for c := range t.classes {
		t.classes[c].units[t.cur] += units[c]
		t.classes[c].events[t.cur] += events[c]
	}
}

// add counts one event in the current slot, except for the class totals:
// it returns the event's units and whether it is traffic, and the caller
// adds those up for a run of events (a running sum in a register instead
// of a load and store per event on one cell).
func (t *table) add(e *ingest.Event, h uint64) (units float64, traffic bool) {
	if t.cfg.Window == 0 && !e.Time.IsZero() {
		if t.first.IsZero() || e.Time.Before(t.first) {
			t.first = e.Time
		}
		if e.Time.After(t.last) {
			t.last = e.Time
		}
	}
	s := t.cur
	if e.Throttled {
		t.throttledSlots[s]++
		if e.PK != "" {
			if t.throttled == nil {
				t.throttled = newNamedCounts(t.cfg.MaxThrottledKeys, t.cfg.SubWindows, true)
			}
			t.throttled.add(e.PK, s)
		}
		return 0, false
	}
	units = e.Units
	if !(units >= 0) || math.IsInf(units, 1) {
		units = 0 // readers validate; a NaN must not poison the totals
	}
	cs := &t.classes[e.Class]
	if e.Shard != "" {
		if t.shards == nil {
			t.shards = newNamedCounts(t.cfg.MaxShards, t.cfg.SubWindows, false)
		}
		t.shards.add(e.Shard, s)
	}
	if e.PK == "" {
		return units, true
	}
	if cs.cms == nil {
		cs.cms = newGenCMS(t.cfg.Depth, t.cfg.Width, t.generation())
		cs.cand = newCandidates(t.cfg.Candidates, t.cfg.SubWindows)
	}
	q := toQuanta(units)
	skBit := sortKeyBit(e.SK, xxh3.HashString)
	cand := cs.cand
	// A candidate is counted exactly and skips the count-min sketch (an
	// "augmented sketch", Roy et al. 2016): its traffic is written back
	// when it is evicted, so the sketch stays an upper bound for every key
	// that is not a candidate, the heaviest keys do not add to the noise
	// of the others, and most accesses of a skewed workload cost one
	// lookup.
	if id := cand.find(h, e.PK); id >= 0 {
		// A candidate already counted in this slot is in the slot's
		// distinct-key sketch: skip it.
		if cand.hit(id, s, q, skBit) {
			t.distinct.add(s, h)
			t.distinctDirty = true
		}
		return units, true
	}
	t.distinct.add(s, h)
	t.distinctDirty = true
	idx, curEst, prevEst := cs.cms.lookup(h) // before this access
	// The previous generation still overlaps the window unless the current
	// slot is the last of the current generation.
	last := t.cfg.SubWindows - 1
	prevSlot := last
	if s == last {
		prevEst, prevSlot = 0, -1
	}
	if cand.full() {
		// Admission discounts the typical noise of an estimate: a key whose
		// estimate is mostly the noise of the keys it shares cells with would
		// evict a key with exact counts and churn the bottom of the set.
		// Which keys are admitted changes no bound: every estimate stays an
		// upper bound and its Error says by how much at most.
		if cs.sinceNoise++; cs.sinceNoise >= noiseEvery {
			cs.sinceNoise = 0
			cs.noiseCur, cs.noisePrev = cs.cms.noise()
		}
		floor := uint64(cs.noiseCur)
		if prevSlot >= 0 {
			floor += uint64(cs.noisePrev)
		}
		if uint64(curEst)+uint64(q)+uint64(prevEst) <= cand.minTotal()+floor {
			cs.cms.raise(&idx, curEst, q)
			return units, true
		}
		// Write the evicted key's exact traffic back into its generations.
		vh, vCur, vPrev := cand.exactParts(cand.minID(), s)
		if vCur > 0 {
			cs.cms.add(vh, vCur)
		}
		if vPrev > 0 {
			cs.cms.addPrev(vh, vPrev)
		}
	}
	// The key becomes a candidate with this access, counted exactly from
	// here: the sketch's estimates bound only its earlier traffic.
	cand.admit(h, e.PK, s, q, skBit, satAdd(curEst, q), prevEst, prevSlot)
	return units, true
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

// setDistinct stores an estimate made outside the lock.
func (t *table) setDistinct(n uint64) {
	t.mu.Lock()
	t.distinctCache = n
	t.mu.Unlock()
}

// snapshot copies the table out. slotSeconds is the slot length in live
// mode, 0 in analyze mode. It is called with t.mu held.
func (t *table) snapshot(tracked int, slotSeconds float64, scratch []keyStat) (TableSnapshot, []keyStat) {
	ts := TableSnapshot{Table: t.id.table, Index: t.id.index}
	for c := range t.classes {
		cs := &t.classes[c]
		st := &ts.Classes[c]
		var peak float64
		for s := range cs.units {
			st.Units += cs.units[s]
			st.Events += cs.events[s]
			if slotSeconds > 0 {
				peak = max(peak, cs.units[s]/slotSeconds)
			}
		}
		ts.Events += st.Events
		if slotSeconds > 0 {
			st.PeakUnitsPerSecond = peak
		}
		if cs.cand == nil {
			continue
		}
		scratch = cs.cand.collect(scratch[:0])
		st.Top = topOf(scratch, tracked)
	}
	ts.DistinctKeys = t.distinctCache
	if t.shards != nil {
		for _, kc := range t.shards.collect() {
			ts.Shards = append(ts.Shards, ShardStat{Shard: kc.Key, Records: kc.Count})
		}
	}
	if t.throttled != nil {
		ts.Throttled = t.throttled.collect()
		if len(ts.Throttled) > tracked {
			ts.Throttled = ts.Throttled[:tracked]
		}
	}
	for _, n := range t.throttledSlots {
		ts.ThrottledEvents += n
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
			Key:      a.key,
			Units:    float64(a.units) / quantum,
			Error:    float64(a.err) / quantum,
			Events:   a.events,
			SortKeys: a.sortKeys,
		}
	}
	return top
}

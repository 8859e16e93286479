package analyze

import (
	"context"
	"math"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// The busiest second of a key (KeyStat.PeakUnitsPerSecond), its recent
// units and its last second's are exact only for inputs read in time
// order: a store keeps a key's units for its last few seconds only. So
// when the inputs did not run in time (several hosts' logs, a shuffled
// file, parts cut inside a burst) or a key was counted from estimates, the
// units of the keys the report ranks (ClassStats.Top of every table: at
// most Tracked a class) are added up second by second once the inputs are
// read: from the spill of the read's events (spill.go), or by reading the
// inputs again without one (countKeys). It costs 4 bytes a ranked key per
// second in which it has traffic, in blocks of keyBlockLen seconds.

const (
	keyBlockBits = 6
	keyBlockLen  = 1 << keyBlockBits
	keyBlockMask = keyBlockLen - 1
	// quantum is the sketch's resolution: a key's units are counted in
	// quarter units there, so here too.
	quantum = 4
)

// rankedKey names one key of one class of one table.
type rankedKey struct {
	table, index, key string
	class             traffic.Class
}

// keySeconds is one key's units per second, in quarter units, in blocks
// by second >> keyBlockBits, and its totals over the input.
type keySeconds struct {
	blocks map[int64]*[keyBlockLen]uint32
	// units (quarter units) and events are the key's over the input;
	// sortKeys the bits of its sort keys (sketch.SortKeyEstimate).
	units, events uint64
	sortKeys      uint32
}

// count counts one event of q quarter units in second sec, of a sort key
// of bits sk.
func (k *keySeconds) count(sec int64, q, sk uint32) {
	k.add(sec, q)
	k.units += uint64(q)
	k.events++
	k.sortKeys |= sk
}

// add adds q quarter units in second sec.
func (k *keySeconds) add(sec int64, q uint32) {
	n := sec >> keyBlockBits
	b := k.blocks[n]
	if b == nil {
		if k.blocks == nil {
			k.blocks = map[int64]*[keyBlockLen]uint32{}
		}
		b = new([keyBlockLen]uint32)
		k.blocks[n] = b
	}
	p := &b[sec&keyBlockMask]
	*p = satAdd(*p, q)
}

func (k *keySeconds) at(sec int64) uint32 {
	if b := k.blocks[sec>>keyBlockBits]; b != nil {
		return b[sec&keyBlockMask]
	}
	return 0
}

// keyCounter counts the ranked keys' seconds of a part of the inputs
// (package parallel's sink).
type keyCounter struct {
	// keys are the ranked keys. Their entries are made up front and
	// never assigned again: the events' strings are the decoders' buffers,
	// and assigning to a map entry stores the key given.
	keys map[rankedKey]*keySeconds
	// throttled counts every throttled call's key; nil when they were
	// counted exactly the first time.
	throttled *throttleCounter
	// tails adds up every event of the classes whose keys overflowed the
	// store's candidates (tailkeys.go); nil for the others.
	tails map[rankedClass]*tailSketch
}

// newKeyCounter returns a counter of the keys of want and of the tails
// of the classes of tails (both shared, read only).
func newKeyCounter(want map[rankedKey]struct{}, tails map[rankedClass]struct{}) *keyCounter {
	k := &keyCounter{keys: make(map[rankedKey]*keySeconds, len(want))}
	for id := range want {
		k.keys[id] = &keySeconds{}
	}
	if len(tails) > 0 {
		k.tails = make(map[rankedClass]*tailSketch, len(tails))
		for c := range tails {
			k.tails[c] = new(tailSketch)
		}
	}
	return k
}

// join adds what o counted of keys k did not count: k's own counts of a
// key stand (the two counted the same events). Either may be nil.
func (k *keyCounter) join(o *keyCounter) *keyCounter {
	switch {
	case k == nil:
		return o
	case o == nil:
		return k
	}
	for id, ks := range o.keys {
		if k.keys[id] == nil {
			k.keys[id] = ks
		}
	}
	if k.throttled == nil {
		k.throttled = o.throttled
	}
	return k
}

// Put counts the batch's events of ranked keys, each in its second; an
// event without a time counts in none. The events come checked, as the
// store got them.
func (k *keyCounter) Put(_ context.Context, batch []traffic.Event) error {
	gridUnits(batch) // as the first read counted them
	for i := range batch {
		e := &batch[i]
		if e.Throttled && k.throttled != nil {
			k.throttled.add(e)
			continue
		}
		if e.Throttled || e.PK == "" || e.Time.IsZero() || !(e.Units >= 0 && e.Units <= math.MaxFloat64) {
			continue
		}
		pk := e.PK
		if len(pk) > sketch.MaxKeyBytes {
			pk = sketch.HeldKey(pk) // as the report names it
		}
		q := toQuanta(e.Units)
		if ts := k.tails[rankedClass{e.Table, e.Index, e.Class}]; ts != nil {
			ts.add(xxh3.HashString(pk), q)
		}
		id := rankedKey{e.Table, e.Index, pk, e.Class}
		if ks := k.keys[id]; ks != nil {
			ks.count(e.Time.Unix(), q, sortKeyMask(sortKeyBit(e.SK)<<flagSortShift))
		}
	}
	return nil
}

// absorb adds o's seconds.
func (k *keyCounter) absorb(o *keyCounter) {
	if k.throttled != nil && o.throttled != nil {
		k.throttled.absorb(o.throttled)
	}
	for c, ot := range o.tails {
		k.tails[c].absorb(ot)
	}
	for id, os := range o.keys {
		ks := k.keys[id]
		ks.units += os.units
		ks.events += os.events
		ks.sortKeys |= os.sortKeys
		for n, ob := range os.blocks {
			b := ks.blocks[n]
			if b == nil {
				if ks.blocks == nil {
					ks.blocks = map[int64]*[keyBlockLen]uint32{}
				}
				ks.blocks[n] = ob
				continue
			}
			for i, v := range ob {
				b[i] = satAdd(b[i], v)
			}
		}
	}
}

// apply sets the per-second figures of every ranked key of snap from the
// counts: its busiest second, its units over its table's RecentSpan and
// in its LastSecond. Keys the counter does not know keep theirs.
func (k *keyCounter) apply(snap *sketch.Snapshot) {
	for i := range snap.Tables {
		ts := &snap.Tables[i]
		last := ts.LastSecond.Unix()
		recent := int64(ts.RecentSpan / time.Second)
		for c := range ts.Classes {
			top := ts.Classes[c].Top
			for j := range top {
				ks := k.keys[rankedKey{ts.Table, ts.Index, top[j].Key, traffic.Class(c)}]
				if ks == nil {
					continue
				}
				var peak uint32
				for _, b := range ks.blocks {
					for _, v := range b {
						peak = max(peak, v)
					}
				}
				var sum uint64
				var lastQ uint32
				if recent > 0 {
					for s := last - recent + 1; s <= last; s++ {
						sum += uint64(ks.at(s))
					}
					lastQ = ks.at(last)
				}
				top[j].PeakUnitsPerSecond = float64(peak) / quantum
				top[j].RecentUnits = float64(sum) / quantum
				top[j].LastSecondUnits = float64(lastQ) / quantum
			}
		}
	}
}

// rankedKeys returns the keys of snap's classes to count again: every
// ranked key, or with estimatedOnly those whose counts started from
// estimates (Error > 0), the others being exact already.
func rankedKeys(snap sketch.Snapshot, estimatedOnly bool) map[rankedKey]struct{} {
	want := map[rankedKey]struct{}{}
	for _, ts := range snap.Tables {
		for c, cs := range ts.Classes {
			for _, ks := range cs.Top {
				if estimatedOnly && ks.Error == 0 {
					continue
				}
				want[rankedKey{ts.Table, ts.Index, ks.Key, traffic.Class(c)}] = struct{}{}
			}
		}
	}
	return want
}

// toQuanta converts units to quarter units as the sketch does, rounding
// to the nearest and saturating.
func toQuanta(units float64) uint32 {
	q := units*quantum + 0.5
	if q >= math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(q)
}

// satAdd adds without wrapping.
func satAdd(a, b uint32) uint32 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxUint32
}

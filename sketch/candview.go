package sketch

import "math"

// entryView is one candidate taken apart for merging: per slot, the units
// the count-min sketch bounds (est) and those only the entry counted
// (exact), with the rest of its counts.
type entryView struct {
	hash               uint64
	key                string
	est, exact, events []uint64
	sk                 []uint32
	peak               []secUnits
	sec, headSec       int64
	ring               []secUnits
	headUnits          secUnits
	// folds are the complete seconds the merge added up, for the peaks of
	// their slots.
	folds []secPoint[secUnits]
}

// views appends every entry of c, taken apart.
func (c *candidates) views(dst []entryView) []entryView {
	for id := range c.n {
		dst = append(dst, c.view(id))
	}
	return dst
}

// view takes entry id apart.
func (c *candidates) view(id int) entryView {
	r := &c.rec[id]
	v := entryView{
		hash: r.hash, key: c.keys[id],
		est: make([]uint64, c.slots), exact: make([]uint64, c.slots),
		events: make([]uint64, c.slots), sk: make([]uint32, c.slots), peak: make([]secUnits, c.slots),
		sec: r.sec,
	}
	v.headSec, v.headUnits = c.head(id)
	v.ring = make([]secUnits, c.ringMask+1)
	copy(v.ring, c.seconds(id, v.ring))
	estMask, entry, entryQ := c.est(id)
	for j := range c.slots {
		k := c.get(id, j)
		u, e := c.unitsAt(id, j), uint64(0)
		switch {
		case estMask&(1<<j) != 0:
			e = u
		case entry == j:
			e = min(uint64(entryQ), u)
		}
		v.est[j], v.exact[j] = e, u-e
		v.events[j], v.sk[j], v.peak[j] = c.eventsAt(id, j), k.sk, k.peak
	}
	return v
}

func (v *entryView) total() uint64 {
	var n uint64
	for j := range v.est {
		n += v.est[j] + v.exact[j]
	}
	return n
}

// add adds o, the same key's entry in the other input.
func (v *entryView) add(o *entryView) {
	for j := range v.est {
		v.est[j] += o.est[j]
		v.exact[j] += o.exact[j]
		v.events[j] += o.events[j]
		v.sk[j] |= o.sk[j]
		v.peak[j] = max(v.peak[j], o.peak[j])
	}
	mergeSeconds(v.ring, &v.sec, &v.headSec, &v.headUnits, true, o.ring, o.sec, o.headSec, o.headUnits, func(x int64, u secUnits) { v.folds = append(v.folds, secPoint[secUnits]{x, u}) })
}

// addEstimates adds the count-min estimates of m, the other input's, for a
// key it did not count exactly: the current generation's booked to the
// current slot, the previous one's to that generation's last slot while
// it overlaps the window (as on admission).
func (v *entryView) addEstimates(m *genCMS, cur, slots int) {
	c, p := m.estimates(v.hash)
	v.est[cur] += uint64(c)
	if last := slots - 1; cur != last {
		v.est[last] += uint64(p)
	}
}

// exactParts is candidates.exactParts for a view: the exact units of the
// current generation (slots 0..cur) and of the previous one.
func (v *entryView) exactParts(cur int) (curQ, prevQ uint32) {
	var sums [2]uint64
	for j, x := range v.exact {
		if j <= cur {
			sums[0] += x
		} else {
			sums[1] += x
		}
	}
	return uint32(min(sums[0], math.MaxUint32)), uint32(min(sums[1], math.MaxUint32))
}

// insertView adds a view as a new entry of a set that has room. An entry
// keeps one slot that mixes estimate and exact units (its entry slot); any
// further mixed slot has its exact units written into the count-min
// generation of the slot and is flagged an estimate whole, so that the
// sketch bounds every unit the entry does not count exactly.
func (c *candidates) insertView(v *entryView, m *genCMS, cur int, sc *secClock) {
	id := c.n
	c.n++
	c.heap = append(c.heap, int32(id))
	r := &c.rec[id]
	*r = candRec{hash: v.hash, heapPos: int32(id), sec: v.sec}
	c.keys[id] = v.key
	// A merged entry takes an extension: it may span slots and seconds.
	x := c.ext(id)
	for j := range c.slots {
		est, exact := v.est[j], v.exact[j]
		switch {
		case est == 0:
		case exact == 0:
			x.estMask |= 1 << j
		case x.entry < 0:
			x.entry, x.entryQ = int8(j), uint32(min(est, math.MaxUint32))
		default:
			q := uint32(min(exact, math.MaxUint32))
			if j <= cur {
				m.add(v.hash, q)
			} else {
				m.addPrev(v.hash, q)
			}
			x.estMask |= 1 << j
		}
		if v.sk[j] != 0 || v.peak[j] != 0 {
			*c.at(id, j) = slotCount{sk: v.sk[j], peak: v.peak[j]}
		}
		c.setCounts(id, j, est+exact, v.events[j])
		r.total += est + exact
	}
	for _, f := range v.folds {
		if s := sc.slotOf(f.sec); s >= 0 && f.v > c.get(id, s).peak {
			c.at(id, s).peak = f.v
		}
	}
	copy(c.ringOf(id), v.ring)
	delete(c.big, id) // the ring holds the merged seconds
	x.headSec, x.headUnits = v.headSec, v.headUnits
	c.reindex(id)
	c.up(id)
}

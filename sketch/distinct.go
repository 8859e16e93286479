package sketch

import (
	"slices"

	"github.com/axiomhq/hyperloglog"
)

// exactTableSize is the capacity of a slot's exact set: twice exactDistinct,
// rounded to a power of two, so open addressing stays under half full.
const exactTableSize = 2048

// distinct counts the distinct partition keys of each slot of the window.
//
// A slot starts with an exact set of key hashes; past exactDistinct keys it
// moves them into a dense HyperLogLog (axiomhq/hyperloglog). The exact set
// does what the library's sparse mode is for, small tables counted small,
// and does it better: the sparse mode is not exact below 1000 keys (its
// 25-bit sparse index collides: 999 keys may read 998), and between 1000
// and 16 000 keys it re-sorts its compressed list every 163 new keys, which
// took a fifth of the CPU of the cache2k ORM benchmark (30 tables of up to
// 10 000 keys). Past the exact set the dense sketch costs 2^p bytes per
// slot, the bound Footprint counts anyway. Every key is inserted by its
// xxh3 hash (InsertHash), never by bytes, so the exact set and the sketch
// agree and merging never counts a key twice.
type distinct struct {
	precision uint8
	slots     []distinctSlot
}

type distinctSlot struct {
	set []uint64 // open addressing; 0 is free (a zero hash is stored as 1)
	n   int
	hll *hyperloglog.Sketch
}

func newDistinct(slots, precision int) *distinct {
	return &distinct{precision: uint8(precision), slots: make([]distinctSlot, slots)}
}

// add inserts a key hash into slot s.
func (d *distinct) add(s int, h uint64) {
	if sl := &d.slots[s]; sl.hll != nil {
		sl.hll.InsertHash(h)
	} else {
		d.addExact(sl, h)
	}
}

// addExact inserts a key hash into a slot's exact set, which turns into a
// HyperLogLog past exactDistinct keys.
func (d *distinct) addExact(sl *distinctSlot, h uint64) {
	if !sl.insertExact(h) {
		return
	}
	if sl.n > exactDistinct {
		sk, _ := hyperloglog.NewSketch(d.precision, false) // precision checked by Config.Validate
		for _, v := range sl.set {
			if v != 0 {
				sk.InsertHash(v)
			}
		}
		sl.hll = sk
		sl.set = nil
		sl.n = 0
	}
}

// insertExact adds h to the exact set and reports whether it was new.
func (sl *distinctSlot) insertExact(h uint64) bool {
	if h == 0 {
		h = 1
	}
	if sl.n*2 >= len(sl.set) {
		sl.grow()
	}
	m := uint64(len(sl.set) - 1)
	for i := h & m; ; i = (i + 1) & m {
		switch sl.set[i] {
		case h:
			return false
		case 0:
			sl.set[i] = h
			sl.n++
			return true
		}
	}
}

// exactSetSize is the size an exact set has grown to for n keys: 64 slots
// doubled while it would be half full or more.
func exactSetSize(n int) int {
	size := 64
	for n*2 > size && size < exactTableSize {
		size *= 2
	}
	return size
}

func (sl *distinctSlot) grow() {
	old := sl.set
	n := max(64, len(old)*2)
	sl.set = make([]uint64, min(n, exactTableSize))
	sl.n = 0
	m := uint64(len(sl.set) - 1)
	for _, v := range old {
		if v == 0 {
			continue
		}
		i := v & m
		for sl.set[i] != 0 {
			i = (i + 1) & m
		}
		sl.set[i] = v
		sl.n++
	}
}

// clear expires slot s, keeping its memory for reuse.
func (d *distinct) clear(s int) {
	sl := &d.slots[s]
	if sl.hll != nil {
		sl.hll = nil
	}
	clear(sl.set)
	sl.n = 0
}

// estimate returns the distinct keys over the live slots: exact while the
// union holds at most exactDistinct keys, HyperLogLog above.
func (d *distinct) estimate() uint64 {
	n, merged := d.merge()
	if merged != nil {
		return merged.Estimate()
	}
	return n
}

// sketched reports whether a slot has moved to a HyperLogLog.
func (d *distinct) sketched() bool {
	for i := range d.slots {
		if d.slots[i].hll != nil {
			return true
		}
	}
	return false
}

// merge returns the exact count when the live slots hold at most
// exactDistinct keys, and otherwise a HyperLogLog of their union, sharing
// nothing with the slots, whose Estimate the caller computes: at precision
// 14 the library's Estimate takes about half a millisecond, too long to
// hold the table's lock for.
func (d *distinct) merge() (uint64, *hyperloglog.Sketch) {
	if !d.sketched() {
		if n := d.union(); n <= exactDistinct {
			return uint64(n), nil
		}
	}
	return 0, d.sketch()
}

// sketch returns a HyperLogLog of the live slots' union, sharing nothing
// with them.
func (d *distinct) sketch() *hyperloglog.Sketch {
	sk, _ := hyperloglog.NewSketch(d.precision, false)
	for i := range d.slots {
		sl := &d.slots[i]
		if sl.hll != nil {
			_ = sk.Merge(sl.hll) // same precision by construction
			continue
		}
		for _, v := range sl.set {
			if v != 0 {
				sk.InsertHash(v)
			}
		}
	}
	return sk
}

// union counts the distinct hashes of the exact sets, stopping past
// exactDistinct.
func (d *distinct) union() int {
	if len(d.slots) == 1 {
		return d.slots[0].n
	}
	total := 0
	for i := range d.slots {
		total += d.slots[i].n
	}
	size := 64
	for size < 2*min(total, exactDistinct+1) {
		size *= 2
	}
	set := make([]uint64, size)
	m := uint64(size - 1)
	n := 0
	for i := range d.slots {
		for _, v := range d.slots[i].set {
			if v == 0 {
				continue
			}
			j := v & m
			for set[j] != 0 && set[j] != v {
				j = (j + 1) & m
			}
			if set[j] == 0 {
				set[j] = v
				n++
				if n > exactDistinct {
					return n
				}
			}
		}
	}
	return n
}

func (d *distinct) clone() *distinct {
	c := &distinct{precision: d.precision, slots: make([]distinctSlot, len(d.slots))}
	for i, sl := range d.slots {
		c.slots[i] = distinctSlot{set: slices.Clone(sl.set), n: sl.n}
		if sl.hll != nil {
			c.slots[i].hll = sl.hll.Clone()
		}
	}
	return c
}

// absorb adds o's keys, slot by slot: exact sets unite, HyperLogLog
// registers take the maximum.
func (d *distinct) absorb(o *distinct) {
	for s := range d.slots {
		a, b := &d.slots[s], &o.slots[s]
		if b.hll != nil {
			if a.hll == nil {
				h := b.hll.Clone()
				for _, v := range a.set {
					if v != 0 {
						h.InsertHash(v)
					}
				}
				a.hll, a.set, a.n = h, nil, 0
				continue
			}
			_ = a.hll.Merge(b.hll) // same precision by Config.sameShape
			continue
		}
		for _, v := range b.set {
			if v != 0 {
				d.add(s, v)
			}
		}
	}
}

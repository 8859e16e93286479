package sketch

import (
	"math/bits"
	"slices"

	"github.com/axiomhq/hyperloglog"
)

// exactTableSize is the capacity of a slot's exact set: twice exactDistinct,
// rounded to a power of two, so open addressing stays under half full.
const exactTableSize = 2048

// distinct counts the distinct partition keys of each slot of the window.
//
// A slot starts with an exact set of key hashes; past exactDistinct keys it
// moves them into dense HyperLogLog registers, 2^p bytes, each the largest
// rank of the hashes whose top p bits pick it: the registers of a dense
// axiomhq/hyperloglog sketch, updated here in a few instructions instead
// of through the library's InsertHash (about 40 instructions an update
// that misses the candidates, with its call; docs/bench/sketch.md). The
// library stays the estimator and the wire form: a snapshot, a summary
// or a merge hands it the registers (librarySketch), so every estimate
// and every encoding is the library's, from the same registers. The exact
// set does what the library's sparse mode is for, small tables counted
// small, and does it better: the sparse mode is not exact below 1000 keys
// (its 25-bit sparse index collides: 999 keys may read 998), and between
// 1000 and 16 000 keys it re-sorts its compressed list every 163 new keys,
// which took a fifth of the CPU of the cache2k ORM benchmark (30 tables of
// up to 10 000 keys). Past the exact set the registers cost 2^p bytes per
// slot, the bound Footprint counts anyway. Every key is inserted by its
// xxh3 hash, never by bytes, so the exact set and the registers agree and
// merging never counts a key twice.
type distinct struct {
	precision uint8
	slots     []distinctSlot
}

type distinctSlot struct {
	set  []uint64 // open addressing; 0 is free (a zero hash is stored as 1)
	n    int
	regs []uint8 // dense HyperLogLog registers past exactDistinct keys, else nil
}

func newDistinct(slots, precision int) *distinct {
	return &distinct{precision: uint8(precision), slots: make([]distinctSlot, slots)}
}

// add inserts a key hash into slot s.
func (d *distinct) add(s int, h uint64) {
	if sl := &d.slots[s]; sl.regs != nil {
		raise(sl.regs, d.precision, h)
	} else {
		d.addExact(sl, h)
	}
}

// raise inserts hash h into the dense registers regs of precision p, as
// the library's InsertHash does: the register of h's top p bits takes the
// rank of the other bits (one more than their leading zeros, at most
// 65-p), when larger. (The shifts are masked to 63, which p of 4 to 18
// keeps them under, so that they compile to one instruction each.)
func raise(regs []uint8, p uint8, h uint64) {
	i := h >> ((64 - p) & 63)
	r := uint8(bits.LeadingZeros64(h<<(p&63)|1<<((p-1)&63))) + 1
	if i < uint64(len(regs)) && r > regs[i] {
		regs[i] = r
	}
}

// librarySketch returns a dense axiomhq/hyperloglog sketch of precision p
// whose registers are b[8:], 2^p of them, decoded from b as the library's
// own binary form (version 2, dense: a 4-byte header and the register
// count, which librarySketch writes into b[:8], then the registers;
// documented at its UnmarshalBinary, and what replicas' summaries carry),
// so that it estimates and encodes them as its own
// (TestDistinctRegistersAsLibrary). Building the union in b saves a copy.
// The union of 12 dense slots and its sketch take what the library's
// Merge of 12 sketches took (about 0.65 ms at precision 14, run to run).
func librarySketch(b []byte, p uint8) *hyperloglog.Sketch {
	m := len(b) - 8
	copy(b, []byte{2, p, 0, 0, byte(m >> 24), byte(m >> 16), byte(m >> 8), byte(m)})
	var sk hyperloglog.Sketch
	if err := sk.UnmarshalBinary(b); err != nil {
		// Registers raise made always decode; an empty sketch at worst.
		e, _ := hyperloglog.NewSketch(p, false)
		return e
	}
	return &sk
}

// addExact inserts a key hash into a slot's exact set, which turns into
// HyperLogLog registers past exactDistinct keys.
func (d *distinct) addExact(sl *distinctSlot, h uint64) {
	if !sl.insertExact(h) {
		return
	}
	if sl.n > exactDistinct {
		regs := make([]uint8, 1<<d.precision)
		for _, v := range sl.set {
			if v != 0 {
				raise(regs, d.precision, v)
			}
		}
		sl.regs = regs
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
	sl.regs = nil
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
		if d.slots[i].regs != nil {
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
// with them: the registers' maximum over the slots, the exact sets'
// hashes raised into it.
func (d *distinct) sketch() *hyperloglog.Sketch {
	b := make([]byte, 8+1<<d.precision)
	regs := b[8:]
	for i := range d.slots {
		sl := &d.slots[i]
		if sl.regs != nil {
			for j, r := range sl.regs {
				regs[j] = max(regs[j], r)
			}
			continue
		}
		for _, v := range sl.set {
			if v != 0 {
				raise(regs, d.precision, v)
			}
		}
	}
	return librarySketch(b, d.precision)
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
		c.slots[i] = distinctSlot{set: slices.Clone(sl.set), n: sl.n, regs: slices.Clone(sl.regs)}
	}
	return c
}

// absorb adds o's keys, slot by slot: exact sets unite, HyperLogLog
// registers take the maximum.
func (d *distinct) absorb(o *distinct) {
	for s := range d.slots {
		a, b := &d.slots[s], &o.slots[s]
		if b.regs != nil {
			if a.regs == nil {
				regs := slices.Clone(b.regs)
				for _, v := range a.set {
					if v != 0 {
						raise(regs, d.precision, v)
					}
				}
				a.regs, a.set, a.n = regs, nil, 0
				continue
			}
			for j, r := range b.regs {
				a.regs[j] = max(a.regs[j], r) // same precision by Config.sameShape
			}
			continue
		}
		for _, v := range b.set {
			if v != 0 {
				d.add(s, v)
			}
		}
	}
}

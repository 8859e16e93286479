package sketch

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"strings"
)

// candidates counts a bounded set of partition keys exactly, per slot,
// beside the count-min sketch (the "count-min + candidate heap" scheme).
//
// A key enters the set when its count-min window estimate exceeds the
// smallest total in the set, which it evicts. On entry its per-slot counts
// start from the count-min per-slot estimates (upper bounds, flagged in
// estMask) and from then on every access of the key adds to its counts
// exactly. So an estimate never undercounts, overcounts by at most Error
// (the entry estimates still in the window), and becomes exact once the key
// has been a candidate for a whole window. Keys that stay heavy are never
// evicted, so the heaviest keys are exact in steady state; the churn at the
// bottom of the set is why more keys are counted (Candidates) than reported
// (Tracked).
//
// Until the set first fills, every key of the class is a candidate and
// nothing else counts it: the set is the exact count of the class, and it
// grows by doubling from minCapacity, so a small table costs memory in
// proportion to its keys.
//
// Layout, for one cache line per structure on the hot path: the index is
// open addressing on the 64-bit key hash, 4 bytes a slot (16 bits of the
// hash beside the entry id), so that a probe reads one line; an entry's
// hot fields (hash, window total, heap position, newest second) are one
// 40-byte record, which holds no pointer (the keys are an array of their
// own) so that the garbage collector does not scan the records; its
// counts of one slot (units, accesses, sort-key bitmap, per-second peak)
// are 16 bytes of one line. A min-heap on the window totals
// finds the key to evict.
//
// The counts are sparse: a key pays 16 bytes only in the slots it has
// traffic in. Each slot has a column of counts; positions freed by an
// entry that leaves are chained into the column's free list and reused,
// so a column never holds more counts than the set has entries, and a
// slot's column is emptied (or given back) when the slot expires.
//
// Most keys of a table are seen in one slot and one second of the window:
// such an entry keeps the position of its counts, its slot and the units
// of its second in its record, and costs about 90 bytes with its key's
// string header, index slot, counts and share of its key. An entry that
// is seen in a second slot or a second second, or that entered with
// count-min estimates, takes an extension (ext): its positions in every
// slot, its per-second ring, its first second and its estimate flags. Extensions are dense (the last
// moves into the hole of one given back) and name their entry (owner).
type candidates struct {
	slots    int // ring slots of the window
	max      int // capacity once grown (Config.Candidates)
	n        int // entries in use
	ringMask int64

	rec  []candRec
	keys []string // each entry's key, as heldKey returned it
	// col is each slot's column of counts; free the head of its free list
	// (1 + index, 0 for none), chained through the freed counts' units.
	col  [][]slotCount
	free []uint32
	heap []int32 // entry ids, min total first
	// index is open addressing on the key hash: hash>>48<<16 | entry id+1
	// (ids are under 1<<15); 0 is free.
	index []uint32
	imask uint64

	// The extensions of the busier entries, xn of them, each xpos
	// [ext*slots + slot]: 1 + the index of the entry's counts in the
	// slot's column, 0 when it has none there; xring [ext*ringLen +
	// second&ringMask]: units per second, quanta; xrec the rest.
	xn    int
	xpos  []uint16
	xring []secUnits
	xrec  []extRec
	// over holds what an entry's counts of one slot (index entry*slots +
	// slot) hold past their 32 bits: a key's units or accesses in one
	// slot can pass 2^32 quanta (2^30 units) when a slot is long (a whole
	// log in analyze mode, one slot) and the key busy. Nil until a
	// counter first overflows, so that it costs nothing otherwise.
	over map[int]overCount
	// big holds an entry's newest second exactly (quanta) once it passed
	// exactQuanta, where its float32 cell rounds. Nil until then.
	big map[int]uint64
}

// exactQuanta is where a float32 per-second cell stops holding every
// whole number of quanta: 2^24 quanta, 4 194 304 units in one second.
const exactQuanta = 1 << 24

// addNewest adds q quanta to *p, entry id's newest second: in the float32
// while it stays exact, else in big (addBig).
func (c *candidates) addNewest(id int, p *secUnits, q uint32) {
	if v := *p + secUnits(q); v < exactQuanta {
		*p = v
		return
	}
	c.addBig(id, p, q)
}

// addBig adds q quanta to entry id's newest second, *p, counting it
// exactly in big and keeping *p its nearest float32, which completed
// seconds and peaks keep (within 6e-8 of the count).
//
//go:noinline
func (c *candidates) addBig(id int, p *secUnits, q uint32) {
	if c.big == nil {
		c.big = map[int]uint64{}
	}
	n, ok := c.big[id]
	if !ok {
		n = uint64(*p) // below exactQuanta, or rounded already (a merge)
	}
	n += uint64(q)
	c.big[id] = n
	*p = secUnits(n)
}

// overCount is what a slotCount's counters hold past their 32 bits.
type overCount struct{ units, events uint64 }

// candRec is one entry's hot fields, 40 bytes and no pointer. Without an
// extension (ext 0) the entry has counts in one slot at most (slot, at 1 +
// position p in its column; p 0 for none), one second (sec, of secQ
// units), and no estimates.
type candRec struct {
	hash    uint64
	total   uint64 // window units, quanta
	sec     int64  // newest second of the entry's per-second ring
	heapPos int32
	ext     int32    // 1 + the entry's extension, 0 for none
	secQ    secUnits // units of second sec, quanta, without an extension
	p       uint16   // 1 + position of the counts in slot's column, without an extension
	slot    int8
}

// extRec is an extension's fixed part.
type extRec struct {
	// headSec is the entry's first second, and headUnits its units once
	// it has left the ring (while in it, the ring holds them): what Merge
	// needs to add up a second that two inputs split between them.
	headSec   int64
	estMask   uint64 // slots whose units are count-min estimates
	headUnits secUnits
	entryQ    uint32 // estimate part of the entry slot's units
	owner     int32  // entry id
	entry     int8   // slot the key entered in, -1 once it expired
}

// posOf returns 1 + the position of entry id's counts in slot s's
// column, 0 when it has none there.
func (c *candidates) posOf(id, s int) uint16 {
	r := &c.rec[id]
	if r.ext == 0 {
		if int(r.slot) == s {
			return r.p
		}
		return 0
	}
	return c.xpos[int(r.ext-1)*c.slots+s]
}

// setPos sets entry id's position in slot s (0: none), giving the entry
// an extension when it gets counts in a second slot.
func (c *candidates) setPos(id, s int, p uint16) {
	r := &c.rec[id]
	if r.ext == 0 {
		switch {
		case p == 0:
			if int(r.slot) == s {
				r.p = 0
			}
			return
		case r.p == 0 || int(r.slot) == s:
			r.slot, r.p = int8(s), p
			return
		}
		c.extend(id)
	}
	c.xpos[int(r.ext-1)*c.slots+s] = p
}

// ringOf returns entry id's per-second ring, which it has with an
// extension only (seconds reads any entry's).
func (c *candidates) ringOf(id int) []secUnits {
	rl := int(c.ringMask + 1)
	x := int(c.rec[id].ext - 1)
	return c.xring[x*rl : (x+1)*rl]
}

// seconds returns entry id's per-second ring: its own with an extension,
// else buf (ringMask+1 long), cleared, holding the entry's one second.
func (c *candidates) seconds(id int, buf []secUnits) []secUnits {
	r := &c.rec[id]
	if r.ext != 0 {
		return c.ringOf(id)
	}
	clear(buf)
	buf[r.sec&c.ringMask] = r.secQ
	return buf
}

// ext returns entry id's extension, giving it one when it has none.
func (c *candidates) ext(id int) *extRec {
	r := &c.rec[id]
	if r.ext == 0 {
		c.extend(id)
	}
	return &c.xrec[r.ext-1]
}

// est returns entry id's estimate flags, entry slot and entry estimate.
func (c *candidates) est(id int) (mask uint64, entry int, entryQ uint32) {
	r := &c.rec[id]
	if r.ext == 0 {
		return 0, -1, 0
	}
	x := &c.xrec[r.ext-1]
	return x.estMask, int(x.entry), x.entryQ
}

// head returns entry id's first second and its units once it left the
// ring.
func (c *candidates) head(id int) (sec int64, units secUnits) {
	r := &c.rec[id]
	if r.ext == 0 {
		return r.sec, r.secQ
	}
	x := &c.xrec[r.ext-1]
	return x.headSec, x.headUnits
}

// extend gives entry id, which has none, an extension holding what its
// record held: its counts' position, its second, no estimates.
//
//go:noinline
func (c *candidates) extend(id int) {
	if c.xn == len(c.xrec) {
		c.resizeExt(grow(len(c.xrec), c.max))
	}
	x := c.xn
	c.xn++
	r := &c.rec[id]
	rl := int(c.ringMask + 1)
	pos := c.xpos[x*c.slots : (x+1)*c.slots]
	clear(pos)
	if r.p != 0 {
		pos[r.slot] = r.p
	}
	ring := c.xring[x*rl : (x+1)*rl]
	clear(ring)
	ring[r.sec&c.ringMask] = r.secQ
	c.xrec[x] = extRec{headSec: r.sec, headUnits: r.secQ, owner: int32(id), entry: -1}
	r.ext = int32(x + 1)
	r.p, r.slot, r.secQ = 0, 0, 0
}

// unextend gives entry id's extension back, if it has one, leaving the
// entry with no counts: the last extension moves into its place.
func (c *candidates) unextend(id int) {
	r := &c.rec[id]
	if r.ext == 0 {
		return
	}
	x, last := int(r.ext-1), c.xn-1
	r.ext = 0
	if x != last {
		rl := int(c.ringMask + 1)
		copy(c.xpos[x*c.slots:(x+1)*c.slots], c.xpos[last*c.slots:(last+1)*c.slots])
		copy(c.xring[x*rl:(x+1)*rl], c.xring[last*rl:(last+1)*rl])
		c.xrec[x] = c.xrec[last]
		c.rec[c.xrec[x].owner].ext = int32(x + 1)
	}
	c.xn--
	if len(c.xrec) > minCapacity && 4*c.xn <= len(c.xrec) {
		c.resizeExt(max(minCapacity, len(c.xrec)/2))
	}
}

// resizeExt sets the extensions' capacity to size (at least xn).
func (c *candidates) resizeExt(size int) {
	rl := int(c.ringMask + 1)
	pos := make([]uint16, size*c.slots)
	ring := make([]secUnits, size*rl)
	xrec := make([]extRec, size)
	copy(pos, c.xpos[:c.xn*c.slots])
	copy(ring, c.xring[:c.xn*rl])
	copy(xrec, c.xrec[:c.xn])
	c.xpos, c.xring, c.xrec = pos, ring, xrec
}

// slotCount is one entry's counts in one slot.
type slotCount struct {
	units  uint32 // quanta
	events uint32
	sk     uint32   // sort-key bitmap
	peak   secUnits // units of the busiest complete second of the slot, quanta
}

// get returns entry id's counts in slot s (zero when it has none).
func (c *candidates) get(id, s int) slotCount {
	if p := c.posOf(id, s); p != 0 {
		return c.col[s][p-1]
	}
	return slotCount{}
}

// at returns entry id's counts in slot s, making them when it has none.
func (c *candidates) at(id, s int) *slotCount {
	if p := c.posOf(id, s); p != 0 {
		return &c.col[s][p-1]
	}
	return c.place(id, s)
}

// place makes entry id's counts in slot s: a freed place of the slot's
// column, or a new one at its end.
//
//go:noinline
func (c *candidates) place(id, s int) *slotCount {
	col := c.col[s]
	var p int
	if f := c.free[s]; f != 0 {
		p = int(f)
		c.free[s] = col[p-1].units
		col[p-1] = slotCount{}
	} else {
		if len(col) == cap(col) {
			// Grow to at most the set's capacity, which bounds the
			// column's length.
			grown := make([]slotCount, len(col), max(min(max(2*cap(col), minCapacity), len(c.rec)), len(col)+1))
			copy(grown, col)
			col = grown
		}
		col = append(col, slotCount{})
		c.col[s] = col
		p = len(col)
	}
	c.setPos(id, s, uint16(p))
	return &c.col[s][p-1]
}

// unplace frees entry id's counts in slot s, if any.
func (c *candidates) unplace(id, s int) {
	p := c.posOf(id, s)
	if p == 0 {
		return
	}
	c.col[s][p-1] = slotCount{units: c.free[s]}
	c.free[s] = uint32(p)
	c.setPos(id, s, 0)
}

// clearRow frees entry id's counts in every slot.
func (c *candidates) clearRow(id int) {
	for s := range c.slots {
		c.unplace(id, s)
	}
}

// unitsAt returns entry id's units in slot s, quanta, past 32 bits too.
func (c *candidates) unitsAt(id, s int) uint64 {
	u := uint64(c.get(id, s).units)
	if c.over != nil {
		u += c.over[id*c.slots+s].units
	}
	return u
}

// eventsAt returns entry id's accesses in slot s, past 32 bits too.
func (c *candidates) eventsAt(id, s int) uint64 {
	n := uint64(c.get(id, s).events)
	if c.over != nil {
		n += c.over[id*c.slots+s].events
	}
	return n
}

// addOver adds q quanta to entry id's units in slot s, whose 32-bit
// counter they would overflow: the counter's units move to over.
//
//go:noinline
func (c *candidates) addOver(id, s int, q uint32) {
	if c.over == nil {
		c.over = map[int]overCount{}
	}
	k := c.at(id, s)
	o := c.over[id*c.slots+s]
	o.units += uint64(k.units)
	c.over[id*c.slots+s] = o
	k.units = q
}

// countOver counts one access of entry id in slot s, whose 32-bit counter
// is full: the counter's accesses move to over.
//
//go:noinline
func (c *candidates) countOver(id, s int) {
	if c.over == nil {
		c.over = map[int]overCount{}
	}
	k := c.at(id, s)
	o := c.over[id*c.slots+s]
	o.events += uint64(k.events)
	c.over[id*c.slots+s] = o
	k.events = 1 // this access
}

// setCounts sets entry id's units and accesses in slot s, which may be
// past 32 bits.
func (c *candidates) setCounts(id, s int, units, events uint64) {
	if units == 0 && events == 0 && c.posOf(id, s) == 0 {
		return
	}
	k := c.at(id, s)
	k.units, k.events = uint32(min(units, math.MaxUint32)), uint32(min(events, math.MaxUint32))
	if units > math.MaxUint32 || events > math.MaxUint32 {
		if c.over == nil {
			c.over = map[int]overCount{}
		}
		c.over[id*c.slots+s] = overCount{units - uint64(k.units), events - uint64(k.events)}
	} else if c.over != nil {
		delete(c.over, id*c.slots+s)
	}
}

// dropOver forgets what over holds of entry id.
func (c *candidates) dropOver(id int) {
	delete(c.big, id)
	if c.over == nil {
		return
	}
	for s := range c.slots {
		delete(c.over, id*c.slots+s)
	}
}

// minCapacity is the capacity a candidate set starts with.
const minCapacity = 8

// grow returns the capacity a candidate set of capacity n grows to: half
// as large again, at most limit. Growing by half rather than doubling
// leaves a set at most a third empty, a quarter on average, for the
// small tables that are most of an account.
func grow(n, limit int) int { return min(n+max(n/2, 1), limit) }

func indexSize(capacity int) int {
	n := 1 << bits.Len(uint(capacity*2-1))
	return max(n, 16)
}

func newCandidates(capacity, slots, ring int) *candidates {
	c := &candidates{slots: slots, max: capacity, ringMask: int64(ring - 1),
		col: make([][]slotCount, slots), free: make([]uint32, slots)}
	c.resize(min(minCapacity, capacity))
	return c
}

// resize sets the capacity to size (at least n), moving the entries.
func (c *candidates) resize(size int) {
	rec := make([]candRec, size)
	copy(rec, c.rec[:c.n])
	keys := make([]string, size)
	copy(keys, c.keys[:c.n])
	heap := make([]int32, c.n, size)
	copy(heap, c.heap)
	c.rec, c.keys, c.heap = rec, keys, heap
	isz := indexSize(size)
	c.index = make([]uint32, isz)
	c.imask = uint64(isz - 1)
	for id := range c.n {
		c.reindex(id)
	}
}

// find returns the entry of the key hashed to h, or -1.
func (c *candidates) find(h uint64, key string) int {
	tag := uint32(h>>48) << 16
	for i := h & c.imask; ; i = (i + 1) & c.imask {
		v := c.index[i]
		if v == 0 {
			return -1
		}
		if v&0xffff0000 == tag {
			id := int(v&0xffff) - 1
			if c.rec[id].hash == h && sameKey(c.keys[id], key) {
				return id
			}
		}
	}
}

// full reports whether admitting a key evicts one.
func (c *candidates) full() bool { return c.n == c.max }

// minTotal is the smallest window total in the set; only meaningful when full.
func (c *candidates) minTotal() uint64 { return c.rec[c.heap[0]].total }

// minID is the entry with the smallest total, the next to be evicted.
func (c *candidates) minID() int { return int(c.heap[0]) }

// exactParts returns entry id's hash and the quanta it counted exactly
// (not its entry estimates) in the current generation, ring slots 0..cur,
// and in the previous one, slots after cur (generations are aligned with
// the ring), each saturated to uint32.
func (c *candidates) exactParts(id, cur int) (h uint64, curQ, prevQ uint32) {
	var sums [2]uint64
	r := &c.rec[id]
	estMask, entry, entryQ := c.est(id)
	for j := range c.slots {
		if estMask&(1<<j) != 0 {
			continue
		}
		v := c.unitsAt(id, j)
		if j == entry {
			v -= min(uint64(entryQ), v)
		}
		if j <= cur {
			sums[0] += v
		} else {
			sums[1] += v
		}
	}
	return r.hash, uint32(min(sums[0], math.MaxUint32)), uint32(min(sums[1], math.MaxUint32))
}

// second adds q quanta in second sec to entry id's ring when sec is not the
// ring's newest second, folding the seconds it completes into their slots'
// peaks.
func (c *candidates) second(id int, sec int64, q uint32, sc *secClock) {
	r := &c.rec[id]
	if sc.slotNanos != 0 && sec <= r.sec-c.ringMask-1 {
		// A live window's key second more than keyLateSeconds behind the
		// key's newest: counted in its slot, in no second (its peak may
		// then miss it).
		return
	}
	x := c.ext(id)
	ring := c.ringOf(id)
	if ok := ringAdvance(ring, &r.sec, sec, c.ringMask, func(s int64, v secUnits) { c.fold(id, s, v, sc) }); !ok {
		// A late second still in the ring: complete, so fold it again.
		p := &ring[sec&c.ringMask]
		*p += secUnits(q)
		if sec < x.headSec {
			x.headSec = sec
		}
		c.fold(id, sec, *p, sc)
		return
	}
	delete(c.big, id) // a new newest second
	ring[sec&c.ringMask] = secUnits(q)
	if sec < x.headSec {
		x.headSec, x.headUnits = sec, secUnits(q)
	}
}

// fold records v quanta in second x, complete, as a candidate for the peak
// of x's slot, and as the head's units when x is the entry's first second.
func (c *candidates) fold(id int, x int64, v secUnits, sc *secClock) {
	if s := sc.slotOf(x); s >= 0 && v > c.get(id, s).peak {
		c.at(id, s).peak = v
	}
	if e := &c.xrec[c.rec[id].ext-1]; x == e.headSec {
		e.headUnits = v
	}
}

// admit makes the key, held as heldKey returned it, an entry, evicting
// the smallest when full. The
// key's traffic before this access is not known exactly; the count-min
// sketch bounds it: curEst in the current generation (this access
// included), booked to slot s, and prevEst in the previous generation,
// booked to prevSlot, the last slot of that generation, which expires
// after every slot the generation covered. Both stay flagged as estimates
// until they expire, so the key never undercounts and Error bounds the
// overcount. prevSlot < 0 means the previous generation has left the window.
// Per-second counts start with this access: the estimates say nothing of
// when the earlier traffic came.
func (c *candidates) admit(h uint64, key string, s int, q, skBit, curEst, prevEst uint32, prevSlot int, sec int64) {
	var id int
	if c.full() {
		id = int(c.heap[0])
		c.unindex(id)
	} else {
		if c.n == len(c.rec) {
			c.resize(grow(len(c.rec), c.max))
		}
		id = c.n
		c.n++
		c.heap = append(c.heap, int32(id))
		c.rec[id].heapPos = int32(len(c.heap) - 1)
	}
	c.clearRow(id)
	c.dropOver(id)
	c.unextend(id)
	r := &c.rec[id]
	r.hash = h
	c.keys[id] = key
	r.sec, r.secQ = sec, secUnits(q)
	curEst = max(curEst, q)
	*c.at(id, s) = slotCount{units: curEst, events: 1 + perAccess(curEst-q, q), sk: skBit}
	total := uint64(curEst)
	var estMask uint64
	if prevSlot >= 0 && prevSlot != s && prevEst > 0 {
		*c.at(id, prevSlot) = slotCount{units: prevEst, events: perAccess(prevEst, q)}
		estMask |= 1 << prevSlot
		total += uint64(prevEst)
	}
	if curEst > q || estMask != 0 {
		x := c.ext(id)
		x.estMask, x.entry, x.entryQ = estMask, int8(s), curEst-q
	}
	r.total = total
	c.reindex(id)
	c.up(int(r.heapPos))
	c.down(int(r.heapPos))
}

// perAccess estimates the accesses behind u quanta as if each were of q.
func perAccess(u, q uint32) uint32 {
	if q == 0 {
		return 0
	}
	return (u + q/2) / q
}

// errorOf bounds the overcount of entry id.
func (c *candidates) errorOf(id int) uint64 {
	var e uint64
	m, entry, entryQ := c.est(id)
	for m != 0 {
		j := bits.TrailingZeros64(m)
		m &= m - 1
		e += c.unitsAt(id, j)
	}
	if entry >= 0 {
		e += uint64(entryQ)
	}
	return e
}

// expire clears slot s of every entry, drops the entries left empty and
// gives memory back when the set has shrunk to a quarter of its capacity.
func (c *candidates) expire(s int) {
	if len(c.col[s]) == 0 {
		// No entry has counts in the slot (nor estimates, nor an entry
		// there): nothing to take out, and no entry emptied. An idle
		// table's window moves in constant time.
		c.free[s] = 0
		return
	}
	for id := 0; id < c.n; id++ {
		r := &c.rec[id]
		r.total -= c.unitsAt(id, s)
		c.setPos(id, s, 0)
		if c.over != nil {
			delete(c.over, id*c.slots+s)
		}
		if r.ext != 0 {
			x := &c.xrec[r.ext-1]
			x.estMask &^= 1 << s
			if int(x.entry) == s {
				x.entry = -1
				x.entryQ = 0
			}
		}
	}
	// The slot's column is empty: keep a small one for the next slot's
	// keys, give a large one back.
	if cap(c.col[s]) > 4*minCapacity {
		c.col[s] = nil
	} else {
		c.col[s] = c.col[s][:0]
	}
	c.free[s] = 0
	// Drop empty entries: move the last entry into the hole.
	for id := 0; id < c.n; {
		if c.rec[id].total != 0 || c.anyEvents(id) {
			id++
			continue
		}
		c.unindex(id)
		c.clearRow(id)
		c.dropOver(id)
		c.unextend(id)
		last := c.n - 1
		if id != last {
			c.unindex(last)
			c.move(last, id)
			c.reindex(id)
		}
		c.rec[last] = candRec{}
		c.keys[last] = ""
		c.n--
	}
	c.heap = c.heap[:c.n]
	for i := range c.heap {
		c.heap[i] = int32(i)
		c.rec[i].heapPos = int32(i)
	}
	for i := c.n/2 - 1; i >= 0; i-- {
		c.down(i)
	}
	if len(c.rec) > minCapacity && 4*c.n <= len(c.rec) {
		c.resize(max(minCapacity, len(c.rec)/2))
	}
}

func (c *candidates) anyEvents(id int) bool {
	for s := range c.slots {
		if c.get(id, s).events != 0 {
			return true
		}
	}
	return false
}

// move moves entry from, its extension and counts, to id to, which has
// neither.
func (c *candidates) move(from, to int) {
	c.rec[to] = c.rec[from]
	c.rec[from] = candRec{}
	c.keys[to], c.keys[from] = c.keys[from], ""
	if x := c.rec[to].ext; x != 0 {
		c.xrec[x-1].owner = int32(to)
	}
	if n, ok := c.big[from]; ok {
		c.big[to] = n
		delete(c.big, from)
	}
	if c.over != nil {
		for s := range c.slots {
			if o, ok := c.over[from*c.slots+s]; ok {
				c.over[to*c.slots+s] = o
				delete(c.over, from*c.slots+s)
			}
		}
	}
}

func (c *candidates) reindex(id int) {
	h := c.rec[id].hash
	i := h & c.imask
	for c.index[i] != 0 {
		i = (i + 1) & c.imask
	}
	c.index[i] = uint32(h>>48)<<16 | uint32(id+1)
}

// unindex removes entry id from the index with backward-shift deletion.
func (c *candidates) unindex(id int) {
	i := c.rec[id].hash & c.imask
	for c.index[i]&0xffff != uint32(id+1) {
		i = (i + 1) & c.imask
	}
	for {
		c.index[i] = 0
		j := i
		for {
			j = (j + 1) & c.imask
			v := c.index[j]
			if v == 0 {
				return
			}
			home := c.rec[v&0xffff-1].hash & c.imask
			// Move v back to i unless its home lies cyclically in (i, j].
			if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
				c.index[i] = v
				i = j
				break
			}
		}
	}
}

func (c *candidates) less(a, b int32) bool { return c.rec[a].total < c.rec[b].total }

func (c *candidates) swap(i, j int) {
	c.heap[i], c.heap[j] = c.heap[j], c.heap[i]
	c.rec[c.heap[i]].heapPos = int32(i)
	c.rec[c.heap[j]].heapPos = int32(j)
}

func (c *candidates) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !c.less(c.heap[i], c.heap[p]) {
			return
		}
		c.swap(i, p)
		i = p
	}
}

func (c *candidates) down(i int) {
	n := len(c.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && c.less(c.heap[r], c.heap[l]) {
			m = r
		}
		if !c.less(c.heap[m], c.heap[i]) {
			return
		}
		c.swap(i, m)
		i = m
	}
}

// keyStat is one entry copied out for a snapshot.
type keyStat struct {
	key      string
	units    uint64
	err      uint64
	events   uint64
	sortKeys uint64
	peak     uint64 // quanta in the busiest second of the window
	recent   uint64 // quanta in the recent span
	last     uint64 // quanta in the last complete second
	// tail is the quanta in the tail seconds the key's ring knows, oldest
	// first (secWindow.tail, tailOf).
	tail []float64
}

// collect copies out the entries that can be among the tracked heaviest:
// the entries ranked by units (heaviest first, ties by key), cut to
// tracked, with their details. Ranking 16-byte records and filling in only
// those reported keeps a snapshot cheap. sw says which seconds count.
func (c *candidates) collect(dst []keyStat, sw *secWindow, tracked int) []keyStat {
	rank := make([]int32, c.n)
	for id := range rank {
		rank[id] = int32(id)
	}
	slices.SortFunc(rank, func(a, b int32) int {
		x, y := &c.rec[a], &c.rec[b]
		if x.total != y.total {
			return cmp.Compare(y.total, x.total)
		}
		return strings.Compare(c.keys[a], c.keys[b])
	})
	// Room for the ring of an entry without an extension (seconds).
	one := make([]secUnits, c.ringMask+1)
	for _, id := range rank[:min(len(rank), tracked)] {
		var ev uint64
		var sk uint32
		var peak secUnits
		for j := range c.slots {
			k := c.get(int(id), j)
			ev += c.eventsAt(int(id), j)
			sk |= k.sk
			peak = max(peak, k.peak)
		}
		r := &c.rec[id]
		ks := keyStat{
			key:      c.keys[id],
			units:    r.total,
			err:      c.errorOf(int(id)),
			events:   ev,
			sortKeys: sortKeyEstimate(sk),
		}
		ring := c.seconds(int(id), one)
		p, recent, last := read(sw, ring, r.sec, c.ringMask)
		ks.peak = uint64(max(peak, p))
		ks.recent, ks.last = uint64(recent), uint64(last)
		ks.tail = tailOf(sw, ring, r.sec, c.ringMask)
		dst = append(dst, ks)
	}
	return dst
}

func (c *candidates) clone() *candidates {
	d := *c
	d.rec = slices.Clone(c.rec)
	d.keys = slices.Clone(c.keys)
	d.xpos = slices.Clone(c.xpos)
	d.xring = slices.Clone(c.xring)
	d.xrec = slices.Clone(c.xrec)
	d.col = make([][]slotCount, len(c.col))
	for s, col := range c.col {
		d.col[s] = slices.Clip(slices.Clone(col))
	}
	d.free = slices.Clone(c.free)
	d.heap = slices.Clone(c.heap)
	d.index = slices.Clone(c.index)
	return &d
}

// addDistinct adds each entry's hash to the distinct-key set of every slot
// it has traffic in.
func (c *candidates) addDistinct(d *distinct) {
	for id := range c.n {
		h := c.rec[id].hash
		for s := range c.slots {
			if c.get(id, s).events > 0 {
				d.add(s, h)
			}
		}
	}
}

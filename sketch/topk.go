package sketch

import (
	"math"
	"math/bits"
	"strings"
)

// candidateFixedBytes is the per-candidate memory besides the per-slot rings
// and the key bytes, for Footprint.
const candidateFixedBytes = 8 + 16 + 8 + 8 + 4 + 4 + 4 + 1

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
// A min-heap on the window totals finds the key to evict; an
// open-addressing index on the 64-bit key hash finds a key's entry.
type candidates struct {
	slots int
	n     int // entries in use

	hash    []uint64
	key     []string
	total   []uint64 // window units, quanta
	estMask []uint64 // slots whose units are count-min estimates
	entryQ  []uint32 // estimate part of the entry slot's units
	entry   []int8   // slot the key entered in, -1 once it expired
	heapPos []int32

	units  []uint32 // [entry][slot] quanta
	events []uint32 // [entry][slot]
	sk     []uint32 // [entry][slot] sort-key bitmap

	heap  []int32 // entry ids, min total first
	index []indexSlot
	imask uint64
}

// indexSlot is one slot of the open-addressing index: the key hash beside
// the entry id + 1 (0 when free), so that a probe reads one cache line.
type indexSlot struct {
	hash uint64
	id   int32
}

func indexSize(capacity int) int {
	n := 1 << bits.Len(uint(capacity*2-1))
	return max(n, 16)
}

func newCandidates(capacity, slots int) *candidates {
	isz := indexSize(capacity)
	return &candidates{
		slots:   slots,
		hash:    make([]uint64, capacity),
		key:     make([]string, capacity),
		total:   make([]uint64, capacity),
		estMask: make([]uint64, capacity),
		entryQ:  make([]uint32, capacity),
		entry:   make([]int8, capacity),
		heapPos: make([]int32, capacity),
		units:   make([]uint32, capacity*slots),
		events:  make([]uint32, capacity*slots),
		sk:      make([]uint32, capacity*slots),
		heap:    make([]int32, 0, capacity),
		index:   make([]indexSlot, isz),
		imask:   uint64(isz - 1),
	}
}

// find returns the entry of the key hashed to h, or -1.
func (c *candidates) find(h uint64, key string) int {
	for i := h & c.imask; ; i = (i + 1) & c.imask {
		v := &c.index[i]
		if v.id == 0 {
			return -1
		}
		if id := int(v.id - 1); v.hash == h && c.key[id] == key {
			return id
		}
	}
}

// full reports whether admitting a key evicts one.
func (c *candidates) full() bool { return c.n == len(c.hash) }

// minTotal is the smallest window total in the set; only meaningful when full.
func (c *candidates) minTotal() uint64 { return c.total[c.heap[0]] }

// minID is the entry with the smallest total, the next to be evicted.
func (c *candidates) minID() int { return int(c.heap[0]) }

// exactParts returns entry id's hash and the quanta it counted exactly
// (not its entry estimates) in the current generation, ring slots 0..cur,
// and in the previous one, slots after cur (generations are aligned with
// the ring), each saturated to uint32.
func (c *candidates) exactParts(id, cur int) (h uint64, curQ, prevQ uint32) {
	var sums [2]uint64
	row := c.units[id*c.slots : (id+1)*c.slots]
	for j, u := range row {
		if c.estMask[id]&(1<<j) != 0 {
			continue
		}
		v := uint64(u)
		if j == int(c.entry[id]) {
			v -= uint64(min(c.entryQ[id], u))
		}
		if j <= cur {
			sums[0] += v
		} else {
			sums[1] += v
		}
	}
	return c.hash[id], uint32(min(sums[0], math.MaxUint32)), uint32(min(sums[1], math.MaxUint32))
}

// hit adds an access to entry id in slot s and reports whether it is the
// entry's first access in the slot.
func (c *candidates) hit(id, s int, q uint32, skBit uint32) (first bool) {
	k := id*c.slots + s
	first = c.events[k] == 0
	u := c.units[k] + q
	if u < q {
		u = math.MaxUint32
	}
	c.total[id] += uint64(u - c.units[k])
	c.units[k] = u
	c.events[k]++
	c.sk[k] |= skBit
	c.down(int(c.heapPos[id]))
	return first
}

// admit makes the key an entry, evicting the smallest when full. The
// key's traffic before this access is not known exactly; the count-min
// sketch bounds it: curEst in the current generation (this access
// included), booked to slot s, and prevEst in the previous generation,
// booked to prevSlot, the last slot of that generation, which expires
// after every slot the generation covered. Both stay flagged as estimates
// until they expire, so the key never undercounts and Error bounds the
// overcount. prevSlot < 0 means the previous generation has left the window.
func (c *candidates) admit(h uint64, key string, s int, q uint32, skBit uint32, curEst, prevEst uint32, prevSlot int) {
	var id int
	if c.full() {
		id = int(c.heap[0])
		c.unindex(id)
	} else {
		id = c.n
		c.n++
		c.heap = append(c.heap, int32(id))
		c.heapPos[id] = int32(len(c.heap) - 1)
	}
	c.hash[id] = h
	c.key[id] = strings.Clone(key)
	c.estMask[id] = 0
	row := c.units[id*c.slots : (id+1)*c.slots]
	ev := c.events[id*c.slots : (id+1)*c.slots]
	skr := c.sk[id*c.slots : (id+1)*c.slots]
	clear(row)
	clear(ev)
	clear(skr)
	curEst = max(curEst, q)
	row[s] = curEst
	c.entryQ[id] = curEst - q
	ev[s] = 1 + perAccess(curEst-q, q)
	skr[s] = skBit
	total := uint64(curEst)
	if prevSlot >= 0 && prevSlot != s && prevEst > 0 {
		row[prevSlot] = prevEst
		ev[prevSlot] = perAccess(prevEst, q)
		c.estMask[id] |= 1 << prevSlot
		total += uint64(prevEst)
	}
	c.entry[id] = int8(s)
	c.total[id] = total
	c.reindex(id)
	c.up(int(c.heapPos[id]))
	c.down(int(c.heapPos[id]))
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
	m := c.estMask[id]
	for m != 0 {
		j := bits.TrailingZeros64(m)
		m &= m - 1
		e += uint64(c.units[id*c.slots+j])
	}
	if c.entry[id] >= 0 {
		e += uint64(c.entryQ[id])
	}
	return e
}

// expire clears slot s of every entry and drops the entries left empty.
func (c *candidates) expire(s int) {
	for id := 0; id < c.n; id++ {
		k := id*c.slots + s
		c.total[id] -= uint64(c.units[k])
		c.units[k] = 0
		c.events[k] = 0
		c.sk[k] = 0
		c.estMask[id] &^= 1 << s
		if int(c.entry[id]) == s {
			c.entry[id] = -1
			c.entryQ[id] = 0
		}
	}
	// Drop empty entries: move the last entry into the hole.
	for id := 0; id < c.n; {
		if c.total[id] != 0 || c.anyEvents(id) {
			id++
			continue
		}
		c.unindex(id)
		last := c.n - 1
		if id != last {
			c.unindex(last)
			c.move(last, id)
			c.reindex(id)
		}
		c.key[last] = ""
		c.n--
	}
	c.heap = c.heap[:c.n]
	for i := range c.heap {
		c.heap[i] = int32(i)
		c.heapPos[i] = int32(i)
	}
	for i := c.n/2 - 1; i >= 0; i-- {
		c.down(i)
	}
}

func (c *candidates) anyEvents(id int) bool {
	for _, e := range c.events[id*c.slots : (id+1)*c.slots] {
		if e != 0 {
			return true
		}
	}
	return false
}

func (c *candidates) move(from, to int) {
	c.hash[to] = c.hash[from]
	c.key[to] = c.key[from]
	c.total[to] = c.total[from]
	c.estMask[to] = c.estMask[from]
	c.entryQ[to] = c.entryQ[from]
	c.entry[to] = c.entry[from]
	copy(c.units[to*c.slots:(to+1)*c.slots], c.units[from*c.slots:(from+1)*c.slots])
	copy(c.events[to*c.slots:(to+1)*c.slots], c.events[from*c.slots:(from+1)*c.slots])
	copy(c.sk[to*c.slots:(to+1)*c.slots], c.sk[from*c.slots:(from+1)*c.slots])
}

func (c *candidates) reindex(id int) {
	i := c.hash[id] & c.imask
	for c.index[i].id != 0 {
		i = (i + 1) & c.imask
	}
	c.index[i] = indexSlot{hash: c.hash[id], id: int32(id + 1)}
}

// unindex removes entry id from the index with backward-shift deletion.
func (c *candidates) unindex(id int) {
	i := c.hash[id] & c.imask
	for c.index[i].id != int32(id+1) {
		i = (i + 1) & c.imask
	}
	for {
		c.index[i] = indexSlot{}
		j := i
		for {
			j = (j + 1) & c.imask
			v := c.index[j]
			if v.id == 0 {
				return
			}
			home := v.hash & c.imask
			// Move v back to i unless its home lies cyclically in (i, j].
			if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
				c.index[i] = v
				i = j
				break
			}
		}
	}
}

func (c *candidates) less(a, b int32) bool { return c.total[a] < c.total[b] }

func (c *candidates) swap(i, j int) {
	c.heap[i], c.heap[j] = c.heap[j], c.heap[i]
	c.heapPos[c.heap[i]] = int32(i)
	c.heapPos[c.heap[j]] = int32(j)
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
}

// collect copies every entry out.
func (c *candidates) collect(dst []keyStat) []keyStat {
	for id := 0; id < c.n; id++ {
		var ev uint64
		var sk uint32
		for j := 0; j < c.slots; j++ {
			ev += uint64(c.events[id*c.slots+j])
			sk |= c.sk[id*c.slots+j]
		}
		dst = append(dst, keyStat{
			key:      c.key[id],
			units:    c.total[id],
			err:      c.errorOf(id),
			events:   ev,
			sortKeys: sortKeyEstimate(sk),
		})
	}
	return dst
}

// sortKeyBit maps a sort key hash to its bit in a 32-bit linear-counting
// bitmap, or 0 when there is no sort key.
func sortKeyBit(sk string, hash func(string) uint64) uint32 {
	if sk == "" {
		return 0
	}
	return 1 << (hash(sk) >> 59)
}

// sortKeyEstimate is the linear-counting estimate -m·ln(zeros/m) of a
// 32-bit bitmap (m = 32): 0 for none, 1 for one sort key (the estimate of
// one set bit is 1.02), within about 20 % up to 40, and 111 (m·ln m) once
// every bit is set, which reads as "many". Detection only needs to tell
// one item from a collection, so 4 bytes per slot suffice.
func sortKeyEstimate(b uint32) uint64 {
	if b == 0 {
		return 0
	}
	z := 32 - bits.OnesCount32(b)
	if z == 0 {
		z = 1
	}
	e := -32 * math.Log(float64(z)/32)
	return uint64(math.Round(e))
}

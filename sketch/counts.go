package sketch

import (
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/zeebo/xxh3"
)

// namedCounts counts events per name (a stream shard, a throttled key) per
// slot, for at most max names. Shards and throttled calls are few next to
// the traffic, so a map is fast enough and exact.
//
// When the set is full, names with nothing left in the window are dropped
// first. If every name still counts, a new name either is not counted
// (shards: a table has at most max partitions worth reporting) or takes
// the place of the name with the smallest count, as in Space-Saving
// (throttled keys). A name counted since it took a place may have had
// calls before, which nobody counted: so it starts, slot by slot, from
// floor, the most any name not in the set can have had in each slot (the
// largest count of a name that lost its place there), and counts its own
// on top. Its count is then known within bounds, per slot and so over the
// window: at least its own (count - inherit), at most count; a name not in
// the set has at most the sum of floor. While no name ever lost its place
// in the window's slots, every count is exact. A slot that expires takes
// its part of the counts, of what they inherited and of floor with it.
type namedCounts struct {
	max      int
	slots    int
	takeOver bool
	index    map[string]int32
	names    []string
	counts   []uint32 // [name][slot]
	// inherit is the part of counts a name took with its place ([name][slot],
	// takeOver only), floor the most a name outside the set can have had
	// ([slot], takeOver only).
	inherit   []uint32
	floor     []uint32
	lastName  string
	lastID    int32
	untracked uint64 // events of names that could not be counted

	// With seconds (shards): each name's newest second (a Unix second; a
	// second before 1970 or after 2106 is counted in its slot only) and
	// its events in it, and the events of the busiest complete second of
	// each slot ([name][slot], as a peakCode). A shard's records come in
	// order, one second after the other.
	seconds bool
	lastSec []uint32
	inSec   []uint16
	peaks   []peakCode

	// minHeap finds the name that gives its place up (takeOver, with more
	// than scanNames names). sparse is set when names may have nothing
	// left in the window (a slot expired, a merge), so that a full set
	// compacts only then.
	minHeap smallest
	sparse  bool
}

// scanNames is the most names for which Space-Saving finds the smallest
// count by a scan: it costs less than keeping a heap up to date, and
// keeps the daemon's throttled keys (64 a class) within their footprint.
const scanNames = 128

// peakCode is a count of events in one second held in a byte, an 8-bit
// float rounded down: exact up to 63, within 1/32 below beyond, at most
// maxPeakCount. One byte a slot is what keeps the busiest seconds of
// MaxShards shards within a table's footprint; the count is a floor, as
// the records it counts are a floor of a shard's units.
type peakCode uint8

// maxPeakCount is the largest count a peakCode holds (larger ones
// saturate): four times the writes one partition takes in a second.
const maxPeakCount = 63 << 6

// encodePeak returns v's code, rounded down and saturating.
func encodePeak(v uint32) peakCode {
	if v < 64 {
		return peakCode(v)
	}
	e := bits.Len32(v) - 5 // v>>(e-1) is in [32, 63]
	if e > 7 {
		return math.MaxUint8
	}
	return peakCode(e<<5 | int(v>>(e-1)-32))
}

// count returns the count c stands for.
func (c peakCode) count() uint32 {
	e, m := uint32(c>>5), uint32(c&31)
	if e == 0 {
		return m
	}
	return (32 + m) << (e - 1)
}

// withSeconds makes the set keep each name's busiest second (addAt).
func (n *namedCounts) withSeconds() *namedCounts {
	n.seconds = true
	return n
}

// addAt counts one event of name in slot s and second sec, whose slot sc
// tells.
func (n *namedCounts) addAt(name string, s int, sec int64, sc *secClock) {
	id := n.add(name, s)
	if id < 0 || !n.seconds || sec < 0 || sec > math.MaxUint32 {
		return
	}
	x := uint32(sec)
	switch last := n.lastSec[id]; {
	case n.inSec[id] == 0 || x == last:
		n.lastSec[id] = x
		n.inSec[id] = satAdd16(n.inSec[id], 1)
	case x > last:
		n.fold(int(id), last, n.inSec[id], sc)
		n.lastSec[id], n.inSec[id] = x, 1
	default:
		// An older second (a merge, a shard read again): counted in its
		// slot, in no second.
	}
}

// fold records v events in second x, complete, as a candidate for the
// busiest second of x's slot.
func (n *namedCounts) fold(id int, x uint32, v uint16, sc *secClock) {
	if s := sc.slotOf(int64(x)); s >= 0 {
		k := id*n.slots + s
		n.peaks[k] = max(n.peaks[k], encodePeak(uint32(v)))
	}
}

// peak returns the events of name id's busiest second in the window: the
// busiest of its slots' complete seconds (within 1/32 below, peakCode)
// and of its newest second (exact).
func (n *namedCounts) peak(id int, sc *secClock) uint32 {
	if !n.seconds {
		return 0
	}
	p := slices.Max(n.peaks[id*n.slots : (id+1)*n.slots]).count()
	if n.inSec[id] > 0 && sc.slotOf(int64(n.lastSec[id])) >= 0 {
		p = max(p, uint32(n.inSec[id]))
	}
	return p
}

func newNamedCounts(maxNames, slots int, takeOver bool) *namedCounts {
	n := &namedCounts{max: maxNames, slots: slots, takeOver: takeOver, index: map[string]int32{}, lastID: -1}
	if takeOver {
		n.floor = make([]uint32, slots)
	}
	return n
}

// add counts one event of name in slot s and returns its id (-1 when it
// could not be counted). A name longer than MaxKeyBytes is counted under
// its shortened form (heldKey).
func (n *namedCounts) add(name string, s int) int32 {
	if len(name) > MaxKeyBytes {
		name = heldKey(name, xxh3.HashString(name))
	}
	id := n.lastID
	if id < 0 || n.lastName != name {
		var ok bool
		id, ok = n.index[name]
		if !ok {
			id = n.insert(name)
			if id < 0 {
				n.untracked++
				return -1
			}
		}
		n.lastName, n.lastID = n.names[id], id
	}
	k := int(id)*n.slots + s
	if n.counts[k] < math.MaxUint32 {
		n.counts[k]++
	}
	return id
}

// insert gives name a place, starting from floor; -1 when the set is full
// and names do not take over.
func (n *namedCounts) insert(name string) int32 {
	if len(n.names) >= n.max && n.sparse {
		n.compact()
	}
	if len(n.names) < n.max {
		n.minHeap.reset()
		id := int32(len(n.names))
		name = strings.Clone(name)
		n.names = append(n.names, name)
		if n.takeOver {
			n.counts = append(n.counts, n.floor...)
			n.inherit = append(n.inherit, n.floor...)
		} else {
			n.counts = append(n.counts, make([]uint32, n.slots)...)
		}
		if n.seconds {
			n.lastSec = append(n.lastSec, 0)
			n.inSec = append(n.inSec, 0)
			n.peaks = append(n.peaks, make([]peakCode, n.slots)...)
		}
		n.index[name] = id
		return id
	}
	if !n.takeOver {
		return -1
	}
	// Space-Saving: the name with the smallest count gives its place up,
	// and its counts bound, slot by slot, what it and any name outside the
	// set had.
	minID := n.smallest()
	row := n.row(int(minID))
	for s, c := range row {
		n.floor[s] = max(n.floor[s], c)
	}
	copy(row, n.floor)
	copy(n.inherit[int(minID)*n.slots:(int(minID)+1)*n.slots], n.floor)
	delete(n.index, n.names[minID])
	name = strings.Clone(name)
	n.names[minID] = name
	n.index[name] = minID
	n.lastID = -1
	n.minHeap.update(minID, n.sum(int(minID)))
	return minID
}

// smallest returns the name with the smallest count (the first such, by
// id), which gives its place up in Space-Saving.
func (n *namedCounts) smallest() int32 {
	if n.max > scanNames {
		return n.minHeap.min(len(n.names), func(id int32) uint64 { return n.sum(int(id)) })
	}
	minID, minSum := int32(0), uint64(math.MaxUint64)
	for id := range n.names {
		if s := n.sum(id); s < minSum {
			minID, minSum = int32(id), s
		}
	}
	return minID
}

// row returns the counts of name id, slot by slot.
func (n *namedCounts) row(id int) []uint32 { return n.counts[id*n.slots : (id+1)*n.slots] }

func (n *namedCounts) sum(id int) uint64 {
	var s uint64
	for _, c := range n.row(id) {
		s += uint64(c)
	}
	return s
}

// own is what name id is known to have had: its count less what it
// inherited.
func (n *namedCounts) own(id int) uint64 {
	s := n.sum(id)
	if n.inherit != nil {
		var in uint64
		for _, c := range n.inherit[id*n.slots : (id+1)*n.slots] {
			in += uint64(c)
		}
		s -= min(s, in) // a count that saturated
	}
	return s
}

// compact drops the names with nothing in the window.
func (n *namedCounts) compact() {
	names, counts := n.names[:0], n.counts[:0]
	lastSec, inSec, peaks := n.lastSec[:0], n.inSec[:0], n.peaks[:0]
	var inherit []uint32
	if n.inherit != nil {
		inherit = n.inherit[:0]
	}
	for id, name := range n.names {
		row := n.row(id)
		if n.sum(id) == 0 {
			delete(n.index, name)
			continue
		}
		n.index[name] = int32(len(names))
		names = append(names, name)
		counts = append(counts, row...)
		if inherit != nil {
			inherit = append(inherit, n.inherit[id*n.slots:(id+1)*n.slots]...)
		}
		if n.seconds {
			lastSec, inSec = append(lastSec, n.lastSec[id]), append(inSec, n.inSec[id])
			peaks = append(peaks, n.peaks[id*n.slots:(id+1)*n.slots]...)
		}
	}
	clear(n.names[len(names):])
	n.names, n.counts, n.inherit = names, counts, inherit
	n.lastSec, n.inSec, n.peaks = lastSec, inSec, peaks
	n.lastID = -1
	n.sparse = false
	n.minHeap.reset()
}

// clear expires slot s.
func (n *namedCounts) clear(s int) {
	n.sparse = true
	n.minHeap.reset()
	for id := range n.names {
		n.counts[id*n.slots+s] = 0
	}
	if n.seconds {
		for id := range n.names {
			n.peaks[id*n.slots+s] = 0
		}
	}
	if n.inherit != nil {
		for id := range n.names {
			n.inherit[id*n.slots+s] = 0
		}
		n.floor[s] = 0
	}
	if n.slots == 1 {
		n.compact()
	}
}

// bound is the most events a name not in the set can have had in the
// window: 0 while every count is exact.
func (n *namedCounts) bound() uint64 {
	var b uint64
	for _, f := range n.floor {
		b += uint64(f)
	}
	return b
}

// collect returns the names with events of their own in the window, each
// with its bounds (KeyCount), ranked by what they are known to have had
// (Count), then by what they may have had (Max), then by name.
func (n *namedCounts) collect() []KeyCount {
	var out []KeyCount
	for id, name := range n.names {
		if own := n.own(id); own > 0 {
			out = append(out, KeyCount{Key: name, Count: own, Max: n.sum(id)})
		}
	}
	slices.SortFunc(out, compareKeyCounts)
	return out
}

func (n *namedCounts) clone() *namedCounts {
	c := *n
	c.index = make(map[string]int32, len(n.index))
	for k, v := range n.index {
		c.index[k] = v
	}
	c.names = slices.Clone(n.names)
	c.counts = slices.Clone(n.counts)
	c.inherit = slices.Clone(n.inherit)
	c.floor = slices.Clone(n.floor)
	c.lastSec, c.inSec, c.peaks = slices.Clone(n.lastSec), slices.Clone(n.inSec), slices.Clone(n.peaks)
	c.lastID = -1
	c.minHeap = smallest{}
	return &c
}

// absorbSeconds adds the busiest seconds of o, the same names counted
// elsewhere, after absorb: a slot's busiest second is the busier of both
// (a shard is read by one reader at a time), and the newest seconds add
// up when they are the same one.
func (n *namedCounts) absorbSeconds(o *namedCounts, sc *secClock) {
	if !n.seconds || !o.seconds {
		return
	}
	for oid, name := range o.names {
		id, ok := n.index[name]
		if !ok {
			continue
		}
		row, orow := n.peaks[int(id)*n.slots:(int(id)+1)*n.slots], o.peaks[oid*o.slots:(oid+1)*o.slots]
		for s := range row {
			row[s] = max(row[s], orow[s])
		}
		switch ol, oc := o.lastSec[oid], o.inSec[oid]; {
		case oc == 0:
		case n.inSec[id] == 0 || ol > n.lastSec[id]:
			if n.inSec[id] > 0 {
				n.fold(int(id), n.lastSec[id], n.inSec[id], sc)
			}
			n.lastSec[id], n.inSec[id] = ol, oc
		case ol == n.lastSec[id]:
			n.inSec[id] = satAdd16(n.inSec[id], oc)
		default:
			n.fold(int(id), ol, oc, sc)
		}
	}
}

// absorb adds o's counts, name by name, as add would have. With takeOver,
// the bounds add up: a name one side counts and the other does not may
// have had up to the other's floor there, which its count (and what it
// inherited) takes on; a name neither counts, up to both floors.
func (n *namedCounts) absorb(o *namedCounts) {
	n.sparse = true
	n.minHeap.reset()
	n.untracked += o.untracked
	if n.takeOver && o.bound() > 0 {
		for id, name := range n.names {
			if _, ok := o.index[name]; ok {
				continue
			}
			row, inh := n.row(id), n.inherit[id*n.slots:(id+1)*n.slots]
			for s, f := range o.floor {
				row[s] = satAdd(row[s], f)
				inh[s] = satAdd(inh[s], f)
			}
		}
	}
	var floor []uint32
	if n.takeOver {
		floor = slices.Clone(n.floor)
	}
	for oid, name := range o.names {
		id, ok := n.index[name]
		if !ok {
			if id = n.insert(name); id < 0 {
				n.untracked += o.sum(oid)
				continue
			}
		}
		row := n.row(int(id))
		for s, v := range o.row(oid) {
			row[s] = satAdd(row[s], v)
		}
		if n.takeOver {
			inh := n.inherit[int(id)*n.slots : (int(id)+1)*n.slots]
			for s, v := range o.inherit[oid*o.slots : (oid+1)*o.slots] {
				inh[s] = satAdd(inh[s], v)
			}
		}
	}
	for s := range floor {
		n.floor[s] = max(n.floor[s], satAdd(floor[s], o.floor[s]))
	}
	n.lastID = -1
}

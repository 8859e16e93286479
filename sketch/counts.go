package sketch

import (
	"math"
	"sort"
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
// over the smallest name's counts plus its own, as in Space-Saving
// (throttled keys: a key's count then overestimates by at most the count it
// took over, and the most throttled keys stay).
type namedCounts struct {
	max       int
	slots     int
	takeOver  bool
	index     map[string]int32
	names     []string
	counts    []uint32 // [name][slot]
	lastName  string
	lastID    int32
	untracked uint64 // events of names that could not be counted
}

func newNamedCounts(maxNames, slots int, takeOver bool) *namedCounts {
	return &namedCounts{max: maxNames, slots: slots, takeOver: takeOver, index: map[string]int32{}, lastID: -1}
}

// add counts one event of name in slot s. A name longer than MaxKeyBytes
// is counted under its shortened form (heldKey).
func (n *namedCounts) add(name string, s int) {
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
				return
			}
		}
		n.lastName, n.lastID = n.names[id], id
	}
	k := int(id)*n.slots + s
	if n.counts[k] < math.MaxUint32 {
		n.counts[k]++
	}
}

func (n *namedCounts) insert(name string) int32 {
	if len(n.names) >= n.max {
		n.compact()
	}
	if len(n.names) < n.max {
		id := int32(len(n.names))
		name = strings.Clone(name)
		n.names = append(n.names, name)
		n.counts = append(n.counts, make([]uint32, n.slots)...)
		n.index[name] = id
		return id
	}
	if !n.takeOver {
		return -1
	}
	// Space-Saving: the new name inherits the smallest name's counts.
	minID, minSum := int32(0), uint64(math.MaxUint64)
	for id := range n.names {
		if s := n.sum(id); s < minSum {
			minID, minSum = int32(id), s
		}
	}
	delete(n.index, n.names[minID])
	name = strings.Clone(name)
	n.names[minID] = name
	n.index[name] = minID
	n.lastID = -1
	return minID
}

func (n *namedCounts) sum(id int) uint64 {
	var s uint64
	for _, c := range n.counts[id*n.slots : (id+1)*n.slots] {
		s += uint64(c)
	}
	return s
}

// compact drops the names with nothing in the window.
func (n *namedCounts) compact() {
	names, counts := n.names[:0], n.counts[:0]
	for id, name := range n.names {
		row := n.counts[id*n.slots : (id+1)*n.slots]
		if n.sum(id) == 0 {
			delete(n.index, name)
			continue
		}
		n.index[name] = int32(len(names))
		names = append(names, name)
		counts = append(counts, row...)
	}
	clear(n.names[len(names):])
	n.names, n.counts = names, counts
	n.lastID = -1
}

// clear expires slot s.
func (n *namedCounts) clear(s int) {
	for id := range n.names {
		n.counts[id*n.slots+s] = 0
	}
	if n.slots == 1 {
		n.compact()
	}
}

// collect returns the names with counts in the window, most first.
func (n *namedCounts) collect() []KeyCount {
	var out []KeyCount
	for id, name := range n.names {
		if s := n.sum(id); s > 0 {
			out = append(out, KeyCount{Key: name, Count: s})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Key < out[j].Key
	})
	return out
}

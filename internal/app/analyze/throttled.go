package analyze

import (
	"cmp"
	"slices"
	"strings"

	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Throttled keys are counted exactly over whole inputs, however many. The
// store counts up to analyzeThrottledKeys keys per table and class
// exactly (Space-Saving past them, in time proportional to the events:
// sketch's lazy min-heap); past that its counts are bounds
// (sketch.ThrottleStats), and every throttled call's key is counted in a
// map once the inputs are read, from the spill of the read's events
// (spill.go): throttled calls are
// failures, few next to the traffic, and so are their keys. The map holds
// every throttled key of the inputs, its bytes and about 40 more (a million
// distinct throttled keys: docs/limits.md); the daemon, which runs for
// ever, keeps its bounded set instead.
const analyzeThrottledKeys = 1024

// throttleGroup names the throttled calls of one class of one table.
type throttleGroup struct {
	table, index string
	class        traffic.Class
}

// throttleCounter counts the throttled calls of every key of a part of the
// inputs, per table and class: each key's place in counts, by its name.
// A key found is only looked up (assigning to a map entry would store the
// key given, and the events' strings are the decoders' buffers); a new
// one is cloned. A key costs its bytes, its map entry and 8 bytes of
// count.
type throttleCounter struct {
	groups map[throttleGroup]*keyCounts
	last   *keyCounts
	lastG  throttleGroup
}

// keyCounts is one group's keys and their counts.
type keyCounts struct {
	index  map[string]int32
	counts []uint64
	keys   []string
}

func newThrottleCounter() *throttleCounter {
	return &throttleCounter{groups: map[throttleGroup]*keyCounts{}}
}

// group returns the counts of g, made if new.
func (tc *throttleCounter) group(g throttleGroup) *keyCounts {
	if tc.last != nil && tc.lastG == g {
		return tc.last
	}
	kc := tc.groups[g]
	if kc == nil {
		g.table, g.index = strings.Clone(g.table), strings.Clone(g.index)
		kc = &keyCounts{index: map[string]int32{}}
		tc.groups[g] = kc
	}
	tc.last, tc.lastG = kc, g
	return kc
}

// add counts one throttled call, checked as the store got it.
func (tc *throttleCounter) add(e *traffic.Event) {
	if e.PK == "" {
		return
	}
	pk := e.PK
	if len(pk) > sketch.MaxKeyBytes {
		pk = sketch.HeldKey(pk) // as the store names it
	}
	tc.group(throttleGroup{e.Table, e.Index, e.Class}).add(pk, 1)
}

// add counts n calls of key.
func (kc *keyCounts) add(key string, n uint64) {
	if i, ok := kc.index[key]; ok {
		kc.counts[i] += n
		return
	}
	key = strings.Clone(key)
	kc.index[key] = int32(len(kc.counts))
	kc.counts = append(kc.counts, n)
	kc.keys = append(kc.keys, key)
}

// addBytes counts n calls of key, given as bytes: copied only when new.
func (kc *keyCounts) addBytes(key []byte, n uint64) {
	if i, ok := kc.index[string(key)]; ok {
		kc.counts[i] += n
		return
	}
	kc.add(string(key), n)
}

// absorb adds o's counts.
func (tc *throttleCounter) absorb(o *throttleCounter) {
	for g, okc := range o.groups {
		kc := tc.group(g)
		for i, key := range okc.keys {
			kc.add(key, okc.counts[i])
		}
	}
}

// needsThrottleRecount reports whether some table's throttled keys were
// counted within bounds rather than exactly.
func needsThrottleRecount(snap *sketch.Snapshot) bool {
	for _, ts := range snap.Tables {
		for _, cs := range ts.Classes {
			if cs.Throttled.Error > 0 {
				return true
			}
			for _, k := range cs.Throttled.Keys {
				if k.Count != k.Max {
					return true
				}
			}
		}
	}
	return false
}

// apply sets the throttled keys of every class of snap that the store
// counted within bounds to the exact counts of all its keys.
func (tc *throttleCounter) apply(snap *sketch.Snapshot) {
	for i := range snap.Tables {
		ts := &snap.Tables[i]
		for c := range ts.Classes {
			st := &ts.Classes[c].Throttled
			if st.Error == 0 && !bounded(st.Keys) {
				continue
			}
			var counted []sketch.KeyCount
			if kc := tc.groups[throttleGroup{ts.Table, ts.Index, traffic.Class(c)}]; kc != nil {
				counted = make([]sketch.KeyCount, len(kc.keys))
				for j, key := range kc.keys {
					counted[j] = sketch.KeyCount{Key: key, Count: kc.counts[j], Max: kc.counts[j]}
				}
			}
			st.Keys, st.Error = counted, 0
			slices.SortFunc(st.Keys, func(a, b sketch.KeyCount) int {
				return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Key, b.Key))
			})
		}
	}
}

// bounded reports whether a key's count is known only within bounds.
func bounded(keys []sketch.KeyCount) bool {
	for _, k := range keys {
		if k.Count != k.Max {
			return true
		}
	}
	return false
}

package analyze

import (
	"cmp"
	"slices"
	"strings"

	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Throttled keys are counted exactly over whole inputs. The store counts
// up to analyzeThrottledKeys keys per table and class exactly; past that
// its counts are bounds (sketch.ThrottleStats), and the inputs are read a
// second time, with every throttled call's key counted in a map: throttled
// calls are failures, few next to the traffic, and so are their keys. The
// map holds at most maxRecountKeys keys per part of the inputs (about
// 100 bytes each); a key past it keeps the store's bounds.
const (
	analyzeThrottledKeys = 1024
	maxRecountKeys       = 1 << 18
)

// throttledKey names one key of one class of one table's throttled calls.
type throttledKey = rankedKey

// throttleCounter counts the throttled calls of every key of a part of the
// inputs, up to maxRecountKeys keys.
type throttleCounter struct {
	// counts are pointers: assigning to a map entry stores the key given,
	// and the events' strings are the decoders' buffers.
	counts map[throttledKey]*uint64
	// full is set once a key could not be counted: the counts of the keys
	// counted are then what this part saw of them since they were first
	// counted, all of it (a key is counted from its first call or never),
	// but keys not counted are not.
	full bool
}

func newThrottleCounter() *throttleCounter {
	return &throttleCounter{counts: map[throttledKey]*uint64{}}
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
	id := throttledKey{e.Table, e.Index, pk, e.Class}
	if n := tc.counts[id]; n != nil {
		*n++
		return
	}
	if len(tc.counts) >= maxRecountKeys {
		tc.full = true
		return
	}
	id.table, id.index, id.key = strings.Clone(id.table), strings.Clone(id.index), strings.Clone(id.key)
	n := uint64(1)
	tc.counts[id] = &n
}

// absorb adds o's counts. A key one part counted and a full part did not
// may have had calls there: the sum is what is known of it.
func (tc *throttleCounter) absorb(o *throttleCounter) {
	tc.full = tc.full || o.full
	for id, n := range o.counts {
		if m := tc.counts[id]; m != nil {
			*m += *n
		} else {
			tc.counts[id] = n
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
// counted within bounds: to the exact counts of all its keys, when every
// part counted all its keys (a key's count then adds up over the classes
// exactly); otherwise each key counted takes what is known of it as its
// lower bound, and the store's bounds stay.
func (tc *throttleCounter) apply(snap *sketch.Snapshot) {
	type entry struct{ table, index string }
	exact := map[entry]*[traffic.NumClasses][]sketch.KeyCount{}
	for id, n := range tc.counts {
		e := entry{id.table, id.index}
		if exact[e] == nil {
			exact[e] = &[traffic.NumClasses][]sketch.KeyCount{}
		}
		exact[e][id.class] = append(exact[e][id.class], sketch.KeyCount{Key: id.key, Count: *n, Max: *n})
	}
	for i := range snap.Tables {
		ts := &snap.Tables[i]
		for c := range ts.Classes {
			st := &ts.Classes[c].Throttled
			if st.Error == 0 && !bounded(st.Keys) {
				continue
			}
			var counted []sketch.KeyCount
			if x := exact[entry{ts.Table, ts.Index}]; x != nil {
				counted = x[c]
			}
			if !tc.full {
				st.Keys, st.Error = counted, 0
			} else {
				known := make(map[string]uint64, len(counted))
				for _, k := range counted {
					known[k.Key] = k.Count
				}
				for j := range st.Keys {
					k := &st.Keys[j]
					k.Count = max(k.Count, min(known[k.Key], k.Max))
				}
			}
			slices.SortFunc(st.Keys, func(a, b sketch.KeyCount) int {
				return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(b.Max, a.Max), cmp.Compare(a.Key, b.Key))
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

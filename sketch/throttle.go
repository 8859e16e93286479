package sketch

import (
	"slices"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// throttle is one class's throttled calls in a table's window: per slot,
// their counts by cause (exact), and the most throttled keys (namedCounts,
// within bounds once more keys were throttled than it keeps). A class
// that was never throttled has none.
type throttle struct {
	causes [][traffic.NumThrottleCauses]uint64 // [slot][cause]
	keys   *namedCounts                        // nil until a throttled call with a key
}

func newThrottle(slots int) *throttle {
	return &throttle{causes: make([][traffic.NumThrottleCauses]uint64, slots)}
}

// add counts one throttled call in slot s.
func (th *throttle) add(e *traffic.Event, s int, cfg *Config) {
	th.causes[s][e.ThrottleReason.Cause()]++
	if e.PK == "" {
		return
	}
	if th.keys == nil {
		th.keys = newNamedCounts(cfg.MaxThrottledKeys, cfg.SubWindows, true)
	}
	th.keys.add(e.PK, s)
}

// inSlot reports whether slot s holds a throttled call.
func (th *throttle) inSlot(s int) bool {
	for _, c := range th.causes[s] {
		if c != 0 {
			return true
		}
	}
	return false
}

// clear expires slot s.
func (th *throttle) clear(s int) {
	th.causes[s] = [traffic.NumThrottleCauses]uint64{}
	if th.keys != nil {
		th.keys.clear(s)
	}
}

// events counts the throttled calls in the window.
func (th *throttle) events() uint64 {
	var n uint64
	for s := range th.causes {
		for _, c := range th.causes[s] {
			n += c
		}
	}
	return n
}

// stats is the window's ThrottleStats, with at most tracked keys.
func (th *throttle) stats(tracked int) ThrottleStats {
	var st ThrottleStats
	for s := range th.causes {
		for c, n := range th.causes[s] {
			st.Causes[c] += n
			st.Events += n
		}
	}
	if th.keys != nil {
		st.Keys, st.Error = cutKeyCounts(th.keys.collect(), tracked, th.keys.bound())
	}
	st.clampBounds()
	return st
}

// clampBounds keeps every upper bound within the calls there were: no key
// had more than all of them.
func (st *ThrottleStats) clampBounds() {
	for i := range st.Keys {
		st.Keys[i].Max = min(st.Keys[i].Max, st.Events)
	}
	st.Error = min(st.Error, st.Events)
}

func (th *throttle) clone() *throttle {
	c := &throttle{causes: slices.Clone(th.causes)}
	if th.keys != nil {
		c.keys = th.keys.clone()
	}
	return c
}

// absorb adds o's counts, slot by slot, as add would have.
func (th *throttle) absorb(o *throttle, cfg *Config) {
	for s := range o.causes {
		for c, n := range o.causes[s] {
			th.causes[s][c] += n
		}
	}
	if o.keys != nil {
		if th.keys == nil {
			th.keys = newNamedCounts(cfg.MaxThrottledKeys, cfg.SubWindows, true)
		}
		th.keys.absorb(o.keys)
	}
}

package sketch

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/axiomhq/hyperloglog"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// distinctMerge returns the distinct-key count when it is cached or exact,
// or a merged HyperLogLog whose estimate the caller computes outside the
// lock and stores with setDistinct. In live mode the HyperLogLog estimate
// is refreshed at most once per slot: it costs about half a millisecond and
// snapshots come every second. It is called with t.mu held.
func (t *table) distinctMerge() (uint64, *hyperloglog.Sketch) {
	if t.distinct == nil {
		return t.candidateKeys(), nil
	}
	if !t.distinctDirty {
		return t.distinctCache, nil
	}
	if t.cfg.Window > 0 && t.distinctDone && t.distinctEpoch == t.epoch && t.distinct.sketched() {
		return t.distinctCache, nil
	}
	n, merged := t.distinct.merge()
	if merged == nil {
		t.distinctCache, t.distinctDirty = n, false
		return n, nil
	}
	t.distinctDirty = false
	t.distinctEpoch, t.distinctDone = t.epoch, true
	return 0, merged
}

// candidateKeys counts the distinct keys of both classes' candidates, the
// distinct keys of the window while every key is a candidate.
func (t *table) candidateKeys() uint64 {
	r, w := t.classes[traffic.Read].cand, t.classes[traffic.Write].cand
	switch {
	case r == nil && w == nil:
		return 0
	case r == nil:
		return uint64(w.n)
	case w == nil:
		return uint64(r.n)
	}
	n := uint64(r.n)
	for id := range w.n {
		if r.find(w.rec[id].hash, w.keys[id]) < 0 {
			n++
		}
	}
	return n
}

// setDistinct stores an estimate made outside the lock.
func (t *table) setDistinct(n uint64) {
	t.mu.Lock()
	t.distinctCache = n
	t.mu.Unlock()
}

// snapshot copies the table out. sw says which seconds count. It is called
// with t.mu held.
func (t *table) snapshot(tracked int, sw *secWindow, scratch []keyStat) (TableSnapshot, []keyStat) {
	ts := TableSnapshot{Table: t.id.table, Index: t.id.index}
	slotSeconds := time.Duration(t.sc.slotNanos).Seconds()
	for c := range t.classes {
		cs := &t.classes[c]
		st := &ts.Classes[c]
		var peak, slotPeak float64
		for s := range cs.units {
			st.Units += cs.units[s]
			st.Events += cs.events[s]
			peak = max(peak, cs.peak[s])
			slotPeak = max(slotPeak, cs.units[s])
		}
		if slotSeconds > 0 {
			st.PeakUnitsPerSecond = slotPeak / slotSeconds
		}
		p, recent, last := read(sw, cs.ring, cs.sec, int64(len(cs.ring)-1))
		st.PeakSecondUnits = max(peak, p)
		st.RecentUnits, st.LastSecondUnits = recent, last
		st.TailUnits = tailOf(sw, cs.ring, cs.sec, int64(len(cs.ring)-1))
		ts.Tail = max(ts.Tail, len(st.TailUnits))
		ts.Events += st.Events
		st.Overflowed = t.cfg.Window == 0 && cs.cms != nil
		if cs.cand == nil {
			continue
		}
		scratch = cs.cand.collect(scratch[:0], sw, tracked)
		st.Top = topOf(scratch, tracked)
	}
	ts.DistinctKeys = t.distinctCache
	if t.exact != nil {
		t.exact.fill(&ts, sw)
	}
	if t.shards != nil {
		for _, kc := range t.shards.collect() {
			ts.Shards = append(ts.Shards, ShardStat{Shard: kc.Key, Records: kc.Count, PeakRecords: uint64(t.shards.peak(int(t.shards.index[kc.Key]), &t.sc))})
		}
	}
	for c, th := range t.throttles {
		if th != nil {
			// Over whole files every key counted is listed: analyze
			// counts again those whose count it cannot tell.
			n := tracked
			if t.cfg.Window == 0 {
				n = -1
			}
			ts.Classes[c].Throttled = th.stats(n)
			ts.ThrottledEvents += ts.Classes[c].Throttled.Events
		}
	}
	return ts, scratch
}

// topOf ranks the candidates and converts the heaviest to KeyStats.
func topOf(all []keyStat, tracked int) []KeyStat {
	slices.SortFunc(all, func(a, b keyStat) int {
		if a.units != b.units {
			return cmp.Compare(b.units, a.units)
		}
		return strings.Compare(a.key, b.key)
	})
	n := 0
	for n < len(all) && n < tracked && all[n].units > 0 {
		n++
	}
	if n == 0 {
		return nil
	}
	top := make([]KeyStat, n)
	for i := range top {
		a := &all[i]
		top[i] = KeyStat{
			Key:                a.key,
			Units:              float64(a.units) / quantum,
			Error:              float64(a.err) / quantum,
			Events:             a.events,
			SortKeys:           a.sortKeys,
			PeakUnitsPerSecond: float64(a.peak) / quantum,
			RecentUnits:        float64(a.recent) / quantum,
			LastSecondUnits:    float64(a.last) / quantum,
		}
		if len(a.tail) > 0 {
			top[i].TailUnits = make([]float64, len(a.tail))
			for j, q := range a.tail {
				top[i].TailUnits[j] = q / quantum
			}
		}
	}
	return top
}

// newest returns the newest second with traffic of a live table.
func (t *table) newest() int64 {
	return max(t.classes[traffic.Read].sec, t.classes[traffic.Write].sec)
}

// holdsTraffic reports whether the table's window holds any access or
// throttled call.
func (t *table) holdsTraffic() bool {
	for s := range t.cfg.SubWindows {
		if t.slotHasTraffic(s) {
			return true
		}
	}
	return false
}

// analyzeSeconds is the secWindow of whole files: peaks over every second,
// recent units over the seconds up to the latest event's. It is called with
// t.mu held.
func (t *table) analyzeSeconds(recent int) secWindow {
	sw := secWindow{from: math.MinInt64, to: math.MaxInt64, ref: t.sec + 1}
	sw.recentFrom = sw.ref - int64(recent)
	if !t.first.IsZero() {
		sw.recentFrom = max(sw.recentFrom, t.first.Unix())
	}
	return sw
}

// TablePart is what a Summary adds to a table's snapshot.
type TablePart struct {
	// SlotUnits and SlotPeaks are, per class, the units of each slot of the
	// window and of its busiest second, oldest slot first, the last one
	// being Slot, the number of the table's newest slot (its head).
	SlotUnits, SlotPeaks [traffic.NumClasses][]float64
	Slot                 int64
	// Registers is the HyperLogLog of the window's distinct partition keys
	// (axiomhq/hyperloglog's binary form); nil when it was left out.
	Registers []byte
}

// part returns the table's per-slot series, oldest slot first, with the
// seconds still in the per-second rings folded into their slots' peaks, and
// its distinct-key registers. It is called with t.mu held.
func (t *table) part(sw *secWindow, registers bool) TablePart {
	p := TablePart{Slot: t.epoch}
	n := t.cfg.SubWindows
	for c := range t.classes {
		cs := &t.classes[c]
		units, peaks := make([]float64, n), make([]float64, n)
		for i := range n {
			s := slotIndex(t.epoch-int64(n-1-i), n)
			units[i], peaks[i] = cs.units[s], cs.peak[s]
		}
		mask := int64(len(cs.ring) - 1)
		for x := cs.sec - mask; x <= cs.sec; x++ {
			if x < sw.from || x > sw.to {
				continue
			}
			s := t.sc.slotOf(x)
			if s < 0 {
				continue
			}
			i := n - 1 - (slotIndex(t.epoch, n)-s+n)%n
			peaks[i] = max(peaks[i], cs.ring[x&mask])
		}
		p.SlotUnits[c], p.SlotPeaks[c] = units, peaks
	}
	if !registers {
		return p
	}
	if b, err := t.registers().MarshalBinary(); err == nil {
		p.Registers = b
	}
	return p
}

// registers returns a HyperLogLog of the window's distinct keys, sharing
// nothing with the table. It is called with t.mu held.
func (t *table) registers() *hyperloglog.Sketch {
	if t.distinct != nil {
		return t.distinct.sketch()
	}
	sk, _ := hyperloglog.NewSketch(uint8(t.cfg.HLLPrecision), true)
	for c := range t.classes {
		if cand := t.classes[c].cand; cand != nil {
			for id := range cand.n {
				sk.InsertHash(cand.rec[id].hash)
			}
		}
	}
	return sk
}

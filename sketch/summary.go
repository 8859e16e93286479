package sketch

import (
	"github.com/axiomhq/hyperloglog"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// Summary is one replica's window as the other replicas need it to judge
// shares on the whole of a table's traffic: the snapshot (totals, top keys,
// shards, throttled keys), and per table the per-slot units and peaks of
// each class and the HyperLogLog registers of its distinct keys. Summaries
// of replicas that read disjoint parts of the traffic add up (Combine).
type Summary struct {
	Snapshot
	// SlotNanos is the length of a slot of the window and Slot the number
	// (Unix time / SlotNanos) of the clock's: a table's window ends at its
	// own head (TablePart.Slot), in event time. Slots are aligned on Unix
	// time, so two replicas' slots of the same number cover the same time.
	SlotNanos, Slot int64
	// Parts holds one entry per entry of Snapshot.Tables.
	Parts []TablePart
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

// Summary returns the current Snapshot with the parts other replicas need
// to add it to theirs. With registers it also merges each table's
// distinct-key registers, which costs about as much again as the snapshot
// (BenchmarkSummary); without, TablePart.Registers is nil.
func (s *Store) Summary(registers bool) *Summary {
	snap, parts := s.collect(true, registers, nil, nil)
	sum := &Summary{Snapshot: snap, Parts: parts, SlotNanos: int64(s.slot)}
	if s.slot > 0 {
		sum.Slot = s.clockAt(snap.End).epoch
	}
	return sum
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

package sketch

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

package detect

import (
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Raisers decides, for replicas that share the shards of their streams
// through a lease table and judge on the sum of their summaries, which
// replica raises each diagnosis: every replica computes the same report,
// and exactly one of them exports its series and announces it, so that
// alerts and log lines do not repeat per replica.
//
//   - A diagnosis about keys is raised by the replica whose shards carry
//     its first key (the one that counted the most of it in the window).
//   - A hot_partition diagnosis by the replica that read the shard.
//   - A table-wide cause (low_cardinality, a time_ordered_key without a
//     key), and one whose key no replica has in its top keys, by the
//     replica reading the table's lowest shard with records in the window
//     (without shards: the lowest worker id with traffic on the table).
//
// The same replica exports the table's table-wide series (its peaks,
// distinct keys, omitted and throttled keys), and each top key's series
// come from the replica that carries the key: every series has one source,
// so sums and maxima over instances are right.
//
// A diagnosis keeps the replica that raised it until it is cleared, so
// that the replica that announced it also announces its clearing, unless
// that replica is gone (stopped, or its summary stale): then the replica
// the rules name now takes it over. Raisers
// is used by one goroutine, the detector's tick.
type Raisers struct {
	self string
	held map[flagID]string
}

// flagID names a flagged diagnosis across evaluations.
type flagID struct{ table, index, class, key string }

// NewRaisers returns the Raisers of the replica named self.
func NewRaisers(self string) *Raisers {
	return &Raisers{self: self, held: map[flagID]string{}}
}

// Assign fills rep's Replica and RaisedBy fields from c, and returns the
// changes this replica announces: those of the diagnoses it raises.
func (r *Raisers) Assign(rep *report.Report, changes []report.Change, c *sketch.Combined) []report.Change {
	next := make(map[flagID]string, len(r.held))
	for i := range rep.Tables {
		t := &rep.Tables[i]
		t.Replica = c.TableReplica(t.Table, t.Index)
		for j := range t.TopKeys {
			k := &t.TopKeys[j]
			if cl, ok := traffic.ParseClass(k.Class); ok {
				k.Replica = c.KeyReplica(t.Table, t.Index, cl, k.Key)
			}
		}
		for j := range t.Diagnoses {
			d := &t.Diagnoses[j]
			id := flagID{t.Table, t.Index, d.Class, d.Key()}
			d.RaisedBy = r.held[id]
			if !c.Has(d.RaisedBy) {
				// Not raised before, or by a replica that is gone.
				d.RaisedBy = r.owner(c, t.Table, t.Index, d)
			}
			next[id] = d.RaisedBy
		}
	}
	var mine []report.Change
	for _, ch := range changes {
		id := flagID{ch.Table, ch.Index, ch.Diagnosis.Class, ch.Diagnosis.Key()}
		by, ok := next[id]
		if !ok {
			by, ok = r.held[id] // cleared: who raised it
		}
		if !ok {
			by = r.owner(c, ch.Table, ch.Index, &ch.Diagnosis)
		}
		ch.Diagnosis.RaisedBy = by
		if by == "" || by == r.self {
			mine = append(mine, ch)
		}
	}
	r.held = next
	return mine
}

// owner is the replica that raises d now.
func (r *Raisers) owner(c *sketch.Combined, table, index string, d *report.Diagnosis) string {
	key := d.Key()
	switch {
	case key == "":
	case d.KeyType() == report.StreamShard:
		if by := c.ShardReplica(table, index, key); by != "" {
			return by
		}
	default:
		if cl, ok := traffic.ParseClass(d.Class); ok {
			if by := c.KeyReplica(table, index, cl, key); by != "" {
				return by
			}
		}
	}
	return c.TableReplica(table, index)
}

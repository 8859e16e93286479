package detect

import (
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// LastSeconds returns every table's last complete second of snap, with
// the units of at most keys of the heaviest keys of each class: what a
// history of the last seconds records (export.Recent). Tables without a
// complete second have a zero At; a Kept entry (sketch.Store.SnapshotSince)
// gives an Idle second, in constant time.
func LastSeconds(snap sketch.Snapshot, keys int) []report.TableSecond {
	out := make([]report.TableSecond, len(snap.Tables))
	for i := range snap.Tables {
		ts := &snap.Tables[i]
		if ts.Kept {
			// Unchanged since it was last copied out: no traffic in its
			// recent seconds, the same keys.
			out[i] = report.TableSecond{Table: ts.Table, Index: ts.Index, At: ts.LastSecond, Idle: true}
			continue
		}
		t := report.TableSecond{Table: ts.Table, Index: ts.Index, Classes: make([]report.ClassSecond, traffic.NumClasses)}
		if !ts.LastSecond.IsZero() {
			t.At = ts.LastSecond
		}
		for c := range traffic.Class(traffic.NumClasses) {
			cs := &ts.Classes[c]
			top := cs.Top[:min(len(cs.Top), max(keys, 0))]
			ks := make([]report.KeySecond, len(top))
			for j, k := range top {
				ks[j] = report.KeySecond{Key: k.Key, Units: k.LastSecondUnits}
			}
			t.Classes[c] = report.ClassSecond{Class: c.String(), Units: cs.LastSecondUnits, Keys: ks}
		}
		out[i] = t
	}
	return out
}

package detect

import (
	"time"

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
	return LastSecondsInto(nil, snap, keys)
}

// LastSecondsInto is LastSeconds written into buf's array when it holds
// enough room (the caller's seconds of its previous evaluation, which it
// no longer reads): the seconds of a snapshot of idle tables then
// allocate nothing.
func LastSecondsInto(buf []report.TableSecond, snap sketch.Snapshot, keys int) []report.TableSecond {
	out := buf[:0]
	if cap(out) < len(snap.Tables) {
		out = make([]report.TableSecond, 0, len(snap.Tables))
	}
	out = out[:len(snap.Tables)]
	// Entries past the tables, from a longer buf, let go of what they held.
	clear(out[len(out):cap(out)])
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

// EarlierSeconds returns, per entry of snap.Tables and in their order,
// the complete seconds the entry carries before its last one
// (sketch.TableSnapshot.Tail), oldest first, as LastSeconds gives the
// last: nil for an entry without (a Kept one, or one whose judged second
// moved by one). It costs nothing for a table whose judged second did not
// jump. A class's units are given for every second its ring still held;
// a key's only for the seconds its ring held (its newest 8): in an older
// second the class's units are there and the key is left out, its units
// of those seconds being known only as part of its window's totals.
func EarlierSeconds(snap sketch.Snapshot, keys int) [][]report.TableSecond {
	var out [][]report.TableSecond
	for i := range snap.Tables {
		ts := &snap.Tables[i]
		if ts.Kept || ts.Tail == 0 || ts.LastSecond.IsZero() {
			continue
		}
		if out == nil {
			out = make([][]report.TableSecond, len(snap.Tables))
		}
		out[i] = tailSeconds(ts, keys)
	}
	return out
}

// tailSeconds builds an entry's Tail seconds, oldest first.
func tailSeconds(ts *sketch.TableSnapshot, keys int) []report.TableSecond {
	secs := make([]report.TableSecond, ts.Tail)
	for j := range secs {
		secs[j] = report.TableSecond{Table: ts.Table, Index: ts.Index, Classes: make([]report.ClassSecond, traffic.NumClasses),
			At: ts.LastSecond.Add(-time.Duration(ts.Tail-j) * time.Second)}
	}
	for c := range traffic.Class(traffic.NumClasses) {
		cs := &ts.Classes[c]
		top := cs.Top[:min(len(cs.Top), max(keys, 0))]
		for j := range secs {
			back := ts.Tail - j // seconds before LastSecond
			cl := report.ClassSecond{Class: c.String()}
			if n := len(cs.TailUnits); back <= n {
				cl.Units = cs.TailUnits[n-back]
			}
			for _, k := range top {
				if n := len(k.TailUnits); back <= n {
					cl.Keys = append(cl.Keys, report.KeySecond{Key: k.Key, Units: k.TailUnits[n-back]})
				}
			}
			secs[j].Classes[c] = cl
		}
	}
	return secs
}

// Package judge is the daemon's judgement at every tick of the detector:
// which window it judges — this process's alone, or the sum of the
// windows of every replica sharing a lease table — the detector's
// hysteresis over it (detect.Tracker), and, with replicas, which of them
// raises each diagnosis (detect.Raisers). The daemon's tick calls one
// Evaluator, whichever it is.
//
// It sits between the daemon's wiring and the detector: it imports
// detect and sketch, and declares the Board it exchanges summaries on,
// which the wiring builds over the lease table; nothing imports it but
// the daemon's wiring.
package judge

import (
	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// Judgement is what one evaluation produced.
type Judgement struct {
	// Snapshot is the window judged: this process's, or, with replicas,
	// the sum of every live replica's (what detect.LastSeconds reads for
	// the page's charts). Alone, a table that did not change since the
	// last evaluation has a Kept entry, without counts, and the entries
	// are written over by the next evaluation: read them before it.
	Snapshot sketch.Snapshot
	// Report is the report of the window, with hysteresis (detect.Tracker);
	// with replicas, each diagnosis says which replica raises it.
	Report report.Report
	// Revisions holds, for each table of Report, a number that changes
	// whenever the table's report does (0: unknown, render it anew): what
	// the exporters cache a table's output by.
	Revisions []uint64
	// Changes are the diagnoses this process announces: raised, changed
	// or cleared in this evaluation (with replicas, those it raises).
	Changes []report.Change
}

// Evaluator judges the window. It is called by one goroutine, the
// detector's tick, and never concurrently. The tick evaluates once in
// each second of the clock, and between those whenever Moved says so.
type Evaluator interface {
	// Evaluate judges the window as it is now.
	Evaluate() Judgement
	// Moved reports, at a cost that does not grow with the tables, whether
	// the window may have changed since the last Evaluate in a way that a
	// new one would show (a table's second closed, its window moved):
	// whether it is worth evaluating before the clock's next second.
	Moved() bool
}

// Alone returns the Evaluator of a process that reads its sources alone:
// it judges its own window, and of it only the tables that changed
// (sketch.Store.SnapshotSince, detect.Tracker).
func Alone(store *sketch.Store, tracker *detect.Tracker) Evaluator {
	return &alone{store: store, tracker: tracker}
}

type alone struct {
	store   *sketch.Store
	tracker *detect.Tracker
	pulse   sketch.Pulse
	// last is the previous snapshot, whose entries the next one is
	// written over.
	last []sketch.TableSnapshot
}

func (a *alone) Evaluate() Judgement {
	a.pulse = a.store.Pulse()
	snap := a.store.SnapshotSince(a.tracker.Held, a.last)
	a.last = snap.Tables
	rep, changes := a.tracker.Evaluate(snap)
	return Judgement{Snapshot: snap, Report: rep, Revisions: a.tracker.Revisions(), Changes: changes}
}

func (a *alone) Moved() bool { return a.store.Pulse() != a.pulse }

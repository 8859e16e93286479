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
	// the page's charts).
	Snapshot sketch.Snapshot
	// Report is the report of the window, with hysteresis (detect.Tracker);
	// with replicas, each diagnosis says which replica raises it.
	Report report.Report
	// Changes are the diagnoses this process announces: raised, changed
	// or cleared in this evaluation (with replicas, those it raises).
	Changes []report.Change
}

// Evaluator judges the window once per tick. It is called by one
// goroutine, the detector's tick, and never concurrently.
type Evaluator interface {
	Evaluate() Judgement
}

// Alone returns the Evaluator of a process that reads its sources alone:
// it judges its own window.
func Alone(store *sketch.Store, tracker *detect.Tracker) Evaluator {
	return alone{store: store, tracker: tracker}
}

type alone struct {
	store   *sketch.Store
	tracker *detect.Tracker
}

func (a alone) Evaluate() Judgement {
	snap := a.store.Snapshot()
	rep, changes := a.tracker.Evaluate(snap)
	return Judgement{Snapshot: snap, Report: rep, Changes: changes}
}

package export

import (
	"sync/atomic"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

// State is one detector tick's result: the report it made, which every
// output (metrics, API, logs) renders. A State is immutable once published.
type State struct {
	// Report is the detector's report (in live mode, with the findings the
	// tracker holds flagged).
	Report report.Report
	// Updated is when the State was published.
	Updated time.Time
	// Revisions holds, when not nil, a number per table of Report that
	// changes whenever the table's report does (0: unknown): the Collector
	// keeps a table's series while its revision stays.
	Revisions []uint64
}

// Live holds the latest State. The detector tick publishes with Update; the
// collector and the API read with Load, never blocking ingestion or each
// other (an atomic pointer swap). It is safe for concurrent use.
type Live struct {
	now   func() time.Time
	state atomic.Pointer[State]
}

// NewLive returns an empty Live. now stamps each update; nil means time.Now.
func NewLive(now func() time.Time) *Live {
	if now == nil {
		now = time.Now
	}
	return &Live{now: now}
}

// Update publishes the result of one detector tick. The caller must not
// modify rep afterwards.
func (l *Live) Update(rep report.Report) {
	l.state.Store(&State{Report: rep, Updated: l.now()})
}

// Publish is Update with each table's revision (judge.Judgement's
// Revisions, parallel to rep.Tables; nil when unknown), so that renderers
// of the State redo only the tables whose revision changed. The caller
// must not modify rep or revisions afterwards.
func (l *Live) Publish(rep report.Report, revisions []uint64) {
	if len(revisions) != len(rep.Tables) {
		revisions = nil
	}
	l.state.Store(&State{Report: rep, Updated: l.now(), Revisions: revisions})
}

// Load returns the latest State, or nil before the first Update.
func (l *Live) Load() *State {
	return l.state.Load()
}

// TableLabel returns the value of the metrics' table label for a table or,
// when index is not empty, for one of its indexes: "orders" and
// "orders/status-index". DynamoDB table and index names cannot contain "/",
// so the label is unambiguous; the JSON report keeps table and index apart.
func TableLabel(table, index string) string {
	if index == "" {
		return table
	}
	return table + "/" + index
}

package export

import (
	"sync/atomic"
	"time"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// State is one detector tick's result: the window it looked at and the
// report it made. A State is immutable once published.
type State struct {
	// Snapshot is the window the report was made from; the key metrics are
	// read from it.
	Snapshot sketch.Snapshot
	// Report is the detector's report (in live mode, with the findings the
	// tracker holds flagged).
	Report detect.Report
	// Updated is when the State was published.
	Updated time.Time
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
// modify snap or rep afterwards.
func (l *Live) Update(snap sketch.Snapshot, rep detect.Report) {
	l.state.Store(&State{Snapshot: snap, Report: rep, Updated: l.now()})
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

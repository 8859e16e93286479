// Package view is the history's view model: what GET /api/v1/history and
// GET /api/v1/incidents answer (Answer, Incident) and what they ask
// (Query). It imports nothing of hotkeyd, so that the renderers (export)
// show the history without standing on the store, its database or the
// sketches it folds: package history fills these, export renders them.
package view

import (
	"errors"
	"time"
)

// ErrBadQuery marks a query the store cannot answer as asked: the API
// answers it 400.
var ErrBadQuery = errors.New("bad query")

// Query asks for the cells of one table (or index) over a time range.
type Query struct {
	// Table is required; Index is empty for the base table.
	Table, Index string
	// Class is "read" or "write"; empty asks for both.
	Class string
	// From and To bound the range: cells that start in [From, To).
	From, To time.Time
	// Step asks for a resolution: rounded to the finest kept one at least
	// as coarse. Zero lets the store pick (history.MaxCells).
	Step time.Duration
}

// Answer is the cells of a Query: the JSON of GET /api/v1/history.
type Answer struct {
	Table       string          `json:"table"`
	Index       string          `json:"index"`
	From        time.Time       `json:"from"`
	To          time.Time       `json:"to"`
	StepSeconds int64           `json:"step_seconds"`
	Resolutions []ResolutionDoc `json:"resolutions"`
	Series      []Series        `json:"series"`
}

// ResolutionDoc is a Resolution as the API shows it.
type ResolutionDoc struct {
	StepSeconds int64 `json:"step_seconds"`
	KeptSeconds int64 `json:"kept_seconds"`
}

// Series is one class's cells, oldest first. A cell with no traffic is
// omitted.
type Series struct {
	Class string `json:"class"`
	// Ceiling is one partition's ceiling for the class (1000 WCU/s,
	// 3000 RCU/s): what a busiest second is held against.
	Ceiling float64 `json:"ceiling_units_per_second"`
	Cells   []Cell  `json:"cells"`
}

// Cell is one class's traffic over one step.
type Cell struct {
	Start time.Time `json:"start"`
	// Units are the class's units in the cell's judged seconds.
	Units float64 `json:"units"`
	// Events estimates the calls: each second's units over the window's
	// units per call of the class at that second.
	Events uint64 `json:"events"`
	// Throttled estimates the throttled calls: each second at the rate
	// the window held at that second.
	Throttled uint64 `json:"throttled"`
	// DistinctKeys is the most distinct keys a judged window held during
	// the cell (the window's, not the cell's: a floor when the cell is
	// longer than the window).
	DistinctKeys uint64 `json:"distinct_keys"`
	// BusiestSecond is the units of the cell's busiest second.
	BusiestSecond float64 `json:"busiest_second_units"`
	// Keys are the cell's heaviest keys, heaviest first (at most
	// TopKeys); Rest is the rest of the cell's units.
	Keys []KeyCell `json:"keys"`
	Rest Rest      `json:"rest"`
	// Shards are the stream shards' shares of the cell's records, most
	// first; absent for a table not read from a stream.
	Shards []ShardCell `json:"shards,omitempty"`
}

// KeyCell is one key's traffic in a cell.
type KeyCell struct {
	Key           string  `json:"key"`
	Units         float64 `json:"units"`
	BusiestSecond float64 `json:"busiest_second_units"`
	Share         float64 `json:"share"`
}

// Rest is the units of a cell's keys but its top keys.
type Rest struct {
	Units float64 `json:"units"`
	Share float64 `json:"share"`
}

// ShardCell is one stream shard's share of a cell's records.
type ShardCell struct {
	Shard   string  `json:"shard"`
	Records uint64  `json:"records"`
	Share   float64 `json:"share"`
}

// Incident is one diagnosis from the time it was raised to the time it
// cleared: an element of GET /api/v1/incidents.
type Incident struct {
	// ID names the incident (a hash: it carries no key).
	ID    string   `json:"id"`
	Table string   `json:"table"`
	Index string   `json:"index"`
	Cause string   `json:"cause"`
	Keys  []string `json:"keys"`
	Class string   `json:"class"`
	// Severity is the highest the diagnosis reached.
	Severity string    `json:"severity"`
	Start    time.Time `json:"start"`
	// End is nil while the incident is open.
	End *time.Time `json:"end"`
	// Peak is the highest busiest second of the diagnosis's hottest key.
	Peak    float64 `json:"peak_units_per_second"`
	Summary string  `json:"summary"`
	Fix     string  `json:"fix"`
	// FixKind is the kind of the fix (write_sharding, capacity, ...).
	FixKind string `json:"fix_kind"`
}

package report

import "time"

// History is one table's (or index's) traffic over a time range, cell by
// cell: the shape /api/v1/history answers (agreed with the history
// store) and the HTML report of analyze carries, which the page draws as
// heatmaps of keys × time and stream shards × time.
type History struct {
	Table string `json:"table"`
	Index string `json:"index"`
	// From and To are the range asked for; cells start in it.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Step is the length of a cell, in seconds.
	Step int64 `json:"step_seconds"`
	// Resolutions are the steps the store keeps and for how long (empty
	// in a report, which has one).
	Resolutions []Resolution `json:"resolutions,omitempty"`
	// Series holds one entry per class with traffic.
	Series []HistorySeries `json:"series"`
}

// Resolution is one step a history keeps, and for how long, in seconds.
type Resolution struct {
	Step int64 `json:"step_seconds"`
	Kept int64 `json:"kept_seconds"`
}

// HistorySeries is one class's cells: a cell with no traffic is left
// out (a gap).
type HistorySeries struct {
	Class string `json:"class"`
	// Ceiling is one partition's ceiling for the class, units per second:
	// what a busiest second is drawn against.
	Ceiling float64       `json:"ceiling_units_per_second"`
	Cells   []HistoryCell `json:"cells"`
}

// HistoryCell is one step of one class.
type HistoryCell struct {
	Start     time.Time `json:"start"`
	Units     float64   `json:"units"`
	Events    uint64    `json:"events"`
	Throttled uint64    `json:"throttled"`
	// DistinctKeys is the distinct partition keys of the cell, where
	// known (the report's cells leave it out).
	DistinctKeys uint64 `json:"distinct_keys,omitempty"`
	// BusiestSecond is the table's most units of the class in one second
	// of the cell.
	BusiestSecond float64 `json:"busiest_second_units"`
	// Keys are the cell's heaviest keys, heaviest first; Rest is every
	// other key.
	Keys []HistoryKey `json:"keys"`
	Rest HistoryRest  `json:"rest"`
	// Shards are the stream shards' records, for tables read from a
	// stream.
	Shards []HistoryShard `json:"shards,omitempty"`
}

// HistoryKey is one key's part of a cell.
type HistoryKey struct {
	Key string `json:"key"`
	// KeyText is a printable form of a binary key, where one was kept.
	KeyText       string  `json:"key_text"`
	Units         float64 `json:"units"`
	BusiestSecond float64 `json:"busiest_second_units"`
	Share         float64 `json:"share"`
}

// HistoryRest is the units of a cell outside its keys.
type HistoryRest struct {
	Units float64 `json:"units"`
	Share float64 `json:"share"`
}

// HistoryShard is one stream shard's records in a cell.
type HistoryShard struct {
	Shard   string  `json:"shard"`
	Records uint64  `json:"records"`
	Share   float64 `json:"share"`
}

// Incident is one diagnosis from the time it was raised to the time it
// cleared (End nil while open): the shape /api/v1/incidents answers in
// {"incidents": [...]} and analyze reports.
type Incident struct {
	ID    string   `json:"id"`
	Table string   `json:"table"`
	Index string   `json:"index"`
	Cause string   `json:"cause"`
	Keys  []string `json:"keys"`
	Class string   `json:"class"`
	// Severity is the highest the diagnosis reached.
	Severity string     `json:"severity"`
	Start    time.Time  `json:"start"`
	End      *time.Time `json:"end"`
	// Peak is the most units per second the diagnosis saw.
	Peak    float64 `json:"peak_units_per_second"`
	Summary string  `json:"summary"`
	Fix     string  `json:"fix"`
}

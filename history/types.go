package history

import (
	"time"

	"github.com/hotkeyd/hotkeyd/history/view"
)

// Resolution is one layer of cells: cells of Step each, kept for Keep.
type Resolution struct {
	Step time.Duration
	Keep time.Duration
}

// DefaultResolutions are the layers kept, finest first: those of Spanner's
// Key Visualizer (1-minute cells for 6 hours, 10-minute cells for 4 days,
// 1-hour cells for 28 days;
// https://cloud.google.com/spanner/docs/key-visualizer).
var DefaultResolutions = []Resolution{
	{Step: time.Minute, Keep: 6 * time.Hour},
	{Step: 10 * time.Minute, Keep: 4 * 24 * time.Hour},
	{Step: time.Hour, Keep: 28 * 24 * time.Hour},
}

// MaxCells is about how many cells a Query answers at most per series when
// it picks the step itself: the finest step covering the range in as many.
const MaxCells = 1500

// The shapes the API answers live in package view, which the renderers
// import without the store; the store names them here.
type (
	// Query asks for the cells of one table (or index) over a time range.
	Query = view.Query
	// Answer is the cells of a Query: the JSON of GET /api/v1/history.
	Answer = view.Answer
	// ResolutionDoc is a Resolution as the API shows it.
	ResolutionDoc = view.ResolutionDoc
	// Series is one class's cells, oldest first.
	Series = view.Series
	// Cell is one class's traffic over one step.
	Cell = view.Cell
	// KeyCell is one key's traffic in a cell.
	KeyCell = view.KeyCell
	// Rest is the units of a cell's keys but its top keys.
	Rest = view.Rest
	// ShardCell is one stream shard's share of a cell's records.
	ShardCell = view.ShardCell
	// Incident is one diagnosis from the time it was raised to the time
	// it cleared: an element of GET /api/v1/incidents.
	Incident = view.Incident
)

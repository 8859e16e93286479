package report

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
)

// Series is the traffic of tables over time, point by point: what the live
// page (/api/v1/hotkeys/history) and the HTML report of analyze draw. It
// goes with a Report: its keys are that report's top keys.
type Series struct {
	// End is the End of the Report the series go with.
	End time.Time `json:"end"`
	// Threshold is the share that makes a key hot, drawn on the share bars.
	Threshold float64 `json:"threshold"`
	// Tables holds one entry per table and index, as Report.Tables.
	Tables []TableSeries `json:"tables"`
}

// TableSeries is one table's, or one index's, traffic over time.
type TableSeries struct {
	Table string `json:"table"`
	Index string `json:"index,omitempty"`
	// Start is the start of the first point; each point covers Step
	// seconds after the one before. The daemon's points are one second
	// each; analyze's cover the whole input in at most a few hundred
	// points, each the mean rate of Step seconds.
	Start time.Time `json:"start"`
	Step  int64     `json:"step_seconds"`
	// Classes holds the table's reads and writes, reads first.
	Classes []ClassSeries `json:"classes"`
	// Keys are the report's top keys of the entry, in the order of its
	// top_keys.
	Keys []KeySeries `json:"keys"`
}

// ClassSeries is one class's units per second, point by point.
type ClassSeries struct {
	Class          string `json:"class"`
	UnitsPerSecond Points `json:"units_per_second"`
}

// KeySeries is one key's units per second, point by point; a point the
// counting cannot tell (the key was not among those recorded then) is
// null.
type KeySeries struct {
	Key            string `json:"key"`
	Class          string `json:"class"`
	UnitsPerSecond Points `json:"units_per_second"`
}

// Points are the values of a series. A NaN is a point without a value,
// written as JSON null.
type Points []float64

// MarshalJSON writes the points as a JSON array, NaN as null.
func (p Points) MarshalJSON() ([]byte, error) {
	if p == nil {
		return []byte("[]"), nil
	}
	b := make([]byte, 0, 2+len(p)*6)
	b = append(b, '[')
	for i, v := range p {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	return append(b, ']'), nil
}

// UnmarshalJSON reads a JSON array of numbers and nulls, null as NaN.
func (p *Points) UnmarshalJSON(b []byte) error {
	var raw []*float64
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(Points, len(raw))
	for i, v := range raw {
		if v == nil {
			out[i] = math.NaN()
		} else {
			out[i] = *v
		}
	}
	*p = out
	return nil
}

// TableSecond is one table's, or one index's, last complete second as
// counted: its classes' units and those of its heaviest keys. The daemon
// records one per table at every evaluation (export.History), from which
// /api/v1/hotkeys/history draws the live page's charts.
type TableSecond struct {
	Table string
	Index string
	// At is the second; the zero time when the table has had none
	// complete yet.
	At time.Time
	// Classes holds reads and writes, in that order.
	Classes []ClassSecond
}

// ClassSecond is one class's units in a second, with its heaviest keys'.
type ClassSecond struct {
	Class string
	Units float64
	// Keys are the class's heaviest keys of the window, heaviest first,
	// with their units in the second.
	Keys []KeySecond
}

// KeySecond is a key's units in one second.
type KeySecond struct {
	Key   string
	Units float64
}

package report

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"
)

// DefaultTop is the number of top keys per class a report lists unless
// told otherwise (detect.DefaultSettings' top).
const DefaultTop = 10

// ChartKeys is how many of each class's heaviest keys the charts follow
// second by second (the daemon's last seconds, export.Recent, and the
// analyze report's series) when the report lists top keys per class:
// twice as many, and at least twice DefaultTop, so that a key that climbs
// into the top has its past seconds too.
func ChartKeys(top int) int { return 2 * max(top, DefaultTop) }

// Series is the traffic of tables over time, point by point: what the live
// page (/api/v1/hotkeys/history) and the HTML report of analyze draw. It
// goes with a Report: its keys are that report's top keys, and what they
// are drawn against (the threshold, the ceilings) is the report's
// Settings. BuildSeries makes it.
type Series struct {
	// End is the End of the Report the series go with.
	End time.Time `json:"end"`
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
// records one per table at every evaluation (export.Recent), from which
// /api/v1/hotkeys/history draws the live page's charts.
type TableSecond struct {
	Table string
	Index string
	// At is the second; the zero time when the table has had none
	// complete yet.
	At time.Time
	// Classes holds reads and writes, in that order.
	Classes []ClassSecond
	// Idle says that the table had no traffic in the second and that its
	// heaviest keys are those of the second before: Classes is then empty
	// (the live detector did not copy the table out again).
	Idle bool
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

// Classes are the classes of a TableSeries, in order: a Steps indexes its
// classes the same way.
var Classes = [2]string{"read", "write"}

// StepUnits is what a Steps knows of one step's classes.
type StepUnits struct {
	// Classes holds the units of each class (indexed as Classes) in the
	// step; NaN when nothing is known of the step.
	Classes [2]float64
	// Absent is, per class, the units of a top key the step did not keep:
	// 0 when the step knows the key had none, NaN when it cannot tell.
	Absent [2]float64
}

// Steps is one table's traffic, recorded step by step, as BuildSeries
// reads it. The daemon's History (one-second steps from the snapshots)
// and analyze's recorder (steps of the input's event times) each keep
// their own and implement it; BuildSeries turns either into a
// TableSeries.
type Steps interface {
	// Span returns the start of the first step, the length of a step in
	// seconds (at least 1) and the number of steps.
	Span() (start time.Time, step int64, n int)
	// Step returns step i's units, 0 ≤ i < n, and calls key for every key
	// the step kept, with its class (indexed as Classes) and its units.
	Step(i int, key func(key string, class int, units float64)) StepUnits
}

// BuildSeries returns the series that go with rep: for each of its tables,
// the mean units per second of its classes and of its top keys (in the
// order of its top_keys), step by step, from steps(table, index) (nil:
// none recorded). top > 0 keeps that many keys per class. Keys are as in
// rep.
func BuildSeries(rep Report, top int, steps func(table, index string) Steps) Series {
	out := Series{End: rep.End, Tables: make([]TableSeries, 0, len(rep.Tables))}
	for _, t := range rep.Tables {
		out.Tables = append(out.Tables, tableSeries(t, top, steps(t.Table, t.Index)))
	}
	return out
}

// keyClass names a key's series: the same key in the two classes is two.
type keyClass struct {
	key   string
	class int
}

func tableSeries(t TableReport, top int, st Steps) TableSeries {
	ts := TableSeries{Table: t.Table, Index: t.Index, Step: 1, Classes: []ClassSeries{}, Keys: []KeySeries{}}
	n := 0
	if st != nil {
		var start time.Time
		start, ts.Step, n = st.Span()
		ts.Start = start.UTC()
	}
	for _, c := range Classes {
		ts.Classes = append(ts.Classes, ClassSeries{Class: c, UnitsPerSecond: make(Points, n)})
	}
	// Which series a kept key feeds: (key, class) to its index in Keys.
	index := map[keyClass]int{}
	var classOf []int
	perClass := map[string]int{}
	for _, k := range t.TopKeys {
		if top > 0 && perClass[k.Class] >= top {
			continue
		}
		perClass[k.Class]++
		c := slices.Index(Classes[:], k.Class)
		if c < 0 {
			continue
		}
		index[keyClass{k.Key, c}] = len(ts.Keys)
		classOf = append(classOf, c)
		ts.Keys = append(ts.Keys, KeySeries{Key: k.Key, Class: k.Class, UnitsPerSecond: make(Points, n)})
	}
	step := float64(ts.Step)
	kept := make([]bool, len(ts.Keys))
	for i := range n {
		clear(kept)
		u := st.Step(i, func(key string, class int, units float64) {
			if j, ok := index[keyClass{key, class}]; ok {
				ts.Keys[j].UnitsPerSecond[i] = units / step
				kept[j] = true
			}
		})
		for c := range ts.Classes {
			ts.Classes[c].UnitsPerSecond[i] = u.Classes[c] / step
		}
		for j := range ts.Keys {
			if !kept[j] {
				ts.Keys[j].UnitsPerSecond[i] = u.Absent[classOf[j]]
			}
		}
	}
	return ts
}

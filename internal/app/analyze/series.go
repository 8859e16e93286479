package analyze

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// MaxPoints bounds the points of each table's series in the HTML report:
// the whole input in at most this many, each the mean units per second of
// a step of 1, 2, 4, … seconds.
const MaxPoints = 300

// recorder is the sink in front of the store that keeps, table by table,
// what the HTML report draws: the units of each class and of the heaviest
// keys of each step of the input, by event time. The report's top keys are
// known only at the end, so every step keeps its own heaviest keys.
//
// Memory is bounded: per table (at most maxTables) at most MaxPoints
// steps, each holding at most 2 × keep keys per class; when a step holds
// more, it keeps the keep heaviest of each class and remembers the most a dropped key had, so a
// key missing from a step is unknown there (null) rather than zero.
// A key's point is then the units counted while it was kept: under its
// true units by at most that remembered amount.
type recorder struct {
	next      traffic.Sink
	keep      int
	maxTables int

	mu     sync.Mutex
	tables map[entryKey]*tableSteps
}

type entryKey struct{ table, index string }

type stepKey struct {
	key   string
	class traffic.Class
}

// tableSteps is one table's steps: first and last are the step numbers
// (seconds / step) of the earliest and latest events.
type tableSteps struct {
	step        int64
	first, last int64
	newest      int64 // newest event second, for events without a time
	steps       map[int64]*stepUnits
	// held are the seconds not yet folded into their steps' busiest
	// seconds (cells.go): the last busiestLag seconds before newest.
	held map[int64]*secondUnits
}

type stepUnits struct {
	classes [traffic.NumClasses]float64
	keys    map[stepKey]float64
	// dropped is, per class, the most units a key dropped from keys had
	// (summed when steps merge): a key not in keys had at most that.
	dropped [traffic.NumClasses]float64
	// events and throttled count the step's calls per class; busiest is
	// the class's most units in one second, keyBusiest a kept key's
	// (cells.go).
	events, throttled [traffic.NumClasses]uint64
	busiest           [traffic.NumClasses]float64
	keyBusiest        map[stepKey]float64
	// shards counts the step's stream records per class and shard, at
	// most maxCellShards shards.
	shards [traffic.NumClasses]map[string]uint64
}

// newRecorder returns a recorder that passes every batch on to next;
// keep is the keys each step keeps per class.
func newRecorder(next traffic.Sink, keep, maxTables int) *recorder {
	return &recorder{next: next, keep: keep, maxTables: maxTables, tables: map[entryKey]*tableSteps{}}
}

// Put records batch and passes it on.
func (r *recorder) Put(ctx context.Context, batch []traffic.Event) error {
	r.mu.Lock()
	for i := range batch {
		r.add(&batch[i])
	}
	r.mu.Unlock()
	return r.next.Put(ctx, batch)
}

// add counts one event as the store does: traffic of a known class,
// units that are a number (else 0); an event without a time counts in its
// table's newest second. A throttled call is counted as such in its step,
// where its table has traffic then, and never as traffic.
func (r *recorder) add(e *traffic.Event) {
	if e.Class >= traffic.NumClasses || e.Table == "" {
		return
	}
	id := entryKey{e.Table, e.Index}
	t := r.tables[id]
	if t == nil {
		if len(r.tables) >= r.maxTables || e.Time.IsZero() || e.Throttled {
			return
		}
		t = &tableSteps{step: 1, steps: map[int64]*stepUnits{}, held: map[int64]*secondUnits{}}
		t.first, t.last, t.newest = e.Time.Unix(), e.Time.Unix(), e.Time.Unix()
		r.tables[id] = t
	}
	sec := t.newest
	if !e.Time.IsZero() {
		sec = e.Time.Unix()
	}
	if e.Throttled {
		if s := t.steps[floorDiv(sec, t.step)]; s != nil {
			s.throttled[e.Class]++
		}
		return
	}
	units := e.Units
	if !(units >= 0) || units > math.MaxFloat64 {
		units = 0
	}
	s := t.stepOf(sec, r.keep)
	s.classes[e.Class] += units
	s.events[e.Class]++
	s.addShards(e.Class, e.Shard, 1)
	pk := e.PK
	if len(pk) > sketch.MaxKeyBytes {
		pk = sketch.HeldKey(pk) // as the report names it
	}
	t.hold(sec, stepKey{pk, e.Class}, units)
	if sec > t.newest {
		t.newest = sec
		t.fold(sec - busiestLag)
	}
	if pk == "" {
		return
	}
	s.keys[stepKey{pk, e.Class}] += units
	if len(s.keys) > 2*traffic.NumClasses*r.keep {
		s.prune(r.keep)
	}
}

// stepOf returns the step of second sec, made if new, coarsening the
// table's steps while they span more than MaxPoints.
func (t *tableSteps) stepOf(sec int64, keep int) *stepUnits {
	n := floorDiv(sec, t.step)
	t.first, t.last = min(t.first, n), max(t.last, n)
	for t.last-t.first+1 > MaxPoints {
		t.coarsen(keep)
		n = floorDiv(sec, t.step)
	}
	s := t.steps[n]
	if s == nil {
		s = &stepUnits{keys: map[stepKey]float64{}, keyBusiest: map[stepKey]float64{}}
		t.steps[n] = s
	}
	return s
}

// coarsen doubles the table's step, adding up the steps that merge.
func (t *tableSteps) coarsen(keep int) {
	t.step *= 2
	t.first, t.last = floorDiv(t.first, 2), floorDiv(t.last, 2)
	merged := make(map[int64]*stepUnits, len(t.steps)/2+1)
	for n, s := range t.steps {
		m := merged[floorDiv(n, 2)]
		if m == nil {
			merged[floorDiv(n, 2)] = s
			continue
		}
		m.absorb(s)
		if len(m.keys) > 2*traffic.NumClasses*keep {
			m.prune(keep)
		}
	}
	t.steps = merged
}

// prune keeps the keep heaviest keys of each class of the step.
func (s *stepUnits) prune(keep int) {
	type kv struct {
		k stepKey
		v float64
	}
	all := make([]kv, 0, len(s.keys))
	for k, v := range s.keys {
		all = append(all, kv{k, v})
	}
	slices.SortFunc(all, func(a, b kv) int {
		if a.v != b.v {
			if a.v > b.v {
				return -1
			}
			return 1
		}
		if a.k.key != b.k.key {
			if a.k.key < b.k.key {
				return -1
			}
			return 1
		}
		return int(a.k.class) - int(b.k.class)
	})
	var kept [traffic.NumClasses]int
	for _, e := range all {
		if kept[e.k.class] < keep {
			kept[e.k.class]++
			continue
		}
		s.dropped[e.k.class] = max(s.dropped[e.k.class], e.v)
		delete(s.keys, e.k)
		delete(s.keyBusiest, e.k)
	}
}

// series returns the series that go with rep (report.BuildSeries): for
// each of its tables, its classes' and its top keys' mean units per
// second, step by step from the step of the earliest event to that of the
// latest. Keys are as in rep.
func (r *recorder) series(rep report.Report) report.Series {
	r.mu.Lock()
	defer r.mu.Unlock()
	return report.BuildSeries(rep, 0, func(table, index string) report.Steps {
		if t := r.tables[entryKey{table, index}]; t != nil {
			return t
		}
		return nil
	})
}

// Span returns the table's steps: from that of the earliest event to that
// of the latest.
func (t *tableSteps) Span() (time.Time, int64, int) {
	return time.Unix(t.first*t.step, 0), t.step, int(t.last - t.first + 1)
}

// Step returns the i-th step's units: a step without events had none; a
// key the step did not keep had none unless the step dropped keys of its
// class, and then the counting cannot tell (NaN).
func (t *tableSteps) Step(i int, key func(key string, class int, units float64)) report.StepUnits {
	s := t.steps[t.first+int64(i)]
	if s == nil {
		return report.StepUnits{}
	}
	for k, v := range s.keys {
		if v > 0 {
			key(k.key, int(k.class), v)
		}
	}
	u := report.StepUnits{Classes: s.classes}
	for c, d := range s.dropped {
		if d > 0 {
			u.Absent[c] = math.NaN()
		}
	}
	return u
}

// floorDiv divides rounding towards minus infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

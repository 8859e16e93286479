package analyze

import (
	"cmp"
	"slices"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/history"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// The HTML report's heatmaps draw cells of keys × time (history.Answer, the shape of /api/v1/history):
// each step of a table is a cell with its units, calls, throttled calls,
// its keys' units and busiest seconds, and its stream shards' records.
//
// A busiest second needs the units of each second, which a step does not
// keep: the recorder holds the seconds of the last busiestLag seconds of a
// table's event time (its classes' and keys' units) and folds each into
// its step once event time has moved past it. So a cell's busiest second
// is exact for an input whose events come at most busiestLag seconds out
// of time order (one log, one stream's records); an event older than that
// counts as a second of its own, and the figure is then a lower bound
// (several hosts' logs read one after another). A key's busiest second is
// that of the seconds in which its step kept it.

// busiestLag is how far behind a table's newest event a second is still
// held open.
const busiestLag = 10

// maxCellShards bounds the stream shards a step counts: a table has one
// shard per physical partition, and the heatmap draws at most this many.
const maxCellShards = 64

// secondUnits is one held second of a table: its classes' and keys'
// units.
type secondUnits struct {
	classes [traffic.NumClasses]float64
	keys    map[stepKey]float64
}

// hold adds units of key (its class; key.key empty for a keyless event)
// to second sec, folding it at once when it is older than the seconds
// held.
func (t *tableSteps) hold(sec int64, key stepKey, units float64) {
	h := t.held[sec]
	if h == nil {
		h = &secondUnits{keys: map[stepKey]float64{}}
		t.held[sec] = h
	}
	h.classes[key.class] += units
	if key.key != "" {
		h.keys[key] += units
	}
	if sec < t.newest-busiestLag {
		t.fold(sec)
	}
}

// fold folds every held second up to and including upTo into its step.
func (t *tableSteps) fold(upTo int64) {
	for sec, h := range t.held {
		if sec > upTo {
			continue
		}
		delete(t.held, sec)
		s := t.steps[floorDiv(sec, t.step)]
		if s == nil {
			continue
		}
		for c, u := range h.classes {
			s.busiest[c] = max(s.busiest[c], u)
		}
		for k, u := range h.keys {
			if _, kept := s.keys[k]; kept {
				s.keyBusiest[k] = max(s.keyBusiest[k], u)
			}
		}
	}
}

// absorb adds o, a step merging into s (coarsen): seconds do not cross
// steps, so busiest seconds are the larger of the two.
func (s *stepUnits) absorb(o *stepUnits) {
	for c := range s.classes {
		s.classes[c] += o.classes[c]
		s.dropped[c] += o.dropped[c]
		s.events[c] += o.events[c]
		s.throttled[c] += o.throttled[c]
		s.busiest[c] = max(s.busiest[c], o.busiest[c])
	}
	for k, v := range o.keys {
		s.keys[k] += v
	}
	for k, v := range o.keyBusiest {
		s.keyBusiest[k] = max(s.keyBusiest[k], v)
	}
	for c, m := range o.shards {
		for sh, n := range m {
			s.addShards(traffic.Class(c), sh, n)
		}
	}
}

// addShards counts n stream records of class c from shard (none when
// empty), unless the step counts maxCellShards other shards already.
func (s *stepUnits) addShards(c traffic.Class, shard string, n uint64) {
	if shard == "" {
		return
	}
	m := s.shards[c]
	if m == nil {
		m = map[string]uint64{}
		s.shards[c] = m
	}
	if _, ok := m[shard]; ok || len(m) < maxCellShards {
		m[shard] += n
	}
}

// history returns the cells of rep's tables that have steps, in the
// order of rep.Tables: each step with calls is a cell of each class it
// has calls of, with its keys (heaviest first) and the rest. Keys are as
// recorded: mask them as the report's.
func (r *recorder) history(rep report.Report) []history.Answer {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []history.Answer{}
	ceiling := [traffic.NumClasses]float64{rep.Settings.ReadLimit, rep.Settings.WriteLimit}
	for _, tr := range rep.Tables {
		t := r.tables[entryKey{tr.Table, tr.Index}]
		if t == nil {
			continue
		}
		t.fold(t.newest)
		start, step, n := t.Span()
		h := history.Answer{Table: tr.Table, Index: tr.Index, From: start.UTC(), To: start.Add(time.Duration(int64(n)*step) * time.Second).UTC(),
			StepSeconds: step, Resolutions: []history.ResolutionDoc{}, Series: []history.Series{}}
		for c := range traffic.Class(traffic.NumClasses) {
			cs := history.Series{Class: c.String(), Ceiling: ceiling[c], Cells: []history.Cell{}}
			for i := range n {
				if s := t.steps[t.first+int64(i)]; s != nil && (s.events[c] > 0 || s.throttled[c] > 0) {
					cs.Cells = append(cs.Cells, s.cell(c, start.Add(time.Duration(int64(i)*step)*time.Second).UTC(), r.keep))
				}
			}
			if len(cs.Cells) > 0 {
				h.Series = append(h.Series, cs)
			}
		}
		out = append(out, h)
	}
	return out
}

// cell is the step's cell of class c: its keys of the class, at most
// keep, heaviest first, and the rest of its units.
func (s *stepUnits) cell(c traffic.Class, start time.Time, keep int) history.Cell {
	cell := history.Cell{Start: start, Units: s.classes[c], Events: s.events[c], Throttled: s.throttled[c], BusiestSecond: s.busiest[c], Keys: []history.KeyCell{}}
	share := func(u float64) float64 {
		if cell.Units > 0 {
			return u / cell.Units
		}
		return 0
	}
	var inKeys float64
	for k, u := range s.keys {
		if k.class == c && u > 0 {
			cell.Keys = append(cell.Keys, history.KeyCell{Key: k.key, Units: u, BusiestSecond: s.keyBusiest[k], Share: share(u)})
		}
	}
	slices.SortFunc(cell.Keys, func(a, b history.KeyCell) int {
		return cmp.Or(cmp.Compare(b.Units, a.Units), cmp.Compare(a.Key, b.Key))
	})
	cell.Keys = cell.Keys[:min(len(cell.Keys), keep)]
	for _, k := range cell.Keys {
		inKeys += k.Units
	}
	rest := max(0, cell.Units-inKeys)
	cell.Rest = history.Rest{Units: rest, Share: share(rest)}
	var records uint64
	for _, n := range s.shards[c] {
		records += n
	}
	for sh, n := range s.shards[c] {
		cell.Shards = append(cell.Shards, history.ShardCell{Shard: sh, Records: n, Share: float64(n) / float64(records)})
	}
	slices.SortFunc(cell.Shards, func(a, b history.ShardCell) int {
		return cmp.Or(cmp.Compare(b.Records, a.Records), cmp.Compare(a.Shard, b.Shard))
	})
	return cell
}

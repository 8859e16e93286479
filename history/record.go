package history

import (
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Evaluation is what one evaluation of the detector tells the history.
type Evaluation struct {
	// Snapshot is the window judged (judge.Judgement.Snapshot), and
	// Seconds its last seconds (detect.LastSeconds of it), one per entry
	// of Snapshot.Tables, in order.
	Snapshot sketch.Snapshot
	Seconds  []report.TableSecond
	// Earlier holds, per entry of Snapshot.Tables (nil, or nil entries,
	// for none), the complete seconds judged before the last one since
	// the previous evaluation, oldest first (detect.EarlierSeconds): when
	// the judged second jumped (a backlog, a batch spanning seconds), each
	// of them reaches the cells, once.
	Earlier [][]report.TableSecond
	// Flags are the diagnoses flagged after the evaluation
	// (detect.Tracker.Flagged): every one, whichever replica raises it.
	Flags []report.Flag
}

// tableCells is one table's open cells: per resolution and class.
type tableCells struct {
	// pending is the newest second seen, which a later evaluation in the
	// same second may still write again; it is folded once a later
	// second comes.
	pending    [traffic.NumClasses]second
	pendingAt  int64 // its Unix second; 0 before any
	hasPending bool
	open       [][traffic.NumClasses]*acc // per resolution
	// looked says the first cell of a resolution and class was opened:
	// only that one can have been written in part by a previous run.
	looked    [][traffic.NumClasses]bool
	eventTime time.Time // end of the newest judged second
}

// Record folds one evaluation into the open cells and incidents. Called
// by the detector's tick, never concurrently with itself; it does no I/O
// but for reading back a cell a previous run left open, the first time a
// table is seen.
func (s *Store) Record(ev Evaluation) {
	if s.db == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	var b batch
	for i := range ev.Snapshot.Tables {
		if i >= len(ev.Seconds) {
			break
		}
		ts := &ev.Snapshot.Tables[i]
		if i < len(ev.Earlier) {
			for j := range ev.Earlier[i] {
				s.recordTable(ts, &ev.Earlier[i][j], &b)
			}
		}
		s.recordTable(ts, &ev.Seconds[i], &b)
	}
	s.trackIncidents(ev.Flags, &b)
	if m := s.opts.Now().Unix() / 60; m != s.wallMin {
		s.wallMin = m
		s.flushDirty(&b)
		s.incidentsSeen(&b)
	}
	s.send(b)
}

// recordTable folds one of an entry's judged seconds, given in order: a
// second is pending until a later one comes (a second judged again
// overwrites it), and one older than the pending second is skipped.
func (s *Store) recordTable(ts *sketch.TableSnapshot, sec *report.TableSecond, b *batch) {
	if sec.At.IsZero() {
		return
	}
	id := entry{ts.Table, ts.Index}
	tc := s.tables[id]
	if tc == nil {
		n := len(s.opts.Resolutions)
		tc = &tableCells{open: make([][traffic.NumClasses]*acc, n), looked: make([][traffic.NumClasses]bool, n)}
		s.tables[id] = tc
	}
	tc.eventTime = sec.At.Add(time.Second)
	at := sec.At.Unix()
	switch {
	case tc.hasPending && at < tc.pendingAt:
		return // event time never goes back
	case tc.hasPending && at == tc.pendingAt:
		if !sec.Idle {
			tc.pending = secondsOf(ts, sec)
		}
		return
	}
	if tc.hasPending {
		s.fold(id, tc, b)
	}
	tc.pendingAt, tc.hasPending = at, true
	tc.pending = [traffic.NumClasses]second{}
	if !sec.Idle {
		tc.pending = secondsOf(ts, sec)
	}
	s.roll(id, tc, at, b)
}

// secondsOf reads what a judged second adds to each class: its units and
// keys' units as counted, its events and throttled calls estimated from
// the window (the units per call of the class; the throttled calls per
// second), the window's distinct keys and shards' records per second.
func secondsOf(ts *sketch.TableSnapshot, sec *report.TableSecond) [traffic.NumClasses]second {
	var out [traffic.NumClasses]second
	span := ts.End.Sub(ts.Start).Seconds()
	if ts.RateSpan > 0 {
		span = ts.RateSpan.Seconds()
	}
	span = max(span, 1)
	for c := range min(len(sec.Classes), int(traffic.NumClasses)) {
		cs, ws := &sec.Classes[c], &ts.Classes[c]
		o := &out[c]
		o.at, o.units, o.distinct = sec.At.Unix(), cs.Units, ts.DistinctKeys
		if ws.Units > 0 {
			o.events = cs.Units * float64(ws.Events) / ws.Units
		}
		o.throttled = float64(ws.Throttled.Events) / span
		o.keys = make([]keyUnits, len(cs.Keys))
		for j, k := range cs.Keys {
			o.keys[j] = keyUnits{key: k.Key, units: k.Units}
		}
	}
	if len(ts.Shards) > 0 {
		w := &out[traffic.Write]
		w.shards = make([]shardRecords, len(ts.Shards))
		for j, sh := range ts.Shards {
			w.shards[j] = shardRecords{shard: sh.Shard, records: float64(sh.Records) / span}
		}
	}
	return out
}

// fold adds the pending second to the open cells of every resolution.
func (s *Store) fold(id entry, tc *tableCells, b *batch) {
	for c := range tc.pending {
		p := &tc.pending[c]
		if p.at == 0 || (p.units == 0 && p.throttled == 0) {
			continue
		}
		for l, r := range s.opts.Resolutions {
			start := floorTo(p.at, r.Step)
			a := tc.open[l][c]
			if a == nil {
				a = newAcc(start)
				if !tc.looked[l][c] {
					tc.looked[l][c] = true
					a = s.openAcc(id, r.Step, start, traffic.Class(c))
				}
				tc.open[l][c] = a
			}
			a.fold(p)
		}
	}
}

// roll writes and lets go the open cells that end before the second at:
// closed cells, each written once more, whole.
func (s *Store) roll(id entry, tc *tableCells, at int64, b *batch) {
	for l, r := range s.opts.Resolutions {
		start := floorTo(at, r.Step)
		for c, a := range tc.open[l] {
			if a == nil || a.start == start {
				continue
			}
			if a.dirty {
				b.rows = append(b.rows, a.toRow(id.table, id.index, traffic.Class(c).String(), int64(r.Step/time.Second)))
			}
			tc.open[l][c] = nil
		}
	}
}

// flushDirty writes every open cell folded into since it was last
// written: once a minute of the clock, so that a hard kill loses at most
// a minute, whatever the tables' event times do.
func (s *Store) flushDirty(b *batch) {
	for id, tc := range s.tables {
		for l, r := range s.opts.Resolutions {
			for c, a := range tc.open[l] {
				if a != nil && a.dirty {
					b.rows = append(b.rows, a.toRow(id.table, id.index, traffic.Class(c).String(), int64(r.Step/time.Second)))
					a.dirty = false
				}
			}
		}
	}
}

// openAcc opens a table's first cell of a resolution and class: from its
// row when a previous run wrote part of it, else empty.
func (s *Store) openAcc(id entry, step time.Duration, start int64, c traffic.Class) *acc {
	if start <= s.opened.Unix() {
		if a := s.readOpenCell(id, int64(step/time.Second), start, c.String()); a != nil {
			return a
		}
	}
	return newAcc(start)
}

// floorTo returns the start of the step that holds Unix second at.
func floorTo(at int64, step time.Duration) int64 {
	st := int64(step / time.Second)
	if at >= 0 {
		return at / st * st
	}
	return (at - st + 1) / st * st
}

// send hands a batch to the writer, or counts it lost when the writer is
// that far behind.
func (s *Store) send(b batch) {
	if len(b.rows) == 0 && len(b.incidents) == 0 {
		return
	}
	select {
	case s.queue <- b:
	default:
		s.m.dropped.WithLabelValues("queue_full").Add(float64(len(b.rows)))
	}
}

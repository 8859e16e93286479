package analyze

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/zeebo/xxh3"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/history/view"
	"github.com/hotkeyd/hotkeyd/internal/app/config"
	"github.com/hotkeyd/hotkeyd/judge"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// maxEvaluations bounds the detector's evaluations of a replay: an input
// that spans more seconds is judged every step seconds, the fewest that
// keep under it (a day: every 5 s), as a daemon ticking that often would.
const maxEvaluations = 20000

// maxCountedSpan bounds the span, in seconds, whose events are counted
// into place by second (8 bytes a second); a longer one is sorted.
const maxCountedSpan = 1 << 22

// judgeIncidents replays the log's events in event time into a live
// window judged by the daemon's Tracker, and returns the incidents of each
// table entry, oldest first; over says that the log overflowed. A table
// and its indexes are judged together (an index's judgement reads its
// table's), apart from the other tables, on up to workers goroutines: the
// same incidents whatever the workers.
func judgeIncidents(ctx context.Context, l *incidentLog, p config.Pipeline, workers int, screen bool) (map[entryKey][]report.Incident, bool, error) {
	if l == nil || l.over {
		return nil, l != nil, nil
	}
	byTable := l.sortedByTable()
	groups := make(chan []incOrder, len(byTable))
	for _, g := range byTable {
		groups <- g
	}
	close(groups)
	var mu sync.Mutex
	out := map[entryKey][]report.Incident{}
	var firstErr error
	var wg sync.WaitGroup
	for range max(1, min(workers, len(byTable))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range groups {
				if screen && l.quiet(g, p, evalStep(int64(g[0].sec), int64(g[len(g)-1].sec))) {
					continue
				}
				incs, err := l.replay(ctx, g, p)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				for k, v := range incs {
					out[k] = v
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, false, firstErr
	}
	return out, false, nil
}

// replay replays rows (sorted) into a live window of their own, judged
// once a second of event time, and returns their incidents.
func (l *incidentLog) replay(ctx context.Context, rows []incOrder, p config.Pipeline) (map[entryKey][]report.Incident, error) {
	sks := sortKeyNames()
	scfg := p.Sketch
	if scfg.Window <= 0 {
		scfg.Window = sketch.DefaultWindow
	}
	var now time.Time
	store, err := sketch.NewStore(scfg, func() time.Time { return now })
	if err != nil {
		return nil, fmt.Errorf("incidents: %w", err)
	}
	tr := detect.NewTracker(p.Detect)
	judged := judge.Alone(store, tr) // the daemon's evaluator
	book := incidentBook{open: map[report.IncidentKey]*report.Incident{}}
	first, last := int64(rows[0].sec), int64(rows[len(rows)-1].sec)
	step := evalStep(first, last)
	// After idle seconds without an event, every diagnosis has cleared:
	// the window has forgotten the last events and the hold has run.
	idle := int64((scfg.Window+p.Detect.Hold)/time.Second) + int64(scfg.RecentSeconds) + 2*step + 1
	var batch []traffic.Event
	i, lastEvent := 0, first
	for at := first + step - 1; ; {
		batch = batch[:0]
		for ; i < len(rows) && int64(rows[i].sec) <= at; i++ {
			batch = append(batch, l.event(rows[i].off, &sks))
			lastEvent = int64(rows[i].sec)
		}
		now = time.Unix(at+1, 0)
		if err := store.Put(ctx, batch); err != nil {
			return nil, fmt.Errorf("incidents: %w", err)
		}
		judged.Evaluate()
		book.see(tr.Flagged(), now.UTC())
		if i == len(rows) {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		next := at + step
		if sec := int64(rows[i].sec); at-lastEvent >= idle && sec > next {
			// Nothing to judge until the next event: on to its step.
			next += (sec - next + step - 1) / step * step
		}
		at = next
	}
	return book.byEntry(), nil
}

// sorted returns the offsets of the log's events in the order they are
// replayed, table by table (sortedByTable).
func (l *incidentLog) sorted() []incOrder {
	var out []incOrder
	for _, g := range l.sortedByTable() {
		out = append(out, g...)
	}
	return out
}

// sortedByTable returns the offsets of the log's events of each table (a
// table and its indexes) in the order they are replayed: by second, then
// by table entry and key (by hashes of their names, then the names),
// class, shard, throttling and figures, so that the replay is the same
// whatever the parts' ids and the order of the lines. The tables' events
// are one array, each table's a slice of it, in order of their names.
func (l *incidentLog) sortedByTable() [][]incOrder {
	if l.n == 0 {
		return nil
	}
	// Each entry's table, as a group: the tables in order of their names.
	names := map[string]int{}
	for _, e := range l.entries {
		names[e.table] = 0
	}
	tables := slices.Sorted(maps.Keys(names))
	for i, t := range tables {
		names[t] = i
	}
	groupOf := make([]int, len(l.entries))
	hashOf := make([]uint64, len(l.entries))
	for i, e := range l.entries {
		groupOf[i], hashOf[i] = names[e.table], xxh3.HashString(e.table)
	}
	// Where each table's events start, counted first.
	start := make([]int, len(tables)+1)
	l.each(func(r []byte, _ uint32) { start[groupOf[binary.LittleEndian.Uint16(r[8:])]+1]++ })
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	recs := make([]incOrder, l.n)
	next := slices.Clone(start)
	l.each(func(r []byte, off uint32) {
		entry := binary.LittleEndian.Uint16(r[8:])
		g := groupOf[entry]
		recs[next[g]] = incOrder{sec: binary.LittleEndian.Uint32(r), hash: xxh3.Hash(r[incHead:incHead+int(r[15])]) ^ hashOf[entry], off: off}
		next[g]++
	})
	out := make([][]incOrder, 0, len(tables))
	var scratch []incOrder
	for g := range tables {
		rows := recs[start[g]:start[g+1]:start[g+1]]
		scratch = l.sortRows(rows, scratch)
		out = append(out, rows)
	}
	return out
}

// each calls f with every record of the log and its offset.
func (l *incidentLog) each(f func(r []byte, off uint32)) {
	for ci, c := range l.chunks {
		for pos := 0; pos < len(c); pos += incHead + int(c[pos+15]) {
			f(c[pos:], uint32(ci<<incChunkBits|pos))
		}
	}
}

// sortRows puts rows in the replay's order, through scratch (returned,
// grown to rows' length if shorter). The seconds are counted into place
// (a span of at most maxCountedSpan; a longer one is sorted), the events
// of one second sorted.
func (l *incidentLog) sortRows(rows, scratch []incOrder) []incOrder {
	less := func(x, y incOrder) int {
		if x.sec != y.sec {
			return cmp.Compare(x.sec, y.sec)
		}
		if x.hash != y.hash {
			return cmp.Compare(x.hash, y.hash)
		}
		return l.compare(x.off, y.off)
	}
	lo, hi := uint32(math.MaxUint32), uint32(0)
	for _, r := range rows {
		lo, hi = min(lo, r.sec), max(hi, r.sec)
	}
	if len(rows) == 0 || hi-lo > maxCountedSpan {
		slices.SortFunc(rows, less)
		return scratch
	}
	// A counting sort by second: where each second's events start.
	at := make([]uint32, int(hi-lo)+2)
	for _, r := range rows {
		at[r.sec-lo+1]++
	}
	for i := 1; i < len(at); i++ {
		at[i] += at[i-1]
	}
	if cap(scratch) < len(rows) {
		scratch = make([]incOrder, len(rows))
	}
	scratch = scratch[:len(rows)]
	next := slices.Clone(at)
	for _, r := range rows {
		scratch[next[r.sec-lo]] = r
		next[r.sec-lo]++
	}
	copy(rows, scratch)
	for i := 0; i+1 < len(at); i++ {
		slices.SortFunc(rows[at[i]:at[i+1]], less)
	}
	return scratch
}

// evalStep is the seconds between evaluations of a replay from first to
// last: 1, or the fewest that keep under maxEvaluations.
func evalStep(first, last int64) int64 {
	return max(1, (last-first+maxEvaluations)/maxEvaluations)
}

// incOrder is an event's place in the replay: its second, a hash of its
// table and key, and its record's offset.
type incOrder struct {
	sec  uint32
	off  uint32
	hash uint64
}

// rec is the record at off.
func (l *incidentLog) rec(off uint32) []byte {
	return l.chunks[off>>incChunkBits][off&(1<<incChunkBits-1):]
}

// compare orders two records of one second and hash: by table entry, key,
// shard, class and throttling, reason, sort key bit, units.
func (l *incidentLog) compare(x, y uint32) int {
	rx, ry := l.rec(x), l.rec(y)
	ex, ey := l.entries[binary.LittleEndian.Uint16(rx[8:])], l.entries[binary.LittleEndian.Uint16(ry[8:])]
	if c := cmp.Or(cmp.Compare(ex.table, ey.table), cmp.Compare(ex.index, ey.index)); c != 0 {
		return c
	}
	if c := bytes.Compare(rx[incHead:incHead+int(rx[15])], ry[incHead:incHead+int(ry[15])]); c != 0 {
		return c
	}
	if c := cmp.Compare(l.shards[binary.LittleEndian.Uint16(rx[10:])], l.shards[binary.LittleEndian.Uint16(ry[10:])]); c != 0 {
		return c
	}
	return cmp.Or(bytes.Compare(rx[12:15], ry[12:15]), cmp.Compare(binary.LittleEndian.Uint32(rx[4:]), binary.LittleEndian.Uint32(ry[4:])))
}

// event is the Event of the record at off: its units as the sketch
// counted them, a sort key that sets its bit. Its key is the log's bytes
// (the store keeps nothing of a batch once Put returns; the log is not
// written to again).
func (l *incidentLog) event(off uint32, sks *[32]string) traffic.Event {
	r := l.rec(off)
	e := l.entries[binary.LittleEndian.Uint16(r[8:])]
	out := traffic.Event{Table: e.table, Index: e.index, Shard: l.shards[binary.LittleEndian.Uint16(r[10:])],
		Class: traffic.Class(r[12] & incClass), Units: float64(binary.LittleEndian.Uint32(r[4:])) / quantum,
		Time: time.Unix(int64(binary.LittleEndian.Uint32(r)), 0), Throttled: r[12]&incThrottled != 0,
		ThrottleReason: traffic.ThrottleReason(r[13]), Source: "analyze"}
	if n := int(r[15]); n > 0 {
		out.PK = unsafe.String(&r[incHead], n)
	}
	if r[14] > 0 {
		out.SK = sks[r[14]-1]
	}
	return out
}

// sortKeyNames returns, for each bit of the sketch's estimate of a key's
// sort keys, a sort key that sets it.
func sortKeyNames() [32]string {
	var all [32]string
	for i, found := 0, 0; found < len(all); i++ {
		s := "sk" + strconv.Itoa(i)
		if b := xxh3.HashString(s) >> 59; all[b] == "" {
			all[b] = s
			found++
		}
	}
	return all
}

// addIncidents judges the incidents of the log and gives each table entry
// of r its own; a note says so when the input held too many (second, key)
// records for them to be judged.
func addIncidents(ctx context.Context, r *report.Report, l *incidentLog, p config.Pipeline, workers int, screen bool) error {
	incs, over, err := judgeIncidents(ctx, l, p, workers, screen)
	if err != nil {
		return err
	}
	if over {
		r.Notes = append(r.Notes, fmt.Sprintf("incidents were not judged: the input's events take more than %d bytes, the most analyze keeps for them; analyze parts of it (a few hours each) to have them", maxIncidentBytes))
	}
	for i := range r.Tables {
		t := &r.Tables[i]
		t.Incidents = incs[entryKey{t.Table, t.Index}]
	}
	return nil
}

// incidentsOf returns the report's incidents, every table entry's, in
// the shape the HTML page lists (that of GET /api/v1/incidents).
func incidentsOf(r report.Report) *export.Incidents {
	out := &export.Incidents{Incidents: []view.Incident{}}
	for _, t := range r.Tables {
		for _, inc := range t.Incidents {
			out.Incidents = append(out.Incidents, view.Incident(inc))
		}
	}
	return out
}

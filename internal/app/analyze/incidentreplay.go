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

// maxBucketBytes is about the most bytes of records a batch of tables
// loads at once (loadBatches): more only when a table holds more alone, or
// to give each worker a table.
const maxBucketBytes = 16 << 20

// judgeIncidents replays the log's events in event time into a live
// window judged by the daemon's Tracker, and returns the incidents of each
// table entry, oldest first; over says that the log overflowed. A table
// and its indexes are judged together (an index's judgement reads its
// table's), apart from the other tables, on up to workers goroutines: the
// same incidents whatever the workers. The tables' records are loaded from
// the log a batch of tables at a time (about maxBucketBytes, a table a
// worker at least).
func judgeIncidents(ctx context.Context, l *incidentLog, p config.Pipeline, workers int, screen bool) (map[entryKey][]report.Incident, bool, error) {
	if l == nil || l.over {
		return nil, l != nil, nil
	}
	out := map[entryKey][]report.Incident{}
	plan := l.plan()
	workers = max(1, workers)
	for left := plan.groups; len(left) > 0; {
		n, bytes := 0, 0
		for n < len(left) && (n < workers || bytes+left[n].bytes <= maxBucketBytes) {
			bytes += left[n].bytes
			n++
		}
		batch := left[:n]
		left = left[n:]
		if err := l.load(plan, batch); err != nil {
			return nil, false, err
		}
		if err := l.judgeBatch(ctx, batch, p, workers, screen, out); err != nil {
			return nil, false, err
		}
	}
	return out, false, nil
}

// judgeBatch sorts, screens and replays the loaded groups of batch on up
// to workers goroutines, adding their incidents to out.
func (l *incidentLog) judgeBatch(ctx context.Context, batch []*incGroup, p config.Pipeline, workers int, screen bool, out map[entryKey][]report.Incident) error {
	groups := make(chan *incGroup, len(batch))
	for _, g := range batch {
		groups <- g
	}
	close(groups)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range min(workers, len(batch)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range groups {
				incs, err := l.judgeGroup(ctx, g, p, screen)
				g.recs = nil
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
	return firstErr
}

// judgeGroup puts a loaded group in the replay's order and replays it,
// unless the screen finds it quiet.
func (l *incidentLog) judgeGroup(ctx context.Context, g *incGroup, p config.Pipeline, screen bool) (map[entryKey][]report.Incident, error) {
	if g.n == 0 {
		return nil, nil
	}
	l.sortGroup(g)
	if screen && l.quiet(g, p, evalStep(g.first, g.last)) {
		return nil, nil
	}
	return l.replay(ctx, g, p)
}

// replay replays a group's records (sorted) into a live window of their
// own, judged once a second of event time, and returns their incidents.
func (l *incidentLog) replay(ctx context.Context, g *incGroup, p config.Pipeline) (map[entryKey][]report.Incident, error) {
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
	first, last := g.first, g.last
	step := evalStep(first, last)
	// After idle seconds without an event, every diagnosis has cleared:
	// the window has forgotten the last events and the hold has run.
	idle := int64((scfg.Window+p.Detect.Hold)/time.Second) + int64(scfg.RecentSeconds) + 2*step + 1
	var batch []traffic.Event
	recs := g.recs
	lastEvent := first
	for at := first + step - 1; ; {
		batch = batch[:0]
		for len(recs) > 0 && int64(binary.LittleEndian.Uint32(recs)) <= at {
			batch = append(batch, l.event(recs, &sks))
			lastEvent = int64(binary.LittleEndian.Uint32(recs))
			recs = recs[incHead+int(recs[15]):]
		}
		now = time.Unix(at+1, 0)
		if err := store.Put(ctx, batch); err != nil {
			return nil, fmt.Errorf("incidents: %w", err)
		}
		judged.Evaluate()
		book.see(tr.Flagged(), now.UTC())
		if len(recs) == 0 {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		next := at + step
		if sec := int64(binary.LittleEndian.Uint32(recs)); at-lastEvent >= idle && sec > next {
			// Nothing to judge until the next event: on to its step.
			next += (sec - next + step - 1) / step * step
		}
		at = next
	}
	return book.byEntry(), nil
}

// incPlan is how the log's records are loaded, table by table: each
// entry's group (a table and its indexes) and the hash of its table's
// name, and the groups in order of their tables' names.
type incPlan struct {
	groupOf []int
	hashOf  []uint64
	groups  []*incGroup
}

// incGroup is the records of one table and its indexes. Loaded, they are
// one buffer, their ids the log's, by bucket of seconds (at: where each
// bucket starts), after sortGroup in the replay's order.
type incGroup struct {
	n, bytes    int
	first, last int64
	hashOf      []uint64
	// shift makes a second's bucket: (sec − first) >> shift.
	shift uint
	at    []uint32
	recs  []byte
	// loading says that the group is in the batch being loaded; next is
	// where each bucket's next record goes while it is.
	loading bool
	next    []uint32
}

// plan returns the log's groups, their records not loaded yet.
func (l *incidentLog) plan() incPlan {
	l.flush()
	// Nothing is put after: the part's sinks (its store) are let go.
	l.buf, l.next = nil, nil
	names := map[string]int{}
	for _, e := range l.entries {
		names[e.table] = 0
	}
	tables := slices.Sorted(maps.Keys(names))
	for i, t := range tables {
		names[t] = i
	}
	plan := incPlan{groupOf: make([]int, len(l.entries)), hashOf: make([]uint64, len(l.entries)), groups: make([]*incGroup, len(tables))}
	stats := make([]entryRecords, len(tables))
	for i := range stats {
		stats[i].first = math.MaxUint32
	}
	for i, e := range l.entries {
		g := names[e.table]
		plan.groupOf[i], plan.hashOf[i] = g, xxh3.HashString(e.table)
		stats[g].add(l.stats[i])
	}
	for i, st := range stats {
		g := &incGroup{n: st.n, bytes: st.bytes, first: int64(st.first), last: int64(st.last), hashOf: plan.hashOf}
		// Buckets of one second, or of more when the span holds more
		// seconds than records (or than maxCountedSpan): each bucket is
		// sorted.
		for st.n > 0 && (g.last-g.first)>>g.shift >= int64(min(max(st.n, 64), maxCountedSpan)) {
			g.shift++
		}
		plan.groups[i] = g
	}
	return plan
}

// scan calls f with every record of the log, the chunk's maps of its ids
// to the log's (nil: the log's).
func (l *incidentLog) scan(f func(r []byte, entries, shards []uint16)) error {
	var buf []byte
	for _, c := range l.chunks {
		data := c.data
		if data == nil {
			if cap(buf) < c.n {
				buf = make([]byte, incChunkSize)
			}
			data = buf[:c.n]
			if err := l.file.readAt(data, c.off); err != nil {
				return err
			}
		}
		for pos := 0; pos < len(data); pos += incHead + int(data[pos+15]) {
			f(data[pos:], c.entries, c.shards)
		}
	}
	return nil
}

// load reads the records of the groups of batch into their buffers, by
// bucket of seconds, their ids the log's: two scans of the log, one to
// size the buckets and one to fill them.
func (l *incidentLog) load(plan incPlan, batch []*incGroup) error {
	for _, g := range batch {
		g.at = make([]uint32, (g.last-g.first)>>g.shift+2)
		g.loading = true
	}
	// Which group of the batch each entry is in (nil: none).
	in := make([]*incGroup, len(plan.groupOf))
	for e, gi := range plan.groupOf {
		if g := plan.groups[gi]; g.loading {
			in[e] = g
		}
	}
	defer func() {
		for _, g := range batch {
			g.loading, g.next = false, nil
		}
	}()
	entry := func(r []byte, entries []uint16) uint16 {
		id := binary.LittleEndian.Uint16(r[8:])
		if entries != nil {
			id = entries[id]
		}
		return id
	}
	err := l.scan(func(r []byte, entries, _ []uint16) {
		if g := in[entry(r, entries)]; g != nil {
			g.at[(int64(binary.LittleEndian.Uint32(r))-g.first)>>g.shift+1] += uint32(incHead + int(r[15]))
		}
	})
	if err != nil {
		return err
	}
	for _, g := range batch {
		for i := 1; i < len(g.at); i++ {
			g.at[i] += g.at[i-1]
		}
		g.recs = make([]byte, g.bytes)
		g.next = slices.Clone(g.at)
	}
	return l.scan(func(r []byte, entries, shards []uint16) {
		id := entry(r, entries)
		g := in[id]
		if g == nil {
			return
		}
		b := &g.next[(int64(binary.LittleEndian.Uint32(r))-g.first)>>g.shift]
		n := incHead + int(r[15])
		out := g.recs[*b : int(*b)+n]
		copy(out, r[:n])
		binary.LittleEndian.PutUint16(out[8:], id)
		if shards != nil {
			binary.LittleEndian.PutUint16(out[10:], shards[binary.LittleEndian.Uint16(r[10:])])
		}
		*b += uint32(n)
	})
}

// sortGroup puts each bucket of a loaded group's records in the replay's
// order: by second, then by table entry and key (by hashes of their
// names, then the names), class, shard, throttling and figures, so that
// the replay is the same whatever the parts' ids and the order of the
// lines.
func (l *incidentLog) sortGroup(g *incGroup) {
	less := func(x, y incOrder) int {
		if x.sec != y.sec {
			return cmp.Compare(x.sec, y.sec)
		}
		if x.hash != y.hash {
			return cmp.Compare(x.hash, y.hash)
		}
		return l.compare(g.recs[x.off:], g.recs[y.off:])
	}
	var rows []incOrder
	var scratch []byte
	for b := 0; b+1 < len(g.at); b++ {
		from, to := int(g.at[b]), int(g.at[b+1])
		rows = rows[:0]
		for pos := from; pos < to; pos += incHead + int(g.recs[pos+15]) {
			rows = append(rows, incOrder{sec: binary.LittleEndian.Uint32(g.recs[pos:]), off: uint32(pos), hash: g.hash(g.recs[pos:])})
		}
		if slices.IsSortedFunc(rows, less) {
			continue
		}
		slices.SortFunc(rows, less)
		scratch = scratch[:0]
		for _, r := range rows {
			scratch = append(scratch, g.recs[r.off:int(r.off)+incHead+int(g.recs[r.off+15])]...)
		}
		copy(g.recs[from:to], scratch)
	}
	g.at = nil
}

// hash is the hash the replay's order goes by of the record r: of its
// key and its table's name.
func (g *incGroup) hash(r []byte) uint64 {
	return xxh3.Hash(r[incHead:incHead+int(r[15])]) ^ g.hashOf[binary.LittleEndian.Uint16(r[8:])]
}

// evalStep is the seconds between evaluations of a replay from first to
// last: 1, or the fewest that keep under maxEvaluations.
func evalStep(first, last int64) int64 {
	return max(1, (last-first+maxEvaluations)/maxEvaluations)
}

// incOrder is a record's place in its bucket's order: its second, a
// hash of its table and key, and its offset in the group's records.
type incOrder struct {
	sec  uint32
	off  uint32
	hash uint64
}

// compare orders two records of one second and hash: by table entry, key,
// shard, class and throttling, reason, sort key bit, units.
func (l *incidentLog) compare(rx, ry []byte) int {
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

// event is the Event of the record r (the log's ids): its units as the
// sketch counted them, a sort key that sets its bit. Its key is the
// record's bytes (the store keeps nothing of a batch once Put returns;
// the records are not written to again).
func (l *incidentLog) event(r []byte, sks *[32]string) traffic.Event {
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

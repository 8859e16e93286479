package export

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// CountingSink is an traffic.Sink that counts the traffic of every batch the
// next Sink accepted (hotkeyd_events_total, hotkeyd_units_total,
// hotkeyd_throttled_events_total, hotkeyd_source_last_batch_timestamp_seconds)
// and passes the batch on.
//
// Its per-table counters (events, units, throttled calls: thousands of
// series with a thousand tables) are not registered on the registry it
// is given: the CountingSink serves them itself, as a Kept gatherer whose
// Revision moves with every batch it counts and every table it drops, so
// that an Exposition gathers and encodes them again only then. It is also
// their prometheus.Collector, for a registry's Names.
//
// It sits on the hot path of every source, so it touches no Prometheus
// vector per event: a batch is first summed per (table, index, class,
// source), usually one or two groups, and each group then adds to counters
// cached by label set.
//
// When the next Sink tracks a bounded set of tables (a TableSet: the
// sketch.Store), the per-table series follow it: a table that is not
// tracked gets no series, and a table the store stops tracking loses
// them, so that any number of table names in the input costs a bounded
// number of series. Its events are counted in
// hotkeyd_untracked_events_total instead, and said in the log at most once
// a minute.
type CountingSink struct {
	next traffic.Sink
	now  func() time.Time
	log  *zap.Logger

	sinkMetrics
	own         *prometheus.Registry   // events, units and throttled
	rev         atomic.Uint64          // Revision
	untracked   *prometheus.CounterVec // with a TableSet only
	children    sync.Map               // sinkKey → *sinkChildren
	sourceGauge sync.Map               // source → prometheus.Gauge

	tables   TableSet // nil: every table has series
	childMu  sync.Mutex
	byTable  map[tableKey][]sinkKey // guarded by childMu
	dropMu   sync.Mutex
	drops    dropLog // guarded by dropMu
	interval time.Duration
}

// TableSet is what the CountingSink needs of a Sink that tracks a bounded
// set of tables (sketch.Store).
type TableSet interface {
	// Tracked reports whether the table (or index) is tracked now.
	Tracked(table, index string) bool
	// Tables returns the number of tables and indexes tracked.
	Tables() int
	// Evicted returns how many tables were dropped from tracking.
	Evicted() uint64
	// OnEvict sets the function called with each table dropped.
	OnEvict(f func(table, index string))
}

type tableKey struct{ table, index string }

// dropLog is what was dropped since the last log line about it.
type dropLog struct {
	last    time.Time // of the last line; zero before the first
	events  uint64
	evicted uint64
	example string // a table not tracked
}

// dropLogInterval is the least time between two log lines about tables
// that are not tracked.
const dropLogInterval = time.Minute

type sinkKey struct {
	table, index, source string
	class                traffic.Class
}

type sinkChildren struct {
	events, units, throttled prometheus.Counter
}

// sinkGroup is one (table, index, class, source) group of a batch.
type sinkGroup struct {
	key       sinkKey
	events    uint64
	throttled uint64
	units     float64
}

// NewCountingSink returns a CountingSink that hands batches to next and
// registers its metrics with reg. now stamps the last-batch gauge and
// spaces the log lines; nil means time.Now. log takes the lines about
// tables not tracked; nil logs nothing.
func NewCountingSink(next traffic.Sink, reg prometheus.Registerer, now func() time.Time, log *zap.Logger) (*CountingSink, error) {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = zap.NewNop()
	}
	s := &CountingSink{next: next, now: now, log: log, interval: dropLogInterval}
	s.sinkMetrics = newSinkMetrics()
	s.own = prometheus.NewRegistry()
	s.own.MustRegister(s.events, s.units, s.throttled)
	cs := []prometheus.Collector{s.lastBatch}
	if ts, ok := next.(TableSet); ok {
		s.tables = ts
		s.byTable = map[tableKey][]sinkKey{}
		ts.OnEvict(s.evict)
		var tracked []prometheus.Collector
		s.untracked, tracked = newTableSetMetrics(ts)
		cs = append(cs, tracked...)
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Gather returns the families of the per-table counters (events, units,
// throttled calls), as a registry gathers them.
func (s *CountingSink) Gather() ([]*dto.MetricFamily, error) { return s.own.Gather() }

// Revision changes whenever what Gather returns may have: after each
// batch counted and each table dropped. Read it before Gather.
func (s *CountingSink) Revision() uint64 { return s.rev.Load() }

// Describe sends the descriptors of the per-table counters.
func (s *CountingSink) Describe(ch chan<- *prometheus.Desc) {
	s.events.Describe(ch)
	s.units.Describe(ch)
	s.throttled.Describe(ch)
}

// Collect sends the per-table counters' series.
func (s *CountingSink) Collect(ch chan<- prometheus.Metric) {
	s.events.Collect(ch)
	s.units.Collect(ch)
	s.throttled.Collect(ch)
}

// InitSource creates the source's hotkeyd_untracked_events_total series at
// zero, so that rate() and increase() see the first one.
func (s *CountingSink) InitSource(source string) {
	if s.untracked != nil {
		s.untracked.WithLabelValues(source)
	}
}

// Put passes batch to the next Sink and, once it was accepted, counts it.
// A batch the next Sink refused (the pipeline is stopping) is not counted.
func (s *CountingSink) Put(ctx context.Context, batch []traffic.Event) error {
	// Sum before Put: the batch belongs to the next Sink afterwards.
	var buf [8]sinkGroup
	groups := buf[:0]
	last := -1
	for i := range batch {
		e := &batch[i]
		if last < 0 || !groups[last].key.matches(e) {
			last = -1
			for j := range groups {
				if groups[j].key.matches(e) {
					last = j
					break
				}
			}
			if last < 0 {
				groups = append(groups, sinkGroup{key: sinkKey{table: e.Table, index: e.Index, source: e.Source, class: e.Class}})
				last = len(groups) - 1
			}
		}
		g := &groups[last]
		if e.Throttled {
			g.throttled++
			continue
		}
		g.events++
		g.units += e.Units
	}
	if err := s.next.Put(ctx, batch); err != nil {
		return err
	}
	now := float64(s.now().UnixNano()) / 1e9
	lastSource := "\xff" // not a source name
	// The revision moves once the counters moved: a gathering that read
	// the revision before them is gathered again.
	defer s.rev.Add(1)
	for i := range groups {
		g := &groups[i]
		c := s.childrenFor(g.key)
		if c == nil {
			s.dropped(g)
			if o := traffic.OutcomeOf(ctx); o != nil {
				o.Untracked.Add(int64(g.events + g.throttled))
			}
			continue
		}
		if g.events > 0 {
			c.events.Add(float64(g.events))
			c.units.Add(g.units)
		}
		if g.throttled > 0 {
			c.throttled.Add(float64(g.throttled))
		}
		if g.key.source != lastSource {
			lastSource = g.key.source
			s.gaugeFor(g.key.source).Set(now)
		}
	}
	return nil
}

func (k *sinkKey) matches(e *traffic.Event) bool {
	return k.class == e.Class && sameString(k.table, e.Table) && sameString(k.index, e.Index) && sameString(k.source, e.Source)
}

// sameString is a == b with a fast path for the usual case of a reader
// reusing one string for every event of a table: same pointer, no memequal
// call.
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// childrenFor returns the counters of a group, made on its first batch;
// nil when its table is not tracked.
func (s *CountingSink) childrenFor(k sinkKey) *sinkChildren {
	if c, ok := s.children.Load(k); ok {
		return c.(*sinkChildren)
	}
	table, class := TableLabel(k.table, k.index), k.class.String()
	if s.tables != nil {
		// Made under childMu and only while tracked: evict, which runs
		// once the store dropped the table, then finds them to delete.
		s.childMu.Lock()
		defer s.childMu.Unlock()
		if c, ok := s.children.Load(k); ok {
			return c.(*sinkChildren)
		}
		if !s.tables.Tracked(k.table, k.index) {
			return nil
		}
		tk := tableKey{k.table, k.index}
		s.byTable[tk] = append(s.byTable[tk], k)
	}
	c := &sinkChildren{
		events:    s.events.WithLabelValues(table, class, k.source),
		units:     s.units.WithLabelValues(table, class),
		throttled: s.throttled.WithLabelValues(table, class),
	}
	actual, _ := s.children.LoadOrStore(k, c)
	return actual.(*sinkChildren)
}

// evict deletes the series of a table the store stopped tracking.
func (s *CountingSink) evict(table, index string) {
	s.childMu.Lock()
	tk := tableKey{table, index}
	keys := s.byTable[tk]
	delete(s.byTable, tk)
	label := TableLabel(table, index)
	for _, k := range keys {
		s.children.Delete(k)
		class := k.class.String()
		s.events.DeleteLabelValues(label, class, k.source)
		s.units.DeleteLabelValues(label, class)
		s.throttled.DeleteLabelValues(label, class)
	}
	s.rev.Add(1)
	s.childMu.Unlock()
	s.dropMu.Lock()
	s.drops.evicted++
	s.dropMu.Unlock()
}

// dropped counts a group of a table that is not tracked, and says so in
// the log at most once every interval: the first time at once, then with
// what was dropped since.
func (s *CountingSink) dropped(g *sinkGroup) {
	n := g.events + g.throttled
	s.untracked.WithLabelValues(g.key.source).Add(float64(n))
	now := s.now()
	s.dropMu.Lock()
	d := &s.drops
	d.events += n
	if d.example == "" {
		d.example = TableLabel(g.key.table, g.key.index)
	}
	if !d.last.IsZero() && now.Sub(d.last) < s.interval {
		s.dropMu.Unlock()
		return
	}
	out := *d
	*d = dropLog{last: now}
	s.dropMu.Unlock()
	s.log.Warn("table limit reached: the tables with the least traffic are not tracked; raise max_tables (and the memory limit) if they matter",
		zap.Int("tracked", s.tables.Tables()), zap.Uint64("untracked_events", out.events),
		zap.Uint64("evicted_tables", out.evicted), zap.String("untracked_table", out.example))
}

func (s *CountingSink) gaugeFor(source string) prometheus.Gauge {
	if g, ok := s.sourceGauge.Load(source); ok {
		return g.(prometheus.Gauge)
	}
	g, _ := s.sourceGauge.LoadOrStore(source, s.lastBatch.WithLabelValues(source))
	return g.(prometheus.Gauge)
}

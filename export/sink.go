package export

import (
	"context"
	"sync"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotkeyd/hotkeyd/ingest"
)

// CountingSink is an ingest.Sink that counts the traffic of every batch the
// next Sink accepted (hotkeyd_events_total, hotkeyd_units_total,
// hotkeyd_throttled_events_total, hotkeyd_source_last_batch_timestamp_seconds)
// and passes the batch on.
//
// It sits on the hot path of every source, so it touches no Prometheus
// vector per event: a batch is first summed per (table, index, class,
// source), usually one or two groups, and each group then adds to counters
// cached by label set.
type CountingSink struct {
	next ingest.Sink
	now  func() time.Time

	events      *prometheus.CounterVec
	units       *prometheus.CounterVec
	throttled   *prometheus.CounterVec
	lastBatch   *prometheus.GaugeVec
	children    sync.Map // sinkKey → *sinkChildren
	sourceGauge sync.Map // source → prometheus.Gauge
}

type sinkKey struct {
	table, index, source string
	class                ingest.Class
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
// registers its metrics with reg. now stamps the last-batch gauge; nil means
// time.Now.
func NewCountingSink(next ingest.Sink, reg prometheus.Registerer, now func() time.Time) (*CountingSink, error) {
	if now == nil {
		now = time.Now
	}
	s := &CountingSink{
		next: next,
		now:  now,
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hotkeyd_events_total",
			Help: "Accesses (reads or writes of an item or item collection) counted, by table (an index as table/index), class and source. Throttled calls are not counted.",
		}, []string{"table", "class", "source"}),
		units: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hotkeyd_units_total",
			Help: "Capacity units consumed, by table (an index as table/index) and class: read capacity units for class=read, write capacity units for class=write. Throttled calls are not counted.",
		}, []string{"table", "class"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hotkeyd_throttled_events_total",
			Help: "Calls that failed with a throttling error, by table (an index as table/index) and class, as reported by sources that see failed calls (CloudTrail).",
		}, []string{"table", "class"}),
		lastBatch: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hotkeyd_source_last_batch_timestamp_seconds",
			Help: "Unix time at which a source last handed over a batch of events that was accepted.",
		}, []string{"source"}),
	}
	for _, c := range []prometheus.Collector{s.events, s.units, s.throttled, s.lastBatch} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Put passes batch to the next Sink and, once it was accepted, counts it.
// A batch the next Sink refused (the pipeline is stopping) is not counted.
func (s *CountingSink) Put(ctx context.Context, batch []ingest.Event) error {
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
	for i := range groups {
		g := &groups[i]
		c := s.childrenFor(g.key)
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

func (k *sinkKey) matches(e *ingest.Event) bool {
	return k.class == e.Class && sameString(k.table, e.Table) && sameString(k.index, e.Index) && sameString(k.source, e.Source)
}

// sameString is a == b with a fast path for the usual case of a reader
// reusing one string for every event of a table: same pointer, no memequal
// call.
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

func (s *CountingSink) childrenFor(k sinkKey) *sinkChildren {
	if c, ok := s.children.Load(k); ok {
		return c.(*sinkChildren)
	}
	table, class := TableLabel(k.table, k.index), k.class.String()
	c := &sinkChildren{
		events:    s.events.WithLabelValues(table, class, k.source),
		units:     s.units.WithLabelValues(table, class),
		throttled: s.throttled.WithLabelValues(table, class),
	}
	actual, _ := s.children.LoadOrStore(k, c)
	return actual.(*sinkChildren)
}

func (s *CountingSink) gaugeFor(source string) prometheus.Gauge {
	if g, ok := s.sourceGauge.Load(source); ok {
		return g.(prometheus.Gauge)
	}
	g, _ := s.sourceGauge.LoadOrStore(source, s.lastBatch.WithLabelValues(source))
	return g.(prometheus.Gauge)
}

package daemon

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// The parts of the pipeline a reload may replace are reached through the
// switches below, so that what holds them (the counting sink and its
// counters, the registry, the readers) never changes.

// window is the sketch store behind the counting sink: the running one,
// which a reload that changes the sketches' shape (window, max_tables)
// replaces by an empty one. What the store counts for good (tables
// evicted, late events) is summed over the stores replaced, so that those
// counters go on. It implements traffic.Sink, export.TableSet and
// export.LateCounter.
type window struct {
	cur atomic.Pointer[sketch.Store]

	mu      sync.Mutex
	onEvict func(table, index string)
	evicted uint64            // by the stores replaced
	late    map[string]uint64 // by the stores replaced
}

func newWindow(s *sketch.Store) *window {
	w := &window{late: map[string]uint64{}}
	w.cur.Store(s)
	return w
}

// replace makes s the running store, its counts starting from nothing.
func (w *window) replace(s *sketch.Store) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.onEvict != nil {
		s.OnEvict(w.onEvict)
	}
	old := w.cur.Swap(s)
	w.evicted += old.Evicted()
	for src, n := range old.LateEvents() {
		w.late[src] += n
	}
}

// Put implements traffic.Sink.
func (w *window) Put(ctx context.Context, batch []traffic.Event) error {
	return w.cur.Load().Put(ctx, batch)
}

// Tracked implements export.TableSet.
func (w *window) Tracked(table, index string) bool { return w.cur.Load().Tracked(table, index) }

// Tables implements export.TableSet.
func (w *window) Tables() int { return w.cur.Load().Tables() }

// Evicted implements export.TableSet.
func (w *window) Evicted() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.evicted + w.cur.Load().Evicted()
}

// OnEvict implements export.TableSet.
func (w *window) OnEvict(f func(table, index string)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onEvict = f
	w.cur.Load().OnEvict(f)
}

// LateEvents implements export.LateCounter.
func (w *window) LateEvents() map[string]uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.cur.Load().LateEvents()
	if out == nil {
		out = map[string]uint64{}
	}
	for src, n := range w.late {
		out[src] += n
	}
	return out
}

// switchSink hands batches to the sink of the running configuration: the
// checks of its max_future and max_event_age in front of the counting
// sink.
type switchSink struct {
	cur atomic.Pointer[traffic.Sink]
}

func newSwitchSink(s traffic.Sink) *switchSink {
	w := &switchSink{}
	w.set(s)
	return w
}

func (w *switchSink) set(s traffic.Sink) { w.cur.Store(&s) }

// Put implements traffic.Sink.
func (w *switchSink) Put(ctx context.Context, batch []traffic.Event) error {
	return (*w.cur.Load()).Put(ctx, batch)
}

// gatherers gathers the daemon's registry and the running sources' own:
// a reload that restarts the sources gives them a new registry. The
// report's series are served beside them (export.Exposition), whose
// collector a reload that changes the top keys, the masking or the
// replica replaces.
type gatherers struct {
	main    prometheus.Gatherer
	sources atomic.Pointer[export.Registry]
}

// Gather implements prometheus.Gatherer.
func (g *gatherers) Gather() ([]*dto.MetricFamily, error) {
	return prometheus.Gatherers{g.main, g.sources.Load()}.Gather()
}

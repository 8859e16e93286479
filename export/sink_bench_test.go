package export

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// benchBatch is a batch of 512 events over 3 tables and both classes, the
// shape a reader hands over.
func benchBatch() []traffic.Event {
	batch := make([]traffic.Event, 512)
	for i := range batch {
		batch[i] = traffic.Event{
			Table:  []string{"orders", "sessions", "events"}[i%3],
			PK:     fmt.Sprintf("USER#%d", i),
			Class:  traffic.Class(i % 2),
			Units:  1,
			Source: "jsonl",
		}
	}
	return batch
}

// BenchmarkCountingSink measures the sink's own cost per event against the
// same batches handed to the next sink directly (baseline), and against
// the obvious alternative of one CounterVec update per event. The mixed
// batch (6 groups, every event in another group than the one before) is
// the worst case; counting-one-group is a typical reader batch.
func BenchmarkCountingSink(b *testing.B) {
	nop := traffic.SinkFunc(func(context.Context, []traffic.Event) error { return nil })
	batch := benchBatch()
	ctx := context.Background()
	report := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/event")
	}
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = nop.Put(ctx, batch)
		}
		report(b)
	})
	b.Run("counting", func(b *testing.B) {
		s, err := NewCountingSink(nop, prometheus.NewRegistry(), nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			_ = s.Put(ctx, batch)
		}
		report(b)
	})
	b.Run("counting-one-group", func(b *testing.B) {
		// The common shape: a reader's batch of one table and class.
		one := benchBatch()
		for i := range one {
			one[i].Table, one[i].Class = "orders", traffic.Write
		}
		s, err := NewCountingSink(nop, prometheus.NewRegistry(), nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			_ = s.Put(ctx, one)
		}
		report(b)
	})
	b.Run("per-event-vec", func(b *testing.B) {
		events := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "e_total", Help: "h"}, []string{"table", "class", "source"})
		units := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "u_total", Help: "h"}, []string{"table", "class"})
		b.ReportAllocs()
		for b.Loop() {
			for i := range batch {
				e := &batch[i]
				events.WithLabelValues(e.Table, e.Class.String(), e.Source).Inc()
				units.WithLabelValues(e.Table, e.Class.String()).Add(e.Units)
			}
			_ = nop.Put(ctx, batch)
		}
		report(b)
	})
}

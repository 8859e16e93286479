package export

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hotkeyd/hotkeyd/ingest"
)

// recordingSink keeps what it was given, or refuses with err.
type recordingSink struct {
	mu     sync.Mutex
	events int
	err    error
}

func (s *recordingSink) Put(_ context.Context, batch []ingest.Event) error {
	if s.err != nil {
		return s.err
	}
	s.mu.Lock()
	s.events += len(batch)
	s.mu.Unlock()
	return nil
}

func TestCountingSink(t *testing.T) {
	reg := prometheus.NewRegistry()
	next := &recordingSink{}
	at := time.Unix(1_800_000_000, 0)
	s, err := NewCountingSink(next, reg, func() time.Time { return at })
	if err != nil {
		t.Fatal(err)
	}
	batch := []ingest.Event{
		{Table: "orders", PK: "USER#1", Class: ingest.Write, Units: 2, Source: "jsonl"},
		{Table: "orders", PK: "USER#2", Class: ingest.Write, Units: 1, Source: "jsonl"},
		{Table: "orders", PK: "USER#1", Class: ingest.Read, Units: 0.5, Source: "jsonl"},
		{Table: "orders", Index: "status-index", PK: "OPEN", Class: ingest.Read, Units: 0.5, Source: "jsonl"},
		{Table: "orders", PK: "USER#1", Class: ingest.Write, Units: 1, Source: "jsonl"},
		{Table: "orders", PK: "USER#1", Class: ingest.Write, Units: 1, Source: "cloudtrail"},
		{Table: "orders", PK: "USER#1", Class: ingest.Write, Units: 1, Source: "cloudtrail", Throttled: true},
		{Table: "orders", PK: "USER#1", Class: ingest.Write, Units: 1, Source: "cloudtrail", Throttled: true},
	}
	if err := s.Put(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	// A second batch adds to the same series.
	if err := s.Put(context.Background(), []ingest.Event{{Table: "orders", PK: "USER#3", Class: ingest.Write, Units: 4, Source: "jsonl"}}); err != nil {
		t.Fatal(err)
	}
	// A refused batch is not counted.
	next.err = context.Canceled
	if err := s.Put(context.Background(), batch); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put of a refused batch = %v, want the next sink's error", err)
	}
	if next.events != len(batch)+1 {
		t.Errorf("next sink got %d events, want %d", next.events, len(batch)+1)
	}
	want := `
# HELP hotkeyd_events_total Accesses (reads or writes of an item or item collection) counted, by table (an index as table/index), class and source. Throttled calls are not counted.
# TYPE hotkeyd_events_total counter
hotkeyd_events_total{class="read",source="jsonl",table="orders"} 1
hotkeyd_events_total{class="read",source="jsonl",table="orders/status-index"} 1
hotkeyd_events_total{class="write",source="cloudtrail",table="orders"} 1
hotkeyd_events_total{class="write",source="jsonl",table="orders"} 4
# HELP hotkeyd_throttled_events_total Calls that failed with a throttling error, by table (an index as table/index) and class, as reported by sources that see failed calls (CloudTrail).
# TYPE hotkeyd_throttled_events_total counter
hotkeyd_throttled_events_total{class="read",table="orders"} 0
hotkeyd_throttled_events_total{class="read",table="orders/status-index"} 0
hotkeyd_throttled_events_total{class="write",table="orders"} 2
# HELP hotkeyd_units_total Capacity units consumed, by table (an index as table/index) and class: read capacity units for class=read, write capacity units for class=write. Throttled calls are not counted.
# TYPE hotkeyd_units_total counter
hotkeyd_units_total{class="read",table="orders"} 0.5
hotkeyd_units_total{class="read",table="orders/status-index"} 0.5
hotkeyd_units_total{class="write",table="orders"} 9
# HELP hotkeyd_source_last_batch_timestamp_seconds Unix time at which a source last handed over a batch of events that was accepted.
# TYPE hotkeyd_source_last_batch_timestamp_seconds gauge
hotkeyd_source_last_batch_timestamp_seconds{source="cloudtrail"} 1.8e+09
hotkeyd_source_last_batch_timestamp_seconds{source="jsonl"} 1.8e+09
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

func TestCountingSinkConcurrent(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := NewCountingSink(&recordingSink{}, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for range 100 {
				batch := make([]ingest.Event, 10)
				for i := range batch {
					batch[i] = ingest.Event{Table: "t", Class: ingest.Class(i % 2), Units: 1, Source: []string{"a", "b"}[w%2]}
				}
				_ = s.Put(context.Background(), batch)
			}
		})
	}
	wg.Wait()
	if got := testutil.ToFloat64(s.units.WithLabelValues("t", "write")); got != 2000 {
		t.Errorf("write units = %v, want 2000", got)
	}
	if got := testutil.ToFloat64(s.events.WithLabelValues("t", "read", "a")); got != 1000 {
		t.Errorf("read events from a = %v, want 1000", got)
	}
}

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
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// recordingSink keeps what it was given, or refuses with err.
type recordingSink struct {
	mu     sync.Mutex
	events int
	err    error
}

func (s *recordingSink) Put(_ context.Context, batch []traffic.Event) error {
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
	s, err := NewCountingSink(next, reg, func() time.Time { return at }, nil)
	if err != nil {
		t.Fatal(err)
	}
	batch := []traffic.Event{
		{Table: "orders", PK: "USER#1", Class: traffic.Write, Units: 2, Source: "jsonl"},
		{Table: "orders", PK: "USER#2", Class: traffic.Write, Units: 1, Source: "jsonl"},
		{Table: "orders", PK: "USER#1", Class: traffic.Read, Units: 0.5, Source: "jsonl"},
		{Table: "orders", Index: "status-index", PK: "OPEN", Class: traffic.Read, Units: 0.5, Source: "jsonl"},
		{Table: "orders", PK: "USER#1", Class: traffic.Write, Units: 1, Source: "jsonl"},
		{Table: "orders", PK: "USER#1", Class: traffic.Write, Units: 1, Source: "cloudtrail"},
		{Table: "orders", PK: "USER#1", Class: traffic.Write, Units: 1, Source: "cloudtrail", Throttled: true},
		{Table: "orders", PK: "USER#1", Class: traffic.Write, Units: 1, Source: "cloudtrail", Throttled: true},
	}
	if err := s.Put(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	// A second batch adds to the same series.
	if err := s.Put(context.Background(), []traffic.Event{{Table: "orders", PK: "USER#3", Class: traffic.Write, Units: 4, Source: "jsonl"}}); err != nil {
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
# HELP hotkeyd_throttled_events_total Calls that failed with a throttling error, by table (an index as table/index) and class, as reported by sources that see failed calls (CloudTrail; JSON lines and HTTP ingest that say so).
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
	// The per-table counters are the sink's own (a Kept gatherer), beside
	// the registry's.
	all := prometheus.Gatherers{reg, s}
	if err := testutil.GatherAndCompare(all, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.GatherAndLint(all); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

func TestCountingSinkConcurrent(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := NewCountingSink(&recordingSink{}, reg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for range 100 {
				batch := make([]traffic.Event, 10)
				for i := range batch {
					batch[i] = traffic.Event{Table: "t", Class: traffic.Class(i % 2), Units: 1, Source: []string{"a", "b"}[w%2]}
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

// TestCountingSinkFollowsTrackedTables puts more tables than the store
// tracks: tables that are not tracked get no series and are counted in
// hotkeyd_untracked_events_total, a table the store drops loses its
// series, and the log says so once per interval.
func TestCountingSinkFollowsTrackedTables(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	store, err := sketch.NewStore(sketch.Config{Window: time.Minute, MaxTables: 2}, clock)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	core, logs := observer.New(zapcore.InfoLevel)
	s, err := NewCountingSink(store, reg, clock, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	s.InitSource("http")
	put := func(table string, n int) {
		t.Helper()
		var batch []traffic.Event
		for range n {
			batch = append(batch, traffic.Event{Table: table, PK: "K", Class: traffic.Write, Units: 1, Source: "http"})
		}
		if err := s.Put(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
	}
	put("orders", 5)
	put("junk-1", 1)
	put("junk-2", 1) // refused: as busy as junk-1
	put("junk-3", 1)
	now = now.Add(2 * time.Minute) // every table idle
	put("orders", 5)
	put("sessions", 2) // takes the place of idle junk-1
	want := `
# HELP hotkeyd_events_total Accesses (reads or writes of an item or item collection) counted, by table (an index as table/index), class and source. Throttled calls are not counted.
# TYPE hotkeyd_events_total counter
hotkeyd_events_total{class="write",source="http",table="orders"} 10
hotkeyd_events_total{class="write",source="http",table="sessions"} 2
# HELP hotkeyd_tables_evicted_total Tables and indexes dropped from tracking to make room for a busier one.
# TYPE hotkeyd_tables_evicted_total counter
hotkeyd_tables_evicted_total 1
# HELP hotkeyd_tables_tracked Tables and indexes tracked now (at most max_tables).
# TYPE hotkeyd_tables_tracked gauge
hotkeyd_tables_tracked 2
# HELP hotkeyd_untracked_events_total Events not counted because their table was not tracked: more tables had traffic than max_tables, and theirs was among the least.
# TYPE hotkeyd_untracked_events_total counter
hotkeyd_untracked_events_total{source="http"} 2
`
	if err := testutil.GatherAndCompare(prometheus.Gatherers{reg, s}, strings.NewReader(want), "hotkeyd_events_total", "hotkeyd_tables_evicted_total",
		"hotkeyd_tables_tracked", "hotkeyd_untracked_events_total"); err != nil {
		t.Error(err)
	}
	lines := logs.FilterMessageSnippet("table limit reached").All()
	if len(lines) != 1 || lines[0].ContextMap()["untracked_table"] != "junk-2" {
		t.Errorf("log lines: %v, want one naming junk-2", lines)
	}
	// An interval later the next drop is logged with what was dropped
	// since.
	s.interval = 10 * time.Second
	now = now.Add(20 * time.Second)
	put("junk-4", 1)
	put("junk-5", 1)
	lines = logs.FilterMessageSnippet("table limit reached").All()
	if len(lines) != 2 || lines[1].ContextMap()["untracked_events"] != uint64(2) || lines[1].ContextMap()["evicted_tables"] != uint64(1) {
		t.Errorf("log lines: %v", lines)
	}
}

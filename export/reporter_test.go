package export

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestReporterCountsAllLogsBounded(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	reg := prometheus.NewRegistry()
	r, err := NewReporter(zap.New(core), reg, ReporterConfig{Burst: 3, Interval: time.Minute, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	bad := errors.New("unexpected end of JSON input")
	for range 1000 {
		r.Reject("jsonl", traffic.ReasonBadJSON, bad)
	}
	for range 10 {
		r.Reject("jsonl", traffic.ReasonMissingPK, bad)
	}
	r.Error("dynamodb-streams", "throttled", errors.New("GetRecords: ProvisionedThroughputExceeded"))

	countMsg := func(msg string, fields map[string]any) int {
		n := 0
	next:
		for _, e := range logs.All() {
			if e.Message != msg {
				continue
			}
			ctx := e.ContextMap()
			for k, v := range fields {
				if ctx[k] != v {
					continue next
				}
			}
			n++
		}
		return n
	}
	if n := countMsg("input rejected", map[string]any{"reason": "bad_json"}); n != 3 {
		t.Errorf("logged %d bad_json lines in the first minute, want the burst of 3", n)
	}
	if n := countMsg("input rejected", map[string]any{"reason": "missing_pk"}); n != 3 {
		t.Errorf("logged %d missing_pk lines, want 3 (bounds are per reason)", n)
	}
	if n := countMsg("source error", nil); n != 1 {
		t.Errorf("logged %d source errors, want 1", n)
	}
	if n := countMsg("log lines suppressed", nil); n != 0 {
		t.Errorf("a summary was logged before the interval ended")
	}

	// The next rejection after the interval logs the summary, then itself.
	clock.Add(time.Minute)
	r.Reject("jsonl", traffic.ReasonBadJSON, bad)
	if n := countMsg("log lines suppressed", map[string]any{"reason": "bad_json", "suppressed": int64(997)}); n != 1 {
		t.Errorf("want one summary of 997 suppressed bad_json lines; logs: %v", logs.FilterMessage("log lines suppressed").All())
	}
	if n := countMsg("input rejected", map[string]any{"reason": "bad_json"}); n != 4 {
		t.Errorf("logged %d bad_json lines, want 4 after the new interval began", n)
	}
	// Flush reports what is still pending, once.
	r.Flush()
	r.Flush()
	if n := countMsg("log lines suppressed", map[string]any{"reason": "missing_pk", "suppressed": int64(7)}); n != 1 {
		t.Errorf("Flush: want one summary of 7 suppressed missing_pk lines, got %d", n)
	}

	if r.Rejected() != 1011 {
		t.Errorf("Rejected() = %d, want 1011", r.Rejected())
	}
	want := `
# HELP hotkeyd_input_rejected_total Input lines or records a source could not use and skipped, by source and reason (bad_json, too_long, bad_utf8, missing_table, bad_table, missing_pk, bad_type, bad_units, bad_time, bad_op, bad_record, bad_file, key_too_long, bad_throttle_reason, misspelled_field, duplicate_field, beyond_dynamodb_limits).
# TYPE hotkeyd_input_rejected_total counter
hotkeyd_input_rejected_total{reason="bad_json",source="jsonl"} 1001
hotkeyd_input_rejected_total{reason="missing_pk",source="jsonl"} 10
# HELP hotkeyd_source_errors_total Failures reading a source itself (an unreadable file, an AWS API error), by source and reason.
# TYPE hotkeyd_source_errors_total counter
hotkeyd_source_errors_total{reason="throttled",source="dynamodb-streams"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestReporterInitSource(t *testing.T) {
	reg := prometheus.NewRegistry()
	r, err := NewReporter(zap.NewNop(), reg, ReporterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r.InitSource("jsonl")
	if n := testutil.CollectAndCount(r.rejected); n != len(rejectReasons) {
		t.Errorf("%d series after InitSource, want %d", n, len(rejectReasons))
	}
	if v := testutil.ToFloat64(r.rejected.WithLabelValues("jsonl", traffic.ReasonBadUnits)); v != 0 {
		t.Errorf("pre-initialised series = %v, want 0", v)
	}
}

// TestReporterIgnoredFields: members outside an input's format are
// counted per source, and each name is logged once, for the first
// maxNamedFields names; one more line says the rest are counted only.
func TestReporterIgnoredFields(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	reg := prometheus.NewRegistry()
	r, err := NewReporter(zap.New(core), reg, ReporterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r.InitSource("http")
	for range 3 {
		r.Ignored("jsonl", "request_id", 100)
	}
	for i := range maxNamedFields + 5 {
		r.Ignored("jsonl", fmt.Sprintf("f%d", i), 1)
	}
	want := `
# HELP hotkeyd_input_unknown_fields_total Members of accepted input lines that are no field of the input's format (a request_id in an access log), ignored, by source; the log names each name once.
# TYPE hotkeyd_input_unknown_fields_total counter
hotkeyd_input_unknown_fields_total{source="http"} 0
hotkeyd_input_unknown_fields_total{source="jsonl"} 337
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "hotkeyd_input_unknown_fields_total"); err != nil {
		t.Error(err)
	}
	named := logs.FilterMessage("input field ignored: no field of the format")
	if named.Len() != maxNamedFields || named.All()[0].ContextMap()["field"] != "request_id" {
		t.Errorf("%d names logged, the first %v; want %d, request_id", named.Len(), named.All()[0].ContextMap(), maxNamedFields)
	}
	if n := logs.FilterMessage("input fields ignored: more names, counted only").Len(); n != 1 {
		t.Errorf("the rest said %d times, want once", n)
	}
}

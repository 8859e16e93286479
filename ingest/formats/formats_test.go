package formats

import (
	"context"
	"strings"
	"testing"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/input"
)

func TestDetectFormat(t *testing.T) {
	s := New(Config{})
	for in, want := range map[string]string{
		`{"Records":[{"eventVersion":"1.08","eventSource":"dynamodb.amazonaws.com"}]}`: "cloudtrail",
		`{"ts":"2026-11-22T10:00:00Z","table":"orders","pk":"USER#1","op":"PutItem"}`:  "jsonl",
		``: "jsonl",
	} {
		i, err := input.NewInput("x", strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Detect(i).Format(); got != want {
			t.Errorf("Detect(%q) = %s; want %s", in, got, want)
		}
	}
}

func TestReadNotes(t *testing.T) {
	s := New(Config{})
	var events []ingest.Event
	sink := ingest.SinkFunc(func(_ context.Context, b []ingest.Event) error {
		events = append(events, b...)
		return nil
	})
	read := func(text string) {
		t.Helper()
		in, err := input.NewInput("x", strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Read(context.Background(), in, sink); err != nil {
			t.Fatal(err)
		}
	}
	read(`{"table":"orders","pk":"USER#1","op":"PutItem"}` + "\n")
	if n := s.Notes(); len(n) != 0 || len(events) != 1 {
		t.Fatalf("after JSON lines: notes %q, %d events", n, len(events))
	}
	read(`{"Records":[{"eventVersion":"1.08","eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","eventTime":"2026-11-22T10:00:00Z","requestParameters":{"tableName":"tbl","key":{"id":"a","sk":"b"}}}]}`)
	notes := strings.Join(s.Notes(), "\n")
	if len(events) != 2 || !strings.Contains(notes, "1 per item") || !strings.Contains(notes, "no key schema for tbl") {
		t.Errorf("after CloudTrail: %d events, notes %q", len(events), notes)
	}
}

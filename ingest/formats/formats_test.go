package formats

import (
	"context"
	"strings"
	"testing"

	"github.com/hotkeyd/hotkeyd/ingest/input"
	"github.com/hotkeyd/hotkeyd/traffic"
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
	var events []traffic.Event
	sink := traffic.SinkFunc(func(_ context.Context, b []traffic.Event) error {
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

// recorder keeps the messages of every rejection.
type recorder struct{ msgs []string }

func (r *recorder) Reject(_, _ string, err error) { r.msgs = append(r.msgs, err.Error()) }
func (r *recorder) Error(_, _ string, err error)  { r.msgs = append(r.msgs, err.Error()) }

// TestDecodePart reads a part of a JSON-lines input: rejected lines are
// numbered in the whole input, and nothing is reported when the part is
// read again.
func TestDecodePart(t *testing.T) {
	rec := &recorder{}
	s := New(Config{Reporter: rec})
	part := `{"table":"orders","pk":"USER#1","op":"PutItem"}` + "\nnot json\n"
	d, ok := s.DetectHead([]byte(part)).(PartDecoder)
	if !ok || d.Format() != "jsonl" || !d.Lines([]byte(part)) {
		t.Fatalf("JSON lines: decoder %v, a PartDecoder %v", d, ok)
	}
	if _, ok := s.DetectHead([]byte(`{"Records":[{"eventVersion":"1.08","eventSource":"dynamodb.amazonaws.com"}]}`)).(PartDecoder); ok {
		t.Error("CloudTrail, whose key schemas serve the inputs after, is a PartDecoder")
	}
	var n int
	sink := traffic.SinkFunc(func(_ context.Context, b []traffic.Event) error { n += len(b); return nil })
	for _, again := range []bool{false, true} {
		p := Part{Name: "access.log", LinesBefore: func() int64 { return 41 }, Again: again}
		if err := d.DecodePart(context.Background(), strings.NewReader(part), p, sink); err != nil {
			t.Fatal(err)
		}
	}
	if n != 2 || len(rec.msgs) != 1 || !strings.HasPrefix(rec.msgs[0], "access.log: line 43: ") {
		t.Errorf("%d events, rejections %q; want 2 and one, on line 43", n, rec.msgs)
	}
}

// TestIndexGapNoteOnce reads a NEW_AND_OLD_IMAGES stream record whose
// image holds a binary attribute that is not base64: the note on its
// index writes comes once, and does not advise the view type the stream
// already has.
func TestIndexGapNoteOnce(t *testing.T) {
	s := New(Config{Schemas: map[string]traffic.KeySchema{"orders": {
		PartitionKey: "order_id",
		Indexes: map[string]traffic.IndexSchema{
			"by-status": {PartitionKey: "status", Projection: traffic.Projection{Type: traffic.ProjectAll}},
		},
	}}})
	rec := `{"Records":[{"eventID":"e1","eventName":"INSERT","eventSource":"aws:dynamodb",` +
		`"eventSourceARN":"arn:aws:dynamodb:us-east-1:111122223333:table/orders/stream/2026-01-01T00:00:00.000",` +
		`"dynamodb":{"ApproximateCreationDateTime":1795429020,"Keys":{"order_id":{"S":"o1"}},"SequenceNumber":"101","SizeBytes":100,` +
		`"StreamViewType":"NEW_AND_OLD_IMAGES","NewImage":{"order_id":{"S":"o1"},"status":{"S":"P"},"blob":{"B":"%%%"}}}}]}`
	in, err := input.NewInput("dump.json", strings.NewReader(rec))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Read(context.Background(), in, traffic.SinkFunc(func(context.Context, []traffic.Event) error { return nil })); err != nil {
		t.Fatal(err)
	}
	var gaps []string
	for _, n := range s.Notes() {
		if strings.HasPrefix(n, "Index writes:") {
			gaps = append(gaps, n)
		}
	}
	if len(gaps) != 1 {
		t.Fatalf("index-write notes %q, want one", gaps)
	}
	if strings.Contains(gaps[0], "NEW_AND_OLD_IMAGES tells") || !strings.Contains(gaps[0], "base64") {
		t.Errorf("note on a NEW_AND_OLD_IMAGES stream: %s", gaps[0])
	}
}

package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// recorder is a Reporter that keeps every call.
type recorder struct {
	mu      sync.Mutex
	rejects []reject
	errors  []string
	ignored map[string]uint64 // "source field" → lines
}

// Ignored makes the recorder a traffic.FieldNoter.
func (r *recorder) Ignored(source, field string, lines uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ignored == nil {
		r.ignored = map[string]uint64{}
	}
	r.ignored[source+" "+field] += lines
}

func (r *recorder) ignoredSeen() map[string]uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.ignored)
}

type reject struct {
	source, reason string
	err            error
}

func (r *recorder) Reject(source, reason string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rejects = append(r.rejects, reject{source, reason, err})
}

func (r *recorder) Error(source, reason string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, source+" "+reason+": "+err.Error())
}

func (r *recorder) errorsSeen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errors...)
}

func (r *recorder) reasons() []reject {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]reject(nil), r.rejects...)
}

// collector is a Sink that keeps every Event and every batch size.
type collector struct {
	mu      sync.Mutex
	events  []traffic.Event
	batches []int
}

func (c *collector) Put(ctx context.Context, batch []traffic.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, batch...)
	c.batches = append(c.batches, len(batch))
	return nil
}

func (c *collector) snapshot() []traffic.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]traffic.Event(nil), c.events...)
}

func (c *collector) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.events)
}

// outcome renders what happened to each line as in testdata/*.golden.
func outcome(t *testing.T, events int, rec *recorder, oks []int64) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("# line: outcome (reason of a rejected line), blank lines are skipped silently\n")
	type row struct {
		line int64
		what string
	}
	var rows []row
	for _, l := range oks {
		rows = append(rows, row{l, "ok"})
	}
	for _, r := range rec.reasons() {
		le, ok := r.err.(*LineError)
		if !ok {
			t.Fatalf("rejection error %T is not a *LineError", r.err)
		}
		if le.Err.Reason != r.reason {
			t.Errorf("reported reason %q, error says %q", r.reason, le.Err.Reason)
		}
		rows = append(rows, row{le.Line, r.reason})
	}
	for i := 1; i < len(rows); i++ {
		for j := i; j > 0 && rows[j].line < rows[j-1].line; j-- {
			rows[j], rows[j-1] = rows[j-1], rows[j]
		}
	}
	for _, r := range rows {
		fmt.Fprintf(&b, "%d: %s\n", r.line, r.what)
	}
	return b.String()
}

// okLines returns the numbers of the lines a test file holds that carry an
// Event, found independently of the reader: lines with a table and an op
// parsed one by one.
func okLines(t *testing.T, data []byte, p *Parser) []int64 {
	t.Helper()
	var oks []int64
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := int64(1); sc.Scan(); n++ {
		var ev traffic.Event
		if len(bytes.TrimSpace(sc.Bytes())) > 0 && p.Parse(bytes.TrimSuffix(sc.Bytes(), []byte("\r")), &ev) == nil {
			oks = append(oks, n)
		}
	}
	return oks
}

func TestReadAllGolden(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "mixed.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "mixed.golden"))
	if err != nil {
		t.Fatal(err)
	}
	readers := map[string]func() io.Reader{
		"whole":    func() io.Reader { return bytes.NewReader(data) },
		"one byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) },
		"half":     func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) },
	}
	for name, r := range readers {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{}
			sink := &collector{}
			counts, err := ReadAll(context.Background(), r(), "mixed.jsonl", sink, Options{Reporter: rec, Now: fixedNow, BatchSize: 4})
			if err != nil {
				t.Fatal(err)
			}
			got := outcome(t, sink.len(), rec, okLines(t, data, NewParser(Fields{}, "", fixedNow)))
			if got != string(want) {
				t.Errorf("outcome:\n%s\nwant:\n%s", got, want)
			}
			if counts.Events != 6 || counts.Rejected != 10 || int(counts.Events) != sink.len() {
				t.Errorf("counts %+v, %d events put; want 6 events, 10 rejected", counts, sink.len())
			}
			if counts.Bytes != int64(len(data)) {
				t.Errorf("read %d bytes, want %d", counts.Bytes, len(data))
			}
			for _, n := range sink.batches {
				if n > 4 {
					t.Errorf("batch of %d events, BatchSize is 4", n)
				}
			}
			evs := sink.snapshot()
			if last := evs[len(evs)-1]; last.Index != "GSI1" || last.PK != "SKU#9" || last.Units != 1.5 {
				t.Errorf("last line (no newline) read as %+v", last)
			}
			for _, r := range rec.reasons() {
				if r.source != SourceName {
					t.Errorf("rejection reported for source %q", r.source)
				}
				if !strings.HasPrefix(r.err.Error(), "mixed.jsonl: line ") {
					t.Errorf("rejection error %q does not name the input and line", r.err)
				}
			}
		})
	}
}

// TestReadAllHostile puts each hostile line between two valid ones and
// checks that it is rejected with its reason and both neighbours count.
func TestReadAllHostile(t *testing.T) {
	good := `{"table":"tbl","pk":"k","op":"read"}`
	const maxLine = 4096
	cases := []struct {
		name, line, reason string
	}{
		{"3 MB line", `{"table":"tbl","pk":"` + strings.Repeat("x", 3<<20) + `","op":"read"}`, traffic.ReasonTooLong},
		{"3 MB of one byte", strings.Repeat("\x00", 3<<20), traffic.ReasonTooLong},
		{"line one byte over", `{"table":"tbl","op":"read","pk":"` + strings.Repeat("y", maxLine-30) + `"}`, traffic.ReasonTooLong},
		{"10 000 nested braces", strings.Repeat("{", 10000)[:maxLine-1], traffic.ReasonBadJSON},
		{"nested values", strings.Repeat(`{"a":`, 500) + "1" + strings.Repeat("}", 500), traffic.ReasonBadJSON},
		{"truncated", good[:20], traffic.ReasonBadJSON},
		{"binary", "\x89PNG\r\n\x1a\x00\x00", traffic.ReasonBadJSON},
		{"invalid UTF-8", "{\"table\":\"t\xc0\xaf\",\"pk\":\"k\",\"op\":\"read\"}", traffic.ReasonBadUTF8},
		{"wrong type", `{"table":["t"],"pk":"k","op":"read"}`, traffic.ReasonBadType},
		{"missing table", `{"pk":"k","op":"read"}`, traffic.ReasonMissingTable},
		{"missing pk", `{"table":"tbl","op":"read"}`, traffic.ReasonMissingPK},
		{"negative units", `{"table":"tbl","pk":"k","op":"read","units":-0.5}`, traffic.ReasonBadUnits},
		{"non-numeric units", `{"table":"tbl","pk":"k","op":"read","units":"NaN"}`, traffic.ReasonBadUnits},
		{"unparseable ts", `{"table":"tbl","pk":"k","op":"read","ts":"2026-13-01T00:00:00Z"}`, traffic.ReasonBadTime},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// "binary" holds a newline of its own: count the lines it makes.
			input := good + "\n" + c.line + "\n" + good + "\n"
			rec := &recorder{}
			sink := &collector{}
			counts, err := ReadAll(context.Background(), strings.NewReader(input), "hostile", sink, Options{Reporter: rec, MaxLineBytes: maxLine, Now: fixedNow})
			if err != nil {
				t.Fatal(err)
			}
			if sink.len() != 2 || counts.Events != 2 {
				t.Errorf("%d events put (counts %+v), want the 2 valid neighbours", sink.len(), counts)
			}
			rs := rec.reasons()
			if len(rs) == 0 || rs[0].reason != c.reason {
				t.Fatalf("rejections %v, want first %q", rs, c.reason)
			}
			if le := rs[0].err.(*LineError); le.Line != 2 {
				t.Errorf("rejected line %d, want 2", le.Line)
			}
			if uint64(len(rs)) != counts.Rejected {
				t.Errorf("%d reported, counts say %d", len(rs), counts.Rejected)
			}
		})
	}
}

func TestReadAllStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	sink := &collector{}
	go func() {
		_, err := ReadAll(ctx, pr, "pipe", sink, Options{Now: fixedNow})
		done <- err
	}()
	// A short write is flushed at once: the reader does not sit on Events
	// while the writer is idle.
	if _, err := pw.Write([]byte(`{"table":"tbl","pk":"k","op":"read"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return sink.len() == 1 })
	cancel()
	// io.Pipe has no read deadline: the reader stops at its next read.
	_ = pw.Close()
	if err := <-done; err != context.Canceled && err != nil {
		t.Errorf("ReadAll after cancel: %v", err)
	}
}

func TestReadAllInterruptsBlockedPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := ReadAll(ctx, r, "stdin", &collector{}, Options{})
		done <- err
	}()
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("ReadAll on a blocked pipe after cancel: %v, want context.Canceled", err)
	}
}

// TestReadAllRecycle reads the golden file with Options.Recycle into a sink
// that copies what it keeps, as a sketch.Store does: the Events are those
// read without it, one batch is filled over and over, and the key strings
// of a batch are only written over once Put has returned.
func TestReadAllRecycle(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "mixed.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	read := func(recycle bool) ([]traffic.Event, map[*traffic.Event]bool) {
		var events []traffic.Event
		batches := map[*traffic.Event]bool{}
		sink := traffic.SinkFunc(func(_ context.Context, b []traffic.Event) error {
			batches[&b[:1][0]] = true
			for _, e := range b {
				e.PK, e.SK = strings.Clone(e.PK), strings.Clone(e.SK)
				events = append(events, e)
			}
			return nil
		})
		if _, err := ReadAll(context.Background(), iotest.HalfReader(bytes.NewReader(data)), "mixed.jsonl", sink, Options{Now: fixedNow, BatchSize: 2, Recycle: recycle}); err != nil {
			t.Fatal(err)
		}
		return events, batches
	}
	want, fresh := read(false)
	got, reused := read(true)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("recycled batches read\n%v\nwant\n%v", got, want)
	}
	if len(reused) != 1 || len(fresh) < 3 {
		t.Errorf("%d distinct batches recycled (want 1), %d without (want one per Put)", len(reused), len(fresh))
	}
}

// TestReadAllLinesBefore reads the golden file as a part of a longer input:
// rejected lines are numbered from the lines before it, asked once.
func TestReadAllLinesBefore(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "mixed.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	numbers := func(before func() int64) []int64 {
		rec := &recorder{}
		if _, err := ReadAll(context.Background(), bytes.NewReader(data), "mixed.jsonl", &collector{}, Options{Now: fixedNow, Reporter: rec, LinesBefore: before}); err != nil {
			t.Fatal(err)
		}
		var lines []int64
		for _, r := range rec.reasons() {
			lines = append(lines, r.err.(*LineError).Line)
		}
		return lines
	}
	asked := 0
	want := numbers(nil)
	got := numbers(func() int64 { asked++; return 1000 })
	if len(got) != len(want) || len(want) == 0 || asked != 1 {
		t.Fatalf("lines %v with 1000 before (asked %d times), %v without", got, asked, want)
	}
	for i := range got {
		if got[i] != want[i]+1000 {
			t.Errorf("rejection %d on line %d, want %d", i, got[i], want[i]+1000)
		}
	}
}

// TestReadAllSkipsByteOrderMark: a UTF-8 byte order mark at the start of
// the input (Windows tools write one) is left out, and the first line
// counts; one further in is still a bad line.
func TestReadAllSkipsByteOrderMark(t *testing.T) {
	good := `{"table":"tbl","pk":"k","op":"read"}`
	rec := &recorder{}
	sink := &collector{}
	input := "\ufeff" + good + "\n\ufeff" + good + "\n" + good + "\n"
	counts, err := ReadAll(context.Background(), strings.NewReader(input), "bom", sink, Options{Reporter: rec, Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if counts.Events != 2 || counts.Rejected != 1 {
		t.Errorf("counts %+v, want 2 events and the second line rejected", counts)
	}
	if rs := rec.reasons(); len(rs) != 1 || rs[0].err.(*LineError).Line != 2 {
		t.Errorf("rejections %v, want line 2", rs)
	}
}

package main

import (
	"bufio"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/hotkeyd/hotkeyd/ingest"
)

func writeGzip(t testing.TB, path string, data []byte) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestKeySchemas(t *testing.T) {
	got, err := keySchemas(map[string]ingest.KeySchema{"Music": {PartitionKey: "Artist"}, "orders": {PartitionKey: "x"}},
		[]string{"orders=PK,SK", "sessions=id"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ingest.KeySchema{
		"Music":    {PartitionKey: "Artist"},
		"orders":   {PartitionKey: "PK", SortKey: "SK"},
		"sessions": {PartitionKey: "id"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %+v, want %+v", k, got[k], v)
		}
	}
	for _, bad := range []string{"orders", "=PK", "orders=", "orders=a,b,c"} {
		if _, err := keySchemas(nil, []string{bad}); err == nil {
			t.Errorf("--key-schema %q accepted", bad)
		}
	}
}

func TestDetectFormat(t *testing.T) {
	for in, want := range map[string]string{
		`{"Records":[{"eventVersion":"1.08","eventSource":"dynamodb.amazonaws.com"}]}`: "cloudtrail",
		`{"ts":"2026-11-22T10:00:00Z","table":"orders","pk":"USER#1","op":"PutItem"}`:  "jsonl",
		``: "jsonl",
	} {
		got, decode, err := detectFormat(analyzeInput{Name: "x", R: bufio.NewReader(strings.NewReader(in))})
		if err != nil || decode == nil || got != want {
			t.Errorf("detectFormat(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
}

func TestHumanNumbers(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{humanCount(999), "999"},
		{humanCount(450_123), "450k"},
		{humanCount(1_234_567), "1.2M"},
		{humanBytes(310_000_000), "310 MB"},
		{humanBytes(2_500_000_000), "2.5 GB"},
		{progressLine("access.log", 1_200_000, 310_000_000, 2_666_666_667), "read 1.2M events (310 MB) from access.log, 450k/s"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestProgressLine(t *testing.T) {
	var out lockedWriter
	var buf strings.Builder
	out.w = &buf
	var bytes, events atomic.Int64
	bytes.Store(2_000_000)
	events.Store(10_000)
	stop := startProgress(&out, "access.log", &bytes, &events, 10*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	stop()
	out.mu.Lock()
	got := buf.String()
	out.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) < 2 {
		t.Fatalf("progress printed %q, want a line every interval", got)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "read 10k events (2 MB) from access.log, ") || !strings.HasSuffix(l, "/s") {
			t.Errorf("progress line %q", l)
		}
	}
	if strings.Contains(got, "\r") {
		t.Errorf("progress to a non-terminal rewrites its line: %q", got)
	}
}

package streamrecord

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hotkeyd/hotkeyd/ingest"
)

// samplesDir holds third-party stream records (read-only test inputs).
var samplesDir = filepath.Join("..", "..", "..", "shared", "data", "streams")

// recordedResponse is a GetRecords answer of 1000 records recorded from
// DynamoDB Local by the Streams reader's TestRecordGetRecords, which keeps
// it in its own testdata.
const recordedResponse = "getrecords-1000.json"

// readTestdata reads a recorded answer of the Streams reader's testdata.
func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "streams", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// collector is a Sink that keeps every Event.
type collector struct {
	mu     sync.Mutex
	events []ingest.Event
}

func (c *collector) Put(ctx context.Context, batch []ingest.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.events = append(c.events, batch...)
	c.mu.Unlock()
	return nil
}

func (c *collector) snapshot() []ingest.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]ingest.Event(nil), c.events...)
}

// countingReporter counts rejections and errors by reason and keeps the
// last of each.
type countingReporter struct {
	mu      sync.Mutex
	errors  map[string]int
	rejects map[string]int
	last    map[string]error
}

func newCountingReporter() *countingReporter {
	return &countingReporter{errors: map[string]int{}, rejects: map[string]int{}, last: map[string]error{}}
}

func (r *countingReporter) Reject(_, reason string, err error) {
	r.mu.Lock()
	r.rejects[reason]++
	r.last[reason] = err
	r.mu.Unlock()
}

func (r *countingReporter) Error(_, reason string, err error) {
	r.mu.Lock()
	r.errors[reason]++
	r.last[reason] = err
	r.mu.Unlock()
}

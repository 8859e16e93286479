package cloudtrail

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// samples is the folder of real CloudTrail samples shared by the project
// (read-only, third-party licences: never copied into the repository).
var samples = filepath.Join("..", "..", "..", "shared", "data", "cloudtrail")

// goldenEvent is an Event as written in the golden files.
type goldenEvent struct {
	Table     string    `json:"table"`
	Index     string    `json:"index,omitempty"`
	PK        string    `json:"pk,omitempty"`
	SK        string    `json:"sk,omitempty"`
	Class     string    `json:"class"`
	Units     float64   `json:"units"`
	Time      time.Time `json:"time"`
	Source    string    `json:"source"`
	Throttled bool      `json:"throttled,omitempty"`
}

type golden struct {
	Events   []goldenEvent `json:"events"`
	Stats    Stats         `json:"stats"`
	Rejected []string      `json:"rejected,omitempty"`
}

// collector is a Sink and a Reporter that keeps everything it is given.
type collector struct {
	mu       sync.Mutex
	events   []traffic.Event
	rejected []string
	errors   []string
}

func (c *collector) Put(_ context.Context, b []traffic.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, b...)
	return nil
}

func (c *collector) Reject(source, reason string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rejected = append(c.rejected, source+" "+reason+": "+err.Error())
}

func (c *collector) Error(source, reason string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errors = append(c.errors, source+" "+reason+": "+err.Error())
}

func toGolden(evs []traffic.Event) []goldenEvent {
	out := make([]goldenEvent, len(evs))
	for i, e := range evs {
		out[i] = goldenEvent{e.Table, e.Index, e.PK, e.SK, e.Class.String(), e.Units, e.Time, e.Source, e.Throttled}
	}
	return out
}

// checkGolden compares got with testdata/golden/name.json, or rewrites it
// with -update.
func checkGolden(t *testing.T, name string, got golden) {
	t.Helper()
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("%s: got\n%s\nwant\n%s", name, b, want)
	}
}

// TestGoldenSamples decodes AWS's documented log entries and real sanitised
// captures and checks the exact Events each yields.
func TestGoldenSamples(t *testing.T) {
	cases := []struct {
		golden string
		file   string
		tables map[string]traffic.KeySchema
	}{
		// AWS's documented entries. No schema is configured: the UpdateTable
		// entry's tableDescription says Artist is the partition key and
		// SongTitle the sort key of Music. The failed UpdateItem
		// (ConditionalCheckFailedException) and the cancelled transaction
		// are neither traffic nor throttled; UpdateTable, DeleteTable,
		// CreateCluster (DAX) and GetRecords (Streams) are ignored.
		{"awsdocs-learnt", "awsdocs-ddb-log-entries.json", nil},
		// The configured schema wins over the learnt one.
		{"awsdocs-configured", "awsdocs-ddb-log-entries.json", map[string]traffic.KeySchema{
			"Music": {PartitionKey: "SongTitle"},
		}},
		// Real 2025 capture: a Scan (counted for the table, no key), a
		// PutItem and a GetItem on a one-attribute key.
		{"ibm-s3sqs", "ibm-universal-connectors-dynamodb-s3sqs-sample.json", nil},
		// A JSON array holding an EventBridge envelope (a Query on the GSI
		// value-index: the key is the index's) and a bare UpdateItem.
		{"ibm-filter-test", "ibm-universal-connectors-dynamodb-filter-test.json", nil},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			f, err := os.Open(filepath.Join(samples, c.file))
			if err != nil {
				t.Skipf("shared samples not available: %v", err)
			}
			defer f.Close()
			col := &collector{}
			st, err := Decode(context.Background(), f, c.file, c.tables, col, col)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, c.golden, golden{Events: toGolden(col.events), Stats: st, Rejected: col.rejected})
		})
	}
}

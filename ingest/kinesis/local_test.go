package kinesis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
	"github.com/hotkeyd/hotkeyd/traffic"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// payload is what DynamoDB writes to Kinesis for a change of item pk of
// table orders (Kinesis Data Streams for DynamoDB), with creation time in
// milliseconds.
func payload(id, table, pk string, ttl bool) []byte {
	ident := "null"
	if ttl {
		ident = `{"type":"Service","principalId":"dynamodb.amazonaws.com"}`
	}
	return fmt.Appendf(nil, `{"awsRegion":"us-east-1","eventID":%q,"eventName":"MODIFY","userIdentity":%s,"recordFormat":"application/json","tableName":%q,"dynamodb":{"ApproximateCreationDateTime":%d,"Keys":{"pk":{"S":%q}},"NewImage":{"pk":{"S":%q},"n":{"N":"1"}},"SizeBytes":1500},"eventSource":"aws:dynamodb"}`,
		id, ident, table, time.Now().UnixMilli(), pk, pk)
}

// put writes records with PutRecords, as DynamoDB does, keyed by the
// item's partition key.
func put(t *testing.T, c *kinesis.Client, stream string, recs ...[]byte) {
	t.Helper()
	entries := make([]types.PutRecordsRequestEntry, len(recs))
	for i, r := range recs {
		entries[i] = types.PutRecordsRequestEntry{Data: r, PartitionKey: aws.String(fmt.Sprintf("key-%d-%d", i, len(r)))}
	}
	out, err := c.PutRecords(context.Background(), &kinesis.PutRecordsInput{StreamName: aws.String(stream), Records: entries})
	if err != nil || aws.ToInt32(out.FailedRecordCount) != 0 {
		t.Fatalf("put records: %v, %+v", err, out)
	}
}

type sink struct {
	mu     sync.Mutex
	events []traffic.Event
}

func (s *sink) Put(ctx context.Context, b []traffic.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	s.events = append(s.events, b...)
	s.mu.Unlock()
	return nil
}

func (s *sink) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.events {
		out = append(out, e.Table+":"+e.PK)
	}
	slices.Sort(out)
	return out
}

func createStream(t *testing.T, k *testenv.Kinesalite, name string, shards int32) string {
	t.Helper()
	ctx := context.Background()
	if _, err := k.Client.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(name), ShardCount: aws.Int32(shards)}); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		out, err := k.Client.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(name)})
		if err == nil && out.StreamDescriptionSummary.StreamStatus == types.StreamStatusActive {
			return aws.ToString(out.StreamDescriptionSummary.StreamARN)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("stream %s did not become active", name)
	return ""
}

// runUntil runs src until got holds want events (or 30 s passed), then a
// little longer, so that anything beyond want would show, and stops it.
func runUntil(t *testing.T, src *Source, got *sink, want int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, got) }()
	deadline := time.Now().Add(30 * time.Second)
	for len(got.keys()) < want && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func keysOf(prefix string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("orders:%s%03d", prefix, i))
	}
	return out
}

// TestKinesalite reads a real Kinesis emulator written to with PutRecords
// the way DynamoDB writes its stream: every write once (a record put twice
// counted once, a TTL delete counted apart), by table; a restart on the
// same checkpoint folder reads on from where it stopped, with nothing lost
// or read twice; a split shard's children are read after it.
func TestKinesalite(t *testing.T) {
	k := testenv.StartKinesalite(t)
	arn := createStream(t, k, "orders-changes", 2)
	var first [][]byte
	for i := range 40 {
		first = append(first, payload(fmt.Sprint("a", i), "orders", fmt.Sprintf("a%03d", i), false))
	}
	first = append(first, first[3])                                     // delivered twice
	first = append(first, payload("ttl", "orders", "expired", true))    // a TTL delete
	first = append(first, payload("o1", "other-table", "x", false))     // another table of the stream
	first = append(first, []byte(`{"tableName":"orders","dynamodb":{`)) // not JSON
	put(t, k.Client, "orders-changes", first...)

	dir := t.TempDir()
	cfg := Config{Streams: []string{"orders-changes"}, PollInterval: 20 * time.Millisecond}
	cfg.Endpoint, cfg.Start, cfg.CheckpointDir, cfg.ListInterval = k.Endpoint, StartTrimHorizon, dir, 200*time.Millisecond
	rep := &rejects{}
	reg := prometheus.NewPedanticRegistry()
	newSource := func() *Source {
		src, err := NewWithClients(cfg, k.Client, nil, zaptest.NewLogger(t), rep, reg)
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	got := &sink{}
	src := newSource()
	runUntil(t, src, got, 41)
	want := append(keysOf("a", 40), "other-table:x")
	slices.Sort(want)
	if g := got.keys(); !slices.Equal(g, want) {
		t.Fatalf("first run: %d events %v, want %d", len(g), g, len(want))
	}
	if r := rep.list(); len(r) != 1 || !strings.HasPrefix(r[0], "bad_json: stream orders-changes shard ") {
		t.Errorf("rejects %q, want the one payload that is not JSON", r)
	}
	for name, want := range map[string]float64{"hotkeyd_kinesis_records_total": 44, "hotkeyd_kinesis_duplicate_records_total": 1, "hotkeyd_kinesis_ttl_deletes_total": 1} {
		if got := metricValue(t, reg, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	for _, e := range got.events {
		if e.Source != SourceName || e.Class != traffic.Write || e.Units != 2 || time.Since(e.Time) > time.Minute || e.Shard != "" {
			t.Fatalf("event %+v", e)
			break
		}
	}

	// Stopped: more writes, then a restart reads those only.
	var second [][]byte
	for i := range 25 {
		second = append(second, payload(fmt.Sprint("b", i), "orders", fmt.Sprintf("b%03d", i), false))
	}
	put(t, k.Client, "orders-changes", second...)
	got2 := &sink{}
	runUntil(t, newSource(), got2, 25)
	if g := got2.keys(); !slices.Equal(g, keysOf("b", 25)) {
		t.Errorf("after restart: %d events %v, want the 25 new ones", len(g), g)
	}

	// A shard split while the reader runs: the parent is read to its end,
	// then its children, and what is written after the split is read.
	listing, err := k.Client.ListShards(context.Background(), &kinesis.ListShardsInput{StreamName: aws.String("orders-changes")})
	if err != nil {
		t.Fatal(err)
	}
	parent := listing.Shards[0]
	if _, err := k.Client.SplitShard(context.Background(), &kinesis.SplitShardInput{
		StreamName: aws.String("orders-changes"), ShardToSplit: parent.ShardId,
		NewStartingHashKey: aws.String("100000000000000000000000000000000"),
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // UPDATING, then ACTIVE again
	var third [][]byte
	for i := range 30 {
		third = append(third, payload(fmt.Sprint("c", i), "orders", fmt.Sprintf("c%03d", i), false))
	}
	put(t, k.Client, "orders-changes", third...)
	got3 := &sink{}
	runUntil(t, newSource(), got3, 30)
	if g := got3.keys(); !slices.Equal(g, keysOf("c", 30)) {
		t.Errorf("after the split: %d events %v, want the 30 new ones", len(g), g)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	finished := 0
	for _, f := range files {
		if b, _ := os.ReadFile(f); strings.Contains(string(b), `"finished":true`) {
			finished++
		}
	}
	// A child that got no record yet has no checkpoint.
	if len(files) < 3 || finished != 1 {
		t.Errorf("%d checkpoints, %d finished; want the parent finished beside the other shards", len(files), finished)
	}
	_ = arn
}

func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			sum := 0.0
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
	}
	return -1
}

type rejects struct {
	mu      sync.Mutex
	reasons []string
}

func (r *rejects) Reject(_, reason string, err error) {
	r.mu.Lock()
	r.reasons = append(r.reasons, reason+": "+err.Error())
	r.mu.Unlock()
}

func (r *rejects) Error(string, string, error) {}

func (r *rejects) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.reasons...)
}

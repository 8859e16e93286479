package streams

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hotkeyd/hotkeyd/ingest/internal/ingesttest"
	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// keysOf returns how often each partition key of table was seen.
func keysOf(c *ingesttest.Sink, table string) map[string]int {
	m := map[string]int{}
	for _, e := range c.Events() {
		if e.Table == table {
			m[e.PK]++
		}
	}
	return m
}

// exactlyOnce fails unless keys prefix0..prefix(n-1) were each seen once.
func exactlyOnce(t *testing.T, seen map[string]int, prefix string, n int) {
	t.Helper()
	if len(seen) != n {
		t.Errorf("saw %d distinct keys, want %d", len(seen), n)
	}
	for k, c := range seen {
		if c != 1 || !strings.HasPrefix(k, prefix) {
			t.Errorf("key %q seen %d times, want once", k, c)
		}
	}
}

func hashTable(name string) tableSpec {
	return tableSpec{name: name, hash: "pk", hashType: ddbtypes.ScalarAttributeTypeS}
}

func testExpiredIterator(t *testing.T, d *testenv.DDBLocal) {
	createTable(t, d, hashTable("f_expired"))
	putItems(t, d.DB, "f_expired", "pk", "k", 0, 10)
	fs := &faultStreams{StreamsAPI: d.Streams}
	// Two reads succeed (the 10 records, then an empty read), then the
	// iterator "expires": the reader must resume after the last record.
	fs.failGetRecords(2, &types.ExpiredIteratorException{Message: aws.String("Iterator expired")})
	cfg := fastConfig()
	cfg.Tables = []string{"f_expired"}
	r := start(t, cfg, fs, d.DB)
	ingesttest.WaitFor(t, ingesttest.Eventually, "the fault to fire", func() bool { return fs.pending() == 0 })
	putItems(t, d.DB, "f_expired", "pk", "k", 10, 10)
	ingesttest.WaitFor(t, ingesttest.Eventually, "20 events", func() bool { return len(r.sink.Events()) >= 20 })
	time.Sleep(200 * time.Millisecond) // a duplicate would show by now
	r.stop(t)
	exactlyOnce(t, keysOf(r.sink, "f_expired"), "k", 20)
	if n := r.rep.Errors(shards.ReasonExpiredIterator); n != 1 {
		t.Errorf("expired_iterator errors = %d, want 1", n)
	}
}

func testTrimmed(t *testing.T, d *testenv.DDBLocal) {
	createTable(t, d, hashTable("f_trimmed"))
	putItems(t, d.DB, "f_trimmed", "pk", "k", 0, 5)
	fs := &faultStreams{StreamsAPI: d.Streams}
	fs.failGetRecords(2, &types.TrimmedDataAccessException{Message: aws.String("trimmed")})
	cfg := fastConfig()
	cfg.Tables = []string{"f_trimmed"}
	r := start(t, cfg, fs, d.DB)
	ingesttest.WaitFor(t, ingesttest.Eventually, "the fault to fire", func() bool { return fs.pending() == 0 })
	putItems(t, d.DB, "f_trimmed", "pk", "k", 5, 5)
	// After the "trim" the reader goes to the oldest record left; the
	// emulator trimmed nothing, so the first five are read again.
	ingesttest.WaitFor(t, ingesttest.Eventually, "15 events", func() bool { return len(r.sink.Events()) >= 15 })
	r.stop(t)
	if got := testutil.ToFloat64(r.src.m.gaps.WithLabelValues("f_trimmed")); got != 1 {
		t.Errorf("hotkeyd_stream_trimmed_gaps_total = %v, want 1", got)
	}
	seen := keysOf(r.sink, "f_trimmed")
	if len(seen) != 10 {
		t.Errorf("saw %d distinct keys, want 10", len(seen))
	}
}

func testThrottled(t *testing.T, d *testenv.DDBLocal) {
	createTable(t, d, hashTable("f_throttled"))
	putItems(t, d.DB, "f_throttled", "pk", "k", 0, 5)
	fs := &faultStreams{StreamsAPI: d.Streams}
	throttle := &types.LimitExceededException{Message: aws.String("Rate exceeded")}
	fs.failGetRecords(1, throttle, throttle, throttle)
	cfg := fastConfig()
	cfg.Tables = []string{"f_throttled"}
	r := start(t, cfg, fs, d.DB)
	ingesttest.WaitFor(t, ingesttest.Eventually, "the faults to fire", func() bool { return fs.pending() == 0 })
	putItems(t, d.DB, "f_throttled", "pk", "k", 5, 5)
	ingesttest.WaitFor(t, ingesttest.Eventually, "10 events", func() bool { return len(r.sink.Events()) >= 10 })
	time.Sleep(200 * time.Millisecond)
	r.stop(t)
	exactlyOnce(t, keysOf(r.sink, "f_throttled"), "k", 10)
	if n := r.rep.Errors(shards.ReasonThrottled); n != 3 {
		t.Errorf("throttled errors = %d, want 3", n)
	}

	// The backoff honours the context: with a long backoff and endless
	// throttling, cancelling still stops the reader at once.
	fs2 := &faultStreams{StreamsAPI: d.Streams}
	many := make([]error, 1000)
	for i := range many {
		many[i] = throttle
	}
	fs2.failGetRecords(0, many...)
	cfg.MaxBackoff = time.Hour
	r2 := start(t, cfg, fs2, d.DB)
	ingesttest.WaitFor(t, ingesttest.Eventually, "throttling", func() bool { return r2.rep.Errors(shards.ReasonThrottled) >= 3 })
	began := time.Now()
	r2.stop(t)
	// Well short of the hour's backoff, however loaded the machine.
	if took := time.Since(began); took > time.Minute {
		t.Errorf("stopping a throttled reader took %v: it waited on its backoff", took)
	}
}

// testStartLatest starts a reader on a stream it never read with start:
// latest: only records written after it began are counted.
func testStartLatest(t *testing.T, d *testenv.DDBLocal) {
	createTable(t, d, hashTable("f_latest"))
	putItems(t, d.DB, "f_latest", "pk", "old", 0, 5)
	cfg := fastConfig()
	cfg.Start = StartLatest
	cfg.Tables = []string{"f_latest"}
	r := start(t, cfg, d.Streams, d.DB)
	ingesttest.WaitFor(t, ingesttest.Eventually, "the first GetRecords call", func() bool {
		return testutil.ToFloat64(r.src.m.Calls.WithLabelValues("f_latest")) > 0
	})
	putItems(t, d.DB, "f_latest", "pk", "new", 0, 5)
	ingesttest.WaitFor(t, ingesttest.Eventually, "5 events", func() bool { return len(r.sink.Events()) >= 5 })
	time.Sleep(300 * time.Millisecond)
	r.stop(t)
	exactlyOnce(t, keysOf(r.sink, "f_latest"), "new", 5)
}

// testResume stops a reader and starts another on the same checkpoint
// folder: the second reads exactly what the first did not, although it is
// configured with start: latest (a stream read before resumes).
func testResume(t *testing.T, d *testenv.DDBLocal) {
	createTable(t, d, hashTable("f_resume"))
	dir := t.TempDir()
	cfg := fastConfig()
	cfg.Tables = []string{"f_resume"}
	cfg.CheckpointDir = dir
	putItems(t, d.DB, "f_resume", "pk", "a", 0, 30)
	r1 := start(t, cfg, d.Streams, d.DB)
	ingesttest.WaitFor(t, ingesttest.Eventually, "30 events", func() bool { return len(r1.sink.Events()) >= 30 })
	r1.stop(t)
	exactlyOnce(t, keysOf(r1.sink, "f_resume"), "a", 30)

	putItems(t, d.DB, "f_resume", "pk", "b", 0, 20)
	cfg.Start = StartLatest
	r2 := start(t, cfg, d.Streams, d.DB)
	ingesttest.WaitFor(t, ingesttest.Eventually, "20 events", func() bool { return len(r2.sink.Events()) >= 20 })
	time.Sleep(300 * time.Millisecond)
	r2.stop(t)
	exactlyOnce(t, keysOf(r2.sink, "f_resume"), "b", 20)

	// A corrupt checkpoint is reported with its file name and moved aside;
	// the shard is read again from its first record: nothing lost.
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	if len(files) != 1 {
		t.Fatalf("checkpoint files: %v, want one", files)
	}
	if err := os.WriteFile(files[0], []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	r3 := start(t, cfg, d.Streams, d.DB)
	ingesttest.WaitFor(t, ingesttest.Eventually, "50 events", func() bool { return len(r3.sink.Events()) >= 50 })
	r3.stop(t)
	if err := r3.rep.Last(shards.ReasonCheckpoint); err == nil || !strings.Contains(err.Error(), files[0]) {
		t.Errorf("checkpoint error %v does not name %s", err, files[0])
	}
	if _, err := os.Stat(files[0] + ".corrupt"); err != nil {
		t.Errorf("corrupt checkpoint not kept aside: %v", err)
	}
	if _, err := os.Stat(files[0]); err != nil {
		t.Errorf("no new checkpoint written: %v", err)
	}
}

// testStreamReenabled disables a table's stream and enables it again (a new
// stream ARN); the reader follows. A deleted table fails alone: the reader
// stays ready for the other one.
func testStreamReenabled(t *testing.T, d *testenv.DDBLocal) {
	ctx := context.Background()
	createTable(t, d, hashTable("f_reenabled"))
	createTable(t, d, hashTable("f_deleted"))
	cfg := fastConfig()
	cfg.Tables = []string{"f_reenabled", "f_deleted"}
	r := start(t, cfg, d.Streams, d.DB)
	putItems(t, d.DB, "f_reenabled", "pk", "a", 0, 3)
	ingesttest.WaitFor(t, ingesttest.Eventually, "3 events", func() bool { return len(r.sink.Events()) >= 3 })

	update := func(enabled bool) {
		spec := &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(enabled)}
		if enabled {
			spec.StreamViewType = ddbtypes.StreamViewTypeKeysOnly
		}
		if _, err := d.DB.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("f_reenabled"), StreamSpecification: spec}); err != nil {
			t.Fatalf("update table stream enabled=%v: %v", enabled, err)
		}
	}
	update(false)
	update(true)
	putItems(t, d.DB, "f_reenabled", "pk", "b", 0, 3)
	ingesttest.WaitFor(t, ingesttest.Eventually, "3 more events from the new stream", func() bool {
		return r.sink.CountWhere(func(e traffic.Event) bool { return strings.HasPrefix(e.PK, "b") }) >= 3
	})

	if _, err := d.DB.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("f_deleted")}); err != nil {
		t.Fatalf("delete table: %v", err)
	}
	ingesttest.WaitFor(t, ingesttest.Eventually, "not_found errors", func() bool { return r.rep.Errors(shards.ReasonNotFound) > 0 })
	putItems(t, d.DB, "f_reenabled", "pk", "c", 0, 3)
	ingesttest.WaitFor(t, ingesttest.Eventually, "events after the delete", func() bool {
		return r.sink.CountWhere(func(e traffic.Event) bool { return strings.HasPrefix(e.PK, "c") }) >= 3
	})
	if err := r.src.Ready(); err != nil {
		t.Errorf("not ready with one table of two deleted: %v", err)
	}
	r.stop(t)
	exactlyOnce(t, keysOf(r.sink, "f_reenabled"), "", 9)
}

// TestEndpointRestart stops DynamoDB Local under a running reader and
// starts it again (its data on disk): the reader reports not ready while
// the endpoint is down, then carries on without losing a record.
func TestEndpointRestart(t *testing.T) {
	d := testenv.DynamoDBLocal(t, testenv.WithDBPath(t.TempDir()))
	createTable(t, d, hashTable("restart"))
	cfg := fastConfig()
	cfg.Tables = []string{"restart"}
	cfg.CheckpointDir = t.TempDir()
	r := start(t, cfg, d.Streams, d.DB)
	putItems(t, d.DB, "restart", "pk", "k", 0, 5)
	ingesttest.WaitFor(t, ingesttest.Eventually, "5 events", func() bool { return len(r.sink.Events()) >= 5 })
	ingesttest.WaitFor(t, ingesttest.Eventually, "ready", func() bool { return r.src.Ready() == nil })

	d.Stop()
	ingesttest.WaitFor(t, ingesttest.Eventually, "not ready while the endpoint is down", func() bool { return r.src.Ready() != nil })
	if err := r.src.Ready(); !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("Ready() = %v, want it to say the endpoint is unreachable", err)
	}
	d.Start()
	putItems(t, d.DB, "restart", "pk", "k", 5, 5)
	ingesttest.WaitFor(t, ingesttest.Eventually, "10 events", func() bool { return len(r.sink.Events()) >= 10 })
	ingesttest.WaitFor(t, ingesttest.Eventually, "ready again", func() bool { return r.src.Ready() == nil })
	time.Sleep(300 * time.Millisecond)
	r.stop(t)
	exactlyOnce(t, keysOf(r.sink, "restart"), "k", 10)
	if r.rep.Errors(shards.ReasonNetwork) == 0 {
		t.Error("no network error counted while the endpoint was down")
	}
}

package streams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/hotkeyd/hotkeyd/ingest/internal/ingesttest"
	"github.com/hotkeyd/hotkeyd/ingest/lease"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// testFailover is the lease failover time of these tests.
const testFailover = 1500 * time.Millisecond

// leasedConfig is fastConfig reading through a lease table as worker, with
// a checkpoint after every batch, so that "at most one batch read twice"
// is what the tests can check exactly.
func leasedConfig(table, worker string, tables ...string) Config {
	c := fastConfig()
	c.Tables = tables
	c.LeaseTable = table
	c.WorkerID = worker
	c.FailoverTime = testFailover
	c.CheckpointInterval = time.Nanosecond
	return c
}

// TestLeases runs readers that split their shards through a lease table,
// with the faults the lease protocol must survive, against one DynamoDB
// Local. Each fault is logged in one line and costs at most one batch read
// twice, never a record.
func TestLeases(t *testing.T) {
	d := testenv.DynamoDBLocal(t)
	t.Run("HandWrittenItem", func(t *testing.T) { testHandWrittenItem(t, d) })
	t.Run("VanishedMidCheckpoint", func(t *testing.T) {
		t.Run("WriteApplied", func(t *testing.T) { testVanishedMidCheckpoint(t, d, true) })
		t.Run("WriteLost", func(t *testing.T) { testVanishedMidCheckpoint(t, d, false) })
	})
	t.Run("LostRace", func(t *testing.T) { testLeaseLostRace(t, d) })
	t.Run("TakenOverAtLatest", func(t *testing.T) { testTakenOverAtLatest(t, d) })
	t.Run("TableDeleted", func(t *testing.T) { testLeaseTableDeleted(t, d) })
}

// readShard returns a table's stream, its one shard, and the sequence
// numbers of the records it holds, read with the SDK directly.
func readShard(t *testing.T, d *testenv.DDBLocal, table string) (arn, shard string, seqs []string) {
	t.Helper()
	ctx := context.Background()
	dt, err := d.DB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	arn = aws.ToString(dt.Table.LatestStreamArn)
	ds, err := d.Streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil || len(ds.StreamDescription.Shards) != 1 {
		t.Fatalf("describe stream: %v, %+v", err, ds)
	}
	shard = aws.ToString(ds.StreamDescription.Shards[0].ShardId)
	it, err := d.Streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
		StreamArn: aws.String(arn), ShardId: aws.String(shard), ShardIteratorType: types.ShardIteratorTypeTrimHorizon,
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.Streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Records {
		seqs = append(seqs, aws.ToString(r.Dynamodb.SequenceNumber))
	}
	return arn, shard, seqs
}

// createLeaseTable creates a lease table the way a person would, with the
// KCL's key.
func createLeaseTable(t *testing.T, d *testenv.DDBLocal, name string) {
	t.Helper()
	_, err := d.DB.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("leaseKey"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("leaseKey"), KeyType: ddbtypes.KeyTypeHash}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatalf("create lease table: %v", err)
	}
}

// keysFrom returns prefix+i for i in [from, to).
func keysFrom(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// union counts each key of table across the readers' sinks.
func union(table string, rs ...*running) map[string]int {
	m := map[string]int{}
	for _, r := range rs {
		for k, c := range keysOf(r.sink, table) {
			m[k] += c
		}
	}
	return m
}

// checkCounts fails unless every key of want was seen, and exactly the keys
// of twice were seen twice; nothing else more than once.
func checkCounts(t *testing.T, seen map[string]int, want, twice []string) {
	t.Helper()
	for _, k := range want {
		n := seen[k]
		switch {
		case n == 0:
			t.Errorf("key %s lost", k)
		case n == 2 && slices.Contains(twice, k):
		case n != 1:
			t.Errorf("key %s seen %d times", k, n)
		case slices.Contains(twice, k):
			t.Errorf("key %s seen once, want twice (the batch in flight)", k)
		}
	}
	if len(seen) != len(want) {
		var extra []string
		for k := range seen {
			if !slices.Contains(want, k) {
				extra = append(extra, k)
			}
		}
		sort.Strings(extra)
		t.Errorf("unexpected keys %v", extra)
	}
}

// A lease item written by hand or by an older version (the counter a
// string, the checkpoint a number, no owner, nothing else) is taken at
// once, and reading resumes after its checkpoint, whatever start says.
func testHandWrittenItem(t *testing.T, d *testenv.DDBLocal) {
	const table, leases = "l_hand", "l_hand_leases"
	createTable(t, d, hashTable(table))
	putItems(t, d.DB, table, "pk", "k", 0, 10)
	arn, shard, seqs := readShard(t, d, table)
	if len(seqs) != 10 {
		t.Fatalf("%d records in the stream, want 10", len(seqs))
	}
	createLeaseTable(t, d, leases)
	if _, err := d.DB.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(leases),
		Item: map[string]ddbtypes.AttributeValue{
			"leaseKey":     &ddbtypes.AttributeValueMemberS{Value: arn + ":" + shard},
			"leaseCounter": &ddbtypes.AttributeValueMemberS{Value: "3"},
			"checkpoint":   &ddbtypes.AttributeValueMemberN{Value: seqs[4]},
		},
	}); err != nil {
		t.Fatal(err)
	}
	cfg := leasedConfig(leases, "w1", table)
	cfg.Start = StartLatest
	r := start(t, cfg, d.Streams, d.DB)
	ingesttest.WaitFor(t, ingesttest.Eventually, "5 events", func() bool { return len(r.sink.Events()) >= 5 })
	putItems(t, d.DB, table, "pk", "k", 10, 5)
	ingesttest.WaitFor(t, ingesttest.Eventually, "10 events", func() bool { return len(r.sink.Events()) >= 10 })
	time.Sleep(300 * time.Millisecond)
	r.stop(t)
	checkCounts(t, keysOf(r.sink, table), keysFrom("k", 5, 15), nil)
	if got := r.logged("lease item has attributes of the wrong type"); got != 1 {
		t.Errorf("%d log lines about the hand-written item, want 1", got)
	}
	if got := r.rep.ErrorsPrefixed(lease.Reason, fmt.Sprintf("lease %q: ", arn+":"+shard)); got != 1 {
		t.Errorf("the hand-written item reported %d times as a lease error, want once", got)
	}
}

// vanisher makes a reader vanish in the middle of a checkpoint: every call
// of its clients fails from then on, as if the process was gone. The write
// itself reaches DynamoDB Local (applied) or not. Everything else is real.
type vanisher struct {
	armed   atomic.Bool
	applied bool
	dead    atomic.Bool
}

var errVanished = errors.New("connection refused: the process vanished")

type vanishDB struct {
	lease.DynamoDBAPI
	v *vanisher
}

func (f *vanishDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if f.v.dead.Load() {
		return nil, errVanished
	}
	if setsCheckpoint(in) && f.v.armed.CompareAndSwap(true, false) {
		if f.v.applied {
			if _, err := f.DynamoDBAPI.UpdateItem(ctx, in, opts...); err != nil {
				return nil, err
			}
		}
		f.v.dead.Store(true)
		return nil, errVanished
	}
	return f.DynamoDBAPI.UpdateItem(ctx, in, opts...)
}

func (f *vanishDB) Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	if f.v.dead.Load() {
		return nil, errVanished
	}
	return f.DynamoDBAPI.Scan(ctx, in, opts...)
}

func (f *vanishDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if f.v.dead.Load() {
		return nil, errVanished
	}
	return f.DynamoDBAPI.PutItem(ctx, in, opts...)
}

func (f *vanishDB) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	if f.v.dead.Load() {
		return nil, errVanished
	}
	return f.DynamoDBAPI.DescribeTable(ctx, in, opts...)
}

type vanishStreams struct {
	StreamsAPI
	v *vanisher
}

func (f *vanishStreams) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	if f.v.dead.Load() {
		return nil, errVanished
	}
	out, err := f.StreamsAPI.GetRecords(ctx, in, opts...)
	if f.v.dead.Load() {
		// A process that vanished during the call gets no answer: records
		// written after it vanished never reach it.
		return nil, errVanished
	}
	return out, err
}

func (f *vanishStreams) DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	if f.v.dead.Load() {
		return nil, errVanished
	}
	return f.StreamsAPI.DescribeStream(ctx, in, opts...)
}

// setsCheckpoint reports whether an update writes a checkpoint.
func setsCheckpoint(in *dynamodb.UpdateItemInput) bool {
	for k, v := range in.ExpressionAttributeNames {
		if v == "checkpoint" && strings.HasPrefix(k, "#s") {
			return true
		}
	}
	return false
}

// A reader that vanishes in the middle of a checkpoint write leaves its
// lease to expire; a standby takes it and reads on from the checkpoint in
// the table. If the write was applied nothing is read twice; if not, the
// batch it was writing for is, and nothing else.
func testVanishedMidCheckpoint(t *testing.T, d *testenv.DDBLocal, applied bool) {
	table := "l_vanish_lost"
	if applied {
		table = "l_vanish_applied"
	}
	leases := table + "_leases"
	createTable(t, d, hashTable(table))
	v := &vanisher{applied: applied}
	a := start(t, leasedConfig(leases, "a", table), &vanishStreams{StreamsAPI: d.Streams, v: v}, &vanishDB{DynamoDBAPI: d.DB, v: v})
	putItems(t, d.DB, table, "pk", "k", 0, 10)
	ingesttest.WaitFor(t, ingesttest.Eventually, "a reads 10 events", func() bool { return len(a.sink.Events()) >= 10 })
	b := start(t, leasedConfig(leases, "b", table), d.Streams, d.DB)
	ingesttest.WaitFor(t, ingesttest.Eventually, "b ready", func() bool { return b.src.Ready() == nil })

	v.armed.Store(true)
	putItems(t, d.DB, table, "pk", "k", 10, 10)
	ingesttest.WaitFor(t, ingesttest.Eventually, "a to vanish", func() bool { return v.dead.Load() })
	vanishedAt := time.Now()
	inFlight := a.sink.LastBatch()
	// a alone may have read every key by now: when its checkpoint was not
	// applied, wait for b to have read the batch in flight again, however
	// late its first round comes.
	ingesttest.WaitFor(t, ingesttest.Eventually, "every key read (and b to read the batch in flight, if its checkpoint was lost)", func() bool {
		byB := keysOf(b.sink, table)
		return len(union(table, a, b)) == 20 && (applied || !slices.ContainsFunc(inFlight, func(k string) bool { return byB[k] == 0 }))
	})
	t.Logf("b read on %v after a vanished; a's batch in flight: %v", time.Since(vanishedAt).Round(time.Millisecond), inFlight)
	time.Sleep(300 * time.Millisecond)
	b.stop(t)
	a.stop(t)
	var twice []string
	if !applied {
		twice = inFlight
	}
	checkCounts(t, union(table, a, b), keysFrom("k", 0, 20), twice)
	if got := b.logs.FilterMessage("took lease").FilterFieldKey("from").Len(); got != 1 {
		t.Errorf("b logged %d takes, want 1", got)
	}
	if line := b.logs.FilterMessage("took lease").All(); len(line) == 1 && line[0].ContextMap()["from"] != "a" {
		t.Errorf("b took the lease from %v, want a", line[0].ContextMap()["from"])
	}
}

// A reader started at LATEST vanishes before it read a record, so its
// lease holds no position; the records written before and after are read
// by the worker that takes the lease over, from the shard's oldest record
// (all within the window), once each: none is lost to a second LATEST.
func testTakenOverAtLatest(t *testing.T, d *testenv.DDBLocal) {
	const table, leases = "l_latest_taken", "l_latest_taken_leases"
	createTable(t, d, hashTable(table))
	putItems(t, d.DB, table, "pk", "before", 0, 5)
	latest := func(worker string) Config {
		c := leasedConfig(leases, worker, table)
		c.Start = StartLatest
		return c
	}
	v := &vanisher{}
	a := start(t, latest("a"), &vanishStreams{StreamsAPI: d.Streams, v: v}, &vanishDB{DynamoDBAPI: d.DB, v: v})
	ingesttest.WaitFor(t, ingesttest.Eventually, "a reading its shard", func() bool {
		return a.src.Ready() == nil && a.logged("reading leased shard") == 1
	})
	v.dead.Store(true)
	putItems(t, d.DB, table, "pk", "after", 0, 10)
	b := start(t, latest("b"), d.Streams, d.DB)
	ingesttest.WaitFor(t, ingesttest.Eventually, "b to read the 15 records", func() bool { return len(keysOf(b.sink, table)) == 15 })
	time.Sleep(300 * time.Millisecond) // room for a record read twice to show
	b.stop(t)
	a.stop(t)
	if n := len(keysOf(a.sink, table)); n != 0 {
		t.Errorf("a counted %d keys, want none (it began at LATEST)", n)
	}
	checkCounts(t, keysOf(b.sink, table), append(keysFrom("before", 0, 5), keysFrom("after", 0, 10)...), nil)
	took := b.logs.FilterMessage("took lease").All()
	if len(took) != 1 || took[0].ContextMap()["inherited"] != true {
		t.Errorf("b's takes: %v, want one of an inherited lease", took)
	}
}

// stealDB is the real client of DynamoDB Local, with a rival worker ("b")
// that takes the lease just before this reader's next checkpoint lands:
// the only way to lose that race at a chosen moment. Every write is real.
type stealDB struct {
	lease.DynamoDBAPI
	db    *dynamodb.Client
	table string
	armed atomic.Bool
}

func (f *stealDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if setsCheckpoint(in) && f.armed.CompareAndSwap(true, false) {
		if _, err := f.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:        aws.String(f.table),
			Key:              in.Key,
			UpdateExpression: aws.String("SET leaseOwner = :o ADD leaseCounter :one"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
				":o": &ddbtypes.AttributeValueMemberS{Value: "b"}, ":one": &ddbtypes.AttributeValueMemberN{Value: "1"},
			},
		}); err != nil {
			return nil, err
		}
	}
	return f.DynamoDBAPI.UpdateItem(ctx, in, opts...)
}

// A checkpoint that loses the race to another worker stops the reader
// (one log line); the winner reads on from the last checkpoint written, so
// the batch whose checkpoint failed is read twice, and nothing else.
func testLeaseLostRace(t *testing.T, d *testenv.DDBLocal) {
	const table, leases = "l_race", "l_race_leases"
	createTable(t, d, hashTable(table))
	sdb := &stealDB{DynamoDBAPI: d.DB, db: d.DB, table: leases}
	a := start(t, leasedConfig(leases, "a", table), d.Streams, sdb)
	putItems(t, d.DB, table, "pk", "k", 0, 10)
	ingesttest.WaitFor(t, ingesttest.Eventually, "a reads 10 events", func() bool { return len(a.sink.Events()) >= 10 })
	b := start(t, leasedConfig(leases, "b", table), d.Streams, d.DB)
	ingesttest.WaitFor(t, ingesttest.Eventually, "b ready", func() bool { return b.src.Ready() == nil })

	sdb.armed.Store(true)
	putItems(t, d.DB, table, "pk", "k", 10, 10)
	ingesttest.WaitFor(t, ingesttest.Eventually, "a to lose its lease", func() bool { return a.logged("lost lease; its reader stops") == 1 })
	inFlight := a.sink.LastBatch()
	// a alone has read every key by now: wait for b to have read the
	// batch in flight again, however late its first round comes.
	ingesttest.WaitFor(t, ingesttest.Eventually, "every key read, and b to read the batch in flight", func() bool {
		byB := keysOf(b.sink, table)
		return len(union(table, a, b)) == 20 && !slices.ContainsFunc(inFlight, func(k string) bool { return byB[k] == 0 })
	})
	time.Sleep(300 * time.Millisecond)
	a.stop(t)
	b.stop(t)
	checkCounts(t, union(table, a, b), keysFrom("k", 0, 20), inFlight)
	if got := a.logged("lost lease; its reader stops"); got != 1 {
		t.Errorf("a logged the loss %d times, want once", got)
	}
}

// The lease table deleted while records flow: the reader creates it again
// and writes its leases back with their positions; no shard starts over,
// nothing is read twice or lost.
func testLeaseTableDeleted(t *testing.T, d *testenv.DDBLocal) {
	const leases = "l_deleted_leases"
	tables := []string{"l_deleted_a", "l_deleted_b"}
	for _, tb := range tables {
		createTable(t, d, hashTable(tb))
	}
	r := start(t, leasedConfig(leases, "w", tables...), d.Streams, d.DB)
	var wg sync.WaitGroup
	write := func(from, n int) {
		for _, tb := range tables {
			wg.Go(func() { putItems(t, d.DB, tb, "pk", "k", from, n) })
		}
		wg.Wait()
	}
	write(0, 10)
	ingesttest.WaitFor(t, ingesttest.Eventually, "20 events", func() bool { return len(r.sink.Events()) >= 20 })
	if _, err := d.DB.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(leases)}); err != nil {
		t.Fatal(err)
	}
	write(10, 10)
	ingesttest.WaitFor(t, ingesttest.Eventually, "the table created again", func() bool { return r.logged("lease table was deleted") == 1 })
	write(20, 10)
	ingesttest.WaitFor(t, ingesttest.Eventually, "60 events", func() bool { return len(r.sink.Events()) >= 60 })
	ingesttest.WaitFor(t, ingesttest.Eventually, "ready", func() bool { return r.src.Ready() == nil })
	time.Sleep(300 * time.Millisecond)
	r.stop(t)
	for _, tb := range tables {
		checkCounts(t, keysOf(r.sink, tb), keysFrom("k", 0, 30), nil)
	}
	if got := r.logged("lost lease"); got != 0 {
		t.Errorf("%d leases lost", got)
	}
}

// TestLeasesEndpointRestart stops DynamoDB Local (data on disk) under two
// readers sharing two tables for longer than the failover time: both are
// unready meanwhile and log it once; afterwards each reads on with its own
// leases, and every record is read once.
func TestLeasesEndpointRestart(t *testing.T) {
	d := testenv.DynamoDBLocal(t, testenv.WithDBPath(t.TempDir()))
	const leases = "l_restart_leases"
	tables := []string{"l_restart_a", "l_restart_b"}
	for _, tb := range tables {
		createTable(t, d, hashTable(tb))
	}
	a := start(t, leasedConfig(leases, "a", tables...), d.Streams, d.DB)
	b := start(t, leasedConfig(leases, "b", tables...), d.Streams, d.DB)
	held := func(r *running) float64 { return testutilGauge(r, "hotkeyd_leases_held") }
	ingesttest.WaitFor(t, ingesttest.Eventually, "one lease each", func() bool { return held(a) == 1 && held(b) == 1 })
	for _, tb := range tables {
		putItems(t, d.DB, tb, "pk", "k", 0, 10)
	}
	ingesttest.WaitFor(t, ingesttest.Eventually, "20 events", func() bool { return len(a.sink.Events())+len(b.sink.Events()) >= 20 })
	// Leases may have moved while the two started, and a call may have
	// timed out on a loaded machine (the lease table unusable for a
	// moment); count what the restart does.
	ingesttest.WaitFor(t, ingesttest.Eventually, "both ready", func() bool { return a.src.Ready() == nil && b.src.Ready() == nil })
	lostBefore := []int{a.logged("lost lease"), b.logged("lost lease")}
	unusableBefore := []int{a.logged("cannot use the lease table"), b.logged("cannot use the lease table")}

	d.Stop()
	ingesttest.WaitFor(t, ingesttest.Eventually, "both unready", func() bool { return a.src.Ready() != nil && b.src.Ready() != nil })
	time.Sleep(2 * testFailover)
	d.Start()
	for _, tb := range tables {
		putItems(t, d.DB, tb, "pk", "k", 10, 10)
	}
	ingesttest.WaitFor(t, ingesttest.Eventually, "40 events", func() bool { return len(a.sink.Events())+len(b.sink.Events()) >= 40 })
	ingesttest.WaitFor(t, ingesttest.Eventually, "both ready", func() bool { return a.src.Ready() == nil && b.src.Ready() == nil })
	time.Sleep(300 * time.Millisecond)
	a.stop(t)
	b.stop(t)
	for _, tb := range tables {
		checkCounts(t, union(tb, a, b), keysFrom("k", 0, 20), nil)
	}
	for i, r := range []*running{a, b} {
		if got := r.logged("cannot use the lease table") - unusableBefore[i]; got != 1 {
			t.Errorf("%d lines about the unusable lease table in the restart, want 1", got)
		}
		if got := r.logged("lost lease") - lostBefore[i]; got != 0 {
			t.Errorf("%d leases lost in the restart", got)
		}
	}
}

// testutilGauge reads an unlabelled-by-table gauge of a running reader's
// registry (the first series of that name).
func testutilGauge(r *running, name string) float64 {
	mfs, err := r.reg.Gather()
	if err != nil {
		return -1
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

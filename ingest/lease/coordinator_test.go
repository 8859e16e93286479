package lease

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zaptest"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// TestDynamoDBLocal runs coordinators against AWS's own emulator, started
// once for all subtests (each uses its own lease table).
func TestDynamoDBLocal(t *testing.T) {
	d := testenv.DynamoDBLocal(t)
	t.Run("SplitFailoverHandover", func(t *testing.T) { testSplitFailoverHandover(t, d) })
	t.Run("FailoverOnTheTakersClock", func(t *testing.T) { testFailoverOnTheTakersClock(t, d) })
	t.Run("ParentsFirst", func(t *testing.T) { testParentsFirst(t, d) })
	t.Run("KCLItems", func(t *testing.T) { testKCLItems(t, d) })
	t.Run("BadItems", func(t *testing.T) { testBadItems(t, d) })
	t.Run("LostRace", func(t *testing.T) { testLostRace(t, d) })
	t.Run("TableDeleted", func(t *testing.T) { testTableDeleted(t, d) })
	t.Run("WriteBackAnswerLost", func(t *testing.T) { testWriteBackAnswerLost(t, d) })
	t.Run("RetriedWrite", func(t *testing.T) { testRetriedWrite(t, d) })
	t.Run("Board", func(t *testing.T) { testBoard(t, d) })
}

// resender sends every UpdateItem twice while on is set, and answers with
// the second attempt: what the SDK's retryer does when the answer to an
// applied write is lost on the way back. DynamoDB Local cannot lose an
// answer, so this wraps the real client.
type resender struct {
	DynamoDBAPI
	on atomic.Bool
}

func (r *resender) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if r.on.Load() {
		if _, err := r.DynamoDBAPI.UpdateItem(ctx, in, opts...); err != nil {
			return nil, err
		}
	}
	return r.DynamoDBAPI.UpdateItem(ctx, in, opts...)
}

// A renewal, checkpoint or release applied once and sent again finds its
// own counter: the lease is neither lost nor taken from this worker.
func testRetriedWrite(t *testing.T, d *testenv.DDBLocal) {
	const table = "leases_retried"
	ctx := context.Background()
	db := &resender{DynamoDBAPI: d.DB}
	l := &staticLister{}
	l.set(shards(1, "s")...)
	w := startWorker(t, db, table, "w", l)
	waitFor(t, slowCalls, "the lease", func() bool { return len(w.held()) == 1 })
	key := w.held()[0]
	db.on.Store(true)
	if err := w.c.Lease(key).Checkpoint(ctx, "12345"); err != nil {
		t.Fatalf("checkpoint sent twice: %v", err)
	}
	time.Sleep(2 * testFailover) // renewals, each sent twice
	if got := w.held(); len(got) != 1 {
		t.Fatalf("holds %v after writes sent twice, want %s", got, key)
	}
	if got := testutil.ToFloat64(w.c.m.losses.WithLabelValues(table)); got != 0 {
		t.Errorf("%v leases lost", got)
	}
	w.crash()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	w.c.ReleaseAll(rctx)
	item := getItem(t, d.DB, table, key)
	if got := attr(item, "leaseOwner"); got != "-" {
		t.Errorf("owner %s after a release sent twice, want none", got)
	}
	if got := attr(item, "checkpoint"); got != "S:12345" {
		t.Errorf("checkpoint %s, want S:12345", got)
	}
	if w.logged("lost lease") != 0 {
		t.Errorf("a write sent twice was taken for another worker's")
	}
}

// answerLoser applies every PutItem and then, while lose is set, answers
// with an error, as a connection that drops after the request arrived
// does. DynamoDB Local cannot drop an answer, so this wraps the real client.
type answerLoser struct {
	DynamoDBAPI
	lose atomic.Bool
}

var errAnswerLost = errors.New("read tcp: connection reset by peer")

func (a *answerLoser) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := a.DynamoDBAPI.PutItem(ctx, in, opts...)
	if err == nil && a.lose.Load() {
		return nil, errAnswerLost
	}
	return out, err
}

// A held lease whose item vanished is written back; when the answer to
// that write is lost although the write went through, the next scan finds
// this worker's own counter there, which is no reason to give the lease up.
func testWriteBackAnswerLost(t *testing.T, d *testenv.DDBLocal) {
	const table = "leases_answer_lost"
	ctx := context.Background()
	db := &answerLoser{DynamoDBAPI: d.DB}
	l := &staticLister{}
	l.set(shards(1, "s")...)
	w := startWorker(t, db, table, "w", l)
	waitFor(t, slowCalls, "the lease", func() bool { return len(w.held()) == 1 })
	key := w.held()[0]
	db.lose.Store(true)
	if _, err := d.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"leaseKey": s(key)}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, slowCalls, "the item written back", func() bool { return attr(getItem(t, d.DB, table, key), "leaseOwner") == "S:w" })
	db.lose.Store(false)
	// Two more rounds see the item this worker wrote.
	time.Sleep(2 * testFailover)
	if got := w.held(); len(got) != 1 {
		t.Errorf("holds %v after its write-back's answer was lost, want %s", got, key)
	}
	if got := testutil.ToFloat64(w.c.m.losses.WithLabelValues(table)); got != 0 {
		t.Errorf("%v leases lost", got)
	}
}

// disjoint fails unless the workers' leases are pairwise disjoint and
// together are exactly want.
func disjoint(t *testing.T, want []Shard, ws ...*worker) {
	t.Helper()
	var all []string
	for _, w := range ws {
		all = append(all, w.held()...)
	}
	slices.Sort(all)
	var keys []string
	for _, s := range want {
		keys = append(keys, s.Key())
	}
	slices.Sort(keys)
	if !slices.Equal(all, keys) {
		t.Errorf("leases held %v, want each of %v once", all, keys)
	}
}

// writeClock wraps a worker's client and notes when it last sent a write
// that DynamoDB applied: the time before the call, so that the write
// landed after it. Writes that failed are only counted: a lease's
// conditional write that found it changed, and the calls a crashed
// worker's round makes with its cancelled context, which never leave the
// process or are cut off in flight. Taking one of those for the owner's
// last write once made a take look 1.23 s after it, under the failover
// time, in a flaky round (the failed call was noted as the crash ended).
type writeClock struct {
	DynamoDBAPI
	mu     sync.Mutex
	last   time.Time
	failed int
}

func (w *writeClock) note(sent time.Time, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.failed++
		return
	}
	if sent.After(w.last) {
		w.last = sent
	}
}

// lastWrite returns when the last applied write was sent, and how many
// writes failed.
func (w *writeClock) lastWrite() (time.Time, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last, w.failed
}

func (w *writeClock) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	sent := time.Now()
	out, err := w.DynamoDBAPI.UpdateItem(ctx, in, opts...)
	w.note(sent, err)
	return out, err
}

func (w *writeClock) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	sent := time.Now()
	out, err := w.DynamoDBAPI.PutItem(ctx, in, opts...)
	w.note(sent, err)
	return out, err
}

// Three workers split nine shards of three streams three each; one that
// crashes has its leases taken, never before the failover time has passed
// since it last wrote; one that stops hands its leases over. How soon a
// take follows the failover time depends on how fast the rounds run on a
// loaded machine: that is logged here and judged on a clock of the test's
// own in testFailoverOnTheTakersClock.
func testSplitFailoverHandover(t *testing.T, d *testenv.DDBLocal) {
	const table = "leases_split"
	all := shards(3, "s1", "s2", "s3")
	l := &staticLister{}
	l.set(all...)
	w3db := &writeClock{DynamoDBAPI: d.DB}
	w1 := startWorker(t, d.DB, table, "w1", l)
	w2 := startWorker(t, d.DB, table, "w2", l)
	w3 := startWorker(t, w3db, table, "w3", l)
	ws := []*worker{w1, w2, w3}
	took := waitFor(t, slowCalls, "three leases each", func() bool {
		for _, w := range ws {
			if len(w.held()) != 3 {
				return false
			}
		}
		return true
	})
	t.Logf("nine leases split three ways after %v", took.Round(time.Millisecond))
	disjoint(t, all, ws...)
	// The even split holds: nobody steals once shares are even.
	time.Sleep(2 * testFailover)
	disjoint(t, all, ws...)
	for _, w := range ws {
		if len(w.held()) != 3 {
			t.Errorf("%s holds %v after the split settled", w.c.WorkerID(), w.held())
		}
		if err := w.c.Ready(); err != nil {
			t.Errorf("%s not ready: %v", w.c.WorkerID(), err)
		}
	}

	w3.crash()
	crashed := time.Now()
	waitFor(t, slowCalls, "the crashed worker's leases taken", func() bool {
		return len(w1.held())+len(w2.held()) == 9
	})
	lastWrite, failed := w3db.lastWrite()
	sinceWrite := time.Since(lastWrite)
	t.Logf("leases of the crashed worker taken %v after the crash, %v after its last applied write (failover time %v; %d of its writes not applied)",
		time.Since(crashed).Round(time.Millisecond), sinceWrite.Round(time.Millisecond), testFailover, failed)
	if sinceWrite < testFailover {
		t.Errorf("leases taken %v after their owner last wrote, before the failover time %v: a live lease was taken", sinceWrite, testFailover)
	}
	disjoint(t, all, w1, w2)

	w2.stop()
	took = waitFor(t, slowCalls, "the stopped worker's leases taken", func() bool { return len(w1.held()) == 9 })
	t.Logf("leases of the stopped worker taken after %v", took.Round(time.Millisecond))
	disjoint(t, all, w1)

	takes := testutil.ToFloat64(w1.c.m.takes.WithLabelValues(table)) + testutil.ToFloat64(w1.c.m.steals.WithLabelValues(table))
	if takes < 9 {
		t.Errorf("w1 counted %v takes and steals, want at least 9", takes)
	}
	if got := testutil.ToFloat64(w1.c.m.held.WithLabelValues(table)); got != 9 {
		t.Errorf("hotkeyd_leases_held = %v, want 9", got)
	}
	if got := testutil.ToFloat64(w1.c.m.workers.WithLabelValues(table)); got != 1 {
		t.Errorf("hotkeyd_lease_workers = %v, want 1", got)
	}
	if got := testutil.ToFloat64(w1.c.m.requests.WithLabelValues(table, "Scan")); got < 3 {
		t.Errorf("hotkeyd_lease_requests_total{call=Scan} = %v", got)
	}
}

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// testFailoverOnTheTakersClock runs the rounds of two workers by hand on a
// clock the test moves: once b stops renewing, a takes b's leases at its
// first round at or past the failover time since it saw their counters
// last move, and not one round before, however slowly the machine runs.
func testFailoverOnTheTakersClock(t *testing.T, d *testenv.DDBLocal) {
	const table = "leases_clocked"
	ctx := context.Background()
	l := &staticLister{}
	all := shards(4, "s")
	l.set(all...)
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	coordinator := func(id string) *Coordinator {
		c, err := New(Config{Table: table, WorkerID: id, FailoverTime: testFailover, Source: "test"}, d.DB, l, zaptest.NewLogger(t), nil, prometheus.NewRegistry())
		if err != nil {
			t.Fatalf("new coordinator: %v", err)
		}
		c.now = clock.Now
		return c
	}
	a, b := coordinator("a"), coordinator("b")
	held := func(c *Coordinator) int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.held)
	}
	step := testFailover / 3
	for i := 0; held(a) != 2 || held(b) != 2; i++ {
		if i == 30 {
			t.Fatalf("after %d rounds each, a holds %d and b %d leases, want 2 each", i, held(a), held(b))
		}
		b.round(ctx)
		a.round(ctx)
		clock.add(step)
	}
	// b renews once more and stops; a sees the renewed counters.
	clock.add(testFailover / 6)
	b.round(ctx)
	a.round(ctx)
	seen := clock.Now()
	// a's rounds up to just before the failover time leave b's leases.
	for clock.Now().Sub(seen) < testFailover-step {
		clock.add(step)
		a.round(ctx)
		if got := held(a); got != 2 {
			t.Fatalf("a holds %d leases %v after it saw b's counters move, before the failover time %v", got, clock.Now().Sub(seen), testFailover)
		}
	}
	clock.set(seen.Add(testFailover - time.Millisecond))
	a.round(ctx)
	if got := held(a); got != 2 {
		t.Fatalf("a holds %d leases 1 ms before the failover time", got)
	}
	clock.add(time.Millisecond)
	a.round(ctx)
	if got := held(a); got != 4 {
		t.Errorf("a holds %d leases at the failover time, want all 4", got)
	}
}

// A child's lease is taken only once its parents are at SHARD_END; a
// parent nobody lists any more (trimmed) does not hold its children back.
func testParentsFirst(t *testing.T, d *testenv.DDBLocal) {
	const table = "leases_parents"
	p := Shard{Stream: "s", ID: "p"}
	c1 := Shard{Stream: "s", ID: "c1", Parents: []string{"p"}}
	c2 := Shard{Stream: "s", ID: "c2", Parents: []string{"p"}}
	g := Shard{Stream: "s", ID: "g", Parents: []string{"c1", "c2"}}
	orphan := Shard{Stream: "s", ID: "o", Parents: []string{"trimmed-long-ago"}}
	l := &staticLister{}
	l.set(p, c1, c2, g, orphan)
	w := startWorker(t, d.DB, table, "w", l)
	waitFor(t, slowCalls, "the parent's lease", func() bool { return w.c.Lease(p.Key()) != nil })
	waitFor(t, slowCalls, "the orphan's lease", func() bool { return w.c.Lease(orphan.Key()) != nil })
	time.Sleep(testFailover)
	if got := w.held(); !slices.Equal(got, []string{"s:o", "s:p"}) {
		t.Fatalf("held %v before the parent finished, want only s:o and s:p", got)
	}
	ctx := context.Background()
	lp := w.c.Lease(p.Key())
	if err := lp.Checkpoint(ctx, "100"); err != nil {
		t.Fatal(err)
	}
	if err := lp.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if !w.c.Finished(p.Key()) {
		t.Error("Finished(parent) = false after Finish")
	}
	item := getItem(t, d.DB, table, p.Key())
	if attr(item, "checkpoint") != "S:SHARD_END" || attr(item, "leaseOwner") != "-" {
		t.Errorf("finished parent: checkpoint %s owner %s, want SHARD_END and none", attr(item, "checkpoint"), attr(item, "leaseOwner"))
	}
	// Finish asks for a round at once: the children need not wait for
	// the next one.
	took := waitFor(t, slowCalls, "both children", func() bool {
		return w.c.Lease(c1.Key()) != nil && w.c.Lease(c2.Key()) != nil
	})
	t.Logf("children taken %v after their parent finished", took.Round(time.Millisecond))
	if w.c.Lease(g.Key()) != nil {
		t.Fatal("grandchild taken while its parents were being read")
	}
	if err := w.c.Lease(c1.Key()).Finish(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(testFailover)
	if w.c.Lease(g.Key()) != nil {
		t.Fatal("grandchild taken with one of its two parents unfinished")
	}
	if err := w.c.Lease(c2.Key()).Finish(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, slowCalls, "the grandchild", func() bool { return w.c.Lease(g.Key()) != nil })

	// Once a finished shard is no longer listed (trimmed), its lease is
	// deleted, so that the table does not grow forever.
	l.set(g, orphan)
	waitFor(t, slowCalls, "finished leases of unlisted shards deleted", func() bool {
		return len(getItem(t, d.DB, table, p.Key())) == 0 && len(getItem(t, d.DB, table, c1.Key())) == 0
	})
	if len(getItem(t, d.DB, table, g.Key())) == 0 {
		t.Error("a held lease was deleted")
	}
}

// Lease items written the way the KCL writes them (multi-stream key,
// attribute names and types, a checkpoint mid-shard, an owner that stopped
// renewing) are taken once their counter stood still for the failover
// time, and reading resumes from their checkpoint.
func testKCLItems(t *testing.T, d *testenv.DDBLocal) {
	const table = "leases_kcl"
	w0 := startWorker(t, d.DB, table, "creator", &staticLister{}) // creates the table
	waitFor(t, slowCalls, "the table", func() bool { return w0.c.Ready() == nil })
	w0.stop()
	sh := Shard{Stream: testStream, ID: "shardId-00000001700000000000-0a1b2c3d"}
	putItem(t, d.DB, table, map[string]types.AttributeValue{
		"leaseKey":                     s(sh.Key()),
		"leaseOwner":                   s("kcl-worker-7f3e"),
		"leaseCounter":                 n("1742"),
		"checkpoint":                   s("000000000000000000123"),
		"checkpointSubSequenceNumber":  n("0"),
		"ownerSwitchesSinceCheckpoint": n("0"),
		"streamName":                   s(testStream),
		"shardId":                      s(sh.ID),
	})
	l := &staticLister{}
	l.set(sh)
	began := time.Now()
	w := startWorker(t, d.DB, table, "hotkeyd-1", l)
	waitFor(t, slowCalls, "the KCL lease taken", func() bool { return w.c.Lease(sh.Key()) != nil })
	if took := time.Since(began); took < testFailover {
		t.Errorf("took a live KCL lease after %v, before the failover time", took)
	}
	lease := w.c.Lease(sh.Key())
	if lease.Start() != "000000000000000000123" {
		t.Errorf("Start() = %q, want the KCL checkpoint", lease.Start())
	}
	item := getItem(t, d.DB, table, sh.Key())
	for name, want := range map[string]string{
		"leaseOwner": "S:hotkeyd-1", "ownerSwitchesSinceCheckpoint": "N:1", "checkpoint": "S:000000000000000000123",
		"checkpointSubSequenceNumber": "N:0", "streamName": "S:" + testStream, "shardId": "S:" + sh.ID,
	} {
		if got := attr(item, name); got != want {
			t.Errorf("%s = %s, want %s", name, got, want)
		}
	}
	if c := attr(item, "leaseCounter"); c == "N:1742" || !strings.HasPrefix(c, "N:17") {
		t.Errorf("leaseCounter = %s, want it moved on from 1742", c)
	}
	if err := lease.Checkpoint(context.Background(), "000000000000000000150"); err != nil {
		t.Fatal(err)
	}
	item = getItem(t, d.DB, table, sh.Key())
	if attr(item, "checkpoint") != "S:000000000000000000150" || attr(item, "ownerSwitchesSinceCheckpoint") != "N:0" {
		t.Errorf("after a checkpoint: checkpoint %s, ownerSwitchesSinceCheckpoint %s", attr(item, "checkpoint"), attr(item, "ownerSwitchesSinceCheckpoint"))
	}
}

// Items written by hand or by an older version, with attributes missing or
// of the wrong type, are reported once each, taken, and repaired; an item
// of another entity type is left alone.
func testBadItems(t *testing.T, d *testenv.DDBLocal) {
	const table = "leases_bad"
	w0 := startWorker(t, d.DB, table, "creator", &staticLister{})
	waitFor(t, slowCalls, "the table", func() bool { return w0.c.Ready() == nil })
	w0.stop()
	a := Shard{Stream: "s", ID: "a"}
	b := Shard{Stream: "s", ID: "b"}
	c := Shard{Stream: "s", ID: "c", Parents: []string{"gone"}}
	other := map[string]types.AttributeValue{"leaseKey": s("s:worker-summary"), "entityType": s("HOTKEYD_SUMMARY"), "leaseCounter": s("not a number")}
	putItem(t, d.DB, table, map[string]types.AttributeValue{"leaseKey": s(a.Key()), "leaseOwner": s("ghost"), "leaseCounter": s("5"), "checkpoint": s("777")})
	putItem(t, d.DB, table, map[string]types.AttributeValue{"leaseKey": s(b.Key()), "checkpoint": n("12345")})
	putItem(t, d.DB, table, map[string]types.AttributeValue{"leaseKey": s(c.Key()), "leaseCounter": n("2"), "checkpoint": s("somewhere"), "parentShardId": s("gone"), "ownerSwitchesSinceCheckpoint": s("x")})
	putItem(t, d.DB, table, other)
	l := &staticLister{}
	l.set(a, b, c)
	w := startWorker(t, d.DB, table, "w", l)
	waitFor(t, slowCalls, "the three leases", func() bool { return len(w.held()) == 3 })
	time.Sleep(testFailover) // a few more rounds: problems are reported once
	if got := w.logged("lease item has attributes of the wrong type"); got != 3 {
		t.Errorf("%d log lines about bad items, want one per item (3)", got)
	}
	if got := w.rep.countPrefixed(`lease "s:`); got != 3 {
		t.Errorf("%d errors reported about the items, want 3 (one each)", got)
	}
	if w.c.Lease(a.Key()).Start() != "777" || w.c.Lease(b.Key()).Start() != "000000000000000012345" || w.c.Lease(c.Key()).Start() != TrimHorizon {
		t.Errorf("starts %q %q %q, want 777, 000000000000000012345 and TRIM_HORIZON", w.c.Lease(a.Key()).Start(), w.c.Lease(b.Key()).Start(), w.c.Lease(c.Key()).Start())
	}
	for _, sh := range []Shard{a, b, c} {
		item := getItem(t, d.DB, table, sh.Key())
		for name, typ := range map[string]string{"leaseCounter": "N:", "checkpoint": "S:", "checkpointSubSequenceNumber": "N:", "ownerSwitchesSinceCheckpoint": "N:", "leaseOwner": "S:w"} {
			if got := attr(item, name); !strings.HasPrefix(got, typ) {
				t.Errorf("%s: %s = %s after the take, want %s…", sh.Key(), name, got, typ)
			}
		}
	}
	if got := attr(getItem(t, d.DB, table, c.Key()), "parentShardId"); got != "SS:gone" {
		t.Errorf("parentShardId of c = %s, want the string set SS:gone", got)
	}
	if got := getItem(t, d.DB, table, "s:worker-summary"); attr(got, "leaseCounter") != "S:not a number" || attr(got, "leaseOwner") != "-" {
		t.Errorf("an item of another entity type was touched: %v", got)
	}
}

// rivalDB is the real client of DynamoDB Local, and a second worker
// ("rival") that writes the lease just before this worker's write lands:
// the only way to lose a race at a chosen moment. Every write is real.
type rivalDB struct {
	DynamoDBAPI
	db      *dynamodb.Client
	table   string
	mu      sync.Mutex
	onTake  bool // beat the next take
	onWrite bool // beat the next checkpoint
}

func (r *rivalDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.mu.Lock()
	take := r.onTake && strings.Contains(aws.ToString(in.UpdateExpression), "#s") && hasValue(in, "leaseOwner")
	write := r.onWrite && hasValue(in, "checkpoint")
	if take {
		r.onTake = false
	}
	if write {
		r.onWrite = false
	}
	r.mu.Unlock()
	if take || write {
		_, err := r.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(r.table),
			Key:                       in.Key,
			UpdateExpression:          aws.String("SET leaseOwner = :o ADD leaseCounter :one"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":o": s("rival"), ":one": n("1")},
		})
		if err != nil {
			return nil, err
		}
	}
	return r.DynamoDBAPI.UpdateItem(ctx, in, opts...)
}

// hasValue reports whether an update sets the named attribute.
func hasValue(in *dynamodb.UpdateItemInput, name string) bool {
	for k, v := range in.ExpressionAttributeNames {
		if v == name && strings.HasPrefix(k, "#s") {
			return true
		}
	}
	return false
}

// A take that loses the race to another worker, and a checkpoint written
// after another worker took the lease, each log one line; the first leaves
// the lease to the winner, the second stops the reader (ErrLost).
func testLostRace(t *testing.T, d *testenv.DDBLocal) {
	const table = "leases_race"
	r := &rivalDB{DynamoDBAPI: d.DB, db: d.DB, table: table, onTake: true}
	sh := Shard{Stream: "s", ID: "x"}
	l := &staticLister{}
	l.set(sh)
	w := startWorker(t, r, table, "w", l)
	waitFor(t, slowCalls, "the lost race logged", func() bool { return w.logged("lost the race for a lease") == 1 })
	if w.c.Lease(sh.Key()) != nil {
		t.Fatal("holds the lease the rival won")
	}
	// The rival never renews: after the failover time the lease is free.
	took := waitFor(t, slowCalls, "the rival's lease taken", func() bool { return w.c.Lease(sh.Key()) != nil })
	t.Logf("the rival's lease taken after %v", took.Round(time.Millisecond))
	if got := w.logged("lost the race for a lease"); got != 1 {
		t.Errorf("%d lines about the lost race, want 1", got)
	}

	lease := w.c.Lease(sh.Key())
	r.mu.Lock()
	r.onWrite = true
	r.mu.Unlock()
	err := lease.Checkpoint(context.Background(), "42")
	if !errors.Is(err, ErrLost) {
		t.Fatalf("Checkpoint after the rival took the lease: %v, want ErrLost", err)
	}
	select {
	case <-lease.Lost():
	default:
		t.Error("Lost() not closed")
	}
	if err := lease.WaitValid(context.Background()); !errors.Is(err, ErrLost) {
		t.Errorf("WaitValid = %v, want ErrLost", err)
	}
	if w.c.Lease(sh.Key()) != nil {
		t.Error("a lost lease is still held")
	}
	if got := w.logged("lost lease; its reader stops"); got != 1 {
		t.Errorf("%d lines about the lost lease, want 1", got)
	}
	if got := testutil.ToFloat64(w.c.m.losses.WithLabelValues(table)); got != 1 {
		t.Errorf("hotkeyd_lease_losses_total = %v, want 1", got)
	}
	if item := getItem(t, d.DB, table, sh.Key()); attr(item, "checkpoint") == "S:42" {
		t.Error("the checkpoint of a lost lease was written")
	}
}

// The lease table deleted under a running worker is created again; the
// worker writes back the leases it holds with their positions and owner,
// and the finished ones from its last scan, so that no shard starts over.
func testTableDeleted(t *testing.T, d *testenv.DDBLocal) {
	const table = "leases_deleted"
	ctx := context.Background()
	done := Shard{Stream: "s", ID: "done"}
	l := &staticLister{}
	all := append(shards(3, "s"), done)
	l.set(all...)
	w := startWorker(t, d.DB, table, "w", l)
	waitFor(t, slowCalls, "four leases", func() bool { return len(w.held()) == 4 })
	for i, sh := range all[:3] {
		if err := w.c.Lease(sh.Key()).Checkpoint(ctx, strings.Repeat("1", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.c.Lease(done.Key()).Finish(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, slowCalls, "the finished lease scanned", func() bool {
		w.c.mu.Lock()
		defer w.c.mu.Unlock()
		return w.c.finished[done.Key()] && !w.c.finishing[done.Key()]
	})
	if _, err := d.DB.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, slowCalls, "the table created again", func() bool { return w.logged("lease table was deleted") == 1 })
	waitFor(t, slowCalls, "the leases written back", func() bool {
		for i, sh := range all[:3] {
			item := getItem(t, d.DB, table, sh.Key())
			if attr(item, "checkpoint") != "S:"+strings.Repeat("1", i+1) || attr(item, "leaseOwner") != "S:w" {
				return false
			}
		}
		return attr(getItem(t, d.DB, table, done.Key()), "checkpoint") == "S:SHARD_END"
	})
	waitFor(t, slowCalls, "ready again", func() bool { return w.c.Ready() == nil })
	if got := w.held(); len(got) != 3 {
		t.Errorf("holds %v after the table came back, want the three unfinished leases", got)
	}
	if got := testutil.ToFloat64(w.c.m.losses.WithLabelValues(table)); got != 0 {
		t.Errorf("%v leases lost", got)
	}
	for _, sh := range all[:3] {
		if err := w.c.Lease(sh.Key()).Checkpoint(ctx, "999"); err != nil {
			t.Errorf("checkpoint after the table came back: %v", err)
		}
	}
}

// TestEndpointRestart stops DynamoDB Local (its data on disk) under two
// workers for longer than the failover time and starts it again: neither
// is ready while it is down, and afterwards each keeps its leases: time
// nobody could see the table does not count against the owners.
func TestEndpointRestart(t *testing.T) {
	d := testenv.DynamoDBLocal(t, testenv.WithDBPath(t.TempDir()))
	const table = "leases_restart"
	all := shards(3, "s1", "s2")
	l := &staticLister{}
	l.set(all...)
	w1 := startWorker(t, d.DB, table, "w1", l)
	w2 := startWorker(t, d.DB, table, "w2", l)
	waitFor(t, slowCalls, "three leases each", func() bool { return len(w1.held()) == 3 && len(w2.held()) == 3 })
	before1, before2 := w1.held(), w2.held()
	// Leases may have moved while the two started; count what the restart
	// does.
	lost := func(w *worker) float64 { return testutil.ToFloat64(w.c.m.losses.WithLabelValues(table)) }
	lostBefore := map[*worker]float64{w1: lost(w1), w2: lost(w2)}

	d.Stop()
	waitFor(t, slowCalls, "not ready while DynamoDB is down", func() bool { return w1.c.Ready() != nil && w2.c.Ready() != nil })
	t.Logf("while down: %v", w1.c.Ready())
	time.Sleep(2 * testFailover)
	d.Start()
	waitFor(t, slowCalls, "ready again", func() bool { return w1.c.Ready() == nil && w2.c.Ready() == nil })
	time.Sleep(2 * testFailover)
	if got := w1.held(); !slices.Equal(got, before1) {
		t.Errorf("w1 holds %v after the restart, held %v", got, before1)
	}
	if got := w2.held(); !slices.Equal(got, before2) {
		t.Errorf("w2 holds %v after the restart, held %v", got, before2)
	}
	disjoint(t, all, w1, w2)
	for _, w := range []*worker{w1, w2} {
		if got := lost(w) - lostBefore[w]; got != 0 {
			t.Errorf("%s lost %v leases in the restart", w.c.WorkerID(), got)
		}
		if w.rep.count(Reason) == 0 {
			t.Errorf("%s reported no lease table error while it was down", w.c.WorkerID())
		}
	}
}

package lease

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"
)

// testFailover is the failover time of the tests: short, so that they run
// in seconds, and long enough for DynamoDB Local under the race detector.
const testFailover = 1500 * time.Millisecond

// staticLister lists a fixed set of shards; the coordinator does not care
// whether they exist in a stream.
type staticLister struct {
	mu     sync.Mutex
	shards []Shard
}

func (l *staticLister) ListShards(context.Context) ([]Shard, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.shards), nil
}

func (l *staticLister) set(shards ...Shard) {
	l.mu.Lock()
	l.shards = shards
	l.mu.Unlock()
}

// shards returns n shards of each stream, named stream/0 .. stream/n-1.
func shards(n int, streams ...string) []Shard {
	var out []Shard
	for _, s := range streams {
		for i := range n {
			out = append(out, Shard{Stream: s, ID: fmt.Sprintf("shardId-%d", i)})
		}
	}
	return out
}

// countingReporter counts errors by reason, keeps their texts, and logs
// them.
type countingReporter struct {
	t      testing.TB
	mu     sync.Mutex
	errors map[string]int
	texts  []string
}

func (r *countingReporter) Reject(string, string, error) {}

func (r *countingReporter) Error(_, reason string, err error) {
	r.t.Logf("reported %s: %v", reason, err)
	r.mu.Lock()
	if r.errors == nil {
		r.errors = map[string]int{}
	}
	r.errors[reason]++
	r.texts = append(r.texts, err.Error())
	r.mu.Unlock()
}

// countPrefixed counts the errors whose text begins with prefix: on a loaded
// machine a lease table call can time out and be reported too.
func (r *countingReporter) countPrefixed(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, text := range r.texts {
		if strings.HasPrefix(text, prefix) {
			n++
		}
	}
	return n
}

func (r *countingReporter) count(reason string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errors[reason]
}

// worker is a Coordinator running its rounds in the background, with its
// log kept for the test to read.
type worker struct {
	c      *Coordinator
	logs   *observer.ObservedLogs
	rep    *countingReporter
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan struct{}
}

func startWorker(t *testing.T, db DynamoDBAPI, table, id string, lister ShardLister) *worker {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(zapcore.NewTee(core, zaptest.NewLogger(t).Core()))
	w := &worker{logs: logs, rep: &countingReporter{t: t}, reg: prometheus.NewRegistry(), done: make(chan struct{})}
	c, err := New(Config{Table: table, WorkerID: id, FailoverTime: testFailover, Source: "test"}, db, lister, log, w.rep, w.reg)
	if err != nil {
		t.Fatalf("new coordinator: %v", err)
	}
	w.c = c
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go func() { _ = c.Run(ctx); close(w.done) }()
	t.Cleanup(w.crash)
	return w
}

// crash stops the worker's rounds without releasing anything: to the
// others it vanished.
func (w *worker) crash() {
	w.cancel()
	<-w.done
}

// stop stops the worker the way a shutdown does: rounds end, then every
// lease is released.
func (w *worker) stop() {
	w.crash()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w.c.ReleaseAll(ctx)
}

// held returns the keys of the leases the worker holds, sorted.
func (w *worker) held() []string {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	return slices.Sorted(maps.Keys(w.c.held))
}

// logged counts the log lines whose message contains msg.
func (w *worker) logged(msg string) int {
	return w.logs.FilterMessageSnippet(msg).Len()
}

// slowCalls bounds a wait for something that must happen and whose length
// the test does not judge: long enough for DynamoDB Local answering slowly
// on a loaded machine (a scan that times out is tried again at the next
// round). A wait that ends early costs nothing.
const slowCalls = time.Minute

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	began := time.Now()
	for !cond() {
		if time.Since(began) > d {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(began)
}

// getItem reads a lease item as stored.
func getItem(t *testing.T, db *dynamodb.Client, table, key string) map[string]types.AttributeValue {
	t.Helper()
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]types.AttributeValue{"leaseKey": &types.AttributeValueMemberS{Value: key}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("get item %s: %v", key, err)
	}
	return out.Item
}

// putItem writes an item as it is, the way a person or another program
// would.
func putItem(t *testing.T, db *dynamodb.Client, table string, item map[string]types.AttributeValue) {
	t.Helper()
	if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatalf("put item: %v", err)
	}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// attr returns an attribute as "TYPE:value", e.g. "N:3", "-" when missing.
func attr(item map[string]types.AttributeValue, name string) string {
	switch v := item[name].(type) {
	case nil:
		return "-"
	case *types.AttributeValueMemberS:
		return "S:" + v.Value
	case *types.AttributeValueMemberN:
		return "N:" + v.Value
	case *types.AttributeValueMemberSS:
		return "SS:" + strings.Join(v.Value, ",")
	default:
		return typeName(v)
	}
}

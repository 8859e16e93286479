package kinesis

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// TestLeases runs two readers sharing a lease table in DynamoDB Local on
// one kinesalite stream: they split the shards, every record is counted by
// one of them once, and a reader started after they stopped reads on from
// the leases' checkpoints.
func TestLeases(t *testing.T) {
	k := testenv.StartKinesalite(t)
	ddb := testenv.DynamoDBLocal(t)
	createStream(t, k, "leased", 4)
	var recs [][]byte
	for i := range 60 {
		recs = append(recs, payload(fmt.Sprint("a", i), "orders", fmt.Sprintf("a%03d", i), false))
	}
	put(t, k.Client, "leased", recs...)
	cfg := func(worker string) Config {
		return Config{Streams: []string{"leased"}, Endpoint: k.Endpoint, Start: StartTrimHorizon,
			LeaseTable: "hotkeyd-kinesis-leases", WorkerID: worker, FailoverTime: 2 * time.Second,
			PollInterval: 20 * time.Millisecond, ListInterval: 200 * time.Millisecond}
	}
	newSource := func(worker string) *Source {
		src, err := NewWithClients(cfg(worker), k.Client, ddb.DB, zaptest.NewLogger(t), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	a, b := &sink{}, &sink{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- newSource("worker-a").Run(ctx, a) }()
	go func() { done <- newSource("worker-b").Run(ctx, b) }()
	deadline := time.Now().Add(45 * time.Second)
	for len(a.keys())+len(b.keys()) < 60 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	cancel()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	all := append(a.keys(), b.keys()...)
	slices.Sort(all)
	if !slices.Equal(all, keysOf("a", 60)) {
		t.Fatalf("read %d records (%d by a, %d by b), want each of 60 once", len(all), len(a.keys()), len(b.keys()))
	}
	if len(a.keys()) == 0 || len(b.keys()) == 0 {
		t.Logf("one worker read every shard (a %d, b %d): the split depends on timing", len(a.keys()), len(b.keys()))
	}

	// A third reader, after both stopped, reads only what is new.
	var more [][]byte
	for i := range 20 {
		more = append(more, payload(fmt.Sprint("b", i), "orders", fmt.Sprintf("b%03d", i), false))
	}
	put(t, k.Client, "leased", more...)
	c := &sink{}
	runUntil(t, newSource("worker-c"), c, 20)
	if got := c.keys(); !slices.Equal(got, keysOf("b", 20)) {
		t.Errorf("after restart read %d records %v, want the 20 new ones", len(got), got)
	}
}

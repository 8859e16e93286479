package kinesis

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"go.uber.org/zap/zaptest"

	"github.com/hotkeyd/hotkeyd/ingest/lease"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// TestLeases runs two readers sharing a lease table in DynamoDB Local on
// one kinesalite stream: they split the shards two and two, every record
// written then is counted by one of them once, and a reader started after
// they stopped reads on from the leases' checkpoints.
func TestLeases(t *testing.T) {
	k := testenv.StartKinesalite(t)
	ddb := testenv.DynamoDBLocal(t)
	arn := createStream(t, k, "leased", 4)
	cfg := func(worker string) Config {
		c := Config{Streams: []string{"leased"}, PollInterval: 20 * time.Millisecond}
		c.Endpoint, c.Start, c.ListInterval = k.Endpoint, StartTrimHorizon, 200*time.Millisecond
		c.LeaseTable, c.WorkerID, c.FailoverTime = "hotkeyd-kinesis-leases", worker, 2*time.Second
		return c
	}
	newSource := func(worker string) *Source {
		src, err := NewWithClients(cfg(worker), k.Client, ddb.DB, zaptest.NewLogger(t), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	a, b := &sink{}, &sink{}
	srcA, srcB := newSource("worker-a"), newSource("worker-b")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- srcA.Run(ctx, a) }()
	go func() { done <- srcB.Run(ctx, b) }()
	// Once the two have split the shards (a lease moving between them
	// leaves its last batch to be read twice, as with the Kinesis Client
	// Library), the records written are each read once.
	listing, err := k.Client.ListShards(context.Background(), &kinesis.ListShardsInput{StreamName: aws.String("leased")})
	if err != nil {
		t.Fatal(err)
	}
	split := func() bool {
		held := map[*Source]int{}
		for _, sh := range listing.Shards {
			key := lease.Shard{Stream: arn, ID: aws.ToString(sh.ShardId)}.Key()
			switch la, lb := srcA.Coordinator().Lease(key) != nil, srcB.Coordinator().Lease(key) != nil; {
			case la && !lb:
				held[srcA]++
			case lb && !la:
				held[srcB]++
			}
		}
		return held[srcA] == 2 && held[srcB] == 2
	}
	for deadline := time.Now().Add(30 * time.Second); !split(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the two readers did not split the four shards within 30s")
		}
	}
	var recs [][]byte
	for i := range 60 {
		recs = append(recs, payload(fmt.Sprint("a", i), "orders", fmt.Sprintf("a%03d", i), false))
	}
	put(t, k.Client, "leased", recs...)
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

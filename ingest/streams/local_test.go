package streams

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hotkeyd/hotkeyd/ingest/internal/ingesttest"
	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// TestDynamoDBLocal runs the reader against AWS's own emulator, started once
// for all of its subtests (each uses its own tables).
func TestDynamoDBLocal(t *testing.T) {
	d := testenv.DynamoDBLocal(t)
	t.Run("MultipleTables", func(t *testing.T) { testMultipleTables(t, d) })
	t.Run("ExpiredIterator", func(t *testing.T) { testExpiredIterator(t, d) })
	t.Run("Trimmed", func(t *testing.T) { testTrimmed(t, d) })
	t.Run("Throttled", func(t *testing.T) { testThrottled(t, d) })
	t.Run("Resume", func(t *testing.T) { testResume(t, d) })
	t.Run("StartLatest", func(t *testing.T) { testStartLatest(t, d) })
	t.Run("StreamReenabled", func(t *testing.T) { testStreamReenabled(t, d) })
	t.Run("DescribeTableRefused", func(t *testing.T) { testDescribeTableRefused(t, d) })
}

// testMultipleTables writes to two tables with every write operation an
// application uses and checks the Events: keys in canonical form, sort keys,
// units from the record size, one Event per written item.
func testMultipleTables(t *testing.T, d *testenv.DDBLocal) {
	ctx := context.Background()
	createTable(t, d, tableSpec{name: "mt_users", hash: "id", hashType: types.ScalarAttributeTypeS, view: types.StreamViewTypeNewImage})
	createTable(t, d, tableSpec{name: "mt_orders", hash: "customer", hashType: types.ScalarAttributeTypeN,
		rng: "order", rngType: types.ScalarAttributeTypeB, view: types.StreamViewTypeNewAndOldImages})

	cfg := fastConfig()
	cfg.Tables = []string{"mt_users", "mt_orders"}
	cfg.CheckpointDir = t.TempDir()
	r := start(t, cfg, d.Streams, d.DB)

	putItems(t, d.DB, "mt_users", "id", "user#", 0, 5)
	if _, err := d.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String("mt_users"),
		Key:              map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "user#1"}},
		UpdateExpression: aws.String("SET body = :b"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":b": &types.AttributeValueMemberS{Value: strings.Repeat("y", 3000)},
		},
	}); err != nil {
		t.Fatalf("update item: %v", err)
	}
	if _, err := d.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String("mt_users"),
		Key:       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "user#2"}},
	}); err != nil {
		t.Fatalf("delete item: %v", err)
	}
	var reqs []types.WriteRequest
	for i := range 4 {
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
			"customer": &types.AttributeValueMemberN{Value: "42.50"},
			"order":    &types.AttributeValueMemberB{Value: []byte{0, 1, byte(i)}},
		}}})
	}
	if _, err := d.DB.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
		RequestItems: map[string][]types.WriteRequest{"mt_orders": reqs},
	}); err != nil {
		t.Fatalf("batch write: %v", err)
	}

	ingesttest.WaitFor(t, ingesttest.Eventually, "7 users and 4 orders events", func() bool {
		return r.sink.CountWhere(func(e traffic.Event) bool { return e.Table == "mt_users" }) >= 7 &&
			r.sink.CountWhere(func(e traffic.Event) bool { return e.Table == "mt_orders" }) >= 4
	})
	ingesttest.WaitFor(t, ingesttest.Eventually, "ready", func() bool { return r.src.Ready() == nil })
	r.stop(t)

	var users, orders []traffic.Event
	for _, e := range r.sink.Events() {
		if e.Class != traffic.Write || e.Source != SourceName || e.Shard == "" || e.Time.IsZero() {
			t.Errorf("event %+v: want a write from %s with a shard and a time", e, SourceName)
		}
		switch e.Table {
		case "mt_users":
			users = append(users, e)
		case "mt_orders":
			orders = append(orders, e)
		}
	}
	if len(users) != 7 || len(orders) != 4 {
		t.Fatalf("got %d users and %d orders events, want 7 and 4", len(users), len(orders))
	}
	wantUsers := []string{"user#0", "user#1", "user#2", "user#3", "user#4", "user#1", "user#2"}
	for i, e := range users {
		if e.PK != wantUsers[i] || e.SK != "" {
			t.Errorf("users event %d: pk %q sk %q, want %q and no sort key", i, e.PK, e.SK, wantUsers[i])
		}
	}
	// The update carries a 3000-byte attribute, and the NEW_IMAGE record's
	// size counts it.
	if users[5].Units < 3 {
		t.Errorf("units of the 3 KB update = %v, want ≥ 3", users[5].Units)
	}
	if users[0].Units != 1 {
		t.Errorf("units of a small put = %v, want 1", users[0].Units)
	}
	for i, e := range orders {
		want := fmt.Sprintf("AAE%c", "ABCD"[i])
		if e.PK != "42.5" || e.SK != want {
			t.Errorf("orders event %d: pk %q sk %q, want 42.5 and %q", i, e.PK, e.SK, want)
		}
	}
	if got := testutil.ToFloat64(r.src.m.Records.WithLabelValues("mt_users")); got != 7 {
		t.Errorf("hotkeyd_stream_records_total{table=mt_users} = %v, want 7", got)
	}
	if got := gauge(t, r.reg, "hotkeyd_stream_shards", "table", "mt_orders", "state", shards.StateOpen); got != 1 {
		t.Errorf("hotkeyd_stream_shards{table=mt_orders,state=open} = %v, want 1", got)
	}
}

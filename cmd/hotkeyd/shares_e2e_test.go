package main

import (
	"context"
	"crypto/md5"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// TestReplicaShares runs three replicas sharing the six shards of one
// Kinesis stream (kinesalite) through a lease table (DynamoDB Local), with
// three tables' changes in it, every table's keys spread over every shard
// and so over every replica, and a fourth process reading everything
// alone. A hot key planted in one table is flagged by exactly one replica,
// the one holding its shard, with the share it has in the whole table's
// traffic (within 1 pp of the process reading everything, and of the
// truth); every replica's API shows the diagnosis and who raised it.
// DynamoDB Local's streams have one shard per table, which would put a
// table on one replica: Kinesis is where a table's traffic spans replicas.
func TestReplicaShares(t *testing.T) {
	t.Parallel() // emulators and processes of its own, on ports of its own
	if testing.Short() {
		t.Skip("starts kinesalite, DynamoDB Local and four hotkeyd processes")
	}
	ddb := testenv.DynamoDBLocal(t)
	k := testenv.StartKinesalite(t)
	ctx := context.Background()
	const stream, leaseTable, shards = "shares-cdc", "shares_leases", 6
	if _, err := k.Client.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(stream), ShardCount: aws.Int32(shards)}); err != nil {
		t.Fatal(err)
	}
	var arn string
	waitUntil(t, settle, "the stream active", func() bool {
		out, err := k.Client.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)})
		if err != nil || out.StreamDescriptionSummary.StreamStatus != ktypes.StreamStatusActive {
			return false
		}
		arn = aws.ToString(out.StreamDescriptionSummary.StreamARN)
		return true
	})
	source := func(extra string) string {
		return fmt.Sprintf(`sources:
  - type: kinesis
    streams: [%s]
    region: us-east-1
    endpoint: %s
    start: trim_horizon
    poll_interval: 100ms
%s`, stream, k.Endpoint, extra)
	}
	workers := []string{"replica-a", "replica-b", "replica-c"}
	hs := make([]*testenv.Hotkeyd, len(workers))
	for i, w := range workers {
		cfg := source(fmt.Sprintf(`    lease_table: %s
    dynamodb_endpoint: %s
    worker_id: %s
    failover_time: %s
`, leaseTable, ddb.Endpoint, w, replicaFailover))
		hs[i] = testenv.StartHotkeyd(t, testenv.HotkeydOptions{Env: replicaEnv}, "run", "--config.file", writeConfig(t, cfg))
	}
	alone := testenv.StartHotkeyd(t, testenv.HotkeydOptions{Env: replicaEnv}, "run", "--config.file", writeConfig(t, source("")))
	took := waitUntil(t, settle, "an even split", func() bool {
		for _, h := range hs {
			if heldOf(scrape(t, h), leaseTable) != shards/float64(len(hs)) {
				return false
			}
		}
		return true
	})
	t.Logf("%d shards split two per replica %v after the last replica was ready", shards, took.Round(time.Millisecond))

	// A summary item nobody valid wrote: every replica logs it once and
	// judges on the others.
	if _, err := ddb.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(leaseTable), Item: map[string]types.AttributeValue{
		"leaseKey":    &types.AttributeValueMemberS{Value: "hotkeyd#summary#intruder"},
		"entityType":  &types.AttributeValueMemberS{Value: "HOTKEYD_SUMMARY"},
		"workerId":    &types.AttributeValueMemberS{Value: "intruder"},
		"summarySeq":  &types.AttributeValueMemberN{Value: "1"},
		"publishedAt": &types.AttributeValueMemberN{Value: fmt.Sprint(time.Now().UnixMilli())},
		"summary":     &types.AttributeValueMemberB{Value: []byte("not a summary")},
	}}); err != nil {
		t.Fatal(err)
	}

	// Three tables, 900 records each over 300 keys; orders has HOT#1 in
	// 180 of its records more: a share of 180 / 1080.
	tables := []string{"shares_orders", "shares_users", "shares_carts"}
	var entries []ktypes.PutRecordsRequestEntry
	serial := 0
	add := func(table, key string) {
		serial++
		data := fmt.Sprintf(`{"awsRegion":"us-east-1","eventID":"e-%d","eventName":"MODIFY","userIdentity":null,"recordFormat":"application/json","tableName":%q,"dynamodb":{"ApproximateCreationDateTime":%d,"Keys":{"pk":{"S":%q}},"SizeBytes":100},"eventSource":"aws:dynamodb"}`,
			serial, table, time.Now().UnixMicro(), key)
		entries = append(entries, ktypes.PutRecordsRequestEntry{Data: []byte(data), PartitionKey: aws.String(key)})
	}
	const hotKey, hotN, perTable = "HOT#1", 180, 900
	for i := range perTable {
		for _, tb := range tables {
			add(tb, fmt.Sprintf("USER#%d", i%300))
		}
		if i%5 == 0 {
			add(tables[0], hotKey)
		}
	}
	wantShare := float64(hotN) / float64(perTable+hotN)
	for len(entries) > 0 {
		n := min(len(entries), 500)
		if _, err := k.Client.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String(stream), Records: entries[:n]}); err != nil {
			t.Fatal(err)
		}
		entries = entries[n:]
	}

	// The replica that holds HOT#1's shard, from the stream's hash ranges
	// and the lease table.
	holder := hotHolder(t, k, ddb, stream, arn, leaseTable, hotKey)
	t.Logf("%s is in a shard held by %s", hotKey, holder)

	// Every replica's API shows the diagnosis, raised by the holder, with
	// the whole table's share, once every record is counted.
	var aloneShare float64
	waitUntil(t, settle, "the hot key's diagnosis on every replica's API with the whole table's share", func() bool {
		d, ok := apiDiagnosis(t, alone, tables[0], hotKey)
		if !ok || math.Abs(d.Share-wantShare) > 1e-9 {
			return false
		}
		aloneShare = d.Share
		for _, h := range hs {
			d, ok := apiDiagnosis(t, h, tables[0], hotKey)
			if !ok || math.Abs(d.Share-aloneShare) > 0.01 {
				return false
			}
		}
		return true
	})
	t.Logf("share of %s: %.4f by the process reading everything (%.4f written)", hotKey, aloneShare, wantShare)
	time.Sleep(2 * time.Second) // a few more evaluations: nothing else appears
	series := regexp.MustCompile(`(?m)^hotkeyd_diagnosis\{[^}]*key="` + regexp.QuoteMeta(hotKey) + `"[^}]*table="` + tables[0] + `"\} 1$`)
	raisedBy := []string{}
	for i, h := range hs {
		d, ok := apiDiagnosis(t, h, tables[0], hotKey)
		if !ok {
			t.Errorf("%s: the diagnosis left the API", workers[i])
			continue
		}
		t.Logf("%s: share %.4f, raised_by %s", workers[i], d.Share, d.RaisedBy)
		if math.Abs(d.Share-aloneShare) > 0.01 || math.Abs(d.Share-wantShare) > 0.01 {
			t.Errorf("%s: share %.4f, want %.4f within 1 pp (one process: %.4f)", workers[i], d.Share, wantShare, aloneShare)
		}
		if d.RaisedBy != holder {
			t.Errorf("%s: raised_by %q, want %q (the replica holding the key's shard)", workers[i], d.RaisedBy, holder)
		}
		_, body := h.Get(t, "/metrics")
		if series.Match(body) {
			raisedBy = append(raisedBy, workers[i])
		}
		for _, tb := range tables[1:] {
			if strings.Contains(string(body), `hotkeyd_diagnosis{`) && regexp.MustCompile(`hotkeyd_diagnosis\{[^}]*table="`+tb+`"`).Match(body) {
				t.Errorf("%s: a diagnosis on %s, whose keys are even", workers[i], tb)
			}
		}
		if !strings.Contains(h.Stderr(), `"hot key"`) && !strings.Contains(h.Stderr(), "msg=\"hot key\"") {
			if workers[i] == holder {
				t.Errorf("%s raises the diagnosis but logged no hot key line", workers[i])
			}
		} else if workers[i] != holder && strings.Contains(h.Stderr(), hotKey) {
			t.Errorf("%s logged the hot key, which %s raises:\n%s", workers[i], holder, h.Stderr())
		}
	}
	for i, h := range hs {
		if n := strings.Count(h.Stderr(), "ignoring a worker summary"); n != 1 {
			t.Errorf("%s logged the bad summary item %d times, want once", workers[i], n)
		}
	}
	if len(raisedBy) != 1 || raisedBy[0] != holder {
		t.Errorf("hotkeyd_diagnosis for %s exported by %v, want by %s alone", hotKey, raisedBy, holder)
	}
	m := scrape(t, hs[0])
	if age, ok := m[`hotkeyd_lease_peer_summary_age_seconds{lease_table="`+leaseTable+`"}`]; !ok || age > replicaFailover.Seconds() {
		t.Errorf("hotkeyd_lease_peer_summary_age_seconds = %v (present %v), want at most the failover time", age, ok)
	}
	if got := m[`hotkeyd_lease_peer_summaries{lease_table="`+leaseTable+`"}`]; got != 2 {
		t.Errorf("hotkeyd_lease_peer_summaries = %v, want 2", got)
	}
}

// apiDiagnosis returns the diagnosis of key in table from the replica's
// /api/v1/hotkeys.
func apiDiagnosis(t *testing.T, h *testenv.Hotkeyd, table, key string) (report.Diagnosis, bool) {
	t.Helper()
	code, body := h.Get(t, "/api/v1/hotkeys")
	if code != 200 {
		return report.Diagnosis{}, false
	}
	var rep report.Report
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatalf("/api/v1/hotkeys: %v", err)
	}
	for _, tr := range rep.Tables {
		if tr.Table != table {
			continue
		}
		for _, d := range tr.Diagnoses {
			if d.Key() == key {
				return d, true
			}
		}
	}
	return report.Diagnosis{}, false
}

// hotHolder returns the worker holding the lease of the shard a partition
// key hashes to: Kinesis places a record by the MD5 of its partition key,
// as a 128-bit number, in a shard's hash key range.
func hotHolder(t *testing.T, k *testenv.Kinesalite, ddb *testenv.DDBLocal, stream, arn, leaseTable, key string) string {
	t.Helper()
	ctx := context.Background()
	out, err := k.Client.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(stream)})
	if err != nil {
		t.Fatal(err)
	}
	sum := md5.Sum([]byte(key))
	h := new(big.Int).SetBytes(sum[:])
	shard := ""
	for _, sh := range out.Shards {
		lo, _ := new(big.Int).SetString(aws.ToString(sh.HashKeyRange.StartingHashKey), 10)
		hi, _ := new(big.Int).SetString(aws.ToString(sh.HashKeyRange.EndingHashKey), 10)
		if h.Cmp(lo) >= 0 && h.Cmp(hi) <= 0 {
			shard = aws.ToString(sh.ShardId)
		}
	}
	if shard == "" {
		t.Fatalf("no shard's hash range holds %s", key)
	}
	item, err := ddb.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(leaseTable), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"leaseKey": &types.AttributeValueMemberS{Value: arn + ":" + shard}},
	})
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := item.Item["leaseOwner"].(*types.AttributeValueMemberS)
	if owner == nil {
		t.Fatalf("lease of %s has no owner: %v", shard, item.Item)
	}
	return owner.Value
}

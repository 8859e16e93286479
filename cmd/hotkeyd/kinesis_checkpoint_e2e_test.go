package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// TestKinesisRefusedCheckpoint runs the daemon on a Kinesis stream
// (kinesalite) whose shards have checkpoints Kinesis refuses: a sequence
// number of no shard of the stream (InvalidArgumentException) and one
// that is not a sequence number at all (ValidationException). As the
// DynamoDB Streams reader does, each is moved aside as <file>.corrupt,
// said in the log and counted as a checkpoint error, and its shard read
// from its first record — rather than retried forever with the shard never
// read (and /-/ready saying ready). start: latest shows that the records
// were read from the shard's start, not from its end.
func TestKinesisRefusedCheckpoint(t *testing.T) {
	t.Parallel() // a kinesalite and a process of its own, on ports of its own
	if testing.Short() {
		t.Skip("starts kinesalite and hotkeyd")
	}
	k := testenv.StartKinesalite(t)
	ctx := context.Background()
	const stream = "refused-cdc"
	if _, err := k.Client.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(stream), ShardCount: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	var arn string
	for deadline := time.Now().Add(settle); ; time.Sleep(20 * time.Millisecond) {
		out, err := k.Client.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)})
		if err == nil && out.StreamDescriptionSummary.StreamStatus == ktypes.StreamStatusActive {
			arn = aws.ToString(out.StreamDescriptionSummary.StreamARN)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream not active: %v", err)
		}
	}
	var entries []ktypes.PutRecordsRequestEntry
	for i := range 40 {
		data := fmt.Sprintf(`{"awsRegion":"us-east-1","eventID":"e-%d","eventName":"MODIFY","userIdentity":null,"recordFormat":"application/json","tableName":"refused_orders","dynamodb":{"ApproximateCreationDateTime":%d,"Keys":{"customer":{"S":"C-%d"}},"SizeBytes":100},"eventSource":"aws:dynamodb"}`,
			i, time.Now().UnixMilli(), i)
		entries = append(entries, ktypes.PutRecordsRequestEntry{Data: []byte(data), PartitionKey: aws.String(fmt.Sprint("C-", i))})
	}
	if _, err := k.Client.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String(stream), Records: entries}); err != nil {
		t.Fatal(err)
	}
	listing, err := k.Client.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(stream)})
	if err != nil || len(listing.Shards) != 2 {
		t.Fatalf("list shards: %v, %d", err, len(listing.Shards))
	}

	// The checkpoint files, where the reader keeps them:
	// <checkpoint_dir>/<stream ARN, ':' and '/' as '_'>/<shard id>.json.
	ckpt := t.TempDir()
	dir := filepath.Join(ckpt, strings.NewReplacer(":", "_", "/", "_").Replace(arn))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bogus := []string{
		// Digits as Kinesis writes them, of no shard of this stream.
		"49654321098765432109876543210987654321098765432109876543",
		// Not a sequence number.
		"not-a-sequence-number",
	}
	var files []string
	for i, s := range listing.Shards {
		id := aws.ToString(s.ShardId)
		b, _ := json.Marshal(map[string]any{"stream_arn": arn, "shard_id": id, "sequence_number": bogus[i], "updated": time.Now().UTC()})
		f := filepath.Join(dir, id+".json")
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}

	cfg := filepath.Join(t.TempDir(), "hotkeyd.yaml")
	yaml := fmt.Sprintf(`sources:
  - type: kinesis
    streams: [%s]
    region: us-east-1
    endpoint: %s
    start: latest
    checkpoint_dir: %s
    poll_interval: 100ms
`, stream, k.Endpoint, ckpt)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{NoWaitReady: true, Env: []string{
		"AWS_ACCESS_KEY_ID=hotkeyd", "AWS_SECRET_ACCESS_KEY=hotkeyd", "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true",
	}}, "run", "--config.file", cfg)
	deadline := time.Now().Add(settle)
	for {
		_, body := h.Get(t, "/metrics")
		events, _ := ctMetric(string(body), "hotkeyd_events_total", `table="refused_orders"`, `source="kinesis"`)
		refused, _ := ctMetric(string(body), "hotkeyd_source_errors_total", `source="kinesis"`, `reason="checkpoint"`)
		if events == 40 && refused >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%g events, %g checkpoint errors; want 40 and at least 2", events, refused)
		}
		time.Sleep(100 * time.Millisecond)
	}
	h.WaitLog(t, "unusable checkpoint, moved aside; reading the shard from its first record", settle)
	for i, f := range files {
		if _, err := os.Stat(f + ".corrupt"); err != nil {
			t.Errorf("checkpoint %q (%s) not moved aside: %v", f, bogus[i], err)
		}
	}
}

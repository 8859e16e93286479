package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// freeAddr returns a loopback address no one listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// writeConfig writes a config file into a temporary folder.
func writeConfig(t *testing.T, cfg string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hotkeyd.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitMetric waits until the series reaches want, failing after 30 s.
func (d *streamsDaemon) waitMetric(t *testing.T, series string, want float64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for d.metric(t, series) < want {
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v after 30s, want %v", series, d.metric(t, series), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // more polls: nothing beyond want must come
	if got := d.metric(t, series); got != want {
		t.Fatalf("%s = %v, want %v", series, got, want)
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (d *streamsDaemon) stop(t *testing.T) {
	t.Helper()
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		if code := d.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("hotkeyd exited with %d after SIGTERM", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("hotkeyd did not stop within 15s of SIGTERM")
	}
}

// TestKinesisEndToEnd runs hotkeyd with a kinesis source on kinesalite
// written with PutRecords as DynamoDB writes its Kinesis stream: the hot
// key is flagged, and a restart on the checkpoint folder counts exactly the
// records written while it was stopped.
func TestKinesisEndToEnd(t *testing.T) {
	t.Parallel() // a kinesalite and processes of its own, on ports of its own
	if testing.Short() {
		t.Skip("starts kinesalite and hotkeyd twice")
	}
	k := testenv.StartKinesalite(t)
	ctx := context.Background()
	if _, err := k.Client.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("orders-cdc"), ShardCount: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, settle, "the stream active", func() bool { // CREATING, then ACTIVE
		out, err := k.Client.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("orders-cdc")})
		return err == nil && out.StreamDescriptionSummary.StreamStatus == ktypes.StreamStatusActive
	})
	serial := 0
	write := func(keys ...string) {
		t.Helper()
		var entries []ktypes.PutRecordsRequestEntry
		for _, key := range keys {
			serial++
			data := fmt.Sprintf(`{"awsRegion":"us-east-1","eventID":"e-%d","eventName":"MODIFY","userIdentity":null,"recordFormat":"application/json","tableName":"e2e_orders","dynamodb":{"ApproximateCreationDateTime":%d,"Keys":{"customer":{"S":%q}},"SizeBytes":100},"eventSource":"aws:dynamodb"}`,
				serial, time.Now().UnixMicro(), key)
			entries = append(entries, ktypes.PutRecordsRequestEntry{Data: []byte(data), PartitionKey: aws.String(key)})
		}
		for len(entries) > 0 {
			n := min(len(entries), 500)
			if _, err := k.Client.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String("orders-cdc"), Records: entries[:n]}); err != nil {
				t.Fatal(err)
			}
			entries = entries[n:]
		}
	}
	cfgPath := writeConfig(t, fmt.Sprintf(`sources:
  - type: kinesis
    streams: [orders-cdc]
    region: us-east-1
    endpoint: %s
    start: trim_horizon
    checkpoint_dir: %s
    poll_interval: 100ms
`, k.Endpoint, t.TempDir()))
	series := `hotkeyd_events_total{class="write",source="kinesis",table="e2e_orders"}`

	var keys []string
	for i := range 300 {
		keys = append(keys, fmt.Sprintf("CUSTOMER#%d", i))
		if i%3 == 0 {
			keys = append(keys, "HOT#1")
		}
	}
	write(keys...)
	d1 := startStreamsDaemon(t, cfgPath)
	d1.waitMetric(t, series, float64(len(keys)))
	hot := hotKeySeries("e2e_orders", "write", "HOT#1", "hot_key")
	for deadline := time.Now().Add(15 * time.Second); ; {
		_, b := d1.get("/metrics")
		if hot.MatchString(b) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("HOT#1 not flagged:\n%s", b)
		}
		time.Sleep(200 * time.Millisecond)
	}
	d1.stop(t)

	write(keys[:120]...)
	d2 := startStreamsDaemon(t, cfgPath)
	d2.waitMetric(t, series, 120)
	d2.stop(t)
}

// TestCloudTrailS3EndToEnd runs hotkeyd with a cloudtrail source on an S3
// bucket of s3rver, objects put gzipped with the SDK as CloudTrail
// delivers them; a restart reads only the objects put meanwhile.
func TestCloudTrailS3EndToEnd(t *testing.T) {
	t.Parallel() // an s3rver and processes of its own, on ports of its own
	if testing.Short() {
		t.Skip("starts s3rver and hotkeyd twice")
	}
	srv := testenv.StartS3rver(t)
	ctx := context.Background()
	if _, err := srv.Client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("trail")}); err != nil {
		t.Fatal(err)
	}
	folder := "AWSLogs/111122223333/CloudTrail/us-east-1/2026/11/22/"
	put := func(minute string, keys ...string) {
		t.Helper()
		var recs []string
		for _, k := range keys {
			recs = append(recs, fmt.Sprintf(`{"eventVersion":"1.08","eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","eventTime":%q,"awsRegion":"us-east-1","requestParameters":{"tableName":"orders","key":{"id":%q}}}`,
				time.Now().Add(-time.Minute).UTC().Format(time.RFC3339), k))
		}
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		fmt.Fprintf(zw, `{"Records":[%s]}`, strings.Join(recs, ","))
		zw.Close()
		key := folder + "111122223333_CloudTrail_us-east-1_20261122T" + minute + "Z_x.json.gz"
		if _, err := srv.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("trail"), Key: aws.String(key), Body: bytes.NewReader(buf.Bytes())}); err != nil {
			t.Fatal(err)
		}
	}
	cfgPath := writeConfig(t, fmt.Sprintf(`sources:
  - type: cloudtrail
    s3: {bucket: trail, region: us-east-1, endpoint: %q}
    checkpoint_dir: %s
    poll_interval: 200ms
`, srv.Endpoint, t.TempDir()))
	series := `hotkeyd_events_total{class="read",source="cloudtrail",table="orders"}`
	put("1000", "a", "b", "c")
	put("1005", "d")
	d1 := startS3Daemon(t, cfgPath)
	d1.waitMetric(t, series, 4)
	if got := d1.metric(t, `hotkeyd_cloudtrail_files_read_total{paths="s3://trail/"}`); got != 2 {
		t.Errorf("files read %v, want 2", got)
	}
	d1.stop(t)
	put("1010", "e", "f")
	d2 := startS3Daemon(t, cfgPath)
	d2.waitMetric(t, series, 2)
	d2.stop(t)
}

// startS3Daemon starts hotkeyd with s3rver's credentials.
func startS3Daemon(t *testing.T, cfgPath string) *streamsDaemon {
	t.Helper()
	return startStreamsDaemon(t, cfgPath, "AWS_ACCESS_KEY_ID="+testenv.S3rverAccessKey, "AWS_SECRET_ACCESS_KEY="+testenv.S3rverSecretKey)
}

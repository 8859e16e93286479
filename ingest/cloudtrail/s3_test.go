package cloudtrail

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zaptest"

	"github.com/hotkeyd/hotkeyd/ingest/cloudtrail/s3trail"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// TestS3SourceRestart reads the shared CloudTrail samples from a real S3
// emulator, put gzipped with the SDK as CloudTrail delivers them; a
// restart on the same checkpoint folder reads only the objects put since,
// so that every event is counted once: as many as decoding each sample
// file alone gives.
func TestS3SourceRestart(t *testing.T) {
	samples := filepath.Join("..", "..", "..", "shared", "data", "cloudtrail")
	files := []string{"awsdocs-ddb-log-entries.json", "ibm-universal-connectors-dynamodb-s3sqs-sample.json", "ibm-universal-connectors-dynamodb-filter-test.json"}
	bodies := make([][]byte, len(files))
	want := make([]int, len(files))
	for i, f := range files {
		b, err := os.ReadFile(filepath.Join(samples, f))
		if err != nil {
			t.Skipf("sample data not available: %v", err)
		}
		st, err := Decode(context.Background(), bytes.NewReader(b), f, nil, traffic.SinkFunc(func(context.Context, []traffic.Event) error { return nil }), nil)
		if err != nil || st.Events == 0 {
			t.Fatalf("%s: %+v, %v", f, st, err)
		}
		want[i] = int(st.Events + st.Throttled)
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		bodies[i] = buf.Bytes()
	}
	srv := testenv.StartS3rver(t)
	ctx := context.Background()
	const bucket = "cloudtrail-logs"
	if _, err := srv.Client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	folder := "AWSLogs/111122223333/CloudTrail/us-east-1/2026/11/22/"
	put := func(i int, minute string) {
		key := folder + "111122223333_CloudTrail_us-east-1_20261122T" + minute + "Z_a.json.gz"
		if _, err := srv.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(bodies[i])}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	cfg := Config{S3: &s3trail.Config{Bucket: bucket, Endpoint: srv.Endpoint}, CheckpointDir: dir, PollInterval: 50 * time.Millisecond}
	read := func(want int) (*S3Source, int) {
		t.Helper()
		src, err := NewS3WithClient(cfg, srv.Client, zaptest.NewLogger(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		c := &collector{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- src.Run(ctx, c) }()
		deadline := time.Now().Add(30 * time.Second)
		for c.len() < want && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond) // more polls: nothing more comes
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return src, c.len()
	}
	put(0, "1000")
	put(1, "1005")
	src, n := read(want[0] + want[1])
	if n != want[0]+want[1] {
		t.Fatalf("first run: %d events, want %d", n, want[0]+want[1])
	}
	if n, err := testutil.GatherAndCount(registry(t, src), "hotkeyd_cloudtrail_files_read_total", "hotkeyd_cloudtrail_s3_requests_total"); err != nil || n != 3 {
		t.Errorf("metrics: %d series, %v; want files read and two request series", n, err)
	}
	if src.files != 2 {
		t.Errorf("files read %d, want 2", src.files)
	}
	put(2, "1010")
	if _, n := read(want[2]); n != want[2] {
		t.Errorf("after restart: %d events, want %d (the new object's alone)", n, want[2])
	}
	b, err := os.ReadFile(filepath.Join(dir, s3trail.StateFile))
	if err != nil || !strings.Contains(string(b), "20261122T1010Z") {
		t.Errorf("checkpoint %s, %v", b, err)
	}
}

func registry(t *testing.T, c prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	return reg
}

func (c *collector) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.events)
}

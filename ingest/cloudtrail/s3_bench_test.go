package cloudtrail

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/hotkeyd/hotkeyd/ingest/cloudtrail/s3trail"
	"github.com/hotkeyd/hotkeyd/traffic"
)

type s3Replay struct{ body []byte }

func (rt s3Replay) Do(*http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK, ContentLength: int64(len(rt.body)),
		Header: http.Header{"Content-Type": []string{"application/octet-stream"}},
		Body:   io.NopCloser(bytes.NewReader(rt.body)),
	}, nil
}

// BenchmarkS3Object measures the S3 reader per CloudTrail record on a
// delivered file of 1000 GetItem and PutItem records, gzipped: the SDK's
// GetObject on a replayed answer, decompression, decoding and the mapping
// to Events, as the reader runs them for each new object. records/cpu-s
// divides by the CPU time of the whole process: the per-core figure.
func BenchmarkS3Object(b *testing.B) {
	const n = 1000
	var recs []string
	for i := range n {
		op := "GetItem"
		if i%4 == 0 {
			op = "PutItem"
		}
		recs = append(recs, fmt.Sprintf(`{"eventVersion":"1.08","userIdentity":{"type":"AssumedRole","arn":"arn:aws:sts::111122223333:assumed-role/app/i-0abc"},"eventTime":"2026-11-22T10:00:%02dZ","eventSource":"dynamodb.amazonaws.com","eventName":"%s","awsRegion":"us-east-1","sourceIPAddress":"10.0.0.1","userAgent":"aws-sdk-go-v2/1.30.0","requestParameters":{"tableName":"orders","key":{"customer":"CUSTOMER#%d","order":"%d"}},"responseElements":null,"requestID":"R%d","eventID":"E%d","readOnly":true,"resources":[{"accountId":"111122223333","type":"AWS::DynamoDB::Table","ARN":"arn:aws:dynamodb:us-east-1:111122223333:table/orders"}],"eventType":"AwsApiCall","managementEvent":false,"recipientAccountId":"111122223333","eventCategory":"Data"}`,
			i%60, op, i%5000, i, i, i))
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	fmt.Fprintf(zw, `{"Records":[%s]}`, strings.Join(recs, ","))
	zw.Close()
	client := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String("http://replay.invalid"), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("hotkeyd", "hotkeyd", ""),
		Retryer:     aws.NopRetryer{}, HTTPClient: s3Replay{gz.Bytes()},
	})
	cfg := Config{S3: &s3trail.Config{Bucket: "trail"}, PollInterval: time.Second,
		Tables: map[string]traffic.KeySchema{"orders": {PartitionKey: "customer", SortKey: "order"}}}
	src, err := NewS3WithClient(cfg, client, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	events := 0
	src.sink = traffic.SinkFunc(func(_ context.Context, batch []traffic.Event) error { events += len(batch); return nil })
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(int64(gz.Len()))
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	for b.Loop() {
		out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("trail"), Key: aws.String("AWSLogs/x.json.gz")})
		if err != nil {
			b.Fatal(err)
		}
		if err := src.object(ctx, "s3://trail/AWSLogs/x.json.gz", out.Body); err != nil {
			b.Fatal(err)
		}
		out.Body.Close()
	}
	if events != b.N*n {
		b.Fatalf("%d events, want %d", events, b.N*n)
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "records/s")
	if cpu > 0 {
		b.ReportMetric(float64(b.N*n)/cpu.Seconds(), "records/cpu-s")
	}
}

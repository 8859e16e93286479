package kinesis

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/hotkeyd/hotkeyd/ingest/streamrecord"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// replay answers every request with the same body, from memory: the
// benchmark measures the client's decoding and the reader, not a network.
type replay struct{ body []byte }

func (rt replay) Do(*http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK, ContentLength: int64(len(rt.body)),
		Header: http.Header{"Content-Type": []string{"application/x-amz-json-1.1"}},
		Body:   io.NopCloser(bytes.NewReader(rt.body)),
	}, nil
}

// getRecordsAnswer is a GetRecords answer of n records as Kinesis Data
// Streams for DynamoDB writes them: NEW_AND_OLD_IMAGES of a small item,
// keys spread over 10 000 customers, a unique eventID each.
func getRecordsAnswer(n, round int) []byte {
	var b strings.Builder
	b.WriteString(`{"MillisBehindLatest":0,"NextShardIterator":"it-next","Records":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		p := fmt.Sprintf(`{"awsRegion":"us-east-1","eventID":"%08d-%04d-4000-8000-000000000000","eventName":"MODIFY","userIdentity":null,"recordFormat":"application/json","tableName":"orders","dynamodb":{"ApproximateCreationDateTime":%d,"Keys":{"customer":{"S":"CUSTOMER#%d"},"order":{"N":"%d"}},"NewImage":{"customer":{"S":"CUSTOMER#%d"},"order":{"N":"%d"},"status":{"S":"SHIPPED"},"total":{"N":"129.90"}},"OldImage":{"customer":{"S":"CUSTOMER#%d"},"order":{"N":"%d"},"status":{"S":"PENDING"},"total":{"N":"129.90"}},"SizeBytes":212},"eventSource":"aws:dynamodb"}`,
			i, round, 1795429020000+int64(i), i%10000, i, i%10000, i, i%10000, i)
		fmt.Fprintf(&b, `{"SequenceNumber":"4966%050d","ApproximateArrivalTimestamp":1.795429020e9,"Data":"%s","PartitionKey":"%d"}`,
			i, base64.StdEncoding.EncodeToString([]byte(p)), i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// BenchmarkKinesisReader measures the reader per record on 1000-record
// GetRecords answers: the SDK client's call and decoding (the base64 Data
// included), the payload decoding, the duplicate check and the mapping to
// Events, as the shard loop runs them (fetch, emit). records/cpu-s divides
// by the CPU time of the whole process (garbage collection on the other
// core included): the per-core figure.
func BenchmarkKinesisReader(b *testing.B) {
	const n = 1000
	// Distinct rounds, so that the duplicate check finds nothing twice.
	answers := make([][]byte, 8)
	for i := range answers {
		answers[i] = getRecordsAnswer(n, i)
	}
	next := 0
	client := kinesis.New(kinesis.Options{
		Region: "us-east-1", BaseEndpoint: aws.String("http://replay.invalid"),
		Credentials: credentials.NewStaticCredentialsProvider("hotkeyd", "hotkeyd", ""),
		Retryer:     aws.NopRetryer{},
		HTTPClient: httpDoer(func(r *http.Request) (*http.Response, error) {
			next = (next + 1) % len(answers)
			return replay{answers[next]}.Do(r)
		}),
	})
	events := 0
	sink := traffic.SinkFunc(func(_ context.Context, batch []traffic.Event) error { events += len(batch); return nil })
	schemas := map[string]traffic.KeySchema{"orders": {PartitionKey: "customer", SortKey: "order"}}
	src, err := NewWithClients(Config{Streams: []string{"s"}, Schemas: schemas}, client, nil, nil, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	st := src.newStream("arn:aws:kinesis:us-east-1:1:stream/s", "s", sink)
	const shard = "shardId-000000000000"
	ctx := context.Background()
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		// A fresh window of recent records per answer set: the rounds
		// repeat every 8 answers.
		if next == 0 {
			src.records = streamrecord.NewDumpDecoder(streamrecord.DumpConfig{Schemas: streamrecord.NewSchemas(schemas), Source: SourceName})
		}
		out, err := st.Records(ctx, shard, "it")
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := st.Emit(ctx, shard, out, time.Time{}); !ok {
			b.Fatal("sink refused the batch")
		}
	}
	if events != b.N*n {
		b.Fatalf("%d events, want %d", events, b.N*n)
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "records/s")
	if c := processCPU() - cpu0; c > 0 {
		b.ReportMetric(float64(b.N*n)/c.Seconds(), "records/cpu-s")
	}
}

type httpDoer func(*http.Request) (*http.Response, error)

func (f httpDoer) Do(r *http.Request) (*http.Response, error) { return f(r) }

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

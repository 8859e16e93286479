package streams

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// replayTransport answers every request with the same recorded body, from
// memory: the benchmark measures the client's decoding, not a network.
type replayTransport struct{ body []byte }

func (rt replayTransport) Do(*http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": []string{"application/x-amz-json-1.0"}},
		Body:       io.NopCloser(bytes.NewReader(rt.body)),
	}, nil
}

func replayClient(body []byte) *dynamodbstreams.Client {
	return dynamodbstreams.New(dynamodbstreams.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://replay.invalid"),
		Credentials:  credentials.NewStaticCredentialsProvider("hotkeyd", "hotkeyd", ""),
		Retryer:      aws.NopRetryer{},
		HTTPClient:   replayTransport{body: body},
	})
}

var benchKeys = keySchema{hash: "customer", rng: "order"}

// BenchmarkGetRecords measures the hot path of the reader per record on the
// recorded 1000-record GetRecords answer (NEW_IMAGE view): the SDK client's
// request and decoding, mapping records to Events, and sketch.Store.Put.
// Sub-benchmarks split the cost.
func BenchmarkGetRecords(b *testing.B) {
	body := readTestdata(b, recordedResponse)
	client := replayClient(body)
	ctx := context.Background()
	in := &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String("it"), Limit: aws.Int32(1000)}
	out, err := client.GetRecords(ctx, in)
	if err != nil {
		b.Fatal(err)
	}
	n := len(out.Records)
	if n != 1000 {
		b.Fatalf("recorded answer holds %d records, want 1000", n)
	}
	now := func() time.Time { return time.Unix(1795429080, 0) }
	report := func(b *testing.B) {
		b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "records/s")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
	}

	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := client.GetRecords(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("fast-decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			out, err := client.GetRecords(ctx, in, withFastGetRecords)
			if err != nil || len(out.Records) != n {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			batch := make([]ingest.Event, 0, n)
			for i := range out.Records {
				var ev ingest.Event
				if k, _, _ := mapRecord(&out.Records[i], "orders", "shard", benchKeys, &ev); k == kindWrite {
					batch = append(batch, ev)
				}
			}
		}
		report(b)
	})
	b.Run("put", func(b *testing.B) {
		store, err := sketch.NewStore(sketch.DefaultConfig(), now)
		if err != nil {
			b.Fatal(err)
		}
		batch := make([]ingest.Event, 0, n)
		for i := range out.Records {
			var ev ingest.Event
			mapRecord(&out.Records[i], "orders", "shard", benchKeys, &ev)
			batch = append(batch, ev)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := store.Put(ctx, append([]ingest.Event(nil), batch...)); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	for _, path := range []struct {
		name string
		opts []func(*dynamodbstreams.Options)
	}{{"end-to-end-sdk", nil}, {"end-to-end-fast", []func(*dynamodbstreams.Options){withFastGetRecords}}} {
		b.Run(path.name, func(b *testing.B) { benchEndToEnd(b, client, in, path.opts, now, len(body), report) })
	}
}

func benchEndToEnd(b *testing.B, client *dynamodbstreams.Client, in *dynamodbstreams.GetRecordsInput, opts []func(*dynamodbstreams.Options), now func() time.Time, size int, report func(*testing.B)) {
	ctx := context.Background()
	{
		store, err := sketch.NewStore(sketch.DefaultConfig(), now)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.SetBytes(int64(size))
		for b.Loop() {
			out, err := client.GetRecords(ctx, in, opts...)
			if err != nil {
				b.Fatal(err)
			}
			batch := make([]ingest.Event, 0, len(out.Records))
			for i := range out.Records {
				var ev ingest.Event
				if k, _, _ := mapRecord(&out.Records[i], "orders", "shard", benchKeys, &ev); k == kindWrite {
					batch = append(batch, ev)
				}
			}
			if err := store.Put(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	}
}

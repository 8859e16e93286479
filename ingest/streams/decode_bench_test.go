package streams

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/hotkeyd/hotkeyd/ingest/streamrecord"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// replayTransport answers every request with the same recorded body, from
// memory: the benchmark measures the client's decoding, not a network.
type replayTransport struct{ body []byte }

func (rt replayTransport) Do(*http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode:    http.StatusOK,
		ContentLength: int64(len(rt.body)),
		Header:        http.Header{"Content-Type": []string{"application/x-amz-json-1.0"}},
		Body:          io.NopCloser(bytes.NewReader(rt.body)),
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

// BenchmarkGetRecords measures the hot path of the reader per record on the
// recorded 1000-record GetRecords answer (NEW_IMAGE view): the SDK client's
// request and decoding, mapping records to Events, and sketch.Store.Put.
// Sub-benchmarks split the cost.
func BenchmarkGetRecords(b *testing.B) {
	for _, rec := range []struct {
		name string
		keys traffic.KeySchema
	}{
		{recordedResponse, traffic.KeySchema{PartitionKey: "customer", SortKey: "order"}},
		// KEYS_ONLY view, the cheapest to read: keys "USER#n", sort key N.
		{recordedKeysOnly, traffic.KeySchema{PartitionKey: "pk", SortKey: "sk"}},
	} {
		b.Run(rec.name, func(b *testing.B) { benchGetRecords(b, rec.name, rec.keys) })
	}
}

// recordedKeysOnly is a GetRecords answer of 1000 KEYS_ONLY records
// recorded from DynamoDB Local the same way.
const recordedKeysOnly = "getrecords-1000-keys-only.json"

func benchGetRecords(b *testing.B, file string, benchKeys traffic.KeySchema) {
	body := readTestdata(b, file)
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
	// records/s is wall-clock; records/cpu-s divides by the CPU time the
	// whole process used meanwhile (garbage collection on the other core
	// included), the honest "per core" figure on a shared machine.
	var cpu0 time.Duration
	report := func(b *testing.B) {
		b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "records/s")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		if c := processCPU() - cpu0; c > 0 {
			b.ReportMetric(float64(b.N*n)/c.Seconds(), "records/cpu-s")
		}
	}
	start := func() { cpu0 = processCPU() }

	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		start()
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
		start()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			out, err := client.GetRecords(ctx, in, withFastGetRecords(nil))
			if err != nil || len(out.Records) != n {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("client-call-empty-answer", func(b *testing.B) {
		// The SDK's per-call pipeline (middleware stack, endpoint
		// resolution, signing) on an answer with no records: what a call
		// costs before any record is decoded.
		empty := replayClient([]byte(`{"Records":[],"NextShardIterator":"it-2"}`))
		b.ReportAllocs()
		start()
		for b.Loop() {
			if _, err := empty.GetRecords(ctx, in, withFastGetRecords(nil)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "µs/call")
		if c := processCPU() - cpu0; c > 0 {
			b.ReportMetric(c.Seconds()*1e6/float64(b.N), "cpu-µs/call")
		}
	})
	b.Run("fast-decode-body-only", func(b *testing.B) {
		b.ReportAllocs()
		start()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := streamrecord.DecodeGetRecords(body, nil); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		start()
		var events int
		for b.Loop() {
			batch := make([]traffic.Event, 0, n)
			for i := range out.Records {
				var ev traffic.Event
				if k, _, _ := streamrecord.Map(&out.Records[i], "orders", "shard", benchKeys, &ev); k == streamrecord.KindWrite {
					batch = append(batch, ev)
				}
			}
			events += len(batch)
		}
		if events != b.N*n {
			b.Fatalf("mapped %d events, want %d", events, b.N*n)
		}
		report(b)
	})
	b.Run("put", func(b *testing.B) {
		store, err := sketch.NewStore(sketch.DefaultConfig(), now)
		if err != nil {
			b.Fatal(err)
		}
		batch := make([]traffic.Event, 0, n)
		for i := range out.Records {
			var ev traffic.Event
			streamrecord.Map(&out.Records[i], "orders", "shard", benchKeys, &ev)
			batch = append(batch, ev)
		}
		b.ReportAllocs()
		start()
		for b.Loop() {
			if err := store.Put(ctx, append([]traffic.Event(nil), batch...)); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	for _, path := range []struct {
		name string
		opts []func(*dynamodbstreams.Options)
	}{{"end-to-end-sdk", nil}, {"end-to-end-fast", []func(*dynamodbstreams.Options){withFastGetRecords(nil)}}} {
		b.Run(path.name, func(b *testing.B) {
			start()
			benchEndToEnd(b, client, in, path.opts, benchKeys, now, len(body), report)
		})
	}
	// The same with the table's secondary indexes: the images read as far
	// as the indexes need, and the index writes told from them.
	for name, tb := range benchIndexes(benchKeys) {
		b.Run("fast-decode-body-only-"+name, func(b *testing.B) {
			b.ReportAllocs()
			start()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := streamrecord.DecodeGetRecords(body, tb); err != nil {
					b.Fatal(err)
				}
			}
			report(b)
		})
		b.Run("end-to-end-fast-"+name, func(b *testing.B) {
			start()
			benchEndToEndIndexes(b, client, in, []func(*dynamodbstreams.Options){withFastGetRecords(tb)}, benchKeys, tb, now, len(body), report)
		})
	}
}

// benchIndexes are the tables the index sub-benchmarks read the recorded
// answers as: "gsi-keys" has indexes that read a few attributes of each
// image (a KEYS_ONLY index on status/updatedAt, an INCLUDE one on amount
// with lines), the other attributes skipped; "gsi-all" an ALL index on
// status, whose entries are as large as the item, every attribute sized.
func benchIndexes(keys traffic.KeySchema) map[string]*streamrecord.Table {
	with := func(ixs map[string]traffic.IndexSchema) *streamrecord.Table {
		ks := keys
		ks.Indexes = ixs
		return streamrecord.NewSchemas(map[string]traffic.KeySchema{"orders": ks}).Table("orders")
	}
	return map[string]*streamrecord.Table{
		"gsi-keys": with(map[string]traffic.IndexSchema{
			"by-status": {PartitionKey: "status", SortKey: "updatedAt", Projection: traffic.Projection{Type: traffic.ProjectKeysOnly}},
			"by-amount": {PartitionKey: "amount", Projection: traffic.Projection{Type: traffic.ProjectInclude, Attributes: []string{"lines"}}},
		}),
		"gsi-all": with(map[string]traffic.IndexSchema{
			"by-status": {PartitionKey: "status", Projection: traffic.Projection{Type: traffic.ProjectAll}},
		}),
	}
}

func benchEndToEnd(b *testing.B, client *dynamodbstreams.Client, in *dynamodbstreams.GetRecordsInput, opts []func(*dynamodbstreams.Options), benchKeys traffic.KeySchema, now func() time.Time, size int, report func(*testing.B)) {
	benchEndToEndIndexes(b, client, in, opts, benchKeys, nil, now, size, report)
}

// benchEndToEndIndexes is the reader's path with the index writes of
// table tb (nil: none), as Emit makes them.
func benchEndToEndIndexes(b *testing.B, client *dynamodbstreams.Client, in *dynamodbstreams.GetRecordsInput, opts []func(*dynamodbstreams.Options), benchKeys traffic.KeySchema, tb *streamrecord.Table, now func() time.Time, size int, report func(*testing.B)) {
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
			batch := make([]traffic.Event, 0, len(out.Records))
			for i := range out.Records {
				var ev traffic.Event
				if k, _, _ := streamrecord.Map(&out.Records[i], "orders", "shard", benchKeys, &ev); k == streamrecord.KindWrite {
					batch = append(batch, ev)
					if tb != nil {
						batch, _ = streamrecord.IndexWrites(&out.Records[i], tb, &ev, batch)
					}
				}
			}
			if err := store.Put(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	}
}

// processCPU returns the user and system CPU time of the process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package streamrecord

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// BenchmarkDumpDecode measures the dump decoder (hotkeyd analyze, followed
// files) per record on the recorded 1000-record GetRecords answer (as `aws
// dynamodbstreams get-records` output), on the same records as
// Kinesis Data Streams for DynamoDB payloads one per line (Firehose's
// files), and in Lambda's Kinesis envelope (base64); the baseline is the
// GetRecords fast decoder with Map on the same answer, in the same
// run.
func BenchmarkDumpDecode(b *testing.B) {
	body := readTestdata(b, recordedResponse)
	var answer struct{ Records []map[string]json.RawMessage }
	if err := json.Unmarshal(body, &answer); err != nil {
		b.Fatal(err)
	}
	n := len(answer.Records)
	var lines, envelopes bytes.Buffer
	envelopes.WriteString(`{"Records":[`)
	for i, r := range answer.Records {
		r["tableName"] = json.RawMessage(`"orders"`)
		p, err := json.Marshal(r)
		if err != nil {
			b.Fatal(err)
		}
		lines.Write(p)
		lines.WriteByte('\n')
		if i > 0 {
			envelopes.WriteByte(',')
		}
		envelopes.WriteString(`{"kinesis":{"kinesisSchemaVersion":"1.0","partitionKey":"k","sequenceNumber":"1","data":"` +
			base64.StdEncoding.EncodeToString(p) + `"},"eventSource":"aws:kinesis","eventName":"aws:kinesis:record"}`)
	}
	envelopes.WriteString(`]}`)
	schemas := map[string]traffic.KeySchema{"orders": {PartitionKey: "customer", SortKey: "order"}}
	// records/cpu-s divides by the CPU time of the whole process (the
	// collector's included): the figure a shared, loaded machine can
	// still compare; records/s is wall-clock.
	var cpu0 time.Duration
	report := func(b *testing.B) {
		b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "records/s")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		if c := processCPU() - cpu0; c > 0 {
			b.ReportMetric(float64(b.N*n)/c.Seconds(), "records/cpu-s")
		}
	}
	discard := traffic.SinkFunc(func(context.Context, []traffic.Event) error { return nil })
	for _, in := range []struct {
		name string
		text []byte
	}{
		{"get-records-output", body},
		{"kinesis-payload-lines", lines.Bytes()},
		{"lambda-kinesis-envelopes", envelopes.Bytes()},
	} {
		b.Run(in.name, func(b *testing.B) {
			dd := NewDumpDecoder(DumpConfig{Schemas: NewSchemas(schemas), Table: "orders"})
			b.ReportAllocs()
			b.SetBytes(int64(len(in.text)))
			cpu0 = processCPU()
			for b.Loop() {
				// A record read twice counts once: a new decoder per round
				// keeps every round's records new.
				dd.seen = newRecentIDs(recentIDsGeneration)
				st, err := dd.Decode(context.Background(), bytes.NewReader(in.text), in.name, discard)
				if err != nil || st.Events != uint64(n) {
					b.Fatalf("%d events, %v", st.Events, err)
				}
			}
			report(b)
		})
	}
	// The same records of a table with secondary indexes: the images are
	// kept as spans and read as far as the indexes need, and the index
	// writes told (a KEYS_ONLY index on status and an INCLUDE one on
	// amount: two index writes a record).
	indexed := map[string]traffic.KeySchema{"orders": {PartitionKey: "customer", SortKey: "order", Indexes: map[string]traffic.IndexSchema{
		"by-status": {PartitionKey: "status", SortKey: "updatedAt", Projection: traffic.Projection{Type: traffic.ProjectKeysOnly}},
		"by-amount": {PartitionKey: "amount", Projection: traffic.Projection{Type: traffic.ProjectInclude, Attributes: []string{"lines"}}},
	}}}
	b.Run("get-records-output-gsi-keys", func(b *testing.B) {
		dd := NewDumpDecoder(DumpConfig{Schemas: NewSchemas(indexed), Table: "orders"})
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		cpu0 = processCPU()
		for b.Loop() {
			dd.seen = newRecentIDs(recentIDsGeneration)
			st, err := dd.Decode(context.Background(), bytes.NewReader(body), "indexed", discard)
			if err != nil || st.Events != uint64(3*n) {
				b.Fatalf("%d events, %v", st.Events, err)
			}
		}
		report(b)
	})
	b.Run("baseline-getrecords-fast-decode-map", func(b *testing.B) {
		ks := traffic.KeySchema{PartitionKey: "customer", SortKey: "order"}
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		cpu0 = processCPU()
		for b.Loop() {
			out, err := DecodeGetRecords(body, nil)
			if err != nil {
				b.Fatal(err)
			}
			batch := make([]traffic.Event, 0, len(out.Records))
			for i := range out.Records {
				var ev traffic.Event
				if k, _, _ := Map(&out.Records[i], "orders", "", ks, &ev); k == KindWrite {
					batch = append(batch, ev)
				}
			}
			if len(batch) != n {
				b.Fatalf("%d events", len(batch))
			}
		}
		report(b)
	})
}

// processCPU returns the user and system CPU time of the process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package streamrecord

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/internal/ingesttest"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// dumpRecordJSON is a Lambda-event record of table "orders".
func dumpRecordJSON(id, pk string, size int) string {
	return fmt.Sprintf(`{"eventID":%q,"eventName":"MODIFY","eventSource":"aws:dynamodb","eventSourceARN":"arn:aws:dynamodb:us-east-1:111122223333:table/orders/stream/2026-01-01T00:00:00.000","dynamodb":{"ApproximateCreationDateTime":1795429020,"Keys":{"pk":{"S":%q}},"SequenceNumber":"1%s","SizeBytes":%d}}`, id, pk, id, size)
}

// kinesisPayload is a Kinesis Data Streams for DynamoDB payload.
func kinesisPayload(id, table, pk string, ms int64) string {
	return fmt.Sprintf(`{"awsRegion":"eu-west-1","eventID":%q,"eventName":"INSERT","userIdentity":null,"recordFormat":"application/json","tableName":%q,"dynamodb":{"ApproximateCreationDateTime":%d,"Keys":{"id":{"S":%q}},"SizeBytes":1500},"eventSource":"aws:dynamodb"}`, id, table, ms, pk)
}

type dumpResult struct {
	events  []traffic.Event
	stats   DumpStats
	rejects map[string]int
	msgs    []string
}

func decodeDumpText(t testing.TB, text string, cfg DumpConfig) dumpResult {
	t.Helper()
	rep := &ingesttest.Reporter{}
	cfg.Reporter = rep
	cfg.Now = func() time.Time { return time.Unix(1, 0) }
	c := &ingesttest.Sink{}
	st, err := NewDumpDecoder(cfg).Decode(context.Background(), strings.NewReader(text), "dump", c)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	res := dumpResult{events: c.Events(), stats: st, rejects: rep.Rejects()}
	for reason := range res.rejects {
		res.msgs = append(res.msgs, rep.Last(reason).Error())
	}
	return res
}

func pks(evs []traffic.Event) string {
	var s []string
	for _, e := range evs {
		s = append(s, e.Table+":"+e.PK)
	}
	return strings.Join(s, " ")
}

// TestDumpShapes reads the shapes of dumps users have: each holds writes
// of orders:a and orders:b.
func TestDumpShapes(t *testing.T) {
	a, b := dumpRecordJSON("1", "a", 10), dumpRecordJSON("2", "b", 10)
	ka, kb := kinesisPayload("u1", "orders", "a", 1795429020000), kinesisPayload("u2", "orders", "b", 1795429020000123)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	lambdaKinesis := func(p string) string {
		return `{"kinesis":{"kinesisSchemaVersion":"1.0","partitionKey":"x","sequenceNumber":"4965","data":"` + b64(p) +
			`","approximateArrivalTimestamp":1731924555.932},"eventSource":"aws:kinesis","eventID":"shardId-000000000000:4965","eventName":"aws:kinesis:record","eventSourceARN":"arn:aws:kinesis:eu-west-1:1:stream/s"}`
	}
	for name, text := range map[string]string{
		"lambda event":              `{"Records":[` + a + `,` + b + `]}`,
		"records not first":         `{"window":{"start":"x"},"Records":[` + a + `,` + b + `],"shardId":"s"}`,
		"get-records output":        `{"Records":[` + strings.ReplaceAll(a, `"eventSourceARN"`, `"other"`) + `,` + b + `],"NextShardIterator":"it"}`,
		"array":                     `[` + a + `,` + b + `]`,
		"one per line":              a + "\n" + b + "\n",
		"pretty, concatenated":      strings.ReplaceAll(a, ",", ",\n  ") + b,
		"kinesis payloads":          ka + "\n" + kb,
		"kinesis payloads, array":   `[` + ka + `,` + kb + `]`,
		"lambda kinesis event":      `{"Records":[` + lambdaKinesis(ka) + `,` + lambdaKinesis(kb) + `]}`,
		"aws kinesis get-records":   `{"Records":[{"SequenceNumber":"1","ApproximateArrivalTimestamp":"2026-01-01T00:00:00+00:00","Data":"` + b64(ka) + `","PartitionKey":"x"},{"SequenceNumber":"2","Data":"` + b64(kb) + `","PartitionKey":"y"}],"NextShardIterator":"it","MillisBehindLatest":0}`,
		"lambda events, one a line": `{"Records":[` + a + `]}` + "\n" + `{"Records":[` + b + `]}` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			if !SniffDump([]byte(text)) {
				t.Error("not recognised as a dump")
			}
			r := decodeDumpText(t, text, DumpConfig{Table: "orders"})
			if got := pks(r.events); got != "orders:a orders:b" || len(r.rejects) != 0 {
				t.Fatalf("events %q, rejects %v %q", got, r.rejects, r.msgs)
			}
			for _, e := range r.events {
				if e.Class != traffic.Write || e.Units < 1 || e.Time.Year() != 2026 || e.Source != SourceName {
					t.Errorf("event %+v", e)
				}
			}
		})
	}
}

// TestDumpTimes reads ApproximateCreationDateTime in every unit dumps use.
func TestDumpTimes(t *testing.T) {
	want := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	sec := want.Unix()
	for _, v := range []string{fmt.Sprint(sec), fmt.Sprint(sec) + ".0", fmt.Sprint(sec * 1000), fmt.Sprint(sec * 1000000), `"2026-11-22T10:00:00Z"`, `"2026-11-22T11:00:00+01:00"`} {
		text := `{"tableName":"t","eventID":"1","dynamodb":{"ApproximateCreationDateTime":` + v + `,"Keys":{"id":{"N":"1"}}}}`
		r := decodeDumpText(t, text, DumpConfig{})
		if len(r.events) != 1 || !r.events[0].Time.Equal(want) {
			t.Errorf("%s: %+v %v", v, r.events, r.msgs)
		}
	}
}

// TestDumpBadInput feeds one bad record between two good ones: the bad
// one is counted with its reason, the others are read.
func TestDumpBadInput(t *testing.T) {
	good1, good2 := dumpRecordJSON("1", "a", 10), dumpRecordJSON("2", "b", 10)
	big := strings.Repeat("x", maxDumpRecord)
	for _, tc := range []struct {
		name, bad, reason string
	}{
		{"no Keys", `{"eventID":"x","eventSourceARN":"arn:aws:dynamodb:us-east-1:1:table/orders/stream/s","dynamodb":{"SizeBytes":1}}`, traffic.ReasonBadRecord},
		{"empty Keys", `{"eventID":"x","eventSourceARN":"arn:aws:dynamodb:us-east-1:1:table/orders/stream/s","dynamodb":{"Keys":{}}}`, traffic.ReasonBadRecord},
		{"number as a key", `{"eventID":"x","eventSourceARN":"arn:aws:dynamodb:us-east-1:1:table/orders/stream/s","dynamodb":{"Keys":{"pk":5}}}`, traffic.ReasonBadType},
		{"number in N without quotes", `{"eventID":"x","eventSourceARN":"arn:aws:dynamodb:us-east-1:1:table/orders/stream/s","dynamodb":{"Keys":{"pk":{"N":5}}}}`, traffic.ReasonBadType},
		{"not a number in N", `{"eventID":"x","eventSourceARN":"arn:aws:dynamodb:us-east-1:1:table/orders/stream/s","dynamodb":{"Keys":{"pk":{"N":"five"}}}}`, traffic.ReasonBadType},
		{"map as a key", `{"eventID":"x","eventSourceARN":"arn:aws:dynamodb:us-east-1:1:table/orders/stream/s","dynamodb":{"Keys":{"pk":{"M":{}}}}}`, traffic.ReasonBadType},
		{"image too large", `{"eventID":"x","eventSourceARN":"arn:aws:dynamodb:us-east-1:1:table/orders/stream/s","dynamodb":{"Keys":{"pk":{"S":"c"}},"NewImage":{"blob":{"S":"` + big + `"}}}}`, traffic.ReasonTooLong},
		{"another table's ARN", `{"eventID":"x","eventSourceARN":"arn:aws:dynamodb:us-east-1:1:table/other/stream/s","dynamodb":{"Keys":{"pk":{"S":"c"}}}}`, traffic.ReasonBadRecord},
		{"kinesis payload not JSON", `{"kinesis":{"data":"` + base64.StdEncoding.EncodeToString([]byte("not json {")) + `"},"eventSource":"aws:kinesis"}`, traffic.ReasonBadJSON},
		{"kinesis data not base64", `{"kinesis":{"data":"%%%"},"eventSource":"aws:kinesis"}`, traffic.ReasonBadRecord},
		{"bad time", `{"eventID":"x","eventSourceARN":"arn:aws:dynamodb:us-east-1:1:table/orders/stream/s","dynamodb":{"ApproximateCreationDateTime":"yesterday","Keys":{"pk":{"S":"c"}}}}`, traffic.ReasonBadTime},
		{"broken JSON", `{"eventID":"x","dynamodb":{"Keys":{"pk":{"S":"c"}}},}`, traffic.ReasonBadJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, layout := range []string{"list", "lines"} {
				text := `{"Records":[` + good1 + "," + tc.bad + "," + good2 + "]}"
				if layout == "lines" {
					text = good1 + "\n" + tc.bad + "\n" + good2 + "\n"
				}
				r := decodeDumpText(t, text, DumpConfig{Table: "orders"})
				if got := pks(r.events); got != "orders:a orders:b" || r.rejects[tc.reason] != 1 || len(r.rejects) != 1 {
					t.Errorf("%s: events %q, rejects %v %q; want both good records and one %s", layout, got, r.rejects, r.msgs, tc.reason)
				}
			}
		})
	}
	t.Run("truncated gzip", func(t *testing.T) {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		for i := range 200 {
			fmt.Fprintln(zw, dumpRecordJSON(fmt.Sprint(i), fmt.Sprint("k", i), 10))
		}
		zw.Close()
		cut := buf.Bytes()[:buf.Len()*2/3]
		r := decodeDumpText(t, string(cut), DumpConfig{})
		if len(r.events) < 50 || len(r.events) >= 200 || r.rejects[traffic.ReasonBadFile] != 1 {
			t.Errorf("events %d, rejects %v %q; want the records before the cut and one bad_file", len(r.events), r.rejects, r.msgs)
		}
	})
}

// TestDumpSchemasAndCounts covers what is counted apart: TTL deletes,
// records read twice, records without SizeBytes, composite keys with and
// without a schema.
func TestDumpSchemasAndCounts(t *testing.T) {
	rec := func(id, keys, extra string) string {
		return `{"eventID":"` + id + `","eventSourceARN":"arn:aws:dynamodb:us-east-1:1:table/t/stream/s"` + extra + `,"dynamodb":{"ApproximateCreationDateTime":1795429020,"Keys":` + keys + `,"SequenceNumber":"` + id + `"}}`
	}
	text := `{"Records":[` + strings.Join([]string{
		rec("1", `{"pk":{"S":"a"},"sk":{"N":"01.50"}}`, ""),
		rec("1", `{"pk":{"S":"a"},"sk":{"N":"01.50"}}`, ""), // read twice
		rec("2", `{"pk":{"S":"a"},"sk":{"N":"2"}}`, `,"userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"}`),
		rec("3", `{"pk":{"B":"AAEqQQ=="},"sk":{"S":"x"}}`, ""),
	}, ",") + `]}`
	r := decodeDumpText(t, text, DumpConfig{})
	if got := pks(r.events); got != "t:pk=a,sk=1.5 t:pk=AAEqQQ==,sk=x" {
		t.Errorf("without a schema: %q", got)
	}
	want := DumpStats{Stats: ingest.Stats{Records: 4, Events: 2, NoSchema: []string{"t"}}, TTLDeletes: 1, Duplicates: 1, Unsized: 2}
	if fmt.Sprint(r.stats) != fmt.Sprint(want) {
		t.Errorf("stats %+v, want %+v", r.stats, want)
	}
	r = decodeDumpText(t, text, DumpConfig{Schemas: NewSchemas(map[string]traffic.KeySchema{"t": {PartitionKey: "pk", SortKey: "sk"}})})
	if got := pks(r.events); got != "t:a t:AAEqQQ==" || r.events[0].SK != "1.5" || len(r.stats.NoSchema) != 0 {
		t.Errorf("with a schema: %q %+v", got, r.stats)
	}
}

// TestDumpSamples checks the shared samples' records against what the
// files hold, read independently with encoding/json.
func TestDumpSamples(t *testing.T) {
	for file, want := range map[string]string{
		"aws-lambda-go-dynamodb-event.json":                  "Example-Table:key=binary,val=data",
		"aws-sam-cli-DynamoDBUpdate.json":                    "{{{table}}}:101 {{{table}}}:101 {{{table}}}:101",
		"powertools-ts-kinesis-dynamodb-stream.json":         "PowertoolsEventsStack-DynamoDBTable59784FC0-8NKAMTERTAXY:record-1qit2y819gi PowertoolsEventsStack-DynamoDBTable59784FC0-8NKAMTERTAXY:record-fvxn3q4q5jw",
		"powertools-ts-kinesis-dynamodb-stream.decoded.json": "PowertoolsEventsStack-DynamoDBTable59784FC0-8NKAMTERTAXY:record-1qit2y819gi PowertoolsEventsStack-DynamoDBTable59784FC0-8NKAMTERTAXY:record-fvxn3q4q5jw",
	} {
		b, err := os.ReadFile(filepath.Join(samplesDir, file))
		if err != nil {
			t.Skipf("sample data not available: %v", err)
		}
		if !SniffDump(b[:min(len(b), 4096)]) {
			t.Errorf("%s: not recognised", file)
		}
		r := decodeDumpText(t, string(b), DumpConfig{})
		if got := pks(r.events); got != want || len(r.rejects) != 0 {
			t.Errorf("%s: %q, rejects %v; want %q", file, got, r.msgs, want)
		}
		var raw struct{ Records []json.RawMessage }
		if json.Unmarshal(b, &raw) == nil && raw.Records != nil && r.stats.Records != uint64(len(raw.Records)) {
			t.Errorf("%s: %d records read, the file holds %d", file, r.stats.Records, len(raw.Records))
		}
	}
}

// TestSniffDump tells dumps from the other formats.
func TestSniffDump(t *testing.T) {
	for text, want := range map[string]bool{
		`{"Records":[{"eventVersion":"1.08","eventSource":"dynamodb.amazonaws.com","eventName":"GetItem"}]}`: false,
		`{"ts":"2026-11-22T10:00:00Z","table":"orders","pk":"USER#1","op":"PutItem"}`:                        false,
		"": false, "# a page": false,
		`{"Records":[{"eventID":"1","eventSource":"aws:dynamodb"}]}`:                     true,
		`{"Records": [ {"dynamodb" : {"Keys":{}}}]}`:                                     true,
		`{"Records":[{"kinesis":{"kinesisSchemaVersion":"1.0"}}]}`:                       true,
		`{"Records":[{"SequenceNumber":"1","ApproximateArrivalTimestamp":1,"Data":""}]}`: true,
	} {
		if got := SniffDump([]byte(text)); got != want {
			t.Errorf("SniffDump(%.60q) = %v", text, got)
		}
	}
}

// FuzzDumpDecode holds the decoder to never failing on any input and to
// account for every record.
func FuzzDumpDecode(f *testing.F) {
	f.Add(`{"Records":[` + dumpRecordJSON("1", "a", 10) + `]}`)
	f.Add(kinesisPayload("u", "t", "a", 1795429020000) + "\n")
	f.Add(`[{"kinesis":{"data":"` + base64.StdEncoding.EncodeToString([]byte(kinesisPayload("u", "t", "a", 1))) + `"}}]`)
	f.Add(`{"Records":[{"Data":"e30="},{"dynamodb":{"Keys":{"a":{"B":"!"}}}}],"x":[`)
	f.Fuzz(func(t *testing.T, text string) {
		r := decodeDumpText(t, text, DumpConfig{Table: "t"})
		s := r.stats
		if s.Events != uint64(len(r.events)) || s.Events+s.TTLDeletes+s.Duplicates > s.Records {
			t.Fatalf("stats %+v for %d events", s, len(r.events))
		}
		for _, e := range r.events {
			if e.Table != "t" || e.PK == "" || e.Units < 1 {
				t.Fatalf("event %+v", e)
			}
		}
	})
}

// TestDumpNotAnObject: a record that is not an object is bad_record in a
// list, and a line that is not JSON bad_json.
func TestDumpNotAnObject(t *testing.T) {
	good1, good2 := dumpRecordJSON("1", "a", 10), dumpRecordJSON("2", "b", 10)
	for text, reason := range map[string]string{
		`{"Records":[` + good1 + `,42,"x",[1],` + good2 + `]}`: traffic.ReasonBadRecord,
		good1 + "\n42\nnot json\n" + good2:                     traffic.ReasonBadJSON,
	} {
		r := decodeDumpText(t, text, DumpConfig{})
		if got := pks(r.events); got != "orders:a orders:b" || len(r.rejects) != 1 || r.rejects[reason] == 0 {
			t.Errorf("%.40q: events %q, rejects %v", text, got, r.rejects)
		}
	}
}

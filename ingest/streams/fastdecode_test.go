package streams

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/hotkeyd/hotkeyd/ingest/streamrecord"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// handCrafted holds what the recordings lack: escapes in names and values,
// binary and number keys, a TTL delete, a null userIdentity, fractional
// times, a closed shard (no NextShardIterator).
const handCrafted = `{"Records":[
 {"eventID":"e\"1","eventName":"INSERT","dynamodb":{"ApproximateCreationDateTime":1480642020.123,"Keys":{"p\u006b":{"S":"USER#\u00e9\n1"},"sk":{"N":"1.50E+1"}},"SequenceNumber":"100","SizeBytes":2049,"StreamViewType":"KEYS_ONLY"}},
 {"eventID":"e2","eventName":"REMOVE","userIdentity":{"PrincipalId":"dynamodb.amazonaws.com","Type":"Service"},"dynamodb":{"Keys":{"pk":{"B":"AAEqQQ=="}},"SequenceNumber":"101","SizeBytes":10}},
 {"eventID":"e3","eventName":"MODIFY","userIdentity":null,"dynamodb":{"ApproximateCreationDateTime":1693997155.9999,"Keys":{"pk":{"B":"AAEqQQ=="},"sk":{"S":""}},"NewImage":{"x":{"M":{"y":{"L":[{"NULL":true}]}}}},"SequenceNumber":"102","SizeBytes":0}},
 {"eventID":"e4","eventName":"MODIFY","dynamodb":{"Keys":{"other":{"S":"x"}},"SequenceNumber":"103"}}
]}`

// TestFastDecodeMatchesSDK decodes recorded answers with the SDK and with
// the fast decoder and checks that every record maps to the same Event (or
// the same rejection), with the same sequence numbers and next iterator.
func TestFastDecodeMatchesSDK(t *testing.T) {
	bodies := map[string][]byte{
		"hand-crafted": []byte(handCrafted),
		"empty":        []byte(`{"Records":[],"NextShardIterator":"it-2"}`),
	}
	b, err := os.ReadFile(filepath.Join("testdata", recordedResponse))
	if err != nil {
		t.Fatal(err)
	}
	bodies[recordedResponse] = b
	if bodies[recordedKeysOnly], err = os.ReadFile(filepath.Join("testdata", recordedKeysOnly)); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"aws-lambda-go-dynamodb-event.json", "aws-sam-cli-DynamoDBUpdate.json", "powertools-python-dynamoStreamEvent.json"} {
		if b, err := os.ReadFile(filepath.Join(samplesDir, f)); err == nil {
			bodies[f] = lambdaToGetRecords(t, b)
		}
	}
	tables := indexTables()
	for file, body := range indexCaseBodies(t) {
		bodies[file] = body.body
		tables = append(tables, body.table)
	}
	ctx := context.Background()
	in := &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String("it")}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			client := replayClient(body)
			slow, err := client.GetRecords(ctx, in)
			if err != nil {
				t.Fatalf("sdk decode: %v", err)
			}
			// Without indexes the images are skipped; with them, read as
			// far as the indexes need: the Events are the SDK's either way.
			for _, tb := range append([]*streamrecord.Table{nil}, tables...) {
				fast, err := streamrecord.DecodeGetRecords(body, tb)
				if err != nil {
					t.Fatalf("fast decode: %v", err)
				}
				viaClient, err := client.GetRecords(ctx, in, withFastGetRecords(tb))
				if err != nil {
					t.Fatalf("fast decode through the client: %v", err)
				}
				if aws.ToString(slow.NextShardIterator) != aws.ToString(fast.NextShardIterator) || (slow.NextShardIterator == nil) != (fast.NextShardIterator == nil) {
					t.Errorf("next iterator %v vs %v", slow.NextShardIterator, fast.NextShardIterator)
				}
				compareRecords(t, slow.Records, fast.Records, tb)
				compareRecords(t, slow.Records, viaClient.Records, tb)
			}
		})
	}
}

// indexTables are tables with indexes of every kind over the attributes
// of the recorded answers (customer, order, amount, lines, status,
// updatedAt) and of the hand-crafted one (pk, sk, x).
func indexTables() []*streamrecord.Table {
	schemas := streamrecord.NewSchemas(map[string]traffic.KeySchema{
		"recorded": {PartitionKey: "customer", SortKey: "order", Indexes: map[string]traffic.IndexSchema{
			"by-status": {PartitionKey: "status", SortKey: "updatedAt", Projection: traffic.Projection{Type: traffic.ProjectKeysOnly}},
			"by-amount": {PartitionKey: "amount", Projection: traffic.Projection{Type: traffic.ProjectInclude, Attributes: []string{"lines", "status"}}},
			"local":     {PartitionKey: "customer", SortKey: "status", Local: true, Projection: traffic.Projection{Type: traffic.ProjectAll}},
		}},
		"all": {PartitionKey: "customer", SortKey: "order", Indexes: map[string]traffic.IndexSchema{
			"by-status": {PartitionKey: "status", Projection: traffic.Projection{Type: traffic.ProjectAll}},
		}},
		"crafted": {PartitionKey: "pk", SortKey: "sk", Indexes: map[string]traffic.IndexSchema{
			"by-x": {PartitionKey: "sk", Projection: traffic.Projection{Type: traffic.ProjectInclude, Attributes: []string{"x"}}},
			"all":  {PartitionKey: "pk", Projection: traffic.Projection{Type: traffic.ProjectAll}},
		}},
	})
	return []*streamrecord.Table{schemas.Table("recorded"), schemas.Table("all"), schemas.Table("crafted")}
}

type indexCaseBody struct {
	body  []byte
	table *streamrecord.Table
}

// indexCaseBodies are the records of the index rules' cases
// (../streamrecord/testdata/index-writes) as GetRecords answers, each
// with its table.
func indexCaseBodies(t testing.TB) map[string]indexCaseBody {
	files, err := filepath.Glob(filepath.Join("..", "streamrecord", "testdata", "index-writes", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no index cases: %v", err)
	}
	out := map[string]indexCaseBody{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Table  string            `json:"table"`
			Schema traffic.KeySchema `json:"schema"`
			Cases  []struct {
				Record json.RawMessage `json:"record"`
			} `json:"cases"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		recs := make([]json.RawMessage, len(c.Cases))
		for i := range c.Cases {
			recs[i] = c.Cases[i].Record
		}
		body, err := json.Marshal(map[string]any{"Records": recs})
		if err != nil {
			t.Fatal(err)
		}
		tb := streamrecord.NewSchemas(map[string]traffic.KeySchema{c.Table: c.Schema}).Table(c.Table)
		out["index-writes/"+filepath.Base(f)] = indexCaseBody{body, tb}
	}
	return out
}

func compareRecords(t *testing.T, slow, fast []types.Record, tb *streamrecord.Table) {
	t.Helper()
	if len(slow) != len(fast) {
		t.Fatalf("%d records vs %d", len(slow), len(fast))
	}
	for _, ks := range []traffic.KeySchema{{PartitionKey: "pk", SortKey: "sk"}, {PartitionKey: "customer", SortKey: "order"}, {PartitionKey: "Id"}, {PartitionKey: "key", SortKey: "val"}, {PartitionKey: "order_id"}, {PartitionKey: "id", SortKey: "at"}, {}} {
		for i := range slow {
			var a, b traffic.Event
			ka, ra, ea := streamrecord.Map(&slow[i], "t", "s", ks, &a)
			kb, rb, eb := streamrecord.Map(&fast[i], "t", "s", ks, &b)
			if ka != kb || ra != rb || a != b || (ea == nil) != (eb == nil) {
				t.Errorf("record %d, keys %+v: sdk %d %q %+v %v; fast %d %q %+v %v", i, ks, ka, ra, a, ea, kb, rb, b, eb)
			}
			if ka == streamrecord.KindWrite && tb != nil {
				ia, ca := streamrecord.IndexWrites(&slow[i], tb, &a, nil)
				ib, cb := streamrecord.IndexWrites(&fast[i], tb, &b, nil)
				if ca != cb || a != b || !slices.Equal(ia, ib) {
					t.Errorf("record %d, keys %+v: index writes: sdk %v %+v %+v; fast %v %+v %+v", i, ks, ca, a, ia, cb, b, ib)
				}
			}
			if seqOf(&slow[i]) != seqOf(&fast[i]) ||
				aws.ToString(slow[i].EventID) != aws.ToString(fast[i].EventID) {
				t.Errorf("record %d: sequence or event id differ", i)
			}
		}
	}
}

// TestFastDecodeFallsBack checks that answers the fast decoder does not
// know are left to the SDK, which then decodes or rejects them.
func TestFastDecodeFallsBack(t *testing.T) {
	for _, body := range []string{
		`{"Records":[{"dynamodb":{"Keys":{"pk":{"BOOL":true}}}}]}`,
		`{"Records":[{"dynamodb":{"Keys":{"pk":{"S":"a","N":"1"}}}}]}`,
		`{"Records":{}}`,
		`{"Records":[{"dynamodb":{"SizeBytes":"12"}}]}`,
		`{"Records":[`,
		`[]`,
	} {
		if _, err := streamrecord.DecodeGetRecords([]byte(body), nil); err == nil {
			t.Errorf("fast decoder accepted %s", body)
		}
	}
	// Through the client, an unusual but valid answer still decodes.
	out, err := replayClient([]byte(`{"Records":[{"dynamodb":{"Keys":{"pk":{"BOOL":true}},"SequenceNumber":"1"}}]}`)).
		GetRecords(context.Background(), &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String("it")}, withFastGetRecords(nil))
	if err != nil || len(out.Records) != 1 {
		t.Fatalf("fallback: %v, %+v", err, out)
	}
	if _, ok := out.Records[0].Dynamodb.Keys["pk"].(*types.AttributeValueMemberBOOL); !ok {
		t.Errorf("fallback decoded %T", out.Records[0].Dynamodb.Keys["pk"])
	}
}

// FuzzDecodeGetRecords checks the fast decoder never panics and, whenever it
// accepts an answer, agrees with the SDK: on the Events of the table
// writes, and, for tables with indexes, on those of the index writes
// (images decoded as far as the indexes need, the rest sized unread).
func FuzzDecodeGetRecords(f *testing.F) {
	f.Add([]byte(handCrafted))
	f.Add([]byte(`{"Records":[],"NextShardIterator":null}`))
	for _, c := range indexCaseBodies(f) {
		f.Add(c.body)
	}
	// The image paths: without indexes (images skipped), and with indexes
	// of every projection (attributes decoded, sized or skipped).
	tables := append([]*streamrecord.Table{nil}, indexTables()...)
	for _, c := range indexCaseBodies(f) {
		tables = append(tables, c.table)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		// The SDK is asked only about answers the fast decoder accepts
		// (it panics on some it does not).
		var slow *dynamodbstreams.GetRecordsOutput
		for _, tb := range tables {
			fast, err := streamrecord.DecodeGetRecords(body, tb)
			if err != nil {
				continue
			}
			if slow == nil {
				if slow, err = replayClient(body).GetRecords(context.Background(), &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String("it")}); err != nil {
					return // shapes only the SDK refuses: nothing to compare
				}
			}
			compareRecords(t, slow.Records, fast.Records, tb)
		}
	})
}

func seqOf(r *types.Record) string {
	if r.Dynamodb == nil {
		return "<none>"
	}
	return aws.ToString(r.Dynamodb.SequenceNumber)
}

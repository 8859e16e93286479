package streams

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/hotkeyd/hotkeyd/ingest/streamrecord"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// samplesDir holds third-party stream records (read-only test inputs).
var samplesDir = filepath.Join("..", "..", "..", "shared", "data", "streams")

// TestSampleRecords decodes public sample stream records (Lambda events have
// the GetRecords shape: a "Records" list of the same records) through the
// real SDK client and maps them: TTL deletes are counted apart, every other
// record is a write with its canonical key, units and time.
func TestSampleRecords(t *testing.T) {
	for _, tc := range []struct {
		file    string
		ks      traffic.KeySchema
		wantPKs []string // of the client writes, in order
		ttl     int
	}{
		{"aws-lambda-go-dynamodb-event.json", traffic.KeySchema{PartitionKey: "key", SortKey: "val"}, []string{"binary"}, 1},
		{"aws-lambda-go-dynamodb-time-window-event.json", traffic.KeySchema{PartitionKey: "Id"}, []string{"101", "101", "101"}, 0},
		{"aws-sam-cli-DynamoDBUpdate.json", traffic.KeySchema{PartitionKey: "Id"}, []string{"101", "101", "101"}, 0},
		{"powertools-python-dynamoStreamEvent.json", traffic.KeySchema{}, []string{"101", "101"}, 0},
	} {
		t.Run(tc.file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join(samplesDir, tc.file))
			if err != nil {
				t.Skipf("sample data not available: %v", err)
			}
			// The expected TTL count, read from the raw JSON independently.
			var raw struct {
				Records []struct {
					UserIdentity *struct {
						PrincipalID string `json:"principalId"`
					} `json:"userIdentity"`
				}
			}
			if err := json.Unmarshal(body, &raw); err != nil {
				t.Fatal(err)
			}
			rawTTL := 0
			for _, r := range raw.Records {
				if r.UserIdentity != nil && r.UserIdentity.PrincipalID == streamrecord.TTLPrincipal {
					rawTTL++
				}
			}
			if rawTTL != tc.ttl {
				t.Fatalf("sample has %d TTL records, table says %d", rawTTL, tc.ttl)
			}
			recs := decodeViaSDK(t, lambdaToGetRecords(t, body))
			var pks []string
			ttl := 0
			for i := range recs {
				var ev traffic.Event
				kind, reason, err := streamrecord.Map(&recs[i], "t", "shard-1", tc.ks, &ev)
				switch kind {
				case streamrecord.KindTTLDelete:
					ttl++
				case streamrecord.KindRejected:
					t.Errorf("record %d rejected (%s): %v", i, reason, err)
				case streamrecord.KindWrite:
					pks = append(pks, ev.PK)
					if ev.Units != 1 || ev.Class != traffic.Write || ev.Shard != "shard-1" {
						t.Errorf("record %d: %+v", i, ev)
					}
					if d := recs[i].Dynamodb.ApproximateCreationDateTime; d != nil && !ev.Time.Equal(*d) {
						t.Errorf("record %d time %v, want %v", i, ev.Time, *d)
					}
				}
			}
			if ttl != tc.ttl || len(pks) != len(tc.wantPKs) {
				t.Fatalf("ttl %d writes %v; want ttl %d writes %v", ttl, pks, tc.ttl, tc.wantPKs)
			}
			for i := range pks {
				if pks[i] != tc.wantPKs[i] {
					t.Errorf("write %d key %q, want %q", i, pks[i], tc.wantPKs[i])
				}
			}
		})
	}
	t.Run("malformed", func(t *testing.T) {
		body, err := os.ReadFile(filepath.Join(samplesDir, "aws-lambda-go-dynamodb-event-malformed.2.json"))
		if err != nil {
			t.Skipf("sample data not available: %v", err)
		}
		if _, err := getRecordsVia(t, body); err == nil {
			t.Error("a malformed GetRecords answer decoded without error")
		}
	})
}

// lambdaToGetRecords turns a Lambda event into a GetRecords answer. The
// two are the same records but for one spelling: Lambda writes
// userIdentity's members as "type" and "principalId", the Streams API (and
// so the SDK) as "Type" and "PrincipalId".
func lambdaToGetRecords(t testing.TB, body []byte) []byte {
	var ev struct {
		Records []map[string]json.RawMessage
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatal(err)
	}
	for _, r := range ev.Records {
		raw, ok := r["userIdentity"]
		if !ok {
			continue
		}
		var id map[string]string
		if err := json.Unmarshal(raw, &id); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(map[string]string{"Type": id["type"], "PrincipalId": id["principalId"]})
		r["userIdentity"] = b
	}
	out, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func getRecordsVia(t testing.TB, body []byte) (*dynamodbstreams.GetRecordsOutput, error) {
	rs := newReplayServer(t)
	rs.records = func(string) []byte { return body }
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return rs.client().GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String("it")})
}

func decodeViaSDK(t testing.TB, body []byte) []types.Record {
	out, err := getRecordsVia(t, body)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return out.Records
}

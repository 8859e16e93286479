package streams

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/hotkeyd/hotkeyd/ingest"
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
		ks      keySchema
		wantPKs []string // of the client writes, in order
		ttl     int
	}{
		{"aws-lambda-go-dynamodb-event.json", keySchema{hash: "key", rng: "val"}, []string{"binary"}, 1},
		{"aws-lambda-go-dynamodb-time-window-event.json", keySchema{hash: "Id"}, []string{"101", "101", "101"}, 0},
		{"aws-sam-cli-DynamoDBUpdate.json", keySchema{hash: "Id"}, []string{"101", "101", "101"}, 0},
		{"powertools-python-dynamoStreamEvent.json", keySchema{}, []string{"101", "101"}, 0},
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
				if r.UserIdentity != nil && r.UserIdentity.PrincipalID == ttlPrincipal {
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
				var ev ingest.Event
				kind, reason, err := mapRecord(&recs[i], "t", "shard-1", tc.ks, &ev)
				switch kind {
				case kindTTLDelete:
					ttl++
				case kindRejected:
					t.Errorf("record %d rejected (%s): %v", i, reason, err)
				case kindWrite:
					pks = append(pks, ev.PK)
					if ev.Units != 1 || ev.Class != ingest.Write || ev.Shard != "shard-1" {
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

// TestMapRecord covers the key forms and the units estimate, table-driven.
func TestMapRecord(t *testing.T) {
	ts := time.Unix(1795426080, 0).UTC()
	rec := func(keys map[string]types.AttributeValue, size int64) *types.Record {
		return &types.Record{Dynamodb: &types.StreamRecord{Keys: keys, SizeBytes: aws.Int64(size), ApproximateCreationDateTime: &ts, SequenceNumber: aws.String("1")}}
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	b := func(v ...byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: v} }
	ks := keySchema{hash: "pk", rng: "sk"}
	for _, tc := range []struct {
		name       string
		r          *types.Record
		kind       recordKind
		reason     string
		pk, sk     string
		units      float64
		schemaless bool
	}{
		{"string keys", rec(map[string]types.AttributeValue{"pk": s("USER#1"), "sk": s("ORDER#2")}, 100), kindWrite, "", "USER#1", "ORDER#2", 1, false},
		{"number keys normalised", rec(map[string]types.AttributeValue{"pk": n("1.50"), "sk": n("-0")}, 100), kindWrite, "", "1.5", "0", 1, false},
		{"exponent", rec(map[string]types.AttributeValue{"pk": n("1E+3"), "sk": n("25e-2")}, 100), kindWrite, "", "1000", "0.25", 1, false},
		{"binary keys", rec(map[string]types.AttributeValue{"pk": b(0, 1, 42, 65), "sk": b()}, 100), kindWrite, "", "AAEqQQ==", "", 1, false},
		{"no sort key in record", rec(map[string]types.AttributeValue{"pk": s("a")}, 1024), kindWrite, "", "a", "", 1, false},
		{"1025 bytes is 2 units", rec(map[string]types.AttributeValue{"pk": s("a")}, 1025), kindWrite, "", "a", "", 2, false},
		{"3000 bytes is 3 units", rec(map[string]types.AttributeValue{"pk": s("a")}, 3000), kindWrite, "", "a", "", 3, false},
		{"zero size is 1 unit", rec(map[string]types.AttributeValue{"pk": s("a")}, 0), kindWrite, "", "a", "", 1, false},
		{"schemaless single key", rec(map[string]types.AttributeValue{"id": n("007")}, 10), kindWrite, "", "7", "", 1, true},
		{"schemaless two keys", rec(map[string]types.AttributeValue{"a": s("x"), "b": s("y")}, 10), kindRejected, ingest.ReasonMissingPK, "", "", 0, true},
		{"missing partition key", rec(map[string]types.AttributeValue{"sk": s("x")}, 10), kindRejected, ingest.ReasonMissingPK, "", "", 0, false},
		{"bad number", rec(map[string]types.AttributeValue{"pk": n("1.2.3")}, 10), kindRejected, ingest.ReasonBadType, "", "", 0, false},
		{"not a key type", rec(map[string]types.AttributeValue{"pk": &types.AttributeValueMemberBOOL{Value: true}}, 10), kindRejected, ingest.ReasonBadType, "", "", 0, false},
		{"no keys", &types.Record{Dynamodb: &types.StreamRecord{}}, kindRejected, ingest.ReasonBadRecord, "", "", 0, false},
		{"ttl delete", &types.Record{EventName: types.OperationTypeRemove, UserIdentity: &types.Identity{Type: aws.String("Service"), PrincipalId: aws.String("dynamodb.amazonaws.com")},
			Dynamodb: &types.StreamRecord{Keys: map[string]types.AttributeValue{"pk": s("a")}}}, kindTTLDelete, "", "", "", 0, false},
	} {
		var ev ingest.Event
		k := ks
		if tc.schemaless {
			k = keySchema{}
		}
		kind, reason, err := mapRecord(tc.r, "orders", "shard-9", k, &ev)
		if kind != tc.kind || reason != tc.reason {
			t.Errorf("%s: kind %d reason %q (%v), want %d %q", tc.name, kind, reason, err, tc.kind, tc.reason)
			continue
		}
		if kind != kindWrite {
			continue
		}
		want := ingest.Event{Table: "orders", PK: tc.pk, SK: tc.sk, Class: ingest.Write, Units: tc.units, Time: ts, Source: SourceName, Shard: "shard-9"}
		if ev != want {
			t.Errorf("%s: event %+v, want %+v", tc.name, ev, want)
		}
	}
}

type redactAll struct{}

func (redactAll) Mask(string) string { return "<redacted>" }

// TestBadNumberKeyIsQuotedMasked checks that a key attribute of type N that
// is not a number is named in the rejection masked as keys are, and as it
// is without a masker.
func TestBadNumberKeyIsQuotedMasked(t *testing.T) {
	rec := &types.Record{Dynamodb: &types.StreamRecord{Keys: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberN{Value: "4242-SECRET"}}}}
	var ev ingest.Event
	_, _, err := mapRecord(rec, "orders", "shard-1", keySchema{hash: "pk"}, &ev)
	if got := quoteBadNumber(err, redactAll{}).Error(); strings.Contains(got, "4242") || !strings.HasSuffix(got, `: "<redacted>"`) {
		t.Errorf("masked: %q", got)
	}
	if got := quoteBadNumber(err, nil).Error(); !strings.HasSuffix(got, `: "4242-SECRET"`) {
		t.Errorf("plain: %q", got)
	}
}

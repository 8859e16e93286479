package streamrecord

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// TestMapRecord covers the key forms and the units estimate, table-driven.
func TestMapRecord(t *testing.T) {
	ts := time.Unix(1795426080, 0).UTC()
	rec := func(keys map[string]types.AttributeValue, size int64) *types.Record {
		return &types.Record{Dynamodb: &types.StreamRecord{Keys: keys, SizeBytes: aws.Int64(size), ApproximateCreationDateTime: &ts, SequenceNumber: aws.String("1")}}
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	b := func(v ...byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: v} }
	ks := traffic.KeySchema{PartitionKey: "pk", SortKey: "sk"}
	for _, tc := range []struct {
		name       string
		r          *types.Record
		kind       Kind
		reason     string
		pk, sk     string
		units      float64
		schemaless bool
	}{
		{"string keys", rec(map[string]types.AttributeValue{"pk": s("USER#1"), "sk": s("ORDER#2")}, 100), KindWrite, "", "USER#1", "ORDER#2", 1, false},
		{"number keys normalised", rec(map[string]types.AttributeValue{"pk": n("1.50"), "sk": n("-0")}, 100), KindWrite, "", "1.5", "0", 1, false},
		{"exponent", rec(map[string]types.AttributeValue{"pk": n("1E+3"), "sk": n("25e-2")}, 100), KindWrite, "", "1000", "0.25", 1, false},
		{"binary keys", rec(map[string]types.AttributeValue{"pk": b(0, 1, 42, 65), "sk": b()}, 100), KindWrite, "", "AAEqQQ==", "", 1, false},
		{"no sort key in record", rec(map[string]types.AttributeValue{"pk": s("a")}, 1024), KindWrite, "", "a", "", 1, false},
		{"1025 bytes is 2 units", rec(map[string]types.AttributeValue{"pk": s("a")}, 1025), KindWrite, "", "a", "", 2, false},
		{"3000 bytes is 3 units", rec(map[string]types.AttributeValue{"pk": s("a")}, 3000), KindWrite, "", "a", "", 3, false},
		{"zero size is 1 unit", rec(map[string]types.AttributeValue{"pk": s("a")}, 0), KindWrite, "", "a", "", 1, false},
		{"schemaless single key", rec(map[string]types.AttributeValue{"id": n("007")}, 10), KindWrite, "", "7", "", 1, true},
		{"schemaless two keys", rec(map[string]types.AttributeValue{"a": s("x"), "b": s("y")}, 10), KindRejected, traffic.ReasonMissingPK, "", "", 0, true},
		{"missing partition key", rec(map[string]types.AttributeValue{"sk": s("x")}, 10), KindRejected, traffic.ReasonMissingPK, "", "", 0, false},
		{"bad number", rec(map[string]types.AttributeValue{"pk": n("1.2.3")}, 10), KindRejected, traffic.ReasonBadType, "", "", 0, false},
		{"not a key type", rec(map[string]types.AttributeValue{"pk": &types.AttributeValueMemberBOOL{Value: true}}, 10), KindRejected, traffic.ReasonBadType, "", "", 0, false},
		{"no keys", &types.Record{Dynamodb: &types.StreamRecord{}}, KindRejected, traffic.ReasonBadRecord, "", "", 0, false},
		{"ttl delete", &types.Record{EventName: types.OperationTypeRemove, UserIdentity: &types.Identity{Type: aws.String("Service"), PrincipalId: aws.String("dynamodb.amazonaws.com")},
			Dynamodb: &types.StreamRecord{Keys: map[string]types.AttributeValue{"pk": s("a")}}}, KindTTLDelete, "", "", "", 0, false},
	} {
		var ev traffic.Event
		k := ks
		if tc.schemaless {
			k = traffic.KeySchema{}
		}
		kind, reason, err := Map(tc.r, "orders", "shard-9", k, &ev)
		if kind != tc.kind || reason != tc.reason {
			t.Errorf("%s: kind %d reason %q (%v), want %d %q", tc.name, kind, reason, err, tc.kind, tc.reason)
			continue
		}
		if kind != KindWrite {
			continue
		}
		want := traffic.Event{Table: "orders", PK: tc.pk, SK: tc.sk, Class: traffic.Write, Units: tc.units, Time: ts, Source: SourceName, Shard: "shard-9"}
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
	var ev traffic.Event
	_, _, err := Map(rec, "orders", "shard-1", traffic.KeySchema{PartitionKey: "pk"}, &ev)
	if got := QuoteBadNumber(err, redactAll{}).Error(); strings.Contains(got, "4242") || !strings.HasSuffix(got, `: "<redacted>"`) {
		t.Errorf("masked: %q", got)
	}
	if got := QuoteBadNumber(err, nil).Error(); !strings.HasSuffix(got, `: "4242-SECRET"`) {
		t.Errorf("plain: %q", got)
	}
}

package lease

import (
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

const testStream = "arn:aws:dynamodb:us-east-1:111122223333:table/orders/stream/2026-01-01T00:00:00.000"

func TestParseItem(t *testing.T) {
	key := &types.AttributeValueMemberS{Value: testStream + ":shardId-2"}
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	for _, tc := range []struct {
		name       string
		item       map[string]types.AttributeValue
		notLease   bool
		owner      string
		count      int64
		checkpoint string
		parents    []string
		switches   int64
		problems   []string // substrings, one per problem, in order
	}{{
		name: "KCL 2 multi-stream lease",
		item: map[string]types.AttributeValue{
			"leaseKey": key, "leaseOwner": s("worker-a"), "leaseCounter": n("42"),
			"checkpoint": s("49000000000000000000123"), "checkpointSubSequenceNumber": n("0"),
			"ownerSwitchesSinceCheckpoint": n("2"), "parentShardId": &types.AttributeValueMemberSS{Value: []string{"shardId-1"}},
			"streamName": s(testStream), "shardId": s("shardId-2"),
		},
		owner: "worker-a", count: 42, checkpoint: "49000000000000000000123", parents: []string{"shardId-1"}, switches: 2,
	}, {
		name: "KCL 3 lease with entityType, unowned",
		item: map[string]types.AttributeValue{
			"leaseKey": key, "leaseCounter": n("0"), "checkpoint": s("TRIM_HORIZON"),
			"checkpointSubSequenceNumber": n("0"), "ownerSwitchesSinceCheckpoint": n("0"), "entityType": s("LEASE"),
		},
		checkpoint: TrimHorizon,
	}, {
		name:     "another entity type is no lease",
		item:     map[string]types.AttributeValue{"leaseKey": key, "entityType": s("WORKER_METRIC_STATS")},
		notLease: true,
	}, {
		name:     "a key without a stream is no lease of ours",
		item:     map[string]types.AttributeValue{"leaseKey": s("shardId-2"), "leaseCounter": n("1"), "checkpoint": s("LATEST")},
		notLease: true,
	}, {
		name:     "a key that is not a string",
		item:     map[string]types.AttributeValue{"leaseKey": n("7")},
		notLease: true,
	}, {
		name:       "counter as a string, checkpoint as a number (written by hand)",
		item:       map[string]types.AttributeValue{"leaseKey": key, "leaseCounter": s("5"), "checkpoint": n("123456")},
		count:      5,
		checkpoint: "000000000000000123456",
		problems:   []string{"leaseCounter is a string", "checkpoint is a number"},
	}, {
		name:     "counter and checkpoint missing",
		item:     map[string]types.AttributeValue{"leaseKey": key, "leaseOwner": s("old")},
		owner:    "old",
		problems: []string{"leaseCounter is missing", "checkpoint is missing"},
	}, {
		name:     "unusable checkpoint and counter",
		item:     map[string]types.AttributeValue{"leaseKey": key, "leaseCounter": n("-3"), "checkpoint": s("somewhere")},
		problems: []string{`leaseCounter "-3" is not a whole number`, `checkpoint "somewhere" is neither`},
	}, {
		name:       "AT_TIMESTAMP reads from the horizon",
		item:       map[string]types.AttributeValue{"leaseKey": key, "leaseCounter": n("1"), "checkpoint": s("AT_TIMESTAMP")},
		count:      1,
		checkpoint: TrimHorizon,
	}, {
		name:       "owner as a number, parents as a string, switches as a string",
		item:       map[string]types.AttributeValue{"leaseKey": key, "leaseOwner": n("12"), "leaseCounter": n("3"), "checkpoint": s("SHARD_END"), "parentShardId": s("shardId-1"), "ownerSwitchesSinceCheckpoint": s("x")},
		owner:      "12",
		count:      3,
		checkpoint: ShardEnd,
		parents:    []string{"shardId-1"},
		problems:   []string{"leaseOwner is N", "ownerSwitchesSinceCheckpoint is S", "parentShardId is a string"},
	}, {
		name:     "parents as a list, sub-sequence as a string",
		item:     map[string]types.AttributeValue{"leaseKey": key, "leaseCounter": n("3"), "checkpoint": s("LATEST"), "checkpointSubSequenceNumber": s("0"), "parentShardId": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("shardId-0"), n("1")}}},
		count:    3,
		parents:  []string{"shardId-0"},
		problems: []string{"checkpointSubSequenceNumber is S", "parentShardId is a list"},
		// LATEST is a valid checkpoint.
		checkpoint: Latest,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			it, ok := parseItem(tc.item)
			if ok == tc.notLease {
				t.Fatalf("parseItem ok = %v, want %v", ok, !tc.notLease)
			}
			if !ok {
				return
			}
			if it.shard.Stream != testStream || it.shard.ID != "shardId-2" {
				t.Errorf("shard %+v, want stream %s shard shardId-2", it.shard, testStream)
			}
			if it.owner != tc.owner || it.count != tc.count || it.checkpoint != tc.checkpoint || it.switches != tc.switches {
				t.Errorf("owner %q count %d checkpoint %q switches %d, want %q %d %q %d",
					it.owner, it.count, it.checkpoint, it.switches, tc.owner, tc.count, tc.checkpoint, tc.switches)
			}
			if !reflect.DeepEqual(it.shard.Parents, tc.parents) {
				t.Errorf("parents %v, want %v", it.shard.Parents, tc.parents)
			}
			if len(it.problems) != len(tc.problems) {
				t.Fatalf("problems %q, want %d like %q", it.problems, len(tc.problems), tc.problems)
			}
			for i, p := range tc.problems {
				if !strings.Contains(it.problems[i], p) {
					t.Errorf("problem %d %q, want it to contain %q", i, it.problems[i], p)
				}
			}
		})
	}
}

func TestSplitKey(t *testing.T) {
	for key, want := range map[string][2]string{
		testStream + ":shardId-1":  {testStream, "shardId-1"},
		"111122223333:orders:17:x": {"111122223333:orders:17", "x"},
		"nocolon":                  {},
		":shard":                   {},
		"stream:":                  {},
	} {
		stream, shard, ok := splitKey(key)
		if ok != (want[0] != "") || stream != want[0] || shard != want[1] {
			t.Errorf("splitKey(%q) = %q, %q, %v; want %q, %q", key, stream, shard, ok, want[0], want[1])
		}
	}
}

// A new lease is what the KCL's serializer writes for an unowned lease,
// and reads back as one.
func TestNewItemRoundTrip(t *testing.T) {
	s := Shard{Stream: testStream, ID: "shardId-9", Parents: []string{"shardId-8"}}
	av := newItem(s, TrimHorizon)
	for name, typ := range map[string]string{
		"leaseKey": "S", "leaseCounter": "N", "checkpoint": "S", "checkpointSubSequenceNumber": "N",
		"ownerSwitchesSinceCheckpoint": "N", "parentShardId": "SS", "streamName": "S", "shardId": "S", "entityType": "S",
	} {
		if got := typeName(av[name]); got != typ {
			t.Errorf("%s is %s, want %s", name, got, typ)
		}
	}
	if _, ok := av["leaseOwner"]; ok {
		t.Error("a new lease has an owner")
	}
	it, ok := parseItem(av)
	if !ok || len(it.problems) > 0 || it.shard.Key() != s.Key() || !reflect.DeepEqual(it.shard.Parents, s.Parents) || it.checkpoint != TrimHorizon {
		t.Errorf("parseItem(newItem) = %+v, %v", it, ok)
	}
}

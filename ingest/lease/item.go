package lease

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute names of a lease item: the Kinesis Client Library's.
const (
	attrKey           = "leaseKey"
	attrOwner         = "leaseOwner"
	attrCounter       = "leaseCounter"
	attrCheckpoint    = "checkpoint"
	attrSubSequence   = "checkpointSubSequenceNumber"
	attrOwnerSwitches = "ownerSwitchesSinceCheckpoint"
	attrParents       = "parentShardId"
	attrStream        = "streamName" // the KCL's multi-stream attribute; it holds the stream identifier
	attrShard         = "shardId"
	attrEntityType    = "entityType"
)

// entityLease is the entityType of a lease item. Items without entityType
// are leases too (the KCL wrote none before version 3).
const entityLease = "LEASE"

// Checkpoints that are not sequence numbers (the KCL's sentinels).
const (
	// TrimHorizon starts at the oldest record the shard holds.
	TrimHorizon = "TRIM_HORIZON"
	// Latest starts after the newest record, at the time reading begins.
	Latest = "LATEST"
	// ShardEnd marks a shard read to its end: its lease is never taken
	// again, and its children may start.
	ShardEnd = "SHARD_END"
	// atTimestamp is a KCL start position the DynamoDB Streams API does not
	// have; a lease holding it is read from TrimHorizon.
	atTimestamp = "AT_TIMESTAMP"
)

// minSequenceDigits is the shortest sequence number of DynamoDB Streams and
// Kinesis (the APIs' minimum length, 21).
const minSequenceDigits = 21

// Shard is one shard of a stream, as a reader lists it.
type Shard struct {
	// Stream identifies the stream: for DynamoDB Streams the stream ARN; for
	// Kinesis the KCL's "account:name:creation epoch" or the stream ARN.
	Stream string
	// ID is the shard id, e.g. "shardId-00000001700000000000-1a2b3c4d". It
	// holds no colon.
	ID string
	// Parents are the shards this one was split or merged from, if they
	// still exist in the listing or the lease table.
	Parents []string
}

// Key returns the shard's leaseKey: "<stream>:<shard id>".
func (s Shard) Key() string { return s.Stream + ":" + s.ID }

// splitKey splits a leaseKey at its last colon. ok is false for keys that
// are not of the form "<stream>:<shard id>".
func splitKey(key string) (stream, shard string, ok bool) {
	i := strings.LastIndexByte(key, ':')
	if i <= 0 || i == len(key)-1 {
		return "", "", false
	}
	return key[:i], key[i+1:], true
}

// item is a lease item as read from the table. Attributes of a wrong type
// or missing are tolerated (an item written by hand or by an older
// version): what was wrong is kept in problems, and the next write of the
// lease rewrites them with the right type.
type item struct {
	shard Shard
	owner string
	// counter is leaseCounter exactly as stored (nil when missing), the
	// value the next conditional write expects; count is its number, or 0
	// when it is not one.
	counter    types.AttributeValue
	count      int64
	checkpoint string // "" when missing or unusable
	switches   int64
	// raw is the whole item, to restore it if it vanishes.
	raw      map[string]types.AttributeValue
	problems []string
}

func (it *item) finished() bool { return it.checkpoint == ShardEnd }

// parseItem reads a lease item. ok is false for items that are not leases
// (another entityType) and for keys that do not name a stream and a shard;
// those are left alone.
func parseItem(av map[string]types.AttributeValue) (it item, ok bool) {
	if et, present := av[attrEntityType]; present {
		if s, isS := et.(*types.AttributeValueMemberS); !isS || s.Value != entityLease {
			return item{}, false
		}
	}
	key, isS := av[attrKey].(*types.AttributeValueMemberS)
	if !isS {
		return item{}, false
	}
	stream, shard, ok := splitKey(key.Value)
	if !ok {
		return item{}, false
	}
	it = item{shard: Shard{Stream: stream, ID: shard}, raw: av}
	it.readOwner(av[attrOwner])
	it.readCounter(av[attrCounter])
	it.readCheckpoint(av[attrCheckpoint])
	it.readSwitches(av)
	it.readParents(av[attrParents])
	return it, true
}

// bad notes a problem of the item.
func (it *item) bad(format string, args ...any) {
	it.problems = append(it.problems, fmt.Sprintf(format, args...))
}

// readOwner reads the lease's owner.
func (it *item) readOwner(av types.AttributeValue) {
	switch v := av.(type) {
	case nil:
	case *types.AttributeValueMemberS:
		it.owner = v.Value
	default:
		// An owner that is not a string still names a worker nobody is:
		// the lease expires by its counter like any other.
		it.owner = describe(v)
		it.bad("%s is %s, want a string", attrOwner, typeName(v))
	}
}

// readCounter reads the lease counter, kept as it is for the conditions
// of the writes that follow.
func (it *item) readCounter(av types.AttributeValue) {
	it.counter = av
	switch v := av.(type) {
	case nil:
		it.bad("%s is missing", attrCounter)
	case *types.AttributeValueMemberN:
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil || n < 0 {
			it.bad("%s %q is not a whole number", attrCounter, v.Value)
		}
		it.count = max(n, 0)
	case *types.AttributeValueMemberS:
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		it.count = max(n, 0)
		it.bad("%s is a string, want a number", attrCounter)
	default:
		it.bad("%s is %s, want a number", attrCounter, typeName(v))
	}
}

// readCheckpoint reads the checkpoint: "" when missing or unusable.
func (it *item) readCheckpoint(av types.AttributeValue) {
	switch v := av.(type) {
	case nil:
		it.bad("%s is missing", attrCheckpoint)
	case *types.AttributeValueMemberS:
		it.checkpoint = validCheckpoint(v.Value)
		if it.checkpoint == "" {
			it.bad("%s %q is neither a sequence number nor %s, %s or %s", attrCheckpoint, v.Value, TrimHorizon, Latest, ShardEnd)
		}
	case *types.AttributeValueMemberN:
		// A sequence number written as a number by hand. DynamoDB drops
		// a number's leading zeros, and sequence numbers have at least
		// minSequenceDigits digits (DynamoDB Local pads them with zeros):
		// put the zeros back.
		it.checkpoint = validCheckpoint(v.Value)
		if it.checkpoint != "" && it.checkpoint[0] >= '0' && it.checkpoint[0] <= '9' && len(it.checkpoint) < minSequenceDigits {
			it.checkpoint = strings.Repeat("0", minSequenceDigits-len(it.checkpoint)) + it.checkpoint
		}
		it.bad("%s is a number, want a string", attrCheckpoint)
	default:
		it.bad("%s is %s, want a string", attrCheckpoint, typeName(v))
	}
}

// readSwitches reads the owner switches and checks the subsequence
// number, which hotkeyd does not use.
func (it *item) readSwitches(av map[string]types.AttributeValue) {
	switch v := av[attrOwnerSwitches].(type) {
	case nil:
	case *types.AttributeValueMemberN:
		it.switches, _ = strconv.ParseInt(v.Value, 10, 64)
	default:
		it.bad("%s is %s, want a number", attrOwnerSwitches, typeName(v))
	}
	if v, present := av[attrSubSequence]; present {
		if _, isN := v.(*types.AttributeValueMemberN); !isN {
			it.bad("%s is %s, want a number", attrSubSequence, typeName(v))
		}
	}
}

// readParents reads the shard's parents, a string set.
func (it *item) readParents(av types.AttributeValue) {
	switch v := av.(type) {
	case nil:
	case *types.AttributeValueMemberSS:
		it.shard.Parents = v.Value
	case *types.AttributeValueMemberS:
		it.shard.Parents = []string{v.Value}
		it.bad("%s is a string, want a string set", attrParents)
	case *types.AttributeValueMemberL:
		for _, e := range v.Value {
			if s, isS := e.(*types.AttributeValueMemberS); isS {
				it.shard.Parents = append(it.shard.Parents, s.Value)
			}
		}
		it.bad("%s is a list, want a string set", attrParents)
	default:
		it.bad("%s is %s, want a string set", attrParents, typeName(v))
	}
}

// validCheckpoint returns cp if it is a checkpoint a reader can start from
// (a sentinel or a decimal sequence number), else "". AT_TIMESTAMP, which
// DynamoDB Streams cannot start from, becomes TrimHorizon.
func validCheckpoint(cp string) string {
	switch cp {
	case TrimHorizon, Latest, ShardEnd:
		return cp
	case atTimestamp:
		return TrimHorizon
	}
	if cp == "" || len(cp) > 64 {
		return ""
	}
	for i := 0; i < len(cp); i++ {
		if cp[i] < '0' || cp[i] > '9' {
			return ""
		}
	}
	return cp
}

// typeName names a DynamoDB attribute type as the API does (S, N, SS...).
func typeName(v types.AttributeValue) string {
	switch v.(type) {
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return "N"
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberL:
		return "L"
	case *types.AttributeValueMemberM:
		return "M"
	}
	return fmt.Sprintf("%T", v)
}

// describe returns a short text form of a scalar attribute, for owners
// written with the wrong type.
func describe(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberN:
		return v.Value
	case *types.AttributeValueMemberBOOL:
		return strconv.FormatBool(v.Value)
	}
	return "<" + typeName(v) + ">"
}

// sameValue reports whether two stored counters are the same value of the
// same type (both missing counts as the same).
func sameValue(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	}
	// Any other type: compare the text forms.
	return b != nil && typeName(a) == typeName(b) && fmt.Sprint(a) == fmt.Sprint(b)
}

// number returns a DynamoDB number attribute.
func number(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// str returns a DynamoDB string attribute.
func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

// newItem returns the attributes of a new, unowned lease, the way the KCL
// creates one.
func newItem(s Shard, checkpoint string) map[string]types.AttributeValue {
	av := map[string]types.AttributeValue{
		attrKey:           str(s.Key()),
		attrCounter:       number(0),
		attrCheckpoint:    str(checkpoint),
		attrSubSequence:   number(0),
		attrOwnerSwitches: number(0),
		attrStream:        str(s.Stream),
		attrShard:         str(s.ID),
		attrEntityType:    str(entityLease),
	}
	if len(s.Parents) > 0 {
		av[attrParents] = &types.AttributeValueMemberSS{Value: s.Parents}
	}
	return av
}

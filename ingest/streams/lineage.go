package streams

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
)

// shardInfo is what the reader keeps of a DescribeStream shard.
type shardInfo struct {
	id     string
	parent string
	// closed is true when the shard has an EndingSequenceNumber: DynamoDB
	// writes no more records to it, and reading reaches its end.
	closed bool
}

func shardInfos(shards []types.Shard) []shardInfo {
	out := make([]shardInfo, 0, len(shards))
	for _, s := range shards {
		if s.ShardId == nil {
			continue
		}
		si := shardInfo{id: *s.ShardId}
		if s.ParentShardId != nil {
			si.parent = *s.ParentShardId
		}
		if r := s.SequenceNumberRange; r != nil && r.EndingSequenceNumber != nil {
			si.closed = true
		}
		out = append(out, si)
	}
	return out
}

// readyShards returns, in listing order, the shards that may start now: not
// finished, not running, and whose parent is finished or no longer listed
// (trimmed away after 24 hours). A child therefore starts only once every
// record of its parent was read, so that a key's writes are counted in the
// order DynamoDB made them, as the Kinesis Client Library does.
func readyShards(list []shardInfo, finished func(id string) bool, running map[string]bool) []shardInfo {
	return shards.Ready(list, func(s shardInfo) string { return s.id },
		func(s shardInfo) []string { return []string{s.parent} }, finished, running)
}

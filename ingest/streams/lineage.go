package streams

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
)

// shardInfos returns the shards of a DescribeStream listing. A DynamoDB
// Streams shard has one parent at most; it is closed once it has an
// EndingSequenceNumber: DynamoDB writes no more records to it, and
// reading reaches its end.
func shardInfos(list []types.Shard) []shards.Shard {
	out := make([]shards.Shard, 0, len(list))
	for _, s := range list {
		if s.ShardId == nil {
			continue
		}
		si := shards.Shard{ID: *s.ShardId}
		if s.ParentShardId != nil && *s.ParentShardId != "" {
			si.Parents = []string{*s.ParentShardId}
		}
		if r := s.SequenceNumberRange; r != nil && r.EndingSequenceNumber != nil {
			si.Closed = true
		}
		out = append(out, si)
	}
	return out
}

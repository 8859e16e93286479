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
	return shards.ShardsOf(list, func(s *types.Shard) shards.Listed {
		l := shards.Listed{ID: s.ShardId, Parents: []*string{s.ParentShardId}}
		if r := s.SequenceNumberRange; r != nil {
			l.End = r.EndingSequenceNumber
		}
		return l
	})
}

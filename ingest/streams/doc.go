// Package streams reads DynamoDB Streams and turns every stream record into
// a write Event for its table and partition key, the way the Kinesis Client
// Library reads a stream: shards are discovered with DescribeStream and read
// parents before children, every shard is checkpointed to a file so that a
// restart resumes after the last record read, and every AWS error has its own
// recovery (expired iterators are re-acquired, trimmed data is skipped and
// counted, throttling backs off with jitter, a re-enabled stream is found
// again through DescribeTable).
package streams

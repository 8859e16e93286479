package streams

import "github.com/hotkeyd/hotkeyd/ingest/internal/shards"

// checkpoint is what is kept per shard (package shards keeps the files):
// the sequence number of the last record handed to the sink, and whether
// the shard was read to its end.
type checkpoint = shards.Checkpoint

// Package lease shares the shards of one or more streams among the workers
// (hotkeyd replicas) that use the same lease table in DynamoDB, with the
// protocol and the item format of the Kinesis Client Library (KCL), so that
// operators and the KCL's own tooling recognise the table.
//
// One item per shard, keyed by leaseKey = "<stream>:<shard id>" (the KCL's
// multi-stream form: the stream identifier, then the shard id, which never
// holds a colon). Its attributes keep the KCL's names, types and meaning:
// leaseOwner (S), leaseCounter (N), checkpoint (S: a sequence number,
// TRIM_HORIZON, LATEST or SHARD_END), checkpointSubSequenceNumber (N),
// ownerSwitchesSinceCheckpoint (N), parentShardId (SS), streamName (S),
// shardId (S) and entityType (S, "LEASE"). Items whose entityType is
// something else are not leases; they are left alone, so other kinds of
// items (a worker's summary, say) can share the table.
//
// Every take, renewal, checkpoint and release is one conditional UpdateItem
// on leaseCounter, which it increments: whoever wrote last owns the lease,
// and a worker whose write fails its condition knows at once that it lost
// it. A lease expires when its counter has not moved for FailoverTime on
// the observing worker's own clock (wall-clock times in the item are never
// compared across machines). Each round (every FailoverTime/3) a worker
// renews what it holds, scans the table, creates the leases of shards that
// have none, and takes unowned and expired leases up to its fair share,
// ceil(leases / live workers); when none is free and the spread is uneven
// it steals at most one lease, from the busiest worker. A child shard's
// lease is taken only once its parents' checkpoints are SHARD_END, so that
// a key's writes are read in order. On shutdown a reader writes its last
// position and releases its lease in the same write, so that another worker
// takes it within one round.
//
// The package knows nothing of DynamoDB Streams or Kinesis: a reader gives
// it a ShardLister (shards with their parents, qualified by their stream)
// and reads the shards whose leases it holds.
package lease

package streams

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest/lease"
)

// leaseShards returns a listing as the lease coordinator takes it.
func leaseShards(arn string, infos []shardInfo) []lease.Shard {
	out := make([]lease.Shard, 0, len(infos))
	for _, si := range infos {
		s := lease.Shard{Stream: arn, ID: si.id}
		if si.parent != "" {
			s.Parents = []string{si.parent}
		}
		out = append(out, s)
	}
	return out
}

// leaseKey is the lease table's key of a shard of this stream.
func (sr *streamReader) leaseKey(shard string) string {
	return lease.Shard{Stream: sr.arn, ID: shard}.Key()
}

// leaseChanged returns a channel closed when this worker takes or loses a
// lease; nil (never ready) without a lease table.
func (sr *streamReader) leaseChanged() <-chan struct{} {
	if sr.s.coord == nil {
		return nil
	}
	return sr.s.coord.Changed()
}

// listed hands a listing to the lease coordinator and asks for a round, so
// that new shards get their leases at once.
func (sr *streamReader) listed(infos []shardInfo) {
	if sr.s.coord == nil {
		return
	}
	sr.s.book.Set(sr.arn, leaseShards(sr.arn, infos))
	sr.s.coord.Refresh()
}

// leasedShards returns the listed shards this worker holds the lease of and
// reads no reader for yet. Parents come first by construction: the
// coordinator takes a child's lease only once its parents are SHARD_END.
// Called with sr.mu held.
func (sr *streamReader) leasedShards(infos []shardInfo) []shardInfo {
	var out []shardInfo
	for _, si := range infos {
		if sr.running[si.id] || sr.finished[si.id] {
			continue
		}
		if sr.s.coord.Lease(sr.leaseKey(si.id)) != nil {
			out = append(out, si)
		}
	}
	return out
}

// startLeased sets where reading begins from the lease's checkpoint.
func (r *shardReader) startLeased(ctx context.Context) bool {
	switch cp := r.lease.Start(); cp {
	case lease.ShardEnd:
		return false
	case lease.Latest:
		r.startType = types.ShardIteratorTypeLatest
	case lease.TrimHorizon:
		r.startType = types.ShardIteratorTypeTrimHorizon
	default:
		r.lastSeq, r.savedSeq, r.savedAt = cp, cp, r.s.now()
		r.unproven = true
		r.log.Debug("resuming after the lease's checkpoint", zap.String("sequence", cp))
	}
	r.log.Info("reading leased shard", zap.String("checkpoint", r.lease.Start()))
	return ctx.Err() == nil
}

// awaitLease returns nil when the batch read may be handed on: the lease is
// still this worker's. When it was lost the reader stops and the batch is
// dropped: the new owner reads it again from the last checkpoint. While the
// lease table cannot be written the lease may run out; the reader then
// waits here rather than read on.
func (r *shardReader) awaitLease(ctx context.Context) error {
	if r.lease == nil {
		return nil
	}
	err := r.lease.WaitValid(ctx)
	if errors.Is(err, lease.ErrLost) {
		r.lost = true
	}
	return err
}

// saveLeased writes the checkpoint into the lease, retrying until it is
// written, the lease is lost or ctx is done: the reader reads no further
// than one checkpoint interval past its last saved position, so a reader
// that must stop (crash, lost lease) leaves at most that much to be read
// twice.
func (r *shardReader) saveLeased(ctx context.Context, seq string) bool {
	for {
		err := r.lease.Checkpoint(ctx, seq)
		switch {
		case err == nil:
			r.savedSeq, r.savedAt = seq, r.s.now()
			return true
		case errors.Is(err, lease.ErrLost):
			r.lost = true
			return false
		case ctx.Err() != nil:
			return false
		}
		r.s.rep.Error(SourceName, lease.Reason, err)
		if !sleep(ctx, r.bo.Duration()) {
			return false
		}
	}
}

// finishLeased marks the lease SHARD_END, retrying like saveLeased.
func (r *shardReader) finishLeased(ctx context.Context) bool {
	for {
		err := r.lease.Finish(ctx)
		switch {
		case err == nil:
			return true
		case errors.Is(err, lease.ErrLost):
			r.lost = true
			return false
		case ctx.Err() != nil:
			return false
		}
		r.s.rep.Error(SourceName, lease.Reason, err)
		if !sleep(ctx, r.bo.Duration()) {
			return false
		}
	}
}

// releaseLeased gives the lease up with the last position read, in one
// write, when the reader stops before the shard's end: another worker takes
// it at its next round and reads on from there, so nothing is read twice.
func (r *shardReader) releaseLeased() {
	if r.lost {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.s.cfg.CallTimeout)
	defer cancel()
	seq := r.lastSeq
	if seq == r.savedSeq {
		seq = ""
	}
	if err := r.lease.Release(ctx, seq); err != nil && !errors.Is(err, lease.ErrLost) {
		r.s.rep.Error(SourceName, lease.Reason, err)
		r.log.Warn("could not release the lease; another worker takes it once it expires", zap.Error(err))
	}
}

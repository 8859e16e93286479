package kinesis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/jpillora/backoff"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
	"github.com/hotkeyd/hotkeyd/ingest/lease"
	"github.com/hotkeyd/hotkeyd/ingest/streams"
)

// shardReader reads one shard from its checkpoint (or start position) to
// its end: fetch a batch, emit it, checkpoint, pause; each error has its
// recovery.
type shardReader struct {
	s     *Source
	sr    *streamReader
	shard shardInfo
	log   *zap.Logger
	bo    *backoff.Backoff

	iter      *string
	startType types.ShardIteratorType // while no record was read
	lastSeq   string                  // the last record handed on
	savedSeq  string                  // the position checkpointed
	savedAt   time.Time
	callAt    time.Time

	// With a lease table: the shard's lease; lost once another worker
	// took it.
	lease *lease.Lease
	lost  bool
	ended bool
}

func (sr *streamReader) newShardReader(si shardInfo, l *lease.Lease) *shardReader {
	return &shardReader{
		s: sr.s, sr: sr, shard: si, lease: l,
		log: sr.log.With(zap.String("shard", si.id)),
		bo:  shards.NewBackoff(100*time.Millisecond, sr.s.cfg.MaxBackoff),
	}
}

// run reads the shard to its end (true), or until ctx is done, the shard
// is gone or its lease lost (false); the position is saved on the way out.
func (r *shardReader) run(ctx context.Context) bool {
	if !r.start(ctx) {
		return false
	}
	if r.startType == types.ShardIteratorTypeLatest && r.shard.closed {
		return r.finish(ctx) // a closed shard has nothing new to come
	}
	defer r.stop()
	if !r.position(ctx) {
		return false
	}
	for ctx.Err() == nil {
		out, err := r.fetch(ctx)
		if err != nil {
			if !r.recover(ctx, err) {
				return false
			}
			continue
		}
		if r.lease != nil {
			if err := r.lease.WaitValid(ctx); err != nil {
				r.lost = errors.Is(err, lease.ErrLost)
				return false
			}
		}
		if !r.emit(ctx, out) {
			return false
		}
		if out.NextShardIterator == nil {
			return r.finish(ctx)
		}
		r.iter = out.NextShardIterator
		if !r.checkpoint(ctx, len(out.Records) == 0) {
			return false
		}
		r.pause(ctx, len(out.Records))
	}
	return false
}

// start decides where reading begins: the lease's or the file's
// checkpoint, else the start position for the shards there at the first
// listing of a new stream, else the shard's first record.
func (r *shardReader) start(ctx context.Context) bool {
	if r.lease != nil {
		switch cp := r.lease.Start(); cp {
		case lease.ShardEnd:
			return false
		case lease.Latest:
			r.startType = types.ShardIteratorTypeLatest
		case lease.TrimHorizon:
			r.startType = types.ShardIteratorTypeTrimHorizon
		default:
			r.lastSeq, r.savedSeq, r.savedAt = cp, cp, r.s.now()
		}
		r.log.Info("reading leased shard", zap.String("checkpoint", r.lease.Start()))
		return ctx.Err() == nil
	}
	cp, ok, err := r.s.cps.Load(r.sr.arn, r.shard.id)
	switch {
	case err != nil:
		r.s.rep.Error(SourceName, ReasonCheckpoint, err)
		r.log.Error("unusable checkpoint, moved aside; reading the shard from its first record", zap.Error(err))
		if qerr := r.s.cps.Quarantine(r.sr.arn, r.shard.id); qerr != nil {
			r.s.rep.Error(SourceName, ReasonCheckpoint, qerr)
		}
		r.startType = types.ShardIteratorTypeTrimHorizon
	case ok && cp.Finished:
		return false
	case ok:
		r.lastSeq, r.savedSeq, r.savedAt = cp.Sequence, cp.Sequence, r.s.now()
	case r.sr.fresh && r.sr.initial[r.shard.id] && r.s.cfg.Start == StartLatest:
		r.startType = types.ShardIteratorTypeLatest
	default:
		r.startType = types.ShardIteratorTypeTrimHorizon
	}
	return ctx.Err() == nil
}

// position gets an iterator after the last record read, or at the start
// position, retrying until it succeeds, ctx is done or the shard is gone.
func (r *shardReader) position(ctx context.Context) bool {
	for {
		in := &kinesis.GetShardIteratorInput{
			StreamName:        aws.String(r.sr.name),
			ShardId:           aws.String(r.shard.id),
			ShardIteratorType: r.startType,
		}
		if r.lastSeq != "" {
			in.ShardIteratorType = types.ShardIteratorTypeAfterSequenceNumber
			in.StartingSequenceNumber = aws.String(r.lastSeq)
		}
		cctx, cancel := context.WithTimeout(ctx, r.s.cfg.CallTimeout)
		out, err := r.s.api.GetShardIterator(cctx, in)
		cancel()
		if err == nil && out.ShardIterator != nil {
			r.iter = out.ShardIterator
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if err == nil {
			err = errors.New("no shard iterator in the answer")
		}
		err = fmt.Errorf("get %s iterator for shard %q of stream %q: %w", in.ShardIteratorType, r.shard.id, r.sr.name, err)
		reason := classify(err)
		r.s.rep.Error(SourceName, reason, err)
		if reason == ReasonNotFound || reason == ReasonNetwork {
			r.s.setHealth(r.sr.key, err)
		}
		if reason == ReasonNotFound || !shards.Sleep(ctx, r.bo.Duration()) {
			return false
		}
	}
}

// fetch calls GetRecords once.
func (r *shardReader) fetch(ctx context.Context) (*kinesis.GetRecordsOutput, error) {
	r.callAt = time.Now()
	r.s.m.calls.WithLabelValues(r.sr.name).Inc()
	cctx, cancel := context.WithTimeout(ctx, r.s.cfg.CallTimeout)
	defer cancel()
	out, err := r.s.api.GetRecords(cctx, &kinesis.GetRecordsInput{ShardIterator: r.iter, Limit: aws.Int32(r.s.cfg.BatchLimit)})
	if err != nil {
		return nil, fmt.Errorf("get records from shard %q of stream %q: %w", r.shard.id, r.sr.name, err)
	}
	r.bo.Reset()
	r.s.setHealth(r.sr.key, nil)
	return out, nil
}

// recover handles a GetRecords error and reports whether to go on.
func (r *shardReader) recover(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	reason := classify(err)
	r.s.rep.Error(SourceName, reason, err)
	switch reason {
	case ReasonExpiredIterator:
		// Iterators live 5 minutes; the position is still good.
		return r.position(ctx)
	case ReasonThrottled:
		// The iterator stays valid while we wait.
		return shards.Sleep(ctx, r.bo.Duration())
	case ReasonNotFound:
		r.s.setHealth(r.sr.key, err)
		return false
	case ReasonNetwork:
		r.s.setHealth(r.sr.key, err)
		return shards.Sleep(ctx, r.bo.Duration())
	}
	// Anything else: wait, then take a new iterator after the last record.
	return shards.Sleep(ctx, r.bo.Duration()) && r.position(ctx)
}

// emit decodes the batch's records and hands their writes to the sink. It
// returns false when the sink refused them (the pipeline is stopping); the
// position then stays before the batch.
func (r *shardReader) emit(ctx context.Context, out *kinesis.GetRecordsOutput) bool {
	m, stream := r.s.m, r.sr.name
	if out.MillisBehindLatest != nil {
		m.behind.WithLabelValues(stream, r.shard.id).Set(float64(*out.MillisBehindLatest))
	}
	if len(out.Records) == 0 {
		return true
	}
	batch := make([]ingest.Event, 0, len(out.Records))
	var ttl, dup uint64
	where := "stream " + stream + " shard " + r.shard.id + " sequence "
	for i := range out.Records {
		rec := &out.Records[i]
		// Events carry no shard: a Kinesis shard holds a hash range of
		// the records, not one of the table's partitions.
		var st streams.DumpStats
		batch, st = r.s.records.DecodeRecord(rec.Data, where+aws.ToString(rec.SequenceNumber), batch)
		ttl += st.TTLDeletes
		dup += st.Duplicates
	}
	if len(batch) > 0 {
		if err := r.sr.sink.Put(ctx, batch); err != nil {
			return false
		}
	}
	m.records.WithLabelValues(stream).Add(float64(len(out.Records)))
	m.ttlDeletes.WithLabelValues(stream).Add(float64(ttl))
	m.duplicates.WithLabelValues(stream).Add(float64(dup))
	// A copy: the record's strings live as long as the batch.
	r.lastSeq = strings.Clone(aws.ToString(out.Records[len(out.Records)-1].SequenceNumber))
	return true
}

// checkpoint saves the position if it moved: into the lease after every
// batch, into the file at most every CheckpointInterval unless now is set
// (an idle shard). It returns false when the lease was lost.
func (r *shardReader) checkpoint(ctx context.Context, now bool) bool {
	if r.lastSeq == "" || r.lastSeq == r.savedSeq {
		return true
	}
	if r.lease != nil {
		return r.leaseWrite(ctx, func(ctx context.Context) error { return r.lease.Checkpoint(ctx, r.lastSeq) })
	}
	t := r.s.now()
	if !now && t.Sub(r.savedAt) < r.s.cfg.CheckpointInterval {
		return true
	}
	r.save(shards.Checkpoint{StreamARN: r.sr.arn, ShardID: r.shard.id, Sequence: r.lastSeq, Updated: t.UTC()})
	return true
}

func (r *shardReader) save(cp shards.Checkpoint) {
	if err := r.s.cps.Save(cp); err != nil {
		r.s.rep.Error(SourceName, ReasonCheckpoint, err)
		return
	}
	r.savedSeq, r.savedAt = cp.Sequence, cp.Updated
}

// leaseWrite writes the lease until it succeeds, the lease is lost (false)
// or ctx is done (false).
func (r *shardReader) leaseWrite(ctx context.Context, write func(context.Context) error) bool {
	for {
		err := write(ctx)
		switch {
		case err == nil:
			r.savedSeq, r.savedAt = r.lastSeq, r.s.now()
			return true
		case errors.Is(err, lease.ErrLost):
			r.lost = true
			return false
		case ctx.Err() != nil:
			return false
		}
		r.s.rep.Error(SourceName, lease.Reason, err)
		if !shards.Sleep(ctx, r.bo.Duration()) {
			return false
		}
	}
}

// finish marks the shard read to its end, so that its children start and
// no restart reads it again.
func (r *shardReader) finish(ctx context.Context) bool {
	if r.lease != nil {
		if !r.leaseWrite(ctx, r.lease.Finish) {
			return false
		}
	} else {
		r.save(shards.Checkpoint{StreamARN: r.sr.arn, ShardID: r.shard.id, Sequence: r.lastSeq, Finished: true, Updated: r.s.now().UTC()})
	}
	r.ended = true
	r.s.m.behind.DeleteLabelValues(r.sr.name, r.shard.id)
	r.log.Info("shard finished")
	return true
}

// stop saves the position when the reader stops before the shard's end:
// into the checkpoint file, or into the lease as it is released, so that
// the next owner reads on from there with nothing read twice.
func (r *shardReader) stop() {
	if r.lease == nil {
		r.checkpoint(context.Background(), true)
		return
	}
	if r.ended || r.lost {
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
	r.s.m.behind.DeleteLabelValues(r.sr.name, r.shard.id)
}

// pause waits before the next GetRecords call: PollInterval after the last
// call began, but not at all after a full batch (a backlog).
func (r *shardReader) pause(ctx context.Context, n int) {
	if n >= int(r.s.cfg.BatchLimit) {
		return
	}
	shards.Sleep(ctx, r.s.cfg.PollInterval-time.Since(r.callAt))
}

package streams

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/jpillora/backoff"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
	"github.com/hotkeyd/hotkeyd/ingest/lease"
)

// shardReader reads one shard from its checkpoint (or its start position)
// to its end. Its loop is: fetch a batch, emit it to the sink, checkpoint,
// pause; every error has its own recovery step.
type shardReader struct {
	s     *Source
	sr    *streamReader
	shard shardInfo
	log   *zap.Logger

	iter      *string
	startType types.ShardIteratorType // position used while no record was read
	lastSeq   string                  // sequence number of the last record handed to the sink
	savedSeq  string                  // sequence number in the checkpoint file
	savedAt   time.Time
	idleWait  time.Duration
	callAt    time.Time
	bo        *backoff.Backoff
	// unproven is set while the position is a checkpoint no iterator was
	// taken at yet: an error there may be the checkpoint's (impossible).
	unproven bool
	failures int // GetShardIterator errors in a row at an unproven position

	// With a lease table: the shard's lease; lost once another worker took
	// it, ended once the shard was finished.
	lease *lease.Lease
	lost  bool
	ended bool
}

func (sr *streamReader) newShardReader(si shardInfo, l *lease.Lease) *shardReader {
	return &shardReader{
		s: sr.s, sr: sr, shard: si, lease: l,
		log: sr.log.With(zap.String("table", sr.table), zap.String("shard", si.id)),
		bo:  newBackoff(100*time.Millisecond, sr.s.cfg.MaxBackoff),
	}
}

// run reads the shard until its end (true) or until ctx is done, the shard
// cannot be found or its lease was lost (false). The last position read is
// checkpointed on the way out; a lease is released with it.
func (r *shardReader) run(ctx context.Context) (finished bool) {
	if !r.start(ctx) {
		return false
	}
	if r.startType == types.ShardIteratorTypeLatest && r.shard.closed {
		// A closed shard has no "latest": nothing new will come.
		return r.finish(ctx)
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
		if r.awaitLease(ctx) != nil {
			return false
		}
		if !r.emit(ctx, out.Records) {
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

// stop saves the position when the reader stops before the shard's end:
// into the checkpoint file, or into the lease as it is released.
func (r *shardReader) stop() {
	if r.lease == nil {
		r.checkpoint(context.Background(), true)
		return
	}
	if r.ended {
		return
	}
	r.releaseLeased()
	// The shard is read elsewhere now (or after a restart).
	r.s.m.iteratorAge.DeleteLabelValues(r.sr.table, r.shard.id)
}

// start reads the checkpoint and decides where reading begins. A corrupt
// checkpoint is reported (naming the file), moved aside as <file>.corrupt,
// and the shard starts as if new: for a stream read before that is its
// first record (TRIM_HORIZON), so nothing is lost and at most the shard's
// retained records are counted again.
func (r *shardReader) start(ctx context.Context) bool {
	if r.lease != nil {
		return r.startLeased(ctx)
	}
	cp, ok, err := r.s.cps.Load(r.sr.arn, r.shard.id)
	if err != nil {
		r.s.rep.Error(SourceName, ReasonCheckpoint, err)
		r.log.Error("unusable checkpoint, moved aside; reading the shard from its first record", zap.Error(err))
		if qerr := r.s.cps.Quarantine(r.sr.arn, r.shard.id); qerr != nil {
			r.s.rep.Error(SourceName, ReasonCheckpoint, qerr)
		}
		ok = false
		r.startType = types.ShardIteratorTypeTrimHorizon
		return ctx.Err() == nil
	}
	switch {
	case ok && cp.Finished:
		return false
	case ok:
		r.lastSeq, r.savedSeq, r.savedAt = cp.Sequence, cp.Sequence, r.s.now()
		r.unproven = true
		r.log.Debug("resuming after checkpoint", zap.String("sequence", cp.Sequence))
	case r.sr.fresh && r.sr.initial[r.shard.id] && r.s.cfg.Start == StartLatest:
		r.startType = types.ShardIteratorTypeLatest
	default:
		r.startType = types.ShardIteratorTypeTrimHorizon
	}
	return ctx.Err() == nil
}

// position acquires an iterator for where reading stands: after the last
// record read, or at the start position. It retries until it succeeds, ctx
// is done (false) or the shard is not found (false).
func (r *shardReader) position(ctx context.Context) bool {
	for {
		in := &dynamodbstreams.GetShardIteratorInput{
			StreamArn:         aws.String(r.sr.arn),
			ShardId:           aws.String(r.shard.id),
			ShardIteratorType: r.startType,
		}
		if r.lastSeq != "" {
			in.ShardIteratorType = types.ShardIteratorTypeAfterSequenceNumber
			in.SequenceNumber = aws.String(r.lastSeq)
		}
		cctx, cancel := context.WithTimeout(ctx, r.s.cfg.CallTimeout)
		out, err := r.s.streams.GetShardIterator(cctx, in)
		cancel()
		if err == nil && out.ShardIterator != nil {
			r.iter = out.ShardIterator
			r.unproven, r.failures = false, 0
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if err == nil {
			err = errors.New("no shard iterator in the answer")
		}
		err = fmt.Errorf("get %s iterator for shard %q of stream %q: %w", in.ShardIteratorType, r.shard.id, r.sr.arn, err)
		if r.unproven && r.impossible(ctx, err) {
			r.dropCheckpoint(ctx, err)
			continue
		}
		reason := classify(err)
		if reason == ReasonTrimmed && r.atHorizon() {
			if !sleep(ctx, r.bo.Duration()) {
				return false
			}
			continue
		}
		r.s.rep.Error(SourceName, reason, err)
		switch reason {
		case ReasonTrimmed:
			r.skipTrimmed(err)
			continue
		case ReasonNotFound:
			r.s.health.set(r.sr.key, err)
			return false
		case ReasonNetwork:
			r.s.health.set(r.sr.key, err)
		}
		if !sleep(ctx, r.bo.Duration()) {
			return false
		}
	}
}

// impossibleAfter is how many answers of the service refusing an
// iterator at a checkpoint, other than a ValidationException, make the
// reader ask whether the shard answers at its start (impossible).
const impossibleAfter = 3

// impossible reports whether err, the failure to take an iterator at the
// checkpoint's position, is the checkpoint's: DynamoDB refused the
// sequence number (ValidationException: not a sequence number, or not one
// of this shard), or it answered with an error impossibleAfter times
// while the same shard answers at its first record (DynamoDB Local fails
// a sequence number past the shard's end with InternalFailure). A
// checkpoint valid as JSON but impossible as a position is then corrupt,
// as an unparsable file is, rather than retried forever.
//
// Failures that are not an answer about the request (the endpoint out of
// reach, throttling, a stream gone) are never taken for the checkpoint's:
// reading a shard again from its first record counts up to a day of its
// records once more, so that is done only on the service's word.
func (r *shardReader) impossible(ctx context.Context, err error) bool {
	if isValidation(err) {
		return true
	}
	if classify(err) != ReasonAPI {
		return false
	}
	if r.failures++; r.failures < impossibleAfter {
		return false
	}
	r.failures = 0
	cctx, cancel := context.WithTimeout(ctx, r.s.cfg.CallTimeout)
	defer cancel()
	out, herr := r.s.streams.GetShardIterator(cctx, &dynamodbstreams.GetShardIteratorInput{
		StreamArn:         aws.String(r.sr.arn),
		ShardId:           aws.String(r.shard.id),
		ShardIteratorType: types.ShardIteratorTypeTrimHorizon,
	})
	return herr == nil && out.ShardIterator != nil
}

// dropCheckpoint gives up a checkpoint that is no position of the shard:
// it is reported and logged, the file moved aside as a corrupt one is
// (or the lease's checkpoint set back to the shard's start), and the shard
// is read from its first record, so that nothing is lost and at most the
// shard's retained records are counted again.
func (r *shardReader) dropCheckpoint(ctx context.Context, err error) {
	seq := r.lastSeq
	cerr := fmt.Errorf("%w in lease %q: sequence number %q is no position of the shard: %w", shards.ErrCorrupt, r.sr.leaseKey(r.shard.id), seq, err)
	if r.lease == nil {
		cerr = fmt.Errorf("%w %q: sequence number %q is no position of the shard: %w", shards.ErrCorrupt, r.s.cps.Path(r.sr.arn, r.shard.id), seq, err)
	}
	r.s.rep.Error(SourceName, ReasonCheckpoint, cerr)
	r.log.Error("unusable checkpoint, moved aside; reading the shard from its first record", zap.Error(cerr))
	r.lastSeq, r.savedSeq, r.unproven = "", "", false
	r.startType = types.ShardIteratorTypeTrimHorizon
	if r.lease != nil {
		r.saveLeased(ctx, lease.TrimHorizon)
		return
	}
	if qerr := r.s.cps.Quarantine(r.sr.arn, r.shard.id); qerr != nil {
		r.s.rep.Error(SourceName, ReasonCheckpoint, qerr)
	}
}

// atHorizon reports whether no record was read yet and reading starts at
// the oldest record, so that a trimmed-data error cannot mean a gap.
func (r *shardReader) atHorizon() bool {
	return r.lastSeq == "" && r.startType == types.ShardIteratorTypeTrimHorizon
}

// skipTrimmed moves the position to the oldest record the shard still holds:
// the records after the checkpoint were trimmed (older than 24 hours) before
// they could be read. The gap is counted and logged.
func (r *shardReader) skipTrimmed(err error) {
	r.s.m.gaps.WithLabelValues(r.sr.table).Inc()
	r.log.Warn("records were trimmed before they were read; skipping to the oldest record left",
		zap.String("after_sequence", r.lastSeq), zap.Error(err))
	r.lastSeq = ""
	r.startType = types.ShardIteratorTypeTrimHorizon
}

// fetch calls GetRecords once.
func (r *shardReader) fetch(ctx context.Context) (*dynamodbstreams.GetRecordsOutput, error) {
	r.callAt = time.Now()
	r.s.m.calls.WithLabelValues(r.sr.table).Inc()
	cctx, cancel := context.WithTimeout(ctx, r.s.cfg.CallTimeout)
	defer cancel()
	var opts []func(*dynamodbstreams.Options)
	if !r.s.cfg.SDKDecode {
		opts = append(opts, withFastGetRecords)
	}
	out, err := r.s.streams.GetRecords(cctx, &dynamodbstreams.GetRecordsInput{
		ShardIterator: r.iter,
		Limit:         aws.Int32(r.s.cfg.BatchLimit),
	}, opts...)
	if err != nil {
		return nil, fmt.Errorf("get records from shard %q of stream %q: %w", r.shard.id, r.sr.arn, err)
	}
	r.bo.Reset()
	r.s.health.set(r.sr.key, nil)
	return out, nil
}

// recover handles a GetRecords error and reports whether to go on.
func (r *shardReader) recover(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	reason := classify(err)
	if reason == ReasonTrimmed && r.atHorizon() {
		// Nothing was read yet and reading began at the oldest record, so
		// nothing can have been skipped: DynamoDB Local answers so for an
		// iterator taken while the shard was still empty.
		return r.position(ctx)
	}
	r.s.rep.Error(SourceName, reason, err)
	switch reason {
	case ReasonExpiredIterator:
		// Iterators live 15 minutes; the checkpoint position is still good.
		return r.position(ctx)
	case ReasonTrimmed:
		r.skipTrimmed(err)
		return r.position(ctx)
	case ReasonThrottled:
		// Keep the iterator: it stays valid while we wait.
		return sleep(ctx, r.bo.Duration())
	case ReasonNotFound:
		r.s.health.set(r.sr.key, err)
		return false
	case ReasonNetwork:
		r.s.health.set(r.sr.key, err)
		return sleep(ctx, r.bo.Duration())
	}
	// Anything else (e.g. an iterator the endpoint no longer knows after a
	// restart): wait, then re-acquire from the last record read.
	if !sleep(ctx, r.bo.Duration()) {
		return false
	}
	return r.position(ctx)
}

// emit maps the records to Events and hands them to the sink in one batch.
// It returns false when the sink refused the batch (the pipeline is
// stopping); the position then stays before the batch.
func (r *shardReader) emit(ctx context.Context, recs []types.Record) bool {
	m := r.s.m
	table := r.sr.table
	if len(recs) == 0 {
		m.iteratorAge.WithLabelValues(table, r.shard.id).Set(0)
		return true
	}
	batch := make([]ingest.Event, 0, len(recs))
	var ttl int
	now := r.s.now()
	for i := range recs {
		var ev ingest.Event
		kind, reason, err := mapRecord(&recs[i], table, r.shard.id, r.sr.ks, &ev)
		switch kind {
		case kindWrite:
			if ev.Time.IsZero() {
				ev.Time = now
			}
			batch = append(batch, ev)
		case kindTTLDelete:
			ttl++
		case kindRejected:
			err = quoteBadNumber(err, ingest.MaskerOf(r.s.rep))
			r.s.rep.Reject(SourceName, reason, fmt.Errorf("record %s of shard %q: %w", aws.ToString(recs[i].EventID), r.shard.id, err))
		}
	}
	if len(batch) > 0 {
		if err := r.s.sinkPut(ctx, r.sr.sink, batch); err != nil {
			return false
		}
	}
	m.records.WithLabelValues(table).Add(float64(len(recs)))
	if ttl > 0 {
		m.ttlDeletes.WithLabelValues(table).Add(float64(ttl))
	}
	last := recs[len(recs)-1].Dynamodb
	if last != nil {
		// A copy: the decoder's strings share blocks (see strArena).
		r.lastSeq = strings.Clone(aws.ToString(last.SequenceNumber))
		if last.ApproximateCreationDateTime != nil {
			m.iteratorAge.WithLabelValues(table, r.shard.id).Set(max(0, now.Sub(*last.ApproximateCreationDateTime).Seconds()))
		}
	}
	return true
}

// checkpoint saves the position if it moved: into the lease after every
// batch (pause spaces those batches), into the file at most every
// CheckpointInterval unless now is set (idle shard, shutdown). It returns
// false when the reader must stop: its lease was lost, or ctx was done
// while the lease could not be written.
func (r *shardReader) checkpoint(ctx context.Context, now bool) bool {
	if r.lastSeq == "" || r.lastSeq == r.savedSeq {
		return true
	}
	if r.lease != nil {
		return r.saveLeased(ctx, r.lastSeq)
	}
	t := r.s.now()
	if !now && t.Sub(r.savedAt) < r.s.cfg.CheckpointInterval {
		return true
	}
	r.save(checkpoint{StreamARN: r.sr.arn, ShardID: r.shard.id, Sequence: r.lastSeq, Updated: t.UTC()})
	return true
}

func (r *shardReader) save(cp checkpoint) {
	if err := r.s.cps.Save(cp); err != nil {
		r.s.rep.Error(SourceName, ReasonCheckpoint, err)
		return
	}
	r.savedSeq, r.savedAt = cp.Sequence, cp.Updated
}

// finish marks the shard as read to its end, so that no restart reads it
// again and its children may start, and drops its per-shard series.
func (r *shardReader) finish(ctx context.Context) bool {
	if r.lease != nil {
		if !r.finishLeased(ctx) {
			return false
		}
	} else {
		r.save(checkpoint{StreamARN: r.sr.arn, ShardID: r.shard.id, Sequence: r.lastSeq, Finished: true, Updated: r.s.now().UTC()})
	}
	r.ended = true
	r.s.m.iteratorAge.DeleteLabelValues(r.sr.table, r.shard.id)
	r.log.Info("shard finished")
	return true
}

// pause waits before the next GetRecords call: at least MinPollInterval
// after the previous call began (the per-shard call limit), and, while
// reads come back empty, a wait doubling up to IdlePollInterval. A leased
// shard, checkpointed after every batch, is read at most every
// CheckpointInterval while records flow, unless the last batch was full (a
// backlog): one checkpoint write per second per busy shard, and a crash or
// a stolen lease leaves at most the last batch to be read twice. A
// partition takes at most 1000 writes per second, so a second of them fits
// one GetRecords batch.
func (r *shardReader) pause(ctx context.Context, n int) {
	cfg := &r.s.cfg
	wait := cfg.MinPollInterval - time.Since(r.callAt)
	switch {
	case n == 0:
		r.idleWait = min(max(2*r.idleWait, cfg.MinPollInterval), cfg.IdlePollInterval)
		wait = max(wait, r.idleWait)
	case r.lease != nil && n < int(cfg.BatchLimit):
		r.idleWait = 0
		wait = max(wait, cfg.CheckpointInterval-time.Since(r.callAt))
	default:
		r.idleWait = 0
	}
	sleep(ctx, wait)
}

// sinkPut hands a batch to the sink.
func (s *Source) sinkPut(ctx context.Context, sink ingest.Sink, batch []ingest.Event) error {
	return sink.Put(ctx, batch)
}

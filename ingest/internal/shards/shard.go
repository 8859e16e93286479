package shards

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jpillora/backoff"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest/internal/pause"
	"github.com/hotkeyd/hotkeyd/ingest/lease"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// shardReader reads one shard from its checkpoint (or its start position)
// to its end. Its loop is: fetch a batch, emit it to the sink, checkpoint,
// pause; every error has its own recovery step.
type shardReader[B any] struct {
	e     *Engine
	sr    *streamReader[B]
	api   Stream[B]
	shard Shard
	log   *zap.Logger
	bo    *backoff.Backoff
	pacer Pacer

	iter      string
	startType Position // position used while no record was read
	lastSeq   string   // sequence number of the last record handed to the sink
	savedSeq  string   // sequence number checkpointed
	savedAt   time.Time
	callAt    time.Time
	// unproven is set while the position is a checkpoint no iterator was
	// taken at yet: an error there may be the checkpoint's (impossible).
	unproven bool
	failures int // GetShardIterator errors in a row at an unproven position

	// from, while set, leaves out of the batches the events older than it:
	// a shard taken over at LATEST is read from its oldest record for what
	// lies in the window (startLeased). skipped counts the records read
	// meanwhile.
	from    time.Time
	skipped int

	// With a lease table: the shard's lease; lost once another worker took
	// it, ended once the shard was finished.
	lease *lease.Lease
	lost  bool
	ended bool
}

func (sr *streamReader[B]) newShardReader(sh Shard, l *lease.Lease) *shardReader[B] {
	log := sr.spec.Log
	if sr.spec.ShardFields != nil {
		log = log.With(sr.spec.ShardFields()...)
	}
	return &shardReader[B]{
		e: sr.e, sr: sr, api: sr.api, shard: sh, lease: l,
		log:   log.With(zap.String("shard", sh.ID)),
		bo:    NewBackoff(100*time.Millisecond, sr.e.MaxBackoff),
		pacer: sr.e.NewPacer(),
	}
}

// run reads the shard until its end (true) or until ctx is done, the shard
// cannot be found or its lease was lost (false). The last position read is
// checkpointed on the way out; a lease is released with it.
func (r *shardReader[B]) run(ctx context.Context) (finished bool) {
	if !r.start(ctx) {
		return false
	}
	if r.startType == AtLatest && r.shard.Closed {
		// A closed shard has no "latest": nothing new will come.
		return r.finish(ctx)
	}
	defer r.stop()
	// The shard's lane of the source's watermark: busy from here until
	// the first answer says where the shard stands.
	lane := r.e.Progress.Lane(r.e.Source)
	defer lane.Close()
	if !r.position(ctx) {
		return false
	}
	for ctx.Err() == nil {
		b, err := r.fetch(ctx)
		if err != nil {
			if !r.recover(ctx, err) {
				return false
			}
			continue
		}
		if r.awaitLease(ctx) != nil {
			return false
		}
		out, ok := r.api.Emit(ctx, r.shard.ID, b, r.from)
		r.caughtUpFrom(out)
		if out.LagSet {
			r.e.Metrics.setLag(r.sr.spec.label(), r.shard.ID, out.Lag)
		}
		if !ok {
			return false
		}
		if out.Last != "" {
			r.lastSeq = out.Last
		}
		if out.CaughtUp {
			lane.Delivered(out.Newest)
			lane.Idle()
		} else {
			lane.Advance(out.Newest)
		}
		if out.End {
			return r.finish(ctx)
		}
		r.iter = out.Next
		if !r.checkpoint(ctx, out.Records == 0) {
			return false
		}
		pause.For(ctx, r.pacer.Wait(out.Records, time.Since(r.callAt), r.lease != nil))
	}
	return false
}

func (r *shardReader[B]) report(reason string, err error) {
	r.e.Reporter.Error(r.e.Source, reason, err)
}

// stop saves the position when the reader stops before the shard's end:
// into the checkpoint file, or into the lease as it is released.
func (r *shardReader[B]) stop() {
	if r.lease == nil {
		r.checkpoint(context.Background(), true)
		return
	}
	if r.ended {
		return
	}
	r.release()
	// The shard is read elsewhere now (or after a restart).
	r.e.Metrics.forget(r.sr.spec.label(), r.shard.ID)
}

// start reads the checkpoint and decides where reading begins. A corrupt
// checkpoint is reported (naming the file), moved aside as <file>.corrupt,
// and the shard starts as if new: for a stream read before that is its
// first record (TRIM_HORIZON), so nothing is lost and at most the shard's
// retained records are counted again.
func (r *shardReader[B]) start(ctx context.Context) bool {
	if r.lease != nil {
		return r.startLeased(ctx)
	}
	arn, id := r.sr.spec.ARN, r.shard.ID
	cp, ok, err := r.e.Checkpoints.Load(arn, id)
	switch {
	case err != nil:
		r.report(ReasonCheckpoint, err)
		r.log.Error("unusable checkpoint, moved aside; reading the shard from its first record", zap.Error(err))
		if qerr := r.e.Checkpoints.Quarantine(arn, id); qerr != nil {
			r.report(ReasonCheckpoint, qerr)
		}
		r.startType = AtTrimHorizon
	case ok && cp.Finished:
		return false
	case ok:
		r.resume(cp.Sequence)
		r.log.Debug("resuming after checkpoint", zap.String("sequence", cp.Sequence))
	case r.sr.fresh && r.sr.initial[id] && r.e.StartLatest:
		r.startType = AtLatest
	default:
		r.startType = AtTrimHorizon
	}
	return ctx.Err() == nil
}

// startLeased sets where reading begins from the lease's checkpoint.
func (r *shardReader[B]) startLeased(ctx context.Context) bool {
	switch cp := r.lease.Start(); cp {
	case lease.ShardEnd:
		return false
	case lease.Latest:
		if !r.lease.Inherited() {
			r.startType = AtLatest
			break
		}
		// An earlier owner began at LATEST and recorded no position:
		// what was written since may be counted by nobody. Read from the
		// oldest record, leaving out what is older than the window; the
		// event-time windows place the rest at their times.
		r.startType = AtTrimHorizon
		if r.e.CatchUp > 0 {
			r.from = r.e.Now().Add(-r.e.CatchUp)
		}
		r.log.Info("shard taken over at LATEST without a checkpoint; reading it from its oldest record to count what its earlier owner may not have",
			zap.Duration("catch_up", r.e.CatchUp))
	case lease.TrimHorizon:
		r.startType = AtTrimHorizon
	default:
		r.resume(cp)
		r.log.Debug("resuming after the lease's checkpoint", zap.String("sequence", cp))
	}
	r.log.Info("reading leased shard", zap.String("checkpoint", r.lease.Start()))
	return ctx.Err() == nil
}

// caughtUpFrom ends the leaving out of old events once an answer reached
// from: a shard's records come in order of time, so later ones count.
func (r *shardReader[B]) caughtUpFrom(out Emitted) {
	if r.from.IsZero() {
		return
	}
	r.skipped += out.Records
	if out.Newest.Before(r.from) && !out.CaughtUp && !out.End {
		return
	}
	r.log.Info("read up to the window of a shard taken over; counting from here",
		zap.Int("records_read", r.skipped), zap.Time("from", r.from))
	r.from, r.skipped = time.Time{}, 0
}

// Recent leaves out of events, in place, those whose time is before from
// (none when from is zero), and returns the rest.
func Recent(events []traffic.Event, from time.Time) []traffic.Event {
	if from.IsZero() {
		return events
	}
	return slices.DeleteFunc(events, func(ev traffic.Event) bool { return ev.Time.Before(from) })
}

// resume starts after a checkpoint.
func (r *shardReader[B]) resume(seq string) {
	r.lastSeq, r.savedSeq, r.savedAt = seq, seq, r.e.Now()
	r.unproven = r.e.Refused != nil
}

// position acquires an iterator for where reading stands: after the last
// record read, or at the start position. It retries until it succeeds, ctx
// is done (false) or the shard is not found (false).
func (r *shardReader[B]) position(ctx context.Context) bool {
	for {
		pos, seq := r.startType, ""
		if r.lastSeq != "" {
			pos, seq = AfterSequenceNumber, r.lastSeq
		}
		cctx, cancel := context.WithTimeout(ctx, r.e.CallTimeout)
		iter, err := r.api.Iterator(cctx, r.shard.ID, pos, seq)
		cancel()
		if err == nil && iter != "" {
			r.iter = iter
			r.unproven, r.failures = false, 0
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if err == nil {
			err = errors.New("no shard iterator in the answer")
		}
		err = fmt.Errorf("get %s iterator for shard %q of stream %q: %w", pos, r.shard.ID, r.sr.spec.Name, err)
		if r.unproven && r.impossible(ctx, err) {
			r.dropCheckpoint(ctx, err)
			continue
		}
		reason := r.e.Classify(err)
		if reason == ReasonTrimmed && r.atHorizon() {
			if !pause.For(ctx, r.bo.Duration()) {
				return false
			}
			continue
		}
		r.report(reason, err)
		switch reason {
		case ReasonTrimmed:
			r.skipTrimmed(err)
			continue
		case ReasonNotFound:
			r.e.Health.Set(r.sr.spec.Key, err)
			return false
		case ReasonNetwork:
			r.e.Health.Set(r.sr.spec.Key, err)
		}
		if !pause.For(ctx, r.bo.Duration()) {
			return false
		}
	}
}

// impossibleAfter is how many answers of the service refusing an
// iterator at a checkpoint, other than a refusal of the request, make the
// reader ask whether the shard answers at its start (impossible).
const impossibleAfter = 3

// impossible reports whether err, the failure to take an iterator at the
// checkpoint's position, is the checkpoint's: the service refused the
// sequence number (Engine.Refused: not a sequence number, or not one of
// this shard), or it answered with an error impossibleAfter times while
// the same shard answers at its first record (DynamoDB Local fails a
// sequence number past the shard's end with InternalFailure). A
// checkpoint valid as JSON but impossible as a position is then corrupt,
// as an unparsable file is, rather than retried forever.
//
// Failures that are not an answer about the request (the endpoint out of
// reach, throttling, a stream gone) are never taken for the checkpoint's:
// reading a shard again from its first record counts up to a day of its
// records once more, so that is done only on the service's word.
func (r *shardReader[B]) impossible(ctx context.Context, err error) bool {
	if r.e.Refused(err) {
		return true
	}
	if r.e.Classify(err) != ReasonAPI {
		return false
	}
	if r.failures++; r.failures < impossibleAfter {
		return false
	}
	r.failures = 0
	cctx, cancel := context.WithTimeout(ctx, r.e.CallTimeout)
	defer cancel()
	iter, herr := r.api.Iterator(cctx, r.shard.ID, AtTrimHorizon, "")
	return herr == nil && iter != ""
}

// dropCheckpoint gives up a checkpoint that is no position of the shard:
// it is reported and logged, the file moved aside as a corrupt one is
// (or the lease's checkpoint set back to the shard's start), and the shard
// is read from its first record, so that nothing is lost and at most the
// shard's retained records are counted again.
func (r *shardReader[B]) dropCheckpoint(ctx context.Context, err error) {
	arn, id, seq := r.sr.spec.ARN, r.shard.ID, r.lastSeq
	cerr := fmt.Errorf("%w in lease %q: sequence number %q is no position of the shard: %w", ErrCorrupt, leaseKey(arn, id), seq, err)
	if r.lease == nil {
		cerr = fmt.Errorf("%w %q: sequence number %q is no position of the shard: %w", ErrCorrupt, r.e.Checkpoints.Path(arn, id), seq, err)
	}
	r.report(ReasonCheckpoint, cerr)
	r.log.Error("unusable checkpoint, moved aside; reading the shard from its first record", zap.Error(cerr))
	r.lastSeq, r.savedSeq, r.unproven = "", "", false
	r.startType = AtTrimHorizon
	if r.lease != nil {
		r.saveLeased(ctx, lease.TrimHorizon)
		return
	}
	if qerr := r.e.Checkpoints.Quarantine(arn, id); qerr != nil {
		r.report(ReasonCheckpoint, qerr)
	}
}

// atHorizon reports whether no record was read yet and reading starts at
// the oldest record, so that a trimmed-data error cannot mean a gap.
func (r *shardReader[B]) atHorizon() bool {
	return r.lastSeq == "" && r.startType == AtTrimHorizon
}

// skipTrimmed moves the position to the oldest record the shard still
// holds: the records after the checkpoint were trimmed before they could
// be read. The gap is logged; the reader counts it (Gapper).
func (r *shardReader[B]) skipTrimmed(err error) {
	if g, ok := r.api.(Gapper); ok {
		g.Gap()
	}
	r.log.Warn("records were trimmed before they were read; skipping to the oldest record left",
		zap.String("after_sequence", r.lastSeq), zap.Error(err))
	r.lastSeq = ""
	r.startType = AtTrimHorizon
}

// Gapper is implemented by a Stream whose service trims records before
// they are read: Gap counts a gap skipped.
type Gapper interface {
	Gap()
}

// fetch calls GetRecords once.
func (r *shardReader[B]) fetch(ctx context.Context) (B, error) {
	r.callAt = time.Now()
	cctx, cancel := context.WithTimeout(ctx, r.e.CallTimeout)
	defer cancel()
	b, err := r.api.Records(cctx, r.shard.ID, r.iter)
	if err != nil {
		return b, fmt.Errorf("get records from shard %q of stream %q: %w", r.shard.ID, r.sr.spec.Name, err)
	}
	r.bo.Reset()
	r.e.Health.Set(r.sr.spec.Key, nil)
	return b, nil
}

// recover handles a GetRecords error and reports whether to go on.
func (r *shardReader[B]) recover(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	reason := r.e.Classify(err)
	if reason == ReasonTrimmed && r.atHorizon() {
		// Nothing was read yet and reading began at the oldest record, so
		// nothing can have been skipped: DynamoDB Local answers so for an
		// iterator taken while the shard was still empty.
		return r.position(ctx)
	}
	r.report(reason, err)
	switch reason {
	case ReasonExpiredIterator:
		// The checkpoint position is still good.
		return r.position(ctx)
	case ReasonTrimmed:
		r.skipTrimmed(err)
		return r.position(ctx)
	case ReasonThrottled:
		// Keep the iterator: it stays valid while we wait.
		return pause.For(ctx, r.bo.Duration())
	case ReasonNotFound:
		r.e.Health.Set(r.sr.spec.Key, err)
		return false
	case ReasonNetwork:
		r.e.Health.Set(r.sr.spec.Key, err)
		return pause.For(ctx, r.bo.Duration())
	}
	// Anything else (e.g. an iterator the endpoint no longer knows after a
	// restart): wait, then re-acquire from the last record read.
	return pause.For(ctx, r.bo.Duration()) && r.position(ctx)
}

// checkpoint saves the position if it moved: into the lease after every
// batch (the pacer spaces those batches), into the file at most every
// CheckpointInterval unless now is set (idle shard, shutdown). It returns
// false when the reader must stop: its lease was lost, or ctx was done
// while the lease could not be written.
func (r *shardReader[B]) checkpoint(ctx context.Context, now bool) bool {
	if r.lastSeq == "" || r.lastSeq == r.savedSeq {
		return true
	}
	if r.lease != nil {
		return r.saveLeased(ctx, r.lastSeq)
	}
	t := r.e.Now()
	if !now && t.Sub(r.savedAt) < r.e.CheckpointInterval {
		return true
	}
	r.save(Checkpoint{StreamARN: r.sr.spec.ARN, ShardID: r.shard.ID, Sequence: r.lastSeq, Updated: t.UTC()})
	return true
}

func (r *shardReader[B]) save(cp Checkpoint) {
	if err := r.e.Checkpoints.Save(cp); err != nil {
		r.report(ReasonCheckpoint, err)
		return
	}
	r.savedSeq, r.savedAt = cp.Sequence, cp.Updated
}

// finish marks the shard as read to its end, so that no restart reads it
// again and its children may start, and drops its per-shard series.
func (r *shardReader[B]) finish(ctx context.Context) bool {
	if r.lease != nil {
		if !r.leaseWrite(ctx, r.lease.Finish) {
			return false
		}
	} else {
		r.save(Checkpoint{StreamARN: r.sr.spec.ARN, ShardID: r.shard.ID, Sequence: r.lastSeq, Finished: true, Updated: r.e.Now().UTC()})
	}
	r.ended = true
	r.e.Metrics.forget(r.sr.spec.label(), r.shard.ID)
	r.log.Info("shard finished")
	return true
}

// awaitLease returns nil when the batch read may be handed on: the lease is
// still this worker's. When it was lost the reader stops and the batch is
// dropped: the new owner reads it again from the last checkpoint. While the
// lease table cannot be written the lease may run out; the reader then
// waits here rather than read on.
func (r *shardReader[B]) awaitLease(ctx context.Context) error {
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
func (r *shardReader[B]) saveLeased(ctx context.Context, seq string) bool {
	if !r.leaseWrite(ctx, func(ctx context.Context) error { return r.lease.Checkpoint(ctx, seq) }) {
		return false
	}
	r.savedSeq, r.savedAt = seq, r.e.Now()
	return true
}

// leaseWrite writes the lease until it succeeds, the lease is lost (false)
// or ctx is done (false).
func (r *shardReader[B]) leaseWrite(ctx context.Context, write func(context.Context) error) bool {
	for {
		err := write(ctx)
		switch {
		case err == nil:
			return true
		case errors.Is(err, lease.ErrLost):
			r.lost = true
			return false
		case ctx.Err() != nil:
			return false
		}
		r.report(lease.Reason, err)
		if !pause.For(ctx, r.bo.Duration()) {
			return false
		}
	}
}

// release gives the lease up with the last position read, in one write,
// when the reader stops before the shard's end: another worker takes it at
// its next round and reads on from there, so nothing is read twice.
func (r *shardReader[B]) release() {
	if r.lost {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.e.CallTimeout)
	defer cancel()
	seq := r.lastSeq
	if seq == r.savedSeq {
		seq = ""
	}
	if err := r.lease.Release(ctx, seq); err != nil && !errors.Is(err, lease.ErrLost) {
		r.report(lease.Reason, err)
		r.log.Warn("could not release the lease; another worker takes it once it expires", zap.Error(err))
	}
}

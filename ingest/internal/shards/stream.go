package shards

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jpillora/backoff"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest/internal/pause"
	"github.com/hotkeyd/hotkeyd/ingest/lease"
)

// StreamSpec names one stream for the engine.
type StreamSpec struct {
	// ARN keys the stream's checkpoints and leases.
	ARN string
	// Name names the stream in error messages.
	Name string
	// Key is the stream's key in Health: the stream or table as
	// configured.
	Key string
	// Label returns the value of the stream label of the engine's series
	// (MetricOpts.StreamLabel): the table, or the stream's name. It is
	// called at every use, from the stream's loop and its shards' (the
	// Streams reader learns the table of a stream given by ARN from its
	// first listing); nil means Key.
	Label func() string
	// Log carries the stream's fields.
	Log *zap.Logger
	// ShardFields, when set, gives the fields a shard reader's log adds to
	// Log besides the shard (called as the shard reader starts).
	ShardFields func() []zap.Field
	// OnGone, when set, is told that the stream was not found; the
	// stream's loop then ends once no shard reader runs.
	OnGone func()
}

// label returns the value of the stream label of the engine's series.
func (s StreamSpec) label() string {
	if s.Label == nil {
		return s.Key
	}
	return s.Label()
}

// streamReader lists one stream's shards and runs a shardReader for every
// shard that may start.
type streamReader[B any] struct {
	e    *Engine
	spec StreamSpec
	api  Stream[B]

	// Set by the first successful listing, read-only afterwards.
	listedOnce bool            // a listing succeeded
	fresh      bool            // no checkpoint of this stream existed at the first listing
	initial    map[string]bool // shards listed at the first listing

	mu       sync.Mutex
	running  map[string]bool
	finished map[string]bool
	failed   int           // shard readers that ended before their shard's end
	changed  chan struct{} // a shard reader ended
}

// MaxShardIDLen is the longest shard id either API gives: Kinesis allows
// 128 characters, DynamoDB Streams 65. A listed shard with a longer id is
// not read: its id would name a checkpoint file, a lease item and a
// series.
const MaxShardIDLen = 128

// dropLongIDs leaves out of a listing the shards whose id (or a parent's)
// is longer than MaxShardIDLen, reporting each (ReasonAPI).
func (sr *streamReader[B]) dropLongIDs(list []Shard) []Shard {
	return slices.DeleteFunc(list, func(s Shard) bool {
		long := len(s.ID) > MaxShardIDLen
		for _, p := range s.Parents {
			long = long || len(p) > MaxShardIDLen
		}
		if long {
			err := fmt.Errorf("stream %q lists a shard id of %d bytes (or a parent's), longer than the %d an id has at most: not read", sr.spec.Name, len(s.ID), MaxShardIDLen)
			sr.e.Reporter.Error(sr.e.Source, ReasonAPI, err)
			sr.spec.Log.Warn("shard id too long; not reading the shard", zap.Int("bytes", len(s.ID)), zap.Int("max_bytes", MaxShardIDLen))
		}
		return long
	})
}

// ReadStream lists the stream's shards and reads them until ctx is done
// or the stream is gone: disabled and read to its end, or (with
// spec.OnGone) not found.
func ReadStream[B any](ctx context.Context, e *Engine, spec StreamSpec, api Stream[B]) {
	sr := &streamReader[B]{
		e: e, spec: spec, api: api,
		running:  map[string]bool{},
		finished: map[string]bool{},
		changed:  make(chan struct{}, 1),
	}
	sr.run(ctx)
}

func (sr *streamReader[B]) run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	e := sr.e
	bo := NewBackoff(time.Second, e.MaxBackoff)
	shardBo := NewBackoff(time.Second, e.MaxBackoff)
	if e.Coord != nil {
		defer e.Book.Remove(sr.spec.ARN)
	}
	var list []Shard   // the latest listing
	var next time.Time // when to list again
	describe := true
	for {
		var leases <-chan struct{}
		if e.Coord != nil {
			leases = e.Coord.Changed()
		}
		if describe {
			wait, stop := sr.list(ctx, &wg, bo, &list)
			if stop {
				return
			}
			next = time.Now().Add(wait)
		} else {
			sr.startReady(ctx, &wg, list)
		}
		describe = true
		select {
		case <-ctx.Done():
			return
		case <-leases:
			// This worker took or lost a lease: start readers for the
			// shards it holds now, from the listing it has.
			describe = !time.Now().Before(next)
		case <-sr.changed:
			// A shard ended: list again now, so its children start; but a
			// shard that keeps failing (not found) is retried with backoff,
			// not in a loop.
			sr.mu.Lock()
			failed := sr.failed
			sr.failed = 0
			sr.mu.Unlock()
			if failed == 0 {
				shardBo.Reset()
			} else if !pause.For(ctx, shardBo.Duration()) {
				return
			}
		case <-time.After(time.Until(next)):
		}
	}
}

// list lists the stream's shards into *list and starts a reader for each
// that may start. It returns how long to wait before the next listing
// (the list interval, or after an error the backoff bo), and stop when
// the stream's loop ends: ctx done, or the stream gone (not found, with
// OnGone, and no shard reader left) or disabled and read to its end.
func (sr *streamReader[B]) list(ctx context.Context, wg *sync.WaitGroup, bo *backoff.Backoff, list *[]Shard) (wait time.Duration, stop bool) {
	e := sr.e
	l, err := sr.api.List(ctx)
	switch {
	case ctx.Err() != nil:
		return 0, true
	case err != nil:
		reason := e.Classify(err)
		e.Reporter.Error(e.Source, reason, err)
		e.Health.Set(sr.spec.Key, err)
		if reason == ReasonNotFound && sr.spec.OnGone != nil {
			sr.spec.OnGone()
			if sr.idle() {
				sr.spec.Log.Info("stream not found, stopped reading it")
				return 0, true
			}
		}
		return bo.Duration(), false
	}
	bo.Reset()
	e.Health.Set(sr.spec.Key, nil)
	l.Shards = sr.dropLongIDs(l.Shards)
	if !sr.listedOnce {
		sr.listedOnce = true
		sr.first(ctx, l)
	}
	*list = l.Shards
	sr.listed(*list)
	sr.startReady(ctx, wg, *list)
	sr.reportShards(*list)
	if l.Disabled && sr.allFinished(*list) {
		sr.spec.Log.Info("stream disabled and read to its end")
		return 0, true
	}
	return e.ListInterval, false
}

// first records which shards existed when reading began.
func (sr *streamReader[B]) first(ctx context.Context, l Listing) {
	sr.fresh = !sr.e.Checkpoints.HasAny(sr.spec.ARN)
	sr.initial = map[string]bool{}
	for _, sh := range l.Shards {
		sr.initial[sh.ID] = true
	}
	sr.api.First(ctx, l, sr.fresh)
}

// listed hands a listing to the lease coordinator and asks for a round, so
// that new shards get their leases at once.
func (sr *streamReader[B]) listed(list []Shard) {
	if sr.e.Coord == nil {
		return
	}
	out := make([]lease.Shard, 0, len(list))
	for _, sh := range list {
		out = append(out, lease.Shard{Stream: sr.spec.ARN, ID: sh.ID, Parents: sh.Parents})
	}
	sr.e.Book.Set(sr.spec.ARN, out)
	sr.e.Coord.Refresh()
}

// isFinished reports whether a shard was read to its end, by this process
// or (from its checkpoint or lease) by an earlier one or another worker.
// Called with sr.mu held.
func (sr *streamReader[B]) isFinished(id string) bool {
	if sr.finished[id] {
		return true
	}
	if sr.e.Coord != nil {
		return sr.e.Coord.Finished(leaseKey(sr.spec.ARN, id))
	}
	cp, ok, err := sr.e.Checkpoints.Load(sr.spec.ARN, id)
	if err == nil && ok && cp.Finished {
		sr.finished[id] = true
		return true
	}
	return false
}

// startReady starts a reader for every shard that may start now: whose
// parents are finished and, with a lease table, whose lease this worker
// holds (the coordinator takes a child's lease only once its parents are
// finished).
func (sr *streamReader[B]) startReady(ctx context.Context, wg *sync.WaitGroup, list []Shard) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	for _, sh := range ReadyShards(list, sr.isFinished, sr.running) {
		var l *lease.Lease
		if sr.e.Coord != nil {
			if l = sr.e.Coord.Lease(leaseKey(sr.spec.ARN, sh.ID)); l == nil {
				continue
			}
		}
		sr.running[sh.ID] = true
		r := sr.newShardReader(sh, l)
		wg.Go(func() {
			finished := r.run(ctx)
			sr.mu.Lock()
			delete(sr.running, sh.ID)
			if finished {
				sr.finished[sh.ID] = true
			} else if ctx.Err() == nil && !r.lost {
				sr.failed++
			}
			sr.mu.Unlock()
			select {
			case sr.changed <- struct{}{}:
			default:
			}
		})
	}
}

// idle reports whether no shard reader runs.
func (sr *streamReader[B]) idle() bool {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	return len(sr.running) == 0
}

func (sr *streamReader[B]) allFinished(list []Shard) bool {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	for _, sh := range list {
		if !sr.isFinished(sh.ID) {
			return false
		}
	}
	return len(sr.running) == 0
}

// reportShards counts the listed shards by state.
func (sr *streamReader[B]) reportShards(list []Shard) {
	var open, closed, finished int
	sr.mu.Lock()
	for _, sh := range list {
		switch {
		case sr.isFinished(sh.ID):
			finished++
		case sh.Closed:
			closed++
		default:
			open++
		}
	}
	sr.mu.Unlock()
	sr.e.Metrics.states(sr.spec.label(), open, closed, finished)
}

// ReadyShards is Ready for listed shards.
func ReadyShards(list []Shard, finished func(id string) bool, running map[string]bool) []Shard {
	return Ready(list, func(s Shard) string { return s.ID }, func(s Shard) []string { return s.Parents }, finished, running)
}

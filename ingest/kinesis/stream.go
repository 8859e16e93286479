package kinesis

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
	"github.com/hotkeyd/hotkeyd/ingest/lease"
)

// shardInfo is what the reader keeps of a listed shard.
type shardInfo struct {
	id string
	// parents are the shard it was split from, or the two it was merged
	// from (parent and adjacent parent).
	parents []string
	// closed is set once the shard has an ending sequence number: it was
	// split or merged and takes no more records.
	closed bool
}

func shardInfos(list []types.Shard) []shardInfo {
	out := make([]shardInfo, 0, len(list))
	for _, sh := range list {
		if sh.ShardId == nil {
			continue
		}
		si := shardInfo{id: *sh.ShardId}
		for _, p := range []*string{sh.ParentShardId, sh.AdjacentParentShardId} {
			if p != nil && *p != "" {
				si.parents = append(si.parents, *p)
			}
		}
		si.closed = sh.SequenceNumberRange != nil && sh.SequenceNumberRange.EndingSequenceNumber != nil
		out = append(out, si)
	}
	return out
}

// streamReader lists one stream's shards and runs a shardReader for every
// shard that may start.
type streamReader struct {
	s    *Source
	arn  string
	name string // the stream's name: API calls, metrics
	key  string // health key: the stream as configured
	sink ingest.Sink
	log  *zap.Logger

	// Set by the first listing.
	fresh   bool            // no checkpoint of the stream existed
	initial map[string]bool // shards listed at the first listing

	mu       sync.Mutex
	running  map[string]bool
	finished map[string]bool
	changed  chan struct{} // a shard reader ended
}

func (s *Source) newStreamReader(arn, name, key string, sink ingest.Sink) *streamReader {
	s.m.initStream(name)
	return &streamReader{
		s: s, arn: arn, name: name, key: key, sink: sink,
		log:      s.log.With(zap.String("stream", name)),
		running:  map[string]bool{},
		finished: map[string]bool{},
		changed:  make(chan struct{}, 1),
	}
}

// run lists the shards and starts their readers until ctx is done.
func (sr *streamReader) run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	s := sr.s
	bo := shards.NewBackoff(time.Second, s.cfg.MaxBackoff)
	if s.coord != nil {
		defer s.book.Remove(sr.arn)
	}
	var infos []shardInfo
	listed := false
	for {
		var changed <-chan struct{}
		if s.coord != nil {
			changed = s.coord.Changed()
		}
		list, err := sr.list(ctx)
		wait := s.cfg.ListInterval
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			s.rep.Error(SourceName, classify(err), err)
			s.setHealth(sr.key, err)
			wait = bo.Duration()
		default:
			bo.Reset()
			s.setHealth(sr.key, nil)
			infos = list
			if !listed {
				listed = true
				sr.first(infos)
			}
			if s.coord != nil {
				list := make([]lease.Shard, 0, len(infos))
				for _, si := range infos {
					list = append(list, lease.Shard{Stream: sr.arn, ID: si.id, Parents: si.parents})
				}
				s.book.Set(sr.arn, list)
				s.coord.Refresh()
			}
		}
		sr.startReady(ctx, &wg, infos)
		sr.reportShards(infos)
		select {
		case <-ctx.Done():
			return
		case <-changed:
			// A lease taken or lost: start the readers it allows from the
			// listing there is.
			sr.startReady(ctx, &wg, infos)
		case <-sr.changed:
			// A shard ended: list again, so that its children start.
		case <-time.After(wait):
		}
	}
}

// list lists every shard of the stream, one ListShards page after the
// other.
func (sr *streamReader) list(ctx context.Context) ([]shardInfo, error) {
	in := &kinesis.ListShardsInput{StreamName: aws.String(sr.name)}
	var all []types.Shard
	for {
		cctx, cancel := context.WithTimeout(ctx, sr.s.cfg.CallTimeout)
		out, err := sr.s.api.ListShards(cctx, in)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("list shards of stream %q: %w", sr.name, err)
		}
		all = append(all, out.Shards...)
		if out.NextToken == nil || *out.NextToken == "" {
			return shardInfos(all), nil
		}
		// With a NextToken, ListShards takes no stream name.
		in = &kinesis.ListShardsInput{NextToken: out.NextToken}
	}
}

// first records which shards existed when reading began.
func (sr *streamReader) first(infos []shardInfo) {
	sr.fresh = !sr.s.cps.HasAny(sr.arn)
	sr.initial = map[string]bool{}
	for _, si := range infos {
		sr.initial[si.id] = true
	}
	sr.log.Info("listed stream", zap.String("arn", sr.arn), zap.Int("shards", len(infos)), zap.Bool("new", sr.fresh))
}

// leaseKey is the lease table's key of a shard of this stream.
func (sr *streamReader) leaseKey(shard string) string {
	return lease.Shard{Stream: sr.arn, ID: shard}.Key()
}

// isFinished reports whether a shard was read to its end, here or (from
// its checkpoint or lease) before. Called with sr.mu held.
func (sr *streamReader) isFinished(id string) bool {
	if sr.finished[id] {
		return true
	}
	if sr.s.coord != nil {
		return sr.s.coord.Finished(sr.leaseKey(id))
	}
	cp, ok, err := sr.s.cps.Load(sr.arn, id)
	if err == nil && ok && cp.Finished {
		sr.finished[id] = true
		return true
	}
	return false
}

// startReady starts a reader for every shard that may start: with a lease
// table those whose lease this worker holds (the coordinator takes a
// child's lease only once its parents are done), else those whose parents
// are finished.
func (sr *streamReader) startReady(ctx context.Context, wg *sync.WaitGroup, infos []shardInfo) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	ready := shards.Ready(infos, func(si shardInfo) string { return si.id },
		func(si shardInfo) []string { return si.parents }, sr.isFinished, sr.running)
	for _, si := range ready {
		var l *lease.Lease
		if sr.s.coord != nil {
			if l = sr.s.coord.Lease(sr.leaseKey(si.id)); l == nil {
				continue
			}
		}
		sr.running[si.id] = true
		r := sr.newShardReader(si, l)
		wg.Go(func() {
			finished := r.run(ctx)
			sr.mu.Lock()
			delete(sr.running, si.id)
			if finished {
				sr.finished[si.id] = true
			}
			sr.mu.Unlock()
			select {
			case sr.changed <- struct{}{}:
			default:
			}
		})
	}
}

// reportShards sets hotkeyd_kinesis_shards for the stream.
func (sr *streamReader) reportShards(infos []shardInfo) {
	var open, closed, finished int
	sr.mu.Lock()
	for _, si := range infos {
		switch {
		case sr.isFinished(si.id):
			finished++
		case si.closed:
			closed++
		default:
			open++
		}
	}
	sr.mu.Unlock()
	g := sr.s.m.shards
	g.WithLabelValues(sr.name, stateOpen).Set(float64(open))
	g.WithLabelValues(sr.name, stateClosed).Set(float64(closed))
	g.WithLabelValues(sr.name, stateFinished).Set(float64(finished))
}

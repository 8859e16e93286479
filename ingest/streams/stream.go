package streams

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/lease"
)

// watchTable follows a table's current stream: it asks DescribeTable for
// LatestStreamArn, reads that stream, and looks again every
// DescribeInterval and whenever the stream reader found its stream gone. A
// stream disabled and enabled again gets a new ARN; the old stream is read
// to its end and the new one from its first record.
func (s *Source) watchTable(ctx context.Context, sink ingest.Sink, table string) {
	var wg sync.WaitGroup
	defer wg.Wait()
	gone := make(chan struct{}, 1)
	notify := func() {
		select {
		case gone <- struct{}{}:
		default:
		}
	}
	bo := newBackoff(time.Second, s.cfg.MaxBackoff)
	current := ""
	log := s.log.With(zap.String("table", table))
	for {
		arn, err := s.latestStreamARN(ctx, table)
		wait := s.cfg.DescribeInterval
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			s.rep.Error(SourceName, classify(err), err)
			s.health.set(table, err)
			wait = bo.Duration()
		case arn == "":
			err := fmt.Errorf("table %q has no stream enabled", table)
			s.rep.Error(SourceName, ReasonNoStream, err)
			s.health.set(table, err)
			wait = min(bo.Duration(), s.cfg.DescribeInterval)
		default:
			bo.Reset()
			if arn != current {
				log.Info("reading stream", zap.String("stream", arn))
				current = arn
				sr := s.newStreamReader(arn, table, table, sink, notify)
				wg.Go(func() { sr.run(ctx) })
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-gone:
			// Give a re-created table or stream a moment before looking.
			if !sleep(ctx, bo.Duration()) {
				return
			}
		case <-time.After(wait):
		}
	}
}

// latestStreamARN returns the ARN of the table's enabled stream, or "" when
// the table has no stream enabled.
func (s *Source) latestStreamARN(ctx context.Context, table string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	out, err := s.tables.DescribeTable(cctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return "", fmt.Errorf("describe table %q: %w", table, err)
	}
	t := out.Table
	if t == nil || t.LatestStreamArn == nil || t.StreamSpecification == nil || !aws.ToBool(t.StreamSpecification.StreamEnabled) {
		return "", nil
	}
	return *t.LatestStreamArn, nil
}

// streamReader lists one stream's shards and runs a shardReader for every
// shard whose parent is done.
type streamReader struct {
	s      *Source
	arn    string
	key    string // health key: the configured table or stream ARN
	sink   ingest.Sink
	onGone func() // tells the table watcher the stream was not found; nil for configured ARNs
	log    *zap.Logger

	// Set by the first successful listing, read-only afterwards.
	table   string
	ks      keySchema
	fresh   bool            // no checkpoint of this stream existed at the first listing
	initial map[string]bool // shards listed at the first listing

	mu       sync.Mutex
	running  map[string]bool
	finished map[string]bool
	failed   int           // shard readers that ended before their shard's end
	changed  chan struct{} // a shard reader ended
}

func (s *Source) newStreamReader(arn, key, table string, sink ingest.Sink, onGone func()) *streamReader {
	return &streamReader{
		s: s, arn: arn, key: key, table: table, sink: sink, onGone: onGone,
		log:      s.log.With(zap.String("stream", arn)),
		running:  map[string]bool{},
		finished: map[string]bool{},
		changed:  make(chan struct{}, 1),
	}
}

// run lists the shards and starts readers until ctx is done or the stream
// is gone: disabled and read to its end, or not found.
func (sr *streamReader) run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	s := sr.s
	bo := newBackoff(time.Second, s.cfg.MaxBackoff)
	shardBo := newBackoff(time.Second, s.cfg.MaxBackoff)
	if s.coord != nil {
		defer s.book.Remove(sr.arn)
	}
	listed := false
	var infos []shardInfo // the latest listing
	var next time.Time    // when to list again
	describe := true
	for {
		leases := sr.leaseChanged()
		if describe {
			desc, err := sr.describe(ctx)
			wait := s.cfg.DescribeInterval
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				reason := classify(err)
				s.rep.Error(SourceName, reason, err)
				s.health.set(sr.key, err)
				if reason == ReasonNotFound && sr.onGone != nil {
					sr.onGone()
					if sr.idle() {
						sr.log.Info("stream not found, stopped reading it")
						return
					}
				}
				wait = bo.Duration()
			default:
				bo.Reset()
				s.health.set(sr.key, nil)
				if !listed {
					listed = true
					sr.first(ctx, desc)
				}
				infos = shardInfos(desc.Shards)
				sr.listed(infos)
				sr.startReady(ctx, &wg, infos)
				sr.reportShards(infos)
				if desc.StreamStatus == types.StreamStatusDisabled && sr.allFinished(infos) {
					sr.log.Info("stream disabled and read to its end")
					return
				}
			}
			next = time.Now().Add(wait)
		} else {
			sr.startReady(ctx, &wg, infos)
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
			} else if !sleep(ctx, shardBo.Duration()) {
				return
			}
		case <-time.After(time.Until(next)):
		}
	}
}

// describe lists every shard of the stream, one DescribeStream page after
// the other (ExclusiveStartShardId), within the account's call rate.
func (sr *streamReader) describe(ctx context.Context) (*types.StreamDescription, error) {
	var all *types.StreamDescription
	var start *string
	for {
		if err := sr.s.limit.wait(ctx); err != nil {
			return nil, err
		}
		cctx, cancel := context.WithTimeout(ctx, sr.s.cfg.CallTimeout)
		out, err := sr.s.streams.DescribeStream(cctx, &dynamodbstreams.DescribeStreamInput{
			StreamArn:             aws.String(sr.arn),
			ExclusiveStartShardId: start,
		})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("describe stream %q: %w", sr.arn, err)
		}
		d := out.StreamDescription
		if d == nil {
			return nil, fmt.Errorf("describe stream %q: no stream description in the answer", sr.arn)
		}
		if all == nil {
			all = d
		} else {
			all.Shards = append(all.Shards, d.Shards...)
		}
		if d.LastEvaluatedShardId == nil || *d.LastEvaluatedShardId == "" {
			return all, nil
		}
		start = d.LastEvaluatedShardId
	}
}

// first records what the first listing tells: table name, key schema, and
// which shards existed when reading began.
func (sr *streamReader) first(ctx context.Context, d *types.StreamDescription) {
	if sr.table == "" {
		sr.table = aws.ToString(d.TableName)
		sr.s.m.initTable(sr.table)
	}
	for _, k := range d.KeySchema {
		switch k.KeyType {
		case types.KeyTypeHash:
			sr.ks.hash = aws.ToString(k.AttributeName)
		case types.KeyTypeRange:
			sr.ks.rng = aws.ToString(k.AttributeName)
		}
	}
	if sr.ks.hash == "" && sr.s.tables != nil && sr.table != "" {
		sr.ks = sr.s.tableKeySchema(ctx, sr.table)
	}
	sr.fresh = !sr.s.cps.HasAny(sr.arn)
	sr.initial = map[string]bool{}
	for _, sh := range d.Shards {
		sr.initial[aws.ToString(sh.ShardId)] = true
	}
	sr.log.Info("listed stream", zap.String("table", sr.table), zap.Int("shards", len(d.Shards)),
		zap.String("partition_key", sr.ks.hash), zap.String("sort_key", sr.ks.rng), zap.Bool("new", sr.fresh))
}

// tableKeySchema asks DescribeTable for the key schema, for streams whose
// description lacks it. Failure leaves it empty: records with one key
// attribute are still mapped.
func (s *Source) tableKeySchema(ctx context.Context, table string) keySchema {
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	out, err := s.tables.DescribeTable(cctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	var ks keySchema
	if err != nil {
		s.rep.Error(SourceName, classify(err), fmt.Errorf("describe table %q: %w", table, err))
		return ks
	}
	if out.Table == nil {
		return ks
	}
	for _, k := range out.Table.KeySchema {
		switch k.KeyType {
		case ddbtypes.KeyTypeHash:
			ks.hash = aws.ToString(k.AttributeName)
		case ddbtypes.KeyTypeRange:
			ks.rng = aws.ToString(k.AttributeName)
		}
	}
	return ks
}

// isFinished reports whether a shard was read to its end, by this process
// or (from its checkpoint or lease) by an earlier one or another worker.
// Called with sr.mu held.
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

// startReady starts a reader for every shard that may start now: with a
// lease table, those whose lease this worker holds; else those whose parent
// is finished.
func (sr *streamReader) startReady(ctx context.Context, wg *sync.WaitGroup, infos []shardInfo) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	var ready []shardInfo
	if sr.s.coord != nil {
		ready = sr.leasedShards(infos)
	} else {
		ready = readyShards(infos, sr.isFinished, sr.running)
	}
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
func (sr *streamReader) idle() bool {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	return len(sr.running) == 0
}

func (sr *streamReader) allFinished(infos []shardInfo) bool {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	for _, si := range infos {
		if !sr.isFinished(si.id) {
			return false
		}
	}
	return len(sr.running) == 0
}

// reportShards sets hotkeyd_stream_shards for the table from the listing.
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
	g.WithLabelValues(sr.table, stateOpen).Set(float64(open))
	g.WithLabelValues(sr.table, stateClosed).Set(float64(closed))
	g.WithLabelValues(sr.table, stateFinished).Set(float64(finished))
}

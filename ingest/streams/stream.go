package streams

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest/internal/pause"
	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// watchTable follows a table's current stream: it asks DescribeTable for
// LatestStreamArn, reads that stream, and looks again every
// ListInterval and whenever the stream reader found its stream gone. A
// stream disabled and enabled again gets a new ARN; the old stream is read
// to its end and the new one from its first record.
func (s *Source) watchTable(ctx context.Context, sink traffic.Sink, table string) {
	var wg sync.WaitGroup
	defer wg.Wait()
	gone := make(chan struct{}, 1)
	notify := func() {
		select {
		case gone <- struct{}{}:
		default:
		}
	}
	bo := shards.NewBackoff(time.Second, s.cfg.MaxBackoff)
	current := ""
	log := s.log.With(zap.String("table", table))
	for {
		arn, err := s.latestStreamARN(ctx, table)
		wait := s.cfg.ListInterval
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			s.rep.Error(SourceName, classify(err), err)
			s.e.Health.Set(table, err)
			wait = bo.Duration()
		case arn == "":
			err := fmt.Errorf("table %q has no stream enabled", table)
			s.rep.Error(SourceName, ReasonNoStream, err)
			s.e.Health.Set(table, err)
			wait = min(bo.Duration(), s.cfg.ListInterval)
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
			if !pause.For(ctx, bo.Duration()) {
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
	// The same answer tells the table's indexes (an index created or
	// deleted is seen within ListInterval).
	s.known.Describer.Learn(table, t)
	if t == nil || t.LatestStreamArn == nil || t.StreamSpecification == nil || !aws.ToBool(t.StreamSpecification.StreamEnabled) {
		return "", nil
	}
	return *t.LatestStreamArn, nil
}

// streamReader is one stream as the shard engine reads it: its calls to
// DynamoDB Streams, its records' mapping and its series.
type streamReader struct {
	s      *Source
	arn    string
	key    string // health key: the configured table or stream ARN
	sink   traffic.Sink
	onGone func() // tells the table watcher the stream was not found; nil for configured ARNs
	log    *zap.Logger

	desc *types.StreamDescription // the latest listing, for First

	// Set by the first successful listing, read-only afterwards.
	table string
	ks    traffic.KeySchema

	// clocks narrow each shard's coarse record times (see coarse.go).
	clocks shardClocks
}

var _ shards.Stream[*dynamodbstreams.GetRecordsOutput] = (*streamReader)(nil)

func (s *Source) newStreamReader(arn, key, table string, sink traffic.Sink, onGone func()) *streamReader {
	return &streamReader{
		s: s, arn: arn, key: key, table: table, sink: sink, onGone: onGone,
		log: s.log.With(zap.String("stream", arn)),
	}
}

// run lists the shards and reads them until ctx is done or the stream is
// gone: disabled and read to its end, or not found.
func (sr *streamReader) run(ctx context.Context) {
	shards.ReadStream(ctx, sr.s.e, shards.StreamSpec{
		ARN: sr.arn, Name: sr.arn, Key: sr.key, Label: func() string { return sr.table }, Log: sr.log, OnGone: sr.onGone,
		ShardFields: func() []zap.Field { return []zap.Field{zap.String("table", sr.table)} },
	}, sr)
}

// List lists every shard of the stream (describe).
func (sr *streamReader) List(ctx context.Context) (shards.Listing, error) {
	d, err := sr.describe(ctx)
	if err != nil {
		return shards.Listing{}, err
	}
	sr.desc = d
	return shards.Listing{Shards: shardInfos(d.Shards), Disabled: d.StreamStatus == types.StreamStatusDisabled}, nil
}

// describe lists every shard of the stream, one DescribeStream page after
// the other (ExclusiveStartShardId), within the account's call rate.
func (sr *streamReader) describe(ctx context.Context) (*types.StreamDescription, error) {
	var all *types.StreamDescription
	var start *string
	for {
		if err := sr.s.limit.Wait(ctx); err != nil {
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

// First records what the first listing tells: table name and key schema.
func (sr *streamReader) First(ctx context.Context, _ shards.Listing, fresh bool) {
	d := sr.desc
	if sr.table == "" {
		sr.table = aws.ToString(d.TableName)
		sr.s.m.initTable(sr.table)
	}
	for _, k := range d.KeySchema {
		switch k.KeyType {
		case types.KeyTypeHash:
			sr.ks.PartitionKey = aws.ToString(k.AttributeName)
		case types.KeyTypeRange:
			sr.ks.SortKey = aws.ToString(k.AttributeName)
		}
	}
	if sr.onGone == nil && sr.table != "" && !sr.s.followsTable(sr.table) {
		// A stream configured by ARN: its table is described here, then
		// every ListInterval (a followed table is learnt from the
		// descriptions that find its stream).
		sr.s.known.Describer.Watch(ctx, sr.table)
	}
	if t := sr.s.known.Schemas.Table(sr.table); sr.ks.PartitionKey == "" && t != nil {
		// A stream description without the key schema: the table's.
		sr.ks = t.Key
	}
	sr.log.Info("listed stream", zap.String("table", sr.table), zap.Int("shards", len(d.Shards)),
		zap.String("partition_key", sr.ks.PartitionKey), zap.String("sort_key", sr.ks.SortKey), zap.Bool("new", fresh))
}

// followsTable reports whether table is one of the configured tables,
// described every ListInterval to follow its stream.
func (s *Source) followsTable(table string) bool {
	return slices.Contains(s.cfg.Tables, table)
}

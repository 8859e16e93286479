package kinesis

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
	"github.com/hotkeyd/hotkeyd/ingest/streamrecord"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// stream is one Kinesis stream as the shard engine reads it: its calls to
// the Kinesis API, its records' decoding and its series.
type stream struct {
	s    *Source
	arn  string
	name string // the stream's name: API calls, metrics
	sink traffic.Sink
	log  *zap.Logger
}

var _ shards.Stream[*kinesis.GetRecordsOutput] = (*stream)(nil)

func (s *Source) newStream(arn, name string, sink traffic.Sink) *stream {
	s.m.initStream(name)
	return &stream{s: s, arn: arn, name: name, sink: sink, log: s.log.With(zap.String("stream", name))}
}

// read reads the stream until ctx is done; key is its health key.
func (st *stream) read(ctx context.Context, key string) {
	shards.ReadStream(ctx, st.s.e, shards.StreamSpec{ARN: st.arn, Name: st.name, Key: key, Label: func() string { return st.name }, Log: st.log}, st)
}

// List lists every shard of the stream, one ListShards page after the
// other.
func (st *stream) List(ctx context.Context) (shards.Listing, error) {
	in := &kinesis.ListShardsInput{StreamName: aws.String(st.name)}
	var all []types.Shard
	for {
		cctx, cancel := context.WithTimeout(ctx, st.s.cfg.CallTimeout)
		out, err := st.s.api.ListShards(cctx, in)
		cancel()
		if err != nil {
			return shards.Listing{}, fmt.Errorf("list shards of stream %q: %w", st.name, err)
		}
		all = append(all, out.Shards...)
		if out.NextToken == nil || *out.NextToken == "" {
			return shards.Listing{Shards: shardList(all)}, nil
		}
		// With a NextToken, ListShards takes no stream name.
		in = &kinesis.ListShardsInput{NextToken: out.NextToken}
	}
}

// shardList returns the shards of a listing: a split's child has one
// parent, a merge's two (parent and adjacent parent).
func shardList(list []types.Shard) []shards.Shard {
	return shards.ShardsOf(list, func(sh *types.Shard) shards.Listed {
		l := shards.Listed{ID: sh.ShardId, Parents: []*string{sh.ParentShardId, sh.AdjacentParentShardId}}
		if r := sh.SequenceNumberRange; r != nil {
			l.End = r.EndingSequenceNumber
		}
		return l
	})
}

// First logs the first listing.
func (st *stream) First(_ context.Context, l shards.Listing, fresh bool) {
	st.log.Info("listed stream", zap.String("arn", st.arn), zap.Int("shards", len(l.Shards)), zap.Bool("new", fresh))
}

// Iterator calls GetShardIterator.
func (st *stream) Iterator(ctx context.Context, shard string, pos shards.Position, seq string) (string, error) {
	in := &kinesis.GetShardIteratorInput{
		StreamName:        aws.String(st.name),
		ShardId:           aws.String(shard),
		ShardIteratorType: types.ShardIteratorType(pos),
	}
	if seq != "" {
		in.StartingSequenceNumber = aws.String(seq)
	}
	out, err := st.s.api.GetShardIterator(ctx, in)
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ShardIterator), nil
}

// Records calls GetRecords once.
func (st *stream) Records(ctx context.Context, _, iter string) (*kinesis.GetRecordsOutput, error) {
	st.s.m.Calls.WithLabelValues(st.name).Inc()
	return st.s.api.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: aws.String(iter), Limit: aws.Int32(st.s.cfg.BatchLimit)})
}

// Emit decodes the batch's records and hands their writes to the sink.
func (st *stream) Emit(ctx context.Context, shard string, out *kinesis.GetRecordsOutput, from time.Time) (shards.Emitted, bool) {
	m := st.s.m
	e := shards.Emitted{Records: len(out.Records), Next: aws.ToString(out.NextShardIterator), End: out.NextShardIterator == nil}
	if out.MillisBehindLatest != nil {
		e.Lag, e.LagSet = float64(*out.MillisBehindLatest), true
	}
	// Kinesis says how far behind the tip the answer is: at 0, and with
	// room left in the answer, the shard is caught up and no longer holds
	// the watermark back (an empty answer while behind is a gap in a
	// sparse shard, not its end).
	behind := out.MillisBehindLatest != nil && *out.MillisBehindLatest > 0
	e.CaughtUp = !behind && len(out.Records) < int(st.s.cfg.BatchLimit)
	if len(out.Records) == 0 {
		return e, true
	}
	batch := make([]traffic.Event, 0, len(out.Records))
	var ttl, dup uint64
	where := "stream " + st.name + " shard " + shard + " sequence "
	for i := range out.Records {
		rec := &out.Records[i]
		// Events carry no shard: a Kinesis shard holds a hash range of
		// the records, not one of the table's partitions.
		var ds streamrecord.DumpStats
		batch, ds = st.s.records.DecodeRecord(rec.Data, where+aws.ToString(rec.SequenceNumber), batch)
		ttl += ds.TTLDeletes
		dup += ds.Duplicates
	}
	// A shard taken over at LATEST is read up to the window.
	batch = shards.Recent(batch, from)
	if len(batch) > 0 {
		e.Newest = traffic.Newest(batch)
		if err := st.sink.Put(ctx, batch); err != nil {
			return e, false
		}
	}
	m.Records.WithLabelValues(st.name).Add(float64(len(out.Records)))
	m.TTLDeletes.WithLabelValues(st.name).Add(float64(ttl))
	m.duplicates.WithLabelValues(st.name).Add(float64(dup))
	// A copy: the record's strings live as long as the batch.
	e.Last = strings.Clone(aws.ToString(out.Records[len(out.Records)-1].SequenceNumber))
	return e, true
}

// pacer waits PollInterval after the last GetRecords call began, but not
// at all after a full batch (a backlog).
type pacer struct {
	poll time.Duration
	full int
}

// Wait implements shards.Pacer.
func (p pacer) Wait(records int, sinceCall time.Duration, _ bool) time.Duration {
	if records >= p.full {
		return 0
	}
	return p.poll - sinceCall
}

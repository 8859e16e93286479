package streams

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
	"github.com/hotkeyd/hotkeyd/ingest/streamrecord"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Iterator calls GetShardIterator.
func (sr *streamReader) Iterator(ctx context.Context, shard string, pos shards.Position, seq string) (string, error) {
	in := &dynamodbstreams.GetShardIteratorInput{
		StreamArn:         aws.String(sr.arn),
		ShardId:           aws.String(shard),
		ShardIteratorType: types.ShardIteratorType(pos),
	}
	if seq != "" {
		in.SequenceNumber = aws.String(seq)
	}
	out, err := sr.s.streams.GetShardIterator(ctx, in)
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ShardIterator), nil
}

// Records calls GetRecords once.
func (sr *streamReader) Records(ctx context.Context, shard, iter string) (*dynamodbstreams.GetRecordsOutput, error) {
	sr.s.m.Calls.WithLabelValues(sr.table).Inc()
	sr.clocks.get(shard).polled(sr.s.now())
	var opts []func(*dynamodbstreams.Options)
	if !sr.s.cfg.SDKDecode {
		opts = append(opts, withFastGetRecords(sr.s.known.Schemas.Table(sr.table)))
	}
	return sr.s.streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{
		ShardIterator: aws.String(iter),
		Limit:         aws.Int32(sr.s.cfg.BatchLimit),
	}, opts...)
}

// Emit maps the records to Events and hands them to the sink in one batch.
// It returns false when the sink refused the batch (the pipeline is
// stopping); the position then stays before the batch.
func (sr *streamReader) Emit(ctx context.Context, shard string, out *dynamodbstreams.GetRecordsOutput, from time.Time) (shards.Emitted, bool) {
	m := sr.s.m
	table := sr.table
	recs := out.Records
	e := shards.Emitted{Records: len(recs), Next: aws.ToString(out.NextShardIterator), End: out.NextShardIterator == nil}
	// An answer with room left read the shard to its newest record.
	e.CaughtUp = len(recs) < int(sr.s.cfg.BatchLimit)
	clk := sr.clocks.get(shard)
	defer clk.answered(e.CaughtUp)
	if e.End {
		// A shard read to its end is read no more: its clock goes.
		defer sr.clocks.forget(shard)
	}
	if len(recs) == 0 {
		e.Lag, e.LagSet = 0, true
		return e, true
	}
	batch := make([]traffic.Event, 0, len(recs))
	var ttl int
	now := sr.s.now()
	t := sr.s.known.Schemas.Table(table)
	for i := range recs {
		var ev traffic.Event
		kind, reason, err := streamrecord.Map(&recs[i], table, shard, sr.ks, &ev)
		switch kind {
		case streamrecord.KindWrite:
			// The time the write happened, narrowed where the service
			// gives it in whole minutes (coarse.go).
			ev.Time = clk.place(ev.Time, aws.ToString(recs[i].Dynamodb.SequenceNumber), now)
			if ev.Time.After(e.Newest) {
				e.Newest = ev.Time
			}
			batch, _ = streamrecord.AppendWrites(batch, &recs[i], t, ev, sr.s.known.Gaps)
		case streamrecord.KindTTLDelete:
			ttl++
		case streamrecord.KindRejected:
			err = streamrecord.QuoteBadNumber(err, traffic.MaskerOf(sr.s.rep))
			sr.s.rep.Reject(SourceName, reason, fmt.Errorf("record %s of shard %q: %w", aws.ToString(recs[i].EventID), shard, err))
		}
	}
	if !from.IsZero() {
		// A shard taken over at LATEST, read up to the window.
		batch = shards.Recent(batch, from)
		e.Newest = traffic.Newest(batch)
	}
	if len(batch) > 0 {
		if err := sr.s.sinkPut(ctx, sr.sink, batch); err != nil {
			return e, false
		}
	}
	m.Records.WithLabelValues(table).Add(float64(len(recs)))
	if ttl > 0 {
		m.TTLDeletes.WithLabelValues(table).Add(float64(ttl))
	}
	last := recs[len(recs)-1].Dynamodb
	if last != nil {
		// A copy: the decoder's strings share blocks (see strArena).
		e.Last = strings.Clone(aws.ToString(last.SequenceNumber))
		if last.ApproximateCreationDateTime != nil {
			e.Lag, e.LagSet = max(0, now.Sub(*last.ApproximateCreationDateTime).Seconds()), true
		}
	}
	return e, true
}

// Gap counts records trimmed before they were read
// (hotkeyd_stream_trimmed_gaps_total).
func (sr *streamReader) Gap() { sr.s.m.gaps.WithLabelValues(sr.table).Inc() }

// pacer spaces the GetRecords calls of a shard: at least PollInterval
// after the previous call began (the per-shard call limit), and, while
// reads come back empty, a wait doubling up to IdlePollInterval. A leased
// shard, checkpointed after every batch, is read at most every
// CheckpointInterval while records flow, unless the last batch was full (a
// backlog): one checkpoint write per second per busy shard, and a crash or
// a stolen lease leaves at most the last batch to be read twice. A
// partition takes at most 1000 writes per second, so a second of them fits
// one GetRecords batch.
type pacer struct {
	cfg      *Config
	idleWait time.Duration
}

// Wait implements shards.Pacer.
func (p *pacer) Wait(n int, sinceCall time.Duration, leased bool) time.Duration {
	cfg := p.cfg
	wait := cfg.PollInterval - sinceCall
	switch {
	case n == 0:
		p.idleWait = min(max(2*p.idleWait, cfg.PollInterval), cfg.IdlePollInterval)
		wait = max(wait, p.idleWait)
	case leased && n < int(cfg.BatchLimit):
		p.idleWait = 0
		wait = max(wait, cfg.CheckpointInterval-sinceCall)
	default:
		p.idleWait = 0
	}
	return wait
}

// sinkPut hands a batch to the sink.
func (s *Source) sinkPut(ctx context.Context, sink traffic.Sink, batch []traffic.Event) error {
	return sink.Put(ctx, batch)
}

package kinesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest/internal/describe"
	"github.com/hotkeyd/hotkeyd/ingest/internal/pause"
	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
	"github.com/hotkeyd/hotkeyd/ingest/lease"
	"github.com/hotkeyd/hotkeyd/ingest/streamrecord"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Source reads Kinesis Data Streams for DynamoDB. It implements
// traffic.Source and traffic.Readier.
type Source struct {
	// Reader is the engine's: Name, Ready, SetProgress, SetCatchUp and
	// Coordinator.
	shards.Reader
	cfg     Config
	log     *zap.Logger
	rep     traffic.Reporter
	m       *metrics
	api     API
	records *streamrecord.DumpDecoder
	// e runs the streams' and shards' loops and keeps their health,
	// checkpoints and, with a lease table, the lease coordinator.
	e *shards.Engine
	// retention is the longest retention of the streams described, in
	// hours (0 until one was: DefaultRetention).
	retention atomic.Int64
	// known is what is known of the tables: their schemas, from the
	// config and DescribeTable (known.Describer, which watches each table
	// from its first record on, for as long as runCtx, Run's, lives), and
	// the index writes the records could not tell.
	known  *describe.Tables
	runCtx context.Context
}

// DefaultRetention is a Kinesis stream's retention unless it was raised.
const DefaultRetention = 24 * time.Hour

// Retention returns how long the streams hold a record: the longest
// RetentionPeriodHours of the streams described (configured by name), at
// least DefaultRetention (traffic.Retainer).
func (s *Source) Retention() time.Duration {
	return max(DefaultRetention, time.Duration(s.retention.Load())*time.Hour)
}

var (
	_ traffic.Source  = (*Source)(nil)
	_ traffic.Readier = (*Source)(nil)
	_ traffic.Noter   = (*Source)(nil)
)

// New returns a Source for cfg with SDK clients built from the default
// credential chain, cfg.Region and the endpoints. Its metrics are
// registered on reg (nil registers nothing); errors go to rep.
func New(cfg Config, log *zap.Logger, rep traffic.Reporter, reg prometheus.Registerer) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	kc, dc, err := newClients(context.Background(), cfg, log.Named("kinesis"))
	if err != nil {
		return nil, err
	}
	var db lease.DynamoDBAPI
	if dc != nil {
		db = dc
	}
	return NewWithClients(cfg, kc, db, log, rep, reg)
}

// NewWithClients is New with the clients given: db serves the lease table
// and DescribeTable, and is needed only with cfg.LeaseTable or
// cfg.DescribeTables (without it, no table is described).
func NewWithClients(cfg Config, api API, db lease.DynamoDBAPI, log *zap.Logger, rep traffic.Reporter, reg prometheus.Registerer) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log, rep = shards.Defaults(log, rep)
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("register kinesis metrics: %w", err)
	}
	cfg = cfg.withDefaults()
	log = log.Named("kinesis")
	s := &Source{cfg: cfg, log: log, rep: rep, m: m, api: api}
	var tables describe.API
	if cfg.DescribeTables && db != nil {
		tables = db
	}
	if s.known, err = describe.NewTables(describe.Config{Source: SourceName, Interval: cfg.ListInterval, CallTimeout: cfg.CallTimeout},
		cfg.Schemas, tables, log, rep, reg); err != nil {
		return nil, err
	}
	s.records = streamrecord.NewDumpDecoder(streamrecord.DumpConfig{
		Schemas: s.known.Schemas, Gaps: s.known.Gaps, Source: SourceName, Log: log, Reporter: rep,
		// A table is described on its first record, before the index
		// writes of that record are told.
		Meet: func(table string) { s.known.Describer.Watch(s.runCtx, table) },
	})
	s.e, err = shards.NewEngine(cfg.Config, shards.Parts{
		Source: SourceName, Service: "kinesis", Network: isNetwork,
		Streams: s.configured(), Metrics: m.Metrics, Classify: classify, Refused: isRefused,
		NewPacer: func() shards.Pacer { return pacer{poll: cfg.PollInterval, full: int(cfg.BatchLimit)} },
		Now:      time.Now,
		LeaseDB:  db, Log: log, Reporter: rep, Registerer: reg,
	})
	if err != nil {
		return nil, err
	}
	s.Reader = s.e.Reader()
	return s, nil
}

// configured lists the streams of the configuration, ARNs and names.
func (s *Source) configured() []string {
	return append(slices.Clone(s.cfg.StreamARNs), s.cfg.Streams...)
}

// Run reads every configured stream until ctx is done. It returns nil when
// ctx is done; AWS errors are retried, never returned.
func (s *Source) Run(ctx context.Context, sink traffic.Sink) error {
	s.runCtx = ctx
	defer s.known.Describer.Wait()
	s.e.Run(ctx, func() {
		var wg sync.WaitGroup
		for _, arn := range s.cfg.StreamARNs {
			name, _ := streamName(arn)
			wg.Go(func() { s.newStream(arn, name, sink).read(ctx, arn) })
		}
		for _, name := range s.cfg.Streams {
			wg.Go(func() {
				if arn, ok := s.streamARN(ctx, name); ok {
					s.newStream(arn, name, sink).read(ctx, name)
				}
			})
		}
		wg.Wait()
	})
	return nil
}

// Notes says what a report must know of how the records were counted:
// the tables whose index writes their streams' view type hides.
func (s *Source) Notes() []string { return s.known.Notes() }

// streamARN finds the ARN of a stream configured by name, retrying until
// it succeeds or ctx is done: checkpoints and leases are kept by ARN.
func (s *Source) streamARN(ctx context.Context, name string) (string, bool) {
	bo := shards.NewBackoff(time.Second, s.cfg.MaxBackoff)
	for {
		cctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		out, err := s.api.DescribeStreamSummary(cctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(name)})
		cancel()
		if err == nil && out.StreamDescriptionSummary != nil && out.StreamDescriptionSummary.StreamARN != nil {
			if h := aws.ToInt32(out.StreamDescriptionSummary.RetentionPeriodHours); int64(h) > s.retention.Load() {
				s.retention.Store(int64(h))
			}
			return *out.StreamDescriptionSummary.StreamARN, true
		}
		if ctx.Err() != nil {
			return "", false
		}
		if err == nil {
			err = errors.New("no stream ARN in the answer")
		}
		err = fmt.Errorf("describe stream %q: %w", name, err)
		s.rep.Error(SourceName, classify(err), err)
		s.e.Health.Set(name, err)
		if !pause.For(ctx, bo.Duration()) {
			return "", false
		}
	}
}

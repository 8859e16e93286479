package streams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/hotkeyd/hotkeyd/ingest/internal/describe"
	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
	"github.com/hotkeyd/hotkeyd/ingest/lease"
	"github.com/hotkeyd/hotkeyd/ingest/streamrecord"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// SourceName is the value of the source label of the reader's Events and
// errors: the label of the stream records it decodes.
const SourceName = streamrecord.SourceName

// Source reads DynamoDB Streams. It implements traffic.Source and
// traffic.Readier.
type Source struct {
	// Reader is the engine's: Name, Ready, SetProgress, SetCatchUp and
	// Coordinator.
	shards.Reader
	cfg     Config
	log     *zap.Logger
	rep     traffic.Reporter
	m       *metrics
	streams StreamsAPI
	tables  TablesAPI
	limit   *rate.Limiter
	now     func() time.Time
	// e runs the streams' and shards' loops and keeps their health,
	// checkpoints and, with a lease table, the lease coordinator.
	e *shards.Engine
	// known is what is known of the tables: their schemas, from the
	// config and DescribeTable (known.Describer), and the index writes the
	// records could not tell.
	known *describe.Tables
}

var (
	_ traffic.Source  = (*Source)(nil)
	_ traffic.Readier = (*Source)(nil)
	_ traffic.Noter   = (*Source)(nil)
)

// New returns a Source for cfg with SDK clients built from the default
// credential chain, cfg.Region and cfg.Endpoint. Its metrics are registered
// on reg (nil registers nothing); errors go to rep.
func New(cfg Config, log *zap.Logger, rep traffic.Reporter, reg prometheus.Registerer) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sc, dc, err := newClients(context.Background(), cfg, log)
	if err != nil {
		return nil, err
	}
	return NewWithClients(cfg, sc, dc, log, rep, reg)
}

// NewWithClients is New with the AWS clients given, e.g. real clients
// wrapped by a fault-injecting layer in tests. With cfg.LeaseTable, tables
// must also implement lease.DynamoDBAPI (*dynamodb.Client does): it serves
// the lease table too.
func NewWithClients(cfg Config, streams StreamsAPI, tables TablesAPI, log *zap.Logger, rep traffic.Reporter, reg prometheus.Registerer) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.Tables) > 0 && tables == nil {
		return nil, errors.New("tables: a DynamoDB client is required to find the tables' streams")
	}
	log, rep = shards.Defaults(log, rep)
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("register stream metrics: %w", err)
	}
	cfg = cfg.withDefaults()
	s := &Source{
		cfg: cfg, log: log.Named("streams"), rep: rep, m: m, streams: streams, tables: tables,
		// DescribeStream allows 10 calls per second per account.
		limit: rate.NewLimiter(rate.Every(100*time.Millisecond), 1),
		now:   time.Now,
	}
	var api describe.API
	if tables != nil {
		api = tables
	}
	if s.known, err = describe.NewTables(describe.Config{Source: SourceName, Interval: cfg.ListInterval, CallTimeout: cfg.CallTimeout},
		cfg.Schemas, api, s.log, rep, reg); err != nil {
		return nil, err
	}
	for _, t := range cfg.Tables {
		m.initTable(t)
	}
	db, _ := tables.(lease.DynamoDBAPI) // *dynamodb.Client serves the lease table too
	s.e, err = shards.NewEngine(cfg.Config, shards.Parts{
		Source: SourceName, Service: "dynamodb streams", Network: isNetwork,
		Streams: append(slices.Clone(cfg.Tables), cfg.StreamARNs...),
		Metrics: m.Metrics, Classify: classify, Refused: isValidation,
		NewPacer: func() shards.Pacer { return &pacer{cfg: &s.cfg} },
		Now:      s.now,
		LeaseDB:  db, Log: log, Reporter: rep, Registerer: reg,
	})
	if err != nil {
		return nil, err
	}
	s.Reader = s.e.Reader()
	return s, nil
}

// Retention is how long a DynamoDB stream holds a record: 24 hours
// (traffic.Retainer).
func (s *Source) Retention() time.Duration { return Retention }

// Retention is how long a DynamoDB stream holds a record.
const Retention = 24 * time.Hour

// Run reads every configured stream until ctx is done, handing one batch of
// Events per GetRecords response to sink. It returns nil when ctx is done;
// AWS errors are retried, never returned.
func (s *Source) Run(ctx context.Context, sink traffic.Sink) error {
	s.e.Run(ctx, func() { s.read(ctx, sink) })
	s.known.Describer.Wait()
	return nil
}

// Notes says what a report must know of how the records were counted:
// the tables whose index writes the stream's view type hides.
func (s *Source) Notes() []string { return s.known.Notes() }

// read runs a reader of every configured table and stream.
func (s *Source) read(ctx context.Context, sink traffic.Sink) {
	var wg sync.WaitGroup
	for _, t := range s.cfg.Tables {
		wg.Go(func() { s.watchTable(ctx, sink, t) })
	}
	for _, a := range s.cfg.StreamARNs {
		wg.Go(func() { s.newStreamReader(a, a, "", sink, nil).run(ctx) })
	}
	wg.Wait()
}

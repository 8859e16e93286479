package shards

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest/internal/pause"
	"github.com/hotkeyd/hotkeyd/ingest/lease"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Position is where a shard iterator points. The values are the
// ShardIteratorType of both APIs.
type Position string

// Positions of an iterator.
const (
	AtTrimHorizon       Position = "TRIM_HORIZON"          // the oldest record the shard holds
	AtLatest            Position = "LATEST"                // after the newest record
	AfterSequenceNumber Position = "AFTER_SEQUENCE_NUMBER" // after a record read
)

// Shard is what the engine keeps of a listed shard.
type Shard struct {
	ID string
	// Parents are the shard it was split from, or the two it was merged
	// from.
	Parents []string
	// Closed is set once the shard has an ending sequence number: it takes
	// no more records, and reading reaches its end.
	Closed bool
}

// Listing is one listing of a stream's shards.
type Listing struct {
	Shards []Shard
	// Disabled is set when the stream takes no more records: once every
	// shard is read to its end, the stream's loop ends.
	Disabled bool
}

// Listed is what a service's listing tells of one shard: its id, the end
// of its sequence number range (nil while the shard is open) and its
// parents (nil or "" for none).
type Listed struct {
	ID, End *string
	Parents []*string
}

// ShardsOf returns the shards of a service's listing, of telling what
// each tells: a shard without an id is left out, a shard with an end is
// closed (the service writes no more records to it, and reading reaches
// its end).
func ShardsOf[T any](list []T, of func(*T) Listed) []Shard {
	out := make([]Shard, 0, len(list))
	for i := range list {
		l := of(&list[i])
		if l.ID == nil {
			continue
		}
		sh := Shard{ID: *l.ID, Closed: l.End != nil}
		for _, p := range l.Parents {
			if p != nil && *p != "" {
				sh.Parents = append(sh.Parents, *p)
			}
		}
		out = append(out, sh)
	}
	return out
}

// Emitted is what a reader tells of a batch it handed on.
type Emitted struct {
	Records int    // records in the answer, rejected and duplicates included
	Last    string // the sequence number of the last record, "" when none
	Next    string // the next iterator
	End     bool   // no next iterator: the shard was read to its end
	// Lag, when LagSet, is how far the shard's reading is behind after
	// this answer, in the unit of the reader's lag series (MetricOpts.Lag).
	Lag    float64
	LagSet bool
	// Newest is the latest event time of the records handed on, zero when
	// none.
	Newest time.Time
	// CaughtUp is set when the answer shows the shard read to its newest
	// record (the service says so, or the answer was not full): the
	// shard then no longer holds its source's watermark back.
	CaughtUp bool
}

// Stream is the part of a reader that speaks its service's API, for one
// stream: the engine calls it from the stream's loop (List, First) and
// from every shard's loop (the rest), concurrently. B is the answer of one
// GetRecords call. The engine keeps the shard series (Metrics) itself.
type Stream[B any] interface {
	// List lists every shard of the stream.
	List(ctx context.Context) (Listing, error)
	// First is called once, after the first listing, with whether hotkeyd
	// never read the stream before (no checkpoint of it).
	First(ctx context.Context, l Listing, fresh bool)
	// Iterator takes an iterator of a shard at pos; seq is the sequence
	// number of AfterSequenceNumber. The engine bounds ctx by the call
	// timeout and wraps the error.
	Iterator(ctx context.Context, shard string, pos Position, seq string) (string, error)
	// Records calls GetRecords once (the engine bounds ctx and wraps the
	// error).
	Records(ctx context.Context, shard, iter string) (B, error)
	// Emit decodes an answer and hands its events to the sink, leaving out
	// those whose time is before from (Recent; a zero from leaves out
	// none). It returns false when the sink refused them (the pipeline is
	// stopping).
	Emit(ctx context.Context, shard string, b B, from time.Time) (Emitted, bool)
}

// Pacer says how long one shard's reader waits before its next GetRecords
// call, from the records the last call returned and the time since it
// began. Each shard reader has its own.
type Pacer interface {
	Wait(records int, sinceCall time.Duration, leased bool) time.Duration
}

// Settings are the engine's tunables, from the reader's config.
type Settings struct {
	// Source is the source label of the errors reported.
	Source string
	// StartLatest reads the shards of a stream hotkeyd never read, as
	// listed at first, from their newest record; else from their oldest.
	// Shards that appear later are read from their oldest record.
	StartLatest bool
	// ListInterval is how often each stream's shards are listed again.
	ListInterval time.Duration
	// CheckpointInterval is the least time between two checkpoint file
	// writes of a shard while records flow.
	CheckpointInterval time.Duration
	// MaxBackoff caps the backoff after errors.
	MaxBackoff time.Duration
	// CallTimeout bounds each call.
	CallTimeout time.Duration
	// CatchUp is how far back a shard taken over at LATEST from an
	// earlier owner (lease.Lease.Inherited) is read: from its oldest
	// record, leaving out the events older than this (the window they
	// would count in). Zero reads the whole shard.
	CatchUp time.Duration
}

// Engine runs the loops of a reader of sharded streams: per stream,
// listing the shards and starting a reader for each shard that may start
// (parents before children, or as the lease coordinator assigns them); per
// shard, the iterator, polling, backoff, checkpoints and the recovery of
// each error. The reader fills in its parts; the fields are not changed
// once a stream runs.
type Engine struct {
	Settings
	Reporter traffic.Reporter
	// Checkpoints keeps the checkpoint files (without a lease table).
	Checkpoints *Store
	// Coord and Book are set with a lease table: the coordinator, and the
	// listings it splits.
	Coord *lease.Coordinator
	Book  *Book
	// Health keeps each configured stream's last error.
	Health *Health
	// Metrics are the reader's shard series (nil: none).
	Metrics *Metrics
	// Classify maps an error of the reader's API to a reason.
	Classify func(error) string
	// Refused, when set, reports whether the service refused a request's
	// parameters: a checkpoint no iterator could be taken at yet is then
	// checked, and dropped as corrupt when the service refuses it (see
	// shardReader.impossible). Nil: checkpoints are taken as they are.
	Refused func(error) bool
	// NewPacer returns the pacer of a shard reader.
	NewPacer func() Pacer
	// Now is the clock of the checkpoints.
	Now func() time.Time
	// Progress, when set, takes each shard reader's progress in event time
	// (a lane per shard, under Settings.Source): busy at the newest event
	// time read while the shard has a backlog, idle once caught up.
	Progress *traffic.Progress
}

// Parts are a reader's own parts of its Engine, and what NewEngine wires
// for it.
type Parts struct {
	// Source names the reader (Settings.Source, the lease coordinator's).
	Source string
	// Service names the endpoint in readiness errors ("kinesis"), Network
	// says which errors are the endpoint's being unreachable (Health).
	Service string
	Network func(error) bool
	// Streams are the configured streams (or tables): each is unhealthy
	// until its first call succeeds.
	Streams []string
	// Metrics, Classify, Refused, NewPacer and Now are the Engine's.
	Metrics  *Metrics
	Classify func(error) string
	Refused  func(error) bool
	NewPacer func() Pacer
	Now      func() time.Time
	// LeaseDB serves the lease table, with Config.LeaseTable.
	LeaseDB lease.DynamoDBAPI
	// Log, Reporter and Registerer are the lease coordinator's.
	Log        *zap.Logger
	Reporter   traffic.Reporter
	Registerer prometheus.Registerer
}

// NewEngine returns the Engine of a reader configured by c (after
// WithDefaults): its checkpoints in c.CheckpointDir, or with c.LeaseTable a
// lease coordinator over p.LeaseDB that splits the listings of a Book; its
// Health with every configured stream starting.
func NewEngine(c Config, p Parts) (*Engine, error) {
	e := &Engine{
		Settings:    c.Settings(p.Source),
		Reporter:    p.Reporter,
		Checkpoints: NewStore(c.CheckpointDir),
		Health:      NewHealth(p.Service, p.Network),
		Metrics:     p.Metrics,
		Classify:    p.Classify,
		Refused:     p.Refused,
		NewPacer:    p.NewPacer,
		Now:         p.Now,
	}
	for _, s := range p.Streams {
		e.Health.Set(s, ErrStarting)
	}
	if c.LeaseTable == "" {
		return e, nil
	}
	if p.LeaseDB == nil {
		return nil, errors.New("lease_table: no DynamoDB client for the lease table")
	}
	e.Book = NewBook()
	coord, err := lease.New(c.Lease(p.Source), p.LeaseDB, e.Book, p.Log, p.Reporter, p.Registerer)
	if err != nil {
		return nil, err
	}
	e.Coord = coord
	return e, nil
}

// Run runs the lease coordinator, when there is one, and the checkpoint
// folder's probe (ProbeCheckpoints) while read runs; once read returns,
// the coordinator has stopped and the leases no reader released are
// released.
func (e *Engine) Run(ctx context.Context, read func()) {
	if e.Coord != nil {
		// The coordinator stops with the readers; each reader releases its
		// lease with its last position as it stops, and ReleaseAll the
		// leases no reader had started on.
		coordDone := make(chan struct{})
		go func() { _ = e.Coord.Run(ctx); close(coordDone) }()
		defer func() {
			<-coordDone
			rctx, cancel := context.WithTimeout(context.Background(), e.CallTimeout)
			defer cancel()
			e.Coord.ReleaseAll(rctx)
		}()
	}
	if e.Checkpoints != nil {
		probed := make(chan struct{})
		go func() { defer close(probed); e.ProbeCheckpoints(ctx) }()
		defer func() { <-probed }()
	}
	read()
}

// Ready returns nil while the reader works: not while every configured
// stream fails (Health), not while the checkpoint folder cannot be
// written, and with a lease table not while the coordinator cannot read
// it or renew a lease it holds.
func (e *Engine) Ready() error {
	if err := e.Health.Ready(); err != nil {
		return err
	}
	if e.Checkpoints != nil {
		if err := e.Checkpoints.Ready(); err != nil {
			return fmt.Errorf("checkpoints cannot be written: %w", err)
		}
	}
	if e.Coord != nil {
		return e.Coord.Ready()
	}
	return nil
}

// probeEvery is how often a checkpoint folder that could not be written
// is tried again.
const probeEvery = 5 * time.Second

// ProbeCheckpoints checks the checkpoint folder at start, and again every
// probeEvery while it cannot be written, so that the Store's Ready says so
// before a shard has a checkpoint to write and clears once it can be.
func (e *Engine) ProbeCheckpoints(ctx context.Context) {
	for reported := false; ; reported = true {
		err := e.Checkpoints.Probe()
		if err == nil {
			return
		}
		if !reported {
			e.Reporter.Error(e.Source, ReasonCheckpoint, err)
		}
		if !pause.For(ctx, probeEvery) {
			return
		}
	}
}

// leaseKey is the lease table's key of a shard.
func leaseKey(arn, shard string) string {
	return lease.Shard{Stream: arn, ID: shard}.Key()
}

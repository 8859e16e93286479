package main

import (
	"context"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/lease"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// summaryKeys is the most top keys per table and class a replica
// publishes: far more than a key above any sensible threshold needs to be
// among on the replica that reads it.
const summaryKeys = 64

// leased is a source that splits its shards with other replicas through a
// lease table (dynamodb-streams and kinesis with lease_table).
type leased interface {
	Coordinator() *lease.Coordinator
}

// replicas is what a daemon sharing its shards with other replicas adds to
// the detector's tick: it publishes its window's summary in the lease
// table, reads the others', judges on their sum and raises only its own
// diagnoses (detect.Raisers).
type replicas struct {
	log     *zap.Logger
	worker  string
	board   *lease.Board
	raisers *detect.Raisers
	tracked int
	latest  atomic.Pointer[sketch.Summary]
	shrunk  atomic.Int64 // what the last summary cut to fit (see payload), 0 if nothing

	// The distinct-key registers cost as much to merge as the rest of a
	// summary: they are taken once per board round and reused in between.
	// Touched by the tick only.
	regsAt   time.Time
	regs     map[[2]string][]byte
	combiner sketch.Combiner
}

// newReplicas returns the replicas of the first source with a lease table,
// or nil when no source has one.
func newReplicas(sources []ingest.Source, tracked int, log *zap.Logger) (*replicas, error) {
	for _, src := range sources {
		l, ok := src.(leased)
		if !ok || l.Coordinator() == nil {
			continue
		}
		c := l.Coordinator()
		r := &replicas{log: log.Named("replicas"), worker: c.WorkerID(), raisers: detect.NewRaisers(c.WorkerID()), tracked: tracked}
		b, err := c.Board(lease.BoardConfig{Publish: r.payload, Decode: func(p []byte) (any, error) { return sketch.DecodeSummary(p) }})
		if err != nil {
			return nil, err
		}
		r.board = b
		return r, nil
	}
	return nil, nil
}

// run publishes and reads summaries until ctx is done.
func (r *replicas) run(ctx context.Context) error {
	r.log.Info("sharing window summaries with the other replicas", zap.String("worker", r.worker))
	return r.board.Run(ctx)
}

// payload encodes the latest local summary for the board.
func (r *replicas) payload() ([]byte, error) {
	s := r.latest.Load()
	if s == nil {
		return nil, nil
	}
	b, keys, regs, err := sketch.EncodeSummary(s, summaryKeys, lease.MaxSummaryBytes)
	if err != nil {
		return nil, err
	}
	// What was cut, as a number that changes when the cut does: the keys
	// kept, negative once the registers are left out too.
	cut := int64(0)
	if !regs {
		cut = -int64(keys)
	}
	if last := r.shrunk.Swap(cut); cut != 0 && cut != last {
		r.log.Warn("window summary cut to fit a DynamoDB item: the others add this replica's distinct-key counts instead of its registers, and fewer top keys may be shared",
			zap.Int("keys_per_class", keys), zap.Int("tables", len(s.Tables)), zap.Int("bytes", len(b)))
	}
	return b, nil
}

// evaluate judges on the sum of this replica's window and the live peers'
// summaries, and returns the combined snapshot it judged, the report, with
// who raises what, and the changes this replica announces.
func (r *replicas) evaluate(store *sketch.Store, tracker *detect.Tracker) (sketch.Snapshot, report.Report, []report.Change) {
	due := time.Since(r.regsAt) >= r.board.Every()/2
	sum := store.Summary(due)
	if due {
		r.regsAt = time.Now()
		r.regs = make(map[[2]string][]byte, len(sum.Tables))
	}
	for i := range sum.Parts {
		id := [2]string{sum.Tables[i].Table, sum.Tables[i].Index}
		if due {
			r.regs[id] = sum.Parts[i].Registers
		} else {
			sum.Parts[i].Registers = r.regs[id]
		}
	}
	r.latest.Store(sum)
	var peers []sketch.Replica
	for _, p := range r.board.Peers() {
		if s, ok := p.Value.(*sketch.Summary); ok {
			peers = append(peers, sketch.Replica{Worker: p.Worker, Summary: s})
		}
	}
	c := r.combiner.Combine(sketch.Replica{Worker: r.worker, Summary: sum}, peers, r.tracked)
	rep, changes := tracker.Evaluate(c.Snapshot)
	return c.Snapshot, rep, r.raisers.Assign(&rep, changes, c)
}

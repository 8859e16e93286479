package judge

import (
	"context"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/ingest"
	"github.com/hotkeyd/hotkeyd/ingest/lease"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// SummaryKeys is the most top keys per table and class a replica
// publishes: far more than a key above any sensible threshold needs to be
// among on the replica that reads it.
const SummaryKeys = 64

// leased is a source that splits its shards with other replicas through a
// lease table (dynamodb-streams and kinesis with lease_table).
type leased interface {
	Coordinator() *lease.Coordinator
}

// Replicas is the Evaluator of a daemon sharing its shards with other
// replicas: it publishes its window's summary in the lease table, reads
// the others', judges on their sum and announces only the diagnoses it
// raises (detect.Raisers). Run exchanges the summaries; Evaluate is
// called by the tick.
type Replicas struct {
	log     *zap.Logger
	worker  string
	store   *sketch.Store
	tracker *detect.Tracker
	board   *lease.Board[*sketch.Summary]
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

// NewReplicas returns the Replicas of the first source with a lease
// table, judging on store's window with tracker, or nil when no source
// has one. tracked is the top keys per table and class the store keeps.
func NewReplicas(sources []ingest.Source, store *sketch.Store, tracker *detect.Tracker, tracked int, log *zap.Logger) (*Replicas, error) {
	for _, src := range sources {
		l, ok := src.(leased)
		if !ok || l.Coordinator() == nil {
			continue
		}
		c := l.Coordinator()
		r := &Replicas{
			log: log.Named("replicas"), worker: c.WorkerID(), store: store, tracker: tracker,
			raisers: detect.NewRaisers(c.WorkerID()), tracked: tracked,
		}
		b, err := lease.NewBoard(c, lease.BoardConfig[*sketch.Summary]{Publish: r.payload, Decode: sketch.DecodeSummary})
		if err != nil {
			return nil, err
		}
		r.board = b
		return r, nil
	}
	return nil, nil
}

// Worker returns this replica's worker id in the lease table.
func (r *Replicas) Worker() string { return r.worker }

// Run publishes and reads summaries until ctx is done.
func (r *Replicas) Run(ctx context.Context) error {
	r.log.Info("sharing window summaries with the other replicas", zap.String("worker", r.worker))
	return r.board.Run(ctx)
}

// payload encodes the latest local summary for the board.
func (r *Replicas) payload() ([]byte, error) {
	s := r.latest.Load()
	if s == nil {
		return nil, nil
	}
	b, keys, regs, err := sketch.EncodeSummary(s, SummaryKeys, lease.MaxSummaryBytes)
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

// Evaluate judges on the sum of this replica's window and the live peers'
// summaries: the combined snapshot it judged, the report, with who raises
// what, and the changes this replica announces.
func (r *Replicas) Evaluate() Judgement {
	due := time.Since(r.regsAt) >= r.board.Every()/2
	sum := r.store.Summary(due)
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
		peers = append(peers, sketch.Replica{Worker: p.Worker, Summary: p.Value})
	}
	c := r.combiner.Combine(sketch.Replica{Worker: r.worker, Summary: sum}, peers, r.tracked)
	rep, changes := r.tracker.Evaluate(c.Snapshot)
	return Judgement{Snapshot: c.Snapshot, Report: rep, Changes: r.raisers.Assign(&rep, changes, c)}
}

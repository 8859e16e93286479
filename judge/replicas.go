package judge

import (
	"context"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// SummaryKeys is the most top keys per table and class a replica
// publishes: far more than a key above any sensible threshold needs to be
// among on the replica that reads it.
const SummaryKeys = 64

// Board is where replicas exchange their window summaries: the lease
// table's board (ingest/lease's Board, adapted by the daemon's wiring).
// It publishes what the publish function given to its maker returns.
type Board interface {
	// Run publishes this replica's summary and reads the others' until
	// ctx is done.
	Run(ctx context.Context) error
	// Every is how often a round publishes and reads.
	Every() time.Duration
	// Peers returns the other replicas' live summaries.
	Peers() []sketch.Replica
}

// Publish returns this replica's summary as the board publishes it, nil
// when there is none yet.
type Publish func() ([]byte, error)

// ReplicasConfig is what Replicas judges with.
type ReplicasConfig struct {
	// Worker is this replica's worker id in the lease table.
	Worker string
	// Store is this replica's window; Tracker its hysteresis.
	Store   *sketch.Store
	Tracker *detect.Tracker
	// Tracked is the top keys per table and class the store keeps.
	Tracked int
	// MaxBytes bounds a published summary (what a board's item holds).
	MaxBytes int
	// Log is the daemon's logger.
	Log *zap.Logger
}

// Replicas is the Evaluator of a daemon sharing its shards with other
// replicas: it publishes its window's summary on a Board, reads the
// others', judges on their sum and announces only the diagnoses it
// raises (detect.Raisers). Run exchanges the summaries; Evaluate is
// called by the tick.
type Replicas struct {
	cfg     ReplicasConfig
	log     *zap.Logger
	board   Board
	raisers *detect.Raisers
	latest  atomic.Pointer[sketch.Summary]
	shrunk  atomic.Int64 // what the last summary cut to fit (see payload), 0 if nothing

	// The distinct-key registers cost as much to merge as the rest of a
	// summary: they are taken once per board round and reused in between.
	// Touched by the tick only.
	regsAt   time.Time
	regs     map[[2]string][]byte
	combiner sketch.Combiner
}

// NewReplicas returns the Replicas of cfg, exchanging summaries on the
// board newBoard makes around the replica's publish function.
func NewReplicas(cfg ReplicasConfig, newBoard func(Publish) (Board, error)) (*Replicas, error) {
	r := &Replicas{cfg: cfg, log: cfg.Log.Named("replicas"), raisers: detect.NewRaisers(cfg.Worker)}
	b, err := newBoard(r.payload)
	if err != nil {
		return nil, err
	}
	r.board = b
	return r, nil
}

// Worker returns this replica's worker id in the lease table.
func (r *Replicas) Worker() string { return r.cfg.Worker }

// Run publishes and reads summaries until ctx is done.
func (r *Replicas) Run(ctx context.Context) error {
	r.log.Info("sharing window summaries with the other replicas", zap.String("worker", r.cfg.Worker))
	return r.board.Run(ctx)
}

// payload encodes the latest local summary for the board.
func (r *Replicas) payload() ([]byte, error) {
	s := r.latest.Load()
	if s == nil {
		return nil, nil
	}
	b, keys, regs, err := sketch.EncodeSummary(s, SummaryKeys, r.cfg.MaxBytes)
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

// Moved is false: replicas judge once a second, on the clock, since the
// sum they judge changes with the peers' summaries too.
func (r *Replicas) Moved() bool { return false }

// Evaluate judges on the sum of this replica's window and the live peers'
// summaries: the combined snapshot it judged, the report, with who raises
// what, and the changes this replica announces.
func (r *Replicas) Evaluate() Judgement {
	due := time.Since(r.regsAt) >= r.board.Every()/2
	sum := r.cfg.Store.Summary(due)
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
	c := r.combiner.Combine(sketch.Replica{Worker: r.cfg.Worker, Summary: sum}, r.board.Peers(), r.cfg.Tracked)
	rep, changes := r.cfg.Tracker.Evaluate(c.Snapshot)
	return Judgement{Snapshot: c.Snapshot, Report: rep, Changes: r.raisers.Assign(&rep, changes, c)}
}

package daemon

import (
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/ingest/lease"
	"github.com/hotkeyd/hotkeyd/judge"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// leased is a source that splits its shards with other replicas through a
// lease table (dynamodb-streams and kinesis with lease_table).
type leased interface {
	Coordinator() *lease.Coordinator
}

// newReplicas returns the judge.Replicas of the first source with a lease
// table, exchanging window summaries on that table's board, or nil when
// no source has one. tracked is the top keys per table and class the
// store keeps.
func newReplicas(sources []traffic.Source, store *sketch.Store, tracker *detect.Tracker, tracked int, log *zap.Logger) (*judge.Replicas, error) {
	for _, src := range sources {
		l, ok := src.(leased)
		if !ok || l.Coordinator() == nil {
			continue
		}
		c := l.Coordinator()
		cfg := judge.ReplicasConfig{
			Worker: c.WorkerID(), Store: store, Tracker: tracker, Tracked: tracked,
			MaxBytes: lease.MaxSummaryBytes, Log: log,
		}
		return judge.NewReplicas(cfg, func(publish judge.Publish) (judge.Board, error) {
			b, err := lease.NewBoard(c, lease.BoardConfig[*sketch.Summary]{Publish: publish, Decode: sketch.DecodeSummary})
			if err != nil {
				return nil, err
			}
			return summaryBoard{b}, nil
		})
	}
	return nil, nil
}

// summaryBoard is the lease table's board of window summaries as the
// judge reads it.
type summaryBoard struct {
	*lease.Board[*sketch.Summary]
}

// Peers returns the live peers' summaries.
func (b summaryBoard) Peers() []sketch.Replica {
	peers := b.Board.Peers()
	out := make([]sketch.Replica, len(peers))
	for i, p := range peers {
		out[i] = sketch.Replica{Worker: p.Worker, Summary: p.Value}
	}
	return out
}

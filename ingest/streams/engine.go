package streams

import (
	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
)

// newHealth returns the health of the configured tables and streams.
func newHealth() *shards.Health { return shards.NewHealth("dynamodb streams", isNetwork) }

// newEngine returns the shard engine of the source, with the settings of
// its config; the lease coordinator is added with a lease table. A
// checkpoint at which no iterator was taken yet is checked (isValidation).
func (s *Source) newEngine() *shards.Engine {
	cfg := s.cfg
	return &shards.Engine{
		Settings:    cfg.Settings(SourceName, cfg.DescribeInterval),
		Reporter:    s.rep,
		Checkpoints: shards.NewStore(cfg.CheckpointDir),
		Health:      newHealth(),
		Classify:    classify,
		Refused:     isValidation,
		NewPacer:    func() shards.Pacer { return &pacer{cfg: &s.cfg} },
		Now:         s.now,
	}
}

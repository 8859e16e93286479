package describe

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/ingest/streamrecord"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// Tables is what a reader of stream records knows of the tables its
// records name: their key schemas and secondary indexes (Schemas, from
// the config file's tables section and DescribeTable), the Describer
// that learns them, and the writes whose index writes the records could
// not tell (Gaps). Both readers of stream records hold one.
type Tables struct {
	Schemas   *streamrecord.Schemas
	Describer *Describer
	Gaps      *streamrecord.Gaps
}

// NewTables returns the Tables of the reader cfg.Source: declared are the
// config file's key schemas, api describes the tables (nil: none is
// described); the describer's and the gaps' series are registered on reg
// (nil registers none).
func NewTables(cfg Config, declared map[string]traffic.KeySchema, api API, log *zap.Logger, rep traffic.Reporter, reg prometheus.Registerer) (*Tables, error) {
	t := &Tables{Schemas: streamrecord.NewSchemas(declared)}
	var err error
	if t.Describer, err = New(cfg, api, t.Schemas, log, rep, reg); err != nil {
		return nil, err
	}
	if t.Gaps, err = streamrecord.NewGaps(cfg.Source, log, reg); err != nil {
		return nil, fmt.Errorf("register index write metrics: %w", err)
	}
	return t, nil
}

// Notes says what a report must know of how the records were counted:
// the tables whose index writes their streams' view type hides.
func (t *Tables) Notes() []string {
	if n := t.Gaps.Note(); n != "" {
		return []string{n}
	}
	return nil
}

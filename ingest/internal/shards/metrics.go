package shards

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotkeyd/hotkeyd/internal/promutil"
)

// States of a shard in the gauge of shards by state.
const (
	StateOpen     = "open"     // the service still writes to the shard
	StateClosed   = "closed"   // no more writes; records left to read
	StateFinished = "finished" // read to its end and checkpointed
)

// MetricOpts name a reader's shard series: the engine writes them, each
// reader keeps its own names (README's contract).
type MetricOpts struct {
	// StreamLabel is the label that names the stream: "table" for
	// DynamoDB Streams, "stream" for Kinesis.
	StreamLabel string
	// Shards is the gauge of the listed shards by state, labelled
	// StreamLabel and "state".
	Shards prometheus.GaugeOpts
	// Lag is the gauge of how far each shard's reading is behind,
	// labelled StreamLabel and "shard", in the unit the reader's Emit
	// gives (Emitted.Lag).
	Lag prometheus.GaugeOpts
}

// Metrics are the shard series the engine keeps for a reader. A shard's
// lag series is deleted when the shard is finished or read elsewhere, so
// the label sets stay bounded while shards roll over. A nil *Metrics
// keeps nothing. Safe for concurrent use.
type Metrics struct {
	shards *prometheus.GaugeVec
	lag    *prometheus.GaugeVec
}

// NewMetrics makes a reader's shard series, registered with reg (none when
// nil). Several sources of one kind may share a registry: a series an
// earlier source registered is reused.
func NewMetrics(reg prometheus.Registerer, o MetricOpts) (*Metrics, error) {
	m := &Metrics{
		shards: prometheus.NewGaugeVec(o.Shards, []string{o.StreamLabel, "state"}),
		lag:    prometheus.NewGaugeVec(o.Lag, []string{o.StreamLabel, "shard"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	m.shards = promutil.Register(reg, m.shards, &err)
	m.lag = promutil.Register(reg, m.lag, &err)
	return m, err
}

// states sets how many of a stream's listed shards are in each state.
func (m *Metrics) states(stream string, open, closed, finished int) {
	if m == nil {
		return
	}
	m.shards.WithLabelValues(stream, StateOpen).Set(float64(open))
	m.shards.WithLabelValues(stream, StateClosed).Set(float64(closed))
	m.shards.WithLabelValues(stream, StateFinished).Set(float64(finished))
}

// setLag sets a shard's lag.
func (m *Metrics) setLag(stream, shard string, v float64) {
	if m == nil {
		return
	}
	m.lag.WithLabelValues(stream, shard).Set(v)
}

// forget drops a shard's lag series: it was read to its end, or is read
// elsewhere now.
func (m *Metrics) forget(stream, shard string) {
	if m == nil {
		return
	}
	m.lag.DeleteLabelValues(stream, shard)
}

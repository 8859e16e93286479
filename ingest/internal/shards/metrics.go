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
	// Records, TTLDeletes and Calls are the reader's counters of records
	// read (whatever became of them), of the Time to Live deletes among
	// them, and of GetRecords calls, labelled StreamLabel.
	Records, TTLDeletes, Calls prometheus.CounterOpts
}

// Metrics are the shard series the engine keeps for a reader. A shard's
// lag series is deleted when the shard is finished or read elsewhere, so
// the label sets stay bounded while shards roll over. A nil *Metrics
// keeps nothing. Safe for concurrent use.
type Metrics struct {
	shards *prometheus.GaugeVec
	lag    *prometheus.GaugeVec
	// Records, TTLDeletes and Calls are the reader's counters by stream
	// label (MetricOpts), which it counts itself.
	Records, TTLDeletes, Calls *prometheus.CounterVec
}

// NewMetrics makes a reader's shard series, registered with reg (none when
// nil). Several sources of one kind may share a registry: a series an
// earlier source registered is reused.
func NewMetrics(reg prometheus.Registerer, o MetricOpts) (*Metrics, error) {
	stream := []string{o.StreamLabel}
	m := &Metrics{
		shards:     prometheus.NewGaugeVec(o.Shards, []string{o.StreamLabel, "state"}),
		lag:        prometheus.NewGaugeVec(o.Lag, []string{o.StreamLabel, "shard"}),
		Records:    prometheus.NewCounterVec(o.Records, stream),
		TTLDeletes: prometheus.NewCounterVec(o.TTLDeletes, stream),
		Calls:      prometheus.NewCounterVec(o.Calls, stream),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	m.shards = promutil.Register(reg, m.shards, &err)
	m.lag = promutil.Register(reg, m.lag, &err)
	m.Records = promutil.Register(reg, m.Records, &err)
	m.TTLDeletes = promutil.Register(reg, m.TTLDeletes, &err)
	m.Calls = promutil.Register(reg, m.Calls, &err)
	return m, err
}

// InitStream creates a stream's counters at zero, so that rate() works
// from the first scrape and dashboards show the stream before its first
// record.
func (m *Metrics) InitStream(label string) {
	m.Records.WithLabelValues(label)
	m.TTLDeletes.WithLabelValues(label)
	m.Calls.WithLabelValues(label)
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

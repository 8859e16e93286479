package kinesis

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
	"github.com/hotkeyd/hotkeyd/internal/promutil"
)

// metrics are the reader's series, labelled by stream name. The shard
// engine writes the per-shard ones it names (shards.Metrics), and deletes
// a shard's when the shard is finished, so the label sets stay bounded
// while shards are split and merged; the reader counts records, Time to
// Live deletes, duplicates and calls.
type metrics struct {
	*shards.Metrics
	duplicates *prometheus.CounterVec // stream
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	engine, err := shards.NewMetrics(reg, shards.MetricOpts{
		StreamLabel: "stream",
		Lag: prometheus.GaugeOpts{
			Name: "hotkeyd_kinesis_millis_behind_latest",
			Help: "How far the last GetRecords answer of the shard was behind its newest record (MillisBehindLatest), in milliseconds.",
		},
		Shards: prometheus.GaugeOpts{
			Name: "hotkeyd_kinesis_shards",
			Help: "Kinesis shards by state: open, closed (split or merged, records left to read), finished (read to the end).",
		},
		Records: prometheus.CounterOpts{
			Name: "hotkeyd_kinesis_records_total",
			Help: "Kinesis records read, duplicates, Time to Live deletes and rejected records included.",
		},
		TTLDeletes: prometheus.CounterOpts{
			Name: "hotkeyd_kinesis_ttl_deletes_total",
			Help: "Records of items deleted by Time to Live; not counted as client writes.",
		},
		Calls: prometheus.CounterOpts{
			Name: "hotkeyd_kinesis_get_records_calls_total",
			Help: "GetRecords calls made, successful or not.",
		},
	})
	if err != nil {
		return nil, err
	}
	m := &metrics{Metrics: engine, duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hotkeyd_kinesis_duplicate_records_total",
		Help: "Records delivered again (same table and eventID as one read lately); counted once.",
	}, []string{"stream"})}
	if reg != nil {
		m.duplicates = promutil.Register(reg, m.duplicates, &err)
	}
	return m, err
}

// initStream creates a stream's counters at zero.
func (m *metrics) initStream(stream string) {
	m.InitStream(stream)
	m.duplicates.WithLabelValues(stream)
}

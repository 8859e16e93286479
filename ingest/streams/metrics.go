package streams

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotkeyd/hotkeyd/ingest/internal/shards"
	"github.com/hotkeyd/hotkeyd/internal/promutil"
)

// metrics are the reader's series, labelled by table. The shard engine
// writes the per-shard ones it names (shards.Metrics), and deletes a
// shard's when the shard is finished, so the label sets stay bounded while
// shards roll over (DynamoDB replaces every shard about every four hours);
// the reader counts records, Time to Live deletes, calls and gaps.
type metrics struct {
	*shards.Metrics
	gaps *prometheus.CounterVec // table
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	engine, err := shards.NewMetrics(reg, shards.MetricOpts{
		StreamLabel: "table",
		Lag: prometheus.GaugeOpts{
			Name: "hotkeyd_stream_iterator_age_seconds",
			Help: "Time between now and the creation time of the last stream record read from the shard; 0 once a read finds nothing new.",
		},
		Shards: prometheus.GaugeOpts{
			Name: "hotkeyd_stream_shards",
			Help: "Stream shards by state: open (still written), closed (no more writes, records left to read), finished (read to the end).",
		},
		Records: prometheus.CounterOpts{
			Name: "hotkeyd_stream_records_total",
			Help: "Stream records read, including Time to Live deletes and rejected records.",
		},
		TTLDeletes: prometheus.CounterOpts{
			Name: "hotkeyd_stream_ttl_deletes_total",
			Help: "Stream records of items deleted by Time to Live; they are not counted as client writes.",
		},
		Calls: prometheus.CounterOpts{
			Name: "hotkeyd_stream_get_records_calls_total",
			Help: "GetRecords calls made, successful or not.",
		},
	})
	if err != nil {
		return nil, err
	}
	m := &metrics{Metrics: engine, gaps: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hotkeyd_stream_trimmed_gaps_total",
		Help: "Times a shard's unread records had been trimmed (older than 24 h) and the reader skipped to the oldest record left.",
	}, []string{"table"})}
	if reg != nil {
		// Several streams sources may share one registry: reuse what an
		// earlier source registered.
		m.gaps = promutil.Register(reg, m.gaps, &err)
	}
	return m, err
}

// initTable creates a table's series at zero, so that rate() works from the
// first scrape and dashboards show the table before its first record.
func (m *metrics) initTable(table string) {
	m.InitStream(table)
	m.gaps.WithLabelValues(table)
}

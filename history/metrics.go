package history

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the history's own series: built and registered with the
// daemon's other metrics (NewMetrics), used once the store is open.
type Metrics struct {
	incidents *prometheus.CounterVec
	up        prometheus.Gauge
	dropped   *prometheus.CounterVec
	errors    prometheus.Counter
	bytes     prometheus.Gauge
}

// NewMetrics builds the series and registers them on reg (nil: none).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		incidents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hotkeyd_incidents_total",
			Help: "Incidents opened: a diagnosis raised, by its cause and severity when raised.",
		}, []string{"cause", "severity"}),
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hotkeyd_history_up",
			Help: "1 when the history database is recorded, 0 when the daemon runs without history (see the log and /-/ready).",
		}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hotkeyd_history_dropped_cells_total",
			Help: "History cells dropped before their resolution's time: to keep the database under --history.retention.size (reason=size), or not written (reason=queue_full, reason=write_error).",
		}, []string{"reason"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hotkeyd_history_write_errors_total",
			Help: "Writes to the history database that failed (a full or read-only disk).",
		}),
		bytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hotkeyd_history_bytes",
			Help: "Bytes the history database holds (pages in use).",
		}),
	}
	for _, r := range []string{"size", "queue_full", "write_error"} {
		m.dropped.WithLabelValues(r)
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.incidents, m.up, m.dropped, m.errors, m.bytes} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

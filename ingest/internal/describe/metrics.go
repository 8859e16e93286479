package describe

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotkeyd/hotkeyd/internal/promutil"
)

// metrics are the describer's series, shared by the readers of a process.
type metrics struct {
	errors  *prometheus.CounterVec // source, table, reason
	indexes *prometheus.GaugeVec   // source, table
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hotkeyd_describe_table_errors_total",
			Help: "DescribeTable calls that failed, by reason: access_denied (no dynamodb:DescribeTable permission: the table's index writes are counted only for the indexes the config declares), not_found, throttled, network, api; beyond_limits (an answer with more indexes or projected attributes than DynamoDB allows a table: those past the bounds are not counted). Reading goes on.",
		}, []string{"source", "table", "reason"}),
		indexes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hotkeyd_table_indexes",
			Help: "Secondary indexes of a table whose writes are counted from the stream's item images (from DescribeTable and the config's tables section).",
		}, []string{"source", "table"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	m.errors = promutil.Register(reg, m.errors, &err)
	m.indexes = promutil.Register(reg, m.indexes, &err)
	return m, err
}

// initTable shows a table's series from its first description on.
func (m *metrics) initTable(source, table string, indexes int) {
	m.errors.WithLabelValues(source, table, ReasonAccessDenied)
	m.indexes.WithLabelValues(source, table).Set(float64(indexes))
}

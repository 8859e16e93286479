package lease

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotkeyd/hotkeyd/internal/promutil"
)

// metrics are the coordinator's series, labelled by lease table so that
// several tables (one per source) can share a registry.
type metrics struct {
	held     *prometheus.GaugeVec   // lease_table
	workers  *prometheus.GaugeVec   // lease_table
	takes    *prometheus.CounterVec // lease_table
	steals   *prometheus.CounterVec // lease_table
	losses   *prometheus.CounterVec // lease_table
	requests *prometheus.CounterVec // lease_table, call
	peers    *prometheus.GaugeVec   // lease_table
	peerAge  *prometheus.GaugeVec   // lease_table
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hotkeyd_leases_held",
			Help: "Shard leases this worker holds now.",
		}, []string{"lease_table"}),
		workers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hotkeyd_lease_workers",
			Help: "Workers holding a live lease on the shards this worker reads, itself included, as of the last scan of the lease table.",
		}, []string{"lease_table"}),
		takes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hotkeyd_lease_takes_total",
			Help: "Unowned or expired leases this worker took.",
		}, []string{"lease_table"}),
		steals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hotkeyd_lease_steals_total",
			Help: "Live leases this worker took from a busier worker to even the spread.",
		}, []string{"lease_table"}),
		losses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hotkeyd_lease_losses_total",
			Help: "Leases this worker held and lost to another worker (stolen, or taken after it could not renew them).",
		}, []string{"lease_table"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hotkeyd_lease_requests_total",
			Help: "DynamoDB requests made on the lease table, by API call.",
		}, []string{"lease_table", "call"}),
		peers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hotkeyd_lease_peer_summaries",
			Help: "Other workers whose window summaries in the lease table are live (moved within the failover time) and are added to this worker's, as of the last read.",
		}, []string{"lease_table"}),
		peerAge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hotkeyd_lease_peer_summary_age_seconds",
			Help: "Age of the oldest live peer summary this worker judges with: seconds since this worker saw it move, as of the last read; 0 without peers. Summaries older than the failover time are dropped.",
		}, []string{"lease_table"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	m.held = promutil.Register(reg, m.held, &err)
	m.workers = promutil.Register(reg, m.workers, &err)
	m.takes = promutil.Register(reg, m.takes, &err)
	m.steals = promutil.Register(reg, m.steals, &err)
	m.losses = promutil.Register(reg, m.losses, &err)
	m.requests = promutil.Register(reg, m.requests, &err)
	m.peers = promutil.Register(reg, m.peers, &err)
	m.peerAge = promutil.Register(reg, m.peerAge, &err)
	return m, err
}

// initTable creates the table's series at zero, so that rate() and alerts
// work from the first scrape.
func (m *metrics) initTable(table string) {
	m.held.WithLabelValues(table)
	m.workers.WithLabelValues(table)
	m.takes.WithLabelValues(table)
	m.steals.WithLabelValues(table)
	m.losses.WithLabelValues(table)
	for _, call := range []string{"DescribeTable", "CreateTable", "Scan", "PutItem", "UpdateItem", "DeleteItem"} {
		m.requests.WithLabelValues(table, call)
	}
}

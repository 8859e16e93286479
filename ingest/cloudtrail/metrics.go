package cloudtrail

import "github.com/prometheus/client_golang/prometheus"

// The Source's own metrics. Events, throttled calls and rejected records
// are counted by the pipeline's shared metrics (hotkeyd_events_total,
// hotkeyd_throttled_events_total, hotkeyd_input_rejected_total); these
// count what only this reader sees.
var (
	descFilesRead = prometheus.NewDesc("hotkeyd_cloudtrail_files_read_total",
		"CloudTrail log files read to their end (truncated ones included).", nil, nil)
	descFailed = prometheus.NewDesc("hotkeyd_cloudtrail_failed_calls_total",
		"DynamoDB data calls that failed for a reason other than throttling (a failed condition, a validation error): neither traffic nor throttled.", nil, nil)
	descIgnored = prometheus.NewDesc("hotkeyd_cloudtrail_ignored_records_total",
		"CloudTrail records that are not DynamoDB data events (other services, control-plane calls, stream reads).", nil, nil)
	descKeyless = prometheus.NewDesc("hotkeyd_cloudtrail_keyless_events_total",
		"Accesses counted for their table without a partition key (Scan, PartiQL statements whose key could not be read).", nil, nil)
)

// Describe implements prometheus.Collector.
func (rd *reading) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descFilesRead, descFailed, descIgnored, descKeyless} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. Register a reader with a
// registerer wrapped with a distinguishing label when a daemon runs several
// cloudtrail sources.
func (rd *reading) Collect(ch chan<- prometheus.Metric) {
	rd.cmu.Lock()
	st, files := rd.stats, rd.files
	rd.cmu.Unlock()
	ch <- prometheus.MustNewConstMetric(descFilesRead, prometheus.CounterValue, float64(files))
	ch <- prometheus.MustNewConstMetric(descFailed, prometheus.CounterValue, float64(st.Failed))
	ch <- prometheus.MustNewConstMetric(descIgnored, prometheus.CounterValue, float64(st.Ignored))
	ch <- prometheus.MustNewConstMetric(descKeyless, prometheus.CounterValue, float64(st.Keyless))
}

package export

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
)

// The metrics of package export, every one built here: the registry with
// the runtime's collectors and hotkeyd_build_info; the Collector's and
// the ProgressCollector's descriptors; the CountingSink's, the Reporter's
// and the Server's counters. export/METRICS.md lists them with the
// readers' (TestMetricsDocumented).

// BuildInfo overrides labels of hotkeyd_build_info. The metric comes from
// client_golang's version collector, which reads
// github.com/prometheus/common/version (stamped at link time with -ldflags
// -X, the revision read from the binary's VCS information otherwise); a
// non-empty field here replaces what that package says, for a version known
// another way (the module version of go install) and for tests.
type BuildInfo struct {
	Version, Revision, GoVersion string
}

// Registry is a prometheus.Registry that keeps the collectors registered
// on it, to say which metrics it serves (Names) whether or not they have
// series yet.
type Registry struct {
	*prometheus.Registry
	mu         sync.Mutex
	collectors []prometheus.Collector
}

// Register registers c, as prometheus.Registry does, and keeps it.
func (r *Registry) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.collectors = append(r.collectors, c)
	return nil
}

// MustRegister registers cs and panics on an error, as
// prometheus.Registry does.
func (r *Registry) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// Unregister unregisters c, as prometheus.Registry does.
func (r *Registry) Unregister(c prometheus.Collector) bool {
	if !r.Registry.Unregister(c) {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.collectors = slices.DeleteFunc(r.collectors, func(k prometheus.Collector) bool { return k == c })
	return true
}

// Names returns the names of the metrics the registered collectors
// describe, and those of the collectors served beside the registry
// (Gatherers), sorted: every metric /metrics can serve, with series or not
// yet.
func (r *Registry) Names(beside ...prometheus.Collector) []string {
	r.mu.Lock()
	cs := append(slices.Clone(r.collectors), beside...)
	r.mu.Unlock()
	ch := make(chan *prometheus.Desc)
	go func() {
		for _, c := range cs {
			c.Describe(ch)
		}
		close(ch)
	}()
	var names []string
	for d := range ch {
		// A Desc says its name only in its String form.
		_, rest, _ := strings.Cut(d.String(), `fqName: "`)
		if name, _, ok := strings.Cut(rest, `"`); ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// NewRegistry returns a new registry holding the Go runtime and process
// collectors and hotkeyd_build_info, labelled version, revision and
// goversion (the contract), and branch, goos, goarch and tags (as every
// Prometheus exporter's build_info). The daemon's other collectors
// (CountingSink, Reporter, Collector, the stream readers) register on it.
func NewRegistry(bi BuildInfo) (*Registry, error) {
	labels := prometheus.Labels{}
	for name, value := range map[string]string{"version": bi.Version, "revision": bi.Revision, "goversion": bi.GoVersion} {
		if value != "" {
			labels[name] = value
		}
	}
	reg := &Registry{Registry: prometheus.NewRegistry()}
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		versioncollector.NewCollector("hotkeyd", versioncollector.WithExtraConstLabels(labels)),
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// NewSourcesRegistry returns a new empty registry, for the metrics of a
// set of sources that a reload may replace whole.
func NewSourcesRegistry() *Registry {
	return &Registry{Registry: prometheus.NewRegistry()}
}

// The Collector's metrics, built from the latest report at each scrape
// (Collect) or kept between scrapes (Gather).

// family is one metric family the Collector emits: its descriptor, and
// for Gather its name, help and label names as a registry would write
// them.
type family struct {
	index  int
	desc   *prometheus.Desc
	name   string
	help   string
	labels []*string // label names, in the order values are given
	order  []int     // label positions sorted by label name
}

func newFamily(index int, name, help string, labels ...string) *family {
	f := &family{index: index, desc: prometheus.NewDesc(name, help, labels, nil), name: name, help: help}
	for i, l := range labels {
		f.labels = append(f.labels, &l)
		f.order = append(f.order, i)
	}
	slices.SortFunc(f.order, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
	return f
}

// The families, by index (in the order of their names, as a registry
// writes them).
const (
	famDiagnosis = iota
	famHotKey
	famKeyCeilingETA
	famKeyHeadroom
	famKeyPeak
	famKeyShare
	famKeyThrottled
	famKeyThrottledMax
	famKeyUnitsPerSecond
	famKeysOmitted
	famDistinct
	famClassPeak
	famShardRecords
	numFamilies
)

var (
	families = [numFamilies]*family{
		famKeyUnitsPerSecond: newFamily(famKeyUnitsPerSecond, "hotkeyd_key_units_per_second",
			"Capacity units per second consumed by a partition key over the sliding window (read units for class=read, write units for class=write); only the table's top keys of each class are exported.",
			"table", "class", "key"),
		famKeyShare: newFamily(famKeyShare, "hotkeyd_key_share",
			"Fraction (0 to 1) of the table's capacity units of the class consumed by a partition key over the sliding window; only the table's top keys of each class are exported.",
			"table", "class", "key"),
		famKeyPeak: newFamily(famKeyPeak, "hotkeyd_key_peak_units_per_second",
			"Capacity units a partition key consumed in its busiest second of the sliding window; only the table's top keys of each class are exported. One partition serves 1000 WCU/s and 3000 RCU/s.",
			"table", "class", "key"),
		famKeyHeadroom: newFamily(famKeyHeadroom, "hotkeyd_key_headroom",
			"One partition's ceiling for the class over a partition key's busiest second: the growth of today's traffic the key takes before it throttles (10: tenfold); the same keys as hotkeyd_key_peak_units_per_second.",
			"table", "class", "key"),
		famKeyCeilingETA: newFamily(famKeyCeilingETA, "hotkeyd_key_ceiling_eta_seconds",
			"Seconds until a partition key's busiest second reaches its partition's ceiling, by the trend of its history (docs/how-it-decides.md, Forecasts); only keys whose trend grows and reaches the ceiling within four times the history's span have a series, and only top keys.",
			"table", "class", "key"),
		famClassPeak: newFamily(famClassPeak, "hotkeyd_peak_units_per_second",
			"Capacity units a table (or index) consumed in its busiest second of the sliding window, per class.",
			"table", "class"),
		famDiagnosis: newFamily(famDiagnosis, "hotkeyd_diagnosis",
			"1 while the detector flags a diagnosis, one per root cause: cause is hot_key, partition_limit, low_cardinality, time_ordered_key, hot_partition, capacity or forecast; key is its first key (the stream shard for hot_partition, empty for capacity); severity is info, warning or critical (from the peak against the partition ceiling, or for capacity the share of calls refused: alert on warning and critical); fix is write_sharding, calculated_suffix, gsi, rekey, cache, sparse_index or capacity.",
			"table", "class", "key", "cause", "severity", "fix"),
		famHotKey: newFamily(famHotKey, "hotkeyd_hot_key",
			"1 while a finding is flagged as the evidence of a diagnosis: kind is hot_key, partition_limit, low_cardinality, time_ordered_key, hot_partition (key is then the stream shard), capacity or forecast; recommendation is the fix of the diagnosis that explains it. Table-wide findings have an empty key.",
			"table", "class", "key", "kind", "recommendation"),
		famDistinct: newFamily(famDistinct, "hotkeyd_partition_keys_distinct",
			"Estimated number of distinct partition keys accessed in the sliding window (HyperLogLog).",
			"table"),
		famKeyThrottled: newFamily(famKeyThrottled, "hotkeyd_key_throttled",
			"Calls to a partition key that were throttled in the sliding window, at least (exact unless more keys were throttled than the window counts; then hotkeyd_key_throttled_max is the most); only the table's most throttled keys are exported, those known to have had more than any key not exported.",
			"table", "key"),
		famKeyThrottledMax: newFamily(famKeyThrottledMax, "hotkeyd_key_throttled_max",
			"Calls to a partition key that were throttled in the sliding window, at most: equal to hotkeyd_key_throttled when that is exact; the same keys.",
			"table", "key"),
		famShardRecords: newFamily(famShardRecords, "hotkeyd_stream_shard_records",
			"Stream records of a table's shard (one physical partition) in the sliding window, for the table's busiest shards (as many as detector.top, the keys exported per class); shard=\"other\" adds up the rest, so that the series of a table sum to its records in the window. A shard that leaves the busiest, or the window, loses its series.",
			"table", "shard"),
		famKeysOmitted: newFamily(famKeysOmitted, "hotkeyd_keys_omitted",
			"Distinct partition keys of the sliding window that have no hotkeyd_key_* series because they are outside the exported top keys; it keeps the series count bounded whatever the traffic.",
			"table"),
	}
	// The descriptors that tell apart the keys of a series (labelDeduper).
	descKeyShare     = families[famKeyShare].desc
	descDiagnosis    = families[famDiagnosis].desc
	descHotKey       = families[famHotKey].desc
	descKeyThrottled = families[famKeyThrottled].desc

	lastEvaluationName = "hotkeyd_last_evaluation_timestamp_seconds"
	lastEvaluationHelp = "Unix time of the last detector evaluation whose results these metrics show."
	descLastEvaluation = prometheus.NewDesc(lastEvaluationName, lastEvaluationHelp, nil, nil)

	partitionLimitName = "hotkeyd_partition_limit_units_per_second"
	partitionLimitHelp = "One partition's ceiling by class, as configured (detector read_limit in RCU/s, write_limit in WCU/s): what the busiest seconds and severities are judged against."
	descPartitionLimit = prometheus.NewDesc(partitionLimitName, partitionLimitHelp, []string{"class"}, nil)
)

// The ProgressCollector's metrics, read from the sources' progress at each
// scrape.
var (
	descSourceLag = prometheus.NewDesc("hotkeyd_source_lag_seconds",
		"How far the source's reading is behind the clock in event time: now less the newest event time of its slowest lane (shard, file) that still has records to read; 0 when caught up.",
		[]string{"source"}, nil)
	descLateEvents = prometheus.NewDesc("hotkeyd_late_events_total",
		"Events that arrived older than their table's window: counted in hotkeyd_events_total but in no window and no peak.",
		[]string{"source"}, nil)
)

// sinkMetrics are the CountingSink's counters of the traffic it passes on.
type sinkMetrics struct {
	events    *prometheus.CounterVec
	units     *prometheus.CounterVec
	throttled *prometheus.CounterVec
	lastBatch *prometheus.GaugeVec
}

// newSinkMetrics returns the CountingSink's counters, unregistered.
func newSinkMetrics() sinkMetrics {
	return sinkMetrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hotkeyd_events_total",
			Help: "Accesses (reads or writes of an item or item collection) counted, by table (an index as table/index), class and source. Throttled calls are not counted.",
		}, []string{"table", "class", "source"}),
		units: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hotkeyd_units_total",
			Help: "Capacity units consumed, by table (an index as table/index) and class: read capacity units for class=read, write capacity units for class=write. Throttled calls are not counted.",
		}, []string{"table", "class"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hotkeyd_throttled_events_total",
			Help: "Calls that failed with a throttling error, by table (an index as table/index) and class, as reported by sources that see failed calls (CloudTrail; JSON lines and HTTP ingest that say so).",
		}, []string{"table", "class"}),
		lastBatch: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hotkeyd_source_last_batch_timestamp_seconds",
			Help: "Unix time at which a source last handed over a batch of events that was accepted.",
		}, []string{"source"}),
	}
}

// newTableSetMetrics returns the CountingSink's counter of the events of
// tables not tracked, and with it the collectors of the tables ts tracks
// and has evicted.
func newTableSetMetrics(ts TableSet) (*prometheus.CounterVec, []prometheus.Collector) {
	untracked := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hotkeyd_untracked_events_total",
		Help: "Events not counted because their table was not tracked: more tables had traffic than max_tables, and theirs was among the least.",
	}, []string{"source"})
	tracked := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "hotkeyd_tables_tracked",
		Help: "Tables and indexes tracked now (at most max_tables).",
	}, func() float64 { return float64(ts.Tables()) })
	evicted := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "hotkeyd_tables_evicted_total",
		Help: "Tables and indexes dropped from tracking to make room for a busier one.",
	}, func() float64 { return float64(ts.Evicted()) })
	return untracked, []prometheus.Collector{untracked, tracked, evicted}
}

// newReporterMetrics returns the Reporter's counters of rejected input,
// of members outside the input's format and of source errors.
func newReporterMetrics() (rejected, unknown, errors *prometheus.CounterVec) {
	rejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hotkeyd_input_rejected_total",
		Help: "Input lines or records a source could not use and skipped, by source and reason (bad_json, too_long, bad_utf8, missing_table, bad_table, missing_pk, bad_type, bad_units, bad_time, bad_op, bad_record, bad_file, key_too_long, bad_throttle_reason, misspelled_field, duplicate_field, beyond_dynamodb_limits).",
	}, []string{"source", "reason"})
	unknown = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hotkeyd_input_unknown_fields_total",
		Help: "Members of accepted input lines that are no field of the input's format (a request_id in an access log), ignored, by source; the log names each name once.",
	}, []string{"source"})
	errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hotkeyd_source_errors_total",
		Help: "Failures reading a source itself (an unreadable file, an AWS API error), by source and reason.",
	}, []string{"source", "reason"})
	return rejected, unknown, errors
}

// newRefusedCounter registers hotkeyd_http_requests_refused_total on reg
// (nil: an unregistered counter), with the refusals that can happen set to
// 0: 401 on every path but the probes, and with ingest 413, 415 and 429 on its path.
func newRefusedCounter(reg prometheus.Registerer, ingest bool) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hotkeyd_http_requests_refused_total",
		Help: "HTTP requests refused, by path and status: 401 (credentials), 413 (body too large), 415 (not JSON lines), 429 (over a rate limit).",
	}, []string{"path", "code"})
	for _, p := range routes {
		if !slices.Contains(probePaths, p) {
			c.WithLabelValues(p, "401")
		}
	}
	if ingest {
		for _, code := range []string{"413", "415", "429"} {
			c.WithLabelValues("/api/v1/events", code)
		}
	}
	if reg != nil {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register http metrics: %w", err)
		}
	}
	return c, nil
}

// Reasons of hotkeyd_http_connections_closed_total.
const (
	closedPerClient = "client_cap"
	closedCapFull   = "cap_full"
)

// newClosedCounter registers hotkeyd_http_connections_closed_total on reg
// (nil: an unregistered counter), both reasons at 0.
func newClosedCounter(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hotkeyd_http_connections_closed_total",
		Help: "HTTP connections the server closed to keep its caps, by reason: client_cap (one client address held --web.max-connections-per-client already: the new one is closed), cap_full (--web.max-connections were held: the one gone longest without progress is closed to make room).",
	}, []string{"reason"})
	c.WithLabelValues(closedPerClient)
	c.WithLabelValues(closedCapFull)
	if reg != nil {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register http metrics: %w", err)
		}
	}
	return c, nil
}

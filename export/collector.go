package export

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// DefaultTopN is the number of keys exported per table and class when
// CollectorConfig.TopN is zero.
const DefaultTopN = 10

// CollectorConfig configures a Collector.
type CollectorConfig struct {
	// TopN is the number of keys exported per table and class (and of
	// throttled keys per table). Zero means DefaultTopN.
	TopN int
	// Masker masks the key label values; nil shows keys as they are.
	Masker *KeyMasker
	// Replica is, with replicas sharing a lease table, this replica's
	// worker id: it then exports only the series it is the source of (see
	// detect.Raisers): its tables' table-wide series, the keys its shards carry,
	// the diagnoses it raises and their findings. Empty exports everything.
	Replica string
}

// Collector is a prometheus.Collector over the latest State in a Live: it
// renders the report's top keys of every table and class with their rates
// and peaks, the classes' peaks, the flagged diagnoses and the findings
// they explain, distinct partition keys, throttled keys, and how many keys
// were left out. It computes no share, rate or ranking of its own: those are
// the report's.
//
// Every metric is a const metric built from the State, so a key that left
// the top-K is simply not emitted at the next scrape and the number of series
// is bounded by tables × classes × TopN whatever the number of distinct keys.
// The metrics are built at each scrape, a table at a time, and kept by
// nobody: cached, they cost about 25 KiB a table between scrapes (1 000
// tables: 25 MB), while a State changes every second and scrapes come
// every 15 s or more, so a cache was rarely reused.
type Collector struct {
	live    *Live
	topN    int
	masker  *KeyMasker
	replica string
}

var (
	descKeyUnitsPerSecond = prometheus.NewDesc("hotkeyd_key_units_per_second",
		"Capacity units per second consumed by a partition key over the sliding window (read units for class=read, write units for class=write); only the table's top keys of each class are exported.",
		[]string{"table", "class", "key"}, nil)
	descKeyShare = prometheus.NewDesc("hotkeyd_key_share",
		"Fraction (0 to 1) of the table's capacity units of the class consumed by a partition key over the sliding window; only the table's top keys of each class are exported.",
		[]string{"table", "class", "key"}, nil)
	descKeyPeak = prometheus.NewDesc("hotkeyd_key_peak_units_per_second",
		"Capacity units a partition key consumed in its busiest second of the sliding window; only the table's top keys of each class are exported. One partition serves 1000 WCU/s and 3000 RCU/s.",
		[]string{"table", "class", "key"}, nil)
	descClassPeak = prometheus.NewDesc("hotkeyd_peak_units_per_second",
		"Capacity units a table (or index) consumed in its busiest second of the sliding window, per class.",
		[]string{"table", "class"}, nil)
	descDiagnosis = prometheus.NewDesc("hotkeyd_diagnosis",
		"1 while the detector flags a diagnosis, one per root cause: cause is hot_key, partition_limit, low_cardinality, time_ordered_key or hot_partition; key is its first key (the stream shard for hot_partition); severity is info, warning or critical (from the peak against the partition ceiling: alert on warning and critical); fix is write_sharding, calculated_suffix, gsi, rekey, cache or sparse_index.",
		[]string{"table", "class", "key", "cause", "severity", "fix"}, nil)
	descHotKey = prometheus.NewDesc("hotkeyd_hot_key",
		"1 while a finding is flagged as the evidence of a diagnosis: kind is hot_key, partition_limit, low_cardinality, time_ordered_key or hot_partition (key is then the stream shard); recommendation is the fix of the diagnosis that explains it. Table-wide findings have an empty key.",
		[]string{"table", "class", "key", "kind", "recommendation"}, nil)
	descDistinct = prometheus.NewDesc("hotkeyd_partition_keys_distinct",
		"Estimated number of distinct partition keys accessed in the sliding window (HyperLogLog).",
		[]string{"table"}, nil)
	descKeyThrottled = prometheus.NewDesc("hotkeyd_key_throttled",
		"Calls to a partition key that were throttled in the sliding window, at least (exact unless more keys were throttled than the window counts; then hotkeyd_key_throttled_max is the most); only the table's most throttled keys are exported, those known to have had more than any key not exported.",
		[]string{"table", "key"}, nil)
	descKeyThrottledMax = prometheus.NewDesc("hotkeyd_key_throttled_max",
		"Calls to a partition key that were throttled in the sliding window, at most: equal to hotkeyd_key_throttled when that is exact; the same keys.",
		[]string{"table", "key"}, nil)
	descKeysOmitted = prometheus.NewDesc("hotkeyd_keys_omitted",
		"Distinct partition keys of the sliding window that have no hotkeyd_key_* series because they are outside the exported top keys; it keeps the series count bounded whatever the traffic.",
		[]string{"table"}, nil)
	descLastEvaluation = prometheus.NewDesc("hotkeyd_last_evaluation_timestamp_seconds",
		"Unix time of the last detector evaluation whose results these metrics show.",
		nil, nil)
)

// NewCollector returns a Collector reading live.
func NewCollector(live *Live, cfg CollectorConfig) *Collector {
	if cfg.TopN <= 0 {
		cfg.TopN = DefaultTopN
	}
	return &Collector{live: live, topN: cfg.TopN, masker: cfg.Masker, replica: cfg.Replica}
}

// Describe sends the descriptors of every metric the Collector emits.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descKeyUnitsPerSecond, descKeyShare, descKeyPeak, descClassPeak, descDiagnosis, descHotKey, descDistinct, descKeyThrottled, descKeyThrottledMax, descKeysOmitted, descLastEvaluation} {
		ch <- d
	}
}

// Collect sends the metrics of the latest State; nothing before the first.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.live.Load()
	if st == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(descLastEvaluation, prometheus.GaugeValue, float64(st.Updated.UnixNano())/1e9)
	b := labelDeduper{}
	var ms []prometheus.Metric
	for i := range st.Report.Tables {
		ms = c.buildTable(ms[:0], &b, &st.Report.Tables[i])
		for _, m := range ms {
			ch <- m
		}
	}
}

// buildTable appends the metrics of one table or index: its classes' peaks,
// its top keys (the report's numbers, at most TopN per class), distinct and
// omitted keys, throttled keys, flagged diagnoses and their findings.
func (c *Collector) buildTable(ms []prometheus.Metric, b *labelDeduper, t *report.TableReport) []prometheus.Metric {
	table := TableLabel(t.Table, t.Index)
	tableWide := c.mine(t.Replica)
	if tableWide {
		ms = append(ms, prometheus.MustNewConstMetric(descDistinct, prometheus.GaugeValue, float64(t.DistinctPartitionKeys), table))
		for _, cr := range t.Classes {
			ms = append(ms, prometheus.MustNewConstMetric(descClassPeak, prometheus.GaugeValue, cr.PeakUnitsPerSecond, table, cr.Class))
		}
	}

	exported := make(map[string]struct{}, traffic.NumClasses*c.topN)
	perClass := map[string]int{}
	for _, k := range t.TopKeys {
		if perClass[k.Class] == c.topN {
			continue
		}
		perClass[k.Class]++
		exported[k.Key] = struct{}{}
		if !c.mine(k.Replica) {
			continue
		}
		key := b.unique(descKeyShare, table+"\xff"+k.Class, c.masker.Mask(k.Key))
		ms = append(ms,
			prometheus.MustNewConstMetric(descKeyUnitsPerSecond, prometheus.GaugeValue, k.UnitsPerSecond, table, k.Class, key),
			prometheus.MustNewConstMetric(descKeyShare, prometheus.GaugeValue, k.Share, table, k.Class, key),
			prometheus.MustNewConstMetric(descKeyPeak, prometheus.GaugeValue, k.PeakUnitsPerSecond, table, k.Class, key))
	}
	omitted := uint64(0)
	if t.DistinctPartitionKeys > uint64(len(exported)) {
		omitted = t.DistinctPartitionKeys - uint64(len(exported))
	}
	if !tableWide {
		return c.buildDiagnoses(ms, b, t, table)
	}
	ms = append(ms, prometheus.MustNewConstMetric(descKeysOmitted, prometheus.GaugeValue, float64(omitted), table))

	for _, k := range t.ThrottledKeys[:min(len(t.ThrottledKeys), c.topN)] {
		key := b.unique(descKeyThrottled, table, c.masker.Mask(k.Key))
		ms = append(ms, prometheus.MustNewConstMetric(descKeyThrottled, prometheus.GaugeValue, float64(k.Count), table, key),
			prometheus.MustNewConstMetric(descKeyThrottledMax, prometheus.GaugeValue, float64(max(k.Count, k.CountMax)), table, key))
	}
	return c.buildDiagnoses(ms, b, t, table)
}

// buildDiagnoses appends the series of the table's flagged diagnoses this
// replica raises, and of the findings they explain.
func (c *Collector) buildDiagnoses(ms []prometheus.Metric, b *labelDeduper, t *report.TableReport, table string) []prometheus.Metric {
	var others map[report.Explained]bool
	// Every diagnosis and finding is about a top key, a table-wide cause or
	// a shard: bounded like the keys, and capped the same way for safety.
	maxFindings := 2 * traffic.NumClasses * c.topN
	for _, d := range t.Diagnoses[:min(len(t.Diagnoses), maxFindings)] {
		if !c.mine(d.RaisedBy) {
			if others == nil {
				others = map[report.Explained]bool{}
			}
			for _, e := range d.Explains {
				others[e] = true
			}
			continue
		}
		fix := "none"
		if d.Fix.Kind != "" {
			fix = string(d.Fix.Kind)
		}
		key := b.unique(descDiagnosis, table+"\xff"+d.Class+"\xff"+string(d.Cause)+"\xff"+string(d.Severity)+"\xff"+fix, c.masker.DiagnosisKey(d))
		ms = append(ms, prometheus.MustNewConstMetric(descDiagnosis, prometheus.GaugeValue, 1, table, d.Class, key, string(d.Cause), string(d.Severity), fix))
	}
	for _, f := range t.Findings[:min(len(t.Findings), maxFindings)] {
		if others[report.Explained{Kind: f.Kind, Key: f.Key, Class: f.Class}] {
			continue
		}
		rec := "none"
		if f.Recommendation != nil && f.Recommendation.Kind != "" {
			rec = string(f.Recommendation.Kind)
		}
		key := b.unique(descHotKey, table+"\xff"+f.Class+"\xff"+string(f.Kind)+"\xff"+rec, c.masker.FindingKey(f))
		ms = append(ms, prometheus.MustNewConstMetric(descHotKey, prometheus.GaugeValue, 1, table, f.Class, key, string(f.Kind), rec))
	}
	return ms
}

// mine reports whether this replica exports the series of something the
// replica named by is the source of.
func (c *Collector) mine(by string) bool {
	return c.replica == "" || by == "" || by == c.replica
}

// labelDeduper keeps masked keys unique within a metric's other labels. In
// redact mode every "USER#" key masks to "USER#<redacted>", and two series
// with the same labels would fail the scrape; repeats get "~2", "~3"...
// appended, in rank order.
type labelDeduper map[labelID]int

type labelID struct {
	desc   *prometheus.Desc
	labels string
	key    string
}

func (d labelDeduper) unique(desc *prometheus.Desc, labels, key string) string {
	id := labelID{desc, labels, key}
	n := d[id]
	d[id] = n + 1
	if n == 0 {
		return key
	}
	return key + "~" + strconv.Itoa(n+1)
}

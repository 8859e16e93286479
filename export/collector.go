package export

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// CollectorConfig configures a Collector.
type CollectorConfig struct {
	// Masker masks the key label values; nil shows keys as they are.
	Masker *KeyMasker
	// Replica is, with replicas sharing a lease table, this replica's
	// worker id: it then exports only the series it is the source of (see
	// detect.Raisers): its tables' table-wide series, the keys its shards carry,
	// the diagnoses it raises and their findings. Empty exports everything.
	Replica string
}

// Collector renders the latest State in a Live as metrics: the report's
// top keys of every table and class with their rates and peaks, the
// classes' peaks, the flagged diagnoses and the findings they explain,
// distinct partition keys, throttled keys, and how many keys were left
// out. It computes no share, rate or ranking of its own: those are the
// report's.
//
// It is a prometheus.Collector of const metrics, built at each scrape (a
// key that left the top-K is simply not emitted at the next scrape, and the
// number of series is bounded by tables × classes × top whatever the
// number of distinct keys: the report's top keys, as many per class as its
// settings say, report.Settings.Top, which is detector.top), and a
// prometheus.Gatherer (Gather) that keeps each table's series between
// calls while the table's report stays as it was (State.Revisions). The
// series are the same either way, in the same order. The daemon serves it
// through an Exposition, which keeps each table's text too, so that a
// scrape of idle tables builds, checks, sorts and encodes nothing again.
type Collector struct {
	live    *Live
	masker  *KeyMasker
	replica string

	// What Gather keeps, guarded by mu: each table's series by its label,
	// from the State last gathered, and the families of all of them.
	mu     sync.Mutex
	state  *State
	tables map[string]*tableSeries
	merged [numFamilies]*dto.MetricFamily
}

// partitionLimits returns the ceilings a report was judged by, by class
// label value.
func partitionLimits(st *State) [traffic.NumClasses]struct {
	class string
	limit float64
} {
	s := st.Report.Settings
	return [traffic.NumClasses]struct {
		class string
		limit float64
	}{{traffic.Read.String(), s.ReadLimit}, {traffic.Write.String(), s.WriteLimit}}
}

// NewCollector returns a Collector reading live.
func NewCollector(live *Live, cfg CollectorConfig) *Collector {
	return &Collector{live: live, masker: cfg.Masker, replica: cfg.Replica, tables: map[string]*tableSeries{}}
}

// Describe sends the descriptors of every metric the Collector emits.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range families {
		ch <- f.desc
	}
	ch <- descLastEvaluation
	ch <- descPartitionLimit
}

// emitter receives one series: its family, value and label values in the
// family's order.
type emitter func(f *family, v float64, labels ...string)

// Collect sends the metrics of the latest State; nothing before the first.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.live.Load()
	if st == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(descLastEvaluation, prometheus.GaugeValue, float64(st.Updated.UnixNano())/1e9)
	for _, l := range partitionLimits(st) {
		ch <- prometheus.MustNewConstMetric(descPartitionLimit, prometheus.GaugeValue, l.limit, l.class)
	}
	emit := func(f *family, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(f.desc, prometheus.GaugeValue, v, labels...)
	}
	for i := range st.Report.Tables {
		c.buildTable(emit, labelDeduper{}, &st.Report.Tables[i], st.Report.Settings.Top)
	}
}

// buildTable emits the metrics of one table or index: its classes' peaks,
// its top keys (the report's numbers, at most top per class), distinct and
// omitted keys, throttled keys, flagged diagnoses and their findings.
func (c *Collector) buildTable(emit emitter, b labelDeduper, t *report.TableReport, top int) {
	table := TableLabel(t.Table, t.Index)
	tableWide := c.mine(t.Replica)
	if tableWide {
		emit(families[famDistinct], float64(t.DistinctPartitionKeys), table)
		for _, cr := range t.Classes {
			emit(families[famClassPeak], cr.PeakUnitsPerSecond, table, cr.Class)
		}
	}

	exported := make(map[string]struct{}, traffic.NumClasses*top)
	perClass := map[string]int{}
	forecasts := forecastsOf(t)
	for _, k := range t.TopKeys {
		if perClass[k.Class] == top {
			continue
		}
		perClass[k.Class]++
		exported[k.Key] = struct{}{}
		if !c.mine(k.Replica) {
			continue
		}
		key := b.unique(descKeyShare, table+"\xff"+k.Class, c.masker.Mask(k.Key))
		emit(families[famKeyUnitsPerSecond], k.UnitsPerSecond, table, k.Class, key)
		emit(families[famKeyShare], k.Share, table, k.Class, key)
		emit(families[famKeyPeak], k.PeakUnitsPerSecond, table, k.Class, key)
		if f, ok := forecasts[keyClass{k.Key, k.Class}]; ok {
			emitForecast(emit, f, table, key)
		}
	}
	omitted := uint64(0)
	if t.DistinctPartitionKeys > uint64(len(exported)) {
		omitted = t.DistinctPartitionKeys - uint64(len(exported))
	}
	if !tableWide {
		c.buildDiagnoses(emit, b, t, table, top)
		return
	}
	emit(families[famKeysOmitted], float64(omitted), table)
	for _, sh := range t.Shards[:min(len(t.Shards), max(top, 1)+1)] { // the busiest and the rest (report.OtherShards)
		emit(families[famShardRecords], float64(sh.Records), table, sh.Shard)
	}

	for _, k := range t.ThrottledKeys[:min(len(t.ThrottledKeys), top)] {
		key := b.unique(descKeyThrottled, table, c.masker.Mask(k.Key))
		emit(families[famKeyThrottled], float64(k.Count), table, key)
		emit(families[famKeyThrottledMax], float64(max(k.Count, k.CountMax)), table, key)
	}
	c.buildDiagnoses(emit, b, t, table, top)
}

// buildDiagnoses emits the series of the table's flagged diagnoses this
// replica raises, and of the findings they explain.
func (c *Collector) buildDiagnoses(emit emitter, b labelDeduper, t *report.TableReport, table string, top int) {
	var others map[report.Explained]bool
	// Every diagnosis and finding is about a top key, a table-wide cause or
	// a shard: bounded like the keys the charts follow, and capped so for
	// safety.
	maxFindings := traffic.NumClasses * report.ChartKeys(top)
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
		emit(families[famDiagnosis], 1, table, d.Class, key, string(d.Cause), string(d.Severity), fix)
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
		emit(families[famHotKey], 1, table, f.Class, key, string(f.Kind), rec)
	}
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

// keyClass names a key of one class.
type keyClass struct{ key, class string }

// forecastsOf indexes a table's forecasts by key and class; nil when it
// has none.
func forecastsOf(t *report.TableReport) map[keyClass]*report.Forecast {
	if len(t.Forecasts) == 0 {
		return nil
	}
	m := make(map[keyClass]*report.Forecast, len(t.Forecasts))
	for i := range t.Forecasts {
		f := &t.Forecasts[i]
		m[keyClass{f.Key, f.Class}] = f
	}
	return m
}

// emitForecast emits a top key's headroom and, when its trend reaches the
// ceiling, the seconds until it does.
func emitForecast(emit emitter, f *report.Forecast, table, key string) {
	if f.Headroom > 0 {
		emit(families[famKeyHeadroom], f.Headroom, table, f.Class, key)
	}
	if f.SecondsToCeiling != nil {
		emit(families[famKeyCeilingETA], *f.SecondsToCeiling, table, f.Class, key)
	}
}

package report

import "time"

// Report is the analysis of one snapshot: the JSON document printed by
// `hotkeyd analyze --format json` and served at /api/v1/hotkeys. Its shape
// is a contract (docs/analyze.md); change
// it only on purpose and everywhere.
type Report struct {
	Start    time.Time     `json:"start"`
	End      time.Time     `json:"end"`
	Events   uint64        `json:"events"`
	Rejected uint64        `json:"rejected"`
	Tables   []TableReport `json:"tables"`
	// Notes says, in sentences, what a reader of the report must know about
	// how its numbers were counted (for example that CloudTrail input counts
	// one unit per item). Absent when there is nothing to say.
	Notes []string `json:"notes,omitempty"`
	// BadTime says which events were refused for their time (counted in
	// Rejected as bad_time) and why. Absent when none was.
	BadTime *BadTime `json:"bad_time,omitempty"`
	// Sources is, in the daemon, how far each source has read in event
	// time; absent in analyze.
	Sources []SourceProgress `json:"sources,omitempty"`
	// Settings are the detector settings the report was judged by: what
	// every rendering draws against (the threshold on the share bars, the
	// ceilings and fractions of the severities). The window it was judged
	// over is Start to End.
	Settings Settings `json:"settings"`
}

// Settings are the detector settings (detect.Settings) a report was judged
// by, by their names in the config file.
type Settings struct {
	// Threshold is the share of a table's units of one class that makes a
	// key hot.
	Threshold float64 `json:"threshold"`
	// WarnFraction and LimitFraction of a partition's ceiling are where a
	// key's peak makes its diagnosis a warning and critical.
	WarnFraction  float64 `json:"warn_fraction"`
	LimitFraction float64 `json:"limit_fraction"`
	// ReadLimit and WriteLimit are one partition's ceilings, in RCU/s and
	// WCU/s.
	ReadLimit  float64 `json:"read_limit"`
	WriteLimit float64 `json:"write_limit"`
	// Top is the number of keys per class listed in a table's top_keys.
	Top int `json:"top"`
	// CapacityWarnShare and CapacityCriticalShare are the shares of a
	// class's calls throttled for capacity where a capacity diagnosis is
	// a warning and critical.
	CapacityWarnShare     float64 `json:"capacity_warn_share"`
	CapacityCriticalShare float64 `json:"capacity_critical_share"`
	// ForecastHorizonSeconds is forecast_horizon in seconds: how far
	// ahead a forecast warns, and how far the page draws a trend that
	// does not reach the ceiling sooner.
	ForecastHorizonSeconds float64 `json:"forecast_horizon_seconds"`
}

// BadTime is the events refused for their time, by why: so that a few
// times that make no sense never stretch the window the rates are taken
// over.
type BadTime struct {
	// Events is every event refused for its time: Refused and Outliers.
	Events uint64 `json:"events"`
	// Refused counts times that make no sense on their own: that cannot
	// be read, before 2012 (DynamoDB did not exist), or more than a day
	// after the clock.
	Refused uint64 `json:"refused"`
	// Outliers counts the few events far in time from the rest of the
	// input (more than a day, and more than the rest spans), left out of
	// the window; OutliersFrom and OutliersTo bound their hours.
	Outliers     uint64     `json:"outliers"`
	OutliersFrom *time.Time `json:"outliers_from,omitempty"`
	OutliersTo   *time.Time `json:"outliers_to,omitempty"`
}

// SourceProgress is one source's reading in event time (the daemon).
type SourceProgress struct {
	// Source is the source label ("dynamodb-streams", "cloudtrail", ...).
	Source string `json:"source"`
	// Watermark is the event time up to which the source has delivered
	// its events: its seconds up to here are judged.
	Watermark time.Time `json:"watermark"`
	// LagSeconds is how far its slowest lane that still has records to
	// read is behind the clock; 0 when caught up.
	LagSeconds float64 `json:"lag_seconds"`
	// DelaySeconds is the source's normal delivery delay (900 for
	// CloudTrail, 0 for streams and logs).
	DelaySeconds float64 `json:"delay_seconds,omitempty"`
	// CatchingUp is set while the lag is more than 10 s beyond the normal
	// delivery delay: the source reads a backlog, which is judged at the
	// rates it happened.
	CatchingUp bool `json:"catching_up"`
}

// TableReport is one table's, or one index's, part of a Report.
type TableReport struct {
	Table                 string  `json:"table"`
	Index                 string  `json:"index,omitempty"`
	Events                uint64  `json:"events"`
	ReadUnits             float64 `json:"read_units"`
	WriteUnits            float64 `json:"write_units"`
	DistinctPartitionKeys uint64  `json:"distinct_partition_keys"`
	// Classes holds the table's reads and writes: totals, mean and peak
	// rates, and the partition ceiling they are judged against.
	Classes []ClassReport `json:"classes"`
	TopKeys []TopKey      `json:"top_keys"`
	// Diagnoses are the root causes, one per cause, each with its one fix:
	// what to act on. Ranked critical first.
	Diagnoses []Diagnosis `json:"diagnoses"`
	// Findings are the evidence: every rule that fired, each explained by
	// exactly one diagnosis.
	Findings []Finding `json:"findings"`
	// ThrottledKeys are the most throttled keys, both classes together,
	// each exact or within the bounds it is known in; a key is listed only
	// when it is known to have had more throttled calls than
	// ThrottledBound.
	ThrottledKeys []ThrottledKey `json:"throttled_keys,omitempty"`
	// ThrottledBound is the most throttled calls a key not listed in
	// ThrottledKeys can have had in the window: 0 (absent) when every
	// throttled key was counted exactly and all of them are listed.
	ThrottledBound uint64 `json:"throttled_keys_bound,omitempty"`
	// Quiet says why the entry has no diagnosis at warning or above although
	// its heaviest key is above the threshold; absent otherwise.
	Quiet *Quiet `json:"quiet,omitempty"`
	// Replica is, with replicas sharing a lease table, the worker id of the
	// replica that raises the table-wide causes and exports the table's
	// table-wide series: the one reading its lowest shard. Absent with one
	// process.
	Replica string `json:"replica,omitempty"`
	// Forecasts are, one per key judged (the keys of TopKeys), its
	// headroom and where its trend takes it (detect.Foresee); absent when
	// no forecast was made.
	Forecasts []Forecast `json:"forecasts,omitempty"`
	// Scale is the 10× / 100× view: the keys that would throttle at ten
	// and at a hundred times today's traffic, each at the smallest of the
	// two, with the fix it would then need. Absent when none would.
	Scale []ScaleKey `json:"scale,omitempty"`
	// Shards are the stream shards' records in the window (a shard is one
	// physical partition): the busiest Settings.Top, most first, then,
	// when the table has more, their rest as one entry named OtherShards.
	// Absent for a table not read from a stream. The collector exports
	// them (hotkeyd_stream_shard_records); they are not in the report's
	// JSON, where the history's cells carry the shards over time.
	Shards []ShardRecords `json:"-"`
	// Incidents are, in hotkeyd analyze, the diagnoses the live detector
	// would have flagged watching the input's traffic in event time, each
	// from the time it was raised to the time it cleared, oldest first;
	// absent when none was (and in the live reports, whose incidents are
	// the history's, GET /api/v1/incidents).
	Incidents []Incident `json:"incidents,omitempty"`
}

// OtherShards names the entry of TableReport.Shards that adds up the
// shards past the busiest: no shard id of DynamoDB Streams or Kinesis
// ("shardId-...") is spelt so.
const OtherShards = "other"

// ShardRecords is a stream shard's records in the window.
type ShardRecords struct {
	Shard   string
	Records uint64
}

// Incident is one diagnosis from the time it was raised to the time it
// cleared: the shape of an element of GET /api/v1/incidents
// (history/view.Incident), given per table entry by hotkeyd analyze.
type Incident struct {
	// ID names the incident as the daemon's history would (a hash of its
	// table, cause, class, key and start: it carries no key).
	ID    string   `json:"id"`
	Table string   `json:"table"`
	Index string   `json:"index"`
	Cause string   `json:"cause"`
	Keys  []string `json:"keys"`
	Class string   `json:"class"`
	// Severity is the highest the diagnosis reached.
	Severity string    `json:"severity"`
	Start    time.Time `json:"start"`
	// End is nil while the incident is open: at the end of the input.
	End *time.Time `json:"end"`
	// Peak is the highest busiest second of the diagnosis's hottest key.
	Peak    float64 `json:"peak_units_per_second"`
	Summary string  `json:"summary"`
	Fix     string  `json:"fix"`
	// FixKind is the kind of the fix (write_sharding, capacity, ...).
	FixKind string `json:"fix_kind"`
}

// Forecast is what a key's history says of its growth: its headroom
// today, its trend, and when the trend takes its busiest second to the
// partition's ceiling (docs/how-it-decides.md, "Forecasts").
type Forecast struct {
	Key   string `json:"key"`
	Class string `json:"class"`
	// PeakUnitsPerSecond is the key's busiest second; Limit the partition
	// ceiling of its class; Headroom is Limit over PeakUnitsPerSecond: the
	// growth of today's traffic it can take before it throttles.
	PeakUnitsPerSecond float64 `json:"peak_units_per_second"`
	Limit              float64 `json:"limit"`
	Headroom           float64 `json:"headroom"`
	// TrendPerDay is how many units per second the key's busiest second
	// gains a day (negative when it shrinks); null where the history is
	// too short or too noisy to tell.
	TrendPerDay *float64 `json:"trend_per_day"`
	// Growth is the trend's shape, linear or compounding, and
	// GrowthPerDay the fraction the busiest second grows by a day (0.1 is
	// 10 % a day); absent with no trend.
	Growth       string   `json:"growth,omitempty"`
	GrowthPerDay *float64 `json:"growth_per_day,omitempty"`
	// FittedPeakUnitsPerSecond is the busiest second the fit gives at
	// FittedAt, the end of the span the forecast was made over: where the
	// trend projects from (the page's forecast line starts there). Both
	// are absent with no trend.
	FittedPeakUnitsPerSecond *float64   `json:"fitted_peak_units_per_second,omitempty"`
	FittedAt                 *time.Time `json:"fitted_at,omitempty"`
	// ReachesCeilingAt is when the trend takes the busiest second to
	// Limit; null where no trend takes it there (a key that does not grow
	// never gets one).
	ReachesCeilingAt *time.Time `json:"reaches_ceiling_at"`
	// SecondsToCeiling is ReachesCeilingAt less the end of the judged
	// span (what hotkeyd_key_ceiling_eta_seconds shows); absent with it.
	SecondsToCeiling *float64 `json:"seconds_to_ceiling,omitempty"`
	// Confidence is the fit's R², 0 to 1: how much of the key's variation
	// about its like-hour levels the trend explains. Under 0.7 there is no
	// trend.
	Confidence float64 `json:"confidence"`
	// Days is how many days of history the forecast was fitted on.
	Days float64 `json:"days"`
	// Note says why there is no trend or no time to the ceiling.
	Note string `json:"note,omitempty"`
}

// ScaleKey is a key that would throttle at Factor times today's traffic,
// and the fix it would then need.
type ScaleKey struct {
	// Factor is 10 or 100: the smallest growth of today's traffic at
	// which the key's busiest second passes its partition's ceiling.
	Factor int    `json:"factor"`
	Key    string `json:"key"`
	Class  string `json:"class"`
	// PeakUnitsPerSecond is the key's busiest second at Factor times
	// today's, Limit the ceiling it passes.
	PeakUnitsPerSecond float64 `json:"peak_units_per_second"`
	Limit              float64 `json:"limit"`
	// Fix is the fix the key would then need.
	Fix Recommendation `json:"fix"`
}

// Idle reports whether the entry has nothing in its window: no events, no
// throttled calls, no findings and no diagnoses. A live window keeps a
// table whose traffic has left it (a CloudTrail table between two
// deliveries); the live API leaves such an entry out unless its table is
// asked for by name.
func (t TableReport) Idle() bool {
	return t.Events == 0 && len(t.ThrottledKeys) == 0 && len(t.Findings) == 0 && len(t.Diagnoses) == 0
}

// ClassReport is one class of a table: its traffic in the window.
type ClassReport struct {
	// Class is "read" or "write".
	Class  string  `json:"class"`
	Events uint64  `json:"events"`
	Units  float64 `json:"units"`
	// UnitsPerSecond is Units over the window (at least one second);
	// PeakUnitsPerSecond the class's busiest second (see
	// TopKey.PeakUnitsPerSecond).
	UnitsPerSecond     float64 `json:"units_per_second"`
	PeakUnitsPerSecond float64 `json:"peak_units_per_second"`
	// Limit is one partition's ceiling for the class, units per second.
	Limit float64 `json:"limit"`
	// Throttled counts the class's calls refused by throttling in the
	// window: never part of Events or Units.
	Throttled uint64 `json:"throttled,omitempty"`
}

// TopKey is one of the heaviest partition keys of a class.
type TopKey struct {
	Key string `json:"key"`
	// KeyText is the text a binary key's bytes hold, beside its base64
	// (KeyText); absent for other keys, and for masked keys.
	KeyText string  `json:"key_text,omitempty"`
	Class   string  `json:"class"`
	Units   float64 `json:"units"`
	// Share is Units over the table's units of the class, 0 to 1.
	Share float64 `json:"share"`
	// UnitsPerSecond is Units over the window's duration, at least one
	// second (an addition to the contract's fields; what
	// hotkeyd_key_units_per_second shows).
	UnitsPerSecond float64 `json:"units_per_second,omitempty"`
	// PeakUnitsPerSecond is the key's highest one-second rate in the window
	// (the daemon) or the input (analyze): what severity, partition_limit
	// and the shard count are judged on. Where the counting cannot tell a
	// key's busiest second it is the mean rate.
	PeakUnitsPerSecond float64 `json:"peak_units_per_second"`
	// Replica is, with replicas sharing a lease table, the worker id of the
	// replica whose shards carry the key, which exports its series. Absent
	// with one process.
	Replica string `json:"replica,omitempty"`
}

// ThrottledKey is a partition key and how many of its calls were
// throttled: exactly Count, or, when the window could not count all its
// throttled keys (more keys throttled than it keeps per class), at least
// Count and at most CountMax.
type ThrottledKey struct {
	Key string `json:"key"`
	// KeyText is the text a binary key's bytes hold (KeyText); absent
	// for other keys, and for masked keys.
	KeyText string `json:"key_text,omitempty"`
	Count   uint64 `json:"count"`
	// CountMax is the upper bound of the count; 0 (absent) when Count is
	// exact.
	CountMax uint64 `json:"count_max,omitempty"`
}

// Finding is one rule that fired on a table's traffic: the evidence a
// Diagnosis is made of. Every finding is explained by exactly one
// diagnosis, and carries that diagnosis's fix as its recommendation.
type Finding struct {
	// Kind is hot_key, partition_limit, low_cardinality, time_ordered_key
	// or hot_partition.
	Kind Kind `json:"kind"`
	// Key is the partition key (or, for hot_partition, the shard: see
	// KeyType) the finding is about; empty for table-wide findings.
	Key   string `json:"key,omitempty"`
	Class string `json:"class,omitempty"`
	// Severity is info, warning or critical, from the peak against the
	// partition ceiling (see Severity).
	Severity       Severity `json:"severity,omitempty"`
	Share          float64  `json:"share"`
	UnitsPerSecond float64  `json:"units_per_second"`
	// PeakUnitsPerSecond is the busiest second of the key (of the hottest
	// key, for table-wide findings) the severity was judged on.
	PeakUnitsPerSecond float64 `json:"peak_units_per_second,omitempty"`
	// Recommendation is the fix of the diagnosis that explains the finding.
	Recommendation *Recommendation `json:"recommendation,omitempty"`
	// Evidence is what led to the finding (an addition to the contract's
	// fields, for people checking the reasoning).
	Evidence *Evidence `json:"evidence,omitempty"`
}

// KeyType says what the finding's Key names: a partition key value, or
// (hot_partition) a stream shard id that is not a key.
func (f Finding) KeyType() KeyType { return f.Kind.KeyType() }

// Evidence is the numbers a Finding was decided on. Fields that do not apply
// to a finding's kind are left out.
type Evidence struct {
	// Summary says in one sentence why the rule fired.
	Summary string `json:"summary"`
	// WindowSeconds is the duration the rates were computed over.
	WindowSeconds float64 `json:"window_seconds,omitempty"`
	// Units is the key's units in the window; ClassUnits the table's units
	// of the same class.
	Units      float64 `json:"units,omitempty"`
	ClassUnits float64 `json:"class_units,omitempty"`
	// Limit is one partition's ceiling for the class, in units per second.
	Limit float64 `json:"limit,omitempty"`
	// SortKeys is the number of distinct sort keys seen under the key.
	SortKeys uint64 `json:"sort_keys,omitempty"`
	// DistinctPartitionKeys and RequiredPartitions are the cardinality
	// rule's inputs; PeakUnitsPerSecond the class's busiest second.
	DistinctPartitionKeys uint64  `json:"distinct_partition_keys,omitempty"`
	RequiredPartitions    int     `json:"required_partitions,omitempty"`
	PeakUnitsPerSecond    float64 `json:"peak_units_per_second,omitempty"`
	// Keys are the partition keys the rule judged on, heaviest first.
	Keys []string `json:"keys,omitempty"`
	// Shape names the date or time format recognised in the keys.
	Shape string `json:"shape,omitempty"`
	// Records and MeanRecords are a stream shard's records and the mean
	// over the stream's shards.
	Records     uint64  `json:"records,omitempty"`
	MeanRecords float64 `json:"mean_records,omitempty"`
	// Throttled is the key's throttled calls in the window (of the class,
	// for capacity), KeyRangeThrottled those of its key range: what makes
	// a key's finding critical, whatever its peak.
	Throttled         uint64 `json:"throttled,omitempty"`
	KeyRangeThrottled uint64 `json:"key_range_throttled,omitempty"`
}

// Recommendation is a fix: a Diagnosis's one fix, repeated on the findings
// it explains.
type Recommendation struct {
	// Kind is write_sharding, calculated_suffix, gsi, rekey, cache,
	// sparse_index or capacity.
	Kind        AdviceKind `json:"kind"`
	SuffixCount int        `json:"suffix_count,omitempty"`
	Example     string     `json:"example,omitempty"`
	Text        string     `json:"text"`
}

// Diagnosis is one root cause of a table's findings, with the one fix for
// it and what the fix would do to the recorded traffic.
type Diagnosis struct {
	// Cause is the finding kind of the root cause. hot_key and
	// partition_limit on one key and class are one diagnosis, with cause
	// partition_limit when the key's peak is at LimitFraction of the
	// ceiling.
	Cause Kind `json:"cause"`
	// Class is the class the cause was found in: "read" or "write".
	Class string `json:"class"`
	// Keys are the partition keys concerned, heaviest first (for
	// hot_partition, the stream shard: see KeyType).
	Keys []string `json:"keys"`
	// Severity is that of the hottest key it explains: critical at
	// LimitFraction of the ceiling or throttled, warning at WarnFraction,
	// else info.
	Severity Severity `json:"severity"`
	// Share and PeakUnitsPerSecond are the hottest key's share of its
	// class and busiest second; Limit is the partition ceiling of Class
	// (additions to the contract's fields: the numbers behind Severity).
	Share              float64 `json:"share"`
	PeakUnitsPerSecond float64 `json:"peak_units_per_second"`
	Limit              float64 `json:"limit"`
	// Throttled counts the throttled calls of the keys in the window (of
	// the class, for capacity).
	Throttled uint64 `json:"throttled,omitempty"`
	// Capacity says, for cause capacity, which capacity is short and how
	// much of the class's calls it throttles; nil for other causes.
	Capacity *Capacity `json:"capacity,omitempty"`
	// Summary says in one sentence what is wrong and how urgent it is.
	Summary string `json:"summary"`
	// Fix is the one fix for the cause.
	Fix Recommendation `json:"fix"`
	// After is the expected state once the fix is applied, computed from
	// the recorded traffic; nil when the traffic cannot tell.
	After *After `json:"after,omitempty"`
	// Explains lists the findings this diagnosis is the cause of.
	Explains []Explained `json:"explains"`
	// RaisedBy is, with replicas sharing a lease table, the worker id of the
	// one replica that raises the diagnosis: exports hotkeyd_diagnosis and
	// its findings, and logs it. The others' APIs show it too. Absent with
	// one process.
	RaisedBy string `json:"raised_by,omitempty"`
}

// Capacity is what a capacity diagnosis found: which capacity throttles
// the class's calls across the keys, and how much of them.
type Capacity struct {
	// Limit is the capacity found short: provisioned, account,
	// on_demand_max, or unknown when no throttling reason said which.
	Limit CapacityLimit `json:"limit"`
	// Resource is "table" or "index": what the reasons name as throttled.
	// On a table's entry, "index" is one of its indexes (a write held back
	// by an index short of capacity), which the input did not name.
	Resource string `json:"resource"`
	// Inferred is set when no throttling reason said so: the cause was
	// inferred from the throttled calls spreading over the keys in
	// proportion to their traffic (docs/how-it-decides.md).
	Inferred bool `json:"inferred,omitempty"`
	// Calls are the class's calls in the window but those of keys
	// throttled in their key range (their own cause), and Throttled those
	// refused for capacity; ThrottledShare is Throttled over Calls, the
	// rate at which the capacity refuses any call: what the severity is
	// judged on.
	Calls          uint64  `json:"calls"`
	Throttled      uint64  `json:"throttled"`
	ThrottledShare float64 `json:"throttled_share"`
	// UnitsPerSecond is the class's consumed capacity per second over the
	// window, and DemandUnitsPerSecond what it would have consumed had no
	// call been throttled (the consumed rate scaled by calls over
	// successful calls): what the capacity must at least be.
	UnitsPerSecond       float64 `json:"units_per_second"`
	DemandUnitsPerSecond float64 `json:"demand_units_per_second"`
	// Reasons are the throttling reasons the input gave, by DynamoDB's
	// name, with their calls, most first; empty when it gave none.
	Reasons []ReasonCount `json:"reasons,omitempty"`
}

// ReasonCount is one of DynamoDB's throttling reasons and its calls.
type ReasonCount struct {
	Reason string `json:"reason"`
	Calls  uint64 `json:"calls"`
}

// KeyType says what the diagnosis's Keys name: partition key values, or
// (hot_partition) stream shard ids.
func (d Diagnosis) KeyType() KeyType { return d.Cause.KeyType() }

// Key is the first of Keys, or "": the key label of hotkeyd_diagnosis.
func (d Diagnosis) Key() string {
	if len(d.Keys) == 0 {
		return ""
	}
	return d.Keys[0]
}

// Explained names a finding a diagnosis explains.
type Explained struct {
	Kind  Kind   `json:"kind"`
	Key   string `json:"key,omitempty"`
	Class string `json:"class,omitempty"`
}

// After is what a fix does to the recorded traffic: the class's keys
// replayed with the diagnosed keys spread over SuffixCount keys (or
// re-keyed), the validation by simulation of DynamoDB's key design guide.
type After struct {
	// Keys is the number of keys the diagnosed traffic is spread over.
	Keys int `json:"keys,omitempty"`
	// MaxShare and PeakUnitsPerSecond are the largest share of the class
	// and the highest one-second rate any key would have.
	MaxShare           float64 `json:"max_share"`
	PeakUnitsPerSecond float64 `json:"peak_units_per_second"`
	// UnderThreshold: MaxShare is below the threshold. UnderCeiling:
	// PeakUnitsPerSecond is below LimitFraction of the partition ceiling.
	UnderThreshold bool `json:"under_threshold"`
	UnderCeiling   bool `json:"under_ceiling"`
	// Severity is the severity the hottest key would have.
	Severity Severity `json:"severity"`
	// Summary says it in one sentence.
	Summary string `json:"summary"`
}

// Quiet explains a silence: a table whose heaviest key is at or above the
// threshold, but with no diagnosis at warning or above.
type Quiet struct {
	Reason QuietReason `json:"reason"`
	// Key and Class name the heaviest key; Share, PeakUnitsPerSecond and
	// Limit are its numbers against the ceiling.
	Key                string  `json:"key"`
	Class              string  `json:"class"`
	Share              float64 `json:"share"`
	PeakUnitsPerSecond float64 `json:"peak_units_per_second"`
	Limit              float64 `json:"limit"`
	// Text says why in one sentence.
	Text string `json:"text"`
}

// Flag is a diagnosis the live detector (detect.Tracker) holds flagged,
// with the table (and index) it is on. The hotkeyd_diagnosis gauge has one
// series per Flag.
type Flag struct {
	// Table is the table, Index the index (empty for the base table) the
	// diagnosis is on.
	Table, Index string
	// Diagnosis is the diagnosis as last evaluated.
	Diagnosis Diagnosis
}

// Change is a diagnosis that started or stopped being flagged in one live
// evaluation, or whose cause, severity or fix changed while flagged: what
// the log lines announce. For a cleared diagnosis, Diagnosis is as it was
// last flagged.
type Change struct {
	Flag
	// Cleared is true when the diagnosis was cleared.
	Cleared bool
	// Was is, for a diagnosis that stays flagged but changed its cause,
	// severity or fix kind, the diagnosis as it was; nil when it was raised
	// or cleared.
	Was *Diagnosis
}

package report

// Kind is a finding kind: the value of Finding.Kind and of the kind label of
// hotkeyd_hot_key, and a diagnosis's cause (Diagnosis.Cause, the cause
// label of hotkeyd_diagnosis).
type Kind string

// Finding kinds.
const (
	KindHotKey         Kind = "hot_key"
	KindPartitionLimit Kind = "partition_limit"
	KindLowCardinality Kind = "low_cardinality"
	KindTimeOrderedKey Kind = "time_ordered_key"
	KindHotPartition   Kind = "hot_partition"
	// KindCapacity: a table's (or index's) calls of one class are
	// throttled across its keys, because the table or index, not a
	// partition, is short of capacity: its provisioned capacity, the
	// account's per-table quota or its on-demand maximum. Table-wide: no
	// key.
	KindCapacity Kind = "capacity"
	// KindForecast: a key that does not throttle yet grows so that its
	// trend reaches its partition's ceiling (detect.Foresee); a warning
	// when within the forecast horizon at good confidence.
	KindForecast Kind = "forecast"
)

// KeyType says what a finding's Key names.
type KeyType uint8

const (
	// PartitionKey is a partition key value: hash and redact modes mask it
	// wherever it leaves the process.
	PartitionKey KeyType = iota
	// StreamShard is a stream shard id (hot_partition): a physical
	// partition's name, not a key, shown as it is.
	StreamShard
)

// KeyType says what the Key of a finding of kind k names. It is the one
// place that knows a hot_partition's key is a shard id; the masker, the
// metrics and the log lines ask it.
func (k Kind) KeyType() KeyType {
	if k == KindHotPartition {
		return StreamShard
	}
	return PartitionKey
}

// AdviceKind is a recommendation kind: the value of Recommendation.Kind (a
// diagnosis's fix), of the fix label of hotkeyd_diagnosis and of the
// recommendation label of hotkeyd_hot_key.
type AdviceKind string

// Recommendation kinds.
const (
	AdviceWriteSharding    AdviceKind = "write_sharding"
	AdviceCalculatedSuffix AdviceKind = "calculated_suffix"
	AdviceGSI              AdviceKind = "gsi"
	AdviceRekey            AdviceKind = "rekey"
	AdviceCache            AdviceKind = "cache"
	// AdviceSparseIndex keeps a hot value's items out of an index its
	// queries do not read them from: the index key attribute is written
	// only on the items the queries look for.
	AdviceSparseIndex AdviceKind = "sparse_index"
	// AdviceCapacity: give the table or index more capacity (raise its
	// provisioned capacity, auto scaling, on-demand, its on-demand
	// maximum or the account's quota): a fix of capacity, not of the key
	// design.
	AdviceCapacity AdviceKind = "capacity"
)

// CapacityLimit is which capacity a capacity diagnosis found short: the
// limit of DynamoDB's throttling reasons (traffic.ThrottleLimit), by the
// value of Capacity.Limit.
type CapacityLimit string

// Capacity limits.
const (
	// LimitProvisioned: the provisioned capacity of the table or index
	// (ProvisionedThroughputExceeded).
	LimitProvisioned CapacityLimit = "provisioned"
	// LimitAccount: the account's per-table throughput quota of an
	// on-demand table or index (AccountLimitExceeded).
	LimitAccount CapacityLimit = "account"
	// LimitOnDemandMax: the maximum throughput configured on an on-demand
	// table or index (MaxOnDemandThroughputExceeded).
	LimitOnDemandMax CapacityLimit = "on_demand_max"
	// LimitUnknown: no throttling reason in the input says which; the
	// cause was inferred from how the throttled calls spread over the
	// keys.
	LimitUnknown CapacityLimit = "unknown"
)

// Severity says how close a finding or diagnosis is to throttling, judged
// on its per-second peak against one partition's ceiling: the value of
// Finding.Severity and Diagnosis.Severity, and of the severity label of
// hotkeyd_diagnosis.
type Severity string

// Severities, from the least to the most urgent.
const (
	// SeverityInfo marks a finding below WarnFraction of the ceiling: a
	// design note (the 10 % rule), shown but never paged.
	SeverityInfo Severity = "info"
	// SeverityWarning marks a peak at WarnFraction (0.5) of the ceiling or
	// more: throttling is a burst or two of growth away.
	SeverityWarning Severity = "warning"
	// SeverityCritical marks a peak at LimitFraction (0.8) of the ceiling or
	// more, or a key throttled in the window: throttling is here or close.
	SeverityCritical Severity = "critical"
)

// Rank orders severities for sorting: 0 for critical, 1 for warning, 2 for
// info and anything else.
func (s Severity) Rank() int {
	switch s {
	case SeverityCritical:
		return 0
	case SeverityWarning:
		return 1
	}
	return 2
}

// Pages reports whether the severity is one an operator is paged or
// ticketed for: warning or critical. Info is shown, never alerted on.
func (s Severity) Pages() bool { return s.Rank() < 2 }

// Max returns the more urgent of s and o.
func (s Severity) Max(o Severity) Severity {
	if o.Rank() < s.Rank() {
		return o
	}
	return s
}

// QuietReason says why a table whose heaviest key is above the threshold
// has no diagnosis at warning or above: the value of Quiet.Reason.
type QuietReason string

// Quiet reasons.
const (
	// QuietTrafficFloor: the class is below the traffic floor
	// (min_events, min_units_per_second), so share rules stay silent.
	QuietTrafficFloor QuietReason = "traffic_floor"
	// QuietInfoOnly: the key is diagnosed, but its peak is below
	// warn_fraction of the partition ceiling: info only.
	QuietInfoOnly QuietReason = "info_only"
	// QuietHolding: the live detector has seen a diagnosis at warning or
	// above, but it has not held for the hold (a span of event time) yet.
	QuietHolding QuietReason = "holding"
)

package detect

// Finding kinds, the values of Finding.Kind and of the kind metric label.
const (
	KindHotKey         = "hot_key"
	KindPartitionLimit = "partition_limit"
	KindLowCardinality = "low_cardinality"
	KindTimeOrderedKey = "time_ordered_key"
	KindHotPartition   = "hot_partition"
)

// Recommendation kinds, the values of Recommendation.Kind and of the
// recommendation metric label.
const (
	AdviceWriteSharding    = "write_sharding"
	AdviceCalculatedSuffix = "calculated_suffix"
	AdviceGSI              = "gsi"
	AdviceRekey            = "rekey"
	AdviceCache            = "cache"
)

// Severities, the values of Finding.Severity.
const (
	// SeverityWarning marks a finding about share or design only.
	SeverityWarning = "warning"
	// SeverityCritical marks a finding whose rate is near a partition's
	// ceiling: throttling is close.
	SeverityCritical = "critical"
)

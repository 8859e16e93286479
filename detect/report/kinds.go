package report

// Kind is a finding kind: the value of Finding.Kind and of the kind label of
// hotkeyd_hot_key.
type Kind string

// Finding kinds.
const (
	KindHotKey         Kind = "hot_key"
	KindPartitionLimit Kind = "partition_limit"
	KindLowCardinality Kind = "low_cardinality"
	KindTimeOrderedKey Kind = "time_ordered_key"
	KindHotPartition   Kind = "hot_partition"
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

// AdviceKind is a recommendation kind: the value of Recommendation.Kind and
// of the recommendation label of hotkeyd_hot_key.
type AdviceKind string

// Recommendation kinds.
const (
	AdviceWriteSharding    AdviceKind = "write_sharding"
	AdviceCalculatedSuffix AdviceKind = "calculated_suffix"
	AdviceGSI              AdviceKind = "gsi"
	AdviceRekey            AdviceKind = "rekey"
	AdviceCache            AdviceKind = "cache"
)

// Severity says how urgent a finding is: the value of Finding.Severity.
type Severity string

// Severities.
const (
	// SeverityWarning marks a finding about share or design only.
	SeverityWarning Severity = "warning"
	// SeverityCritical marks a finding whose rate is near a partition's
	// ceiling: throttling is close.
	SeverityCritical Severity = "critical"
)

package report

import "time"

// Report is the analysis of one snapshot: the JSON document printed by
// `hotkeyd analyze --format json` and served at /api/v1/hotkeys. Its shape
// is a contract (see DESIGN.md); change it only on purpose and everywhere.
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
}

// TableReport is one table's, or one index's, part of a Report.
type TableReport struct {
	Table                 string         `json:"table"`
	Index                 string         `json:"index,omitempty"`
	Events                uint64         `json:"events"`
	ReadUnits             float64        `json:"read_units"`
	WriteUnits            float64        `json:"write_units"`
	DistinctPartitionKeys uint64         `json:"distinct_partition_keys"`
	TopKeys               []TopKey       `json:"top_keys"`
	Findings              []Finding      `json:"findings"`
	ThrottledKeys         []ThrottledKey `json:"throttled_keys,omitempty"`
}

// Idle reports whether the entry has nothing in its window: no events, no
// throttled calls and no findings. A live window keeps a table whose
// traffic has left it (a CloudTrail table between two deliveries); the live
// API leaves such an entry out unless its table is asked for by name.
func (t TableReport) Idle() bool {
	return t.Events == 0 && len(t.ThrottledKeys) == 0 && len(t.Findings) == 0
}

// TopKey is one of the heaviest partition keys of a class.
type TopKey struct {
	Key   string  `json:"key"`
	Class string  `json:"class"`
	Units float64 `json:"units"`
	// Share is Units over the table's units of the class, 0 to 1.
	Share float64 `json:"share"`
	// UnitsPerSecond is Units over the window's duration, at least one
	// second (an addition to the contract's fields; what
	// hotkeyd_key_units_per_second shows).
	UnitsPerSecond float64 `json:"units_per_second,omitempty"`
}

// ThrottledKey is a partition key and how many of its calls were throttled.
type ThrottledKey struct {
	Key   string `json:"key"`
	Count uint64 `json:"count"`
}

// Finding is one thing wrong with a table's key design or traffic, with the
// fix recommended for it.
type Finding struct {
	// Kind is hot_key, partition_limit, low_cardinality, time_ordered_key
	// or hot_partition.
	Kind Kind `json:"kind"`
	// Key is the partition key (or, for hot_partition, the shard: see
	// KeyType) the finding is about; empty for table-wide findings.
	Key   string `json:"key,omitempty"`
	Class string `json:"class,omitempty"`
	// Severity is "warning" or "critical" (the partition ceiling is near).
	Severity       Severity        `json:"severity,omitempty"`
	Share          float64         `json:"share"`
	UnitsPerSecond float64         `json:"units_per_second"`
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
	// rule's inputs; PeakUnitsPerSecond the class's peak rate.
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
}

// Recommendation is the fix hotkeyd advises for a Finding.
type Recommendation struct {
	// Kind is write_sharding, calculated_suffix, gsi, rekey or cache.
	Kind        AdviceKind `json:"kind"`
	SuffixCount int        `json:"suffix_count,omitempty"`
	Example     string     `json:"example,omitempty"`
	Text        string     `json:"text"`
}

// Flag is a finding the live detector (detect.Tracker) holds flagged, with
// the table (and index) it is on. The hotkeyd_hot_key gauge has one series
// per Flag.
type Flag struct {
	// Table is the table, Index the index (empty for the base table) the
	// finding is on.
	Table, Index string
	// Finding is the finding as last evaluated.
	Finding Finding
}

// Change is a finding that started or stopped being flagged in one live
// evaluation: what the log lines announce. For a cleared finding, Finding
// is as it was last flagged.
type Change struct {
	Flag
	// Cleared is false when the finding was raised (became flagged), true
	// when it was cleared.
	Cleared bool
}

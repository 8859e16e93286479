// Package traffic is the event contract every other package stands on: the
// Event (one access to a table or index) and its Class, the Source → Sink
// seam between readers and the rest of hotkeyd, each source's Progress in
// event time, and the input limits and checks an Event passes before it is
// counted (DynamoDB's own bounds on names, keys and units). It imports
// nothing of hotkeyd. The readers live under ingest/; none of them knows
// what happens to an Event after the Sink accepted it.
package traffic

import (
	"context"
	"time"
)

// Class says whether an access consumed read or write capacity. DynamoDB
// throttles the two separately (3000 RCU/s and 1000 WCU/s per partition), so
// every count downstream is kept per class.
type Class uint8

const (
	// Read is an access that consumed read capacity units.
	Read Class = iota
	// Write is an access that consumed write capacity units.
	Write
)

// NumClasses is the number of classes, for arrays indexed by Class.
const NumClasses = 2

// String returns "read" or "write", the label value used in metrics and reports.
func (c Class) String() string {
	if c == Write {
		return "write"
	}
	return "read"
}

// ParseClass maps "read" and "write" to a Class.
func ParseClass(s string) (Class, bool) {
	switch s {
	case "read":
		return Read, true
	case "write":
		return Write, true
	}
	return Read, false
}

// Event is one access to one item or item collection of a table or index.
//
// An Event with an empty PK is counted for its table (units, events) but for
// no key: a Scan, or a PartiQL statement whose key could not be read.
type Event struct {
	// Table is the table name. Required.
	Table string
	// Index is the global or local secondary index name, empty for the base table.
	Index string
	// PK is the partition key value in canonical text form.
	PK string
	// SK is the sort key value in canonical text form, empty when the table
	// has none or the source does not know it.
	SK string
	// Class is read or write.
	Class Class
	// Units is the consumed capacity (RCU or WCU); sources that cannot know
	// it count 1 per item, 2 per item of a transaction (TransactionalUnits).
	Units float64
	// Time is when the access happened, as the source saw it: the second
	// it is counted in, live and in reports over whole files, and what the
	// sources' watermarks and lag are measured on. A source that cannot
	// know it uses the time it read the access.
	Time time.Time
	// Source names the reader ("jsonl", "http", "dynamodb-streams",
	// "cloudtrail", "demo"), the value of the metrics' source label.
	Source string
	// Shard is the stream shard (one physical partition) the record came
	// from, empty for sources that do not know it.
	Shard string
	// Throttled marks a call that failed with a throttling error. It is
	// counted per key as throttled and never as traffic.
	Throttled bool
	// ThrottleReason is why a throttled call was throttled, when the input
	// says so (DynamoDB's ThrottlingReasons); zero when it does not, and
	// for a call that was not throttled.
	ThrottleReason ThrottleReason
}

// Sink receives batches of Events.
//
// Put takes ownership of the batch: the caller must not touch the slice or
// its Events afterwards. Implementations are safe for concurrent use by many
// sources, may block to apply back-pressure, and must return ctx.Err() once
// ctx is done so that a stopped pipeline never blocks a reader.
type Sink interface {
	Put(ctx context.Context, batch []Event) error
}

// SinkFunc adapts a function to the Sink interface.
type SinkFunc func(ctx context.Context, batch []Event) error

// Put calls f(ctx, batch).
func (f SinkFunc) Put(ctx context.Context, batch []Event) error { return f(ctx, batch) }

// Source is a reader that turns its input into Events.
//
// Run reads until ctx is done or the input ends (a whole file in analyze
// mode), handing Events to sink. It returns nil when the input ended or ctx
// was cancelled, and an error only when the source cannot go on at all. Bad
// input is reported to the source's Reporter and skipped, never returned.
type Source interface {
	// Name is the source label value, e.g. "jsonl".
	Name() string
	Run(ctx context.Context, sink Sink) error
}

// KeySchema names a table's key attributes, for sources whose records do not
// say which attribute is the partition key (CloudTrail's untyped key maps),
// and its secondary indexes, for sources that derive the writes of an
// index from item images (stream records).
type KeySchema struct {
	PartitionKey string `yaml:"partition_key" json:"partition_key"`
	SortKey      string `yaml:"sort_key,omitempty" json:"sort_key,omitempty"`
	// Indexes are the table's secondary indexes by name; empty for an
	// index's own key schema and for a table without any.
	Indexes map[string]IndexSchema `yaml:"-" json:"indexes,omitempty"`
}

// IndexSchema is one secondary index of a table, as DescribeTable tells it
// (or the config's tables section declares it): its key attributes, which
// attributes it projects, and whether it is local.
type IndexSchema struct {
	// PartitionKey and SortKey are the index's key attributes; a local
	// index's partition key is its table's.
	PartitionKey string `json:"partition_key"`
	SortKey      string `json:"sort_key,omitempty"`
	// Local is set for a local secondary index: its entries live in the
	// table's partitions and its writes consume the table's capacity.
	Local bool `json:"local,omitempty"`
	// Projection says which attributes an index entry holds besides the
	// keys.
	Projection Projection `json:"projection"`
}

// ProjectionType is DynamoDB's projection type of a secondary index.
type ProjectionType string

// Projection types.
const (
	// ProjectAll copies every attribute of the item into the index.
	ProjectAll ProjectionType = "ALL"
	// ProjectKeysOnly copies the table's and the index's key attributes.
	ProjectKeysOnly ProjectionType = "KEYS_ONLY"
	// ProjectInclude copies the keys and the attributes listed.
	ProjectInclude ProjectionType = "INCLUDE"
)

// Projection is the attributes an index entry holds besides the table's
// and the index's keys.
type Projection struct {
	Type ProjectionType `json:"type"`
	// Attributes are the non-key attributes of an INCLUDE projection.
	Attributes []string `json:"attributes,omitempty"`
}

// Noter is implemented by sources with something a report must say about
// how their input was counted (a stream whose view type hides index
// writes): the daemon adds their notes to the report's.
type Noter interface {
	// Notes returns sentences for the report's notes; none when all is
	// counted as it should be.
	Notes() []string
}

// Readier is implemented by sources that can tell whether they are working
// right now (their endpoint answers, their files are readable). The daemon's
// /-/ready reports not ready while any source says so.
type Readier interface {
	// Ready returns nil when the source is working, or what is wrong.
	Ready() error
}

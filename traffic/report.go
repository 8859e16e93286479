package traffic

import (
	"strconv"
	"strings"
)

// Reporter is told about input a source could not use and about failures
// reading its input. Implementations are safe for concurrent use, count
// every call (hotkeyd_input_rejected_total, hotkeyd_source_errors_total) and
// log at a bounded rate, so a flood of bad input cannot flood the log.
type Reporter interface {
	// Reject records one input line or record that was skipped. reason is a
	// short, bounded label value such as "bad_json" or "missing_pk".
	Reject(source, reason string, err error)
	// Error records a failure reading the source itself (an unreadable file,
	// an AWS API error). reason is a short, bounded label value.
	Error(source, reason string, err error)
}

// Reasons for rejected input, shared by the readers so that the label values
// of hotkeyd_input_rejected_total stay few and the same across sources.
const (
	ReasonBadJSON      = "bad_json"      // not a JSON object, truncated, nested too deep
	ReasonTooLong      = "too_long"      // a line or record over the size limit
	ReasonBadUTF8      = "bad_utf8"      // invalid UTF-8 in a string
	ReasonMissingTable = "missing_table" // no table name
	ReasonBadTable     = "bad_table"     // a table or index name DynamoDB would refuse (ValidName)
	ReasonMissingPK    = "missing_pk"    // no partition key where one is required
	ReasonBadType      = "bad_type"      // a field of the wrong JSON type
	ReasonBadUnits     = "bad_units"     // negative, non-finite or non-numeric units, or more than one call consumes (MaxUnits)
	ReasonBadTime      = "bad_time"      // a timestamp that cannot be parsed, or (in the daemon) further in the future than max_future or older than the input holds
	ReasonBadOp        = "bad_op"        // an operation that is neither read nor write
	ReasonBadRecord    = "bad_record"    // a record of a known format with a broken shape
	ReasonBadFile      = "bad_file"      // a file that is truncated or not of a known format
	ReasonKeyTooLong   = "key_too_long"  // a partition or sort key longer than DynamoDB allows (MaxPKLen, MaxSKLen)
	// ReasonBadThrottleReason: a throttling reason that is not one of
	// DynamoDB's sixteen, names the other operation than the call's, or
	// comes with a resource that is not the call's table or one of its
	// indexes.
	ReasonBadThrottleReason = "bad_throttle_reason"
	// ReasonBeyondLimits: a call larger than DynamoDB accepts (a
	// BatchWriteItem of more than 25 requests, a transaction of more than
	// 100 items): DynamoDB refuses it whole, so no such call was served.
	ReasonBeyondLimits = "beyond_dynamodb_limits"
	// ReasonMisspelledField is a member whose name is a near miss of a
	// field the line lacks ("Units", "pkk"): counting the line without it
	// would be wrong in silence.
	ReasonMisspelledField = "misspelled_field"
	// ReasonDuplicateField is a field given twice in one line ("throttled"
	// true, then false): which of the two is meant cannot be told.
	ReasonDuplicateField = "duplicate_field"
)

// FieldNoter is a Reporter that is also told about the members of input
// lines that no field of the input's format is, which the reader ignored
// (a request_id in an access log). Readers that know their fields tell a
// Reporter that implements it, in sums, at most once a batch.
type FieldNoter interface {
	// Ignored records that lines more accepted lines of source carried a
	// member named field, ignored.
	Ignored(source, field string, lines uint64)
}

// NopReporter discards everything. Useful in tests and benchmarks.
type NopReporter struct{}

// Reject does nothing.
func (NopReporter) Reject(string, string, error) {}

// Error does nothing.
func (NopReporter) Error(string, string, error) {}

// Masker masks partition keys the way the keys setting says (hash or
// redact), for everything that leaves the process. A Reporter that shows
// keys masked implements it too (MaskerOf), so that the readers, which
// all hold a Reporter, quote their input through it (Quote): a line that
// cannot be parsed may hold a key anywhere.
type Masker interface {
	// Mask returns the form of s shown outside the process.
	Mask(s string) string
}

// MaskerOf returns rep as a Masker when it masks keys, nil when it shows
// them as they are.
func MaskerOf(rep Reporter) Masker {
	m, _ := rep.(Masker)
	return m
}

// quoteMax is how much of a piece of input an error message quotes.
const quoteMax = 64

// Quote returns a piece of input b as an error message quotes it: at most
// its first 64 bytes, as valid UTF-8, in double quotes, masked whole by m
// when m is not nil. Every reader quotes input through it, never with %q
// of its own: under keys: hash or redact nothing a line holds (a key in a
// PartiQL statement, a key in a field of the wrong name) reaches a log
// line, an error or an HTTP answer.
func Quote(m Masker, b []byte) string {
	s := string(b)
	more := ""
	if len(s) > quoteMax {
		s, more = s[:quoteMax], "..."
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if m != nil {
		s = m.Mask(s)
	}
	return strconv.Quote(s) + more
}

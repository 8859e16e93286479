package jsonl

import (
	"fmt"
	"strings"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// The JSON-lines contract: the fields a line may carry, each at most once
// (a field given twice rejects the line as duplicate_field), in one
// table (contract). The parser knows a field by its row, Fields renames it
// for a log that names it otherwise, and what a line gets for it (required
// or not, its default, what a wrong value gets) is said here once, for the
// README's input section and hotkeyd analyze --help (ContractText), which
// tests hold to this table and to the parser.
//
// A member of a line that is in no row is ignored, counted and named (the
// Reporter's traffic.FieldNoter); one whose name is a near miss of a row's
// name that the line lacks ("Units", "pkk") rejects the line as
// misspelled_field, since it would otherwise be silently ignored.
//
// A new field is a slot constant below, a row of contract, a member of
// Fields, and its reading, a row of readings (fields.go).

// Slots of the contract's fields: indexes into contract, Parser.names and
// the per-line values, in the order the contract lists them.
const (
	fTable = iota
	fOp
	fPK
	fSK
	fIndex
	fTime
	fUnits
	fThrottled
	fThrottleReason
	fThrottleResource
	numFields
)

// Field is one field of the contract and what a line gets for it.
type Field struct {
	// Name is the field's name in the contract.
	Name string
	// Need is "required", "required, except with Scan" or "optional".
	Need string
	// Value is what the field holds.
	Value string
	// Missing is what a line without the field (or with null) gets: the
	// rejection reason of a required field, what an optional one then
	// means.
	Missing string
	// Wrong are the mistakes a value can make and what each gets.
	Wrong []Mistake
	// rename is the member of Fields that renames it.
	rename func(*Fields) *string
}

// Mistake is one kind of wrong value of a field.
type Mistake struct {
	// What says what is wrong: "not a string".
	What string
	// Reason is the rejection reason the line gets.
	Reason string
	// Example is a JSON value that makes the mistake (for the tests);
	// empty for a mistake of two fields together or of a check made after
	// parsing, against the clock (tested where it is made).
	Example string
}

// Required reports whether a line without the field is rejected.
func (f *Field) Required() bool { return strings.HasPrefix(f.Need, "required") }

// contract is the JSON-lines contract, by slot.
var contract = [numFields]Field{
	fTable: {Name: "table", Need: "required", Value: "the table's name, a string",
		Missing: traffic.ReasonMissingTable, Wrong: []Mistake{notString, badName},
		rename: func(f *Fields) *string { return &f.Table }},
	fOp: {Name: "op", Need: "required", Value: "the operation: GetItem, BatchGetItem, Query, Scan, TransactGetItems (reads); PutItem, UpdateItem, DeleteItem, BatchWriteItem, TransactWriteItems (writes); or read, write",
		Missing: traffic.ReasonBadOp, Wrong: []Mistake{notString, {"any other name", traffic.ReasonBadOp, `"Get"`}},
		rename: func(f *Fields) *string { return &f.Op }},
	fPK: {Name: "pk", Need: "required, except with Scan", Value: "the partition key's value, a string",
		Missing: traffic.ReasonMissingPK, Wrong: []Mistake{notString, tooLong(traffic.MaxPKLen)},
		rename: func(f *Fields) *string { return &f.PK }},
	fSK: {Name: "sk", Need: "optional", Value: "the sort key's value, a string",
		Missing: "no sort key", Wrong: []Mistake{notString, tooLong(traffic.MaxSKLen)},
		rename: func(f *Fields) *string { return &f.SK }},
	fIndex: {Name: "index", Need: "optional", Value: "the secondary index's name, a string",
		Missing: "the table itself", Wrong: []Mistake{notString, badName},
		rename: func(f *Fields) *string { return &f.Index }},
	fTime: {Name: "ts", Need: "optional", Value: "when the access happened, the second it is counted in: an RFC 3339 string, or a Unix epoch number of seconds, milliseconds, microseconds or nanoseconds (told apart by their size)",
		Missing: "the time the line is read", Wrong: []Mistake{
			{"neither a string nor a number", traffic.ReasonBadType, `true`},
			{"a string that is no RFC 3339 time", traffic.ReasonBadTime, `"1795760000"`},
			{"before 2012", traffic.ReasonBadTime, `"2011-12-31T23:59:59Z"`},
			{"a number that is no time from 2012 to 9999 in any of the four units", traffic.ReasonBadTime, `500000000000`},
			// Checked against the clock after parsing: in
			// internal/app/analyze (times.go) and traffic.CheckedTimes.
			{"over a day after the clock (analyze), later than max_future or older than max_event_age (the daemon)", traffic.ReasonBadTime, ""},
		},
		rename: func(f *Fields) *string { return &f.Time }},
	fUnits: {Name: "units", Need: "optional", Value: "the capacity units consumed (RCU for reads, WCU for writes), a number",
		Missing: "one unit; two for TransactGetItems and TransactWriteItems, which read or write every item twice", Wrong: []Mistake{
			{"not a number", traffic.ReasonBadUnits, `"2"`},
			{"negative", traffic.ReasonBadUnits, `-1`},
			{"more than one call of its op can consume", traffic.ReasonBadUnits, `1e9`},
		},
		rename: func(f *Fields) *string { return &f.Units }},
	fThrottled: {Name: "throttled", Need: "optional", Value: "true for a call DynamoDB refused by throttling: counted per key as throttled, never as traffic",
		Missing: "not throttled, unless throttle_reason says why", Wrong: []Mistake{{"not true or false", traffic.ReasonBadType, `"yes"`}},
		rename: func(f *Fields) *string { return &f.Throttled }},
	fThrottleReason: {Name: "throttle_reason", Need: "optional", Value: "why it was throttled, one of DynamoDB's sixteen ThrottlingReasons (TableWriteKeyRangeThroughputExceeded): it marks the call throttled",
		Missing: "no reason", Wrong: []Mistake{
			notString,
			{"empty", traffic.ReasonBadThrottleReason, `""`},
			{"not one of the sixteen", traffic.ReasonBadThrottleReason, `"TableTooHot"`},
			{"a reason of the other class than op's", traffic.ReasonBadThrottleReason, `"TableWriteKeyRangeThroughputExceeded"`},
			{"with throttled false", traffic.ReasonBadThrottleReason, ""},
		},
		rename: func(f *Fields) *string { return &f.ThrottleReason }},
	fThrottleResource: {Name: "throttle_resource", Need: "optional", Value: "the reason's resource, the ARN of the throttled table or index: an index's reason and ARN count the call on that index",
		Missing: "the line's table or index", Wrong: []Mistake{
			notString,
			{"not an ARN of the line's table, or not of the reason's kind (table or index)", traffic.ReasonBadThrottleReason, `"arn:aws:dynamodb:us-east-1:111122223333:table/users"`},
		},
		rename: func(f *Fields) *string { return &f.ThrottleResource }},
}

// The mistakes several fields share.
var (
	notString = Mistake{"not a string", traffic.ReasonBadType, `5`}
	badName   = Mistake{"a name DynamoDB refuses", traffic.ReasonBadTable, `"my table"`}
)

// tooLong is the mistake of a key longer than max characters.
func tooLong(max int) Mistake {
	return Mistake{"over " + digits(max) + " characters", traffic.ReasonKeyTooLong, `"` + strings.Repeat("k", max+1) + `"`}
}

// What a line gets for members outside the contract, as the contract's
// last rows say it.
const (
	// OtherMember is what a member outside the contract gets.
	OtherMember = "ignored; counted and named (analyze: on stderr; the daemon: in hotkeyd_input_unknown_fields_total and its log)"
	// NearMiss is what a member whose name is a near miss of a field the
	// line lacks gets (nearMiss says which names are).
	NearMiss = "rejected as misspelled_field, naming the field it is near: the same name in other case (Units), a letter doubled (pkk), or, for a field of four letters or more, one letter added, left out, changed, or two swapped (unit, tabel)"
	// Twice is what a line that gives a field twice gets.
	Twice = "rejected as duplicate_field, naming it: which of the two is meant cannot be told"
)

// Contract returns the fields of the contract, in its order.
func Contract() []Field { return contract[:] }

// WrongText says a field's mistakes and what each gets.
func (f *Field) WrongText() string {
	parts := make([]string, len(f.Wrong))
	for i, m := range f.Wrong {
		parts[i] = m.What + ": " + m.Reason
	}
	return strings.Join(parts, "; ")
}

// MissingText says what a line without the field gets.
func (f *Field) MissingText() string {
	if f.Required() {
		return "rejected as " + f.Missing
	}
	return f.Missing
}

// ContractText is the contract as hotkeyd analyze --help prints it, in the
// words of the README's table, wrapped for a terminal of 80 columns.
func ContractText() string {
	var b strings.Builder
	b.WriteString("Input: JSON lines, one object per line, with these fields (docs/input.md\nsays the same):\n")
	width := len("other")
	for _, f := range contract {
		width = max(width, len(f.Name))
	}
	indent := strings.Repeat(" ", width+4) // the names, two spaces either side
	row := func(first, text string) {
		line := "  " + first + indent[len(first)+2:]
		for _, word := range strings.Fields(text) {
			if len(line) > len(indent) && len(line)+1+len(word) > 80 {
				b.WriteString(line + "\n")
				line = indent + "  "
			} else if len(line) > len(indent) && !strings.HasSuffix(line, "  ") {
				line += " "
			}
			line += word
		}
		b.WriteString(line + "\n")
	}
	for _, f := range contract {
		row(f.Name, f.Need+"; "+f.Value)
		row("", "missing: "+f.MissingText())
		row("", "wrong: "+f.WrongText())
	}
	row("other", "any other member: "+OtherMember)
	row("", "a member named like a field the line lacks: "+NearMiss)
	row("", "a field given twice: "+Twice)
	return b.String()
}

// digits writes n with a thin space between thousands, as the README does.
func digits(n int) string {
	s := fmt.Sprint(n)
	if len(s) > 3 {
		s = s[:len(s)-3] + " " + s[len(s)-3:]
	}
	return s
}

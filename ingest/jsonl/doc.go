// Package jsonl reads the JSON-lines access log of the contract (one JSON
// object per line: table, op, pk, sk, index, ts, units, throttled,
// throttle_reason, throttle_resource, stated once in contract.go; member
// names configurable with Fields) into ingest Events, from three places:
//
//   - ReadAll: a whole input (a file for hotkeyd analyze, stdin);
//   - Source: files followed like tail -F with package follow (rotation by
//     rename, copy and truncate, new files matching a glob, "**" included;
//     a rotated log's compressed archive read once, whole, without the
//     lines already read), and stdin for "-";
//   - Handler: POST /api/v1/events, an NDJSON body from an application.
//
// Every reader shares one Parser, a validating scanner over the flat shape
// of a line that allocates nothing per line, and one bounded line reader: a
// line over the limit is rejected as too_long and skipped up to the next
// newline without being buffered. A bad line is reported to the
// traffic.Reporter with a reason constant of package traffic and skipped;
// the lines around it are read as usual. Members outside the contract are
// ignored and told to a Reporter that is a traffic.FieldNoter, by name,
// once a batch; a near miss of a field the line lacks rejects the line
// (misspelled_field).
//
// With Options.Records, an input whose first line that reader recognises
// is read with it instead, line by line: files of DynamoDB stream records
// (package streams) followed beside the access logs.
//
// Files that exist when a Source starts are read from their end, so that a
// restart does not count their lines twice (Config.FromStart reads them
// whole); files that appear later are read from their beginning.
package jsonl

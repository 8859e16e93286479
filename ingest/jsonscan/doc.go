// Package jsonscan is the JSON scanning layer under every hotkeyd decoder
// (JSON-lines access logs, DynamoDB Streams GetRecords answers, CloudTrail
// files): it walks JSON text without building values, so that a decoder
// takes the few members it needs, in its own schema logic, and passes over
// the rest at the cost of reading it once.
//
// It walks in two ways, for two jobs:
//
//   - Checking, over text held whole (a log line, an API answer): Space,
//     ScanString, ScanNumber, ScanLiteral, ScanValue and Skip, and the
//     steps of a container (Member for an object's members, Element for an
//     array's elements). Everything they pass over is checked against
//     RFC 8259 — string escapes, control characters and UTF-8, the number
//     grammar, the separators — and nesting is bounded by the caller, so
//     that text they accept is text encoding/json accepts (FuzzSkip holds
//     them to that). Unescape turns a checked string into its text;
//     PlainEnd finds where a run of plain ASCII ends, for a decoder's own
//     fast path over strings without escapes.
//   - Framing, over a stream too big to hold (a CloudTrail file of many
//     megabytes): Reader cuts the stream into top-level values, tracking only
//     strings and brackets, so that the decoder parses one record at a time;
//     the decoder checks what it parses.
//
// Nothing here allocates per value: positions are indexes into the caller's
// bytes, and the errors are fixed values a decoder maps to its own
// rejection reasons. Both halves are hand-written rather than taken from a
// library because the decoders built on them are measured against
// fastjson, jsonparser and encoding/json and are faster (docs/bench/).
package jsonscan

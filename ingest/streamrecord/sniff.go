package streamrecord

import (
	"bytes"
	"regexp"

	"github.com/hotkeyd/hotkeyd/ingest/input"
)

// SniffDump reports whether head, the first bytes of an input (a few KiB,
// compressed or not), looks like a dump of stream records: JSON whose
// first bytes name a DynamoDB stream record's parts. CloudTrail's records
// never do (their eventSource is "dynamodb.amazonaws.com"), nor do access
// log lines.
func SniffDump(head []byte) bool {
	if plain, codec, err := input.DecompressHead(head, 8<<10); codec != "" {
		if err != nil && len(plain) == 0 {
			return false
		}
		head = plain
	}
	head = bytes.TrimLeft(bytes.TrimPrefix(bytes.TrimLeft(head, " \t\r\n"), []byte("\ufeff")), " \t\r\n")
	if len(head) == 0 || (head[0] != '{' && head[0] != '[') {
		return false
	}
	for _, m := range dumpMarkers {
		if m.Match(head) {
			return true
		}
	}
	return false
}

// dumpMarkers are what the records of a dump start with: the eventSource
// of a Lambda event's records (and of Kinesis payloads), the dynamodb
// member of a stream record, the envelope of a Kinesis record in a Lambda
// event or in `aws kinesis get-records` output.
var dumpMarkers = []*regexp.Regexp{
	regexp.MustCompile(`"eventSource"\s*:\s*"aws:(dynamodb|kinesis)"`),
	regexp.MustCompile(`"dynamodb"\s*:\s*\{`),
	regexp.MustCompile(`"kinesisSchemaVersion"\s*:`),
	regexp.MustCompile(`"ApproximateArrivalTimestamp"\s*:`),
}

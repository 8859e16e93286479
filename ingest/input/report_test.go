package input

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// TestTextReporterSummary: the first rejections are described, the rest
// summed per reason, and the members lines carried outside their format
// listed most frequent first, at most maxIgnoredNames of them.
func TestTextReporterSummary(t *testing.T) {
	var b bytes.Buffer
	r := NewTextReporter(&b, nil)
	for i := range MaxRejectLines + 2 {
		r.Reject("jsonl", traffic.ReasonMissingPK, fmt.Errorf("line %d: missing_pk: no partition key", i+1))
	}
	r.Reject("jsonl", traffic.ReasonBadJSON, errors.New("line 9: bad_json: not a JSON object"))
	r.Ignored("jsonl", "request_id", 3)
	r.Ignored("jsonl", "latency_ms", 1)
	r.Ignored("jsonl", "request_id", 2)
	r.Summary()
	want := `hotkeyd: skipped (missing_pk): line 1: missing_pk: no partition key
hotkeyd: skipped (missing_pk): line 2: missing_pk: no partition key
hotkeyd: skipped (missing_pk): line 3: missing_pk: no partition key
hotkeyd: skipped (missing_pk): line 4: missing_pk: no partition key
hotkeyd: skipped (missing_pk): line 5: missing_pk: no partition key
hotkeyd: skipped 8 records in all: bad_json 1, missing_pk 7
hotkeyd: ignored fields outside the contract: "request_id" (5 lines), "latency_ms" (1 line)
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}

	b.Reset()
	r = NewTextReporter(&b, nil)
	for i := range maxIgnoredNames + 3 {
		r.Ignored("jsonl", fmt.Sprintf("m%02d", i), uint64(100-i))
	}
	r.Summary()
	if want := `"m09" (91 lines), 3 other names` + "\n"; !bytes.HasSuffix(b.Bytes(), []byte(want)) {
		t.Errorf("got %s, want the list to end with %s", b.String(), want)
	}
}

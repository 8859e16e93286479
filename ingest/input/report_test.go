package input

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// TestTextReporterSummary: the first rejections in input order are
// described, whatever the order they come in (inputs read in parts side
// by side), those without a place after them; the rest are summed per
// reason, and the members lines carried outside their format listed most
// frequent first, at most maxIgnoredNames of them.
func TestTextReporterSummary(t *testing.T) {
	var b bytes.Buffer
	r := NewTextReporter(&b, nil)
	r.Order([]string{"b.jsonl", "a.json"})
	r.Reject("jsonl", traffic.ReasonBadTime, errors.New("bad_time: time 9999-12-31T23:59:59Z is more than 24h0m0s after the clock"))
	for _, i := range []int64{9, 4, 2, 7} {
		r.Reject("jsonl", traffic.ReasonMissingPK, &RecordError{Name: "b.jsonl", Line: i, Err: errors.New("missing_pk: no partition key")})
	}
	r.Reject("streams", traffic.ReasonBadRecord, &RecordError{Name: "a.json", Record: 1, Err: errors.New("bad_record: no keys")})
	r.Reject("jsonl", traffic.ReasonBadJSON, &RecordError{Name: "b.jsonl", Line: 3, Err: errors.New("bad_json: not a JSON object")})
	r.Ignored("jsonl", "request_id", 3)
	r.Ignored("jsonl", "latency_ms", 1)
	r.Ignored("jsonl", "request_id", 2)
	r.Summary()
	want := `hotkeyd: skipped (missing_pk): b.jsonl: line 2: missing_pk: no partition key
hotkeyd: skipped (bad_json): b.jsonl: line 3: bad_json: not a JSON object
hotkeyd: skipped (missing_pk): b.jsonl: line 4: missing_pk: no partition key
hotkeyd: skipped (missing_pk): b.jsonl: line 7: missing_pk: no partition key
hotkeyd: skipped (missing_pk): b.jsonl: line 9: missing_pk: no partition key
hotkeyd: skipped 7 records in all: bad_json 1, bad_record 1, bad_time 1, missing_pk 4
hotkeyd: ignored fields outside the contract: "request_id" (5 lines), "latency_ms" (1 line)
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}

	// Fewer than MaxRejectLines: every one, the unplaced last.
	b.Reset()
	r = NewTextReporter(&b, nil)
	r.Order([]string{"b.jsonl", "a.json"})
	r.Reject("jsonl", traffic.ReasonBadTime, errors.New("bad_time: far"))
	r.Reject("streams", traffic.ReasonBadRecord, &RecordError{Name: "a.json", Record: 1, Err: errors.New("bad_record: no keys")})
	r.Reject("jsonl", traffic.ReasonBadJSON, &RecordError{Name: "b.jsonl", Line: 3, Err: errors.New("bad_json: not a JSON object")})
	r.Summary()
	want = `hotkeyd: skipped (bad_json): b.jsonl: line 3: bad_json: not a JSON object
hotkeyd: skipped (bad_record): a.json: record 1: bad_record: no keys
hotkeyd: skipped (bad_time): bad_time: far
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

package jsonl

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

var readTime = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

func fixedNow() time.Time { return readTime }

func TestParseValid(t *testing.T) {
	ts := time.Date(2026, 11, 22, 10, 0, 0, 123e6, time.UTC)
	cases := []struct {
		name, line string
		want       traffic.Event
	}{
		{"contract example",
			`{"ts":"2026-11-22T10:00:00.123Z","table":"orders","index":"GSI1","pk":"USER#123","sk":"ORDER#2026-11-22#9","op":"GetItem","units":0.5}`,
			traffic.Event{Table: "orders", Index: "GSI1", PK: "USER#123", SK: "ORDER#2026-11-22#9", Class: traffic.Read, Units: 0.5, Time: ts}},
		{"defaults: no ts, no units, no index or sk",
			`{"table":"tbl","pk":"k","op":"PutItem"}`,
			traffic.Event{Table: "tbl", PK: "k", Class: traffic.Write, Units: 1, Time: readTime}},
		{"nulls are absent",
			`{"table":"tbl","pk":"k","op":"write","ts":null,"units":null,"sk":null,"index":null}`,
			traffic.Event{Table: "tbl", PK: "k", Class: traffic.Write, Units: 1, Time: readTime}},
		{"epoch milliseconds",
			`{"ts":1795341600123,"table":"tbl","pk":"k","op":"read"}`,
			traffic.Event{Table: "tbl", PK: "k", Units: 1, Time: time.UnixMilli(1795341600123).UTC()}},
		{"fractional epoch milliseconds",
			`{"ts":1795341600123.5,"table":"tbl","pk":"k","op":"read"}`,
			traffic.Event{Table: "tbl", PK: "k", Units: 1, Time: time.UnixMilli(1795341600123).Add(500 * time.Microsecond).UTC()}},
		{"offset time is kept as the same instant in UTC",
			`{"ts":"2026-11-22T12:00:00.123+02:00","table":"tbl","pk":"k","op":"Query"}`,
			traffic.Event{Table: "tbl", PK: "k", Units: 1, Time: ts}},
		{"escapes and unicode in keys",
			`{"table":"tbl","pk":"USER\u0023\"1\"\\é\ud83d\ude00","sk":"a\/b","op":"UpdateItem","units":2e0}`,
			traffic.Event{Table: "tbl", PK: "USER#\"1\"\\é😀", SK: "a/b", Class: traffic.Write, Units: 2, Time: readTime}},
		{"escaped member names",
			`{"t\u0061ble":"tbl","\u0070k":"k","op":"DeleteItem"}`,
			traffic.Event{Table: "tbl", PK: "k", Class: traffic.Write, Units: 1, Time: readTime}},
		{"unknown members of every kind are skipped",
			` { "x" : [1, {"a": [true, false, null, "s"]}, -0.5e-3], "y": {}, "z": [], "table":"tbl","pk":"k","op":"BatchGetItem","units":0 } ` + "\r",
			traffic.Event{Table: "tbl", PK: "k", Units: 0, Time: readTime}},
		{"scan needs no key",
			`{"table":"tbl","op":"Scan","units":128}`,
			traffic.Event{Table: "tbl", Units: 128, Time: readTime}},
		{"a transaction's item costs two units",
			`{"table":"tbl","pk":"k","op":"TransactWriteItems"}`,
			traffic.Event{Table: "tbl", PK: "k", Class: traffic.Write, Units: 2, Time: readTime}},
		{"a transaction's item read costs two units",
			`{"table":"tbl","pk":"k","op":"TransactGetItems"}`,
			traffic.Event{Table: "tbl", PK: "k", Units: 2, Time: readTime}},
		{"a transaction with its consumed capacity",
			`{"table":"tbl","pk":"k","op":"TransactWriteItems","units":6}`,
			traffic.Event{Table: "tbl", PK: "k", Class: traffic.Write, Units: 6, Time: readTime}},
		{"throttled",
			`{"table":"tbl","pk":"k","op":"PutItem","throttled":true}`,
			traffic.Event{Table: "tbl", PK: "k", Class: traffic.Write, Units: 1, Time: readTime, Throttled: true}},
		{"not throttled",
			`{"table":"tbl","pk":"k","op":"PutItem","throttled":false,"throttle_reason":null}`,
			traffic.Event{Table: "tbl", PK: "k", Class: traffic.Write, Units: 1, Time: readTime}},
		{"a reason marks the call throttled",
			`{"table":"tbl","pk":"k","op":"PutItem","throttle_reason":"TableWriteKeyRangeThroughputExceeded"}`,
			traffic.Event{Table: "tbl", PK: "k", Class: traffic.Write, Units: 1, Time: readTime, Throttled: true,
				ThrottleReason: traffic.MakeThrottleReason(false, traffic.Write, traffic.LimitKeyRange)}},
		{"a reason with its table's resource",
			`{"table":"tbl","pk":"k","op":"GetItem","throttled":true,"throttle_reason":"TableReadProvisionedThroughputExceeded","throttle_resource":"arn:aws:dynamodb:eu-west-1:123456789012:table/tbl"}`,
			traffic.Event{Table: "tbl", PK: "k", Class: traffic.Read, Units: 1, Time: readTime, Throttled: true,
				ThrottleReason: traffic.MakeThrottleReason(false, traffic.Read, traffic.LimitProvisioned)}},
		{"a query of an index throttled by it",
			`{"table":"tbl","index":"GSI1","pk":"OPEN","op":"Query","throttle_reason":"IndexReadKeyRangeThroughputExceeded","throttle_resource":"arn:aws:dynamodb:eu-west-1:123456789012:table/tbl/index/GSI1"}`,
			traffic.Event{Table: "tbl", Index: "GSI1", PK: "OPEN", Class: traffic.Read, Units: 1, Time: readTime, Throttled: true,
				ThrottleReason: traffic.MakeThrottleReason(true, traffic.Read, traffic.LimitKeyRange)}},
		{"a write held back by an index counts on the index, without the table's key",
			`{"table":"tbl","pk":"k","sk":"s","op":"PutItem","throttle_reason":"IndexWriteProvisionedThroughputExceeded","throttle_resource":"arn:aws:dynamodb:eu-west-1:123456789012:table/tbl/index/by-status"}`,
			traffic.Event{Table: "tbl", Index: "by-status", Class: traffic.Write, Units: 1, Time: readTime, Throttled: true,
				ThrottleReason: traffic.MakeThrottleReason(true, traffic.Write, traffic.LimitProvisioned)}},
		{"an index's reason without its resource stays on the table",
			`{"table":"tbl","pk":"k","op":"PutItem","throttle_reason":"IndexWriteAccountLimitExceeded"}`,
			traffic.Event{Table: "tbl", PK: "k", Class: traffic.Write, Units: 1, Time: readTime, Throttled: true,
				ThrottleReason: traffic.MakeThrottleReason(true, traffic.Write, traffic.LimitAccount)}},
		{"an empty resource says nothing",
			`{"table":"tbl","pk":"k","op":"PutItem","throttled":true,"throttle_resource":""}`,
			traffic.Event{Table: "tbl", PK: "k", Class: traffic.Write, Units: 1, Time: readTime, Throttled: true}},
		{"the most a batch of writes consumes",
			`{"table":"tbl","pk":"k","op":"BatchWriteItem","units":110000}`,
			traffic.Event{Table: "tbl", PK: "k", Class: traffic.Write, Units: 110000, Time: readTime}},
		{"the most one item read consumes",
			`{"table":"my-table.v2_x","index":"GSI.1-by_date","pk":"k","op":"GetItem","units":100}`,
			traffic.Event{Table: "my-table.v2_x", Index: "GSI.1-by_date", PK: "k", Units: 100, Time: readTime}},
		{"the longest table name",
			`{"table":"` + strings.Repeat("T", 255) + `","pk":"k","op":"read","units":4196}`,
			traffic.Event{Table: strings.Repeat("T", 255), PK: "k", Units: 4196, Time: readTime}},
	}
	p := NewParser(Fields{}, "jsonl", fixedNow)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ev traffic.Event
			if err := p.Parse([]byte(c.line), &ev); err != nil {
				t.Fatalf("Parse: %v", err)
			}
			c.want.Source = "jsonl"
			if !ev.Time.Equal(c.want.Time) {
				t.Errorf("time %v, want %v", ev.Time, c.want.Time)
			}
			ev.Time, c.want.Time = time.Time{}, time.Time{}
			if ev != c.want {
				t.Errorf("got  %+v\nwant %+v", ev, c.want)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	cases := []struct {
		name, line, reason string
	}{
		{"empty object", `{}`, traffic.ReasonMissingTable},
		{"a field twice", `{"table":"aaa","table":"bbb","pk":"k","op":"read"}`, traffic.ReasonDuplicateField},
		{"throttled twice", `{"table":"tbl","pk":"k","op":"read","throttled":true,"throttled":false}`, traffic.ReasonDuplicateField},
		{"a field twice, once null", `{"table":"tbl","pk":"k","op":"read","ts":null,"ts":1795341600}`, traffic.ReasonDuplicateField},
		{"an empty throttling reason", `{"table":"tbl","pk":"k","op":"read","throttle_reason":""}`, traffic.ReasonBadThrottleReason},
		{"truncated", `{"table":"tbl","pk":"k","op":"read"`, traffic.ReasonBadJSON},
		{"truncated in a string", `{"table":"tbl","pk":"k`, traffic.ReasonBadJSON},
		{"truncated literal", `{"table":"tbl","pk":"k","op":"read","x":tru`, traffic.ReasonBadJSON},
		{"not an object", `["table","t"]`, traffic.ReasonBadJSON},
		{"a bare string", `"table"`, traffic.ReasonBadJSON},
		{"binary", "\x00\x01\x02\xff\xfe{", traffic.ReasonBadJSON},
		{"invalid UTF-8 in a key", "{\"table\":\"tbl\",\"pk\":\"\xff\xfe\",\"op\":\"read\"}", traffic.ReasonBadUTF8},
		{"invalid UTF-8 in an unknown member", "{\"table\":\"tbl\",\"pk\":\"k\",\"op\":\"read\",\"x\":\"\xc3\x28\"}", traffic.ReasonBadUTF8},
		{"control character", "{\"table\":\"tbl\",\"pk\":\"a\tb\",\"op\":\"read\"}", traffic.ReasonBadJSON},
		{"bad escape", `{"table":"tbl","pk":"\q","op":"read"}`, traffic.ReasonBadJSON},
		{"short unicode escape", `{"table":"tbl","pk":"\u12","op":"read"}`, traffic.ReasonBadJSON},
		{"trailing data", `{"table":"tbl","pk":"k","op":"read"} x`, traffic.ReasonBadJSON},
		{"two objects", `{"table":"tbl","pk":"k","op":"read"}{"table":"tbl","pk":"k","op":"read"}`, traffic.ReasonBadJSON},
		{"trailing comma", `{"table":"tbl","pk":"k","op":"read",}`, traffic.ReasonBadJSON},
		{"missing colon", `{"table" "t"}`, traffic.ReasonBadJSON},
		{"single quotes", `{'table':'t'}`, traffic.ReasonBadJSON},
		{"bad number", `{"table":"tbl","pk":"k","op":"read","units":01}`, traffic.ReasonBadJSON},
		{"bad exponent", `{"table":"tbl","pk":"k","op":"read","units":1e}`, traffic.ReasonBadJSON},
		{"NaN literal", `{"table":"tbl","pk":"k","op":"read","units":NaN}`, traffic.ReasonBadJSON},
		{"deep nesting", `{"x":` + strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1) + `,"table":"tbl","pk":"k","op":"read"}`, traffic.ReasonBadJSON},
		{"10 000 nested braces", strings.Repeat("{", 10000), traffic.ReasonBadJSON},
		{"10 000 nested values", strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000), traffic.ReasonBadJSON},
		{"missing table", `{"pk":"k","op":"read"}`, traffic.ReasonMissingTable},
		{"empty table", `{"table":"","pk":"k","op":"read"}`, traffic.ReasonMissingTable},
		{"null table", `{"table":null,"pk":"k","op":"read"}`, traffic.ReasonMissingTable},
		{"missing pk", `{"table":"tbl","op":"GetItem"}`, traffic.ReasonMissingPK},
		{"empty pk", `{"table":"tbl","pk":"","op":"GetItem"}`, traffic.ReasonMissingPK},
		{"numeric table", `{"table":5,"pk":"k","op":"read"}`, traffic.ReasonBadType},
		{"object pk", `{"table":"tbl","pk":{"S":"k"},"op":"read"}`, traffic.ReasonBadType},
		{"boolean sk", `{"table":"tbl","pk":"k","sk":true,"op":"read"}`, traffic.ReasonBadType},
		{"array index", `{"table":"tbl","pk":"k","index":[],"op":"read"}`, traffic.ReasonBadType},
		{"numeric op", `{"table":"tbl","pk":"k","op":1}`, traffic.ReasonBadType},
		{"boolean ts", `{"table":"tbl","pk":"k","op":"read","ts":true}`, traffic.ReasonBadType},
		{"unknown op", `{"table":"tbl","pk":"k","op":"ExecuteStatement"}`, traffic.ReasonBadOp},
		{"missing op", `{"table":"tbl","pk":"k"}`, traffic.ReasonBadOp},
		{"negative units", `{"table":"tbl","pk":"k","op":"read","units":-1}`, traffic.ReasonBadUnits},
		{"string units", `{"table":"tbl","pk":"k","op":"read","units":"1"}`, traffic.ReasonBadUnits},
		{"boolean units", `{"table":"tbl","pk":"k","op":"read","units":true}`, traffic.ReasonBadUnits},
		{"infinite units", `{"table":"tbl","pk":"k","op":"read","units":1e999}`, traffic.ReasonBadUnits},
		{"units near the float limit", `{"table":"tbl","pk":"k","op":"write","units":1.7e308}`, traffic.ReasonBadUnits},
		{"more units than any read", `{"table":"tbl","pk":"k","op":"read","units":4196.5}`, traffic.ReasonBadUnits},
		{"more units than any write", `{"table":"tbl","pk":"k","op":"write","units":110000.25}`, traffic.ReasonBadUnits},
		{"more units than one item holds", `{"table":"tbl","pk":"k","op":"GetItem","units":101}`, traffic.ReasonBadUnits},
		{"more units than a page", `{"table":"tbl","pk":"k","op":"Query","units":357}`, traffic.ReasonBadUnits},
		{"more units than a transaction", `{"table":"tbl","pk":"k","op":"TransactWriteItems","units":92313}`, traffic.ReasonBadUnits},
		{"short table name", `{"table":"ab","pk":"k","op":"read"}`, traffic.ReasonBadTable},
		{"long table name", `{"table":"` + strings.Repeat("a", 256) + `","pk":"k","op":"read"}`, traffic.ReasonBadTable},
		{"table name with a space", `{"table":"my table","pk":"k","op":"read"}`, traffic.ReasonBadTable},
		{"table name with a slash", `{"table":"orders/GSI1","pk":"k","op":"read"}`, traffic.ReasonBadTable},
		{"escaped control character in table", `{"table":"ord\u0000ers","pk":"k","op":"read"}`, traffic.ReasonBadTable},
		{"short index name", `{"table":"tbl","index":"ix","pk":"k","op":"Query"}`, traffic.ReasonBadTable},
		{"index name with a colon", `{"table":"tbl","index":"a:b:c","pk":"k","op":"Query"}`, traffic.ReasonBadTable},
		{"unparseable ts", `{"table":"tbl","pk":"k","op":"read","ts":"yesterday"}`, traffic.ReasonBadTime},
		{"ts without zone", `{"table":"tbl","pk":"k","op":"read","ts":"2026-11-22T10:00:00"}`, traffic.ReasonBadTime},
		{"ts out of range", `{"table":"tbl","pk":"k","op":"read","ts":"2026-02-30T10:00:00Z"}`, traffic.ReasonBadTime},
		{"negative epoch", `{"table":"tbl","pk":"k","op":"read","ts":-5}`, traffic.ReasonBadTime},
		{"string throttled", `{"table":"tbl","pk":"k","op":"read","throttled":"true"}`, traffic.ReasonBadType},
		{"numeric throttled", `{"table":"tbl","pk":"k","op":"read","throttled":1}`, traffic.ReasonBadType},
		{"numeric reason", `{"table":"tbl","pk":"k","op":"read","throttle_reason":3}`, traffic.ReasonBadType},
		{"object resource", `{"table":"tbl","pk":"k","op":"read","throttle_reason":"TableReadKeyRangeThroughputExceeded","throttle_resource":{}}`, traffic.ReasonBadType},
		{"unknown reason", `{"table":"tbl","pk":"k","op":"read","throttle_reason":"TableReadThroughputExceeded"}`, traffic.ReasonBadThrottleReason},
		{"reason in lower case", `{"table":"tbl","pk":"k","op":"read","throttle_reason":"tablereadkeyrangethroughputexceeded"}`, traffic.ReasonBadThrottleReason},
		{"a write's reason on a read", `{"table":"tbl","pk":"k","op":"GetItem","throttle_reason":"TableWriteKeyRangeThroughputExceeded"}`, traffic.ReasonBadThrottleReason},
		{"a reason on a call not throttled", `{"table":"tbl","pk":"k","op":"read","throttled":false,"throttle_reason":"TableReadKeyRangeThroughputExceeded"}`, traffic.ReasonBadThrottleReason},
		{"a resource that is no ARN", `{"table":"tbl","pk":"k","op":"read","throttle_reason":"TableReadKeyRangeThroughputExceeded","throttle_resource":"tbl"}`, traffic.ReasonBadThrottleReason},
		{"another table's resource", `{"table":"tbl","pk":"k","op":"read","throttle_reason":"TableReadKeyRangeThroughputExceeded","throttle_resource":"arn:aws:dynamodb:eu-west-1:1:table/other"}`, traffic.ReasonBadThrottleReason},
		{"an index's resource with a table's reason", `{"table":"tbl","pk":"k","op":"read","throttle_reason":"TableReadKeyRangeThroughputExceeded","throttle_resource":"arn:aws:dynamodb:eu-west-1:1:table/tbl/index/GSI1"}`, traffic.ReasonBadThrottleReason},
		{"a table's resource with an index's reason", `{"table":"tbl","pk":"k","op":"read","throttle_reason":"IndexReadKeyRangeThroughputExceeded","throttle_resource":"arn:aws:dynamodb:eu-west-1:1:table/tbl"}`, traffic.ReasonBadThrottleReason},
		{"huge epoch", `{"table":"tbl","pk":"k","op":"read","ts":1e300}`, traffic.ReasonBadTime},
	}
	p := NewParser(Fields{}, "jsonl", fixedNow)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ev traffic.Event
			err := p.Parse([]byte(c.line), &ev)
			if err == nil {
				t.Fatalf("accepted %q as %+v", c.line, ev)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			if pe.Reason != c.reason {
				t.Errorf("reason %q (%v), want %q", pe.Reason, err, c.reason)
			}
		})
	}
}

func TestParseCustomFields(t *testing.T) {
	p := NewParser(Fields{Time: "@timestamp", Table: "TableName", PK: "key", Op: "operation", Units: "rcu"}, "app", fixedNow)
	var ev traffic.Event
	line := `{"@timestamp":"2026-11-22T10:00:00Z","TableName":"Music","key":"Acme","operation":"Query","rcu":4,"table":"ignored","sk":"s"}`
	if err := p.Parse([]byte(line), &ev); err != nil {
		t.Fatal(err)
	}
	want := traffic.Event{Table: "Music", PK: "Acme", SK: "s", Units: 4, Source: "app", Time: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	if ev != want {
		t.Errorf("got %+v, want %+v", ev, want)
	}
	if err := p.Parse([]byte(`{"table":"tbl","pk":"k","op":"read"}`), &ev); Reason(err) != traffic.ReasonMissingTable {
		t.Errorf("default names still read with custom Fields: %v", err)
	}
}

// TestParseInternsNames checks that table and index names are shared
// between Events and keys are not (the line buffer is reused).
func TestParseInternsNames(t *testing.T) {
	p := NewParser(Fields{}, "jsonl", fixedNow)
	line := []byte(`{"table":"orders","index":"GSI1","pk":"USER#1","op":"read"}`)
	var a, b traffic.Event
	if err := p.Parse(line, &a); err != nil {
		t.Fatal(err)
	}
	copy(line[bytesIndex(line, "USER#1"):], "XXXX#9")
	if err := p.Parse(line, &b); err != nil {
		t.Fatal(err)
	}
	if a.PK != "USER#1" || b.PK != "XXXX#9" {
		t.Errorf("keys %q %q: the first Event changed with the buffer", a.PK, b.PK)
	}
	if unsafeStringData(a.Table) != unsafeStringData(b.Table) || unsafeStringData(a.Index) != unsafeStringData(b.Index) {
		t.Error("table and index names are not interned")
	}
}

func bytesIndex(b []byte, s string) int { return strings.Index(string(b), s) }

// TestParseAllocs checks the promise of the package: no allocation per
// line, only one per arena chunk of key strings.
func TestParseAllocs(t *testing.T) {
	p := NewParser(Fields{}, "jsonl", fixedNow)
	line := []byte(`{"ts":"2026-11-22T10:00:00.123Z","table":"orders","index":"GSI1","pk":"USER#123","sk":"ORDER#9","op":"GetItem","units":0.5,"extra":{"a":[1,2]}}`)
	var ev traffic.Event
	if err := p.Parse(line, &ev); err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(100, func() {
		if err := p.Parse(line, &ev); err != nil {
			t.Fatal(err)
		}
	})
	if n > 0.05 {
		t.Errorf("%v allocations per line, want less than one per 20 lines (the key arena's chunks)", n)
	}
}

// TestParseAgreesWithEncodingJSON checks the scanner's notion of valid JSON
// against encoding/json on the lines of the other tests.
func TestParseAgreesWithEncodingJSON(t *testing.T) {
	lines := []string{
		`{"a":[1,2,{"b":null}],"table":"tbl","pk":"k","op":"read"}`,
		`{"a":1.5e+10,"table":"tbl","pk":"k","op":"read"}`,
		`{"a":-0,"table":"tbl","pk":"k","op":"read"}`,
		`{"a":"\u00e9\n","table":"tbl","pk":"k","op":"read"}`,
		`{"a":.5,"table":"tbl","pk":"k","op":"read"}`,
		`{"a":+1,"table":"tbl","pk":"k","op":"read"}`,
		`{"a":1.,"table":"tbl","pk":"k","op":"read"}`,
		`{"a":[1,],"table":"tbl","pk":"k","op":"read"}`,
		`{"a":{"b" 1},"table":"tbl","pk":"k","op":"read"}`,
		`{"a":nul,"table":"tbl","pk":"k","op":"read"}`,
	}
	p := NewParser(Fields{}, "jsonl", fixedNow)
	for _, l := range lines {
		var ev traffic.Event
		err := p.Parse([]byte(l), &ev)
		valid := json.Valid([]byte(l))
		if (err == nil) != valid {
			t.Errorf("%s: Parse error %v, encoding/json valid %v", l, err, valid)
		}
	}

}

// TestParseTimeAgreesWithTimeParse checks the minute cache against
// time.Parse, across minutes and with every fraction length.
func TestParseTimeAgreesWithTimeParse(t *testing.T) {
	p := NewParser(Fields{}, "", fixedNow)
	for _, s := range []string{
		"2026-11-22T10:00:00Z", "2026-11-22T10:00:59.9Z", "2026-11-22T10:00:01.123456789Z",
		"2026-11-22T10:01:00.5Z", "2026-11-22T10:00:00.12Z", "2024-02-29T23:59:59.000Z",
		"2026-11-22T10:00:60Z", "2026-11-22T10:00:0aZ", "2026-11-22T10:00:00.Z", "2026-11-22T10:00:00.1234567891Z",
		"2026-02-29T10:00:00Z", "2026-11-22T24:00:00Z", "2026-11-22t10:00:00Z", "2026-11-22T10:00:00.5+01:00",
		"2026-11-22T10:00:00,5Z", "2026-11-22T10:60:00Z",
	} {
		want, werr := time.Parse(time.RFC3339Nano, s)
		for range 2 { // the second from the cache
			got, ok := p.parseTime([]byte(s))
			if ok != (werr == nil) || ok && got != want.UTC() { // the same bits
				t.Errorf("%s: got %v %v, time.Parse %v %v", s, got, ok, want, werr)
			}
			if ok && got.Location() != time.UTC {
				t.Errorf("%s: location %v", s, got.Location())
			}
		}
	}
}

// TestParseKeysSurviveArenaChunks checks that keys stay intact across many
// lines, big keys and new arena chunks.
func TestParseKeysSurviveArenaChunks(t *testing.T) {
	p := NewParser(Fields{}, "", fixedNow)
	var evs []traffic.Event
	var want []string
	line := []byte{}
	for i := range 5000 {
		pk := strings.Repeat(string(rune('a'+i%26)), 1+i%40)
		if i%500 == 0 {
			pk = strings.Repeat("B", keyChunk) // over a chunk
		}
		line = append(line[:0], `{"table":"tbl","op":"read","pk":"`...)
		line = append(line, pk...)
		line = append(line, `","sk":"s`...)
		line = append(line, pk[:1]...)
		line = append(line, `"}`...)
		var ev traffic.Event
		if err := p.Parse(line, &ev); err != nil {
			t.Fatal(err)
		}
		for j := range line {
			line[j] = 'X' // the caller reuses its buffer
		}
		evs = append(evs, ev)
		want = append(want, pk)
	}
	for i, ev := range evs {
		if ev.PK != want[i] || ev.SK != "s"+want[i][:1] {
			t.Fatalf("event %d: pk %.20q sk %q, want %.20q", i, ev.PK, ev.SK, want[i])
		}
	}
}

// TestParseTimesOutOfOrder: times of many minutes in no order (merged
// logs), which share the minute cache's slots, each read as time.Parse
// reads them.
func TestParseTimesOutOfOrder(t *testing.T) {
	p := NewParser(Fields{}, "jsonl", fixedNow)
	base := time.Date(2026, 11, 22, 23, 40, 0, 0, time.UTC)
	for i := range 5000 {
		at := base.Add(time.Duration((i*7919)%(50*60*1000)) * time.Millisecond)
		ts := at.Format("2006-01-02T15:04:05.000Z")
		var ev traffic.Event
		if err := p.Parse([]byte(`{"ts":"`+ts+`","table":"orders","pk":"k","op":"read"}`), &ev); err != nil {
			t.Fatalf("%s: %v", ts, err)
		}
		want, _ := time.Parse(time.RFC3339Nano, ts)
		if ev.Time != want {
			t.Fatalf("%s read as %v, want %v", ts, ev.Time, want)
		}
	}
}

// TestParseFieldsSharingFirstBytes: member names that start alike (and one
// the prefix of another) are told apart.
func TestParseFieldsSharingFirstBytes(t *testing.T) {
	p := NewParser(Fields{Time: "t", Table: "tt", Index: "ttt", PK: "k", SK: "kk", Op: "o", Units: "u"}, "jsonl", fixedNow)
	var ev traffic.Event
	line := `{"ttt":"byDay","kk":"S","k":"P","tt":"orders","t":"2026-11-22T10:00:00Z","o":"GetItem","u":2,"tttt":"x"}`
	if err := p.Parse([]byte(line), &ev); err != nil {
		t.Fatal(err)
	}
	want := traffic.Event{Source: "jsonl", Table: "orders", Index: "byDay", PK: "P", SK: "S", Class: traffic.Read, Units: 2,
		Time: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	if ev != want {
		t.Errorf("got %+v, want %+v", ev, want)
	}
}

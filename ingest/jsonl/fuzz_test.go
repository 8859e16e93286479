package jsonl

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// FuzzParseLine checks the scanner against encoding/json: whatever it
// accepts is valid JSON holding the same table, key and units, and whatever
// encoding/json rejects it rejects too. Run with
// go test -fuzz FuzzParseLine ./ingest/jsonl; the corpus is
// testdata/fuzz/FuzzParseLine.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		`{"ts":"2026-11-22T10:00:00.123Z","table":"orders","index":"GSI1","pk":"USER#123","sk":"ORDER#2026-11-22#9","op":"GetItem","units":0.5}`,
		`{"ts":1795341600123,"table":"tbl","pk":"k","op":"write"}`,
		`{"table":"tbl","op":"Scan","units":1e2}`,
		`{"table":"tbl","pk":"\u00e9\ud83d\ude00","op":"read","x":[{"a":null},true,false,-0.1E-2]}`,
		`{"table":"tbl","pk":"k","op":"read","units":-1}`,
		`{"table":"tbl","pk":"k","op":"read","ts":"2026-02-29T00:00:00+01:00"}`,
		"{\"table\":\"\xff\",\"pk\":\"k\",\"op\":\"read\"}",
		`{{{{`,
		`[1,2]`,
	} {
		f.Add([]byte(s))
	}
	p := NewParser(Fields{}, "jsonl", func() time.Time { return time.Unix(0, 0) })
	f.Fuzz(func(t *testing.T, line []byte) {
		in := bytes.Clone(line)
		var ev traffic.Event
		err := p.Parse(line, &ev)
		if !bytes.Equal(in, line) {
			t.Fatal("Parse modified its input")
		}
		if err != nil {
			if Reason(err) == "" {
				t.Fatalf("error %v without a reason", err)
			}
			if Reason(err) == traffic.ReasonBadJSON && json.Valid(line) && isObject(line) && !tooDeep(line) {
				t.Fatalf("rejected valid JSON as bad_json: %v", err)
			}
			return
		}
		if !json.Valid(line) {
			t.Fatalf("accepted invalid JSON")
		}
		if !utf8.Valid(line) {
			t.Fatalf("accepted invalid UTF-8")
		}
		var m struct {
			TS    any      `json:"ts"`
			Table string   `json:"table"`
			PK    *string  `json:"pk"`
			Units *float64 `json:"units"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("accepted a line encoding/json cannot decode: %v", err)
		}
		if m.Table != ev.Table || (m.PK != nil && *m.PK != ev.PK) {
			t.Fatalf("table/pk %q/%q, encoding/json says %q/%v", ev.Table, ev.PK, m.Table, m.PK)
		}
		if m.Units != nil && *m.Units != ev.Units || m.Units == nil && ev.Units != 1 {
			t.Fatalf("units %v, encoding/json says %v", ev.Units, m.Units)
		}
		if ts, ok := m.TS.(string); ok {
			want, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil || !want.Equal(ev.Time) || ev.Time.Location() != time.UTC {
				t.Fatalf("time %v from %q, time.Parse says %v, %v", ev.Time, ts, want, err)
			}
		}
		if ev.Units < 0 || ev.Time.IsZero() && !ev.Time.Equal(time.Unix(0, 0)) {
			t.Fatalf("bad event %+v", ev)
		}
	})
}

// tooDeep reports whether line nests deeper than MaxDepth, counting
// brackets outside strings.
func tooDeep(line []byte) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range line {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > MaxDepth+1 {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}

func isObject(line []byte) bool {
	t := bytes.TrimLeft(line, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

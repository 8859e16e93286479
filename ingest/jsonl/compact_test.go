package jsonl

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/ingest/jsonscan"
	"github.com/hotkeyd/hotkeyd/internal/benchgen"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// compactCases returns the lines of testdata/compact.txt (the fast path's
// edges), of testdata/mixed.jsonl, of FuzzParseLine's corpus, and some
// built here: huge lines and keys.
func compactCases(t testing.TB) [][]byte {
	var lines [][]byte
	f, err := os.Open("testdata/compact.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			s, err := strconv.Unquote(l)
			if err != nil {
				t.Fatalf("testdata/compact.txt: %q: %v", l, err)
			}
			lines = append(lines, []byte(s))
		}
	}
	mixed, err := os.ReadFile("testdata/mixed.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines = append(lines, bytes.Split(mixed, []byte("\n"))...)
	corpus, err := filepath.Glob("testdata/fuzz/FuzzParseLine/*")
	if err != nil || len(corpus) == 0 {
		t.Fatalf("FuzzParseLine's corpus: %v, %d files", err, len(corpus))
	}
	for _, name := range corpus {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		_, rest, _ := strings.Cut(string(b), "[]byte(")
		s, err := strconv.Unquote(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), ")")))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		lines = append(lines, []byte(s))
	}
	long := func(n int) string { return strings.Repeat("k", n) }
	for _, s := range []string{
		`{"table":"products","pk":"` + long(60_000) + `","op":"GetItem"}`,
		`{"table":"products","pk":"` + long(keyChunk) + `","sk":"` + long(keyChunk/4+1) + `","op":"GetItem"}`,
		`{"table":"products","pk":"` + long(traffic.MaxPKLen+1) + `","op":"GetItem"}`,
		`{"table":"` + long(255) + `","pk":"KEY#1","op":"GetItem"}`,
		`{"table":"` + long(256) + `","pk":"KEY#1","op":"GetItem"}`,
		`{"x":"` + long(60_000) + `","table":"products","pk":"KEY#1","op":"GetItem"}`,
		`{"table":"products","pk":"KEY#1","op":"GetItem","units":` + strings.Repeat("9", 400) + `}`,
		`{"table":"products","pk":"KEY#1","op":"GetItem","units":0.` + strings.Repeat("0", 400) + `1}`,
	} {
		lines = append(lines, []byte(s))
	}
	return lines
}

// parseResult is what one line got: its Event or its error, and the
// members outside the contract counted since the line before.
type parseResult struct {
	ev      traffic.Event
	err     string
	ignored string
}

func parseWith(p *Parser, line []byte) parseResult {
	var r parseResult
	if err := p.Parse(line, &r.ev); err != nil {
		r.err = Reason(err) + ": " + err.Error()
		r.ev = traffic.Event{}
	}
	p.Ignored(func(name string, lines uint64) { r.ignored += fmt.Sprintf("%s=%d ", name, lines) })
	return r
}

// TestCompactAsFull holds the fast path (scanCompact, buildCompact) to
// the full scanner and build: every line, read in three orders by a parser
// of each, gets the same Event (the same bits of the same time value) or
// the same error, and the same members counted; with the contract's names,
// with names renamed (one of them not plain, so never taken by the fast
// path), and with a clock before 2012 for the lines without a time.
func TestCompactAsFull(t *testing.T) {
	lines := compactCases(t)
	var gen bytes.Buffer
	if _, err := benchgen.Generate(&gen, 2000, 2); err != nil {
		t.Fatal(err)
	}
	logLines := bytes.Split(bytes.TrimSpace(gen.Bytes()), []byte("\n"))
	before2012 := func() time.Time { return time.Date(2011, 12, 31, 23, 59, 59, 0, time.UTC) }
	for _, c := range []struct {
		fields Fields
		now    func() time.Time
	}{
		{Fields{}, fixedNow},
		{Fields{Time: "time", Table: "t", PK: "tsx", SK: "p\"k", Op: "operation", Units: "\u00fcnits"}, fixedNow},
		{Fields{}, before2012}, // lines without a time get the clock's
	} {
		fields := c.fields
		fast := NewParser(fields, "jsonl", c.now)
		full := NewParser(fields, "jsonl", c.now)
		full.full = true
		counter := NewParser(fields, "jsonl", c.now) // counts the lines the fast path takes
		compact := 0
		var mixedOrder [][]byte
		for i := len(lines) - 1; i >= 0; i-- {
			mixedOrder = append(mixedOrder, lines[i], logLines[i%len(logLines)])
		}
		for _, order := range [][][]byte{lines, mixedOrder, logLines} {
			for _, line := range order {
				counter.vals, counter.line = [numFields]jsonscan.Span{}, counter.line[:0]
				if counter.scanCompact(line) {
					compact++
				}
				a, b := parseWith(fast, line), parseWith(full, line)
				if a != b {
					t.Fatalf("fields %+v, line %q:\nfast %+v\nfull %+v", fields, line, a, b)
				}
			}
		}
		if fields == (Fields{}) && compact < len(logLines) {
			t.Errorf("the fast path took %d lines, want at least the %d of the benchmark's shape", compact, len(logLines))
		}
	}
}

// FuzzCompactAsFull is TestCompactAsFull on any line: go test -fuzz
// FuzzCompactAsFull ./ingest/jsonl. Both parsers live across the inputs,
// so that what they remember of the lines before (names, operations,
// minutes, members outside the contract) is fuzzed too.
func FuzzCompactAsFull(f *testing.F) {
	for _, l := range compactCases(f) {
		f.Add(l)
	}
	fast := NewParser(Fields{}, "jsonl", fixedNow)
	full := NewParser(Fields{}, "jsonl", fixedNow)
	full.full = true
	f.Fuzz(func(t *testing.T, line []byte) {
		if a, b := parseWith(fast, line), parseWith(full, line); a != b {
			t.Fatalf("line %q:\nfast %+v\nfull %+v", line, a, b)
		}
	})
}

// TestPlainNumber holds plainNumber to strconv.ParseFloat on numbers at
// the edges of what it takes.
func TestPlainNumber(t *testing.T) {
	for _, s := range []string{"0", "1", "2", "0.5", "12.5", "0.1", "0.000000000000001", "99.99999999999999",
		"999999999999999", "1000000000000000", "9007199254740993", "109999.9999999999", "109999.99999999999",
		"0.30000000000000004", "123456.789012345", "1e2", "-1", "-0", "1.5e-3"} {
		want, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := plainNumber([]byte(s)); ok && math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("plainNumber(%s) = %v, ParseFloat says %v", s, got, want)
		}
	}
	for _, s := range []string{"1e2", "-1", "-0", "1000000000000000", "0.0000000000000001"} {
		if _, ok := plainNumber([]byte(s)); ok {
			t.Errorf("plainNumber(%s) took a number it cannot read exactly", s)
		}
	}
}

// FuzzPlainNumber: whatever plainNumber takes, it reads as ParseFloat
// does.
func FuzzPlainNumber(f *testing.F) {
	for _, s := range []string{"0", "12.5", "0.000000000000001", "999999999999999", "109999.9999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := plainNumber([]byte(s))
		if !ok {
			return
		}
		want, err := strconv.ParseFloat(s, 64)
		if err == nil && math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("plainNumber(%q) = %v, ParseFloat says %v", s, got, want)
		}
	})
}

// TestNameAndOpMemory: the names and operations the parser remembers are
// found as the map and traffic.LookupOperation find them, whatever shares
// a slot.
func TestNameAndOpMemory(t *testing.T) {
	p := NewParser(Fields{}, "jsonl", time.Now)
	names := []string{"products", "orders", "my table", "ab", "producta", "sroducts", "products", "x.y", "x-y", "x_y",
		"by-status", "by-statuz", strings.Repeat("T", 255), strings.Repeat("T", 256), "orders"}
	for range 3 {
		for _, n := range names {
			got, ok := p.validName([]byte(n))
			if got != n || ok != traffic.ValidName(n) {
				t.Errorf("validName(%q) = %q, %v", n, got, ok)
			}
		}
	}
	ops := []string{"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems", "read", "PutItem", "UpdateItem",
		"DeleteItem", "BatchWriteItem", "TransactWriteItems", "write", "GetIten", "Read", "WRITE", "", "Gxxxxxx", "ExecuteStatement"}
	for range 3 {
		for _, n := range ops {
			got, ok := p.lookupOp([]byte(n))
			want, wok := traffic.LookupOperation(n)
			if got != want || ok != wok {
				t.Errorf("lookupOp(%q) = %+v, %v; LookupOperation says %+v, %v", n, got, ok, want, wok)
			}
		}
	}
}

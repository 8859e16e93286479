package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

// filterKeys are the keys of the filter tests; the long one stands for a
// key the sketch holds shortened.
var filterKeys = []string{"USER#1", "k", "é😀", strings.Repeat("L", 20)}

func TestKeyFilter(t *testing.T) {
	long := strings.Repeat("L", 21)
	for _, tc := range []struct {
		name  string
		line  string
		maybe bool
	}{
		{"a key", `{"table":"t","pk":"USER#1","op":"read"}`, true},
		{"another key", `{"table":"t","pk":"USER#2","op":"read"}`, false},
		{"a prefix of a key", `{"table":"t","pk":"USER#","op":"read"}`, false},
		{"a key, spaced", "{ \"table\" : \"t\" , \"pk\" \t:\r\n \"k\" , \"op\" : \"read\" }", true},
		{"no key member", `{"table":"t","op":"Scan"}`, false},
		{"the key elsewhere", `{"table":"t","pk":"x","sk":"USER#1","op":"read"}`, false},
		{"the name as a value", `{"table":"pk","sk":"pk","pk":"USER#1","op":"read"}`, true},
		{"the name as a value, then another key", `{"table":"pk","sk":"pk","pk":"USER#3","op":"read"}`, false},
		{"the name nested, key at the top", `{"x":{"pk":"no"},"table":"t","pk":"k","op":"read"}`, true},
		{"the name nested holding a key", `{"x":{"pk":"k"},"table":"t","pk":"no","op":"read"}`, true},
		{"the key not a string", `{"table":"t","pk":1,"op":"read"}`, false},
		{"the key null", `{"table":"t","pk":null,"op":"Scan"}`, false},
		{"a backslash anywhere", `{"table":"t\"","pk":"no","op":"read"}`, true},
		{"an escaped key", `{"table":"t","pk":"\u006b","op":"read"}`, true},
		{"an escaped name", `{"table":"t","p\u006b":"k","op":"read"}`, true},
		{"a key of several bytes a rune", `{"table":"t","pk":"é😀","op":"read"}`, true},
		{"longer than every key", `{"table":"t","pk":"` + long + `","op":"read"}`, true},
		{"the key unclosed", `{"table":"t","pk":"k`, true},
		{"the key last, past a chunk", `{"table":"` + strings.Repeat("t", 90) + `","op":"read","pk":"k"}`, true},
		{"the name across a chunk's end", `{"table":"` + strings.Repeat("t", 52) + `","pk":"k"}`, true},
		{"long line without the key", `{"table":"` + strings.Repeat("t", 200) + `","op":"read","pk":"z"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewKeyFilter(Fields{}, filterKeys)
			if got := f.Maybe([]byte(tc.line)); got != tc.maybe {
				t.Errorf("Maybe(%s) = %v, want %v", tc.line, got, tc.maybe)
			}
		})
	}
}

func TestKeyFilterFields(t *testing.T) {
	line := []byte(`{"table":"t","key":"k","pk":"n","op":"read"}`)
	if !NewKeyFilter(Fields{PK: "key"}, []string{"k"}).Maybe(line) {
		t.Error(`the member "key" holds k, and the filter refused the line`)
	}
	if NewKeyFilter(Fields{}, []string{"k"}).Maybe(line) {
		t.Error(`the member "pk" holds no key, and the filter let the line through`)
	}
	// A name that JSON writes escaped lets everything through.
	if !NewKeyFilter(Fields{PK: `p"k`}, []string{"k"}).Maybe([]byte(`{"table":"t","op":"read"}`)) {
		t.Error("a name that is always escaped: the filter refused a line")
	}
	var none *KeyFilter
	if !none.Maybe(line) {
		t.Error("a nil filter refused a line")
	}
}

// TestKeyFilterRead reads the mixed test file with a filter: exactly the
// Events of the keys come out, as they come without one, and nothing is
// rejected or counted for the lines skipped.
func TestKeyFilterRead(t *testing.T) {
	data, err := os.ReadFile("testdata/mixed.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	all := &collect{}
	now := func() time.Time { return time.Unix(1795341600, 0) }
	if _, err := ReadAll(context.Background(), bytes.NewReader(data), "mixed", all, Options{Now: now}); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	var want []traffic.Event
	for i, e := range all.events {
		if e.PK != "" && i%3 == 0 {
			keys[e.PK] = true
		}
	}
	for _, e := range all.events {
		if keys[e.PK] {
			want = append(want, e)
		}
	}
	if len(keys) == 0 {
		t.Fatal("no keys in the test file")
	}
	list := make([]string, 0, len(keys))
	for k := range keys {
		list = append(list, k)
	}
	got := &collect{}
	c, err := ReadAll(context.Background(), bytes.NewReader(data), "mixed", got, Options{Now: now, Keys: NewKeyFilter(Fields{}, list)})
	if err != nil {
		t.Fatal(err)
	}
	var kept []traffic.Event
	for _, e := range got.events {
		if keys[e.PK] {
			kept = append(kept, e)
		}
	}
	if len(kept) != len(want) {
		t.Fatalf("%d Events of the keys, want %d", len(kept), len(want))
	}
	for i := range want {
		if kept[i] != want[i] {
			t.Errorf("Event %d: %+v, want %+v", i, kept[i], want[i])
		}
	}
	if c.Events != uint64(len(got.events)) {
		t.Errorf("Counts.Events %d, %d Events", c.Events, len(got.events))
	}
}

type collect struct{ events []traffic.Event }

func (c *collect) Put(_ context.Context, batch []traffic.Event) error {
	c.events = append(c.events, batch...)
	return nil
}

// FuzzKeyFilter holds the filter to its contract: a line that parses to an
// Event of one of the keys is never refused. The corpus is the parser's
// (testdata/fuzz/FuzzParseLine) and the test file's lines.
func FuzzKeyFilter(f *testing.F) {
	for _, s := range []string{
		`{"ts":"2026-11-22T10:00:00.123Z","table":"orders","index":"GSI1","pk":"USER#1","sk":"ORDER#2026-11-22#9","op":"GetItem","units":0.5}`,
		`{"table":"pk","pk" : "k","op":"write"}`,
		`{"table":"tbl","pk":"\u00e9\ud83d\ude00","op":"read"}`,
		`{"x":{"pk":"k"},"table":"t","pk":"USER#1","op":"read"}`,
		`{"table":"t","pk":"` + strings.Repeat("L", 20) + `","op":"read"}`,
	} {
		f.Add([]byte(s))
	}
	if data, err := os.ReadFile("testdata/mixed.jsonl"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			f.Add(bytes.Clone(sc.Bytes()))
		}
	}
	p := NewParser(Fields{}, "jsonl", func() time.Time { return time.Unix(1795341600, 0) })
	filter := NewKeyFilter(Fields{}, filterKeys)
	wanted := map[string]bool{}
	for _, k := range filterKeys {
		wanted[k] = true
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var ev traffic.Event
		if err := p.Parse(line, &ev); err != nil || !wanted[ev.PK] {
			return
		}
		if !filter.Maybe(line) {
			t.Fatalf("refused %q, whose key is %q", line, ev.PK)
		}
	})
}

func BenchmarkKeyFilter(b *testing.B) {
	line := []byte(`{"ts":"2026-11-22T10:02:39.761Z","table":"products","pk":"KEY#101718","sk":"ITEM#624","op":"GetItem","units":2}`)
	keys := make([]string, 500)
	for i := range keys {
		keys[i] = "KEY#" + strings.Repeat("9", i%7) + string(rune('a'+i%26))
	}
	f := NewKeyFilter(Fields{}, keys)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if f.Maybe(line) {
			b.Fatal("let through a line of no key")
		}
	}
}

package jsonl

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/traffic"
)

var update = flag.Bool("update", false, "rewrite testdata/contract.txt's outcomes")

// lineOutcome is what the parser makes of one line, as testdata/contract.txt
// and the README's examples write it: the Event with the members it
// ignored, or the rejection; keys too long are refused after parsing, as
// every reader's events are (traffic.CheckEvent).
func lineOutcome(p *Parser, line string) string {
	var ev traffic.Event
	if err := p.Parse([]byte(line), &ev); err != nil {
		return err.Error()
	}
	if bad := traffic.CheckEvent(&ev); bad != nil {
		return bad.Reason + ": " + bad.Detail
	}
	var b strings.Builder
	b.WriteString(ev.Table)
	if ev.Index != "" {
		b.WriteString("/" + ev.Index)
	}
	fmt.Fprintf(&b, ", %s", ev.Class)
	if ev.PK != "" {
		fmt.Fprintf(&b, ", pk %q", ev.PK)
	}
	if ev.SK != "" {
		fmt.Fprintf(&b, ", sk %q", ev.SK)
	}
	unit := "units"
	if ev.Units == 1 {
		unit = "unit"
	}
	fmt.Fprintf(&b, ", %g %s, ", ev.Units, unit)
	if ev.Time.Equal(readTime) {
		b.WriteString("read time")
	} else {
		b.WriteString(ev.Time.Format(time.RFC3339Nano))
	}
	if ev.Throttled {
		b.WriteString(", throttled")
		if ev.ThrottleReason.Known() {
			fmt.Fprintf(&b, " (%s)", ev.ThrottleReason)
		}
	}
	for i, o := range p.line {
		if i == 0 {
			b.WriteString("; ignored ")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", o.name)
	}
	return b.String()
}

// TestContractLines holds the parser to testdata/contract.txt, a table of
// lines and what each gets.
func TestContractLines(t *testing.T) {
	const path = "testdata/contract.txt"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := NewParser(Fields{}, "jsonl", fixedNow)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	cases := 0
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i+1 == len(lines) || !strings.HasPrefix(lines[i+1], "=>") {
			t.Fatalf("%s:%d: a line without its outcome (=> on the next line)", path, i+1)
		}
		cases++
		got := lineOutcome(p, line)
		i++
		if *update {
			lines[i] = "=> " + got
			continue
		}
		if want := strings.TrimPrefix(lines[i], "=> "); got != want {
			t.Errorf("%s:%d: %s\n got: %s\nwant: %s", path, i, line, got, want)
		}
	}
	if cases < 40 {
		t.Errorf("%d cases in %s", cases, path)
	}
	if *update {
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestContractFields holds the contract's table to the parser: a line
// without a required field gets the field's reason and one without an
// optional field is counted; each mistake the table names gets its reason.
func TestContractFields(t *testing.T) {
	base := map[string]string{"table": `"orders"`, "op": `"Query"`, "pk": `"a"`, "sk": `"b"`, "index": `"GSI1"`,
		"ts": `"2026-11-22T10:00:00Z"`, "units": `2`, "throttled": `true`, "throttle_reason": `"TableReadKeyRangeThroughputExceeded"`,
		"throttle_resource": `"arn:aws:dynamodb:us-east-1:111122223333:table/orders"`}
	line := func(skip, field, value string) string {
		var parts []string
		for _, f := range Contract() {
			switch f.Name {
			case skip:
			case field:
				parts = append(parts, fmt.Sprintf("%q:%s", f.Name, value))
			default:
				parts = append(parts, fmt.Sprintf("%q:%s", f.Name, base[f.Name]))
			}
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	p := NewParser(Fields{}, "jsonl", fixedNow)
	if got := lineOutcome(p, line("", "", "")); !strings.HasPrefix(got, "orders/GSI1, read") {
		t.Fatalf("the whole line: %s", got)
	}
	for _, f := range Contract() {
		got := lineOutcome(p, line(f.Name, "", ""))
		reason, _, _ := strings.Cut(got, ":")
		switch {
		case f.Required() && reason != f.Missing:
			t.Errorf("without %s: %s; the contract says %s", f.Name, got, f.Missing)
		case !f.Required() && !strings.HasPrefix(got, "orders"):
			t.Errorf("without %s (optional): %s", f.Name, got)
		}
		if len(f.Wrong) == 0 {
			t.Errorf("%s: no mistakes", f.Name)
		}
		for _, m := range f.Wrong {
			if m.Example == "" {
				continue // checked against the clock, after parsing
			}
			got := lineOutcome(p, line("", f.Name, m.Example))
			if reason, _, _ := strings.Cut(got, ":"); reason != m.Reason {
				t.Errorf("%s %s (%s): %s; the contract says %s", f.Name, m.Example, m.What, got, m.Reason)
			}
		}
	}
	// A Scan needs no key.
	if got := lineOutcome(p, `{"table":"orders","op":"Scan"}`); !strings.HasPrefix(got, "orders, read") {
		t.Errorf("Scan without pk: %s", got)
	}
}

// contractRow is a field's row in the README's table.
func contractRow(f Field) string {
	wrong := make([]string, len(f.Wrong))
	for i, m := range f.Wrong {
		wrong[i] = m.What + ": `" + m.Reason + "`"
	}
	missing := f.Missing
	if f.Required() {
		missing = "rejected as `" + f.Missing + "`"
	}
	return fmt.Sprintf("| `%s` | %s | %s | %s | %s |", f.Name, f.Need, f.Value, missing, strings.Join(wrong, "; "))
}

// TestREADMEContract holds the README's input section to the contract:
// its table of fields is the contract's, row for row (as analyze --help
// prints it, ContractText), and each of its example lines gets what it
// says.
func TestREADMEContract(t *testing.T) {
	input, err := os.ReadFile("../../docs/input.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(input), "# JSON-lines access logs\n")
	if !ok {
		t.Fatal("docs/input.md has no title # JSON-lines access logs")
	}
	var rows []string
	for _, l := range strings.Split(section, "\n") {
		if strings.HasPrefix(l, "| ") && strings.Count(l, "|") == 6 && !strings.HasPrefix(l, "| field |") {
			rows = append(rows, l)
		}
	}
	var want []string
	for _, f := range Contract() {
		want = append(want, contractRow(f))
	}
	want = append(want, "| any other member | | | | "+markdown(OtherMember)+" |",
		"| a member named like a field the line lacks | | | | "+markdown(NearMiss)+" |",
		"| a field given twice | | | | "+markdown(Twice)+" |")
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("README's table of fields differs from the contract's; want:\n%s\ngot:\n%s", strings.Join(want, "\n"), strings.Join(rows, "\n"))
	}

	// The examples: | `line` | `outcome` |.
	example := regexp.MustCompile("^\\| `(\\{.*\\})` \\| `(.*)` \\|$")
	p := NewParser(Fields{}, "jsonl", fixedNow)
	n := 0
	for _, l := range strings.Split(section, "\n") {
		m := example.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n++
		if got := lineOutcome(p, m[1]); got != m[2] {
			t.Errorf("README: %s\n gets %s\n says %s", m[1], got, m[2])
		}
	}
	if n < 8 {
		t.Errorf("%d example lines in the README's input section", n)
	}
}

// markdown quotes the metric and reason names of a rule as the README
// writes them.
func markdown(s string) string {
	return regexp.MustCompile(`\b(hotkeyd_[a-z_]+|misspelled_field|duplicate_field)\b`).ReplaceAllString(s, "`$1`")
}

func TestNearMiss(t *testing.T) {
	for _, c := range []struct {
		name, field string
		near        bool
	}{
		{"Units", "units", true}, {"UNITS", "units", true}, {"unit", "units", true}, {"unitss", "units", true},
		{"untis", "units", true}, {"uniq", "units", false}, {"unitsx2", "units", false},
		{"pkk", "pk", true}, {"ppk", "pk", true}, {"PK", "pk", true}, {"Pk", "pk", true},
		{"pkey", "pk", false}, {"kp", "pk", false}, {"p", "pk", false}, {"id", "pk", false},
		{"ip", "op", false}, {"ops", "op", false}, {"opp", "op", true}, {"Op", "op", true},
		{"ms", "ts", false}, {"TS", "ts", true}, {"tss", "ts", true}, {"tz", "ts", false},
		{"tabel", "table", true}, {"Table", "table", true}, {"tables", "table", true}, {"tableName", "table", false},
		{"idx", "index", false}, {"indx", "index", true}, {"indexx", "index", true},
		{"request_id", "pk", false}, {"", "pk", false},
	} {
		if got := nearMiss([]byte(c.name), []byte(c.field)); got != c.near {
			t.Errorf("nearMiss(%q, %q) = %v, want %v", c.name, c.field, got, c.near)
		}
	}
}

// TestIgnoredCounts: the members outside the contract are counted by name
// on the lines accepted, told once each until more come, and bounded in
// names (maxOthers).
func TestIgnoredCounts(t *testing.T) {
	p := NewParser(Fields{}, "jsonl", fixedNow)
	var ev traffic.Event
	parse := func(line string) {
		t.Helper()
		_ = p.Parse([]byte(line), &ev)
	}
	ignored := func() map[string]uint64 {
		got := map[string]uint64{}
		p.Ignored(func(name string, lines uint64) { got[name] += lines })
		return got
	}
	for range 3 {
		parse(`{"table":"orders","pk":"a","op":"PutItem","request_id":"x","latency":1}`)
	}
	parse(`{"table":"orders","op":"PutItem","request_id":"x"}`) // rejected: not counted
	parse(`{"table":"orders","pk":"a","op":"PutItem"}`)
	if got := ignored(); fmt.Sprint(got) != "map[latency:3 request_id:3]" {
		t.Errorf("ignored %v", got)
	}
	if got := ignored(); len(got) != 0 {
		t.Errorf("told again: %v", got)
	}
	parse(`{"table":"orders","pk":"a","op":"PutItem","latency":1}`)
	if got := ignored(); fmt.Sprint(got) != "map[latency:1]" {
		t.Errorf("ignored %v", got)
	}
	// Past maxOthers names, the rest count together, and a near miss
	// still rejects its line.
	for i := range maxOthers + 10 {
		parse(fmt.Sprintf(`{"table":"orders","pk":"a","op":"PutItem","m%d":1}`, i))
	}
	got := ignored()
	if len(got) != maxOthers-2+1 || got[OtherFields] != 12 { // request_id and latency are two of the names
		t.Errorf("%d names, %d lines of other names; want %d and 12", len(got), got[OtherFields], maxOthers-1)
	}
	if err := p.Parse([]byte(`{"table":"orders","pk":"a","op":"PutItem","Units":2}`), &ev); Reason(err) != traffic.ReasonMisspelledField {
		t.Errorf("a near miss past maxOthers names: %v", err)
	}
}

// TestRenamedFields: with fields renamed, the names the log uses are the
// fields, and near misses are of those names.
func TestRenamedFields(t *testing.T) {
	p := NewParser(Fields{PK: "user_id", Units: "cu"}, "jsonl", fixedNow)
	for line, want := range map[string]string{
		`{"table":"orders","user_id":"a","op":"PutItem","cu":2}`:         `orders, write, pk "a", 2 units, read time`,
		`{"table":"orders","user_id":"a","op":"PutItem","units":2}`:      `orders, write, pk "a", 1 unit, read time; ignored "units"`,
		`{"table":"orders","User_Id":"a","op":"PutItem"}`:                `misspelled_field: unknown field "User_Id" (did you mean "user_id"?)`,
		`{"table":"orders","pk":"a","op":"PutItem"}`:                     `missing_pk: no partition key; fields outside the contract: "pk"`,
		`{"table":"orders","user_id":"a","op":"PutItem","request_id":1}`: `orders, write, pk "a", 1 unit, read time; ignored "request_id"`,
	} {
		if got := lineOutcome(p, line); got != want {
			t.Errorf("%s\n got %s\nwant %s", line, got, want)
		}
	}
}

// TestIgnoredReported: the readers tell their Reporter the members they
// ignored, by name, whether they read a file (ReadAll, in batches) or an
// HTTP body.
func TestIgnoredReported(t *testing.T) {
	var body strings.Builder
	for i := range 1200 {
		fmt.Fprintf(&body, `{"table":"orders","pk":"k%d","op":"PutItem","request_id":"r%d"}`+"\n", i, i)
	}
	body.WriteString(`{"table":"orders","pk":"a","op":"PutItem","Units":2}` + "\n")
	rec := &recorder{}
	if _, err := ReadAll(context.Background(), strings.NewReader(body.String()), "log", &collector{}, Options{Reporter: rec, BatchSize: 500}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(rec.ignoredSeen()); got != "map[jsonl request_id:1200]" {
		t.Errorf("ReadAll: ignored %s", got)
	}
	if r := rec.reasons(); len(r) != 1 || r[0].reason != traffic.ReasonMisspelledField {
		t.Errorf("ReadAll: rejected %v", r)
	}

	rec = &recorder{}
	h := NewHandler(&collector{}, rec, HandlerConfig{Options: Options{Now: fixedNow}}, nil)
	req := httptest.NewRequest(http.MethodPost, "/api/v1/events", strings.NewReader(body.String()))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if got := fmt.Sprint(rec.ignoredSeen()); w.Code != http.StatusOK || got != "map[http request_id:1200]" {
		t.Errorf("HTTP: %d %s, ignored %s", w.Code, w.Body.String(), got)
	}
}

// TestContractText: analyze --help's contract fits 80 columns and names
// every field at the start of its paragraph, whatever its length.
func TestContractText(t *testing.T) {
	text := ContractText()
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if len(l) > 80 {
			t.Errorf("line of %d columns: %q", len(l), l)
		}
	}
	for _, f := range Contract() {
		if !strings.Contains(text, "\n  "+f.Name+" ") {
			t.Errorf("%s has no paragraph:\n%s", f.Name, text)
		}
	}
}

// TestReadingsCoverTheContract: every field of the contract has one
// reading, which says what a value of another kind gets.
func TestReadingsCoverTheContract(t *testing.T) {
	seen := map[int]int{}
	for _, r := range readings {
		seen[r.field]++
		if r.kinds == 0 || r.want == "" || r.wrong == "" || r.set == nil {
			t.Errorf("%s: reading incomplete", contract[r.field].Name)
		}
	}
	for f := range numFields {
		if seen[f] != 1 {
			t.Errorf("%s: %d readings, want 1", contract[f].Name, seen[f])
		}
	}
}

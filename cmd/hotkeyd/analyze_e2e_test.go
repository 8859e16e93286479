package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/ingest/input"
)

// workload is a generated JSON-lines file and the exact truth about it.
type workload struct {
	path     string
	events   uint64
	rejected uint64
	start    time.Time
	end      time.Time
	// units[table][class][key] are the exact units per key.
	units map[string]map[string]map[string]float64
	// distinct[table] is the exact number of distinct partition keys.
	distinct map[string]int
}

type genLine struct {
	table, index, pk, op string
	units                float64
}

// writeWorkload generates the analyze test input: a table with planted write
// and read hot keys of known shares (some clearly above the threshold, some
// clearly below, none between 9% and 11%), a long tail of cold keys, a GSI
// with a status-like key, a uniform table, and a few bad lines.
func writeWorkload(t testing.TB, dir string, scale int) *workload {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var lines []genLine
	add := func(table, index, op string, units float64, key string, n int) {
		for range n {
			lines = append(lines, genLine{table, index, key, op, units})
		}
	}
	// orders, writes: planted shares of events; units alternate 1 and 3 on
	// the planted keys, so shares by units differ from shares by events.
	writes := 30 * scale
	for i, share := range []float64{0.25, 0.15, 0.115, 0.085, 0.06, 0.04, 0.03, 0.025, 0.02, 0.015, 0.012} {
		n := int(share * float64(writes))
		for j := range n {
			lines = append(lines, genLine{"orders", "", fmt.Sprintf("USER#%d", i), "PutItem", float64(1 + 2*(j%2))})
		}
	}
	tail := 9 * scale
	for j := range tail {
		add("orders", "", "UpdateItem", 1, fmt.Sprintf("USER#t%d", j), 1)
	}
	// orders, reads: one read-hot item, a ranked set of warm keys, and a cold
	// tail shared with the writes.
	add("orders", "", "GetItem", 0.5, "USER#0", 8*scale)
	for i, n := range []float64{1, 0.8, 0.7, 0.6, 0.5, 0.4, 0.36, 0.3, 0.24, 0.2} {
		add("orders", "", "Query", 0.5, fmt.Sprintf("USER#r%d", i), int(n*float64(scale)))
	}
	for range 10 * scale {
		add("orders", "", "GetItem", 0.5, fmt.Sprintf("USER#t%d", rng.IntN(tail)), 1)
	}
	// orders' status GSI: a handful of keys.
	add("orders", "status-index", "Query", 1, "PENDING", 3*scale)
	add("orders", "status-index", "Query", 1, "SHIPPED", 2*scale)
	add("orders", "status-index", "Query", 1, "DELIVERED", scale)
	// users: uniform over many keys, nothing hot.
	for j := range 20 * scale {
		add("users", "", "GetItem", 1, fmt.Sprintf("U-%d", j%(5*scale)), 1)
	}
	rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })

	w := &workload{
		path:     filepath.Join(dir, "access.log"),
		start:    time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC),
		units:    map[string]map[string]map[string]float64{},
		distinct: map[string]int{},
	}
	f, err := os.Create(w.path)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	bad := []string{
		`{"ts":"2026-11-22T10:00:00Z","table":"orders","pk":"USER#0","op":"PutItem"`, // truncated
		`not json at all`,
		`{"ts":"2026-11-22T10:00:00Z","pk":"USER#0","op":"PutItem"}`,    // no table
		`{"ts":"2026-11-22T10:00:00Z","table":"orders","op":"PutItem"}`, // no pk
		`{"ts":"2026-11-22T10:00:00Z","table":"orders","pk":"USER#0","op":"PutItem","units":-1}`,
		`{"ts":"yesterday","table":"orders","pk":"USER#0","op":"PutItem"}`,
		`{"ts":"2026-11-22T10:00:00Z","table":"orders","pk":"USER#0","op":"Dance"}`,
	}
	span := 5 * time.Minute
	keys := map[string]map[string]bool{}
	for i, l := range lines {
		if i%(len(lines)/len(bad)+1) == 7 && w.rejected < uint64(len(bad)) {
			fmt.Fprintln(bw, bad[w.rejected])
			w.rejected++
		}
		ts := w.start.Add(time.Duration(int64(span) * int64(i) / int64(len(lines)-1)))
		w.end = ts
		idx := ""
		table := l.table
		if l.index != "" {
			idx = `,"index":"` + l.index + `"`
			table = l.table + "/" + l.index
		}
		fmt.Fprintf(bw, `{"ts":%q,"table":%q%s,"pk":%q,"op":%q,"units":%g}`+"\n",
			ts.Format(time.RFC3339Nano), l.table, idx, l.pk, l.op, l.units)
		class := "read"
		if l.op == "PutItem" || l.op == "UpdateItem" {
			class = "write"
		}
		if w.units[table] == nil {
			w.units[table] = map[string]map[string]float64{"read": {}, "write": {}}
			keys[table] = map[string]bool{}
		}
		w.units[table][class][l.pk] += l.units
		keys[table][l.pk] = true
		w.events++
	}
	for table, ks := range keys {
		w.distinct[table] = len(ks)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return w
}

// exactTop returns a class's keys ranked by exact units and the class's total.
func exactTop(units map[string]float64) ([]string, float64) {
	var total float64
	keys := make([]string, 0, len(units))
	for k, u := range units {
		keys = append(keys, k)
		total += u
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(units[b], units[a]), cmp.Compare(a, b)) })
	return keys, total
}

// runAnalyzeCmd runs hotkeyd in-process and returns its exit status, stdout
// and stderr.
func runAnalyzeCmd(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// analyzeScale sizes the exact-count workload: 2000 is about 165,000 lines,
// a few seconds under -race. Larger runs check the sketches at scale:
//
//	go test ./cmd/hotkeyd -run TestAnalyzeJSONMatchesExactCounts -hotkeyd.analyze-scale=10000
var analyzeScale = flag.Int("hotkeyd.analyze-scale", 2000, "size of the generated analyze workload (about 80 lines per unit of scale)")

func TestAnalyzeJSONMatchesExactCounts(t *testing.T) {
	w := writeWorkload(t, t.TempDir(), *analyzeScale)
	code, out, errOut := runAnalyzeCmd(t, "", "analyze", "--format", "json", w.path)
	if code != 0 {
		t.Fatalf("exit status %d, stderr:\n%s", code, errOut)
	}
	var rep report.Report
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("report is not the contract's JSON: %v\n%s", err, out)
	}

	if rep.Events != w.events {
		t.Errorf("events = %d, want %d", rep.Events, w.events)
	}
	if rep.Rejected != w.rejected {
		t.Errorf("rejected = %d, want %d", rep.Rejected, w.rejected)
	}
	if !rep.Start.Equal(w.start) || !rep.End.Equal(w.end) {
		t.Errorf("start, end = %s, %s; want %s, %s", rep.Start, rep.End, w.start, w.end)
	}
	if len(rep.Tables) != len(w.units) {
		t.Errorf("%d table entries, want %d (orders, orders/status-index, users)", len(rep.Tables), len(w.units))
	}
	for _, tr := range rep.Tables {
		name := tr.Table
		if tr.Index != "" {
			name += "/" + tr.Index
		}
		truth, ok := w.units[name]
		if !ok {
			t.Errorf("unexpected table entry %q", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			_, readTotal := exactTop(truth["read"])
			_, writeTotal := exactTop(truth["write"])
			if math.Abs(tr.ReadUnits-readTotal) > 1e-6*readTotal || math.Abs(tr.WriteUnits-writeTotal) > 1e-6*writeTotal {
				t.Errorf("read, write units = %g, %g; want %g, %g", tr.ReadUnits, tr.WriteUnits, readTotal, writeTotal)
			}
			if d, want := float64(tr.DistinctPartitionKeys), float64(w.distinct[name]); math.Abs(d-want) > 0.03*want {
				t.Errorf("distinct partition keys = %g, want %g ± 3%%", d, want)
			}
			hot := map[string]bool{}
			for _, f := range tr.Findings {
				if f.Kind == report.KindHotKey {
					hot[f.Class+" "+f.Key] = true
				}
			}
			for _, class := range []string{"read", "write"} {
				ranked, total := exactTop(truth[class])
				var got []report.TopKey
				for _, k := range tr.TopKeys {
					if k.Class == class {
						got = append(got, k)
					}
				}
				want := ranked[:min(10, len(ranked))]
				switch n := len(got); {
				case n > len(want):
					t.Errorf("%s: %d top keys, want %d", class, n, len(want))
				case n < len(want):
					// A class of more keys than the sketch counts
					// exactly lists the keys its exact counts prove
					// the heaviest, never part of a group of equal
					// units, and a note says so (docs/analyze.md):
					// users' 10 000 keys of 4 reads each list none.
					if n > 0 && truth[class][ranked[n-1]] == truth[class][ranked[n]] {
						t.Errorf("%s: %d top keys, want %d, or a cut between keys of unequal units", class, n, len(want))
					}
					note := fmt.Sprintf("%s: %d %s key", name, n, class)
					if !slices.ContainsFunc(rep.Notes, func(s string) bool { return strings.HasPrefix(s, note) }) {
						t.Errorf("%s: %d top keys, want %d, and no note %q...: %q", class, n, len(want), note, rep.Notes)
					}
				}
				if name == "users" && len(got) != 0 {
					t.Errorf("%s: %d top keys of users' keys of equal units, want none", class, len(got))
				}
				for i := range min(len(got), len(want)) {
					// Keys of equal units may come in either order.
					if got[i].Key != want[i] && truth[class][got[i].Key] != truth[class][want[i]] {
						t.Errorf("%s top %d = %s, want %s", class, i+1, got[i].Key, want[i])
					}
					if share := truth[class][got[i].Key] / total; math.Abs(got[i].Share-share) > 0.005 {
						t.Errorf("%s %s share = %.4f, want %.4f ± 0.005", class, got[i].Key, got[i].Share, share)
					}
				}
				for _, k := range ranked {
					share := truth[class][k] / total
					switch {
					case share >= 0.11 && !hot[class+" "+k]:
						t.Errorf("%s %s has %.1f%% of the units and is not flagged hot_key", class, k, 100*share)
					case share < 0.09 && hot[class+" "+k]:
						t.Errorf("%s %s has %.1f%% of the units and is flagged hot_key", class, k, 100*share)
					}
					if share < 0.09 {
						break // ranked: the rest are colder
					}
				}
			}
			if name == "users" && len(tr.Findings) != 0 {
				t.Errorf("uniform table has findings: %+v", tr.Findings)
			}
		})
	}
}

func TestAnalyzeUnreadableFileIsNamedOthersReported(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.log")
	line := `{"ts":"2026-11-22T10:00:00Z","table":"orders","pk":"USER#1","op":"PutItem"}` + "\n"
	if err := os.WriteFile(good, []byte(strings.Repeat(line, 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.log")
	unreadable := dir // a directory cannot be read as a file
	code, out, errOut := runAnalyzeCmd(t, line, "analyze", "--format", "json", missing, good, unreadable, "-")
	if code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	for _, name := range []string{missing, unreadable} {
		if !strings.Contains(errOut, "hotkeyd: "+name+": ") {
			t.Errorf("stderr does not name %s:\n%s", name, errOut)
		}
	}
	if strings.Contains(errOut, good) {
		t.Errorf("stderr names the good file:\n%s", errOut)
	}
	var rep report.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("no report on stdout: %v\n%s", err, out)
	}
	if rep.Events != 4 { // 3 from the file, 1 from stdin
		t.Errorf("events = %d, want 4 (the readable inputs)", rep.Events)
	}
}

// thousands writes n with a comma every three digits, as the text report
// prints counts.
func thousands(n uint64) string {
	if n < 1000 {
		return strconv.FormatUint(n, 10)
	}
	return thousands(n/1000) + fmt.Sprintf(",%03d", n%1000)
}

func TestAnalyzeTextReport(t *testing.T) {
	w := writeWorkload(t, t.TempDir(), 200)
	code, out, errOut := runAnalyzeCmd(t, "", "analyze", w.path)
	if code != 0 {
		t.Fatalf("exit status %d, stderr:\n%s", code, errOut)
	}
	for _, want := range []string{
		fmt.Sprintf("%s events (%d rejected)", thousands(w.events), w.rejected),
		"\norders: ",
		"\norders (index status-index): ",
		"\nusers: ",
		"CLASS  UNITS  SHARE  PEAK/S  KEY",
		"diagnoses:\n  1. hot_key [info] USER#0 (write)\n",
		"fix (write_sharding, 2 keys): ",
		"evidence:\n",
		"\n  - hot_key [info] USER#0 (write): ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
	// The skipped lines are explained on stderr, a bounded number of them.
	if n := strings.Count(errOut, "hotkeyd: skipped ("); n != input.MaxRejectLines {
		t.Errorf("%d skipped lines described on stderr, want %d:\n%s", n, input.MaxRejectLines, errOut)
	}
	if !strings.Contains(errOut, fmt.Sprintf("skipped %d records in all", w.rejected)) {
		t.Errorf("no summary of the %d skipped lines:\n%s", w.rejected, errOut)
	}
}

func TestAnalyzeCompressedAndCloudTrail(t *testing.T) {
	dir := t.TempDir()
	ct := filepath.Join("..", "..", "..", "shared", "data", "cloudtrail", "awsdocs-ddb-log-entries.json")
	if _, err := os.Stat(ct); err != nil {
		t.Skipf("sample data not present: %v", err)
	}
	raw, err := os.ReadFile(ct)
	if err != nil {
		t.Fatal(err)
	}
	gz := filepath.Join(dir, "trail.json.gz")
	writeGzip(t, gz, raw)
	code, out, errOut := runAnalyzeCmd(t, "", "analyze", "--format", "json", gz)
	if code != 0 {
		t.Fatalf("exit status %d, stderr:\n%s", code, errOut)
	}
	var rep report.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Events == 0 || len(rep.Tables) == 0 || rep.Tables[0].Table != "Music" {
		t.Errorf("CloudTrail sample gave %d events in %+v, want the Music table's calls", rep.Events, rep.Tables)
	}
	// The report says that CloudTrail units are items, not capacity units,
	// and that the sample's failed calls were left out of the traffic.
	if len(rep.Notes) < 2 || !strings.Contains(rep.Notes[0], "1 per item") || !strings.Contains(rep.Notes[1], "otherwise failed calls") {
		t.Errorf("notes = %q, want the units-per-item note and the failed-calls note", rep.Notes)
	}

	// JSON lines alone need no note.
	jl := filepath.Join(dir, "access.jsonl")
	if err := os.WriteFile(jl, []byte(`{"table":"tbl","pk":"a","op":"GetItem"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runAnalyzeCmd(t, "", "analyze", "--format", "json", jl)
	if code != 0 || strings.Contains(out, `"notes"`) {
		t.Errorf("JSON lines: exit %d, report %s, stderr %s; want no notes", code, out, errOut)
	}
}

// TestAnalyzeCloudTrailSchemaAcrossFiles checks that one analysis shares its
// CloudTrail decoder: a schema learnt from a CreateTable event in the first
// file keys the second file's calls, and a table without a schema is named
// once on stderr and in the report's notes.
func TestAnalyzeCloudTrailSchemaAcrossFiles(t *testing.T) {
	dir := t.TempDir()
	create := `{"Records":[{"eventSource":"dynamodb.amazonaws.com","eventName":"CreateTable","eventTime":"2026-11-22T10:00:00Z","requestParameters":{"tableName":"Music","keySchema":[{"attributeName":"Artist","keyType":"HASH"},{"attributeName":"SongTitle","keyType":"RANGE"}]}}]}`
	calls := `{"Records":[` +
		`{"eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","eventTime":"2026-11-22T10:00:01Z","requestParameters":{"tableName":"Music","key":{"SongTitle":"Call Me Today","Artist":"No One You Know"}}},` +
		`{"eventSource":"dynamodb.amazonaws.com","eventName":"GetItem","eventTime":"2026-11-22T10:00:02Z","requestParameters":{"tableName":"Other","key":{"a":"1","b":"2"}}}]}`
	f1, f2 := filepath.Join(dir, "1.json"), filepath.Join(dir, "2.json")
	for p, c := range map[string]string{f1: create, f2: calls} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runAnalyzeCmd(t, "", "analyze", "--format", "json", f1, f2)
	if code != 0 {
		t.Fatalf("exit status %d, stderr:\n%s", code, errOut)
	}
	var rep report.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, tr := range rep.Tables {
		for _, k := range tr.TopKeys {
			keys[tr.Table] = k.Key
		}
	}
	if keys["Music"] != "No One You Know" {
		t.Errorf("Music's key = %q, want the partition key learnt from the first file's CreateTable", keys["Music"])
	}
	if !strings.Contains(errOut, "no key schema") || strings.Count(errOut, "no key schema") != 1 {
		t.Errorf("stderr should name the table without a schema once:\n%s", errOut)
	}
	if !strings.Contains(strings.Join(rep.Notes, " "), "no key schema for Other") {
		t.Errorf("notes = %q, want a hint to give Other a key schema", rep.Notes)
	}
}

func writeGzip(t testing.TB, path string, data []byte) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

package analyze

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/internal/app/config"
)

// The report must be the same, byte for byte, on one worker and on
// several (docs/analyze.md): whatever the input's shape, order, rates or
// junk, in every format, with the incidents and without. The inputs are
// made by a seeded generator (workload), each shape at several seeds, and
// read from testdata/workers and the shared samples; files are cut into
// parts of at least workerPart bytes, so that every input of more than a
// few lines is read in several parts, cut at different lines on 2, 3 and
// 4 workers.

// workerPart is the smallest part the tests cut a file into.
const workerPart = 4 << 10

// workload writes one shape's input files.
type workload struct {
	rng   *rand.Rand
	start time.Time
	b     *strings.Builder
}

// line writes one JSON line at sec seconds (and a fraction) from the
// start; index, sk and extra (more members, with a leading comma) may
// be empty.
func (w *workload) line(sec float64, table, index, pk, sk, op string, units float64, extra string) {
	at := w.start.Add(time.Duration(sec * float64(time.Second)))
	fmt.Fprintf(w.b, `{"ts":%q,"table":%q`, at.Format(time.RFC3339Nano), table)
	if index != "" {
		fmt.Fprintf(w.b, `,"index":%q`, index)
	}
	fmt.Fprintf(w.b, `,"pk":%q`, pk)
	if sk != "" {
		fmt.Fprintf(w.b, `,"sk":%q`, sk)
	}
	fmt.Fprintf(w.b, `,"op":%q,"units":%g%s}`+"\n", op, units, extra)
}

// when returns a random second within span seconds.
func (w *workload) when(span int) float64 { return w.rng.Float64() * float64(span) }

// shuffle shuffles the lines written so far.
func (w *workload) shuffle() {
	lines := strings.SplitAfter(w.b.String(), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	w.rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	w.b.Reset()
	w.b.WriteString(strings.Join(lines, ""))
}

// ties writes a hot key per class and many more keys than the sketch
// counts exactly (sketch.DefaultCandidates) tied at a few units, with
// groups tied at the boundaries of --top 10 and 100 (the light keys fill
// the end of a list of 100), in reads and writes, shuffled.
func (w *workload) ties() {
	op := [2]string{"GetItem", "PutItem"}
	for c := range 2 {
		for range 300 {
			w.line(w.when(600), "orders", "", fmt.Sprint("HOT#", c), "", op[c], 1, "")
		}
		for g, group := range []struct{ keys, events int }{{3, 60}, {12, 40}, {50, 20}, {1500 + w.rng.IntN(1500), 1 + w.rng.IntN(4)}} {
			n := group.events
			for k := range group.keys {
				for range n {
					w.line(w.when(600), "orders", "", fmt.Sprintf("G%d#%05d", g, k), "", op[c], 1, "")
				}
			}
		}
	}
	w.shuffle()
}

// tables writes more tables and indexes than analyze counts
// (sketch.DefaultMaxTables), many tied at the same events at the
// boundary of the busiest counted, shuffled.
func (w *workload) tables() {
	for t := range 340 {
		n := 3
		if t < 250 {
			n = 6
		}
		index := ""
		if t%7 == 0 {
			index = "by-status"
		}
		for i := range n {
			w.line(w.when(120), fmt.Sprintf("t%03d", t), index, fmt.Sprint("k", i%2), "", "PutItem", 1, "")
		}
	}
	w.shuffle()
}

// mixed writes reads and writes, sort keys, indexes, throttled calls
// (more throttled keys than the store counts exactly in one class),
// half units, lines out of time order, duplicate lines, and keys that
// differ only in case or in their unicode form.
func (w *workload) mixed() {
	keys := []string{"user", "User", "USER", "caf\u00e9", "cafe\u0301", "a\u200bb", "ab", "\u202eevil", "k\u00fc", "K\u00dc"}
	for i := range 4000 {
		sec := w.when(900)
		k := keys[w.rng.IntN(len(keys))]
		switch w.rng.IntN(6) {
		case 0:
			w.line(sec, "orders", "", k, fmt.Sprint("ORDER#", w.rng.IntN(300)), "Query", 0.5, "")
		case 1:
			w.line(sec, "orders", "status-index", fmt.Sprint("S", w.rng.IntN(5)), "", "Query", 2, "")
		case 2:
			w.line(sec, "orders", "", fmt.Sprint("T#", w.rng.IntN(1500)), "", "PutItem", 1, `,"throttle_reason":"TableWriteKeyRangeThroughputExceeded"`)
		case 3:
			w.line(sec, "users", "", fmt.Sprint("U", w.rng.IntN(700)), "", "UpdateItem", float64(1+w.rng.IntN(3)), `,"throttled":`+fmt.Sprint(w.rng.IntN(9) == 0))
		default:
			w.line(sec, "orders", "", k, fmt.Sprint("ITEM#", i%40), "PutItem", 1, "")
		}
		if w.rng.IntN(20) == 0 { // a duplicate
			w.line(sec, "orders", "", k, "", "PutItem", 1, "")
		}
	}
	w.shuffle()
}

// junk writes good lines with rejected ones between them: bad JSON,
// missing and wrong fields, near misses of field names, fields given
// twice, members outside the contract, a time of year 9999, blank lines.
func (w *workload) junk() {
	bad := []string{
		`{"ts":"2026-11-20T09:00:01Z","table":"orders","pk":"a"`,
		`{"table":"orders","op":"PutItem"}`,
		`{"table":"orders","pk":"a","op":"Frobnicate"}`,
		`{"table":"orders","pk":"a","op":"PutItem","units":-1}`,
		`{"table":"orders","pk":"a","op":"PutItem","Units":2}`,
		`{"table":"orders","pk":"a","pk":"b","op":"PutItem"}`,
		`{"table":"a b","pk":"a","op":"PutItem"}`,
		`{"ts":"yesterday","table":"orders","pk":"a","op":"PutItem"}`,
		`not json at all`,
		``,
	}
	for i := range 3000 {
		if w.rng.IntN(8) == 0 {
			w.b.WriteString(bad[w.rng.IntN(len(bad))] + "\n")
		}
		w.line(w.when(300), "orders", "", fmt.Sprint("K", w.rng.IntN(600)), "", "PutItem", 1, fmt.Sprintf(`,"request_id":"r%d"`, i))
	}
	w.line(0, "orders", "", "K1", "", "PutItem", 1, `,"ts2":1`)
	// A handful of events years before the rest: outliers, left out.
	w.b.WriteString(`{"ts":"2014-03-01T00:00:00Z","table":"orders","pk":"OLD","op":"PutItem"}` + "\n")
	w.b.WriteString(`{"ts":"2014-03-01T00:00:01Z","table":"orders","pk":"OLD","op":"PutItem"}` + "\r\n")
	fmt.Fprintf(w.b, `{"ts":"9999-01-01T00:00:00Z","table":"orders","pk":"FAR","op":"PutItem"}`+"\n")
}

// days writes three days of a growing key among many light ones, for the
// forecasts, shuffled.
func (w *workload) days() {
	for h := range 72 {
		for range 20 + h {
			w.line(float64(h*3600)+w.when(3600), "orders", "", "TENANT#grow", "", "PutItem", 1, "")
		}
		for range 30 {
			w.line(float64(h*3600)+w.when(3600), "orders", "", fmt.Sprint("L", w.rng.IntN(2000)), "", "PutItem", 1, "")
		}
	}
	w.shuffle()
}

// throttled writes more throttled keys than the store counts exactly
// (analyzeThrottledKeys) in both classes, with and without reasons, some
// keyed in their key range and some for the table's capacity, beside
// traffic, and keys that read as times, shuffled.
func (w *workload) throttled() {
	reasons := []string{"", `,"throttle_reason":"TableWriteKeyRangeThroughputExceeded"`, `,"throttle_reason":"TableWriteProvisionedThroughputExceeded"`}
	for i := range 9000 {
		sec := w.when(300)
		switch w.rng.IntN(4) {
		case 0:
			w.line(sec, "orders", "", fmt.Sprint("T#", w.rng.IntN(1400)), "", "PutItem", 1, reasons[w.rng.IntN(3)]+`,"throttled":true`)
		case 1:
			w.line(sec, "orders", "", fmt.Sprint("R#", w.rng.IntN(1200)), "", "GetItem", 0.5, `,"throttled":true`)
		case 2:
			// A key that reads as a time, one a second: time_ordered_key.
			at := w.start.Add(time.Duration(sec) * time.Second).Format(time.RFC3339)
			w.line(sec, "events", "", at, "", "PutItem", 1, "")
		default:
			w.line(sec, "orders", "", fmt.Sprint("K#", i%300), "", "PutItem", 2, "")
		}
	}
	w.shuffle()
}

// oddUnits writes units that binary floating point does not hold
// exactly (0.1, 1.7, 1234.567), which add up differently in another
// order, in reads and writes of a few keys and many, shuffled.
func (w *workload) oddUnits() {
	for i := range 6000 {
		units := float64(w.rng.IntN(100000)) / 1000
		if i%3 == 0 {
			units = []float64{0.1, 0.2, 0.3, 1.7, 2.9}[w.rng.IntN(5)]
		}
		op := []string{"GetItem", "PutItem", "Query", "UpdateItem"}[w.rng.IntN(4)]
		w.line(w.when(180), "ledger", "", fmt.Sprint("ACCT#", w.rng.IntN(50+i%2*900)), "", op, units, "")
	}
	w.shuffle()
}

// longKeys writes keys longer than the sketch holds whole
// (sketch.MaxKeyBytes), many of them tied and alike but for their end.
func (w *workload) longKeys() {
	long := strings.Repeat("tenant-", 60)
	for k := range 900 {
		for range 1 + k%3 {
			w.line(w.when(200), "orders", "", fmt.Sprint(long, k), "", "PutItem", 1, "")
		}
	}
	w.shuffle()
}

// workerCase is one input: files (named in dir) and what stdin holds.
type workerCase struct {
	name  string
	top   int
	files []string
	stdin string
}

// generated returns the cases the workload writes, at seed.
func generated(t *testing.T, dir string, seed uint64) []workerCase {
	t.Helper()
	shapes := []struct {
		name string
		top  []int
		gen  func(*workload)
	}{
		{"ties", []int{1, 10, 100}, (*workload).ties},
		{"tables", []int{10}, (*workload).tables},
		{"mixed", []int{10}, (*workload).mixed},
		{"junk", []int{10}, (*workload).junk},
		{"days", []int{10}, (*workload).days},
		{"long keys", []int{10}, (*workload).longKeys},
		{"odd units", []int{10}, (*workload).oddUnits},
		{"throttled", []int{10}, (*workload).throttled},
	}
	var cases []workerCase
	for _, sh := range shapes {
		w := &workload{rng: rand.New(rand.NewPCG(seed, 41)), start: time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC), b: &strings.Builder{}}
		sh.gen(w)
		path := filepath.Join(dir, fmt.Sprintf("%s-%d.jsonl", strings.ReplaceAll(sh.name, " ", "-"), seed))
		if err := os.WriteFile(path, []byte(w.b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, top := range sh.top {
			cases = append(cases, workerCase{name: fmt.Sprintf("%s seed %d top %d", sh.name, seed, top), top: top, files: []string{path}})
		}
	}
	return cases
}

// fixedCases returns the cases of testdata/workers, the commands' test
// inputs and the shared samples of CloudTrail and stream records, and
// inputs made of the generated ones: several files, standard input, and a
// file cut short of its last newline.
func fixedCases(t *testing.T, dir string, gen []workerCase) []workerCase {
	t.Helper()
	fixed, err := filepath.Glob(filepath.Join("testdata", "workers", "*"))
	if err != nil {
		t.Fatal(err)
	}
	fixed = append(fixed, filepath.Join("..", "..", "..", "cmd", "hotkeyd", "testdata", "access.jsonl"))
	shared := filepath.Join("..", "..", "..", "..", "shared", "data")
	for _, name := range []string{"cloudtrail/awsdocs-ddb-log-entries.json", "cloudtrail/ibm-universal-connectors-dynamodb-s3sqs-sample.json",
		"streams/aws-lambda-go-dynamodb-event.json", "streams/powertools-ts-kinesis-dynamodb-stream.json", "streams/aws-sam-cli-DynamoDBUpdate.json"} {
		path := filepath.Join(shared, name)
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("shared sample %s: %v (the tests need ../shared/data beside the repository)", name, err)
		}
		fixed = append(fixed, path)
	}
	var cases []workerCase
	for _, f := range fixed {
		cases = append(cases, workerCase{name: filepath.Base(f), top: 10, files: []string{f}})
	}
	malformed := filepath.Join(shared, "streams", "aws-lambda-go-dynamodb-event-malformed.2.json")
	var all []string
	for _, c := range gen {
		if c.top == 10 {
			all = append(all, c.files...)
		}
	}
	data, err := os.ReadFile(gen[0].files[0])
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "no-trailing-newline.jsonl")
	if err := os.WriteFile(cut, bytes.TrimSuffix(data, []byte("\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Compressed files are read whole, one a worker.
	var gz []string
	for i, f := range all[:3] {
		gz = append(gz, gzipTo(t, f, filepath.Join(dir, fmt.Sprintf("part%d.jsonl.gz", i))))
	}
	return append(cases,
		workerCase{name: "compressed files", top: 10, files: gz},
		// Inputs read in order (stream records, CloudTrail) between
		// files read in parts, with rejections in both.
		workerCase{name: "formats mixed", top: 10, files: []string{malformed, all[3], fixed[len(fixed)-5], all[0], fixed[len(fixed)-3]}},
		workerCase{name: "a missing file among others", top: 10, files: []string{all[0], filepath.Join(dir, "missing.jsonl"), gz[1], all[2]}},
		workerCase{name: "every generated file", top: 10, files: all},
		workerCase{name: "stdin and a file", top: 10, files: []string{"-", all[1]}, stdin: string(data)},
		workerCase{name: "no trailing newline", top: 10, files: []string{cut}},
		workerCase{name: "empty file and another", top: 10, files: []string{empty, all[0]}},
		workerCase{name: "one line", top: 10, files: []string{filepath.Join("testdata", "workers", "one-line.jsonl")}},
	)
}

// gzipTo writes the gzip of file from to to and returns to.
func gzipTo(t *testing.T, from, to string) string {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return to
}

// analyzeAs runs an analysis of c on workers workers and returns what it
// wrote to stdout and stderr, and its error.
func analyzeAs(c workerCase, workers int, format string, noIncidents bool) (string, string, error) {
	cfg := config.Default()
	cfg.Detector.Top = c.top
	var out, errOut bytes.Buffer
	err := Run(context.Background(), Config{
		Files: c.files, Pipeline: cfg.Pipeline(), Format: format, Workers: workers, MinPart: workerPart, NoIncidents: noIncidents,
		Stdin: strings.NewReader(c.stdin), Stdout: &out, Stderr: &errOut,
	})
	return out.String(), errOut.String(), err
}

// TestReportSameOnEveryWorkerCount: every case's report, in every format,
// with the incidents and without, is on 2, 3 and 4 workers the one of one
// worker, byte for byte, and so are its error and what analyze says on
// stderr: the rejected lines it describes (the first of the input), its
// counts.
func TestReportSameOnEveryWorkerCount(t *testing.T) {
	dir := t.TempDir()
	seeds := []uint64{1, 2}
	formats := []string{"json", "text", "html"}
	workerCounts := []int{2, 3, 4}
	if testing.Short() {
		seeds = seeds[:1]
	}
	if raceEnabled {
		// Under the race detector, which slows analyze about tenfold (the
		// whole test took most of ten minutes), one seed, the JSON report
		// and three workers against one: the workers' sharing is what the
		// detector is for. make test runs the whole test without it.
		seeds, formats, workerCounts = seeds[:1], formats[:1], []int{3}
	}
	var cases []workerCase
	for _, seed := range seeds {
		cases = append(cases, generated(t, dir, seed)...)
	}
	cases = append(cases, fixedCases(t, dir, cases)...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, format := range formats {
				for _, noIncidents := range []bool{false, true} {
					want, wantErr, wantRun := analyzeAs(c, 1, format, noIncidents)
					for _, workers := range workerCounts {
						got, gotErr, gotRun := analyzeAs(c, workers, format, noIncidents)
						what := fmt.Sprintf("%s, no incidents %v, %d workers against 1", format, noIncidents, workers)
						if got != want {
							t.Errorf("%s: report differs:\n%s", what, firstLineDiff(got, want))
						}
						if gotErr != wantErr {
							t.Errorf("%s: stderr differs:\n%s", what, firstLineDiff(gotErr, wantErr))
						}
						if fmt.Sprint(gotRun) != fmt.Sprint(wantRun) {
							t.Errorf("%s: error %v, want %v", what, gotRun, wantRun)
						}
					}
				}
			}
		})
	}
}

// TestReportSameInAnyOrder: every generated input's JSON and text
// reports, with the incidents, are those of its lines in the reverse
// order, on one worker and on three (docs/analyze.md: the report is the
// same whatever the order of the input's lines; the HTML report's charts
// are recorded in input order, and so are not).
func TestReportSameInAnyOrder(t *testing.T) {
	dir := t.TempDir()
	for _, c := range generated(t, dir, 3) {
		data, err := os.ReadFile(c.files[0])
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitAfter(string(data), "\n")
		lines = lines[:len(lines)-1] // after the last newline
		slices.Reverse(lines)
		reversed := c
		reversed.files = []string{filepath.Join(dir, "reversed-"+filepath.Base(c.files[0]))}
		if err := os.WriteFile(reversed.files[0], []byte(strings.Join(lines, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Run(c.name, func(t *testing.T) {
			for _, format := range []string{"json", "text"} {
				want, _, _ := analyzeAs(c, 1, format, false)
				for _, workers := range []int{1, 3} {
					if got, _, _ := analyzeAs(reversed, workers, format, false); got != want {
						t.Errorf("%s, lines reversed, %d workers: report differs:\n%s", format, workers, firstLineDiff(got, want))
					}
				}
			}
		})
	}
}

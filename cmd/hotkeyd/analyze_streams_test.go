package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

var updateStreams = flag.Bool("update-streams", false, "rewrite testdata/streams/*.golden.json")

// streamSamples is the folder of third-party DynamoDB stream records shared
// by the project (read-only test inputs, never copied into the tree).
var streamSamples = filepath.Join("..", "..", "..", "shared", "data", "streams")

// analyzeOutcome is what a golden file holds of one analyze run: the exit
// status, the line saying why nothing was usable, and per table the keys
// with their units.
type analyzeOutcome struct {
	Exit     int                 `json:"exit"`
	Verdict  string              `json:"verdict,omitempty"`
	Events   uint64              `json:"events"`
	Rejected uint64              `json:"rejected"`
	Tables   map[string][]string `json:"tables,omitempty"`
	Notes    []string            `json:"notes,omitempty"`
}

func analyzeOutcomeOf(t *testing.T, args ...string) analyzeOutcome {
	t.Helper()
	code, out, errOut := runAnalyzeCmd(t, "", append([]string{"analyze", "--format", "json"}, args...)...)
	var rep report.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("no JSON report: %v\n%s\n%s", err, out, errOut)
	}
	o := analyzeOutcome{Exit: code, Events: rep.Events, Rejected: rep.Rejected, Notes: rep.Notes}
	for _, line := range strings.Split(errOut, "\n") {
		if _, why, ok := strings.Cut(line, "hotkeyd: nothing usable in "); ok {
			_, o.Verdict, _ = strings.Cut(why, ": ")
		}
	}
	for _, tr := range rep.Tables {
		if o.Tables == nil {
			o.Tables = map[string][]string{}
		}
		for _, k := range tr.TopKeys {
			o.Tables[tr.Table] = append(o.Tables[tr.Table], fmt.Sprintf("%s %s %g", k.Class, k.Key, k.Units))
		}
	}
	return o
}

// TestAnalyzeStreamSamples runs analyze over every file of the shared
// stream samples (Lambda events from DynamoDB Streams and from Kinesis, a
// truncated one, a Kinesis payload array, and a Markdown page about TTL),
// as they are, with --table and with a key schema, and compares the tables, keys, exit status
// and notes with testdata/streams/NAME.golden.json.
func TestAnalyzeStreamSamples(t *testing.T) {
	files, err := os.ReadDir(streamSamples)
	if err != nil {
		t.Skipf("stream samples not available: %v", err)
	}
	if len(files) == 0 {
		t.Fatal("no stream samples")
	}
	for _, f := range files {
		t.Run(f.Name(), func(t *testing.T) {
			path := filepath.Join(streamSamples, f.Name())
			got := map[string]analyzeOutcome{
				"as is":         analyzeOutcomeOf(t, path),
				"--table other": analyzeOutcomeOf(t, "--table", "other", path),
				// The composite-key sample, with its schema.
				"--key-schema Example-Table=key,val": analyzeOutcomeOf(t, "--key-schema", "Example-Table=key,val", path),
			}
			b, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, '\n')
			golden := filepath.Join("testdata", "streams", f.Name()+".golden.json")
			if *updateStreams {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, b, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update-streams to write it)", err)
			}
			if !bytes.Equal(b, want) {
				t.Errorf("analyze %s:\n%s\nwant (%s):\n%s", f.Name(), b, golden, want)
			}
		})
	}
}

// TestAnalyzeNothingUsable checks the exit status: 1 with one line saying
// what the input held when nothing in it was usable, 0 with a note when
// what it held was left out on purpose.
func TestAnalyzeNothingUsable(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	binary := make([]byte, 3000)
	for i := range binary {
		binary[i] = byte(i*7 + i/13)
	}
	for _, tc := range []struct {
		name, content string
		exit          int
		verdict       string
	}{
		{"empty.json", "", 1, "the input is empty"},
		{"blank.log", "\n\n  \n", 1, "the input is empty"},
		{"binary.dat", string(binary), 1, "not in a format hotkeyd reads (JSON lines, CloudTrail, DynamoDB stream records); skipped: bad_json"},
		{"rejected.jsonl", `{"table":"orders","op":"PutItem"}` + "\n" + `{"pk":"k","op":"GetItem"}` + "\n", 1, "every one of its 2 records was rejected; skipped: missing_pk 1, missing_table 1"},
		{"no-table.json", `{"Records":[{"eventID":"1","eventName":"INSERT","dynamodb":{"Keys":{"id":{"S":"a"}},"SizeBytes":10}}]}`, 1,
			"every one of its 1 record was rejected; skipped: missing_table 1"},
		{"truncated.json", `{"Records":[{"eventID":"1","eventName":"INSERT","eventSource":"aws:dynamodb","dynamodb":{"Keys":{"id":{"S":"a"`, 1,
			"every one of its 1 record was rejected; skipped: bad_file 1"},
		// Records of a recognised format left out on purpose: a note, not an error.
		{"management.json", `{"Records":[{"eventVersion":"1.08","eventSource":"dynamodb.amazonaws.com","eventName":"DescribeTable","eventTime":"2026-11-22T10:00:00Z","requestParameters":{"tableName":"t"}}]}`, 0, ""},
		{"ttl-only.json", `{"Records":[{"eventID":"1","eventName":"REMOVE","eventSource":"aws:dynamodb","userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"},"eventSourceARN":"arn:aws:dynamodb:us-east-1:1:table/t/stream/x","dynamodb":{"Keys":{"id":{"S":"a"}},"SizeBytes":10}}]}`, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := analyzeOutcomeOf(t, write(tc.name, tc.content))
			if o.Exit != tc.exit || !strings.HasPrefix(o.Verdict, tc.verdict) || (tc.verdict == "") != (o.Verdict == "") {
				t.Errorf("exit %d, verdict %q; want exit %d, verdict %q", o.Exit, o.Verdict, tc.exit, tc.verdict)
			}
		})
	}
}

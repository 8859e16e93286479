package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/ingest/parallel"
)

// writeBusyLog writes a JSON-lines log of about size bytes from start on:
// a thousand lines a second and five thousand in the one second whose
// lines hold the file's middle byte, where a file cut in two parts is cut,
// so that the busiest second is counted half by each part. Two tables
// and an index, with more keys than the sketches count exactly, so that
// the report's keys come through the count-min sketch too. It returns the
// burst second.
func writeBusyLog(t *testing.T, path string, start time.Time, size int64) time.Time {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	rng := rand.New(rand.NewPCG(3, 4))
	const lineBytes = 110 // about
	seconds := int(size / lineBytes / 1000)
	burst := seconds/2 - 1 // its 5000 lines centre the file's middle line
	for sec := range seconds {
		n := 1000
		if sec == burst {
			n = 5000
		}
		for i := range n {
			ts := start.Add(time.Duration(sec)*time.Second + time.Duration(i)*time.Second/time.Duration(n))
			key := fmt.Sprintf("USER#%d", int(rng.ExpFloat64()*300))
			if sec == burst && i%3 == 0 {
				key = "USER#burst"
			}
			table, extra, op := "orders", "", "PutItem"
			switch i % 5 {
			case 0:
				table, op = "users", "GetItem"
			case 1:
				extra, op = `,"index":"status-index"`, "Query"
			}
			// Fixed-width times keep the lines of equal length.
			if _, err := fmt.Fprintf(bw, `{"ts":%q,"table":%q%s,"pk":%q,"op":%q,"units":%d}`+"\n", ts.Format("2006-01-02T15:04:05.000000Z07:00"), table, extra, key, op, 1+i%3); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return start.Add(time.Duration(burst) * time.Second)
}

// TestAnalyzeOnEveryCore checks that analyze gives on four workers the
// report it gives on one, busiest seconds of keys included: of a log cut into parts (more than one part's
// worth of bytes, its seconds and its keys' seconds cut between parts), a
// file before it, a compressed CloudTrail file after it and stdin.
func TestAnalyzeOnEveryCore(t *testing.T) {
	dir := t.TempDir()
	w := writeWorkload(t, dir, 100)
	// A log of more than one part, on four workers: cut in two at its
	// middle byte, inside its busiest second.
	busy := filepath.Join(dir, "busy.log")
	burst := writeBusyLog(t, busy, w.end.Add(time.Second), parallel.DefaultMinPart+parallel.DefaultMinPart/4)
	data, err := os.ReadFile(busy)
	if err != nil {
		t.Fatal(err)
	}
	mid := len(data) / 2
	second := burst.Format("2006-01-02T15:04:05.")
	if around := data[mid-200 : mid+200]; strings.Count(string(around), second) < 3 {
		t.Fatalf("the middle of the log is not in its busiest second %s: %s", second, around)
	}
	names := []string{w.path, busy}
	if raw, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "data", "cloudtrail", "awsdocs-ddb-log-entries.json")); err == nil {
		gz := filepath.Join(dir, "trail.json.gz")
		writeGzip(t, gz, raw)
		names = append(names, gz)
	}
	names = append(names, "-")
	stdin := `{"ts":"2026-11-22T11:00:00Z","table":"orders","pk":"USER#stdin","op":"PutItem"}` + "\n"

	report := func(procs int) string {
		t.Helper()
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		code, out, errOut := runAnalyzeCmd(t, stdin, append([]string{"analyze", "--format", "json", "--top", "20"}, names...)...)
		if code != 0 {
			t.Fatalf("GOMAXPROCS=%d: exit status %d, stderr:\n%s", procs, code, errOut)
		}
		return out
	}
	one, four := report(1), report(4)
	var a, b any
	if err := json.Unmarshal([]byte(one), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(four), &b); err != nil {
		t.Fatal(err)
	}
	if diffs := sameReport("", a, b); len(diffs) > 0 {
		t.Fatalf("the report on 4 workers differs from the one on 1:\n%s", strings.Join(diffs, "\n"))
	}
	if !strings.Contains(one, `"USER#burst"`) || !strings.Contains(one, `"end": "2026-11-22T11:00:00Z"`) {
		t.Errorf("report lacks the busy log's burst key or stdin's event:\n%s", one)
	}
}

// sameReport lists where report b differs from report a: every figure
// must be equal, keys' busiest seconds too.
func sameReport(path string, a, b any) []string {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return []string{fmt.Sprintf("%s: %v against %v", path, b, a)}
		}
		var diffs []string
		for k, av := range x {
			bv, ok := y[k]
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s.%s: missing", path, k))
				continue
			}
			diffs = append(diffs, sameReport(path+"."+k, av, bv)...)
		}
		return diffs
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return []string{fmt.Sprintf("%s: %d elements against %d", path, len(y), len(x))}
		}
		var diffs []string
		for i := range x {
			diffs = append(diffs, sameReport(fmt.Sprintf("%s[%d]", path, i), x[i], y[i])...)
		}
		return diffs
	}
	if a != b {
		return []string{fmt.Sprintf("%s: %v, want %v", path, b, a)}
	}
	return nil
}

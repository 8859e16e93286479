package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
)

// TestAnalyzeIncidents runs hotkeyd analyze on an hour of shuffled JSON
// lines in which one key of orders is hot from 10:20 to 10:27 and one key
// range of sessions is throttled from 10:40 to 10:43: the JSON report
// lists each as an incident of its table entry, with its start, end,
// severity, peak and key, and the text report names them.
func TestAnalyzeIncidents(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	rng := rand.New(rand.NewPCG(38, 38))
	var lines []string
	add := func(ts time.Time, table, pk, op, extra string) {
		lines = append(lines, fmt.Sprintf(`{"ts":%q,"table":%q,"pk":%q,"op":%q%s}`, ts.Format(time.RFC3339Nano), table, pk, op, extra))
	}
	for s := range 3600 {
		sec := t0.Add(time.Duration(s) * time.Second)
		for i := range 6 {
			ts := sec.Add(time.Duration(i) * time.Second / 6)
			add(ts, "orders", fmt.Sprintf("USER#%d", rng.IntN(1_000_000)), "PutItem", "")
			add(ts, "sessions", fmt.Sprintf("SESSION#%d", rng.IntN(1_000_000)), "UpdateItem", "")
		}
		if !sec.Before(at(20)) && sec.Before(at(27)) {
			for i := range 3 {
				add(sec.Add(time.Duration(i)*time.Second/3), "orders", "ORDER#hot", "PutItem", `,"units":2`)
			}
		}
		if !sec.Before(at(40)) && sec.Before(at(43)) {
			add(sec, "sessions", "SESSION#big", "UpdateItem", "")
			for i := range 8 {
				add(sec.Add(time.Duration(i)*time.Second/8), "sessions", "SESSION#big", "UpdateItem", `,"throttle_reason":"TableWriteKeyRangeThroughputExceeded"`)
			}
		}
	}
	rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	path := filepath.Join(t.TempDir(), "day.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runAnalyzeCmd(t, "", "analyze", "--format", "json", path)
	if code != 0 {
		t.Fatalf("exit status %d, stderr:\n%s", code, errOut)
	}
	var rep report.Report
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("report is not the contract's JSON: %v", err)
	}
	want := map[string]struct {
		cause, severity, key string
		from, to             time.Time
		peak                 float64
	}{
		"orders":   {"hot_key", "info", "ORDER#hot", at(20), at(27), 6},
		"sessions": {"partition_limit", "critical", "SESSION#big", at(40), at(43), 1},
	}
	for _, tr := range rep.Tables {
		w, ok := want[tr.Table]
		if !ok || tr.Index != "" {
			t.Errorf("table entry %s/%s in the report", tr.Table, tr.Index)
			continue
		}
		if len(tr.Incidents) != 1 {
			t.Errorf("%s: %d incidents, want 1: %+v", tr.Table, len(tr.Incidents), tr.Incidents)
			continue
		}
		inc := tr.Incidents[0]
		if inc.Cause != w.cause || inc.Severity != w.severity || inc.Class != "write" || len(inc.Keys) != 1 || inc.Keys[0] != w.key || inc.Peak != w.peak {
			t.Errorf("%s: %s %s %s %q peak %v, want %s %s write [%s] peak %v", tr.Table, inc.Cause, inc.Severity, inc.Class, inc.Keys, inc.Peak, w.cause, w.severity, w.key, w.peak)
		}
		if d := inc.Start.Sub(w.from); d < 0 || d > 20*time.Second {
			t.Errorf("%s: starts at %v, want within 20 s after %v", tr.Table, inc.Start, w.from)
		}
		if inc.End == nil {
			t.Errorf("%s: open, want ended", tr.Table)
		} else if d := inc.End.Sub(w.to); d < 0 || d > 75*time.Second {
			t.Errorf("%s: ends at %v, want within 75 s after %v", tr.Table, inc.End, w.to)
		}
	}

	code, out, errOut = runAnalyzeCmd(t, "", "analyze", path)
	if code != 0 {
		t.Fatalf("exit status %d, stderr:\n%s", code, errOut)
	}
	_, list, ok := strings.Cut(out, "  incidents (the diagnoses the live detector would have raised, in event time):\n")
	if !ok {
		t.Fatalf("text report lists no incidents:\n%s", out)
	}
	for _, want := range []string{"info hot_key write 6 WCU ORDER#hot", "critical partition_limit write 1 WCU SESSION#big"} {
		found := false
		for _, line := range strings.Split(list, "\n") {
			found = found || strings.HasSuffix(strings.Join(strings.Fields(line), " "), want)
		}
		if !found {
			t.Errorf("text report lists no incident ending %q:\n%s", want, out)
		}
	}
}

package review

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/history"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// record writes 40 minutes of table orders: USER#1 takes 60% of the writes
// in three bursts of five minutes, each flagged as a hot key.
func record(t *testing.T, dir string) {
	t.Helper()
	now := t0
	s, err := history.Open(context.Background(), history.Options{Dir: dir, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 * 60 {
		at := t0.Add(time.Duration(i) * time.Second)
		now = at.Add(time.Second)
		hot := (i/60)%15 < 5
		keys := []report.KeySecond{{Key: "USER#1", Units: 100}, {Key: "USER#2", Units: 100}}
		var flags []report.Flag
		if hot {
			keys[0].Units = 300
			flags = []report.Flag{{Table: "orders", Diagnosis: report.Diagnosis{Cause: report.KindHotKey, Class: "write", Keys: []string{"USER#1"},
				Severity: report.SeverityWarning, PeakUnitsPerSecond: 300, Summary: "USER#1 is hot", Fix: report.Recommendation{Kind: "write_sharding", Text: "shard USER#1"}}}}
		}
		ts := sketch.TableSnapshot{Table: "orders", Start: at.Add(-59 * time.Second), End: now, LastSecond: at}
		ts.Classes[traffic.Write] = sketch.ClassStats{Events: 100, Units: 500}
		sec := report.TableSecond{Table: "orders", At: at, Classes: []report.ClassSecond{{Class: "read"}, {Class: "write", Units: 500, Keys: keys}}}
		s.Record(history.Evaluation{Snapshot: sketch.Snapshot{Tables: []sketch.TableSnapshot{ts}}, Seconds: []report.TableSecond{sec}, Flags: flags})
	}
	if err := s.Close(); err != nil { // no writer ran: Close writes what is open
		t.Fatal(err)
	}
}

// TestReview: the review lists the key by its peak share, its incidents,
// and the hot key as persisted (raised three times).
func TestReview(t *testing.T) {
	dir := t.TempDir()
	record(t, dir)
	var out bytes.Buffer
	cfg := Config{Dir: dir, Since: time.Hour, Now: t0.Add(50 * time.Minute), Format: "json", Out: &out}
	if err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	var rv Review
	if err := json.Unmarshal(out.Bytes(), &rv); err != nil {
		t.Fatal(err)
	}
	if len(rv.Tables) != 1 {
		t.Fatalf("tables %+v", rv.Tables)
	}
	tr := rv.Tables[0]
	if k := tr.Keys[0]; k.Key != "USER#1" || k.PeakShare != 0.6 || k.BusiestSecond != 300 {
		t.Errorf("top key %+v", k)
	}
	if len(tr.Incidents) != 3 || len(tr.Persisted) != 1 || tr.Persisted[0].Times != 3 {
		t.Errorf("incidents %d, persisted %+v", len(tr.Incidents), tr.Persisted)
	}
	out.Reset()
	cfg.Format = "text"
	if err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"orders\n", "USER#1", "peak share  60.0%", "incidents: 3", "hot_key write USER#1: raised 3 times"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out.String())
		}
	}
}

package export

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/detect/forecast"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// privacySnapshot is a window on which the detector finds every kind of
// finding that names keys, all on keys that hold personal data.
func privacySnapshot() sketch.Snapshot {
	end := t0.Add(100 * time.Second)
	tbl := func(name string, distinct uint64, c traffic.Class, units float64, top ...sketch.KeyStat) sketch.TableSnapshot {
		ts := sketch.TableSnapshot{Table: name, Start: t0, End: end, Events: uint64(units), DistinctKeys: distinct}
		ts.Classes[c] = sketch.ClassStats{Events: uint64(units), Units: units, Top: top}
		return ts
	}
	users := tbl("users", 5000, traffic.Write, 10000,
		sketch.KeyStat{Key: "USER#alice@example.com", Units: 6000, Events: 6000, SortKeys: 1},
		sketch.KeyStat{Key: "USER#bob@example.com", Units: 300, Events: 300},
		sketch.KeyStat{Key: "USER#carol@example.com", Units: 200, Events: 200})
	users.Shards = []sketch.ShardStat{{Shard: "shardId-000001", Records: 8000}, {Shard: "shardId-000002", Records: 1000}, {Shard: "shardId-000003", Records: 1000}}
	users.Classes[traffic.Write].Throttled = sketch.ThrottleStats{Events: 40, Causes: [traffic.NumThrottleCauses]uint64{40},
		Keys: []sketch.KeyCount{{Key: "USER#alice@example.com", Count: 40, Max: 40}}}
	users.ThrottledEvents = 40
	logs := tbl("logs", 40, traffic.Write, 10000,
		sketch.KeyStat{Key: "2026-11-22#dave-laptop", Units: 9000, Events: 9000},
		sketch.KeyStat{Key: "2026-11-21#erin-laptop", Units: 500, Events: 500})
	tickets := tbl("tickets", 3, traffic.Read, 10000,
		sketch.KeyStat{Key: "OPEN", Units: 5000, Events: 5000},
		sketch.KeyStat{Key: "CLOSED", Units: 4500, Events: 4500},
		sketch.KeyStat{Key: "PENDING", Units: 500, Events: 500})
	// A table short of capacity: a third of every key's writes refused, a
	// tenant's among them.
	ledger := tbl("ledger", 5000, traffic.Write, 10000,
		sketch.KeyStat{Key: "TENANT#frank@example.com", Units: 1200, Events: 1200},
		sketch.KeyStat{Key: "USER#grace@example.com", Units: 4, Events: 4})
	ledger.Classes[traffic.Write].Throttled = sketch.ThrottleStats{Events: 5000, Causes: [traffic.NumThrottleCauses]uint64{5000},
		Keys: []sketch.KeyCount{{Key: "TENANT#frank@example.com", Count: 600, Max: 640}}, Error: 40}
	ledger.ThrottledEvents = 5000
	return sketch.Snapshot{Start: t0, End: end, Tables: []sketch.TableSnapshot{ledger, logs, tickets, users}}
}

// growingSeries gives every key three days of busiest seconds growing
// from 100 to 400 units a second up to end: a forecast for each.
func growingSeries(end time.Time) detect.KeySeries {
	return func(string, string, traffic.Class, string) []forecast.Point {
		var pts []forecast.Point
		for h := 72; h > 0; h-- {
			pts = append(pts, forecast.Point{Time: end.Add(-time.Duration(h) * time.Hour), Units: 400 - 300*float64(h)/72})
		}
		return pts
	}
}

// TestMaskedReportLeaksNoKey runs the real detector and checks that no key,
// nor a recognisable part of one, survives masking anywhere in the report.
func TestMaskedReportLeaksNoKey(t *testing.T) {
	snap, s := privacySnapshot(), detect.DefaultSettings()
	rep := detect.Foresee(snap, detect.Evaluate(snap, s), growingSeries(snap.End), s)
	kinds := map[report.Kind]bool{}
	scaled := false
	for _, tr := range rep.Tables {
		scaled = scaled || len(tr.Scale) > 0
		for _, f := range tr.Findings {
			kinds[f.Kind] = true
		}
		if len(tr.Diagnoses) == 0 || tr.Quiet == nil && tr.Table != "users" && tr.Table != "ledger" {
			t.Fatalf("%s: no diagnosis or quiet to mask; the test needs them", tr.Table)
		}
	}
	if !scaled {
		t.Fatal("no key in the scale view; the test needs one")
	}
	for _, k := range []report.Kind{"hot_key", "hot_partition", "time_ordered_key", "low_cardinality", "capacity", "forecast"} {
		if !kinds[k] {
			js, _ := json.MarshalIndent(rep, "", " ")
			t.Fatalf("the detector found no %s; the test needs one:\n%s", k, js)
		}
	}
	plainJSON, _ := json.Marshal(rep)
	secrets := []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "OPEN", "CLOSED", "PENDING"}
	for _, s := range secrets {
		if !strings.Contains(string(plainJSON), s) {
			t.Fatalf("the unmasked report does not mention %q, so the test proves nothing", s)
		}
	}
	for _, mode := range []KeyMode{KeysHash, KeysRedact} {
		m := mustMasker(t, mode, "k")
		masked := m.MaskReport(rep)
		js, _ := json.Marshal(masked)
		for _, s := range secrets {
			if strings.Contains(string(js), s) {
				t.Errorf("%s mode: the report still contains %q:\n%s", mode, s, js)
			}
		}
		// One diagnosis at a time, as the log lines mask them.
		for _, tr := range rep.Tables {
			for _, d := range tr.Diagnoses {
				js, _ := json.Marshal(m.MaskDiagnosis(d))
				for _, s := range secrets {
					if strings.Contains(string(js), s) {
						t.Errorf("%s mode: MaskDiagnosis left %q in %s", mode, s, js)
					}
				}
			}
		}
		if again, _ := json.Marshal(rep); string(again) != string(plainJSON) {
			t.Fatal("masking modified the detector's report")
		}
	}

	// The shard id of a hot partition is not a key and stays readable, and
	// a sharding example keeps its shape around the masked key.
	m := mustMasker(t, KeysHash, "k")
	for _, tr := range m.MaskReport(rep).Tables {
		for _, d := range tr.Diagnoses {
			for _, e := range d.Explains {
				if e.Kind == "hot_partition" && e.Key != "shardId-000001" {
					t.Errorf("explained hot_partition key = %q, want the shard id", e.Key)
				}
			}
		}
		for _, f := range tr.Findings {
			if f.Kind == "hot_partition" && f.Key != "shardId-000001" {
				t.Errorf("hot_partition key = %q, want the shard id", f.Key)
			}
			if f.Kind == "hot_key" && tr.Table == "users" {
				alice := m.Mask("USER#alice@example.com")
				if f.Key != alice || !strings.HasPrefix(f.Recommendation.Example, alice+"#0 .. "+alice+"#") {
					t.Errorf("hot_key = %q, example %q; want both on %q", f.Key, f.Recommendation.Example, alice)
				}
			}
		}
	}
}

func TestReplaceKeysWholeWords(t *testing.T) {
	pairs := mustMasker(t, KeysRedact, "").replacements([]string{"1", "A#1", `say "hi"`})
	got := replaceKeys(`key 1 has 10% of 1 table at 1.5 or 0.1 units; A#1 and A#10 and "say \"hi\"" and 1#0 .. 1#3; ends with 1.`, pairs)
	want := `key <redacted> has 10% of <redacted> table at 1.5 or 0.1 units; A#<redacted> and A#10 and "<redacted>" and <redacted>#0 .. <redacted>#3; ends with <redacted>.`
	if got != want {
		t.Errorf("replaceKeys:\n got %s\nwant %s", got, want)
	}
}

package detect

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// snapshotOf builds a one-table snapshot over a window of seconds from
// per-key write units.
func snapshotOf(seconds int, writes map[string]float64) sketch.Snapshot {
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	end := start.Add(time.Duration(seconds) * time.Second)
	ts := sketch.TableSnapshot{Table: "orders", Start: start, End: end, DistinctKeys: uint64(len(writes))}
	cs := &ts.Classes[traffic.Write]
	for k, u := range writes {
		cs.Units += u
		cs.Events += uint64(u)
		cs.Top = append(cs.Top, sketch.KeyStat{Key: k, Units: u, Events: uint64(u)})
	}
	ts.Events = cs.Events
	return sketch.Snapshot{Start: start, End: end, Tables: []sketch.TableSnapshot{ts}}
}

func TestEvaluateHotKeyWriteSharding(t *testing.T) {
	writes := map[string]float64{"USER#1": 460}
	for i := range 40 {
		writes["USER#"+string(rune('A'+i))] = 38.5
	}
	r := Evaluate(snapshotOf(300, writes), DefaultSettings())
	if len(r.Tables) != 1 {
		t.Fatalf("tables = %d, want 1", len(r.Tables))
	}
	fs := r.Tables[0].Findings
	if len(fs) != 1 {
		t.Fatalf("findings = %+v, want one", fs)
	}
	f := fs[0]
	// 1.53 WCU/s is far below half a partition's 1000 WCU/s: info.
	if f.Kind != report.KindHotKey || f.Key != "USER#1" || f.Class != "write" || f.Severity != report.SeverityInfo {
		t.Errorf("finding = %+v", f)
	}
	if want := 460.0 / 2000; f.Share != want {
		t.Errorf("share = %v, want %v", f.Share, want)
	}
	if want := 460.0 / 300; f.UnitsPerSecond != want {
		t.Errorf("units/s = %v, want %v", f.UnitsPerSecond, want)
	}
	rec := f.Recommendation
	if rec == nil || rec.Kind != report.AdviceWriteSharding || rec.SuffixCount != 2 || rec.Example != "USER#1#0 .. USER#1#1" {
		t.Errorf("recommendation = %+v", rec)
	}
	ds := r.Tables[0].Diagnoses
	if len(ds) != 1 || ds[0].Cause != report.KindHotKey || ds[0].Severity != report.SeverityInfo || ds[0].Fix != *rec ||
		!reflect.DeepEqual(ds[0].Explains, []report.Explained{{Kind: report.KindHotKey, Key: "USER#1", Class: "write"}}) {
		t.Errorf("diagnoses = %+v", ds)
	}
	if q := r.Tables[0].Quiet; q == nil || q.Reason != report.QuietInfoOnly || q.Key != "USER#1" {
		t.Errorf("quiet = %+v, want info_only on USER#1", q)
	}
}

func TestEvaluateSuffixCountFromRate(t *testing.T) {
	// 900 WCU/s over 60 s; limit 1000 × headroom 0.5 = 500 per shard → 2;
	// at 1600 WCU/s → 4.
	for _, tc := range []struct {
		units float64
		want  int
	}{{900 * 60, 2}, {1600 * 60, 4}, {2600 * 60, 6}} {
		writes := map[string]float64{"HOT": tc.units}
		for i := range 20 {
			writes["K"+string(rune('a'+i))] = tc.units / 20
		}
		r := Evaluate(snapshotOf(60, writes), DefaultSettings())
		var got int
		for _, f := range r.Tables[0].Findings {
			if f.Kind == report.KindHotKey && f.Key == "HOT" {
				got = f.Recommendation.SuffixCount
				if f.Severity != report.SeverityCritical {
					t.Errorf("units %v: severity %q, want critical", tc.units, f.Severity)
				}
			}
		}
		if got != tc.want {
			t.Errorf("units %v: suffix count %d, want %d", tc.units, got, tc.want)
		}
	}
}

func TestSettingsValidate(t *testing.T) {
	if err := DefaultSettings().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, tc := range []struct {
		mod  func(*Settings)
		want string
	}{
		{func(s *Settings) { s.Threshold = 0 }, "threshold: must be above 0 and below 1, got 0"},
		{func(s *Settings) { s.Threshold = 1.5 }, "threshold: must be above 0 and below 1, got 1.5"},
		{func(s *Settings) { s.Threshold = 1 }, "threshold: must be above 0 and below 1, got 1"},
		{func(s *Settings) { s.ClearThreshold = 0.2 }, "clear_threshold: 0.2 is above threshold 0.1"},
		{func(s *Settings) { s.Hold = -time.Second }, "hold: -1s must not be negative"},
		{func(s *Settings) { s.WriteLimit = -1 }, "write_limit: -1 must be positive"},
		{func(s *Settings) { s.Headroom = 0 }, "headroom: 0 is outside (0, 1]"},
		{func(s *Settings) { s.MinUnitsPerSecond = -2 }, "min_units_per_second: -2 must not be negative"},
		{func(s *Settings) { s.Top = -1 }, "top: must be 0 to 384 (the keys a table counts exactly per class), got -1"},
		{func(s *Settings) { s.Top = 385 }, "top: must be 0 to 384 (the keys a table counts exactly per class), got 385"},
		{func(s *Settings) { s.ClearThreshold = -0.1 }, "clear_threshold: -0.1 is outside [0, 1]"},
		{func(s *Settings) { s.HandfulKeys = 1 }, "handful_keys: 1 must be at least 2"},
		{func(s *Settings) { s.ClearLimitFraction = 0.9 }, "clear_limit_fraction: 0.9 is above limit_fraction 0.8"},
		{func(s *Settings) { s.WarnFraction = 0 }, "warn_fraction: 0 is outside (0, 1]"},
		{func(s *Settings) { s.WarnFraction = 0.9 }, "warn_fraction: 0.9 is above limit_fraction 0.8"},
		{func(s *Settings) { s.ClearWarnFraction = 0.6 }, "clear_warn_fraction: 0.6 is above warn_fraction 0.5"},
	} {
		s := DefaultSettings()
		tc.mod(&s)
		err := s.Validate()
		if err == nil || err.Error() != tc.want {
			t.Errorf("Validate() = %v, want %q", err, tc.want)
		}
	}
}

// TestClearThreshold: a zero clear_threshold follows the threshold
// (ClearShare of it); one given is kept.
func TestClearThreshold(t *testing.T) {
	s := DefaultSettings()
	if got := s.clearThreshold(); math.Abs(got-0.08) > 1e-12 {
		t.Errorf("default clear threshold %v, want 0.08", got)
	}
	s.Threshold = 0.2
	if got := s.clearThreshold(); math.Abs(got-0.16) > 1e-12 {
		t.Errorf("clear threshold %v at threshold 0.2, want 0.16", got)
	}
	s.ClearThreshold = 0.1
	if got := s.clearThreshold(); got != 0.1 {
		t.Errorf("clear threshold %v, want the 0.1 given", got)
	}
}

// TestEvaluatePure checks that Evaluate neither modifies its snapshot (it
// is shared with the exporter) nor depends on anything but its input.
func TestEvaluatePure(t *testing.T) {
	writes := map[string]float64{"EVENTS#2026-11-22": 900, "EVENTS#2026-11-21": 50}
	for i := range 30 {
		writes[fmt.Sprintf("K%d", i)] = float64(10 + i)
	}
	snap := snapshotOf(60, writes) // Top in map order: not ranked
	snap.Tables[0].Shards = []sketch.ShardStat{{Shard: "b", Records: 10}, {Shard: "a", Records: 900}, {Shard: "c", Records: 10}}
	before := fmt.Sprintf("%+v", snap)
	first := Evaluate(snap, DefaultSettings())
	if after := fmt.Sprintf("%+v", snap); after != before {
		t.Errorf("Evaluate modified its snapshot")
	}
	second := Evaluate(snap, DefaultSettings())
	if !reflect.DeepEqual(first, second) {
		t.Errorf("two evaluations of one snapshot differ")
	}
	kinds := map[report.Kind]bool{}
	for _, f := range first.Tables[0].Findings {
		kinds[f.Kind] = true
	}
	for _, k := range []report.Kind{report.KindHotKey, report.KindTimeOrderedKey, report.KindHotPartition} {
		if !kinds[k] {
			t.Errorf("no %s finding in %+v", k, first.Tables[0].Findings)
		}
	}
}

// TestEvaluateEmptyMarshalsArrays checks that a report with nothing in it
// still has arrays, not nulls, where tools iterate.
func TestEvaluateEmptyMarshalsArrays(t *testing.T) {
	r := Evaluate(snapshotOf(60, map[string]float64{}), DefaultSettings())
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Tables []struct {
			Classes   []any `json:"classes"`
			TopKeys   []any `json:"top_keys"`
			Diagnoses []any `json:"diagnoses"`
			Findings  []any `json:"findings"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Tables) != 1 || m.Tables[0].TopKeys == nil || m.Tables[0].Findings == nil || m.Tables[0].Diagnoses == nil || len(m.Tables[0].Classes) != 2 {
		t.Errorf("empty table marshals as %s", b)
	}
}

package demo

import (
	"context"
	"slices"
	"testing"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// TestDetectorFindsPlanted runs half a minute of the workload through the
// sketches and the detector, as hotkeyd demo does, and checks every Plant:
// its findings are there, and the quiet tables have none.
func TestDetectorFindsPlanted(t *testing.T) {
	store, err := sketch.NewStore(sketch.Config{Window: 0, SubWindows: 1, Tracked: 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	evs := window()
	for len(evs) > 0 {
		n := min(len(evs), 512)
		if err := store.Put(context.Background(), slices.Clone(evs[:n])); err != nil {
			t.Fatal(err)
		}
		evs = evs[n:]
	}
	snap := store.Snapshot()
	rep := detect.Evaluate(snap, detect.DefaultSettings())

	find := func(table, index string) *report.TableReport {
		for i := range rep.Tables {
			if rep.Tables[i].Table == table && rep.Tables[i].Index == index {
				return &rep.Tables[i]
			}
		}
		return nil
	}
	sortKeysKnown := func(table, key string) bool {
		for _, ts := range snap.Tables {
			if ts.Table != table || ts.Index != "" {
				continue
			}
			for _, cs := range ts.Classes {
				for _, k := range cs.Top {
					if k.Key == key && k.SortKeys > 0 {
						return true
					}
				}
			}
		}
		return false
	}
	for _, p := range Planted() {
		tr := find(p.Table, p.Index)
		if tr == nil {
			t.Errorf("%s %s: not in the report", p.Table, p.Index)
			continue
		}
		if len(p.Findings) == 0 {
			for _, f := range tr.Findings {
				t.Errorf("%s %s must be quiet, got %s on %q (%s)", p.Table, p.Index, f.Kind, f.Key, f.Class)
			}
			continue
		}
		for _, kind := range p.Findings {
			i := slices.IndexFunc(tr.Findings, func(f report.Finding) bool {
				return string(f.Kind) == kind && f.Class == p.Class.String() && (p.Key == "" || f.Key == p.Key)
			})
			if i < 0 {
				t.Errorf("%s: no %s finding for %q %s; findings: %v", p.Table, kind, p.Key, p.Class, kinds(tr.Findings))
				continue
			}
			f := tr.Findings[i]
			// Advice that depends on sort keys needs a store that counts them.
			if p.Key != "" && (p.Recommendation == "calculated_suffix" || p.Recommendation == "cache") && !sortKeysKnown(p.Table, p.Key) {
				continue
			}
			if f.Recommendation == nil || string(f.Recommendation.Kind) != p.Recommendation {
				t.Errorf("%s %s on %q: recommendation %+v, want %s", p.Table, kind, p.Key, f.Recommendation, p.Recommendation)
			}
		}
	}
	// The telemetry device is near the ceiling without being hot by share.
	if tr := find("telemetry", ""); tr != nil {
		for _, f := range tr.Findings {
			if f.Kind == "hot_key" {
				t.Errorf("telemetry: unexpected hot_key on %q at %.3f", f.Key, f.Share)
			}
			if f.Kind == "partition_limit" && f.Severity != "critical" {
				t.Errorf("telemetry partition_limit severity %q", f.Severity)
			}
		}
	}
}

func kinds(fs []report.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Kind)+":"+f.Class+":"+f.Key)
	}
	return out
}

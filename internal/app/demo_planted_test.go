package app

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/ingest/demo"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// demoWindow returns half a minute of the demo workload at its default
// rate and seed, with the index writes its writes cause: what the
// detector must diagnose as the demo promises.
func demoWindow() []traffic.Event {
	const seconds = 30
	w := demo.New(demo.Config{Seed: demo.DefaultSeed})
	evs := make([]traffic.Event, 0, demo.DefaultRate*seconds)
	start := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	step := time.Second / demo.DefaultRate
	for i := range demo.DefaultRate * seconds {
		var ev traffic.Event
		w.Next(&ev, start.Add(time.Duration(i)*step))
		evs = w.IndexWrites(append(evs, ev))
	}
	return evs
}

// TestDetectorDiagnosesPlanted runs half a minute of the workload through
// the sketches and the detector, as hotkeyd analyze would, and checks every
// Plant: its diagnosis is there with the cause, severity and fix promised,
// it is the only diagnosis at warning or above on its table, and the quiet
// tables have no diagnosis and no finding.
func TestDetectorDiagnosesPlanted(t *testing.T) {
	store, err := sketch.NewStore(sketch.Config{Window: 0, SubWindows: 1, Tracked: 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	evs := demoWindow()
	for len(evs) > 0 {
		n := min(len(evs), 512)
		if err := store.Put(context.Background(), slices.Clone(evs[:n])); err != nil {
			t.Fatal(err)
		}
		evs = evs[n:]
	}
	rep := detect.Evaluate(store.Snapshot(), detect.DefaultSettings())
	find := func(table, index string) *report.TableReport {
		for i := range rep.Tables {
			if rep.Tables[i].Table == table && rep.Tables[i].Index == index {
				return &rep.Tables[i]
			}
		}
		return nil
	}
	for _, p := range demo.Planted() {
		tr := find(p.Table, p.Index)
		if tr == nil {
			t.Errorf("%s %s: not in the report", p.Table, p.Index)
			continue
		}
		if p.Cause == "" {
			if len(tr.Diagnoses) != 0 || len(tr.Findings) != 0 {
				t.Errorf("%s %s must be quiet, got diagnoses %v and findings %v", p.Table, p.Index, causes(tr.Diagnoses), len(tr.Findings))
			}
			continue
		}
		i := slices.IndexFunc(tr.Diagnoses, func(d report.Diagnosis) bool {
			return slices.Contains(p.Causes(), string(d.Cause)) && d.Class == p.Class.String() && (p.Key == "" || d.Key() == p.Key)
		})
		if i < 0 {
			t.Errorf("%s: no %s diagnosis for %q %s; diagnoses: %v", p.Table, p.Cause, p.Key, p.Class, causes(tr.Diagnoses))
			continue
		}
		d := tr.Diagnoses[i]
		if string(d.Fix.Kind) != p.Fix {
			t.Errorf("%s %s: fix %+v, want %s", p.Table, p.Cause, d.Fix, p.Fix)
		}
		switch p.Severity {
		case "info":
			if d.Severity != report.SeverityInfo || tr.Quiet == nil || tr.Quiet.Reason != report.QuietInfoOnly {
				t.Errorf("%s: severity %s, quiet %+v; want info, quiet as info only", p.Table, d.Severity, tr.Quiet)
			}
		case "critical":
			if d.Severity != report.SeverityCritical {
				t.Errorf("%s: severity %s, want critical", p.Table, d.Severity)
			}
		default:
			if !d.Severity.Pages() {
				t.Errorf("%s: severity %s, want warning or critical (peak %.0f of %.0f)", p.Table, d.Severity, d.PeakUnitsPerSecond, d.Limit)
			}
		}
		for j, o := range tr.Diagnoses {
			if j != i && o.Severity.Pages() {
				t.Errorf("%s: a second diagnosis at %s for one planted cause: %s %q", p.Table, o.Severity, o.Cause, o.Key())
			}
		}
	}
}

func causes(ds []report.Diagnosis) []string {
	var out []string
	for _, d := range ds {
		out = append(out, string(d.Cause)+":"+d.Class+":"+d.Key()+":"+string(d.Severity))
	}
	return out
}

package detect

import (
	"fmt"
	"sync"
	"testing"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// flagsOf lists the Tracker's flags as "table kind key" strings.
func flagsOf(tr *Tracker) []string {
	var out []string
	for _, f := range tr.Flagged() {
		out = append(out, fmt.Sprintf("%s %s %s", f.Table, f.Finding.Kind, f.Finding.Key))
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// rateSnapshot is a 60 s window where KEY writes at rate WCU/s beside 100
// keys of 5 WCU/s each (500 WCU/s in all).
func rateSnapshot(rate float64) sketch.Snapshot {
	writes := map[string]float64{"KEY": rate * 60}
	for i := range 100 {
		writes[fmt.Sprintf("K%03d", i)] = 5 * 60
	}
	return snapshotOf(60, writes)
}

func TestTrackerPartitionLimitBand(t *testing.T) {
	s := DefaultSettings()
	s.HoldEvaluations = 2
	tr := NewTracker(s)
	// 850 WCU/s is above 0.8 × 1000; 750 is between the clear fraction 0.7
	// and 0.8; 650 is below 0.7.
	steps := []struct {
		rate float64
		want []string
	}{
		{850, nil},
		{850, []string{"orders hot_key KEY", "orders partition_limit KEY"}},
		// Critical first: at 750 the hot key is a warning, the limit
		// finding critical by kind.
		{750, []string{"orders partition_limit KEY", "orders hot_key KEY"}},
		{650, []string{"orders hot_key KEY"}},
		// 50 of 550 WCU/s is 9.1 %: in the share band, still flagged.
		{50, []string{"orders hot_key KEY"}},
		{20, nil},
	}
	for i, st := range steps {
		tr.Evaluate(rateSnapshot(st.rate))
		if got := flagsOf(tr); !equalStrings(got, st.want) {
			t.Errorf("step %d (%v WCU/s): flagged %q, want %q", i+1, st.rate, got, st.want)
		}
	}
}

func TestTrackerTableWideHoldAndClear(t *testing.T) {
	s := DefaultSettings()
	s.HoldEvaluations = 2
	tr := NewTracker(s)
	status := map[string]float64{"PENDING": 400, "SHIPPED": 300, "DELIVERED": 250, "X1": 20, "X2": 20, "X3": 10}
	healthy := map[string]float64{}
	for i := range 500 {
		healthy[fmt.Sprintf("ORDER#%d", i)] = 2
	}
	steps := []struct {
		writes map[string]float64
		want   int // low_cardinality flags
	}{
		{status, 0}, {status, 1}, {healthy, 1}, {healthy, 0}, {status, 0}, {status, 1},
	}
	for i, st := range steps {
		rep, _ := tr.Evaluate(snapshotOf(60, st.writes))
		n := 0
		for _, f := range tr.Flagged() {
			if f.Finding.Kind == report.KindLowCardinality {
				n++
			}
		}
		if n != st.want {
			t.Errorf("step %d: %d low_cardinality flags, want %d (%q)", i+1, n, st.want, flagsOf(tr))
		}
		got := 0
		for _, tb := range rep.Tables {
			got += len(tb.Findings)
		}
		if got != len(tr.Flagged()) {
			t.Errorf("step %d: report has %d findings, tracker %d flags", i+1, got, len(tr.Flagged()))
		}
	}
}

func TestTrackerClearsVanishedTable(t *testing.T) {
	s := DefaultSettings()
	s.HoldEvaluations = 1
	tr := NewTracker(s)
	tr.Evaluate(rateSnapshot(900))
	if len(tr.Flagged()) == 0 {
		t.Fatal("nothing flagged at 900 WCU/s")
	}
	tr.Evaluate(sketch.Snapshot{})
	if got := tr.Flagged(); len(got) != 0 {
		t.Errorf("flags of a table that left the snapshot: %+v", got)
	}
}

func TestTrackerConcurrentReaders(t *testing.T) {
	tr := NewTracker(DefaultSettings())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range 50 {
			tr.Evaluate(rateSnapshot(float64(100 + i*20)))
		}
	}()
	go func() {
		defer wg.Done()
		for range 200 {
			for _, f := range tr.Flagged() {
				if f.Finding.Recommendation == nil {
					t.Error("flag without recommendation")
					return
				}
			}
		}
	}()
	wg.Wait()
}

func TestTrackerTimeOrderedRollsOver(t *testing.T) {
	s := DefaultSettings()
	tr := NewTracker(s)
	day := func(d string) sketch.Snapshot {
		writes := map[string]float64{"EVENTS#" + d: 500}
		for i := range 50 {
			writes[fmt.Sprintf("EVENTS#2026-10-%02d", 1+i%28)+fmt.Sprintf("#%d", i)] = 2
		}
		return snapshotOf(60, writes)
	}
	for i, d := range []string{"2026-11-22", "2026-11-22", "2026-11-22", "2026-11-23", "2026-11-23"} {
		tr.Evaluate(day(d))
		var keys []string
		for _, f := range tr.Flagged() {
			if f.Finding.Kind == report.KindTimeOrderedKey {
				keys = append(keys, f.Finding.Key)
			}
		}
		want := []string{"EVENTS#" + d}
		if i < 2 {
			want = nil
		}
		if !equalStrings(keys, want) {
			t.Errorf("step %d: time_ordered_key flags %q, want %q", i+1, keys, want)
		}
	}
}

// TestTrackerChanges checks that Evaluate reports a finding once when it is
// raised, nothing while it stays flagged, and once when it is cleared, with
// its last numbers; and that a table leaving the snapshot clears its flags.
func TestTrackerChanges(t *testing.T) {
	s := DefaultSettings()
	s.HoldEvaluations = 2
	tr := NewTracker(s)
	changesOf := func(snap sketch.Snapshot) []string {
		_, changes := tr.Evaluate(snap)
		var out []string
		for _, c := range changes {
			what := "raised"
			if c.Cleared {
				what = "cleared"
			}
			out = append(out, fmt.Sprintf("%s %s %s %s %.0f", what, c.Table, c.Finding.Kind, c.Finding.Key, c.Finding.UnitsPerSecond))
		}
		return out
	}
	steps := []struct {
		snap sketch.Snapshot
		want []string
	}{
		{rateSnapshot(850), nil},
		{rateSnapshot(850), []string{"raised orders hot_key KEY 850", "raised orders partition_limit KEY 850"}},
		{rateSnapshot(850), nil},
		// 750 WCU/s holds the limit finding in its band: no change.
		{rateSnapshot(750), nil},
		{rateSnapshot(650), []string{"cleared orders partition_limit KEY 750"}},
		{sketch.Snapshot{}, []string{"cleared orders hot_key KEY 650"}},
		{sketch.Snapshot{}, nil},
	}
	for i, st := range steps {
		if got := changesOf(st.snap); !equalStrings(got, st.want) {
			t.Errorf("step %d: changes %q, want %q", i+1, got, st.want)
		}
	}
}

package detect

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
)

// flagsOf lists the Tracker's flags as "table cause key severity" strings.
func flagsOf(tr *Tracker) []string {
	var out []string
	for _, f := range tr.Flagged() {
		out = append(out, fmt.Sprintf("%s %s %s %s", f.Table, f.Diagnosis.Cause, f.Diagnosis.Key(), f.Diagnosis.Severity))
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

// stepped returns snap as the i-th of evaluations one second apart: its
// times shifted by i seconds, so that the Tracker's event time moves as
// it does live.
func stepped(snap sketch.Snapshot, i int) sketch.Snapshot {
	d := time.Duration(i) * time.Second
	shift := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return t.Add(d)
	}
	out := snap
	out.Start, out.End = shift(snap.Start), shift(snap.End)
	out.Tables = make([]sketch.TableSnapshot, len(snap.Tables))
	for j, ts := range snap.Tables {
		ts.Start, ts.End, ts.LastSecond = shift(ts.Start), shift(ts.End), shift(ts.LastSecond)
		out.Tables[j] = ts
	}
	return out
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

// TestTrackerPartitionLimitBand follows one key's diagnosis through the
// bands: flagged at 850 WCU/s (partition_limit, critical), held as such
// down to 700 (clear_limit_fraction), then a hot key whose severity falls
// with its peak, held in the share band, and cleared below it.
func TestTrackerPartitionLimitBand(t *testing.T) {
	tr := NewTracker(DefaultSettings()) // hold 1 s: two evaluations
	steps := []struct {
		rate float64
		want []string
	}{
		{850, nil},
		{850, []string{"orders partition_limit KEY critical"}},
		// 750 is between 0.7 and 0.8 of the ceiling: cause and severity
		// hold.
		{750, []string{"orders partition_limit KEY critical"}},
		// 650 is below 0.7: a hot key (54 % of the writes) peaking at
		// 65 % of the ceiling, a warning.
		{650, []string{"orders hot_key KEY warning"}},
		// 450 is below warn_fraction but above clear_warn_fraction.
		{450, []string{"orders hot_key KEY warning"}},
		// 50 of 550 WCU/s is 9.1 %: in the share band, still flagged,
		// and far from the ceiling: info.
		{50, []string{"orders hot_key KEY info"}},
		{20, nil},
	}
	for i, st := range steps {
		rep, _ := tr.Evaluate(stepped(rateSnapshot(st.rate), i))
		if got := flagsOf(tr); !equalStrings(got, st.want) {
			t.Errorf("step %d (%v WCU/s): flagged %q, want %q", i+1, st.rate, got, st.want)
		}
		// The report shows the flagged diagnosis with its evidence.
		if tb := rep.Tables[0]; len(tb.Diagnoses) != len(st.want) || len(st.want) > 0 && len(tb.Findings) == 0 {
			t.Errorf("step %d: report has %d diagnoses and %d findings", i+1, len(tb.Diagnoses), len(tb.Findings))
		}
	}
}

// TestTrackerSeverityBand checks that a flagged diagnosis whose peak hovers
// around warn_fraction neither flaps between warning and info nor
// announces a change each time.
func TestTrackerSeverityBand(t *testing.T) {
	s := DefaultSettings()
	s.Hold = 0
	tr := NewTracker(s)
	changes := 0
	rates := []float64{520, 480, 510, 470, 495, 530, 460, 505, 490}
	for i, rate := range rates {
		_, cs := tr.Evaluate(stepped(rateSnapshot(rate), i))
		changes += len(cs)
		if got := flagsOf(tr); !equalStrings(got, []string{"orders hot_key KEY warning"}) {
			t.Errorf("step %d (%v WCU/s): flagged %q", i+1, rate, got)
		}
	}
	if changes != 1 {
		t.Errorf("%d changes, want the one raise", changes)
	}
	// Below clear_warn_fraction (400) it falls to info, once.
	if _, cs := tr.Evaluate(stepped(rateSnapshot(350), len(rates))); len(cs) != 1 || cs[0].Was == nil || cs[0].Was.Severity != report.SeverityWarning || cs[0].Diagnosis.Severity != report.SeverityInfo {
		t.Errorf("at 350 WCU/s: changes %+v, want warning -> info", cs)
	}
}

// TestTrackerHoveringShareDoesNotFlap feeds a key whose share wanders
// between 9 and 11 % for a hundred evaluations: it may be raised once, and
// is never cleared and raised again.
func TestTrackerHoveringShareDoesNotFlap(t *testing.T) {
	tr := NewTracker(DefaultSettings())
	raised, cleared := 0, 0
	for i := range 100 {
		share := 0.09 + 0.02*float64((i*7)%11)/10 // 9 % .. 11 %
		hot := share * 500 / (1 - share)          // beside 500 WCU/s of other keys
		_, cs := tr.Evaluate(stepped(rateSnapshot(hot), i))
		for _, c := range cs {
			if c.Cleared {
				cleared++
			} else if c.Was == nil {
				raised++
			}
		}
	}
	if raised > 1 || cleared > 0 {
		t.Errorf("raised %d times and cleared %d times, want at most one raise and no clear", raised, cleared)
	}
}

// TestTrackerTakeOver checks that a low_cardinality diagnosis that comes to
// explain a hot key already flagged takes its place in one evaluation:
// the hot key's diagnosis is cleared as the table-wide one is raised, and
// never are both flagged.
func TestTrackerTakeOver(t *testing.T) {
	tr := NewTracker(DefaultSettings())
	// First PENDING alone is hot among many keys; then the other keys go
	// away and three values carry everything.
	hot := map[string]float64{"PENDING": 20000}
	for i := range 200 {
		hot[fmt.Sprintf("ORDER#%d", i)] = 400
	}
	status := map[string]float64{"PENDING": 20000, "SHIPPED": 15000, "DELIVERED": 10000}
	var log []string
	for i, w := range []map[string]float64{hot, hot, hot, hot, status, status, status} {
		_, cs := tr.Evaluate(stepped(snapshotOf(60, w), i))
		for _, c := range cs {
			what := "raised"
			switch {
			case c.Cleared:
				what = "cleared"
			case c.Was != nil:
				what = "changed"
			}
			log = append(log, fmt.Sprintf("%d %s %s %s", i+1, what, c.Diagnosis.Cause, c.Diagnosis.Key()))
		}
		if n := len(tr.Flagged()); n > 1 {
			t.Errorf("step %d: %d diagnoses flagged: %q", i+1, n, flagsOf(tr))
		}
	}
	want := []string{"2 raised hot_key PENDING", "5 raised low_cardinality PENDING", "5 cleared hot_key PENDING"}
	if !equalStrings(log, want) {
		t.Errorf("changes %q, want %q", log, want)
	}
}

func TestTrackerTableWideHoldAndClear(t *testing.T) {
	tr := NewTracker(DefaultSettings()) // hold 1 s: two evaluations
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
		rep, _ := tr.Evaluate(stepped(snapshotOf(60, st.writes), i))
		n := 0
		for _, f := range tr.Flagged() {
			if f.Diagnosis.Cause == report.KindLowCardinality {
				n++
			}
		}
		// The status values' hot keys are its evidence: one diagnosis.
		if n != st.want || len(tr.Flagged()) != st.want {
			t.Errorf("step %d: %d low_cardinality flags, want %d (%q)", i+1, n, st.want, flagsOf(tr))
		}
		got := 0
		for _, tb := range rep.Tables {
			got += len(tb.Diagnoses)
		}
		if got != len(tr.Flagged()) {
			t.Errorf("step %d: report has %d diagnoses, tracker %d flags", i+1, got, len(tr.Flagged()))
		}
	}
}

func TestTrackerClearsVanishedTable(t *testing.T) {
	s := DefaultSettings()
	s.Hold = 0
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
			tr.Evaluate(stepped(rateSnapshot(float64(100+i*20)), i))
		}
	}()
	go func() {
		defer wg.Done()
		for range 200 {
			for _, f := range tr.Flagged() {
				if f.Diagnosis.Fix.Text == "" {
					t.Error("flag without fix")
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
		tr.Evaluate(stepped(day(d), i))
		var keys []string
		for _, f := range tr.Flagged() {
			if f.Diagnosis.Cause == report.KindTimeOrderedKey {
				keys = append(keys, f.Diagnosis.Key())
			}
		}
		want := []string{"EVENTS#" + d}
		if i < 1 {
			want = nil
		}
		if !equalStrings(keys, want) {
			t.Errorf("step %d: time_ordered_key flags %q, want %q", i+1, keys, want)
		}
	}
}

// TestTrackerChanges checks that Evaluate reports a diagnosis once when it
// is raised, once when its cause or severity changes, nothing while it
// stays as it is, and once when it is cleared, with its last numbers; and
// that a table leaving the snapshot clears its flags.
func TestTrackerChanges(t *testing.T) {
	tr := NewTracker(DefaultSettings()) // hold 1 s: two evaluations
	changesOf := func(snap sketch.Snapshot) []string {
		_, changes := tr.Evaluate(snap)
		var out []string
		for _, c := range changes {
			d := c.Diagnosis
			what := fmt.Sprintf("%s %s %s %s %s %.0f", "raised", c.Table, d.Cause, d.Key(), d.Severity, d.PeakUnitsPerSecond)
			switch {
			case c.Cleared:
				what = "cleared" + what[len("raised"):]
			case c.Was != nil:
				what = "changed" + what[len("raised"):] + fmt.Sprintf(" (was %s %s)", c.Was.Cause, c.Was.Severity)
			}
			out = append(out, what)
		}
		return out
	}
	steps := []struct {
		snap sketch.Snapshot
		want []string
	}{
		{rateSnapshot(850), nil},
		{rateSnapshot(850), []string{"raised orders partition_limit KEY critical 850"}},
		{rateSnapshot(850), nil},
		// 750 WCU/s holds it in its band: no change.
		{rateSnapshot(750), nil},
		{rateSnapshot(650), []string{"changed orders hot_key KEY warning 650 (was partition_limit critical)"}},
		{sketch.Snapshot{}, []string{"cleared orders hot_key KEY warning 650"}},
		{sketch.Snapshot{}, nil},
	}
	for i, st := range steps {
		if got := changesOf(stepped(st.snap, i)); !equalStrings(got, st.want) {
			t.Errorf("step %d: changes %q, want %q", i+1, got, st.want)
		}
	}
}

// TestTrackerHoversAtEachBoundary: a key whose share or peak wanders
// around each boundary for five minutes of evaluations a second apart
// (the default hold, 1 s) is raised once, changes at most once on its
// first crossing, and is never lowered or cleared: the threshold (9–11 %
// of the writes), info/warning (peaks of 45–55 % of the ceiling),
// warning/critical with partition_limit (75–85 %). A key hot for one
// second at a time, between seconds far under the threshold, is never
// raised.
func TestTrackerHoversAtEachBoundary(t *testing.T) {
	share := func(s float64) float64 { return s * 500 / (1 - s) } // beside 500 WCU/s of other keys
	for _, tc := range []struct {
		name         string
		rate         func(u float64) float64 // the key's WCU/s for a uniform draw u
		raised, most int                     // raises, and changes after the raise at most
		severity     report.Severity         // at the end
		cause        report.Kind
	}{
		{"threshold", func(u float64) float64 { return share(0.09 + 0.02*u) }, 1, 0, report.SeverityInfo, report.KindHotKey},
		{"info/warning", func(u float64) float64 { return 450 + 100*u }, 1, 1, report.SeverityWarning, report.KindHotKey},
		{"warning/critical", func(u float64) float64 { return 750 + 100*u }, 1, 1, report.SeverityCritical, report.KindPartitionLimit},
		{"blips", func(u float64) float64 {
			if u < 0.3 {
				return share(0.2)
			}
			return share(0.03)
		}, 0, 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(DefaultSettings())
			rnd := rand.New(rand.NewPCG(7, 8))
			raised, changed, blip := 0, 0, false
			for i := range 300 {
				u := rnd.Float64()
				if tc.name == "blips" {
					// Never two hot seconds in a row.
					if blip {
						u = 1
					}
					blip = u < 0.3
				}
				_, cs := tr.Evaluate(stepped(rateSnapshot(tc.rate(u)), i))
				for _, c := range cs {
					switch {
					case c.Cleared:
						t.Fatalf("step %d: cleared %s %s", i, c.Diagnosis.Cause, c.Diagnosis.Severity)
					case c.Was == nil:
						raised++
					case c.Was.Severity.Rank() < c.Diagnosis.Severity.Rank():
						t.Fatalf("step %d: lowered from %s to %s", i, c.Was.Severity, c.Diagnosis.Severity)
					default:
						changed++
					}
				}
			}
			if raised != tc.raised || changed > tc.most {
				t.Errorf("raised %d times and changed %d times, want %d raise and at most %d change", raised, changed, tc.raised, tc.most)
			}
			flags := tr.Flagged()
			if tc.raised == 0 {
				if len(flags) != 0 {
					t.Errorf("flagged %q", flagsOf(tr))
				}
				return
			}
			if len(flags) != 1 || flags[0].Diagnosis.Severity != tc.severity || flags[0].Diagnosis.Cause != tc.cause {
				t.Errorf("flagged %q, want one %s %s", flagsOf(tr), tc.cause, tc.severity)
			}
		})
	}
}

// TestTrackerSetSettings changes the thresholds between evaluations, as a
// reload does: a key flagged before stays flagged, with no change
// announced, while its share is above the new clear threshold, and is
// cleared once it is below; a table whose entry is kept is asked for whole
// until it has been judged by the new settings.
func TestTrackerSetSettings(t *testing.T) {
	s := DefaultSettings()
	tr := NewTracker(s)
	snap := rateSnapshot(125) // 20 % of the writes
	snap.Tables[0].Version = 7
	i := 0
	eval := func(snap sketch.Snapshot) []report.Change {
		_, cs := tr.Evaluate(stepped(snap, i))
		i++
		return cs
	}
	for range 3 {
		eval(snap)
	}
	if got := flagsOf(tr); len(got) != 1 {
		t.Fatalf("flagged before: %v", got)
	}
	if v, _ := tr.Held("orders", ""); v != 7 {
		t.Fatalf("Held = %d before, want 7", v)
	}

	higher := s
	higher.Threshold, higher.ClearThreshold = 0.15, 0.12
	tr.SetSettings(higher)
	if v, _ := tr.Held("orders", ""); v != 0 {
		t.Errorf("Held = %d with new settings pending, want 0 (judge the table again)", v)
	}
	if cs := eval(snap); len(cs) != 0 || len(flagsOf(tr)) != 1 {
		t.Errorf("threshold 15 %%, key at 20 %%: changes %v, flags %v; want it kept flagged with no change", cs, flagsOf(tr))
	}

	highest := s
	highest.Threshold, highest.ClearThreshold = 0.3, 0.24
	tr.SetSettings(highest)
	kept := snap
	kept.Tables = []sketch.TableSnapshot{{Table: "orders", Version: 7, Kept: true}}
	if cs := eval(kept); len(cs) != 0 || len(flagsOf(tr)) != 1 {
		t.Errorf("a kept entry keeps its report: changes %v, flags %v", cs, flagsOf(tr))
	}
	if v, _ := tr.Held("orders", ""); v != 0 {
		t.Errorf("Held = %d after a kept entry met new settings, want 0", v)
	}
	if cs := eval(snap); len(cs) != 1 || !cs[0].Cleared || len(flagsOf(tr)) != 0 {
		t.Errorf("threshold 30 %%, key at 20 %%: changes %v, flags %v; want it cleared", cs, flagsOf(tr))
	}
}

package detect

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// TestLiveWindowWithTracker runs the detector as the daemon does: a live
// sliding-window store on a virtual clock, one Tracker evaluation per 5 s
// tick. A key that takes 1/6 of a table's writes for two minutes is flagged
// on the second tick (the hold is a span of event time: the next tick is
// 5 s of it) and stays flagged without a gap; once it stops, it is
// cleared when the window has forgotten enough of it, and never flagged
// again. The uniform table is never flagged.
func TestLiveWindowWithTracker(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	store, err := sketch.NewStore(sketch.Config{Window: time.Minute, SubWindows: 12, Tracked: 100}, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTracker(DefaultSettings())
	const tick = 5 * time.Second
	var flaggedAt, clearedAt []int
	was := false
	for step := 1; step <= 60; step++ {
		var batch []traffic.Event
		for i := range 200 {
			batch = append(batch,
				traffic.Event{Table: "orders", PK: fmt.Sprintf("ORDER#%d", step*1000+i), Class: traffic.Write, Units: 1, Time: now},
				traffic.Event{Table: "uniform", PK: fmt.Sprintf("USER#%d", (step*200+i)%4000), Class: traffic.Write, Units: 1, Time: now})
		}
		if step <= 24 { // two minutes of a hot key
			for range 40 {
				batch = append(batch, traffic.Event{Table: "orders", PK: "ORDER#hot", SK: "LINE#1", Class: traffic.Write, Units: 1, Time: now})
			}
		}
		if err := store.Put(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		rep, changes := tr.Evaluate(store.Snapshot())
		is := false
		for _, f := range tr.Flagged() {
			if f.Table == "uniform" {
				t.Fatalf("step %d: uniform table flagged: %+v", step, f.Diagnosis)
			}
			if d := f.Diagnosis; f.Table == "orders" && d.Cause == report.KindHotKey && d.Key() == "ORDER#hot" {
				is = true
				if d.Fix.Kind != report.AdviceWriteSharding || d.Fix.SuffixCount != 2 || d.Severity != report.SeverityInfo {
					t.Errorf("step %d: %s with %+v, want info with write_sharding over 2 keys", step, d.Severity, d.Fix)
				}
			} else {
				t.Errorf("step %d: unexpected flag %s %+v", step, f.Table, f.Diagnosis)
			}
		}
		if len(rep.Tables) != 2 {
			t.Fatalf("step %d: %d tables in the report", step, len(rep.Tables))
		}
		if is && !was {
			flaggedAt = append(flaggedAt, step)
		}
		if was && !is {
			clearedAt = append(clearedAt, step)
		}
		// The changes say the same as the flags before and after.
		if want := is != was; len(changes) != 1 && want || len(changes) != 0 && !want ||
			want && (changes[0].Cleared != was || changes[0].Diagnosis.Key() != "ORDER#hot") {
			t.Errorf("step %d: changes %+v, flagged %v before and %v after", step, changes, was, is)
		}
		was = is
		now = now.Add(tick)
	}
	if len(flaggedAt) != 1 || flaggedAt[0] != 2 {
		t.Errorf("flagged at steps %v, want once at step 2", flaggedAt)
	}
	// The key stops after step 24. With k of the 12 slots still holding it,
	// its share is 40k / (240k + 200(12-k)), below 8 % once k ≤ 5: seven
	// ticks later, at step 31 (a slot more or less with the window's
	// alignment).
	if len(clearedAt) != 1 || clearedAt[0] < 30 || clearedAt[0] > 32 {
		t.Errorf("cleared at steps %v (flagged at %v), want once, at step 31", clearedAt, flaggedAt)
	}
}

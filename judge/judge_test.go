package judge

import (
	"context"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// TestAlone: a process alone judges its own window, with the Tracker's
// hysteresis: the hot key is raised once it has held for the hold (1 s of
// event time: the evaluation a second later), and announced once; an
// evaluation that finds nothing changed keeps the table as it was.
func TestAlone(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	cfg := sketch.DefaultConfig()
	cfg.Window = time.Minute
	store, err := sketch.NewStore(cfg, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	var batch []traffic.Event
	for i := range 1000 {
		pk := "USER#42"
		if i%2 == 1 {
			pk = "USER#" + string(rune('a'+i%26)) + string(rune('a'+i/26%26))
		}
		batch = append(batch, traffic.Event{Table: "orders", PK: pk, Class: traffic.Write, Units: 1, Time: now})
	}
	if err := store.Put(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second) // the second of the events closes
	settings := detect.DefaultSettings()
	tr := detect.NewTracker(settings)
	e := Alone(store, tr)
	announced := 0
	for i := range 2 {
		j := e.Evaluate()
		if len(j.Snapshot.Tables) != 1 || j.Snapshot.Tables[0].Table != "orders" {
			t.Fatalf("evaluation %d: snapshot tables %+v, want orders", i, j.Snapshot.Tables)
		}
		if j.Report.Events != 1000 {
			t.Errorf("evaluation %d: report events %d, want 1000", i, j.Report.Events)
		}
		announced += len(j.Changes)
		if i == 0 && len(j.Report.Tables[0].Diagnoses) != 0 {
			t.Errorf("evaluation %d: diagnoses %+v before the hold", i, j.Report.Tables[0].Diagnoses)
		}
		now = now.Add(time.Second)
	}
	if tr.Evaluations() != 2 {
		t.Errorf("%d evaluations of the table, want 2 (the hold under way asks for each second)", tr.Evaluations())
	}
	if e.Moved() != true {
		t.Error("Moved says false a second later")
	}
	j := e.Evaluate()
	if d := j.Report.Tables[0].Diagnoses; len(d) == 0 || d[0].Key() != "USER#42" {
		t.Errorf("after the hold: diagnoses %+v, want one on USER#42", d)
	}
	if announced != 1 || len(j.Changes) != 0 {
		t.Errorf("announced %d changes then %d, want 1 then 0", announced, len(j.Changes))
	}
	// Until the events' second leaves the recent seconds (3), each second
	// shows something new; then nothing does.
	for range cfg.RecentSeconds {
		now = now.Add(time.Second)
		e.Evaluate()
	}
	n := tr.Evaluations()
	now = now.Add(time.Second)
	j = e.Evaluate()
	if !j.Snapshot.Tables[0].Kept || tr.Evaluations() != n {
		t.Errorf("nothing changed: entry kept %v, %d evaluations, want kept and still %d", j.Snapshot.Tables[0].Kept, tr.Evaluations(), n)
	}
	if d := j.Report.Tables[0].Diagnoses; len(d) != 1 || len(j.Changes) != 0 {
		t.Errorf("kept table: diagnoses %+v, changes %+v; want the flag as it was", d, j.Changes)
	}
	if e.Moved() {
		t.Error("Moved says true with nothing new in the same second")
	}
}

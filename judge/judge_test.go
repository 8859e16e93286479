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
// hysteresis: the hot key is raised once it has held for
// HoldEvaluations evaluations, and announced once.
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
	settings := detect.DefaultSettings()
	e := Alone(store, detect.NewTracker(settings))
	announced := 0
	for i := range settings.HoldEvaluations {
		j := e.Evaluate()
		if len(j.Snapshot.Tables) != 1 || j.Snapshot.Tables[0].Table != "orders" {
			t.Fatalf("evaluation %d: snapshot tables %+v, want orders", i, j.Snapshot.Tables)
		}
		if j.Report.Events != 1000 {
			t.Errorf("evaluation %d: report events %d, want 1000", i, j.Report.Events)
		}
		announced += len(j.Changes)
		if i < settings.HoldEvaluations-1 && len(j.Report.Tables[0].Diagnoses) != 0 {
			t.Errorf("evaluation %d: diagnoses %+v before the hold", i, j.Report.Tables[0].Diagnoses)
		}
	}
	j := e.Evaluate()
	if d := j.Report.Tables[0].Diagnoses; len(d) == 0 || d[0].Key() != "USER#42" {
		t.Errorf("after the hold: diagnoses %+v, want one on USER#42", d)
	}
	if announced != 1 || len(j.Changes) != 0 {
		t.Errorf("announced %d changes then %d, want 1 then 0", announced, len(j.Changes))
	}
}

package export

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// TestRaisers: two replicas read the two shards of a table, the hot key in
// replica b's shard. Both judge on the sum and report the same diagnosis;
// b raises it: only b's collector exports it and only b announces it, a's
// API-side report names b. Every key's series come from one replica, the
// table-wide series from the reader of the lowest shard (a).
// flagAtOnce are the default settings with no hold: the same combined
// snapshot evaluated again moves no event time, and these tests are about
// who raises what, not about the hold.
var flagAtOnce = func() detect.Settings {
	s := detect.DefaultSettings()
	s.Hold = 0
	return s
}()

func TestRaisers(t *testing.T) {
	clock := t0
	now := func() time.Time { return clock }
	cfg := sketch.Config{Window: time.Minute}
	a, err := sketch.NewStore(cfg, now)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := sketch.NewStore(cfg, now)
	for sec := range 20 {
		clock = t0.Add(time.Duration(sec) * time.Second)
		var ea, eb []traffic.Event
		for i := range 50 {
			ea = append(ea, traffic.Event{Table: "orders", PK: fmt.Sprintf("A%d", i), Class: traffic.Write, Units: 1, Shard: "shardId-0001"})
			eb = append(eb, traffic.Event{Table: "orders", PK: fmt.Sprintf("B%d", i), Class: traffic.Write, Units: 1, Shard: "shardId-0002"})
		}
		for range 30 {
			eb = append(eb, traffic.Event{Table: "orders", PK: "HOT", Class: traffic.Write, Units: 1, Shard: "shardId-0002"})
		}
		if err := a.Put(context.Background(), ea); err != nil {
			t.Fatal(err)
		}
		if err := b.Put(context.Background(), eb); err != nil {
			t.Fatal(err)
		}
	}
	clock = clock.Add(time.Second)
	sa, sb := a.Summary(true), b.Summary(true)
	ra := sketch.Replica{Worker: "a", Summary: sa}
	rb := sketch.Replica{Worker: "b", Summary: sb}
	judge := func(self sketch.Replica, peer sketch.Replica) (report.Report, []report.Change, *prometheus.Registry) {
		c := sketch.Combine(self, []sketch.Replica{peer}, 100)
		tr := detect.NewTracker(flagAtOnce)
		var rep report.Report
		var changes []report.Change
		r := detect.NewRaisers(self.Worker)
		for range 2 {
			var ch []report.Change
			rep, ch = tr.Evaluate(c.Snapshot)
			changes = append(changes, r.Assign(&rep, ch, c)...)
		}
		live := NewLive(now)
		live.Update(rep)
		reg := prometheus.NewRegistry()
		reg.MustRegister(NewCollector(live, CollectorConfig{Replica: self.Worker}))
		return rep, changes, reg
	}
	repA, chA, regA := judge(ra, rb)
	repB, chB, regB := judge(rb, ra)

	for name, rep := range map[string]report.Report{"a": repA, "b": repB} {
		tr := rep.Tables[0]
		if len(tr.Diagnoses) != 1 || tr.Diagnoses[0].Key() != "HOT" {
			t.Fatalf("%s: diagnoses %+v, want HOT's", name, tr.Diagnoses)
		}
		d := tr.Diagnoses[0]
		if want := 600.0 / 2600; d.Share < want-1e-9 || d.Share > want+1e-9 {
			t.Errorf("%s: HOT's share %v, want the whole table's %v", name, d.Share, want)
		}
		if d.RaisedBy != "b" || tr.Replica != "a" {
			t.Errorf("%s: raised by %q, table-wide by %q; want b and a", name, d.RaisedBy, tr.Replica)
		}
	}
	if len(chA) != 0 || len(chB) != 1 || chB[0].Diagnosis.RaisedBy != "b" {
		t.Errorf("announced by a: %v, by b: %v; want the raise by b alone", chA, chB)
	}
	// b is gone and c reads its shard now: the diagnosis, still flagged,
	// moves to c rather than staying with a replica nobody hears from.
	r := detect.NewRaisers("a")
	tr := detect.NewTracker(flagAtOnce)
	var rep report.Report
	for i := range 3 {
		peer := rb
		if i == 2 {
			peer = sketch.Replica{Worker: "c", Summary: sb}
		}
		c := sketch.Combine(ra, []sketch.Replica{peer}, 100)
		var ch []report.Change
		rep, ch = tr.Evaluate(c.Snapshot)
		r.Assign(&rep, ch, c)
		if len(rep.Tables[0].Diagnoses) > 0 {
			if by, want := rep.Tables[0].Diagnoses[0].RaisedBy, peer.Worker; by != want {
				t.Errorf("evaluation %d: raised by %q, want %q", i, by, want)
			}
		}
	}
	if len(rep.Tables[0].Diagnoses) != 1 {
		t.Errorf("diagnoses after the move: %+v", rep.Tables[0].Diagnoses)
	}

	count := func(reg *prometheus.Registry, metric, label string) int {
		n, err := testutil.GatherAndCount(reg, metric)
		if err != nil {
			t.Fatal(err)
		}
		if label == "" {
			return n
		}
		mfs, _ := reg.Gather()
		n = 0
		for _, mf := range mfs {
			if mf.GetName() != metric {
				continue
			}
			for _, m := range mf.Metric {
				if strings.Contains(m.String(), label) {
					n++
				}
			}
		}
		return n
	}
	for _, tc := range []struct {
		metric, label string
		a, b          int
	}{
		{"hotkeyd_diagnosis", "", 0, 1},
		{"hotkeyd_hot_key", "", 0, 1},
		{"hotkeyd_key_share", `value:"HOT"`, 0, 1},
		{"hotkeyd_key_share", `value:"A1"`, 1, 0},
		{"hotkeyd_partition_keys_distinct", "", 1, 0},
		{"hotkeyd_peak_units_per_second", "", 2, 0},
		{"hotkeyd_keys_omitted", "", 1, 0},
	} {
		if ga, gb := count(regA, tc.metric, tc.label), count(regB, tc.metric, tc.label); ga != tc.a || gb != tc.b {
			t.Errorf("%s %s: %d series on a, %d on b; want %d and %d", tc.metric, tc.label, ga, gb, tc.a, tc.b)
		}
	}
}

package analyze

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/traffic"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func ev(sec int, pk string, class traffic.Class, units float64) traffic.Event {
	return traffic.Event{Table: "orders", PK: pk, Class: class, Units: units, Time: t0.Add(time.Duration(sec) * time.Second)}
}

// record puts events through a recorder (keeping keep keys per class and
// step) and returns the series of the keys named.
func record(t *testing.T, keep int, events []traffic.Event, keys ...report.TopKey) report.TableSeries {
	t.Helper()
	var passed int
	r := newRecorder(traffic.SinkFunc(func(_ context.Context, b []traffic.Event) error { passed += len(b); return nil }), keep, 10)
	if err := r.Put(context.Background(), events); err != nil {
		t.Fatal(err)
	}
	if passed != len(events) {
		t.Fatalf("passed on %d events of %d", passed, len(events))
	}
	s := r.series(report.Report{Tables: []report.TableReport{{Table: "orders", TopKeys: keys}}})
	return s.Tables[0]
}

func sum(p report.Points, step int64) float64 {
	var s float64
	for _, v := range p {
		s += v * float64(step)
	}
	return s
}

func TestRecorderSteps(t *testing.T) {
	for _, c := range []struct {
		name    string
		seconds int // one event of 1 WCU per second over this many seconds
		step    int64
		points  int
	}{
		{"one point", 1, 1, 1},
		{"a minute, second by second", 60, 1, 60},
		{"the most points of one second", MaxPoints, 1, MaxPoints},
		{"one more second doubles the step", MaxPoints + 1, 2, (MaxPoints + 2) / 2},
		{"a day, in steps aligned on Unix time", 86400, 512, 170},
	} {
		t.Run(c.name, func(t *testing.T) {
			var events []traffic.Event
			for s := range c.seconds {
				events = append(events, ev(s, "USER#1", traffic.Write, 1))
			}
			ts := record(t, 4, events, report.TopKey{Key: "USER#1", Class: "write"})
			w := ts.Classes[traffic.Write].UnitsPerSecond
			if ts.Step != c.step || len(w) != c.points {
				t.Errorf("step %d s, %d points; want %d s, %d", ts.Step, len(w), c.step, c.points)
			}
			if ts.Start.After(t0) || ts.Start.Add(time.Duration(int64(len(w))*ts.Step)*time.Second).Before(t0.Add(time.Duration(c.seconds)*time.Second)) {
				t.Errorf("points from %s, %d of %d s: the input is %s to %s", ts.Start, len(w), ts.Step, t0, t0.Add(time.Duration(c.seconds)*time.Second))
			}
			if got := sum(w, ts.Step); got != float64(c.seconds) {
				t.Errorf("writes add up to %g units, want %d", got, c.seconds)
			}
			if got := sum(ts.Keys[0].UnitsPerSecond, ts.Step); got != float64(c.seconds) {
				t.Errorf("USER#1 adds up to %g units, want %d", got, c.seconds)
			}
			if got := sum(ts.Classes[traffic.Read].UnitsPerSecond, ts.Step); got != 0 {
				t.Errorf("reads add up to %g units, want 0", got)
			}
		})
	}
}

func TestRecorderKeepsTheHeaviestKeysOfEachStep(t *testing.T) {
	// Second 0: two heavy keys and many light ones, more than the step
	// keeps; second 1: a few keys. Reads are kept apart from writes.
	events := []traffic.Event{ev(0, "HOT", traffic.Write, 50), ev(0, "WARM", traffic.Write, 20), ev(0, "HOT", traffic.Read, 3)}
	for i := range 20 {
		events = append(events, ev(0, "COLD#"+string(rune('a'+i)), traffic.Write, 1))
	}
	events = append(events, ev(1, "HOT", traffic.Write, 5), ev(1, "COLD#a", traffic.Write, 2))
	ts := record(t, 2, events,
		report.TopKey{Key: "HOT", Class: "write"}, report.TopKey{Key: "WARM", Class: "write"},
		report.TopKey{Key: "COLD#a", Class: "write"}, report.TopKey{Key: "HOT", Class: "read"})
	want := [][]float64{{50, 5}, {20, 0}, {math.NaN(), 2}, {3, 0}}
	for i, k := range ts.Keys {
		for j, v := range k.UnitsPerSecond {
			if w := want[i][j]; v != w && !(math.IsNaN(v) && math.IsNaN(w)) {
				t.Errorf("%s %s second %d: %g, want %g", k.Class, k.Key, j, v, w)
			}
		}
	}
	if w := ts.Classes[traffic.Write].UnitsPerSecond; w[0] != 90 || w[1] != 7 {
		t.Errorf("writes %v, want [90 7]: every unit counts in its class", w)
	}
}

func TestRecorderCountsAsTheStore(t *testing.T) {
	events := []traffic.Event{
		ev(0, "A", traffic.Write, 2),
		ev(2, "A", traffic.Write, 3),
		{Table: "orders", PK: "A", Class: traffic.Write, Units: 4},                                 // no time: the newest second
		{Table: "orders", PK: "A", Class: traffic.Write, Units: 100, Throttled: true, Time: t0},    // a throttled call: no traffic
		{Table: "orders", PK: "A", Class: traffic.NumClasses, Units: 100, Time: t0},                // no class
		{Table: "orders", PK: "A", Class: traffic.Write, Units: math.NaN(), Time: t0},              // no number: 0
		{Table: "orders", Class: traffic.Write, Units: 1, Time: t0.Add(time.Second)},               // no key: the class only
		{Table: "orders", PK: "A", Class: traffic.Write, Units: 1, Time: t0.Add(-2 * time.Second)}, // out of order, earlier
	}
	ts := record(t, 4, events, report.TopKey{Key: "A", Class: "write"})
	if !ts.Start.Equal(t0.Add(-2 * time.Second)) {
		t.Errorf("start %s, want the earliest event's second %s", ts.Start, t0.Add(-2*time.Second))
	}
	wantClass := []float64{1, 0, 2, 1, 7}
	wantKey := []float64{1, 0, 2, 0, 7}
	for i := range wantClass {
		if got := ts.Classes[traffic.Write].UnitsPerSecond[i]; got != wantClass[i] {
			t.Errorf("writes second %d: %g, want %g", i, got, wantClass[i])
		}
		if got := ts.Keys[0].UnitsPerSecond[i]; got != wantKey[i] {
			t.Errorf("A second %d: %g, want %g", i, got, wantKey[i])
		}
	}
}

func TestRecorderBoundsItsTables(t *testing.T) {
	r := newRecorder(traffic.SinkFunc(func(context.Context, []traffic.Event) error { return nil }), 4, 2)
	var batch []traffic.Event
	for _, name := range []string{"a", "b", "c"} {
		batch = append(batch, traffic.Event{Table: name, PK: "k", Class: traffic.Read, Units: 1, Time: t0})
	}
	if err := r.Put(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	s := r.series(report.Report{Tables: []report.TableReport{{Table: "a"}, {Table: "b"}, {Table: "c"}}})
	for i, want := range []int{1, 1, 0} {
		if got := len(s.Tables[i].Classes[traffic.Read].UnitsPerSecond); got != want {
			t.Errorf("table %s: %d points, want %d", s.Tables[i].Table, got, want)
		}
	}
}

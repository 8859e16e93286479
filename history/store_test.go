package history

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// clock is a settable wall clock.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock { c := &clock{}; c.set(t); return c }
func (c *clock) set(t time.Time)  { c.ns.Store(t.UnixNano()) }
func (c *clock) now() time.Time   { return time.Unix(0, c.ns.Load()).UTC() }

// t0 is a minute's start.
var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// writeSecond is one judged second of table "orders": writes of units
// from the keys given, each key's units in the second.
func writeSecond(at time.Time, keys map[string]float64) (sketch.TableSnapshot, report.TableSecond) {
	var total float64
	ks := []report.KeySecond{}
	var top []sketch.KeyStat
	for k, u := range keys {
		total += u
		ks = append(ks, report.KeySecond{Key: k, Units: u})
		top = append(top, sketch.KeyStat{Key: k, Units: u})
	}
	ts := sketch.TableSnapshot{Table: "orders", Start: at.Add(-59 * time.Second), End: at.Add(time.Second), LastSecond: at, DistinctKeys: uint64(len(keys))}
	ts.Classes[traffic.Write] = sketch.ClassStats{Events: uint64(total), Units: total, Top: top}
	sec := report.TableSecond{Table: "orders", At: at, Classes: []report.ClassSecond{{Class: "read"}, {Class: "write", Units: total, Keys: ks}}}
	return ts, sec
}

func evalOf(at time.Time, keys map[string]float64, flags ...report.Flag) Evaluation {
	ts, sec := writeSecond(at, keys)
	return Evaluation{Snapshot: sketch.Snapshot{Tables: []sketch.TableSnapshot{ts}}, Seconds: []report.TableSecond{sec}, Flags: flags}
}

func hotFlag(severity report.Severity, peak float64) report.Flag {
	return report.Flag{Table: "orders", Diagnosis: report.Diagnosis{Cause: report.KindHotKey, Class: "write", Keys: []string{"TENANT#acme"},
		Severity: severity, PeakUnitsPerSecond: peak, Summary: "TENANT#acme takes most writes", Fix: report.Recommendation{Kind: "write_sharding", Text: "shard it"}}}
}

// openStore opens a store in dir on the clock, with a writer running
// until the test ends or stop is called.
func openStore(t *testing.T, dir string, c *clock, reg prometheus.Registerer) (s *Store, stop func()) {
	t.Helper()
	s, err := Open(context.Background(), Options{Dir: dir, Now: c.now, Registerer: reg, Grace: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-done
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(stop)
	return s, stop
}

// TestCellsSurviveRestart: three minutes of a hot key, a stop in the
// middle of the third, and a restart: the 1-minute cells hold each
// minute's units, busiest second and key shares, the 10-minute cell all of
// them, continued across the restart.
func TestCellsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	c := newClock(t0)
	s, stop := openStore(t, dir, c, nil)
	for i := range 150 {
		at := t0.Add(time.Duration(i) * time.Second)
		c.set(at.Add(time.Second))
		hot := 600.0
		if i == 70 {
			hot = 900 // the busiest second
		}
		s.Record(evalOf(at, map[string]float64{"TENANT#acme": hot, "TENANT#other": 400}))
	}
	stop()
	s, _ = openStore(t, dir, c, nil)
	for i := 150; i < 180; i++ {
		at := t0.Add(time.Duration(i) * time.Second)
		c.set(at.Add(time.Second))
		s.Record(evalOf(at, map[string]float64{"TENANT#acme": 600, "TENANT#other": 400}))
	}
	a, err := s.Cells(context.Background(), Query{Table: "orders", Class: "write", From: t0, To: t0.Add(3 * time.Minute), Step: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Series) != 1 || len(a.Series[0].Cells) != 3 {
		t.Fatalf("series %+v: want one of 3 cells", a.Series)
	}
	cells := a.Series[0].Cells
	if got := cells[1].BusiestSecond; got != 1300 {
		t.Errorf("minute 2's busiest second = %v, want 1300", got)
	}
	if k := cells[1].Keys[0]; k.Key != "TENANT#acme" || k.BusiestSecond != 900 || k.Units != 59*600+900 {
		t.Errorf("minute 2's top key = %+v", k)
	}
	if got := cells[2].Units; got != 59*1000 {
		t.Errorf("minute 3 (across the restart, its last second still pending) = %v units, want %v", got, 59*1000)
	}
	if got := cells[0].Keys[0].Share; math.Abs(got-0.6) > 1e-9 {
		t.Errorf("minute 1's top share = %v, want 0.6", got)
	}
	a, err = s.Cells(context.Background(), Query{Table: "orders", Class: "write", From: t0, To: t0.Add(10 * time.Minute), Step: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Series[0].Cells[0].Units; got != 179*1000+300 {
		t.Errorf("the 10-minute cell = %v units, want %v", got, 179*1000+300)
	}
}

// TestIncidents: a diagnosis raised, worsened and cleared is one closed
// incident with its start, highest severity and peak, counted once.
func TestIncidents(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := newClock(t0)
	s, _ := openStore(t, t.TempDir(), c, reg)
	keys := map[string]float64{"TENANT#acme": 600, "TENANT#other": 400}
	for i := range 40 {
		at := t0.Add(time.Duration(i) * time.Second)
		c.set(at.Add(time.Second))
		var flags []report.Flag
		switch {
		case i >= 5 && i < 20:
			flags = append(flags, hotFlag(report.SeverityWarning, 600))
		case i >= 20 && i < 30:
			flags = append(flags, hotFlag(report.SeverityCritical, 950))
		}
		s.Record(evalOf(at, keys, flags...))
	}
	incs, err := s.Incidents(context.Background(), t0, t0.Add(time.Hour), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(incs) != 1 {
		t.Fatalf("incidents %+v, want 1", incs)
	}
	inc := incs[0]
	if want := t0.Add(6 * time.Second); !inc.Start.Equal(want) {
		t.Errorf("start %v, want %v", inc.Start, want)
	}
	if inc.End == nil || !inc.End.Equal(t0.Add(31*time.Second)) {
		t.Errorf("end %v, want %v", inc.End, t0.Add(31*time.Second))
	}
	if inc.Severity != "critical" || inc.Peak != 950 || inc.Keys[0] != "TENANT#acme" || inc.FixKind != "write_sharding" {
		t.Errorf("incident %+v", inc)
	}
	if got := testutil.ToFloat64(s.m.incidents.WithLabelValues("hot_key", "warning")); got != 1 {
		t.Errorf("hotkeyd_incidents_total{hot_key,warning} = %v, want 1", got)
	}
}

// TestOpenIncidentAfterRestart: an incident open at a stop continues when
// its diagnosis is flagged again within the grace; otherwise it is closed
// at its last sighting.
func TestOpenIncidentAfterRestart(t *testing.T) {
	f := func(t *testing.T, raisedAgain bool) {
		dir := t.TempDir()
		c := newClock(t0)
		s, stop := openStore(t, dir, c, nil)
		keys := map[string]float64{"TENANT#acme": 600}
		for i := range 10 {
			at := t0.Add(time.Duration(i) * time.Second)
			c.set(at.Add(time.Second))
			s.Record(evalOf(at, keys, hotFlag(report.SeverityWarning, 600)))
		}
		stop()
		c.set(t0.Add(20 * time.Second))
		s, _ = openStore(t, dir, c, nil)
		for i := 20; i < 60; i++ {
			at := t0.Add(time.Duration(i) * time.Second)
			c.set(at.Add(time.Second))
			var flags []report.Flag
			if raisedAgain && i < 25 {
				flags = append(flags, hotFlag(report.SeverityWarning, 700))
			}
			s.Record(evalOf(at, keys, flags...))
		}
		incs, err := s.Incidents(context.Background(), t0, t0.Add(time.Hour), "orders")
		if err != nil {
			t.Fatal(err)
		}
		if len(incs) != 1 || incs[0].End == nil || !incs[0].Start.Equal(t0.Add(time.Second)) {
			t.Fatalf("incidents %+v: want one closed, from %v", incs, t0.Add(time.Second))
		}
		want := t0.Add(10 * time.Second) // last sighting
		if raisedAgain {
			want = t0.Add(26 * time.Second)
		}
		if !incs[0].End.Equal(want) {
			t.Errorf("end %v, want %v", incs[0].End, want)
		}
	}
	t.Run("raised again", func(t *testing.T) { f(t, true) })
	t.Run("not raised again", func(t *testing.T) { f(t, false) })
}

// TestForeignFileMovedAside: a file that is not a history database is
// moved aside and a fresh one started.
func TestForeignFileMovedAside(t *testing.T) {
	for name, content := range map[string][]byte{
		"garbage":   []byte(strings.Repeat("not a database\n", 500)),
		"truncated": append([]byte("SQLite format 3\x00"), make([]byte, 100)...),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
			s, _ := openStore(t, dir, newClock(t0), nil)
			if err := s.Health(); err != nil {
				t.Fatalf("health: %v", err)
			}
			aside, _ := filepath.Glob(path + ".corrupt-*")
			if len(aside) != 1 {
				t.Fatalf("moved aside: %v", aside)
			}
			if b, _ := os.ReadFile(aside[0]); string(b) != string(content) {
				t.Error("the file moved aside is not the one found")
			}
		})
	}
}

// TestUnwritableRunsWithout: a path that cannot be a directory leaves a
// store that records nothing and says why.
func TestUnwritableRunsWithout(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	s, _ := openStore(t, filepath.Join(file, "data"), newClock(t0), reg)
	if s.Health() == nil {
		t.Fatal("health says history is recorded")
	}
	s.Record(evalOf(t0, map[string]float64{"k": 1}))
	if _, err := s.Cells(context.Background(), Query{Table: "orders", From: t0, To: t0.Add(time.Hour)}); err == nil {
		t.Error("Cells answered without a database")
	}
	if got := testutil.ToFloat64(s.m.up); got != 0 {
		t.Errorf("hotkeyd_history_up = %v", got)
	}
}

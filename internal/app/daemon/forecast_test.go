package daemon

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/hotkeyd/hotkeyd/detect"
	"github.com/hotkeyd/hotkeyd/detect/forecast"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/history"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// forecastEnd is the end of the history the forecast tests write: an
// hour's start.
var forecastEnd = time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)

// hourly is what the forecast tests write in each hour before
// forecastEnd: TENANT#acme grows by 150 WCU/s a day to 475 with a daily
// cycle, TENANT#flat only cycles, TENANT#rare writes in even hours alone.
func hourly(at time.Time) map[string]float64 {
	hours := at.Sub(forecastEnd).Hours()
	cyc := 1 - 0.5*(0.5-0.5*math.Cos(2*math.Pi*hours/24))
	keys := map[string]float64{"TENANT#acme": (475 + 150*hours/24) * cyc, "TENANT#flat": 300 * cyc}
	if at.Hour()%2 == 0 {
		keys["TENANT#rare"] = 50
	}
	return keys
}

// writeSecond records one judged second of writes of table "orders".
func writeSecond(st *history.Store, at time.Time, keys map[string]float64) {
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
	st.Record(history.Evaluation{Snapshot: sketch.Snapshot{Tables: []sketch.TableSnapshot{ts}}, Seconds: []report.TableSecond{sec}})
}

// writeHistory writes three days of hourly() into a history store in a
// temp dir, in accelerated event time (a few seconds an hour), then half
// an hour more in which TENANT#acme is quiet; it returns a reader of it.
func writeHistory(t *testing.T) *history.Reader {
	t.Helper()
	dir := t.TempDir()
	var now atomic.Int64 // the writer reads the clock too
	st, err := history.Open(context.Background(), history.Options{Dir: dir, Grace: 30 * time.Second, Now: func() time.Time { return time.Unix(now.Load(), 0).UTC() }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { st.Run(ctx); close(done) }()
	second := func(at time.Time, keys map[string]float64) {
		now.Store(at.Add(time.Second).Unix())
		writeSecond(st, at, keys)
	}
	for at := forecastEnd.Add(-72 * time.Hour); at.Before(forecastEnd); at = at.Add(time.Hour) {
		second(at.Add(10*time.Second), hourly(at))
		second(at.Add(11*time.Second), map[string]float64{"TENANT#flat": 1}) // folds the one before
	}
	for i := range 30 {
		second(forecastEnd.Add(time.Duration(i)*time.Minute), map[string]float64{"TENANT#acme": 1, "TENANT#flat": 1})
	}
	cancel()
	<-done
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := history.OpenReader(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// forecastReport is a report at half an hour past forecastEnd that
// judges the three keys of table "orders".
func forecastReport() report.Report {
	return report.Report{End: forecastEnd.Add(30 * time.Minute), Tables: []report.TableReport{{Table: "orders", TopKeys: []report.TopKey{
		{Key: "TENANT#acme", Class: "write"}, {Key: "TENANT#flat", Class: "write"}, {Key: "TENANT#rare", Class: "write"},
	}}}}
}

// TestHistorySeries: the adapter reads a key's busiest second of each
// hourly cell of a real history store, one point per cell that holds the
// key among its top keys, none for the others and none for the hour under
// way.
func TestHistorySeries(t *testing.T) {
	r := writeHistory(t)
	cache := forecast.NewCache()
	if err := cache.Refresh(context.Background(), newHistorySeries(r), forecastQueries(forecastReport())); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"TENANT#acme", "TENANT#flat", "TENANT#rare"} {
		pts := cache.Points("orders", "", "write", key)
		want := 0
		for at := forecastEnd.Add(-72 * time.Hour); at.Before(forecastEnd); at = at.Add(time.Hour) {
			if u, ok := hourly(at)[key]; ok {
				want++
				if !hasPoint(pts, at, u) {
					t.Errorf("%s: no point of %.2f at %s", key, u, at)
				}
			}
		}
		if len(pts) != want {
			t.Errorf("%s: %d points, want %d (one per cell that holds it, none for the hour under way)", key, len(pts), want)
		}
	}
}

// hasPoint says whether pts holds units u at at (to the history's
// hundredth).
func hasPoint(pts []forecast.Point, at time.Time, u float64) bool {
	for _, p := range pts {
		if p.Time.Equal(at) && math.Abs(p.Units-u) <= 0.01 {
			return true
		}
	}
	return false
}

// TestTrackerForecastsFromHistory: a Tracker fed the history's series
// through the cache raises the forecast for the growing key, at warning,
// and none for the flat one.
func TestTrackerForecastsFromHistory(t *testing.T) {
	r := writeHistory(t)
	cache := forecast.NewCache()
	if err := cache.Refresh(context.Background(), newHistorySeries(r), forecastQueries(forecastReport())); err != nil {
		t.Fatal(err)
	}
	s := detect.DefaultSettings()
	s.Hold = 0
	tr := detect.NewTracker(s)
	tr.SetForecastSeries(detect.CachedSeries(cache))
	ts := sketch.TableSnapshot{Table: "orders", Start: forecastEnd.Add(-60 * time.Second), End: forecastEnd, Events: 60000, DistinctKeys: 5000, Version: 1, LastSecond: forecastEnd.Add(-time.Second)}
	ts.Classes[traffic.Write] = sketch.ClassStats{Events: 60000, Units: 60000, PeakSecondUnits: 1500, Top: []sketch.KeyStat{
		{Key: "TENANT#acme", Units: 20000, Events: 20000, PeakUnitsPerSecond: 475},
		{Key: "TENANT#flat", Units: 15000, Events: 15000, PeakUnitsPerSecond: 300},
	}}
	rep, changes := tr.Evaluate(sketch.Snapshot{Start: ts.Start, End: forecastEnd, Tables: []sketch.TableSnapshot{ts}})
	fs := map[string]report.Forecast{}
	for _, f := range rep.Tables[0].Forecasts {
		fs[f.Key] = f
	}
	if acme := fs["TENANT#acme"]; acme.ReachesCeilingAt == nil || math.Abs(acme.ReachesCeilingAt.Sub(forecastEnd).Hours()-84) > 0.25*84 {
		t.Errorf("TENANT#acme reaches the ceiling at %v (%s), want about 84 h after %s", acme.ReachesCeilingAt, acme.Note, forecastEnd)
	}
	if flat := fs["TENANT#flat"]; flat.ReachesCeilingAt != nil || flat.Days < 2.9 {
		t.Errorf("TENANT#flat: reaches the ceiling at %v over %v days, want never over 3", flat.ReachesCeilingAt, flat.Days)
	}
	var raised []string
	for _, c := range changes {
		if c.Diagnosis.Cause == report.KindForecast {
			raised = append(raised, c.Diagnosis.Key()+" at "+string(c.Diagnosis.Severity))
		}
	}
	if len(raised) != 1 || raised[0] != "TENANT#acme at "+string(report.SeverityWarning) {
		t.Errorf("forecasts raised %v, want TENANT#acme's alone, at warning", raised)
	}
}

// TestRefreshForecasts: the refresher reads the series of the published
// report's keys into the cache as soon as it starts, and stops with its
// context.
func TestRefreshForecasts(t *testing.T) {
	r := writeHistory(t)
	d := &Daemon{log: zap.NewNop(), live: export.NewLive(nil), forecasts: forecast.NewCache()}
	d.live.Update(forecastReport())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.refreshForecasts(ctx, r); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(d.forecasts.Points("orders", "", "write", "TENANT#acme")) != 72 {
		if time.Now().After(deadline) {
			t.Fatalf("the cache holds %d points of TENANT#acme after 10 s, want 72", len(d.forecasts.Points("orders", "", "write", "TENANT#acme")))
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
}

// TestQueryMemo: the forecasts' queries are made again only when a
// table's report changes (its revision), the report's hour turns, or the
// revisions are unknown; an idle daemon's report, published anew each
// tick with the same revisions, reuses them.
func TestQueryMemo(t *testing.T) {
	base := forecastReport()
	moved := forecastReport()
	moved.Tables[0].TopKeys = moved.Tables[0].TopKeys[:1]
	later := forecastReport()
	later.End = later.End.Add(time.Hour)
	other := forecastReport()
	other.Tables[0].Table = "invoices"
	for _, tc := range []struct {
		name        string
		first       []uint64 // the first report's revisions: {7} if nil
		next        export.State
		wantChanged bool
		wantKeys    int
	}{
		{"same revisions", nil, export.State{Report: base, Revisions: []uint64{7}}, false, 3},
		{"same revisions, later in the hour", nil, export.State{Report: func() report.Report { r := forecastReport(); r.End = r.End.Add(time.Minute); return r }(), Revisions: []uint64{7}}, false, 3},
		{"a table's revision changed", nil, export.State{Report: moved, Revisions: []uint64{8}}, true, 1},
		{"the hour turned", nil, export.State{Report: later, Revisions: []uint64{7}}, true, 3},
		{"another table at the same revision", nil, export.State{Report: other, Revisions: []uint64{7}}, true, 3},
		{"revisions unknown", nil, export.State{Report: base}, true, 3},
		{"revision 0: unknown", nil, export.State{Report: base, Revisions: []uint64{0}}, true, 3},
		{"revision 0 twice: unknown both times", []uint64{0}, export.State{Report: base, Revisions: []uint64{0}}, true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m queryMemo
			first := tc.first
			if first == nil {
				first = []uint64{7}
			}
			if _, changed := m.queries(&export.State{Report: base, Revisions: first}); !changed {
				t.Fatal("the first report's queries were not made")
			}
			qs, changed := m.queries(&tc.next)
			if changed != tc.wantChanged {
				t.Errorf("made anew: %v, want %v", changed, tc.wantChanged)
			}
			if len(qs) != tc.wantKeys {
				t.Errorf("%d queries, want %d", len(qs), tc.wantKeys)
			}
			if want := forecastQueries(tc.next.Report); len(qs) != len(want) || len(qs) > 0 && qs[0] != want[0] {
				t.Errorf("queries %v, want those of the report, %v", qs, want)
			}
		})
	}
}

package detect

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/detect/forecast"
	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// TestTrackerForecasts: the live path. Three days of a key's hourly
// busiest seconds are written in accelerated event time into an in-memory
// history (forecast.Memory: the key grows by 150 WCU/s a day to 475, with
// a daily cycle; another key only cycles), a forecast.Cache is refreshed
// from it as the wiring does, and the Tracker judges a window at the
// history's end: the growing key gets its headroom, its time to the
// ceiling and a forecast warning, raised as a change; the cycling key
// gets its headroom and no time.
func TestTrackerForecasts(t *testing.T) {
	end := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	mem := forecast.NewMemory()
	for at := end.Add(-72 * time.Hour); at.Before(end); at = at.Add(time.Hour) {
		days := at.Sub(end).Hours() / 24
		cyc := 1 - 0.5*(0.5-0.5*math.Cos(2*math.Pi*at.Sub(end).Hours()/24))
		mem.Add("orders", "", "write", "TENANT#acme", at, (475+150*days)*cyc)
		mem.Add("orders", "", "write", "TENANT#flat", at, 300*cyc)
	}
	cache := forecast.NewCache()
	var qs []forecast.Query
	for _, key := range []string{"TENANT#acme", "TENANT#flat"} {
		qs = append(qs, forecast.Query{Table: "orders", Class: "write", Key: key, From: end.Add(-28 * 24 * time.Hour), To: end})
	}
	if err := cache.Refresh(context.Background(), mem, qs); err != nil {
		t.Fatal(err)
	}
	s := DefaultSettings()
	s.Hold = 0
	tr := NewTracker(s)
	tr.SetForecastSeries(CachedSeries(cache))

	ts := sketch.TableSnapshot{Table: "orders", Start: end.Add(-60 * time.Second), End: end, Events: 60000, DistinctKeys: 5000, Version: 1, LastSecond: end.Add(-time.Second)}
	ts.Classes[traffic.Write] = sketch.ClassStats{Events: 60000, Units: 60000, PeakSecondUnits: 1500, Top: []sketch.KeyStat{
		{Key: "TENANT#acme", Units: 20000, Events: 20000, PeakUnitsPerSecond: 475},
		{Key: "TENANT#flat", Units: 15000, Events: 15000, PeakUnitsPerSecond: 300},
	}}
	rep, changes := tr.Evaluate(sketch.Snapshot{Start: ts.Start, End: end, Tables: []sketch.TableSnapshot{ts}})
	fs := map[string]report.Forecast{}
	for _, f := range rep.Tables[0].Forecasts {
		fs[f.Key] = f
	}
	acme, flat := fs["TENANT#acme"], fs["TENANT#flat"]
	if math.Abs(acme.Headroom-1000.0/475) > 0.01 || math.Abs(flat.Headroom-1000.0/300) > 0.01 {
		t.Errorf("headroom %v and %v, want %.3f and %.3f", acme.Headroom, flat.Headroom, 1000.0/475, 1000.0/300)
	}
	if acme.ReachesCeilingAt == nil || math.Abs(acme.ReachesCeilingAt.Sub(end).Hours()-84) > 0.25*84 {
		t.Errorf("TENANT#acme reaches the ceiling at %v (%s), want about 84 h after %s", acme.ReachesCeilingAt, acme.Note, end)
	}
	if flat.ReachesCeilingAt != nil {
		t.Errorf("TENANT#flat does not grow, yet reaches the ceiling at %v", flat.ReachesCeilingAt)
	}
	raised := false
	for _, c := range changes {
		if c.Diagnosis.Cause == report.KindForecast {
			if c.Diagnosis.Key() != "TENANT#acme" || c.Diagnosis.Severity != report.SeverityWarning {
				t.Errorf("forecast raised on %s at %s, want TENANT#acme at warning", c.Diagnosis.Key(), c.Diagnosis.Severity)
			}
			raised = true
		}
	}
	if !raised {
		t.Errorf("no forecast diagnosis raised: %+v", rep.Tables[0].Diagnoses)
	}
}

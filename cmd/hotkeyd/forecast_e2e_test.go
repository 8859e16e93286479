package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/history"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
	"github.com/hotkeyd/hotkeyd/sketch"
	"github.com/hotkeyd/hotkeyd/traffic"
)

// The forecasts' end-to-end tests: the daemon forecasts from a history
// database written beforehand in accelerated event time, the live page and
// the HTML report draw the forecast lines.

// growing and flat are the keys the forecast tests plant: growing gains
// 150 WCU/s a day, 475 WCU/s at the top of the daily cycle at the
// history's end, so it reaches one partition's 1000 WCU/s 3.5 days
// (84 h) after it; flat only cycles.
const (
	growingKey = "TENANT#acme"
	flatKey    = "TENANT#flat"
	growReach  = 84 * time.Hour
)

// forecastCycle is a daily cycle of depth a: 1 at the top (hours after
// end a multiple of 24), 1-a at the bottom.
func forecastCycle(hours, a float64) float64 {
	return 1 - a*(0.5-0.5*math.Cos(2*math.Pi*hours/24))
}

// plantedHour is what the planted history holds for the hour at, before
// end: each key's busiest second.
func plantedHour(at, end time.Time) map[string]float64 {
	h := at.Sub(end).Hours()
	return map[string]float64{
		growingKey: (475 + 150*h/24) * forecastCycle(h, 0.5),
		flatKey:    400 * forecastCycle(h, 0.8),
		"USER#1":   20,
	}
}

// plantHistory writes three days of plantedHour into a history database
// in dir, an hour a few seconds of event time apart, through the
// history's own writer (the store's clock is the event time written).
func plantHistory(t *testing.T, dir string, end time.Time) {
	t.Helper()
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
		recordSecond(st, at, keys)
	}
	for at := end.Add(-72 * time.Hour); at.Before(end); at = at.Add(time.Hour) {
		second(at.Add(10*time.Second), plantedHour(at, end))
		second(at.Add(11*time.Second), map[string]float64{"USER#1": 1}) // folds the one before
	}
	cancel()
	<-done
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// recordSecond records one judged second of writes of table "orders".
func recordSecond(st *history.Store, at time.Time, keys map[string]float64) {
	var total float64
	var ks []report.KeySecond
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

// forecastDaemon plants the history in a fresh directory, starts the
// daemon on it with HTTP ingest, and posts today's traffic of both keys
// (and a few others) until the test ends. It returns the daemon and the
// history's end (the start of the hour under way).
func forecastDaemon(t *testing.T) (*testenv.Hotkeyd, time.Time) {
	t.Helper()
	end := time.Now().UTC().Truncate(time.Hour)
	dir := t.TempDir()
	plantHistory(t, dir, end)
	cfg := filepath.Join(t.TempDir(), "hotkeyd.yaml")
	if err := os.WriteFile(cfg, []byte("window: 20s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "run", "--config.file", cfg, "--web.enable-ingest",
		"--web.ingest.rate-limit=0", "--history.path", dir)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- postTraffic(ctx, h.URL) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("posting the traffic: %v", err)
		}
	})
	return h, end
}

// postTraffic posts, every 100 ms until ctx is done, 48 WCU of the
// growing key, 40 of the flat one and 8 of others, each line at its
// time: the keys' busiest seconds go on from the history's (480 and 400
// WCU/s, the top of their cycles).
func postTraffic(ctx context.Context, base string) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return nil
		case at := <-tick.C:
			var body bytes.Buffer
			ts := at.UTC().Format("2006-01-02T15:04:05.000Z")
			line := func(key string, units int) {
				fmt.Fprintf(&body, `{"ts":%q,"table":"orders","pk":%q,"op":"PutItem","units":%d}`+"\n", ts, key, units)
			}
			line(growingKey, 6)
			line(flatKey, 3)
			for j := range 8 {
				line(fmt.Sprintf("USER#%d", (i*8+j)%40), 1)
			}
			resp, err := http.Post(base+"/api/v1/events", "application/x-ndjson", &body)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("POST /api/v1/events: %s", resp.Status)
			}
		}
	}
}

// waitForecast waits until the daemon's report of orders carries a
// forecast of key with a trend and that forecast's diagnosis (held
// until it stays), and returns the report.
func waitForecast(t *testing.T, h *testenv.Hotkeyd, key string, timeout time.Duration) report.Report {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		code, body := h.Get(t, "/api/v1/hotkeys?table=orders")
		var rep report.Report
		if code == http.StatusOK {
			if err := json.Unmarshal(body, &rep); err != nil {
				t.Fatalf("/api/v1/hotkeys: %v: %s", err, body)
			}
		}
		if f, ok := forecastsOf(rep)[key]; ok && f.TrendPerDay != nil && len(forecastDiagnoses(rep)) > 0 {
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("no forecast of %s with a trend and a diagnosis after %s: %d %s", key, timeout, code, body)
		}
		time.Sleep(250 * time.Millisecond) // polling the API for a condition
	}
}

// forecastsOf returns the report's forecasts by key.
func forecastsOf(rep report.Report) map[string]report.Forecast {
	fs := map[string]report.Forecast{}
	for _, tr := range rep.Tables {
		for _, f := range tr.Forecasts {
			fs[f.Key] = f
		}
	}
	return fs
}

// forecastDiagnoses returns the severity of the report's forecast
// diagnoses by key.
func forecastDiagnoses(rep report.Report) map[string]report.Severity {
	got := map[string]report.Severity{}
	for _, tr := range rep.Tables {
		for _, d := range tr.Diagnoses {
			if d.Cause == report.KindForecast {
				got[d.Key()] = d.Severity
			}
		}
	}
	return got
}

// TestDaemonForecastsFromHistory is the forecasts issue's live half: the
// daemon started on a history database holding three days of hourly
// cells, written in accelerated event time, in which one key grows by
// 150 WCU/s a day and another only cycles daily, answers the growing
// key's time to the ceiling within 10 % of the truth (84 h after the
// history's end), at warning, in /api/v1/hotkeys and in
// hotkeyd_key_ceiling_eta_seconds, and none for the flat key. The live
// page then draws the growing key's forecast line from those fields
// (checkForecastLine) and none for the flat key.
func TestDaemonForecastsFromHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs hotkeyd and a browser")
	}
	h, end := forecastDaemon(t)
	rep := waitForecast(t, h, growingKey, settle)
	fs := forecastsOf(rep)
	grow, flat := fs[growingKey], fs[flatKey]
	if grow.ReachesCeilingAt == nil {
		t.Fatalf("%s: no time to the ceiling: %+v", growingKey, grow)
	}
	if off := grow.ReachesCeilingAt.Sub(end.Add(growReach)); math.Abs(off.Hours()) > 0.10*growReach.Hours() {
		t.Errorf("%s reaches the ceiling at %s, %s off the truth %s", growingKey, grow.ReachesCeilingAt, off, end.Add(growReach))
	}
	if grow.Growth != "linear" || grow.Confidence < 0.9 || grow.Days < 2.9 {
		t.Errorf("%s: %s growth, R² %.3f over %.2f days: want linear, at least 0.9, over 3 days", growingKey, grow.Growth, grow.Confidence, grow.Days)
	}
	if _, ok := fs[flatKey]; !ok || flat.ReachesCeilingAt != nil || flat.TrendPerDay != nil {
		t.Errorf("%s (flat, cycling): %+v: want a forecast with no trend and no time to the ceiling", flatKey, flat)
	}
	if got := forecastDiagnoses(rep); len(got) != 1 || got[growingKey] != report.SeverityWarning {
		t.Errorf("forecast diagnoses %v: want %s's alone, at warning (within the 7-day horizon at good confidence)", got, growingKey)
	}
	checkForecastMetrics(t, h)

	tab := testenv.NewTab(t)
	tab.Run(t, settle, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(h.URL+"/#/table/orders"))
	checkForecastLine(t, tab, grow, fs, 60)
	tab.Screenshot(t, "forecast-live.png")
	if errs := tab.Errors(); len(errs) > 0 {
		t.Errorf("errors in the page: %q", errs)
	}
}

// checkForecastMetrics: the growing key has a time to the ceiling in the
// metrics, the flat one none.
func checkForecastMetrics(t *testing.T, h *testenv.Hotkeyd) {
	t.Helper()
	_, body := h.Get(t, "/metrics")
	var grow, flat bool
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "hotkeyd_key_ceiling_eta_seconds{") {
			grow = grow || strings.Contains(l, `key="`+growingKey+`"`)
			flat = flat || strings.Contains(l, `key="`+flatKey+`"`)
		}
	}
	if !grow || flat {
		t.Errorf("hotkeyd_key_ceiling_eta_seconds: %s's series %v, %s's %v: want the growing key's alone", growingKey, grow, flatKey, flat)
	}
}

// forecastLine is what the page bound to a forecast chart
// (forecast.js's model), with the forecast it was drawn from.
type forecastLine struct {
	Key, Class                   string
	Limit, At, Stop              float64
	Reaches                      bool
	X                            []float64
	Recorded, Projected, Ceiling []*float64
	RecordedPoints               int
	RecordedStep                 float64
	Forecast                     report.Forecast
	Caption                      string
	Drawn                        bool
	Figures                      []string
}

// checkForecastLine waits for the forecast line of want's key on the
// table's page and checks it against the forecast it was drawn from (the
// page's report is a later one than want's, live): that forecast is
// want's within an hour; the projection starts at the fitted busiest
// second at fitted_at, follows the growth's shape and meets the ceiling
// at reaches_ceiling_at, or where there is none follows the trend to the
// horizon; the ceiling is a line at the partition's limit;
// the key's recorded busiest seconds are drawn (at least minRecorded);
// the caption says the trend and its confidence; and the keys with a
// line are those with a trend in all.
func checkForecastLine(t *testing.T, tab *testenv.Tab, want report.Forecast, all map[string]report.Forecast, minRecorded int) {
	const horizon = 7 * 24 * time.Hour // forecast_horizon's default
	t.Helper()
	sel, _ := json.Marshal(`figure.forecast[data-key="` + want.Key + `"]`)
	tab.WaitFor(t, fmt.Sprintf(`(() => { const c = document.querySelector(%s + ' [data-chart]');
		return c && c.querySelector('.u-over') && c.hotkeydForecast && c.hotkeydForecast.recordedPoints >= %d; })()`, sel, minRecorded),
		settle, "the forecast line of "+want.Key+" with its recorded busiest seconds")
	var got forecastLine
	tab.Eval(t, fmt.Sprintf(`(() => {
		const fig = document.querySelector(%s), m = fig.querySelector('[data-chart]').hotkeydForecast;
		return {Key: m.key, Class: m.class, Limit: m.limit, At: m.at, Stop: m.stop, Reaches: m.reaches, X: m.x,
			Recorded: m.recorded, Projected: m.projected, Ceiling: m.ceiling, RecordedPoints: m.recordedPoints, RecordedStep: m.recordedStep, Forecast: m.forecast,
			Caption: fig.querySelector('figcaption').innerText, Drawn: !!fig.querySelector('canvas'),
			Figures: [...document.querySelectorAll('figure.forecast')].map(f => f.dataset.key)};
	})()`, sel), &got)
	f := got.Forecast
	if !got.Drawn || got.Key != want.Key || f.Key != want.Key || got.Class != want.Class || got.Limit != want.Limit {
		t.Fatalf("the forecast chart of %s: %+v", want.Key, got)
	}
	if f.FittedAt == nil || f.FittedPeakUnitsPerSecond == nil || f.TrendPerDay == nil || (f.ReachesCeilingAt == nil) != (want.ReachesCeilingAt == nil) ||
		want.ReachesCeilingAt != nil && math.Abs(f.ReachesCeilingAt.Sub(*want.ReachesCeilingAt).Hours()) > 1 {
		t.Fatalf("the page drew %s's forecast %+v, not the one the API gave (%+v)", want.Key, f, want)
	}
	at := float64(f.FittedAt.UnixMilli()) / 1e3
	stop, words := at+horizon.Seconds(), "does not reach one partition's 1,000 WCU/s within 7 days"
	if f.ReachesCeilingAt != nil {
		stop, words = float64(f.ReachesCeilingAt.Unix()), "reaches one partition's 1,000 WCU/s around"
	}
	if math.Abs(got.At-at) > 1e-3 || got.Reaches != (f.ReachesCeilingAt != nil) || math.Abs(got.Stop-stop) > 1e-3 {
		t.Errorf("the line runs from %v to %v (reaches %v): want from fitted_at %s to %v (reaches_ceiling_at %v, horizon %s)", got.At, got.Stop, got.Reaches, f.FittedAt, stop, f.ReachesCeilingAt, horizon)
	}
	checkProjection(t, got, f)
	for _, w := range []string{fmt.Sprintf("confidence R² %.2f", f.Confidence), words, f.Growth} {
		if !strings.Contains(got.Caption, w) {
			t.Errorf("caption %q does not say %q", got.Caption, w)
		}
	}
	var trends []string
	for k, o := range all {
		if o.TrendPerDay != nil {
			trends = append(trends, k)
		}
	}
	if len(got.Figures) != len(trends) {
		t.Errorf("forecast lines of %q, want those of the keys with a trend: %q", got.Figures, trends)
	}
	for _, k := range got.Figures {
		if o, ok := all[k]; !ok || o.TrendPerDay == nil {
			t.Errorf("a forecast line of %s, whose forecast has no trend (%+v)", k, o)
		}
	}
}

// checkProjection: every point of the line's projection is the growth's
// shape between the fitted busiest second at fitted_at and the ceiling
// at reaches_ceiling_at, or without one the trend from fitted_at
// (trend_per_day linear, growth_per_day compounding), a point every 6
// hours; the ceiling is the limit at every x; the recorded points are of
// cells over by fitted_at.
func checkProjection(t *testing.T, got forecastLine, f report.Forecast) {
	t.Helper()
	p0, span := *f.FittedPeakUnitsPerSecond, got.Stop-got.At
	projected := 0
	for i, x := range got.X {
		if got.Ceiling[i] == nil || *got.Ceiling[i] != f.Limit {
			t.Fatalf("the ceiling at %v is %v, want %v everywhere", x, got.Ceiling[i], f.Limit)
		}
		if got.Recorded[i] != nil && (got.RecordedStep <= 0 || x+got.RecordedStep > got.At) {
			t.Errorf("a recorded point at %v of a cell of %v s not over by fitted_at %v", x, got.RecordedStep, got.At)
		}
		if got.Projected[i] == nil {
			if x >= got.At {
				t.Errorf("no projection at %v, after fitted_at", x)
			}
			continue
		}
		projected++
		want := projectedAt(f, x-got.At, span)
		if math.Abs(*got.Projected[i]-want) > 1e-6*f.Limit {
			t.Errorf("projected %.3f at %v, want %.3f (%s from %.3f at fitted_at)", *got.Projected[i], x, want, f.Growth, p0)
		}
	}
	if days := span / 86400; projected < int(days*4) {
		t.Errorf("%d projected points over %.1f days, want one every 6 hours", projected, days)
	}
}

// projectedAt is the busiest second forecast f projects d seconds after
// fitted_at, the line being span seconds long.
func projectedAt(f report.Forecast, d, span float64) float64 {
	p0 := *f.FittedPeakUnitsPerSecond
	switch {
	case f.ReachesCeilingAt != nil && f.Growth == "compounding":
		return p0 * math.Pow(f.Limit/p0, d/span)
	case f.ReachesCeilingAt != nil:
		return p0 + (f.Limit-p0)*d/span
	case f.Growth == "compounding":
		return p0 * math.Pow(1+*f.GrowthPerDay, d/86400)
	}
	return max(0, p0+*f.TrendPerDay*d/86400)
}

// TestAnalyzeHTMLReportForecastLine: two and a half days of writes
// through `hotkeyd analyze --format html`, in which one key grows by 150
// WCU/s a day and one only cycles daily (the file ends at the top of its
// cycle), and one grows too slowly to reach its ceiling within four spans:
// in Chromium the report draws the growing keys' forecast lines from their
// forecasts' fields (to the ceiling; the slow one to the horizon), with
// their recorded busiest seconds from the report's cells, and none for the
// flat key.
func TestAnalyzeHTMLReportForecastLine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	end := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	input := filepath.Join(t.TempDir(), "growth.jsonl")
	if err := os.WriteFile(input, growthFile(end, 60*time.Hour, "GROW#linear"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, page, stderr := runAnalyzeCmd(t, "", "analyze", "--format", "html", input)
	if code != 0 {
		t.Fatalf("analyze --format html: exit %d: %s", code, stderr)
	}
	path := filepath.Join(testenv.ArtifactDir(t), "report.html")
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	tab := testenv.NewTab(t)
	tab.Run(t, 20*time.Second, chromedp.EmulateViewport(1280, 900), chromedp.Navigate("file://"+path+"#/table/orders"))
	tab.WaitFor(t, `document.getElementById('app').dataset.status === 'report' && document.querySelector('[data-id="forecasts"]')`, settle, "the report's forecasts")
	var fs []report.Forecast
	tab.Eval(t, `JSON.parse(document.getElementById('hotkeyd-data').textContent).report.tables.find(t => t.table === 'orders').forecasts`, &fs)
	all := map[string]report.Forecast{}
	for _, f := range fs {
		all[f.Key] = f
	}
	grow, ok := all["GROW#linear"]
	if !ok || grow.ReachesCeilingAt == nil {
		t.Fatalf("GROW#linear: no time to the ceiling in %+v", fs)
	}
	if off := grow.ReachesCeilingAt.Sub(end.Add(growReach)); math.Abs(off.Hours()) > 0.15*growReach.Hours() {
		t.Errorf("GROW#linear reaches the ceiling at %s, %s off the truth %s", grow.ReachesCeilingAt, off, end.Add(growReach))
	}
	if flat := all["DAILY#flat"]; flat.ReachesCeilingAt != nil {
		t.Errorf("DAILY#flat reaches the ceiling at %s: it does not grow", flat.ReachesCeilingAt)
	}
	checkForecastLine(t, tab, grow, all, 40)
	tab.Screenshot(t, "forecast-report.png")
	slow, ok := all["GROW#slow"]
	if !ok || slow.TrendPerDay == nil || slow.ReachesCeilingAt != nil {
		t.Fatalf("GROW#slow: %+v: want a trend that does not reach the ceiling within 4 spans", slow)
	}
	checkForecastLine(t, tab, slow, all, 40)
	if errs := tab.Errors(); len(errs) > 0 {
		t.Errorf("errors in the page: %q", errs)
	}
}

// growthFile is span of writes of table orders up to end: every 10
// minutes one second of each key, growing (GROW#linear) at 475 WCU/s at end gaining
// 150 a day, GROW#slow at 200 gaining 25 (32 days from the ceiling: past
// four spans), DAILY#flat at 400 with a deep daily cycle, all at the top
// of their cycle at end, with 2 % of noise; 20 other keys write 5 WCU
// each then. A line carries at most 100 units (a PutItem of 100 KB).
func growthFile(end time.Time, span time.Duration, growing string) []byte {
	r := rand.New(rand.NewPCG(39, 2))
	var b bytes.Buffer
	write := func(at time.Time, key string, units float64) {
		for units > 0 {
			u := min(units, 100)
			fmt.Fprintf(&b, `{"ts":%q,"table":"orders","pk":%q,"op":"PutItem","units":%.2f}`+"\n", at.Format(time.RFC3339), key, u)
			units -= u
		}
	}
	for at := end.Add(-span); !at.After(end); at = at.Add(10 * time.Minute) {
		h := at.Sub(end).Hours()
		write(at, growing, (475+150*h/24)*forecastCycle(h, 0.5)*(1+0.02*r.NormFloat64()))
		write(at.Add(time.Second), "DAILY#flat", 400*forecastCycle(h, 0.8)*(1+0.02*r.NormFloat64()))
		write(at.Add(3*time.Second), "GROW#slow", (200+25*h/24)*forecastCycle(h, 0.3)*(1+0.02*r.NormFloat64()))
		for i := range 20 {
			write(at.Add(2*time.Second), fmt.Sprintf("USER#%d", i), 5)
		}
	}
	return b.Bytes()
}

// TestHTMLReportEscapesKeysInForecastLine: the forecast line of a
// growing key holding markup names it as text: its figure and caption
// read it back as it is, no element is made of it and no script runs.
func TestHTMLReportEscapesKeysInForecastLine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a browser")
	}
	key := hostileKeys[0]
	input := filepath.Join(t.TempDir(), "hostile-growth.jsonl")
	if err := os.WriteFile(input, growthFile(time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC), 60*time.Hour, key), 0o644); err != nil {
		t.Fatal(err)
	}
	code, page, stderr := runAnalyzeCmd(t, "", "analyze", "--format", "html", input)
	if code != 0 {
		t.Fatalf("analyze --format html: exit %d: %s", code, stderr)
	}
	path := filepath.Join(testenv.ArtifactDir(t), "report.html")
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	tab := testenv.NewTab(t)
	tab.Run(t, settle, chromedp.Navigate("file://"+path+"#/table/orders"))
	tab.WaitFor(t, `document.querySelector('figure.forecast [data-chart] .u-over')`, settle, "the report's forecast line")
	var got struct{ Keys, Captions []string }
	tab.Eval(t, `({Keys: [...document.querySelectorAll('figure.forecast')].map(f => f.dataset.key),
		Captions: [...document.querySelectorAll('figure.forecast figcaption')].map(c => c.innerText)})`, &got)
	if len(got.Keys) != 2 || !slices.Contains(got.Keys, key) {
		t.Fatalf("forecast lines of %q, want the hostile growing key's and GROW#slow's", got.Keys)
	}
	found := false
	for _, c := range got.Captions {
		found = found || strings.HasPrefix(c, key+" +")
	}
	if !found {
		t.Errorf("no caption reads the key as it is: %q", got.Captions)
	}
	noInjection(t, tab)
}

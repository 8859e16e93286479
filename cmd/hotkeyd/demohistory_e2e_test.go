package main

import (
	"encoding/json"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hotkeyd/hotkeyd/history"
	demosource "github.com/hotkeyd/hotkeyd/ingest/demo"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// demoCells reads the 1-minute cells of a table's class over the six
// hours before until.
func demoCells(t *testing.T, h *testenv.Hotkeyd, table, class string, until time.Time) []history.Cell {
	t.Helper()
	q := url.Values{"table": {table}, "class": {class}, "step": {"60"},
		"from": {until.Add(-6 * time.Hour).UTC().Format(time.RFC3339)}, "to": {until.UTC().Format(time.RFC3339)}}
	code, body := h.Get(t, "/api/v1/history?"+q.Encode())
	var a history.Answer
	if err := json.Unmarshal(body, &a); code != 200 || err != nil || len(a.Series) != 1 {
		t.Fatalf("/api/v1/history?%s: %d %s", q.Encode(), code, body)
	}
	return a.Series[0].Cells
}

// plantedIncidents reads the incidents of orders that closed before until.
func plantedIncidents(t *testing.T, h *testenv.Hotkeyd, until time.Time) []history.Incident {
	t.Helper()
	code, body := h.Get(t, "/api/v1/incidents?table=orders&from="+url.QueryEscape(until.Add(-7*time.Hour).UTC().Format(time.RFC3339)))
	var out struct{ Incidents []history.Incident }
	if err := json.Unmarshal(body, &out); code != 200 || err != nil {
		t.Fatalf("/api/v1/incidents: %d %s", code, body)
	}
	var closed []history.Incident
	for _, inc := range out.Incidents {
		if inc.End != nil && inc.End.Before(until) {
			closed = append(closed, inc)
		}
	}
	return closed
}

// keyUnits returns key's units in a cell, 0 when it is not among its keys.
func keyUnits(c history.Cell, key string) float64 {
	for _, k := range c.Keys {
		if k.Key == key {
			return k.Units
		}
	}
	return 0
}

// TestDemoPlantsHistory: hotkeyd demo on an empty --history.path plants
// six hours of the workload's tables before its first second, at the
// workload's rates (products' PRODUCT#7 at 1800 RCU/s every minute, the
// celebrity's 600 WCU/s only in its episode), and one closed hot_key
// incident of the celebrity over that episode; a second demo on the same
// path plants nothing more: the same cells and incidents, and no line
// saying it planted.
func TestDemoPlantsHistory(t *testing.T) {
	dir := t.TempDir()
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "demo", "--history.path", dir)
	if !strings.Contains(h.Stderr(), "demo history planted") {
		t.Fatalf("no line says the demo planted its history:\n%s", h.Stderr())
	}
	until := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)

	products := demoCells(t, h, "products", "read", until)
	if len(products) < 6*60-5 {
		t.Fatalf("%d minutes of products' reads in the six hours before the demo, want 360", len(products))
	}
	for _, c := range products[:len(products)-1] {
		if u := keyUnits(c, demosource.HotProduct) / 60; math.Abs(u-1800) > 1 {
			t.Fatalf("%s: %s at %.1f RCU/s, want 1800: %+v", c.Start, demosource.HotProduct, u, c)
		}
	}
	hot := 0
	for _, c := range demoCells(t, h, "orders", "write", until) {
		if u := keyUnits(c, demosource.CelebrityUser) / 60; u > 0 {
			hot++
			if math.Abs(u-600) > 1 {
				t.Errorf("%s: %s at %.1f WCU/s, want 600", c.Start, demosource.CelebrityUser, u)
			}
		}
	}
	if hot != 30 {
		t.Errorf("%s in %d minutes of the planted history, want its 30-minute episode", demosource.CelebrityUser, hot)
	}
	incs := plantedIncidents(t, h, until)
	if len(incs) != 1 || incs[0].Cause != "hot_key" || len(incs[0].Keys) == 0 || incs[0].Keys[0] != demosource.CelebrityUser {
		t.Fatalf("closed incidents of orders before the demo: %+v, want one hot_key of %s", incs, demosource.CelebrityUser)
	}
	if d := incs[0].End.Sub(incs[0].Start); d != 30*time.Minute || math.Abs(incs[0].Peak-600) > 1 {
		t.Errorf("planted incident lasts %v at a peak of %.1f WCU/s, want 30m0s at 600", d, incs[0].Peak)
	}
	if code := h.Stop(t); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}

	h = testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "demo", "--history.path", dir)
	if strings.Contains(h.Stderr(), "demo history planted") {
		t.Errorf("the second demo planted its history again:\n%s", h.Stderr())
	}
	// The same cells, save the oldest minute or two that the 1-minute
	// cells' six hours may have let go of while the minute turned between
	// the two demos.
	again := demoCells(t, h, "products", "read", until)
	first := map[int64]float64{}
	for _, c := range products[:len(products)-1] {
		first[c.Start.Unix()] = c.Units
	}
	same := 0
	for _, c := range again {
		if u, ok := first[c.Start.Unix()]; ok {
			same++
			if u != c.Units {
				t.Errorf("products' cell of %s changed at the second demo: %.0f units, %.0f before", c.Start, c.Units, u)
			}
		}
	}
	if same < len(first)-2 {
		t.Errorf("products' cells at the second demo: %d of the first demo's %d are there", same, len(first))
	}
	if incs := plantedIncidents(t, h, until); len(incs) != 1 {
		t.Errorf("closed incidents of orders after the second demo: %+v, want the one planted", incs)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hotkeyd/hotkeyd/export"
	"github.com/hotkeyd/hotkeyd/history"
	"github.com/hotkeyd/hotkeyd/internal/testenv"
)

// historyFixture serves the page a real daemon's answers, except
// /api/v1/history and /api/v1/incidents, which it answers from cells and
// incidents made here in the agreed shape (history.Answer,
// history.Incident): it tests the page's drawing alone, whatever the
// daemon's history holds. It keeps the ranges the page asked for.
type historyFixture struct {
	answer    history.Answer
	incidents []history.Incident
	mu        sync.Mutex
	asked     [][2]time.Time
}

// fixtureCells are orders' writes over the hour before now, a cell a
// minute (the page asks for the last hour by default): hot is 60% of ten
// of them, other 5% of each.
func fixtureCells(now time.Time, hot, other string) history.Answer {
	from := now.Truncate(time.Minute).Add(-59 * time.Minute)
	a := history.Answer{Table: "orders", From: from, To: from.Add(time.Hour), StepSeconds: 60,
		Resolutions: []history.ResolutionDoc{{StepSeconds: 60, KeptSeconds: 21600}}}
	s := history.Series{Class: "write", Ceiling: 1000}
	for i := range 60 {
		c := history.Cell{Start: from.Add(time.Duration(i) * time.Minute), Units: 60000, Events: 50000, Throttled: uint64(i % 3), DistinctKeys: 800, BusiestSecond: 1200,
			Keys: []history.KeyCell{{Key: other, Units: 3000, BusiestSecond: 150, Share: 0.05}}, Rest: history.Rest{Units: 21000, Share: 0.35},
			Shards: []history.ShardCell{{Shard: "shardId-0001", Records: 700, Share: 0.7}, {Shard: "shardId-0002", Records: 300, Share: 0.3}}}
		if i >= 20 && i < 30 {
			// The hot key: 60% of the cell, its busiest second at 95%
			// of the ceiling.
			c.Keys = append([]history.KeyCell{{Key: hot, Units: 36000, BusiestSecond: 950, Share: 0.6}}, c.Keys...)
		} else {
			c.Rest = history.Rest{Units: 57000, Share: 0.95}
		}
		s.Cells = append(s.Cells, c)
	}
	a.Series = []history.Series{s}
	return a
}

// serve starts the proxy in front of the daemon at base.
func (f *historyFixture) serve(t *testing.T, base string) string {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	// The page draws the history where its daemon serves it: this one's
	// is served here.
	proxy.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.URL.Path != "/" {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if !bytes.Contains(body, []byte(`{"serves_history":false}`)) && !bytes.Contains(body, []byte(`{"serves_history":true}`)) {
			return fmt.Errorf("the page's data says nothing of the history")
		}
		body = bytes.Replace(body, []byte(`{"serves_history":false}`), []byte(`{"serves_history":true}`), 1)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("/", proxy)
	mux.HandleFunc("GET /api/v1/history", func(w http.ResponseWriter, r *http.Request) {
		from, _ := time.Parse(time.RFC3339, r.URL.Query().Get("from"))
		to, _ := time.Parse(time.RFC3339, r.URL.Query().Get("to"))
		f.mu.Lock()
		f.asked = append(f.asked, [2]time.Time{from, to})
		f.mu.Unlock()
		a := f.answer
		a.From, a.To = from, to
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(a)
	})
	mux.HandleFunc("GET /api/v1/incidents", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(export.Incidents{Incidents: f.incidents})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// lastAsked returns the span of the last range the page asked for.
func (f *historyFixture) lastAsked() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.asked) == 0 {
		return 0
	}
	a := f.asked[len(f.asked)-1]
	return a[1].Sub(a[0])
}

// heatCell is a JavaScript function (label, column) that finds the
// keys' heatmap cell and returns its centre in client coordinates, from
// the model the script bound to the canvas.
const heatCell = `((label, col, kind) => {
	const cv = document.querySelector('section.heat canvas[data-heatmap="' + (kind || 'keys') + '"]');
	const hm = cv.hotkeydHeatmap, r = cv.getBoundingClientRect(), row = hm.rows.indexOf(label);
	if (row < 0) return null;
	return {x: r.left + (col + 0.5) * r.width / hm.n, y: r.top + (row + 0.5) * hm.row, cv: cv};
})`

// hoverText moves the pointer over the cell of label in column col (its
// offset from the first column holding label) and returns the tooltip.
func hoverText(t *testing.T, tab *testenv.Tab, label string, nth int, kind string) string {
	t.Helper()
	spec, _ := json.Marshal([]any{label, nth, kind})
	var text string
	tab.Eval(t, fmt.Sprintf(`((label, nth, kind) => {
		const cv = document.querySelector('section.heat canvas[data-heatmap="' + kind + '"]');
		const cols = cv.hotkeydHeatmap.cells(label);
		if (!cols.length) return 'no cell of ' + label;
		const p = %s(label, cols[nth], kind);
		cv.dispatchEvent(new MouseEvent('mousemove', {clientX: p.x, clientY: p.y, bubbles: true}));
		const tip = document.querySelector('section.heat .heat-tip');
		return tip.hidden ? 'no tooltip' : [...tip.children].map((d) => d.textContent).join('\n');
	})(...%s)`, heatCell, spec), &text)
	return text
}

// TestLivePageHeatmap: on a table's page the live page draws the keys and
// the stream shards of the history's cells as heatmaps, names a cell's
// key and figures under the pointer, colours by share or by busiest
// second against the ceiling, asks for the range chosen and for the
// span dragged across, and lists the incidents on the overview. The
// history comes from a fixture in front of a real `hotkeyd demo`
// (historyFixture): this is the drawing's test.
func TestLivePageHeatmap(t *testing.T) {
	if testing.Short() {
		t.Skip("runs hotkeyd demo and a browser")
	}
	h := testenv.StartHotkeyd(t, testenv.HotkeydOptions{}, "demo")
	api := pageAPI{base: h.URL}
	api.waitReport(t, settle)
	now := time.Now().UTC()
	end := now.Add(-20 * time.Minute)
	f := &historyFixture{answer: fixtureCells(now, "TENANT#acme", "TENANT#beta"), incidents: []history.Incident{
		{ID: "a", Table: "orders", Cause: "hot_key", Keys: []string{"TENANT#acme"}, Class: "write", Severity: "critical",
			Start: now.Add(-40 * time.Minute), End: &end, Peak: 950, Summary: "TENANT#acme took 60% of orders' writes.", Fix: "write sharding"},
		{ID: "b", Table: "users", Cause: "low_cardinality", Class: "read", Severity: "warning", Start: now.Add(-5 * time.Minute), Peak: 120},
	}}
	base := f.serve(t, h.URL)
	tab := testenv.NewTab(t)
	tab.Run(t, settle, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/#/table/orders"))
	tab.WaitFor(t, `document.querySelector('section.heat[data-cells="60"]')`, settle, "the orders table's heatmap with its 60 cells")

	var rows []string
	tab.Eval(t, `document.querySelector('canvas[data-heatmap="keys"]').hotkeydHeatmap.rows`, &rows)
	if len(rows) != 3 || rows[0] != "TENANT#acme" || rows[1] != "TENANT#beta" || rows[2] != "the rest" {
		t.Errorf("rows %q, want the hot key, the other, the rest", rows)
	}
	var hotCells []int
	tab.Eval(t, `document.querySelector('canvas[data-heatmap="keys"]').hotkeydHeatmap.cells('TENANT#acme')`, &hotCells)
	if len(hotCells) != 10 {
		t.Errorf("the hot key has %d cells, want its 10 minutes", len(hotCells))
	}
	tip := hoverText(t, tab, "TENANT#acme", 0, "keys")
	for _, want := range []string{"TENANT#acme", "36,000 WCU, 60.0% of the table's 60,000", "busiest second 950 WCU/s, 95.0% of the 1,000 WCU/s ceiling", "50,000 events", "throttled", "800 distinct keys"} {
		if !strings.Contains(tip, want) {
			t.Errorf("the hot key's tooltip %q does not say %q", tip, want)
		}
	}
	if tip := hoverText(t, tab, "shardId-0001", 0, "shards"); !strings.Contains(tip, "shard shardId-0001") || !strings.Contains(tip, "700 stream records, 70.0% of the table's") {
		t.Errorf("the shard's tooltip: %q", tip)
	}
	checkColours(t, tab)
	checkRanges(t, tab, f)
	tab.Screenshot(t, "heatmap.png")
	checkIncidents(t, tab)
	if errs := tab.Errors(); len(errs) > 0 {
		t.Errorf("errors in the page: %q", errs)
	}
}

// checkColours reads the hot key's cell's colour by share (60%) and by
// busiest second against the ceiling (95%): two shades of the ramp.
func checkColours(t *testing.T, tab *testenv.Tab) {
	t.Helper()
	pixel := fmt.Sprintf(`(() => {
		const cv = document.querySelector('canvas[data-heatmap="keys"]'), col = cv.hotkeydHeatmap.cells('TENANT#acme')[0];
		const p = %s('TENANT#acme', col, 'keys'), r = cv.getBoundingClientRect(), k = cv.width / r.width;
		const d = cv.getContext('2d').getImageData(Math.round((p.x - r.left) * k), Math.round((p.y - r.top) * k), 1, 1).data;
		return '#' + [d[0], d[1], d[2]].map((v) => v.toString(16).padStart(2, '0')).join('');
	})()`, heatCell)
	var share, ceiling string
	tab.Eval(t, pixel, &share)
	tab.Click(t, `section.heat button[data-mode="ceiling"]`, settle)
	tab.Eval(t, pixel, &ceiling)
	// ColorBrewer's Oranges: 60% is its sixth class, 95% its ninth.
	if share != "#f16913" || ceiling != "#7f2704" {
		t.Errorf("the hot key's cell is %s by share and %s by busiest second, want #f16913 and #7f2704", share, ceiling)
	}
	tab.Click(t, `section.heat button[data-mode="share"]`, settle)
}

// checkRanges clicks the 6-hour range, drags across a few columns to
// zoom, and resets: the page asks for each range; ranges past the
// history's length (6 hours) are disabled.
func checkRanges(t *testing.T, tab *testenv.Tab, f *historyFixture) {
	t.Helper()
	var disabled []string
	tab.Eval(t, `[...document.querySelectorAll('section.heat button[data-range]')].filter((b) => b.disabled).map((b) => b.textContent)`, &disabled)
	if strings.Join(disabled, " ") != "24h 7d 28d" {
		t.Errorf("disabled ranges %q, want those past the 6 hours kept", disabled)
	}
	tab.Click(t, `section.heat button[data-range="21600"]`, settle)
	tab.WaitFor(t, `document.querySelector('section.heat button[data-range="21600"].on') && document.querySelector('section.heat[data-cells="60"]')`, settle, "the 6-hour range chosen")
	if got := f.lastAsked(); got != 6*time.Hour {
		t.Errorf("the page asked for %s, want 6h", got)
	}
	// Drag over ten minutes' worth of the six hours.
	var dragged bool
	tab.Eval(t, fmt.Sprintf(`(() => {
		const cv = document.querySelector('canvas[data-heatmap="keys"]'), hm = cv.hotkeydHeatmap;
		const a = %[1]s('TENANT#acme', hm.cells('TENANT#acme')[0], 'keys'), b = %[1]s('TENANT#acme', hm.cells('TENANT#acme')[9], 'keys');
		for (const [type, p] of [['mousedown', a], ['mousemove', b], ['mouseup', b]]) {
			cv.dispatchEvent(new MouseEvent(type, {clientX: p.x, clientY: p.y, bubbles: true}));
		}
		return true;
	})()`, heatCell), &dragged)
	tab.WaitFor(t, `!document.querySelector('section.heat .heat-reset').hidden`, settle, "the zoom's reset button")
	if got := f.lastAsked(); got < 9*time.Minute || got > 20*time.Minute {
		t.Errorf("after the drag the page asked for %s, want about the hot key's ten minutes", got)
	}
	tab.Click(t, `section.heat .heat-reset`, settle)
	tab.WaitFor(t, `document.querySelector('section.heat .heat-reset').hidden`, settle, "the zoom reset")
	if got := f.lastAsked(); got != 6*time.Hour {
		t.Errorf("after the reset the page asked for %s, want the 6 hours chosen", got)
	}
	tab.Click(t, `section.heat button[data-range="3600"]`, settle)
	tab.WaitFor(t, `document.querySelector('section.heat button[data-range="3600"].on')`, settle, "the last hour again")
}

// checkIncidents opens the overview: the incidents of the last 24 hours,
// newest first, a closed one with its span and an open one.
func checkIncidents(t *testing.T, tab *testenv.Tab) {
	t.Helper()
	tab.Run(t, settle, chromedp.Evaluate(`location.hash = '#/'`, nil))
	tab.WaitFor(t, `document.querySelectorAll('li.incident').length === 2`, settle, "the two incidents")
	var got []struct{ ID, Table, Severity, End, Text string }
	tab.Eval(t, `[...document.querySelectorAll('li.incident')].map((e) => ({ID: e.dataset.id, Table: e.dataset.table, Severity: e.dataset.severity, End: e.dataset.end, Text: e.textContent}))`, &got)
	if len(got) != 2 || got[0].ID != "b" || got[1].ID != "a" {
		t.Fatalf("incidents %+v, want b (newest) then a", got)
	}
	if !strings.Contains(got[0].Text, "open since") || got[0].End != "" {
		t.Errorf("the open incident says %q", got[0].Text)
	}
	for _, want := range []string{"critical", "hot key", "orders", "TENANT#acme", "(20 min)", "peak 950 WCU/s", "took 60%", "Fix: write sharding"} {
		if !strings.Contains(got[1].Text, want) {
			t.Errorf("the closed incident %q does not say %q", got[1].Text, want)
		}
	}
}
